//! Building a world model's training task, the same way for every dynamics kind: the model is
//! assembled on a tokenizer run and an action source, its fresh parts drawn from `train.seed`,
//! and the task trains it and stores the resolved config.

use crate::dynamics::task::{DynamicsRunConfig, GenieRunConfig};
use crate::genie::{ActionSource, GenieConfig};
use burn::module::Module;
use burn::tensor::Device;
use jinn_train::train_loop::{AnyTask, TrainTask};
use jinn_train::Result;
use std::path::Path;

/// What a world-model task is built from besides its run config.
pub struct WorldTaskInputs<'a> {
    /// Dataset directory (`train/`, and `val/` when validating).
    pub data: &'a Path,
    /// The tokenizer run the model is assembled on.
    pub tokenizer: &'a Path,
    /// Where the actions come from.
    pub actions: ActionSource<'a>,
    /// Autodiff device of the model.
    pub device: &'a Device,
}

/// A built world-model task and the resolved run config its checkpoints store.
pub struct BuiltWorldTask {
    /// The task.
    pub task: Box<dyn AnyTask>,
    /// The run config with the assembled model config.
    pub stored: GenieRunConfig,
}

/// Assembles a world model `G` on a tokenizer run, with its action source, and returns its
/// resolved config.
pub type Assemble<G> =
    fn(&Path, ActionSource<'_>, &crate::DynamicsConfig, &Device) -> Result<(G, GenieConfig)>;

/// A kind's world-model task: the model `assemble` builds on `inputs.tokenizer` and
/// `inputs.actions` (fresh parts drawn from `train.seed`), trained by the task `new` builds.
/// Each registry row's `build_task` is this with the kind's two functions.
pub fn world_task<G: Module, T: TrainTask + 'static>(
    cfg: &DynamicsRunConfig,
    inputs: WorldTaskInputs<'_>,
    assemble: Assemble<G>,
    new: fn(&GenieRunConfig, &Path, G) -> Result<T>,
) -> Result<BuiltWorldTask> {
    let device = inputs.device;
    let seed = jinn_data::rng::derive_seed(cfg.train.seed, "init", 0);
    let mut assembled = None;
    let model = jinn_nn::init::seeded_init(device, seed, || {
        let (model, genie_cfg) = assemble(inputs.tokenizer, inputs.actions, &cfg.model, device)?;
        assembled = Some(genie_cfg);
        Ok::<_, jinn_train::TrainError>(model)
    })?;
    let model_cfg = assembled.expect("set by a successful assembly");
    let stored = GenieRunConfig { model: model_cfg, train: cfg.train.clone(), data: cfg.data.clone() };
    let task = new(&stored, inputs.data, model)?;
    Ok(BuiltWorldTask { task: Box::new(task), stored })
}
