//! The registry of training tasks: one table, [`TASKS`], from a task name and model kind to
//! the function that loads its run config and the function that builds its [`TrainTask`].
//! `jinn train tokenizer|mae|lam|dynamics|lm|graph`, `jinn demo` (its stages) and
//! `jinn bench train` all look tasks up here, so a new model kind is one row.
//!
//! A task name (`tokenizer`, `lam`, `dynamics`, `lm`, `graph`) has one run config type; the
//! config's kind (`model.kind`: `vq` or `mae`; `rotation` or `complex`; the LM's `model.arch`:
//! `rsf` or `standard`) picks the row that builds the task. The dynamics row serves every kind
//! of the dynamics-kind registry, [`jinn_world::DYNAMICS_KINDS`] (`maskgit`, `causal`,
//! `diffusion`), which builds each kind's task.

mod erased;

pub use erased::RunConfig;
pub use jinn_train::train_loop::AnyTask;

use anyhow::Context;
use burn::tensor::Device;
use jinn_graph::GraphRunConfig;
use jinn_text::lm::LmRunConfig;
use jinn_train::train_loop::TrainTask;
use jinn_world::dynamics_kinds::WorldTaskInputs;
use jinn_world::{
    ActionSource, DynamicsKind, DynamicsRunConfig, LamRunConfig, LamTask, MaeTask, TokenizerRunConfig,
    TokenizerTask,
};
use serde::{de::DeserializeOwned, Serialize};
use std::path::Path;

/// Loads a run config from a TOML file (built-in defaults without one) and `--set` overrides.
pub type LoadConfig = fn(Option<&Path>, &[String]) -> anyhow::Result<Box<dyn RunConfig>>;

/// One registry row.
pub struct TaskEntry {
    /// `jinn train NAME`, the demo's stage `NAME`, `jinn bench train --task NAME`.
    pub task: &'static str,
    /// The `model.kind`s this row builds (the task name for a task of one kind).
    pub kinds: fn() -> Vec<&'static str>,
    /// Load the task's run config from a TOML file (built-in defaults without one) and
    /// `--set KEY=VALUE` overrides.
    pub load: LoadConfig,
    /// Build the task from its run config (of this row's task and kind) and the inputs.
    pub build: fn(&dyn RunConfig, &TaskInputs<'_>) -> anyhow::Result<Built>,
}

/// Every training task, one row per model kind; one row for every dynamics kind.
pub const TASKS: &[TaskEntry] = &[
    TaskEntry {
        task: "tokenizer",
        kinds: || vec!["vq"],
        load: load::<TokenizerRunConfig>,
        build: |c, i| from_config(c, i, TokenizerTask::from_config),
    },
    TaskEntry {
        task: "tokenizer",
        kinds: || vec!["mae"],
        load: load::<TokenizerRunConfig>,
        build: |c, i| from_config(c, i, MaeTask::from_config),
    },
    TaskEntry {
        task: "lam",
        kinds: || vec!["lam"],
        load: load::<LamRunConfig>,
        build: |c, i| from_config(c, i, LamTask::from_config),
    },
    TaskEntry {
        task: "dynamics",
        kinds: || DynamicsKind::all().map(DynamicsKind::name).collect(),
        load: load::<DynamicsRunConfig>,
        build: world_model,
    },
    TaskEntry { task: "lm", kinds: || vec!["rsf"], load: load::<LmRunConfig>, build: language_model },
    TaskEntry { task: "lm", kinds: || vec!["standard"], load: load::<LmRunConfig>, build: language_model },
    TaskEntry { task: "graph", kinds: || vec!["rotation"], load: load::<GraphRunConfig>, build: graph },
    TaskEntry { task: "graph", kinds: || vec!["complex"], load: load::<GraphRunConfig>, build: graph },
];

/// What a task is built from besides its run config.
pub struct TaskInputs<'a> {
    /// Dataset directory (`train/`, and `val/` when validating).
    pub data: &'a Path,
    /// Autodiff device of the model.
    pub device: Device,
    /// World models: the tokenizer run they are assembled on.
    pub tokenizer: Option<&'a Path>,
    /// World models: where the actions come from.
    pub actions: Actions<'a>,
    /// The run directory, for tasks that keep prepared data there (the LM's token shards).
    pub out: Option<&'a Path>,
}

impl<'a> TaskInputs<'a> {
    /// Inputs of a task that needs only data and a device.
    pub fn new(data: &'a Path, device: Device) -> Self {
        TaskInputs { data, device, tokenizer: None, actions: Actions::CoTrain, out: None }
    }
}

/// Where a world model's actions come from.
#[derive(Debug, Clone, Copy)]
pub enum Actions<'a> {
    /// A trained LAM run (frozen).
    LamRun(&'a Path),
    /// A LAM of the run config's `lam` architecture, co-trained.
    CoTrain,
    /// Recorded actions from a space of this size.
    GroundTruth(usize),
}

/// A built task and the run config its checkpoints store.
pub struct Built {
    /// The task.
    pub task: Box<dyn AnyTask>,
    /// The resolved run config stored in checkpoints (a world model's holds the assembled
    /// model config).
    pub stored: serde_json::Value,
}

