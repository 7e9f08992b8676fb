//! Training the [`MaeTokenizer`] with the shared loop ([`jinn_train::train_loop`]):
//! `jinn train tokenizer --kind mae`.
//!
//! Same run config, data handling and checkpoint kind (`tokenizer`) as the VQ
//! [`crate::TokenizerTask`]; the stored `model.kind = "mae"` tells the two apart, so resuming
//! an MAE run as a VQ one (or the reverse) fails on that key. Each clip's mask comes from
//! its own stream, `(seed, "mae-mask", the clip's global index)`: a resumed run is
//! bit-identical to an uninterrupted one on the CPU backend, and `N` ranks × batch `B` mask
//! as one rank × batch `N·B`.
//!
//! Metrics (as `train_tokenizer_mae.py`): `loss` (= `mse`, over all pixels of the masked-input
//! reconstruction), `mse`, and on logged steps and in validation (unmasked) `psnr, ssim`.

use crate::data::{model_err, next_batch, psnr_ssim, to_u8, videos, write_step_gif, TaskData};
use crate::mae::{MaeOutput, MaeTokenizer};
use crate::tokenizer::task::TokenizerRunConfig;
use crate::tokenizer::TOKENIZER_KIND;
use burn::module::Module;
use burn::tensor::Device;
use jinn_data::gif_writer::Panel;
use jinn_data::loader::Batch;
use jinn_data::rng::{derive_seed, SampleStreams};
use jinn_nn::init::seeded_init;
use jinn_train::checkpoint::{Checkpoint, TrainState};
use jinn_train::precision::Precision;
use jinn_train::train_loop::{Metrics, MicroBatch, MicroContext, Objective, TrainTask};
use jinn_train::Result;
use std::path::Path;

/// The MAE tokenizer's [`TrainTask`].
pub struct MaeTask {
    device: Device,
    model: MaeTokenizer,
    cfg: TokenizerRunConfig,
    data: TaskData,
}

/// Running sums of per-forward metrics.
#[derive(Default)]
struct Sums {
    loss: f64,
    psnr: f64,
    ssim: f64,
    count: usize,
    image_count: usize,
}

impl Sums {
    /// Add one forward's loss, and its PSNR/SSIM against `batch` when `images`.
    fn add(&mut self, out: &MaeOutput, batch: &Batch, images: bool) -> Result<()> {
        self.loss += out.loss.clone().into_scalar::<f32>() as f64;
        self.count += 1;
        if images {
            let (psnr, ssim) = psnr_ssim(out.recon.clone(), batch)?; // recon: [b, t, h, w, c]
            self.psnr += psnr;
            self.ssim += ssim;
            self.image_count += 1;
        }
        Ok(())
    }

    fn into_metrics(self) -> Metrics {
        let n = self.count.max(1) as f64;
        let mut m = Metrics::from([("loss".to_string(), self.loss / n), ("mse".to_string(), self.loss / n)]);
        if self.image_count > 0 {
            let k = self.image_count as f64;
            m.insert("psnr".into(), self.psnr / k);
            m.insert("ssim".into(), self.ssim / k);
        }
        m
    }
}

impl MaeTask {
    /// A task over `data_dir` (`train/`, and `val/` if present) training `model` (built from
    /// `cfg.model`, which must have `kind = "mae"`, on the autodiff `device`).
    pub fn new(
        cfg: &TokenizerRunConfig,
        data_dir: &Path,
        model: MaeTokenizer,
        device: Device,
    ) -> Result<Self> {
        cfg.train.validate()?;
        cfg.model.mae().map_err(model_err)?;
        let data = TaskData::open(data_dir, &cfg.train, &cfg.data, cfg.model.coder().frames())?;
        Ok(MaeTask { device, model, cfg: cfg.clone(), data })
    }

    /// Build the model from `cfg.model` with its initialisation seeded from the run seed, on
    /// `device` (autodiff), and the task around it.
    pub fn from_config(cfg: &TokenizerRunConfig, data_dir: &Path, device: Device) -> Result<Self> {
        let seed = derive_seed(cfg.train.seed, "init", 0);
        let model = seeded_init(&device, seed, || cfg.model.mae()?.init(&device)).map_err(model_err)?;
        Self::new(cfg, data_dir, model, device)
    }
}

impl TrainTask for MaeTask {
    type Model = MaeTokenizer;

    fn model(&self) -> &MaeTokenizer {
        &self.model
    }

    fn set_model(&mut self, model: MaeTokenizer) {
        self.model = model;
    }

    fn normalise_model_config(&self, stored: &serde_json::Value) -> serde_json::Value {
        jinn_train::config::normalise::<crate::tokenizer::TokenizerConfig>(stored)
    }

    fn kind(&self) -> &str {
        TOKENIZER_KIND
    }

    fn precisions(&self) -> &'static [Precision] {
        &[Precision::F32, Precision::Bf16]
    }

    fn micro_batch(&mut self, ctx: &MicroContext) -> Result<MicroBatch> {
        let batch = self.data.next()?;
        let precision = self.cfg.train.precision;
        let x = precision.cast_input(videos(&batch, &self.device)); // [b, t, h, w, c]
        let streams = SampleStreams::new(ctx.seed, "mae-mask", ctx.first_sample, batch.batch_size);
        let model = precision.compute_model(&self.model);
        let out = model.forward_train(x, &streams).map_err(model_err)?;
        let mut sums = Sums::default();
        sums.add(&out, &batch, ctx.logged)?;
        Ok(MicroBatch { objective: Objective::Loss(out.loss), metrics: sums.into_metrics() })
    }

    fn validate(&mut self, _step: u64, batches: usize) -> Result<Metrics> {
        let Some(mut loader) = self.data.val_loader()? else {
            return Ok(Metrics::new());
        };
        let model = self.model.valid();
        let device = model.mask_patch.val().device();
        let mut sums = Sums::default();
        for _ in 0..batches {
            let batch = next_batch(&mut loader)?;
            let out = model.forward_eval(videos(&batch, &device)).map_err(model_err)?;
            sums.add(&out, &batch, true)?;
        }
        Ok(sums.into_metrics())
    }

    /// `images/recon_step_XXXXXX.gif`: the first validation clip (or training clip without a
    /// val split) beside its unmasked reconstruction.
    fn save_images(&mut self, step: u64, run_dir: &Path) -> Result<()> {
        let one = self.data.image_clip()?;
        let model = self.model.valid();
        let device = model.mask_patch.val().device();
        let recon = to_u8(model.forward_eval(videos(&one, &device)).map_err(model_err)?.recon);
        let panels = [Panel { label: "data", frames: &one.videos }, Panel { label: "recon", frames: &recon }];
        write_step_gif(run_dir, "recon", step, &panels, one.frame_shape)
    }

    fn save_state(&self, state: &mut TrainState) -> Result<()> {
        self.data.save(state);
        Ok(())
    }

    fn restore_state(&mut self, checkpoint: &Checkpoint) -> Result<()> {
        self.data.restore(checkpoint)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
