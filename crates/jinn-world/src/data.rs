//! What every world-model training task shares about its data: the `data` config section,
//! opening splits with a frame-shape check, loader configs, batches as tensors, dead-code
//! counters in checkpoints.

use crate::tokenizer::frames_to_unit;
use burn::tensor::{Device, Int, Tensor, TensorData};
use jinn_data::dataset::Dataset;
use jinn_data::gif_writer::{write_panels_gif, GifOptions, Panel};
use jinn_data::loader::{Batch, Loader, LoaderConfig};
use jinn_data::metrics::{mean_psnr, mean_ssim};
use jinn_data::rng::{derive_seed, SampleStreams};
use jinn_data::FrameShape;
use jinn_nn::{DeadCodeTracker, NnError};
use jinn_train::checkpoint::{Checkpoint, TrainState};
use jinn_train::config::TrainConfig;
use jinn_train::{Result, TrainError};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::Arc;

/// How clips are read: the `data` section of every world-model run config.
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

/// Open `<data_dir>/<split>` and check its frames are `want` (named by `field` in errors).
pub(crate) fn open_split(
    data_dir: &Path,
    split: &str,
    seq_len: usize,
    want: FrameShape,
) -> Result<Arc<Dataset>> {
    // A metadata.json without a frame shape (Jasmine's) takes the model's; one that records
    // another shape is an error naming both.
    Ok(Arc::new(Dataset::open_for_model(&data_dir.join(split), seq_len, want)?))
}

/// The train split and, if present, the val split (required when `val_every > 0`).
fn open_splits(
    data_dir: &Path,
    train: &TrainConfig,
    data: &DataConfig,
    want: FrameShape,
) -> Result<(Arc<Dataset>, Option<Arc<Dataset>>)> {
    let train_data = open_split(data_dir, "train", data.seq_len, want)?;
    // An empty val/ (Jasmine's generators leave one for a split of no episodes) is no split.
    let val_data = if jinn_data::dataset::has_record_files(&data_dir.join("val")) {
        Some(open_split(data_dir, "val", data.seq_len, want)?)
    } else {
        None
    };
    if train.val_every > 0 && val_data.is_none() {
        return Err(TrainError::config(
            "train.val_every",
            format!(
                "{} has no val/ split; set train.val_every = 0 to train without validation",
                data_dir.display()
            ),
        ));
    }
    Ok((train_data, val_data))
}

/// The training loader's config: this rank's shard of every global batch in a data-parallel
/// run ([`jinn_train::distributed`]), the whole batch otherwise.
pub(crate) fn loader_config(train: &TrainConfig, data: &DataConfig) -> LoaderConfig {
    LoaderConfig {
        batch_size: train.rank_micro_batch(),
        seq_len: data.seq_len,
        seed: train.seed,
        rank: jinn_train::distributed::rank(),
        world_size: jinn_train::distributed::world_size(),
        threads: data.loader_threads,
        prefetch: data.prefetch,
    }
}

/// A fresh validation loader (same clips every time: seeded from the run seed; unsharded, as
/// rank 0 alone validates in a data-parallel run).
pub(crate) fn val_loader(train: &TrainConfig, data: &DataConfig, split: Arc<Dataset>) -> Result<Loader> {
    let cfg = LoaderConfig {
        seed: derive_seed(train.seed, "val-loader", 0),
        batch_size: train.micro_batch(),
        threads: 0,
        rank: 0,
        world_size: 1,
        ..loader_config(train, data)
    };
    Ok(Loader::new(split, cfg)?)
}

/// A task's data: the training split's endless batch stream (this rank's shard of every global
/// batch) and the val split when there is one. The stream's position travels in checkpoints
/// (`state.loader`), so a resumed run reads on exactly where the interrupted one stopped.
pub(crate) struct TaskData {
    train: Arc<Dataset>,
    val: Option<Arc<Dataset>>,
    train_cfg: TrainConfig,
    data_cfg: DataConfig,
    stream_cfg: LoaderConfig,
    stream: Loader,
}

