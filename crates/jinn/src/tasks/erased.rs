//! The two object types the task registry hands out: a loaded run config of any task
//! ([`RunConfig`]) and a built training task of any model ([`AnyTask`]). [`TrainTask`] has a
//! model type, so it is not object safe; [`AnyTask`] is, and every [`TrainTask`] is one.

use anyhow::Context;
use jinn_data::FrameShape;
use jinn_graph::GraphRunConfig;
use jinn_nn::warm_pool::WarmPool;
use jinn_text::lm::LmRunConfig;
use jinn_train::checkpoint::{write_checkpoint, TrainState};
use jinn_train::config::TrainConfig;
use jinn_train::train_loop::{
    run_observed, runs_on_cpu, Metrics, RunObserver, RunOptions, RunSummary, StepContext, TrainTask, Updater,
};
use jinn_world::{DynamicsRunConfig, LamRunConfig, TokenizerRunConfig};
use std::any::Any;
use std::path::Path;
use std::time::{Duration, Instant};

/// A task's whole run config (`model`, `train`, `data`, …), loaded from TOML with `--set`s.
pub trait RunConfig: Any {
    /// The `train` section.
    fn train(&self) -> &TrainConfig;
    /// The `train` section, to adjust before building (`jinn bench train` turns validation off).
    fn train_mut(&mut self) -> &mut TrainConfig;
    /// The model kind the config selects (`model.kind`; the task name where it has one kind),
    /// which picks the registry row that builds it.
    fn kind(&self) -> String;
    /// Frames the model sees, where the config says (the dynamics take theirs from the
    /// tokenizer run).
    fn frames(&self) -> Option<FrameShape>;
    /// Clip length `data.seq_len` of a world-model task.
    fn seq_len(&self) -> Option<usize>;
    /// The resolved config as JSON (what checkpoints store).
    fn to_json(&self) -> serde_json::Value;
    /// For downcasting to the concrete config.
    fn as_any(&self) -> &dyn Any;
}

/// [`RunConfig`] for a run config type with a `train` section, given how it names its kind,
/// frames and clip length.
macro_rules! run_config {
    ($config:ty, kind: |$k:ident| $kind:expr, frames: |$f:ident| $frames:expr) => {
        run_config!($config, kind: |$k| $kind, frames: |$f| $frames, seq_len: |c| Some(c.data.seq_len));
    };
    ($config:ty, kind: |$k:ident| $kind:expr, frames: |$f:ident| $frames:expr, seq_len: |$s:ident| $seq_len:expr) => {
        impl RunConfig for $config {
            fn train(&self) -> &TrainConfig {
                &self.train
            }
            fn train_mut(&mut self) -> &mut TrainConfig {
                &mut self.train
            }
            fn kind(&self) -> String {
                let $k = self;
                $kind
            }
            fn frames(&self) -> Option<FrameShape> {
                let $f = self;
                $frames
            }
            fn seq_len(&self) -> Option<usize> {
                let $s = self;
                $seq_len
            }
            fn to_json(&self) -> serde_json::Value {
                jinn_train::config::to_json(self)
            }
            fn as_any(&self) -> &dyn Any {
                self
            }
        }
    };
}

run_config!(TokenizerRunConfig, kind: |c| c.model.kind().to_string(), frames: |c| Some(c.model.coder().frames()));
run_config!(LamRunConfig, kind: |_c| "lam".into(), frames: |c| Some(c.model.coder.frames()));
// The dynamics kind as configs spell it (`maskgit`, `causal`, `diffusion`); the frames come
// from the tokenizer run.
run_config!(DynamicsRunConfig, kind: |c| c.model.kind().to_string(), frames: |_c| None);
run_config!(LmRunConfig, kind: |c| spelling(&c.model.arch), frames: |_c| None, seq_len: |_c| None);
run_config!(GraphRunConfig, kind: |c| spelling(&c.model.kind), frames: |_c| None, seq_len: |_c| None);

/// A kind as configs spell it (`maskgit`, `rsf`, `rotation`, …): its serde name.
fn spelling(kind: &impl serde::Serialize) -> String {
    match jinn_train::config::to_json(kind) {
        serde_json::Value::String(s) => s,
        other => other.to_string(),
    }
}

/// What `jinn train` and `jinn bench train` do with a built task, for every model alike.
pub trait AnyTask {
    /// Run the training loop (see [`run_observed`]).
    fn train(
        &mut self,
        train: &TrainConfig,
        opts: &RunOptions,
        observer: &mut dyn RunObserver,
    ) -> jinn_train::Result<RunSummary>;

    /// Run `steps` bare updates (no validation, checkpoints or logs; on the CPU with the warm
    /// pool, as in the loop), calling `on_step(step, time, metrics)` after each.
    fn bare_steps(
        &mut self,
        train: &TrainConfig,
        steps: u64,
        on_step: &mut dyn FnMut(u64, Duration, &Metrics) -> anyhow::Result<()>,
    ) -> anyhow::Result<()>;

    /// Multiply-accumulates of one training step, where the task counts them.
    fn step_macs(&self) -> Option<u64>;

    /// Write the model as it is (with a fresh optimiser) as the step-0 checkpoint of a run in
    /// `run_dir` storing `config`, with `train.seed` as the run seed: what the training loop
    /// writes before its first update.
    fn write_fresh_run(
        &self,
        config: serde_json::Value,
        train: &TrainConfig,
        run_dir: &Path,
    ) -> anyhow::Result<()>;
}

impl<T: TrainTask> AnyTask for T {
    fn train(
        &mut self,
        train: &TrainConfig,
        opts: &RunOptions,
        observer: &mut dyn RunObserver,
    ) -> jinn_train::Result<RunSummary> {
        run_observed(self, train, opts, observer)
    }

    fn bare_steps(
        &mut self,
        train: &TrainConfig,
        steps: u64,
        on_step: &mut dyn FnMut(u64, Duration, &Metrics) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        jinn_train::train_loop::ensure_precision(self, train.precision)?;
        let mut updater = Updater::new(self, &train.optim)?;
        let on_cpu = runs_on_cpu(self.model());
        for step in 0..steps {
            // Not logged, as on the training steps between two logs (all but one in `log_every`).
            let ctx = StepContext::new(train, step, false);
            let t = Instant::now();
            let metrics = {
                // As in the training loop: on the CPU the other pool threads poll instead of sleeping.
                let _warm = on_cpu.then(WarmPool::new);
                updater.step(self, &ctx)?
            };
            on_step(step, t.elapsed(), &metrics)?;
        }
        Ok(())
    }

    fn step_macs(&self) -> Option<u64> {
        TrainTask::step_macs(self)
    }

    fn write_fresh_run(
        &self,
        config: serde_json::Value,
        train: &TrainConfig,
        run_dir: &Path,
    ) -> anyhow::Result<()> {
        let state = TrainState {
            step: 0,
            model_kind: TrainTask::kind(self).to_string(),
            config,
            seed: train.seed,
            loader: None,
            val_loader: None,
            metrics_head: Vec::new(),
            extra: Default::default(),
        };
        write_checkpoint(run_dir, &Updater::new(self, &train.optim)?.snapshot(self, state)?).with_context(
            || format!("writing the fresh {} run {}", TrainTask::kind(self), run_dir.display()),
        )?;
        Ok(())
    }
}
