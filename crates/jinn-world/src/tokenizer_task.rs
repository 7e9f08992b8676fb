//! Training the [`Tokenizer`] with the shared loop ([`jinn_train::train_loop`]).
//!
//! Data: `<data>/train` (and `<data>/val` when validating), read by the jinn-data loader.
//! The train loader's position is stored in every checkpoint, and every random draw (codebook
//! dropout) comes from `rng_for(seed, "codebook-dropout", step·grad_accum + micro)`, so a
//! resumed run is bit-identical to an uninterrupted one on the CPU backend.
//!
//! Validation reads the first `val_batches` batches of a fresh validation stream each time
//! (seeded from the run seed), so every validation sees the same clips and validation keeps
//! no state between calls.
//!
//! Metrics (spec §3.1): `loss, mse, q_loss, commitment_loss, psnr, ssim, codebook_usage`
//! (fraction of the K codes used in the step's batch), plus `grad_norm` when clipping.

use crate::tokenizer::{frames_to_unit, Tokenizer, TokenizerConfig, TokenizerOutput};
use burn::module::Module;
use burn::optim::{GradientsAccumulator, GradientsParams, ModuleOptimizer};
use burn::tensor::Device;
use jinn_data::dataset::Dataset;
use jinn_data::gif_writer::{write_panels_gif, GifOptions, Panel};
use jinn_data::loader::{Batch, Loader, LoaderConfig};
use jinn_data::metrics::{mean_psnr, mean_ssim};
use jinn_data::rng::{derive_seed, rng_for};
use jinn_data::FrameShape;
use jinn_nn::{CodeUsage, NnError};
use jinn_train::checkpoint::{snapshot, Checkpoint, CheckpointData, TrainState};
use jinn_train::config::TrainConfig;
use jinn_train::optim::clip_global_norm;
use jinn_train::train_loop::{Metrics, StepContext, TrainTask};
use jinn_train::{Result, TrainError};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Model kind stored in tokenizer checkpoints.
pub const TOKENIZER_KIND: &str = "tokenizer";

/// How clips are read (the `data` section of a tokenizer run config).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DataConfig {
    /// Frames per clip `T` (Jasmine `seq_len` 16).
    pub seq_len: usize,
    /// Loader worker threads (0 = decode on the training thread).
    pub loader_threads: usize,
    /// Batches each loader worker may run ahead.
    pub prefetch: usize,
}

impl Default for DataConfig {
    fn default() -> Self {
        DataConfig { seq_len: 16, loader_threads: 1, prefetch: 2 }
    }
}

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

/// A model error as a [`TrainError`] naming the `model` section.
fn model_err(e: NnError) -> TrainError {
    TrainError::config("model", e.to_string())
}

/// Open `<data_dir>/<split>` and check its frames match the model config.
pub fn open_split(data_dir: &Path, split: &str, cfg: &TokenizerRunConfig) -> Result<Arc<Dataset>> {
    let path = data_dir.join(split);
    let dataset = Dataset::open(&path, cfg.data.seq_len, None)?;
    let got = dataset.frame_shape();
    let m = &cfg.model;
    if (got.height, got.width, got.channels) != (m.height, m.width, m.channels) {
        return Err(TrainError::config(
            "model.height/width/channels",
            format!(
                "the config says {}×{}×{} frames but {} holds {}×{}×{} frames (its metadata.json); \
                 set model.height, model.width and model.channels to match the data",
                m.height,
                m.width,
                m.channels,
                path.display(),
                got.height,
                got.width,
                got.channels
            ),
        ));
    }
    Ok(Arc::new(dataset))
}

/// The tokenizer's [`TrainTask`].
pub struct TokenizerTask {
    device: Device,
    model: Tokenizer,
    optim: ModuleOptimizer,
    cfg: TokenizerRunConfig,
    train_data: Arc<Dataset>,
    val_data: Option<Arc<Dataset>>,
    loader: Loader,
}

impl TokenizerTask {
    /// A task over `data_dir` (`train/`, and `val/` if present) training `model` (built from
    /// `cfg.model` on the autodiff `device`).
    pub fn new(cfg: &TokenizerRunConfig, data_dir: &Path, model: Tokenizer, device: Device) -> Result<Self> {
        cfg.train.validate()?;
        let train_data = open_split(data_dir, "train", cfg)?;
        let val_dir: PathBuf = data_dir.join("val");
        let val_data = if val_dir.exists() { Some(open_split(data_dir, "val", cfg)?) } else { None };
        if cfg.train.val_every > 0 && val_data.is_none() {
            return Err(TrainError::config(
                "train.val_every",
                format!(
                    "{} has no val/ split; set train.val_every = 0 to train without validation",
                    data_dir.display()
                ),
            ));
        }
        let loader = Loader::new(train_data.clone(), Self::loader_config(cfg))?;
        Ok(TokenizerTask {
            device,
            model,
            optim: cfg.train.optim.init()?,
            cfg: cfg.clone(),
            train_data,
            val_data,
            loader,
        })
    }