impl TaskData {
    /// `<data_dir>/train` (and `val/` if present; required when `train.val_every > 0`), its
    /// frames checked to be `want`, streamed from the start.
    pub(crate) fn open(
        data_dir: &Path,
        train: &TrainConfig,
        data: &DataConfig,
        want: FrameShape,
    ) -> Result<TaskData> {
        let (train_split, val) = open_splits(data_dir, train, data, want)?;
        let stream_cfg = loader_config(train, data);
        let stream = Loader::new(train_split.clone(), stream_cfg)?;
        Ok(TaskData {
            train: train_split,
            val,
            train_cfg: train.clone(),
            data_cfg: data.clone(),
            stream_cfg,
            stream,
        })
    }

    /// The training split.
    pub(crate) fn train_split(&self) -> &Dataset {
        &self.train
    }

    /// The next training batch (the stream cycles forever).
    pub(crate) fn next(&mut self) -> Result<Batch> {
        next_batch(&mut self.stream)
    }

    /// A fresh validation loader, or `None` without a val split.
    pub(crate) fn val_loader(&self) -> Result<Option<Loader>> {
        self.val.clone().map(|split| val_loader(&self.train_cfg, &self.data_cfg, split)).transpose()
    }

    /// The first batch of a fresh validation loader over the val split (the train split
    /// without one): what the training GIFs show.
    pub(crate) fn image_batch(&self) -> Result<Batch> {
        let split = self.val.clone().unwrap_or_else(|| self.train.clone());
        next_batch(&mut val_loader(&self.train_cfg, &self.data_cfg, split)?)
    }

    /// The first clip of [`Self::image_batch`], as a batch of one.
    pub(crate) fn image_clip(&self) -> Result<Batch> {
        Ok(first_clip(self.image_batch()?))
    }

    /// Record the stream's position in `state`.
    pub(crate) fn save(&self, state: &mut TrainState) {
        state.loader = Some(self.stream.position());
    }

    /// Continue from the position stored in `checkpoint`.
    pub(crate) fn restore(&mut self, checkpoint: &Checkpoint) -> Result<()> {
        let position = checkpoint.state.loader.as_ref().ok_or_else(|| {
            TrainError::checkpoint(
                &checkpoint.dir,
                "state.json has no loader position; cannot resume exactly",
            )
        })?;
        self.stream = Loader::resume(self.train.clone(), self.stream_cfg, Some(position))?;
        Ok(())
    }
}

/// Mean PSNR and SSIM of `decoded` frames (`[b, t, h, w, c]` in `[0, 1]`) against `batch`'s
/// clips.
pub(crate) fn psnr_ssim(decoded: Tensor<5>, batch: &Batch) -> Result<(f64, f64)> {
    let decoded: Vec<f32> = decoded.try_into_vec_as::<f32>().expect("float tensor data");
    let truth: Vec<f32> = batch.videos.iter().map(|&v| v as f32 / 255.0).collect();
    Ok((mean_psnr(&decoded, &truth, batch.frame_shape)?, mean_ssim(&decoded, &truth, batch.frame_shape)?))
}

/// Add `counts` element-wise into `into` (which starts empty).
pub(crate) fn add_counts(into: &mut Vec<u64>, counts: Vec<u64>) {
    if into.is_empty() {
        *into = counts;
    } else {
        into.iter_mut().zip(counts).for_each(|(a, c)| *a += c);
    }
}

/// The random streams of validation batch `i` (of equal batches), the same every validation.
pub(crate) fn val_streams(seed: u64, purpose: &'static str, i: usize, batch: &Batch) -> SampleStreams {
    SampleStreams::new(seed, purpose, (i * batch.batch_size) as u64, batch.batch_size)
}

/// A model error as a [`TrainError`] naming the `model` section.
pub(crate) fn model_err(e: NnError) -> TrainError {
    TrainError::config("model", e.to_string())
}

/// The loader's next batch (it cycles forever).
pub(crate) fn next_batch(loader: &mut Loader) -> Result<Batch> {
    match loader.next() {
        Some(batch) => Ok(batch?),
        None => Err(TrainError::config("data", "the loader ended; it should cycle forever")),
    }
}

/// The batch's clips `[B, T, H, W, C]` in `[0, 1]`.
pub(crate) fn videos(batch: &Batch, device: &Device) -> Tensor<5> {
    let s = batch.frame_shape;
    frames_to_unit(&batch.videos, [batch.batch_size, batch.seq_len, s.height, s.width, s.channels], device)
}

