//! [`AnyTask`]: a built training task of any model behind one object type. [`TrainTask`] has a
//! model type, so it is not object safe; [`AnyTask`] is, and every [`TrainTask`] is one. Task
//! registries (`jinn train`, the demo, `jinn bench train`) hand tasks out as `Box<dyn AnyTask>`.

use super::{
    run_observed, runs_on_cpu, Metrics, RunObserver, RunOptions, RunSummary, StepContext, TrainTask, Updater,
};
use crate::checkpoint::{write_checkpoint, TrainState};
use crate::config::TrainConfig;
use crate::Result;
use jinn_nn::warm_pool::WarmPool;
use std::ops::ControlFlow;
use std::path::Path;
use std::time::{Duration, Instant};

/// What `jinn train` and `jinn bench train` do with a built task, for every model alike.
pub trait AnyTask {
    /// Run the training loop (see [`run_observed`]).
    fn train(
        &mut self,
        train: &TrainConfig,
        opts: &RunOptions,
        observer: &mut dyn RunObserver,
    ) -> Result<RunSummary>;

    /// Run up to `steps` bare updates (no validation, checkpoints or logs; on the CPU with the
    /// warm pool, as in the loop), calling `on_step(step, time, metrics)` after each; it stops
    /// early when `on_step` breaks.
    fn bare_steps(
        &mut self,
        train: &TrainConfig,
        steps: u64,
        on_step: &mut dyn FnMut(u64, Duration, &Metrics) -> ControlFlow<()>,
    ) -> Result<()>;

    /// Multiply-accumulates of one training step, where the task counts them.
    fn step_macs(&self) -> Option<u64>;

    /// Write the model as it is (with a fresh optimiser) as the step-0 checkpoint of a run in
    /// `run_dir` storing `config`, with `train.seed` as the run seed: what the training loop
    /// writes before its first update.
    fn write_fresh_run(&self, config: serde_json::Value, train: &TrainConfig, run_dir: &Path) -> Result<()>;
}

impl<T: TrainTask> AnyTask for T {
    fn train(
        &mut self,
        train: &TrainConfig,
        opts: &RunOptions,
        observer: &mut dyn RunObserver,
    ) -> Result<RunSummary> {
        run_observed(self, train, opts, observer)
    }

    fn bare_steps(
        &mut self,
        train: &TrainConfig,
        steps: u64,
        on_step: &mut dyn FnMut(u64, Duration, &Metrics) -> ControlFlow<()>,
    ) -> Result<()> {
        super::ensure_precision(self, train.precision)?;
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
            if on_step(step, t.elapsed(), &metrics).is_break() {
                break;
            }
        }
        Ok(())
    }

    fn step_macs(&self) -> Option<u64> {
        TrainTask::step_macs(self)
    }

    fn write_fresh_run(&self, config: serde_json::Value, train: &TrainConfig, run_dir: &Path) -> Result<()> {
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
        write_checkpoint(run_dir, &Updater::new(self, &train.optim)?.snapshot(self, state)?)?;
        Ok(())
    }
}
