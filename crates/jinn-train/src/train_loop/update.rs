//! The update step every model shares. A task supplies the loss of one micro-batch (or, when
//! it runs its own backward — recomputation, the reversible engine — the gradients of
//! `loss / grad_accum`); [`Updater::step`] accumulates the micro-batches, averages gradients
//! over ranks, clips, applies the optimiser and calls the task's
//! [`TrainTask::after_update`]. The optimiser lives here, so checkpoints of every task hold it
//! the same way ([`Updater::snapshot`], [`Updater::restore`]).

use super::{Metrics, StepContext, TrainTask};
use crate::checkpoint::{snapshot, Checkpoint, CheckpointData, TrainState};
use crate::distributed::{self, average_gradients};
use crate::error::Result;
use crate::optim::{clip_global_norm, scale_gradients, OptimConfig};
use burn::optim::{GradientsAccumulator, GradientsParams, ModuleOptimizer};
use burn::tensor::Tensor;
use std::collections::BTreeMap;

/// What the loop tells a task about the micro-batch it is to run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MicroContext {
    /// Updates already applied (0-based).
    pub step: u64,
    /// This micro-batch within the step, `0..grad_accum`.
    pub micro: usize,
    /// Micro-batches in the step; a task that runs its own backward differentiates
    /// `loss / grad_accum`.
    pub grad_accum: usize,
    /// The run seed (the same on every rank).
    pub seed: u64,
    /// Global index of this rank's first sample in the micro-batch: samples are numbered
    /// across steps, micro-batches and ranks in the loaders' global order, so a random draw
    /// keyed to a sample's index is the same whichever rank or micro-batch holds it.
    pub first_sample: u64,
    /// Whether the step's metrics will be logged (host-side metrics may be skipped if not).
    pub logged: bool,
}

impl MicroContext {
    /// Micro-batches run before this one in the whole run, `step · grad_accum + micro`.
    pub fn index(&self) -> u64 {
        self.step * self.grad_accum as u64 + self.micro as u64
    }

    /// The divisor of the micro-batch's loss in the accumulated gradient.
    pub fn divisor(&self) -> f64 {
        self.grad_accum as f64
    }
}

/// What a task's micro-batch produces for the update. Every micro-batch of a run is either
/// plain (`Loss`, `Gradients`: the step minimises the mean of the micro-batches' losses, over
/// micro-batches and ranks) or weighted (`Weighted*`: each loss is a mean over `weight` units —
/// masked tokens, say — and the step minimises the mean over every unit of the global batch, as
/// one batch of the global size would).
pub enum Objective {
    /// The micro-batch's loss (a scalar on the autodiff device); the loop differentiates
    /// `loss / grad_accum` with respect to the task's model.
    Loss(Tensor<1>),
    /// Gradients of `loss / grad_accum` that the task computed itself.
    Gradients(GradientsParams),
    /// A loss that is a mean over `weight` units; the loop differentiates `loss · weight` and
    /// divides the accumulated gradients by the global batch's total weight.
    WeightedLoss {
        /// The mean loss of the micro-batch.
        loss: Tensor<1>,
        /// The units (`Σ w`) it is a mean over.
        weight: f64,
    },
    /// Gradients of `loss · weight` that the task computed itself (see `WeightedLoss`).
    WeightedGradients {
        /// `∇(loss · weight)`.
        grads: GradientsParams,
        /// The units the loss is a mean over.
        weight: f64,
    },
}

/// One micro-batch's contribution: its objective and metrics (the step's metrics are their
/// means over the micro-batches).
pub struct MicroBatch {
    /// Loss or gradients.
    pub objective: Objective,
    /// `loss`, … of this micro-batch.
    pub metrics: Metrics,
}

/// The optimiser and the update it applies to a task's model.
pub struct Updater {
    optim: ModuleOptimizer,
    cfg: OptimConfig,
}

impl Updater {
    /// The optimiser of `cfg` for `task`'s model.
    pub fn new<T: TrainTask>(task: &T, cfg: &OptimConfig) -> Result<Updater> {
        Ok(Updater { optim: cfg.init_for(task.model())?, cfg: cfg.clone() })
    }

    /// One optimiser update of `task`: the step's gradients ([`step_gradients`]), clipped
    /// to `clip_norm` (recorded as `grad_norm`), the optimiser step, then
    /// [`TrainTask::after_update`].
    pub fn step<T: TrainTask>(&mut self, task: &mut T, ctx: &StepContext) -> Result<Metrics> {
        let (mut grads, mut metrics) = step_gradients(task, ctx)?;
        if let Some(max) = ctx.clip_norm {
            metrics.insert("grad_norm".into(), clip_global_norm(task.model(), &mut grads, max));
        }
        let model = task.model().clone();
        task.set_model(self.optim.step(ctx.lr, model, grads));
        task.after_update(ctx, &mut metrics)?;
        Ok(metrics)
    }

    /// Model, optimiser and `state` (with the task's own fields, [`TrainTask::save_state`])
    /// copied to host memory for a checkpoint.
    pub fn snapshot<T: TrainTask>(&self, task: &T, mut state: TrainState) -> Result<CheckpointData> {
        task.save_state(&mut state)?;
        snapshot(task.model(), &self.optim, state)
    }

