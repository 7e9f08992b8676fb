//! Reconstruction metrics and ground-truth | reconstruction GIFs of a [`Tokenizer`], shared by
//! training (per-step metrics, validation, images) and `jinn eval tokenizer`.
//!
//! Metrics (as `train_tokenizer_vqvae.py`): `loss, mse, q_loss, commitment_loss, psnr, ssim, codebook_usage`
//! (fraction of the K codes used over the evaluated batches).

use crate::data::{model_err, next_batch, to_u8};
use crate::tokenizer::{frames_to_unit, Tokenizer, TokenizerOutput};
use crate::vq_metrics::VqSums;
use crate::world_eval::objects::{ObjectMetrics, ObjectTally};
use jinn_data::gif_writer::{write_panels_gif, GifOptions, Panel};
use jinn_data::loader::{Batch, Loader};
use jinn_data::objects::Game;
use jinn_nn::CodeUsage;
use jinn_train::train_loop::Metrics;
use jinn_train::{Result, TrainError};
use std::path::Path;

/// Add the host-side metrics of one forward `out` of `batch` to `sums`: the loss terms always;
/// PSNR, SSIM and code counts (over a codebook of `num_codes`) only when `images` — they cost a
/// copy of the reconstruction and a few % of a training step, so training computes them on
/// logged steps only.
pub(crate) fn add_forward(
    sums: &mut VqSums,
    out: &TokenizerOutput,
    batch: &Batch,
    num_codes: usize,
    images: bool,
) -> Result<()> {
    sums.add_losses(&out.loss, &out.mse, &out.q_loss, &out.commitment);
    if !images {
        return Ok(());
    }
    let recon: Vec<f32> = out.recon.clone().try_into_vec_as::<f32>().expect("float tensor data"); // [b, t, h, w, c]
    let gt: Vec<f32> = batch.videos.iter().map(|&v| v as f32 / 255.0).collect(); // [b, t, h, w, c]
    sums.add_images(&recon, &gt, batch.frame_shape)?;
    let [b, t, n] = out.indices.dims();
    let usage =
        CodeUsage::from_indices(out.indices.clone().reshape([b * t * n]), num_codes).map_err(model_err)?;
    sums.add_codes(&usage);
    Ok(())
}

/// The batch's clips as a `[B, T, H, W, C]` tensor in `[0, 1]` on `model`'s device.
fn batch_videos(model: &Tokenizer, batch: &Batch, clips: usize) -> burn::tensor::Tensor<5> {
    let s = batch.frame_shape;
    frames_to_unit(
        &batch.videos[..clips * batch.seq_len * s.frame_bytes()],
        [clips, batch.seq_len, s.height, s.width, s.channels],
        &model.vq.codebook.val().device(),
    )
}

/// Reconstruction metrics of `model` (pass `model.valid()`: no autodiff, no dropout) over the
/// next `batches` batches of `loader`.
pub fn evaluate(model: &Tokenizer, loader: &mut Loader, batches: usize) -> Result<Metrics> {
    Ok(evaluate_with_objects(model, loader, batches, None)?.0)
}

/// [`evaluate`], and for clips of a built-in `game` the object scores of the reconstructions
/// ([`ObjectTally`]: frames `1..` of each clip, each against its true frame; the first has no
/// frame before it for the maze's displacement). What the detector reads off the tokenizer's
/// frames bounds what a world model on its tokens can score.
pub fn evaluate_with_objects(
    model: &Tokenizer,
    loader: &mut Loader,
    batches: usize,
    game: Option<Game>,
) -> Result<(Metrics, Option<ObjectMetrics>)> {
    let mut sums = VqSums::default();
    let mut objects: Option<ObjectTally> = None;
    for _ in 0..batches {
        let batch = next_batch(loader)?;
        let out = model.forward_eval(batch_videos(model, &batch, batch.batch_size)).map_err(model_err)?;
        add_forward(&mut sums, &out, &batch, model.num_codes(), true)?;
        if let Some(game) = game {
            let s = batch.seq_len;
            if s < 2 {
                return Err(TrainError::config("data.seq_len", "object scores need clips of ≥ 2 frames"));
            }
            let tally = objects.get_or_insert_with(|| ObjectTally::new(game, s - 1));
            let recon = to_u8(out.recon); // [b, t, h, w, c] u8
            tally
                .add(&batch.videos, &recon, batch.frame_shape, [batch.batch_size, s], 1)
                .map_err(|e| TrainError::config("objects", e.to_string()))?;
        }
    }
    Ok((sums.into_metrics(), objects.map(|o| o.finish())))
}

/// Write an animated GIF of the first `clips` clips of `batch` (one after another), ground
/// truth (`data`) beside `model`'s reconstruction (`recon`). Pass `model.valid()`.
pub fn write_recon_gif(model: &Tokenizer, batch: &Batch, clips: usize, path: &Path) -> Result<()> {
    let clips = clips.clamp(1, batch.batch_size);
    let s = batch.frame_shape;
    let out = model.forward_eval(batch_videos(model, batch, clips)).map_err(model_err)?;
    let recon = to_u8(out.recon); // [clips·t, h, w, c]
    let truth = &batch.videos[..recon.len()]; // [clips·t, h, w, c]
    let panels = [Panel { label: "data", frames: truth }, Panel { label: "recon", frames: &recon }];
    write_panels_gif(path, &panels, s, &GifOptions::default())?;
    Ok(())
}
