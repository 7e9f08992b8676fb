//! Training the [`Lam`] with the shared loop ([`jinn_train::train_loop`]).
//!
//! Same data handling as [`crate::tokenizer::task`]: the train loader's position is stored in
//! every checkpoint, each clip's codebook dropout comes from its own stream (`(seed,
//! "codebook-dropout", the clip's global index)`) and dead-code replacements from `(seed, step)`,
//! so a resumed run is bit-identical to an uninterrupted one on the CPU backend.
//!
//! Dead-code reset (after Jasmine's `train_lam.py`), after the optimiser update: a code unused by every
//! micro-batch of `reset_threshold` consecutive steps is moved onto the encoder output of a
//! random transition of this step's last global micro-batch (gathered from every rank; the
//! usage counts are summed over ranks, so every rank resets the same codes to the same vectors;
//! `model.reset_to = "encoder_output"`,
//! the default) or, as in Jasmine, overwritten by a copy of a code used in this step
//! (`"used_code"`, which let the demo LAM's codebook collapse to one direction). Unlike
//! Jasmine, the per-code counters are saved in checkpoints (`state.extra["lam_last_active"]`),
//! so a resumed run resets the same codes.
//!
//! Metrics (as `train_lam.py`, on frames `1..T−1`): `loss, mse, q_loss, commitment_loss, psnr, ssim,
//! codebook_usage`, plus `codes_reset` and `grad_norm` (when clipping) in training. Validation
//! on a dataset that records one discrete action per frame adds `nmi`: the normalised mutual
//! information (geometric) between the latent codes and the true actions of the same
//! transitions ([`crate::nmi`]), the number `jinn eval world` reports for a finished model.
//! Validation also logs `code_max_cos`, the largest cosine between two codes
//! ([`jinn_nn::VectorQuantizer::max_code_cosine`]): near 1, the codes cannot be told apart.
//! With hindsight code assignment ([`crate::lam::CodeAssignment::Reconstruction`]) it adds
//! `nmi_hindsight`, the NMI of the hindsight codes (the best prediction's) with the true
//! actions, and `hindsight_named`, the share of transitions whose nearest code is the hindsight
//! one; training's `q_loss` is then the encoder's cross-entropy and `commitment_loss` 0.

use crate::data::DataConfig;
use crate::data::{
    add_counts, model_err, next_batch, restore_dead_code_counters, save_dead_code_counters, to_u8, videos,
    write_step_gif, TaskData,
};
use crate::genie::LAM_KIND;
use crate::lam::{Lam, LamConfig, LamOutput};
use crate::nmi::{nmi, pair_transitions, Normalisation};
use crate::vq_metrics::VqSums;
use burn::module::Module;
use burn::tensor::{Device, FloatDType, Int, Tensor};
use jinn_data::gif_writer::Panel;
use jinn_data::loader::Batch;
use jinn_data::rng::{derive_seed, rng_for, SampleStreams};
use jinn_nn::init::seeded_init;
use jinn_nn::{CodeUsage, DeadCodeTracker};
use jinn_train::checkpoint::{Checkpoint, TrainState};
use jinn_train::config::TrainConfig;
use jinn_train::precision::Precision;
use jinn_train::train_loop::{Metrics, MicroBatch, MicroContext, Objective, StepContext, TrainTask};
use jinn_train::{Result, TrainError};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Key of the dead-code counters in `state.extra`.
pub const LAST_ACTIVE_KEY: &str = "lam_last_active";

/// A whole LAM run config: `model`, `train` and `data` sections.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LamRunConfig {
    /// Architecture.
    pub model: LamConfig,
    /// Steps, batch, schedule, optimiser, logging and checkpoint cadence.
    pub train: TrainConfig,
    /// Clip length and loader threads.
    pub data: DataConfig,
}

/// The LAM's [`TrainTask`].
pub struct LamTask {
    device: Device,
    model: Lam,
    cfg: LamRunConfig,
    tracker: DeadCodeTracker,
    /// Code usage of the step's micro-batches so far.
    step_usage: Option<CodeUsage>,
    /// Encoder outputs `[b·(t−1), l]` of the step's last micro-batch (reset targets).
    last_emb: Option<Tensor<2>>,
    data: TaskData,
}

impl LamTask {
    /// A task over `data_dir` (`train/`, and `val/` if present) training `model` (built from
    /// `cfg.model`, with its decoder, on the autodiff `device`).
    pub fn new(cfg: &LamRunConfig, data_dir: &Path, model: Lam, device: Device) -> Result<Self> {
        cfg.train.validate()?;
        if cfg.data.seq_len < 2 {
            return Err(TrainError::config("data.seq_len", "the LAM needs clips of at least 2 frames"));
        }
        let m = &cfg.model;
        let want = m.coder.frames();
        let data = TaskData::open(data_dir, &cfg.train, &cfg.data, want)?;
        Ok(LamTask {
            device,
            model,
            step_usage: None,
            last_emb: None,
            tracker: DeadCodeTracker::new(m.num_codes, m.reset_threshold),
            cfg: cfg.clone(),
            data,
        })
    }

