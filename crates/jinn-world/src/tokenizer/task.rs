//! Training the [`Tokenizer`] with the shared loop ([`jinn_train::train_loop`]).
//!
//! Data: `<data>/train` (and `<data>/val` when validating), read by the jinn-data loader.
//! The train loader's position is stored in every checkpoint, and every clip's codebook
//! dropout comes from its own stream, `(seed, "codebook-dropout", the clip's global index)`
//! ([`SampleStreams`]), so a resumed run is bit-identical to an uninterrupted one on the CPU
//! backend and `N` ranks × batch `B` draw what one rank × batch `N·B` draws.
//!
//! Optional dead-code reset (`model.reset_threshold > 0`; off in Jasmine and the jasmine-*
//! configs): after the optimiser update, a code unused by every micro-batch of that many
//! consecutive steps becomes a copy of a code used in this step (the LAM's rule,
//! [`jinn_nn::DeadCodeTracker`]), from the usage of the whole global batch (summed over ranks)
//! and a generator of `(seed, step)`, so every rank resets the same codes; the counters are saved in checkpoints
//! (`state.extra["tokenizer_last_active"]`) so resume stays exact.
//!
//! Validation reads the first `val_batches` batches of a fresh validation stream each time
//! (seeded from the run seed), so every validation sees the same clips and validation keeps
//! no state between calls.
//!
//! Metrics (as `train_tokenizer_vqvae.py`): `loss, mse, q_loss, commitment_loss, psnr, ssim, codebook_usage`
//! (fraction of the K codes used in the step's batch), plus `grad_norm` when clipping. In
//! training, `psnr`, `ssim` and `codebook_usage` are computed on logged steps only (a few % of
//! a step each time).

use crate::data::{
    self, model_err, restore_dead_code_counters, save_dead_code_counters, videos, DataConfig, TaskData,
};
use crate::tokenizer::eval::{add_forward, evaluate, write_recon_gif};
use crate::tokenizer::{Tokenizer, TokenizerConfig, TOKENIZER_KIND};
use crate::vq_metrics::VqSums;
use burn::module::Module;
use burn::tensor::Device;
use jinn_data::dataset::Dataset;
use jinn_data::rng::{derive_seed, rng_for, SampleStreams};
use jinn_data::FrameShape;
use jinn_nn::init::seeded_init;
use jinn_nn::{CodeUsage, DeadCodeTracker};
use jinn_train::checkpoint::{Checkpoint, TrainState};
use jinn_train::config::TrainConfig;
use jinn_train::precision::Precision;
use jinn_train::train_loop::{Metrics, MicroBatch, MicroContext, Objective, StepContext, TrainTask};
use jinn_train::{Result, TrainError};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::Arc;

/// Key of the dead-code counters in `state.extra` (when `model.reset_threshold > 0`).
pub const LAST_ACTIVE_KEY: &str = "tokenizer_last_active";

/// A whole tokenizer run config: `model`, `train` and `data` sections.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TokenizerRunConfig {
    /// Architecture.
    pub model: TokenizerConfig,
    /// Steps, batch, schedule, optimiser, logging and checkpoint cadence.
    pub train: TrainConfig,
    /// Clip length and loader threads.
    pub data: DataConfig,
}

/// Open `<data_dir>/<split>` and check its frames match the model config.
pub fn open_split(data_dir: &Path, split: &str, cfg: &TokenizerRunConfig) -> Result<Arc<Dataset>> {
    data::open_split(data_dir, split, cfg.data.seq_len, frame_shape(&cfg.model))
}

/// The frame shape the model config expects.
fn frame_shape(m: &TokenizerConfig) -> FrameShape {
    m.coder().frames()
}

/// The tokenizer's [`TrainTask`].
pub struct TokenizerTask {
    device: Device,
    model: Tokenizer,
    cfg: TokenizerRunConfig,
    /// Dead-code counters when `model.reset_threshold > 0`.
    tracker: Option<DeadCodeTracker>,
    /// Per-block recomputation in training (`model.remat`).
    remat: bool,
    /// Code usage of the step's micro-batches so far (with a tracker).
    step_usage: Option<CodeUsage>,
    data: TaskData,
}

impl TokenizerTask {
    /// A task over `data_dir` (`train/`, and `val/` if present) training `model` (built from
    /// `cfg.model`, which must have `kind = "vq"`, on the autodiff `device`).
    pub fn new(cfg: &TokenizerRunConfig, data_dir: &Path, model: Tokenizer, device: Device) -> Result<Self> {
        let vq = cfg.model.vq().map_err(model_err)?;
        cfg.train.validate()?;
        let data = TaskData::open(data_dir, &cfg.train, &cfg.data, frame_shape(&cfg.model))?;
        Ok(TokenizerTask {
            device,
            model,
            step_usage: None,
            remat: vq.remat,
            tracker: (vq.reset_threshold > 0).then(|| DeadCodeTracker::new(vq.num_codes, vq.reset_threshold)),
            cfg: cfg.clone(),
            data,
        })
    }

