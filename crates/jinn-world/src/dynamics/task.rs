//! Training a [`Genie`]'s dynamics model (MaskGIT or causal) with the shared loop.
//!
//! The model (frozen tokenizer and LAM included) is saved whole in every checkpoint with the
//! resolved [`GenieRunConfig`]; see [`crate::genie`]. The train loader's position is stored,
//! and every clip's MaskGIT mask comes from its own stream, `(seed, "dynamics-mask", the clip's
//! global index)`; validation masks from `(seed, "val-mask", index in the validation stream)`
//! (the same every validation). A resumed run is bit-identical to an uninterrupted one on the
//! CPU backend, and `N` ranks × batch `B` mask as one rank × batch `N·B`.
//!
//! Metrics (as `train_dynamics_maskgit.py`; over the loss positions — MaskGIT: masked tokens, causal: all):
//! `loss, cross_entropy_loss, z_loss, masked_token_top{1,2,5}_accuracy, entropy, select_p,
//! codebook_usage_tokenizer`, `codebook_usage_lam` with a LAM, `grad_norm` when clipping.
//! Validation adds `psnr, ssim` of the argmax-decoded frames against the clip (left out of
//! training steps: the tokenizer decode would cost about as much as the step).

use crate::code_partners::{lam_code_counts, CodeGrounding};
use crate::data::DataConfig;
use crate::data::{
    actions, add_counts, model_err, next_batch, psnr_ssim, to_u8, val_streams, videos, write_step_gif,
    TaskData,
};
use crate::genie::{ActionConfig, Genie, GenieConfig, GenieOutput, DYNAMICS_KIND};
use burn::module::Module;
use jinn_data::dataset::Dataset;
use jinn_data::gif_writer::Panel;
use jinn_data::loader::Batch;
use jinn_data::rng::SampleStreams;
use jinn_data::FrameShape;
use jinn_nn::reversible::{Engine, Mode, MonitorConfig};
use jinn_nn::CodeUsage;
use jinn_train::checkpoint::{Checkpoint, TrainState};
use jinn_train::config::TrainConfig;
use jinn_train::precision::Precision;
use jinn_train::train_loop::{Metrics, MicroBatch, MicroContext, Objective, TrainTask};
use jinn_train::{Result, TrainError};
use serde::{Deserialize, Serialize};
use std::path::Path;

use crate::dynamics::{DynamicsConfig, TokenMetrics};
use crate::lam::LamConfig;

/// A dynamics run config as the user writes it: the dynamics `model`, the `lam` used when
/// it is co-trained (no `--lam` run given), `train` and `data`. The tokenizer's and a trained
/// LAM's architectures come from their checkpoints.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DynamicsRunConfig {
    /// The dynamics model.
    pub model: DynamicsConfig,
    /// LAM architecture for co-training (ignored with a LAM run or ground-truth actions).
    pub lam: LamConfig,
    /// Steps, batch, schedule, optimiser, logging and checkpoint cadence.
    pub train: TrainConfig,
    /// Clip length and loader threads.
    pub data: DataConfig,
}

/// The resolved config stored in dynamics checkpoints: the whole [`GenieConfig`] as `model`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GenieRunConfig {
    /// Tokenizer, action source and dynamics.
    pub model: GenieConfig,
    /// Training settings.
    pub train: TrainConfig,
    /// Data settings.
    pub data: DataConfig,
}

/// The dynamics [`TrainTask`].
pub struct DynamicsTask {
    model: Genie,
    cfg: GenieRunConfig,
    data: TaskData,
    /// Memory-free backprop for a reversible dynamics model (`model.reversible`).
    engine: Engine,
    /// The LAM's codes grounded in the recorded actions (`model.ground_lam_codes`).
    grounding: Option<CodeGrounding>,
}

impl DynamicsTask {
    /// A task over `data_dir` (`train/`, and `val/` if present) training `model` (assembled
    /// for `cfg.model` on an autodiff device, e.g. by [`crate::genie::assemble_genie`]).
    pub fn new(cfg: &GenieRunConfig, data_dir: &Path, model: Genie) -> Result<Self> {
        cfg.train.validate()?;
        let t = &cfg.model.tokenizer;
        let want: FrameShape = t.coder().frames();
        let data = TaskData::open(data_dir, &cfg.train, &cfg.data, want)?;
        cfg.model.actions.check_data(data.train_split())?;
        let grounding = match cfg.model.dynamics.tokens().is_some_and(|t| t.ground_lam_codes) {
            true => ground_lam_codes(cfg, &model, data.train_split())?,
            false => None,
        };
        Ok(DynamicsTask {
            model,
            cfg: cfg.clone(),
            data,
            engine: Engine::new(Mode::Reconstruct, MonitorConfig::default()),
            grounding,
        })
    }

    fn forward(&self, model: &Genie, batch: &Batch, streams: &SampleStreams) -> Result<GenieOutput> {
        let device = model.dynamics.token_embed.val().device();
        let acts = actions(batch, &device)?;
        model
            .forward_grounded(videos(batch, &device), acts, self.grounding.as_ref(), streams)
            .map_err(model_err)
    }