    /// Restore `task`'s model, then its own fields ([`TrainTask::restore_state`]), then the
    /// optimiser, from `checkpoint`, once the task has accepted it
    /// ([`TrainTask::check_checkpoint`]).
    pub fn restore<T: TrainTask>(&mut self, task: &mut T, checkpoint: &Checkpoint) -> Result<()> {
        task.check_checkpoint(checkpoint)?;
        task.set_model(checkpoint.load_model(task.model().clone())?);
        task.restore_state(checkpoint)?;
        self.optim = checkpoint.load_optimizer(self.cfg.init_for(task.model())?)?;
        Ok(())
    }
}

/// The gradients of update `ctx.step` of `task` and the means of its micro-batches' metrics:
/// the `grad_accum` micro-batches run, their gradients accumulated and averaged over ranks in a
/// data-parallel run; weighted objectives are then rescaled to the mean over every unit of
/// the global batch.
pub fn step_gradients<T: TrainTask>(task: &mut T, ctx: &StepContext) -> Result<(GradientsParams, Metrics)> {
    let mut accumulator = GradientsAccumulator::<T::Model>::new();
    let mut means = MetricMeans::default();
    let mut weights = Weights::default();
    let micro_batch = ctx.micro_batch as u64;
    let ranks = distributed::world_size() as u64;
    for micro in 0..ctx.grad_accum {
        let global_micro = ctx.step * ctx.grad_accum as u64 + micro as u64;
        let micro_ctx = MicroContext {
            step: ctx.step,
            micro,
            grad_accum: ctx.grad_accum,
            seed: ctx.seed,
            first_sample: (global_micro * ranks + distributed::rank() as u64) * micro_batch,
            logged: ctx.logged,
        };
        let MicroBatch { objective, metrics } = task.micro_batch(&micro_ctx)?;
        let grads = match objective {
            Objective::Loss(loss) => {
                weights.add(None)?;
                let loss = loss.div_scalar(ctx.grad_accum as f64);
                GradientsParams::from_grads(loss.backward(), task.model())
            }
            Objective::Gradients(grads) => {
                weights.add(None)?;
                grads
            }
            Objective::WeightedLoss { loss, weight } => {
                weights.add(Some(weight))?;
                GradientsParams::from_grads(loss.mul_scalar(weight).backward(), task.model())
            }
            Objective::WeightedGradients { grads, weight } => {
                weights.add(Some(weight))?;
                grads
            }
        };
        accumulator.accumulate(task.model(), grads);
        means.add(metrics);
    }
    let mut grads = accumulator.grads();
    let group = distributed::collective();
    if let Some(group) = &group {
        average_gradients(task.model(), &mut grads, group.as_ref())?;
    }
    if let Some(mut total) = weights.total {
        // Σ over ranks of ∇(loss · weight), averaged above: rescale to the global mean.
        let ranks = group.as_ref().map_or(1.0, |g| g.size() as f64);
        if let Some(group) = &group {
            let mut buf = [total];
            group.all_reduce_sum_f64(&mut buf)?;
            total = buf[0];
        }
        let factor = if total > 0.0 { ranks / total } else { 0.0 };
        scale_gradients(task.model(), &mut grads, factor);
    }
    Ok((grads, means.into_metrics()))
}

/// The micro-batches' weights: `None` for plain objectives, their sum for weighted ones.
#[derive(Default)]
struct Weights {
    seen: usize,
    total: Option<f64>,
}

impl Weights {
    fn add(&mut self, weight: Option<f64>) -> Result<()> {
        if self.seen > 0 && self.total.is_some() != weight.is_some() {
            return Err(crate::TrainError::config(
                "train.grad_accum",
                "a step mixes weighted and plain micro-batch objectives",
            ));
        }
        self.seen += 1;
        if let Some(w) = weight {
            self.total = Some(self.total.unwrap_or(0.0) + w);
        }
        Ok(())
    }
}

/// Running means of the micro-batches' metrics, per name.
#[derive(Default)]
struct MetricMeans(BTreeMap<String, (f64, usize)>);

impl MetricMeans {
    fn add(&mut self, metrics: Metrics) {
        for (name, value) in metrics {
            let entry = self.0.entry(name).or_insert((0.0, 0));
            entry.0 += value;
            entry.1 += 1;
        }
    }

    fn into_metrics(self) -> Metrics {
        self.0.into_iter().map(|(name, (sum, n))| (name, sum / n as f64)).collect()
    }
}

/// Test support: the module is private to the loop, so its tests sit beside it.
#[cfg(test)]
mod tests {
    use super::MetricMeans;

    #[test]
    fn step_metrics_are_means_over_the_micro_batches_that_report_them() {
        let mut means = MetricMeans::default();
        means.add([("loss".to_string(), 1.0), ("psnr".to_string(), 20.0)].into());
        means.add([("loss".to_string(), 3.0)].into());
        let m = means.into_metrics();
        assert_eq!(m["loss"], 2.0);
        assert_eq!(m["psnr"], 20.0);
    }
}