/// The batch's actions `[B, T]` (one value per frame), if it carries any.
pub(crate) fn actions(batch: &Batch, device: &Device) -> Result<Option<Tensor<2, Int>>> {
    let Some(actions) = &batch.actions else { return Ok(None) };
    if batch.action_dims != 1 {
        return Err(TrainError::config(
            "--actions",
            format!(
                "ground-truth actions need one discrete action per frame; the data has {}",
                batch.action_dims
            ),
        ));
    }
    let data = TensorData::new(actions.clone(), [batch.batch_size, batch.seq_len]);
    Ok(Some(Tensor::from_data(data, device)))
}

/// f32 frames in `[0, 1]` → u8 (rounded, clamped).
pub fn to_u8(frames: Tensor<5>) -> Vec<u8> {
    frames
        .try_into_vec_as::<f32>()
        .expect("float tensor data")
        .iter()
        .map(|&v| (v.clamp(0.0, 1.0) * 255.0).round() as u8)
        .collect()
}

/// Store a quantiser's dead-code counters in `state.extra[key]`, so a resumed run resets the
/// same codes at the same steps (Jasmine forgets them on resume).
pub(crate) fn save_dead_code_counters(state: &mut TrainState, key: &str, tracker: &DeadCodeTracker) {
    state.extra.insert(key.into(), serde_json::json!(tracker.last_active));
}

/// Load the counters saved by [`save_dead_code_counters`] into `tracker`; a missing entry, a
/// malformed one or one sized for another codebook is a checkpoint error naming `key`.
pub(crate) fn restore_dead_code_counters(
    checkpoint: &Checkpoint,
    key: &str,
    tracker: &mut DeadCodeTracker,
) -> Result<()> {
    let counters = checkpoint.state.extra.get(key).ok_or_else(|| {
        TrainError::checkpoint(&checkpoint.dir, format!("state.json has no `{key}` counters"))
    })?;
    let last_active: Vec<u32> = serde_json::from_value(counters.clone())
        .map_err(|e| TrainError::checkpoint(&checkpoint.dir, format!("bad `{key}` counters: {e}")))?;
    if last_active.len() != tracker.last_active.len() {
        return Err(TrainError::checkpoint(
            &checkpoint.dir,
            format!(
                "`{key}` has {} counters, the model {} codes",
                last_active.len(),
                tracker.last_active.len()
            ),
        ));
    }
    tracker.last_active = last_active;
    Ok(())
}

/// The first clip (and its actions) of `batch`, as a batch of one.
fn first_clip(batch: Batch) -> Batch {
    let clip = batch.frame_shape.frame_bytes() * batch.seq_len;
    Batch {
        videos: batch.videos[..clip].to_vec(),
        actions: batch.actions.as_ref().map(|a| a[..batch.seq_len * batch.action_dims].to_vec()),
        batch_size: 1,
        ..batch
    }
}

/// Writes `run_dir/images/{prefix}_step_{step:06}.gif` with `panels` (frames of `shape`) side by
/// side.
pub(crate) fn write_step_gif(
    run_dir: &Path,
    prefix: &str,
    step: u64,
    panels: &[Panel],
    shape: FrameShape,
) -> Result<()> {
    let dir = run_dir.join("images");
    std::fs::create_dir_all(&dir).map_err(|e| TrainError::io(&dir, e))?;
    write_panels_gif(
        &dir.join(format!("{prefix}_step_{step:06}.gif")),
        panels,
        shape,
        &GifOptions::default(),
    )?;
    Ok(())
}

/// Test support shared by the tasks' test modules.
#[cfg(test)]
pub(crate) mod test_support {
    use jinn_train::train_loop::RunOptions;
    use std::path::Path;

    /// Loop options for a test run of `cfg` in `dir` (4 metric lines kept in checkpoints).
    pub(crate) fn run_options<C: serde::Serialize>(
        dir: &Path,
        resume: bool,
        stop_at: Option<u64>,
        cfg: &C,
    ) -> RunOptions {
        RunOptions {
            run_dir: dir.to_path_buf(),
            config_json: jinn_train::config::to_json(cfg),
            resume,
            stop_at,
            metrics_head_len: 4,
        }
    }
}