    /// Add `out`'s metrics to `sums`; `token_metrics: false` skips the host copy of the logits
    /// and the top-k / entropy metrics read from it (training steps that are not logged).
    fn add_metrics(&self, out: &GenieOutput, sums: &mut Sums, token_metrics: bool) -> Result<()> {
        let v = self.model.dynamics.num_codes();
        sums.loss += out.loss.clone().into_scalar::<f32>() as f64;
        sums.ce += out.ce.clone().into_scalar::<f32>() as f64;
        sums.z += out.z_loss.clone().into_scalar::<f32>() as f64;
        if token_metrics {
            let logits: Vec<f32> = out.logits.clone().try_into_vec_as::<f32>().expect("float tensor data"); // [b, t, n, v]
            let targets: Vec<i64> = out.tokens.clone().try_into_vec_as::<i64>().expect("integer tensor data"); // [b, t, n]
            let tm = TokenMetrics::compute(&logits, &targets, &out.loss_positions, v);
            sums.top1 += tm.top1;
            sums.top2 += tm.top2;
            sums.top5 += tm.top5;
            sums.entropy += tm.entropy;
            sums.select_p += tm.select_p;
            sums.token_count += 1;
        }
        let n = out.tokens.shape().num_elements();
        let tok = CodeUsage::from_indices(out.tokens.clone().reshape([n]), v).map_err(model_err)?;
        add_counts(&mut sums.tokenizer_counts, tok.counts);
        if let (Some(idx), Some(lam)) = (&out.lam_indices, &self.model.lam) {
            let usage = CodeUsage::from_indices(idx.clone(), lam.num_codes()).map_err(model_err)?;
            add_counts(&mut sums.lam_counts, usage.counts);
        }
        sums.count += 1;
        Ok(())
    }
}

/// The grounding of `model`'s frozen LAM codes in the actions `train` records
/// (`model.ground_lam_codes`), read off the same clips the play page names its buttons from;
/// `None` for a model trained on the recorded actions themselves (`--actions gt`), which has
/// nothing to ground.
fn ground_lam_codes(cfg: &GenieRunConfig, model: &Genie, train: &Dataset) -> Result<Option<CodeGrounding>> {
    const FIELD: &str = "model.ground_lam_codes";
    match cfg.model.actions {
        ActionConfig::Gt { .. } => return Ok(None),
        ActionConfig::Lam { co_train: true, .. } => return Err(TrainError::config(
            FIELD,
            "grounds the codes of a trained LAM (--lam RUN); a co-trained LAM's codes change as it trains",
        )),
        ActionConfig::Lam { co_train: false, .. } => {}
    }
    let device = model.dynamics.token_embed.val().device();
    let lam = model.lam.as_ref().expect("a trained LAM is loaded");
    let counts = lam_code_counts(model, train.root(), train.frame_shape(), cfg.data.seq_len, &device)?
        .ok_or_else(|| {
            TrainError::config(
                FIELD,
                format!(
                    "the data at {} record no single action per frame to ground the LAM's codes in",
                    train.root().display()
                ),
            )
        })?;
    let num_actions = counts.iter().map(Vec::len).max().unwrap_or(0);
    let num_actions = train.metadata().and_then(|m| m.num_actions).unwrap_or(0).max(num_actions);
    let grounding = CodeGrounding::from_counts(&counts, lam.num_codes(), num_actions);
    let names = train
        .metadata()
        .and_then(|m| jinn_data::metadata::action_names(&m.env, m.num_actions))
        .unwrap_or_default();
    if jinn_train::distributed::is_leader() {
        eprintln!("LAM codes grounded in the recorded actions: {}", grounding.describe(&names));
    }
    Ok(Some(grounding))
}

/// Running sums of per-forward metrics.
#[derive(Default)]
struct Sums {
    loss: f64,
    ce: f64,
    z: f64,
    top1: f64,
    top2: f64,
    top5: f64,
    entropy: f64,
    select_p: f64,
    psnr: f64,
    ssim: f64,
    tokenizer_counts: Vec<u64>,
    lam_counts: Vec<u64>,
    /// Forwards summed.
    count: usize,
    /// Forwards whose token metrics (top-k, entropy, select_p) were summed.
    token_count: usize,
}

impl Sums {
    fn into_metrics(self, with_images: bool) -> Metrics {
        let n = self.count.max(1) as f64;
        let mut m = Metrics::from([
            ("loss".to_string(), self.loss / n),
            ("cross_entropy_loss".to_string(), self.ce / n),
            ("z_loss".to_string(), self.z / n),
            (
                "codebook_usage_tokenizer".to_string(),
                CodeUsage { counts: self.tokenizer_counts }.fraction_used(),
            ),
        ]);
        if self.token_count > 0 {
            let k = self.token_count as f64;
            m.insert("masked_token_top1_accuracy".into(), self.top1 / k);
            m.insert("masked_token_top2_accuracy".into(), self.top2 / k);
            m.insert("masked_token_top5_accuracy".into(), self.top5 / k);
            m.insert("entropy".into(), self.entropy / k);
            m.insert("select_p".into(), self.select_p / k);
        }
        if !self.lam_counts.is_empty() {
            m.insert("codebook_usage_lam".into(), CodeUsage { counts: self.lam_counts }.fraction_used());
        }
        if with_images {
            m.insert("psnr".into(), self.psnr / n);
            m.insert("ssim".into(), self.ssim / n);
        }
        m
    }
}