    /// Build the model from `cfg.model` with its initialisation seeded from the run seed.
    pub fn from_config(cfg: &LamRunConfig, data_dir: &Path, device: Device) -> Result<Self> {
        let seed = derive_seed(cfg.train.seed, "init", 0);
        let model = seeded_init(&device, seed, || cfg.model.init(&device)).map_err(model_err)?;
        Self::new(cfg, data_dir, model, device)
    }

    /// The dead-code counters.
    pub fn tracker(&self) -> &DeadCodeTracker {
        &self.tracker
    }

    /// Adds `out`'s losses and code usage to `sums`, and its PSNR/SSIM when `images` (they
    /// need the prediction on the host, so training computes them on logged steps only).
    fn add_metrics(
        &self,
        out: &LamOutput,
        batch: &Batch,
        sums: &mut VqSums,
        images: bool,
    ) -> Result<CodeUsage> {
        sums.add_losses(&out.loss, &out.mse, &out.q_loss, &out.commitment);
        if images {
            let s = batch.frame_shape;
            let recon: Vec<f32> = out.recon.clone().try_into_vec_as::<f32>().expect("float tensor data"); // [b, t−1, h, w, c]
            let clip = s.frame_bytes() * batch.seq_len;
            let gt: Vec<f32> = batch
                .videos
                .chunks(clip)
                .flat_map(|c| c[s.frame_bytes()..].iter().map(|&v| v as f32 / 255.0))
                .collect(); // frames 1..T−1 of every clip
            sums.add_images(&recon, &gt, s)?;
        }
        let usage =
            CodeUsage::from_indices(out.indices.clone(), self.model.num_codes()).map_err(model_err)?;
        sums.add_codes(&usage);
        Ok(usage)
    }
}

/// Appends the latent code of every transition `t → t+1` of `batch` to `codes` and the action
/// recorded at frame `t` (the one that caused it) to `truth`, when the batch records exactly
/// one discrete action per frame.
fn collect_code_action_pairs(
    indices: &Tensor<1, Int>,
    batch: &Batch,
    codes: &mut Vec<i64>,
    truth: &mut Vec<i64>,
) {
    let Some(actions) = batch.actions.as_ref().filter(|_| batch.action_dims == 1) else {
        return;
    };
    pair_transitions(&code_ids(indices), actions, batch.batch_size, batch.seq_len, codes, truth);
}

/// Code indices `[b·(t−1)]` on the host.
fn code_ids(indices: &Tensor<1, Int>) -> Vec<i64> {
    indices.clone().try_into_vec_as::<i64>().expect("integer tensor data")
}

impl TrainTask for LamTask {
    type Model = Lam;

    fn normalise_model_config(&self, stored: &serde_json::Value) -> serde_json::Value {
        jinn_train::config::normalise::<crate::lam::LamConfig>(stored)
    }

    fn step_macs(&self) -> Option<u64> {
        Some(self.model.train_step_macs(self.cfg.train.batch_size, self.cfg.data.seq_len))
    }

    fn kind(&self) -> &str {
        LAM_KIND
    }