    /// Build the model from `cfg.model` with its initialisation seeded from the run seed, on
    /// `device` (autodiff), and the task around it.
    pub fn from_config(cfg: &TokenizerRunConfig, data_dir: &Path, device: Device) -> Result<Self> {
        let seed = derive_seed(cfg.train.seed, "init", 0);
        let model = seeded_init(&device, seed, || cfg.model.vq()?.init(&device)).map_err(model_err)?;
        Self::new(cfg, data_dir, model, device)
    }

    /// The dead-code counters (`None` when `model.reset_threshold` is 0).
    pub fn tracker(&self) -> Option<&DeadCodeTracker> {
        self.tracker.as_ref()
    }
}

impl TrainTask for TokenizerTask {
    type Model = Tokenizer;

    fn normalise_model_config(&self, stored: &serde_json::Value) -> serde_json::Value {
        jinn_train::config::normalise::<crate::tokenizer::TokenizerConfig>(stored)
    }

    fn step_macs(&self) -> Option<u64> {
        Some(self.model.train_step_macs(self.cfg.train.batch_size, self.cfg.data.seq_len))
    }

    fn kind(&self) -> &str {
        TOKENIZER_KIND
    }

    fn precisions(&self) -> &'static [Precision] {
        &[Precision::F32, Precision::Bf16]
    }

    fn model(&self) -> &Tokenizer {
        &self.model
    }

    fn set_model(&mut self, model: Tokenizer) {
        self.model = model;
    }

    fn micro_batch(&mut self, ctx: &MicroContext) -> Result<MicroBatch> {
        let batch = self.data.next()?;
        // bf16 or f32 compute; gradients land in f32 on self.model (jinn_train::precision).
        let precision = self.cfg.train.precision;
        let videos = precision.cast_input(videos(&batch, &self.device)); // [b, t, h, w, c]
        let streams = SampleStreams::new(ctx.seed, "codebook-dropout", ctx.first_sample, batch.batch_size);
        let model = precision.compute_model(&self.model);
        let (out, objective) = if self.remat {
            // Per-block recomputation (tokenizer::remat): same gradients, less memory.
            let (out, grads) =
                model.forward_backward_remat(videos, &streams, ctx.divisor()).map_err(model_err)?;
            (out, Objective::Gradients(grads))
        } else {
            let out = model.forward_train(videos, &streams).map_err(model_err)?;
            let loss = out.loss.clone();
            (out, Objective::Loss(loss))
        };
        let num_codes = self.model.num_codes();
        let mut sums = VqSums::default();
        add_forward(&mut sums, &out, &batch, num_codes, ctx.logged)?;
        if self.tracker.is_some() {
            let [b, t, n] = out.indices.dims();
            let usage =
                CodeUsage::from_indices(out.indices.reshape([b * t * n]), num_codes).map_err(model_err)?;
            let step_usage = self.step_usage.get_or_insert_with(|| CodeUsage { counts: Vec::new() });
            data::add_counts(&mut step_usage.counts, usage.counts);
        }
        Ok(MicroBatch { objective, metrics: sums.into_metrics() })
    }

    /// The dead-code reset, from the usage of every micro-batch of the step.
    fn after_update(&mut self, ctx: &StepContext, metrics: &mut Metrics) -> Result<()> {
        let (Some(tracker), Some(mut usage)) = (&mut self.tracker, self.step_usage.take()) else {
            return Ok(());
        };
        // The usage of the whole global batch, so every rank resets the same codes.
        jinn_train::distributed::sum_counts_over_ranks(&mut usage.counts)?;
        let mut rng = rng_for(ctx.seed, "tokenizer-code-reset", ctx.step);
        let resets = tracker.step(&usage, &mut rng).map_err(model_err)?;
        if !resets.is_empty() {
            self.model.vq = self.model.vq.clone().reset_codes(&resets).map_err(model_err)?;
        }
        metrics.insert("codes_reset".into(), resets.len() as f64);
        Ok(())
    }

    fn validate(&mut self, _step: u64, batches: usize) -> Result<Metrics> {
        let Some(mut loader) = self.data.val_loader()? else {
            return Ok(Metrics::new());
        };
        evaluate(&self.model.valid(), &mut loader, batches)
    }

    /// `images/recon_step_XXXXXX.gif`: the first validation clip (or training clip without a
    /// val split) beside its reconstruction.
    fn save_images(&mut self, step: u64, run_dir: &Path) -> Result<()> {
        let batch = self.data.image_batch()?;
        let dir = run_dir.join("images");
        std::fs::create_dir_all(&dir).map_err(|e| TrainError::io(&dir, e))?;
        write_recon_gif(&self.model.valid(), &batch, 1, &dir.join(format!("recon_step_{step:06}.gif")))
    }

    fn save_state(&self, state: &mut TrainState) -> Result<()> {
        self.data.save(state);
        if let Some(tracker) = &self.tracker {
            save_dead_code_counters(state, LAST_ACTIVE_KEY, tracker);
        }
        Ok(())
    }

    fn restore_state(&mut self, checkpoint: &Checkpoint) -> Result<()> {
        self.data.restore(checkpoint)?;
        if let Some(tracker) = &mut self.tracker {
            restore_dead_code_counters(checkpoint, LAST_ACTIVE_KEY, tracker)?;
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests;