    /// Build the model from `cfg.model` with its initialisation seeded from the run seed, on
    /// `device` (autodiff), and the task around it.
    pub fn from_config(cfg: &TokenizerRunConfig, data_dir: &Path, device: Device) -> Result<Self> {
        device.seed(derive_seed(cfg.train.seed, "init", 0));
        let model = cfg.model.init(&device).map_err(model_err)?;
        Self::new(cfg, data_dir, model, device)
    }

    fn loader_config(cfg: &TokenizerRunConfig) -> LoaderConfig {
        LoaderConfig {
            batch_size: cfg.train.micro_batch(),
            seq_len: cfg.data.seq_len,
            seed: cfg.train.seed,
            rank: 0,
            world_size: 1,
            threads: cfg.data.loader_threads,
            prefetch: cfg.data.prefetch,
        }
    }

    /// The model being trained.
    pub fn model(&self) -> &Tokenizer {
        &self.model
    }

    fn frame_shape(&self) -> FrameShape {
        self.train_data.frame_shape()
    }

    fn videos(&self, batch: &Batch) -> burn::tensor::Tensor<5> {
        let s = batch.frame_shape;
        frames_to_unit(
            &batch.videos,
            [batch.batch_size, batch.seq_len, s.height, s.width, s.channels],
            &self.device,
        )
    }

    /// Host-side metrics of one forward: loss terms, PSNR, SSIM and code counts.
    fn host_metrics(&self, out: &TokenizerOutput, batch: &Batch, sums: &mut Sums) -> Result<()> {
        let recon: Vec<f32> = out.recon.clone().try_into_vec_as::<f32>().expect("float tensor data"); // [b, t, h, w, c]
        let shape = self.frame_shape();
        sums.loss += out.loss.clone().into_scalar::<f32>() as f64;
        sums.mse += out.mse.clone().into_scalar::<f32>() as f64;
        sums.q_loss += out.q_loss.clone().into_scalar::<f32>() as f64;
        sums.commitment += out.commitment.clone().into_scalar::<f32>() as f64;
        let gt: Vec<f32> = batch.videos.iter().map(|&v| v as f32 / 255.0).collect(); // [b, t, h, w, c]
        sums.psnr += mean_psnr(&recon, &gt, shape)?;
        sums.ssim += mean_ssim(&recon, &gt, shape)?;
        let [b, t, n] = out.indices.dims();
        let usage = CodeUsage::from_indices(out.indices.clone().reshape([b * t * n]), self.model.num_codes())
            .map_err(model_err)?;
        if sums.code_counts.is_empty() {
            sums.code_counts = usage.counts;
        } else {
            sums.code_counts.iter_mut().zip(usage.counts).for_each(|(a, c)| *a += c);
        }
        sums.count += 1;
        Ok(())
    }

    fn val_loader(&self, data: Arc<Dataset>) -> Result<Loader> {
        let cfg = LoaderConfig {
            seed: derive_seed(self.cfg.train.seed, "val-loader", 0),
            threads: 0,
            ..Self::loader_config(&self.cfg)
        };
        Ok(Loader::new(data, cfg)?)
    }
}

/// Running sums of per-forward metrics.
#[derive(Default)]
struct Sums {
    loss: f64,
    mse: f64,
    q_loss: f64,
    commitment: f64,
    psnr: f64,
    ssim: f64,
    code_counts: Vec<u64>,
    count: usize,
}

impl Sums {
    fn into_metrics(self) -> Metrics {
        let n = self.count.max(1) as f64;
        let usage = CodeUsage { counts: self.code_counts }.fraction_used();
        Metrics::from([
            ("loss".to_string(), self.loss / n),
            ("mse".to_string(), self.mse / n),
            ("q_loss".to_string(), self.q_loss / n),
            ("commitment_loss".to_string(), self.commitment / n),
            ("psnr".to_string(), self.psnr / n),
            ("ssim".to_string(), self.ssim / n),
            ("codebook_usage".to_string(), usage),
        ])
    }
}