impl TrainTask for DynamicsTask {
    type Model = Genie;

    /// bf16 computes the dynamics in bf16 (the tokenizer and LAM stay f32); the reversible
    /// backbone reconstructs activations from its outputs, which bf16 rounding would break, so
    /// it trains in f32 only.
    fn precisions(&self) -> &'static [Precision] {
        if self.cfg.model.dynamics.reversible() {
            &[Precision::F32]
        } else {
            &[Precision::F32, Precision::Bf16]
        }
    }

    fn model(&self) -> &Genie {
        &self.model
    }

    fn set_model(&mut self, model: Genie) {
        self.model = model;
    }

    fn normalise_model_config(&self, stored: &serde_json::Value) -> serde_json::Value {
        jinn_train::config::normalise::<crate::genie::GenieConfig>(stored)
    }

    fn step_macs(&self) -> Option<u64> {
        let (b, t) = (self.cfg.train.batch_size, self.cfg.data.seq_len);
        self.model.train_step_macs(b, t, self.cfg.model.lam_co_trained())
    }

    fn kind(&self) -> &str {
        DYNAMICS_KIND
    }

    fn micro_batch(&mut self, ctx: &MicroContext) -> Result<MicroBatch> {
        let batch = self.data.next()?;
        let streams = SampleStreams::new(ctx.seed, "dynamics-mask", ctx.first_sample, batch.batch_size);
        let (out, objective) = if self.cfg.model.dynamics.reversible() {
            // Memory-free backprop through the reversible backbone (genie::reversible).
            let device = self.model.dynamics.token_embed.val().device();
            let acts = actions(&batch, &device)?;
            let (out, grads) = self
                .model
                .forward_backward_reversible(
                    videos(&batch, &device),
                    acts,
                    self.grounding.as_ref(),
                    &streams,
                    &|out| out.loss_weight, // ∇(loss · Σw): the loop takes the global mean
                    &mut self.engine,
                )
                .map_err(model_err)?;
            let weight = out.loss_weight;
            (out, Objective::WeightedGradients { grads, weight })
        } else {
            // bf16 or f32 compute; gradients land in f32 on self.model (jinn_train::precision).
            let model = self.model.compute_model(self.cfg.train.precision);
            let out = self.forward(&model, &batch, &streams)?;
            let (loss, weight) = (out.loss.clone(), out.loss_weight);
            (out, Objective::WeightedLoss { loss, weight })
        };
        let mut sums = Sums::default();
        self.add_metrics(&out, &mut sums, ctx.logged)?;
        Ok(MicroBatch { objective, metrics: sums.into_metrics(false) })
    }

    fn validate(&mut self, _step: u64, batches: usize) -> Result<Metrics> {
        let Some(mut loader) = self.data.val_loader()? else {
            return Ok(Metrics::new());
        };
        let model = self.model.valid();
        let mut sums = Sums::default();
        for i in 0..batches {
            let batch = next_batch(&mut loader)?;
            let out =
                self.forward(&model, &batch, &val_streams(self.cfg.train.seed, "val-mask", i, &batch))?;
            self.add_metrics(&out, &mut sums, true)?;
            let (psnr, ssim) = psnr_ssim(model.decode_argmax(out.logits).map_err(model_err)?, &batch)?;
            sums.psnr += psnr;
            sums.ssim += ssim;
        }
        Ok(sums.into_metrics(true))
    }

    /// `images/dynamics_step_XXXXXX.gif`: the first validation clip (training clip without a
    /// val split), its tokenizer reconstruction, and the frames decoded from the dynamics'
    /// argmax predictions (teacher-forced, with a MaskGIT mask as in validation).
    fn save_images(&mut self, step: u64, run_dir: &Path) -> Result<()> {
        let one = self.data.image_clip()?;
        let model = self.model.valid();
        let out = self.forward(&model, &one, &val_streams(self.cfg.train.seed, "val-mask", 0, &one))?;
        let recon = to_u8(model.tokenizer.decode(out.tokens).map_err(model_err)?);
        let pred = to_u8(model.decode_argmax(out.logits).map_err(model_err)?);
        let panels = [
            Panel { label: "data", frames: &one.videos },
            Panel { label: "tokens", frames: &recon },
            Panel { label: "predicted", frames: &pred },
        ];
        write_step_gif(run_dir, "dynamics", step, &panels, one.frame_shape)
    }

    fn save_state(&self, state: &mut TrainState) -> Result<()> {
        self.data.save(state);
        Ok(())
    }

    fn restore_state(&mut self, checkpoint: &Checkpoint) -> Result<()> {
        self.model = self.model.clone().refreeze(&self.cfg.model);
        self.data.restore(checkpoint)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