/// The names of the registered tasks, in table order, without repeats.
pub fn task_names() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = TASKS.iter().map(|e| e.task).collect();
    names.dedup();
    names
}

/// Load `task`'s run config from `file` (defaults without one) and `--set` overrides.
pub fn load_config(task: &str, file: Option<&Path>, sets: &[String]) -> anyhow::Result<Box<dyn RunConfig>> {
    let Some(entry) = TASKS.iter().find(|e| e.task == task) else {
        anyhow::bail!("unknown task `{task}`; expected one of {}", task_names().join(", "));
    };
    (entry.load)(file, sets)
}

/// Build `task` from `cfg` (loaded by [`load_config`]) with the row of the kind it selects.
pub fn build(task: &str, cfg: &dyn RunConfig, inputs: &TaskInputs<'_>) -> anyhow::Result<Built> {
    let kind = cfg.kind();
    let rows: Vec<&TaskEntry> = TASKS.iter().filter(|e| e.task == task).collect();
    let Some(entry) = rows.iter().find(|e| (e.kinds)().contains(&kind.as_str())) else {
        let kinds: Vec<&str> = rows.iter().flat_map(|e| (e.kinds)()).collect();
        anyhow::bail!(
            "model.kind `{kind}`: no {task} task of that kind; expected one of {}",
            kinds.join(", ")
        );
    };
    (entry.build)(cfg, inputs)
}

/// [`jinn_train::config::load`] into a boxed [`RunConfig`].
fn load<C: RunConfig + Serialize + DeserializeOwned + Default>(
    file: Option<&Path>,
    sets: &[String],
) -> anyhow::Result<Box<dyn RunConfig>> {
    Ok(Box::new(jinn_train::config::load::<C>(file, sets)?))
}

/// `cfg` as the run config type `C` its row loads.
fn concrete<C: RunConfig>(cfg: &dyn RunConfig) -> &C {
    cfg.as_any().downcast_ref::<C>().expect("a row builds the config type its task loads")
}

/// A task built from its run config alone (`from_config(cfg, data, device)`), storing that
/// config.
fn from_config<C: RunConfig, T: TrainTask + 'static>(
    cfg: &dyn RunConfig,
    inputs: &TaskInputs<'_>,
    new: fn(&C, &Path, Device) -> jinn_train::Result<T>,
) -> anyhow::Result<Built> {
    let task = new(concrete::<C>(cfg), inputs.data, inputs.device.clone())
        .with_context(|| format!("setting up the `{}` task on {}", cfg.kind(), inputs.data.display()))?;
    Ok(Built { task: Box::new(task), stored: cfg.to_json() })
}

/// A world-model task of any dynamics kind, built by the kind's registry row on
/// `inputs.tokenizer` and `inputs.actions`; it stores the resolved
/// [`jinn_world::GenieRunConfig`].
fn world_model(cfg: &dyn RunConfig, inputs: &TaskInputs<'_>) -> anyhow::Result<Built> {
    let cfg = concrete::<DynamicsRunConfig>(cfg);
    let tokenizer = inputs.tokenizer.context("a world model needs a tokenizer run (--tokenizer)")?;
    let actions = match inputs.actions {
        Actions::LamRun(dir) => ActionSource::LamRun(dir),
        Actions::CoTrain => ActionSource::CoTrain(cfg.lam.clone()),
        Actions::GroundTruth(num_actions) => ActionSource::GroundTruth { num_actions },
    };
    let kind = cfg.model.kind();
    let world_inputs = WorldTaskInputs { data: inputs.data, tokenizer, actions, device: &inputs.device };
    let built = (kind.entry().build_task)(cfg, world_inputs).with_context(|| {
        format!(
            "setting up `{kind}` dynamics training on tokenizer run {} and data {}",
            tokenizer.display(),
            inputs.data.display()
        )
    })?;
    Ok(Built { task: built.task, stored: jinn_train::config::to_json(&built.stored) })
}

/// A language model on the corpus `inputs.data`, its token shards prepared in the run
/// directory (see [`crate::lm::train::lm_task`]).
fn language_model(cfg: &dyn RunConfig, inputs: &TaskInputs<'_>) -> anyhow::Result<Built> {
    let cfg = concrete::<LmRunConfig>(cfg);
    let out = inputs.out.context("a language model keeps its token shards in the run directory")?;
    let task = crate::lm::train::lm_task(cfg, inputs.data, out, &inputs.device)?;
    Ok(Built { task: Box::new(task), stored: cfg.to_json() })
}

/// A link predictor on the graph in `inputs.data` (see [`crate::graph::train::graph_task`]).
fn graph(cfg: &dyn RunConfig, inputs: &TaskInputs<'_>) -> anyhow::Result<Built> {
    let cfg = concrete::<GraphRunConfig>(cfg);
    let task = crate::graph::train::graph_task(cfg, inputs.data, &inputs.device)?;
    Ok(Built { task: Box::new(task), stored: cfg.to_json() })
}

#[cfg(test)]
mod tests;
