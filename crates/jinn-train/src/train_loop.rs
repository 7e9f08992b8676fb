//! The one training loop every model shares. A model implements [`TrainTask`] (the loss of a
//! micro-batch, validation, images, its own checkpoint fields); the loop owns the update
//! ([`Updater`]: accumulation, averaging over ranks, clipping, the optimiser) and drives the
//! steps, LR schedule, logging, validation, checkpoints with retention and exact resume.
//!
//! **Exact resume.** A run stopped after a checkpoint at step `s` and resumed produces the
//! same parameters as the uninterrupted run, bit for bit on the CPU backend, provided the
//! task (a) draws every random number from `(seed, purpose, step)` or, inside a step, from
//! `(seed, purpose, global sample index)` via [`jinn_data::rng`], (b) restores its loader position from the checkpoint, and (c) keeps
//! no other state across steps outside the checkpoint (put such state in
//! [`TrainState::extra`]). The loop itself is a pure function of the step.
//!
//! **Data parallelism.** With a process group installed ([`crate::distributed`]) every rank
//! runs this loop: the update averages gradients over ranks before clipping and the optimiser
//! step, logged metrics are averaged over ranks, and rank 0 alone
//! validates and writes metrics, images and checkpoints. All ranks resume from the same
//! checkpoint (checked), whatever the number of ranks that wrote it.

use crate::checkpoint::{latest_good, remove_stale_temp_dirs, Checkpoint, TrainState};
use crate::checkpoint_writer::CheckpointWriter;
use crate::config::TrainConfig;
use crate::distributed::{self, ensure_same_on_all_ranks, mean_over_ranks, Collective};
use crate::error::{Result, TrainError};
use crate::metrics_log::{MetricRecord, RunLogger};
use crate::precision::Precision;
use burn::module::Module;
use jinn_nn::warm_pool::WarmPool;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

mod any_task;
mod update;
pub use any_task::AnyTask;
pub use update::{step_gradients, MicroBatch, MicroContext, Objective, Updater};

/// Metric name → value.
pub type Metrics = BTreeMap<String, f64>;

/// What the loop tells a task about the update it is in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepContext {
    /// Updates already applied before this one (0-based).
    pub step: u64,
    /// Learning rate for this update ([`crate::schedule::LrSchedule::lr`]).
    pub lr: f64,
    /// Micro-batches to accumulate before the optimiser update (`train.grad_accum`).
    pub grad_accum: usize,
    /// Samples per micro-batch on this rank ([`TrainConfig::rank_micro_batch`]).
    pub micro_batch: usize,
    /// Global-norm clipping threshold, if any ([`crate::optim::clip_global_norm`]).
    pub clip_norm: Option<f64>,
    /// The run seed, the same on every rank: random draws inside a step are keyed to it and
    /// to a step or a global sample index ([`MicroContext::first_sample`]), never to a rank.
    pub seed: u64,
    /// Whether this step's metrics will be logged. Tasks may skip host-side metrics that only
    /// the log reads (top-k accuracies, say) when it is `false`; the loss is always returned.
    pub logged: bool,
}

impl StepContext {
    /// The context of update `step` of a run with `train`'s settings.
    pub fn new(train: &TrainConfig, step: u64, logged: bool) -> StepContext {
        StepContext {
            step,
            lr: train.lr.lr(step, train.steps),
            grad_accum: train.grad_accum,
            micro_batch: train.rank_micro_batch(),
            clip_norm: train.clip_norm,
            seed: train.seed,
            logged,
        }
    }
}

/// A model's side of training: the loss of a micro-batch, validation, images and the task's
/// own checkpoint fields. The update itself (accumulation, averaging over ranks, clipping, the
/// optimiser) is the loop's ([`Updater`]).
pub trait TrainTask {
    /// The module being trained (on the autodiff device).
    type Model: Module;

    /// Model kind stored in checkpoints (resuming another kind is refused).
    fn kind(&self) -> &str;