fn next_batch(loader: &mut Loader) -> Result<Batch> {
    match loader.next() {
        Some(batch) => Ok(batch?),
        None => Err(TrainError::config("data", "the loader ended; it should cycle forever")),
    }
}

impl TrainTask for TokenizerTask {
    fn kind(&self) -> &str {
        TOKENIZER_KIND
    }

    fn train_step(&mut self, ctx: &StepContext) -> Result<Metrics> {
        let mut acc = GradientsAccumulator::<Tokenizer>::new();
        let mut sums = Sums::default();
        for micro in 0..ctx.grad_accum {
            let batch = next_batch(&mut self.loader)?;
            let videos = self.videos(&batch); // [b, t, h, w, c]
            let mut rng =
                rng_for(ctx.seed, "codebook-dropout", ctx.step * ctx.grad_accum as u64 + micro as u64);
            let out = self.model.forward_train(videos, &mut rng).map_err(model_err)?;
            self.host_metrics(&out, &batch, &mut sums)?;
            let loss = out.loss.div_scalar(ctx.grad_accum as f64);
            acc.accumulate(&self.model, GradientsParams::from_grads(loss.backward(), &self.model));
        }
        let mut grads = acc.grads();
        let mut metrics = sums.into_metrics();
        if let Some(max) = ctx.clip_norm {
            metrics.insert("grad_norm".into(), clip_global_norm(&self.model, &mut grads, max));
        }
        self.model = self.optim.step(ctx.lr, self.model.clone(), grads);
        Ok(metrics)
    }

    fn validate(&mut self, _step: u64, batches: usize) -> Result<Metrics> {
        let Some(data) = self.val_data.clone() else {
            return Ok(Metrics::new());
        };
        let mut loader = self.val_loader(data)?;
        let model = self.model.valid();
        let mut sums = Sums::default();
        for _ in 0..batches {
            let batch = next_batch(&mut loader)?;
            let s = batch.frame_shape;
            let videos = frames_to_unit(
                &batch.videos,
                [batch.batch_size, batch.seq_len, s.height, s.width, s.channels],
                &model.vq.codebook.val().device(),
            );
            let out = model.forward_eval(videos).map_err(model_err)?;
            self.host_metrics(&out, &batch, &mut sums)?;
        }
        Ok(sums.into_metrics())
    }

    /// `images/recon_step_XXXXXX.gif`: the first validation clip (or training clip without a
    /// val split) beside its reconstruction.
    fn save_images(&mut self, step: u64, run_dir: &Path) -> Result<()> {
        let data = self.val_data.clone().unwrap_or_else(|| self.train_data.clone());
        let batch = next_batch(&mut self.val_loader(data)?)?;
        let model = self.model.valid();
        let s = batch.frame_shape;
        let clip = s.frame_bytes() * batch.seq_len;
        let videos = frames_to_unit(
            &batch.videos[..clip],
            [1, batch.seq_len, s.height, s.width, s.channels],
            &model.vq.codebook.val().device(),
        );
        let out = model.forward_eval(videos).map_err(model_err)?;
        let recon: Vec<u8> = out
            .recon
            .try_into_vec_as::<f32>()
            .expect("float tensor data")
            .iter()
            .map(|&v| (v.clamp(0.0, 1.0) * 255.0).round() as u8)
            .collect(); // [t, h, w, c]
        let dir = run_dir.join("images");
        std::fs::create_dir_all(&dir).map_err(|e| TrainError::io(&dir, e))?;
        let panels = [
            Panel { label: "data", frames: &batch.videos[..clip] },
            Panel { label: "recon", frames: &recon },
        ];
        write_panels_gif(&dir.join(format!("recon_step_{step:06}.gif")), &panels, s, &GifOptions::default())?;
        Ok(())
    }

    fn snapshot(&self, mut state: TrainState) -> Result<CheckpointData> {
        state.loader = Some(self.loader.position());
        snapshot(&self.model, &self.optim, state)
    }

    fn restore(&mut self, checkpoint: &Checkpoint) -> Result<()> {
        self.model = checkpoint.load_model(self.model.clone())?;
        self.optim = checkpoint.load_optimizer(self.cfg.train.optim.init()?)?;
        let position = checkpoint.state.loader.as_ref().ok_or_else(|| {
            TrainError::checkpoint(
                &checkpoint.dir,
                "state.json has no loader position; cannot resume exactly",
            )
        })?;
        self.loader =
            Loader::resume(self.train_data.clone(), Self::loader_config(&self.cfg), Some(position))?;
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests;
