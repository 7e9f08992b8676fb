//! Training a [`DiffusionGenie`]'s dynamics with the shared loop (`jinn train dynamics --kind
//! diffusion`).
//!
//! The whole model (frozen MAE tokenizer and LAM included) is saved in every checkpoint with the
//! resolved [`GenieRunConfig`] (checkpoint kind `dynamics`, `model.dynamics.kind = "diffusion"`,
//! `K` in `model.dynamics.denoise_steps`: resuming with another `K` fails on that key). Each
//! clip's levels and noise come from its own stream, `(seed, "diffusion-noise", the clip's
//! global index)`, validation ones from `(seed, "val-noise", index)`: a resumed run is
//! bit-identical to an uninterrupted one on the CPU backend, and `N` ranks × batch `B` draw what
//! one rank × batch `N·B` draws.
//!
//! Metrics (as `train_dynamics_diffusion.py`): `loss` (ramp-weighted), `mse`, `codebook_usage_lam`
//! with a LAM, `grad_norm` when clipping; validation adds `psnr, ssim` of the MAE-decoded predictions
//! against the clip (teacher-forced denoising at the drawn levels, as the reference logs).

use crate::data::{
    actions, add_counts, model_err, next_batch, psnr_ssim, to_u8, val_streams, videos, write_step_gif,
    TaskData,
};
use crate::diffusion::genie::{DiffusionGenie, DiffusionGenieOutput};
use crate::dynamics::task::GenieRunConfig;
use crate::genie::DYNAMICS_KIND;
use burn::module::Module;
use jinn_data::gif_writer::Panel;
use jinn_data::loader::Batch;
use jinn_data::rng::SampleStreams;
use jinn_nn::CodeUsage;
use jinn_train::checkpoint::{Checkpoint, TrainState};
use jinn_train::train_loop::{Metrics, MicroBatch, MicroContext, Objective, TrainTask};
use jinn_train::Result;
use std::path::Path;

/// The diffusion dynamics [`TrainTask`].
pub struct DiffusionTask {
    model: DiffusionGenie,
    cfg: GenieRunConfig,
    data: TaskData,
}

/// Running sums of per-forward metrics.
#[derive(Default)]
struct Sums {
    loss: f64,
    mse: f64,
    psnr: f64,
    ssim: f64,
    lam_counts: Vec<u64>,
    count: usize,
}

impl Sums {
    fn into_metrics(self, with_images: bool) -> Metrics {
        let n = self.count.max(1) as f64;
        let mut m = Metrics::from([("loss".to_string(), self.loss / n), ("mse".to_string(), self.mse / n)]);
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

impl DiffusionTask {
    /// A task over `data_dir` (`train/`, and `val/` if present) training `model` (assembled
    /// for `cfg.model` on an autodiff device, e.g. by
    /// [`crate::diffusion::genie::assemble_diffusion_genie`]).
    pub fn new(cfg: &GenieRunConfig, data_dir: &Path, model: DiffusionGenie) -> Result<Self> {
        cfg.train.validate()?;
        let t = &cfg.model.tokenizer;
        let want = t.coder().frames();
        let data = TaskData::open(data_dir, &cfg.train, &cfg.data, want)?;
        cfg.model.actions.check_data(data.train_split())?;
        Ok(DiffusionTask { model, cfg: cfg.clone(), data })
    }

    fn forward(
        model: &DiffusionGenie,
        batch: &Batch,
        streams: &SampleStreams,
    ) -> Result<DiffusionGenieOutput> {
        let device = model.dynamics.level_embed.val().device();
        let acts = actions(batch, &device)?;
        model.forward(videos(batch, &device), acts, streams).map_err(model_err)
    }

    fn add(&self, out: &DiffusionGenieOutput, sums: &mut Sums) -> Result<()> {
        sums.loss += out.out.loss.clone().into_scalar::<f32>() as f64;
        sums.mse += out.out.mse.clone().into_scalar::<f32>() as f64;
        if let (Some(idx), Some(lam)) = (&out.lam_indices, &self.model.lam) {
            let usage = CodeUsage::from_indices(idx.clone(), lam.num_codes()).map_err(model_err)?;
            add_counts(&mut sums.lam_counts, usage.counts);
        }
        sums.count += 1;
        Ok(())
    }
}

impl TrainTask for DiffusionTask {
    type Model = DiffusionGenie;

    fn model(&self) -> &DiffusionGenie {
        &self.model
    }

    fn set_model(&mut self, model: DiffusionGenie) {
        self.model = model;
    }

    fn normalise_model_config(&self, stored: &serde_json::Value) -> serde_json::Value {
        jinn_train::config::normalise::<crate::genie::GenieConfig>(stored)
    }

    fn kind(&self) -> &str {
        DYNAMICS_KIND
    }

    fn micro_batch(&mut self, ctx: &MicroContext) -> Result<MicroBatch> {
        let batch = self.data.next()?;
        let streams = SampleStreams::new(ctx.seed, "diffusion-noise", ctx.first_sample, batch.batch_size);
        let out = Self::forward(&self.model, &batch, &streams)?;
        let mut sums = Sums::default();
        self.add(&out, &mut sums)?;
        Ok(MicroBatch { objective: Objective::Loss(out.out.loss), metrics: sums.into_metrics(false) })
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
                Self::forward(&model, &batch, &val_streams(self.cfg.train.seed, "val-noise", i, &batch))?;
            self.add(&out, &mut sums)?;
            let (psnr, ssim) = psnr_ssim(model.tokenizer.decode(out.out.pred).map_err(model_err)?, &batch)?;
            sums.psnr += psnr;
            sums.ssim += ssim;
        }
        Ok(sums.into_metrics(true))
    }

    /// `images/dynamics_step_XXXXXX.gif`: the first validation clip (training clip without a
    /// val split), its MAE reconstruction, and the decoded clean-latent predictions from the
    /// noised latents (teacher-forced, levels as in validation).
    fn save_images(&mut self, step: u64, run_dir: &Path) -> Result<()> {
        let one = self.data.image_clip()?;
        let model = self.model.valid();
        let out = Self::forward(&model, &one, &val_streams(self.cfg.train.seed, "val-noise", 0, &one))?;
        let recon = to_u8(model.tokenizer.decode(out.latents).map_err(model_err)?);
        let pred = to_u8(model.tokenizer.decode(out.out.pred).map_err(model_err)?);
        let panels = [
            Panel { label: "data", frames: &one.videos },
            Panel { label: "mae", frames: &recon },
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