    /// The model being trained.
    fn model(&self) -> &Self::Model;

    /// Replace the model (after an update, or when a checkpoint is restored).
    fn set_model(&mut self, model: Self::Model);

    /// The loss (or gradients) and metrics of one micro-batch.
    fn micro_batch(&mut self, ctx: &MicroContext) -> Result<MicroBatch>;

    /// After the optimiser update of `ctx.step`: work on the updated model that is not part of
    /// the gradient step (dead-code resets, say), adding its metrics. Default: nothing.
    fn after_update(&mut self, _ctx: &StepContext, _metrics: &mut Metrics) -> Result<()> {
        Ok(())
    }

    /// Evaluate `batches` validation batches after `step` updates.
    fn validate(&mut self, step: u64, batches: usize) -> Result<Metrics>;

    /// Write images (reconstructions, rollouts) for `step` into `run_dir`. Default: none.
    fn save_images(&mut self, _step: u64, _run_dir: &Path) -> Result<()> {
        Ok(())
    }

    /// Fill in the task's own checkpoint fields of `state` (loader positions, `extra`); the
    /// loop has filled in the rest. Default: none.
    fn save_state(&self, _state: &mut TrainState) -> Result<()> {
        Ok(())
    }

    /// Refuse a checkpoint this task cannot continue (another vocabulary, say), before the
    /// loop loads anything from it. Default: every checkpoint of the right kind and config.
    fn check_checkpoint(&self, _checkpoint: &Checkpoint) -> Result<()> {
        Ok(())
    }

    /// Restore the task's own fields from `checkpoint`, after the loop has loaded the model
    /// into it. Default: none.
    fn restore_state(&mut self, _checkpoint: &Checkpoint) -> Result<()> {
        Ok(())
    }

    /// A checkpoint's stored `model` config section as this code reads it, compared with the
    /// current one on resume: tasks whose config gained fields implement it with
    /// [`crate::config::normalise`], so a checkpoint written before a field existed still
    /// resumes when the current value is the default. Default: as stored.
    fn normalise_model_config(&self, stored: &serde_json::Value) -> serde_json::Value {
        stored.clone()
    }

    /// Multiply-accumulates of the dense layers and attention matmuls of one training step,
    /// where the task can count them (`jinn bench train` reports them as FLOPs and as a time
    /// floor). Default: not counted.
    fn step_macs(&self) -> Option<u64> {
        None
    }

    /// The compute precisions (`train.precision`) this task trains in. Default: f32 only;
    /// tasks whose step casts the model and its inputs (`Precision::compute_model`) add bf16.
    fn precisions(&self) -> &'static [Precision] {
        &[Precision::F32]
    }
}

/// Error (naming `train.precision`) unless `task` trains in `precision` and the model's device
/// computes in it: a precision is never ignored, nor silently replaced by f32.
pub fn ensure_precision<T: TrainTask>(task: &T, precision: Precision) -> Result<()> {
    if !task.precisions().contains(&precision) {
        let offered: Vec<String> =
            task.precisions().iter().map(|p| format!("{p:?}").to_lowercase()).collect();
        return Err(TrainError::config(
            "train.precision",
            format!("the {} trains in {} only, not {precision:?}", task.kind(), offered.join(" or ")),
        ));
    }
    task.model().devices().iter().try_for_each(|device| precision.ensure_supported(device))
}

/// Settings of one call to [`run`] besides the [`TrainConfig`].
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The run directory (checkpoints, logs, images).
    pub run_dir: PathBuf,
    /// The full resolved config, stored in checkpoints.
    pub config_json: serde_json::Value,
    /// Resume from the newest good checkpoint in `run_dir` if there is one.
    pub resume: bool,
    /// Stop after this many updates in total (the schedule still uses `train.steps`); for
    /// time-boxed runs and tests. A checkpoint is written at the stop.
    pub stop_at: Option<u64>,
    /// Metric records kept in each checkpoint's `metrics_head`.
    pub metrics_head_len: usize,
}