    fn precisions(&self) -> &'static [Precision] {
        &[Precision::F32, Precision::Bf16]
    }

    fn model(&self) -> &Lam {
        &self.model
    }

    fn set_model(&mut self, model: Lam) {
        self.model = model;
    }

    fn micro_batch(&mut self, ctx: &MicroContext) -> Result<MicroBatch> {
        let batch = self.data.next()?;
        // bf16 or f32 compute; gradients land in f32 on self.model (jinn_train::precision).
        let precision = self.cfg.train.precision;
        let videos = precision.cast_input(videos(&batch, &self.device)); // [b, t, h, w, c]
        let streams = SampleStreams::new(ctx.seed, "codebook-dropout", ctx.first_sample, batch.batch_size);
        let out = precision.compute_model(&self.model).forward_train(videos, &streams).map_err(model_err)?;
        let mut sums = VqSums::default();
        let usage = self.add_metrics(&out, &batch, &mut sums, ctx.logged)?;
        let step_usage = self.step_usage.get_or_insert_with(|| CodeUsage { counts: Vec::new() });
        add_counts(&mut step_usage.counts, usage.counts);
        self.last_emb = Some(out.emb.clone().cast(FloatDType::F32)); // reset targets of the f32 codebook
        Ok(MicroBatch { objective: Objective::Loss(out.loss), metrics: sums.into_metrics() })
    }

    /// The dead-code reset, from the usage of every micro-batch of the step; a reset code
    /// becomes an encoder output of the step's last micro-batch (`model.reset_to`).
    fn after_update(&mut self, ctx: &StepContext, metrics: &mut Metrics) -> Result<()> {
        let mut usage =
            self.step_usage.take().unwrap_or(CodeUsage { counts: vec![0; self.model.num_codes()] });
        // The usage of the whole global batch, so every rank resets the same codes ...
        jinn_train::distributed::sum_counts_over_ranks(&mut usage.counts)?;
        let mut rng = rng_for(ctx.seed, "lam-code-reset", ctx.step);
        let resets = self.tracker.step(&usage, &mut rng).map_err(model_err)?;
        if let (false, Some(emb)) = (resets.is_empty(), self.last_emb.take()) {
            // ... to the same encoder outputs, drawn from the whole global batch.
            let emb = gather_rows(emb)?;
            let target = self.cfg.model.reset_to;
            self.model.vq =
                self.model.vq.clone().apply_resets(&resets, target, emb, &mut rng).map_err(model_err)?;
        }
        metrics.insert("codes_reset".into(), resets.len() as f64);
        Ok(())
    }

    fn validate(&mut self, _step: u64, batches: usize) -> Result<Metrics> {
        let Some(mut loader) = self.data.val_loader()? else {
            return Ok(Metrics::new());
        };
        let model = self.model.valid();
        let device = model.vq.codebook.val().device();
        let mut sums = VqSums::default();
        let (mut codes, mut truth) = (Vec::new(), Vec::new());
        let (mut hindsight_codes, mut hindsight_truth) = (Vec::new(), Vec::new());
        let (mut named, mut transitions) = (0usize, 0usize);
        for _ in 0..batches {
            let batch = next_batch(&mut loader)?;
            let out = model.forward_eval(videos(&batch, &device)).map_err(model_err)?;
            self.add_metrics(&out, &batch, &mut sums, true)?;
            collect_code_action_pairs(&out.indices, &batch, &mut codes, &mut truth);
            if let Some(best) = &out.hindsight {
                collect_code_action_pairs(best, &batch, &mut hindsight_codes, &mut hindsight_truth);
                let (best, chosen) = (code_ids(best), code_ids(&out.indices));
                named += best.iter().zip(&chosen).filter(|(a, b)| a == b).count();
                transitions += best.len();
            }
        }
        let mut metrics = sums.into_metrics();
        for (key, codes, truth) in
            [("nmi", &codes, &truth), ("nmi_hindsight", &hindsight_codes, &hindsight_truth)]
        {
            if !codes.is_empty() {
                let agreement = nmi(codes, truth, Normalisation::Geometric)
                    .map_err(|e| TrainError::config(key, e.to_string()))?;
                metrics.insert(key.into(), agreement);
            }
        }
        if transitions > 0 {
            metrics.insert("hindsight_named".into(), named as f64 / transitions as f64);
        }
        metrics.insert("code_max_cos".into(), model.vq.max_code_cosine());
        Ok(metrics)
    }

    /// `images/lam_step_XXXXXX.gif`: frames `1..T−1` of the first validation clip (training
    /// clip without a val split) beside the LAM's prediction of them.
    fn save_images(&mut self, step: u64, run_dir: &Path) -> Result<()> {
        let one = self.data.image_clip()?;
        let model = self.model.valid();
        let s = one.frame_shape;
        let out = model.forward_eval(videos(&one, &model.vq.codebook.val().device())).map_err(model_err)?;
        let recon = to_u8(out.recon); // [t−1, h, w, c]
        let panels = [
            Panel { label: "data", frames: &one.videos[s.frame_bytes()..] },
            Panel { label: "lam", frames: &recon },
        ];
        write_step_gif(run_dir, "lam", step, &panels, s)
    }

    fn save_state(&self, state: &mut TrainState) -> Result<()> {
        self.data.save(state);
        save_dead_code_counters(state, LAST_ACTIVE_KEY, &self.tracker);
        Ok(())
    }

    fn restore_state(&mut self, checkpoint: &Checkpoint) -> Result<()> {
        self.data.restore(checkpoint)?;
        restore_dead_code_counters(checkpoint, LAST_ACTIVE_KEY, &mut self.tracker)
    }
}

/// `rows` `[r, l]` of every rank stacked in rank order, `[ranks·r, l]` (the global batch's
/// rows in its sample order); `rows` itself in a single-process run.
fn gather_rows(rows: Tensor<2>) -> Result<Tensor<2>> {
    if jinn_train::distributed::world_size() == 1 {
        return Ok(rows);
    }
    let [r, l] = rows.dims();
    let device = rows.device();
    let local: Vec<f32> = rows.try_into_vec_as::<f32>().expect("float tensor data");
    let all = jinn_train::distributed::gather_over_ranks(&local)?;
    let total = all.len() / l.max(1);
    debug_assert_eq!(total % r.max(1), 0);
    Ok(Tensor::from_data(burn::tensor::TensorData::new(all, [total, l]), &device))
}

#[cfg(test)]
mod tests;