/// What [`run`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSummary {
    /// Step the run started from (0, or the resumed checkpoint's).
    pub start_step: u64,
    /// Updates applied when the run ended.
    pub end_step: u64,
    /// Checkpoints skipped as corrupted while resuming, with reasons.
    pub skipped_checkpoints: Vec<(PathBuf, String)>,
}

/// One finished update, as reported to a [`RunObserver`].
#[derive(Debug, Clone, Copy)]
pub struct StepReport<'a> {
    /// Updates applied so far (this update included).
    pub step: u64,
    /// Step the run started from (0, or the resumed checkpoint's).
    pub start_step: u64,
    /// Step the run will stop at (`train.steps`, or `--stop-at`).
    pub end_step: u64,
    /// Wall time of this update (forward, backward, optimiser: [`Updater::step`]).
    pub step_time: Duration,
    /// The step's metrics (`loss`, …; `lr` included).
    pub metrics: &'a Metrics,
}

/// Hooks through which a caller watches a run (a progress bar, log lines). The training
/// crates draw nothing themselves; every method defaults to doing nothing.
pub trait RunObserver {
    /// Before the first update: the run goes from `start_step` to `end_step`.
    fn on_start(&mut self, _start_step: u64, _end_step: u64) {}
    /// After every update.
    fn on_step(&mut self, _report: &StepReport<'_>) {}
    /// After a validation at `step`.
    fn on_validation(&mut self, _step: u64, _metrics: &Metrics) {}
    /// After the last update and the final checkpoint.
    fn on_finish(&mut self, _summary: &RunSummary) {}
}

/// A [`RunObserver`] that ignores everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoObserver;

impl RunObserver for NoObserver {}

/// Drive `task` for `train.steps` updates (or until `opts.stop_at`).
pub fn run<T: TrainTask>(task: &mut T, train: &TrainConfig, opts: &RunOptions) -> Result<RunSummary> {
    run_observed(task, train, opts, &mut NoObserver)
}

/// [`run`], reporting progress to `observer`.
pub fn run_observed<T: TrainTask, O: RunObserver + ?Sized>(
    task: &mut T,
    train: &TrainConfig,
    opts: &RunOptions,
    observer: &mut O,
) -> Result<RunSummary> {
    train.validate()?;
    ensure_precision(task, train.precision)?;
    let group = distributed::collective();
    let group = group.as_deref();
    if train.local_ranks > 1 && distributed::world_size() != train.local_ranks {
        return Err(TrainError::config(
            "train.local_ranks",
            format!(
                "{} thread ranks split each batch, but this run has {} rank(s): train through \
                 `jinn train`, which starts them, or set train.local_ranks = 1",
                train.local_ranks,
                distributed::world_size()
            ),
        ));
    }
    let leader = group.is_none_or(|g| g.rank() == 0);
    std::fs::create_dir_all(&opts.run_dir).map_err(|e| TrainError::io(&opts.run_dir, e))?;
    if leader {
        remove_stale_temp_dirs(&opts.run_dir)?;
    }

    let mut updater = Updater::new(task, &train.optim)?;
    let on_cpu = runs_on_cpu(task.model());
    let (mut step, skipped) = if opts.resume {
        let found = latest_good(&opts.run_dir)?;
        match found.checkpoint {
            Some(ckpt) => {
                let want = opts.config_json.get("model");
                ckpt.state
                    .ensure_compatible(&ckpt.dir, task.kind(), want, |m| task.normalise_model_config(m))?;
                updater.restore(task, &ckpt)?;
                (ckpt.state.step, found.skipped)
            }
            None => (0, found.skipped),
        }
    } else {
        (0, Vec::new())
    };
    if let Some(g) = group {
        let per_rank = train.rank_micro_batch() * train.grad_accum;
        ensure_same_on_all_ranks(g, step, "the step to start from (each rank's newest good checkpoint)")?;
        if leader {
            tracing::info!(
                "data-parallel over {} ranks: global batch = {} per rank × {} ranks = {}",
                g.size(),
                per_rank,
                g.size(),
                per_rank * g.size()
            );
        }
    }
    let start_step = step;
    let resumed = opts.resume && step > 0;
    // Rank 0 alone writes metrics and checkpoints.
    let mut logger = match leader {
        true => Some(RunLogger::open(&opts.run_dir, resumed.then_some(step), opts.metrics_head_len)?),
        false => None,
    };
    let mut writer = match leader {
        true => Some(CheckpointWriter::spawn(opts.run_dir.clone(), train.keep_last, train.keep_every)?),
        false => None,
    };
    let end = opts.stop_at.map_or(train.steps, |s| s.min(train.steps));
    let every = |n: u64, s: u64| n > 0 && s.is_multiple_of(n);
    observer.on_start(start_step, end);

    while step < end {
        let ctx = StepContext::new(train, step, every(train.log_every, step + 1) || step + 1 == end);
        let started = Instant::now();
        let mut metrics = {
            // On the CPU the other pool threads poll for the step's parallel ops instead of
            // sleeping; a GPU run leaves them asleep.
            let _warm = on_cpu.then(WarmPool::new);
            updater.step(task, &ctx)?
        };
        let step_time = started.elapsed();
        step += 1;
        if let (Some(g), true) = (group, ctx.logged) {
            average_metrics(g, &mut metrics)?;
        }
        metrics.insert("lr".into(), ctx.lr);
        observer.on_step(&StepReport { step, start_step, end_step: end, step_time, metrics: &metrics });
        let (Some(logger), Some(writer)) = (logger.as_mut(), writer.as_mut()) else {
            continue; // not rank 0: nothing to validate or write
        };
        if ctx.logged {
            logger.log(MetricRecord::now(step, "train", metrics))?;
        }
        if every(train.val_every, step) {
            let val = task.validate(step, train.val_batches)?;
            observer.on_validation(step, &val);
            logger.log(MetricRecord::now(step, "val", val))?;
        }
        if every(train.image_every, step) {
            task.save_images(step, &opts.run_dir)?;
        }
        if every(train.ckpt_every, step) || step == end {
            logger.flush()?;
            let state = TrainState {
                step,
                model_kind: task.kind().to_string(),
                config: opts.config_json.clone(),
                seed: train.seed,
                loader: None,
                val_loader: None,
                metrics_head: logger.head(),
                extra: Default::default(),
            };
            writer.submit(updater.snapshot(task, state)?)?;
        }
    }
    if let (Some(mut logger), Some(writer)) = (logger, writer) {
        logger.flush()?;
        writer.finish()?;
    }
    let summary = RunSummary { start_step, end_step: step, skipped_checkpoints: skipped };
    observer.on_finish(&summary);
    Ok(summary)
}

/// Whether every parameter of `model` lives on the CPU backend (the device the warm pool and
/// the other CPU thread policy are for).
pub fn runs_on_cpu<M: Module>(model: &M) -> bool {
    model.devices().iter().all(jinn_nn::ops::on_cpu)
}

/// Replace `metrics` by their means over the ranks of `group`. Every rank must log the same
/// metric names (the map is sorted, so in the same order); the counts are checked first.
pub(crate) fn average_metrics(group: &dyn Collective, metrics: &mut Metrics) -> Result<()> {
    let names: Vec<&String> = metrics.keys().collect();
    ensure_same_on_all_ranks(group, names.len() as u64, &format!("the number of metrics (here {names:?})"))?;
    let mut values: Vec<f64> = metrics.values().copied().collect();
    mean_over_ranks(group, &mut values)?;
    metrics.values_mut().zip(values).for_each(|(m, v)| *m = v);
    Ok(())
}

#[cfg(test)]
mod tests;
