//! The masked-autoencoder (MAE) video tokenizer of the diffusion baseline (Jasmine's
//! `TokenizerMAE`, loss of `train_tokenizer_mae.py`): continuous latents instead of codes.
//!
//! `videos` `[B, T, H, W, C]` in `[0, 1]` → patchify `[B, T, N, P]` → (training: each frame's
//! patches replaced by a learned mask patch with a per-frame ratio `r ~ U[0, max_mask_ratio)`)
//! → axial encoder (spatial full, temporal causal) → `tanh` → latents `[B, T, N, L]` in
//! `(−1, 1)` → axial decoder → sigmoid → unpatchify `[B, T, H, W, C]`. The loss is the MSE over
//! every pixel (masked and visible patches alike).
//!
//! Built from a [`MaeConfig`] (`kind = "mae"` in a tokenizer run config; the same
//! encoder/decoder shapes as the VQ tokenizer, [`crate::tokenizer::CoderConfig`]).
//! Masks are drawn on the host from a caller-supplied generator ([`draw_patch_mask`]), so
//! training is reproducible and a resumed run draws the same masks.

pub mod config;
pub mod task;

pub use config::MaeConfig;

use crate::streams::clip_rngs;
use burn::module::{Module, Param};
use burn::tensor::{Bool, Tensor, TensorData};
use jinn_data::rng::SampleStreams;
use jinn_nn::ops::{mean_squared_error, sigmoid};
use jinn_nn::{patchify, unpatchify, AxialTransformer, NnError, PatchGrid};
use rand::Rng;

/// The MAE tokenizer (see the module docs).
#[derive(Module, Debug)]
pub struct MaeTokenizer {
    /// Patches `P` → latents `L` (before `tanh`).
    pub encoder: AxialTransformer,
    /// Latents `L` → patch logits `P`.
    pub decoder: AxialTransformer,
    /// The learned patch that replaces masked patches `[P]` (pixel-patch space).
    pub mask_patch: Param<Tensor<1>>,
    /// Patch side.
    pub patch: usize,
    /// Frame rows.
    pub height: usize,
    /// Frame columns.
    pub width: usize,
    /// Frame channels.
    pub channels: usize,
    /// Upper bound of the per-frame training mask ratio.
    pub max_mask_ratio: f64,
}

/// The result of [`MaeTokenizer::forward_train`].
#[derive(Debug, Clone)]
pub struct MaeOutput {
    /// Latents `[B, T, N, L]` in `(−1, 1)`.
    pub latents: Tensor<4>,
    /// Reconstruction `[B, T, H, W, C]` in `[0, 1]`.
    pub recon: Tensor<5>,
    /// MSE over every pixel and channel `[1]` (the loss).
    pub loss: Tensor<1>,
}

/// A training mask `[B, T, N]` (row-major, true = replaced by the mask patch): for every
/// frame a ratio `r ~ U[0, max_ratio)`, then each of its `N` patches masked independently with
/// probability `r` (as `TokenizerMAE`). Also returns the per-frame ratios `[B·T]`.
pub fn draw_patch_mask(
    [b, t, n]: [usize; 3],
    max_ratio: f64,
    streams: &SampleStreams,
) -> Result<(Vec<bool>, Vec<f64>), NnError> {
    let mut mask = Vec::with_capacity(b * t * n);
    let mut ratios = Vec::with_capacity(b * t);
    for mut rng in clip_rngs(streams, b)? {
        for _ in 0..t {
            let r: f64 = if max_ratio > 0.0 { rng.random_range(0.0..max_ratio) } else { 0.0 };
            ratios.push(r);
            mask.extend((0..n).map(|_| rng.random_bool(r)));
        }
    }
    Ok((mask, ratios))
}

impl MaeTokenizer {
    /// The patch grid of the frames this tokenizer was built for.
    pub fn grid(&self) -> PatchGrid {
        PatchGrid { patch: self.patch, height: self.height, width: self.width, channels: self.channels }
    }

    /// Latent width `L`.
    pub fn latent_dim(&self) -> usize {
        self.decoder.proj_in.weight.shape().dims::<2>()[0]
    }

    fn check_frames(&self, dims: [usize; 5]) -> Result<(), NnError> {
        let [_, _, h, w, c] = dims;
        if [h, w, c] != [self.height, self.width, self.channels] {
            return Err(NnError::Shape {
                what: "videos [B, T, H, W, C]",
                expected: format!("H×W×C = {}×{}×{}", self.height, self.width, self.channels),
                got: format!("{h}×{w}×{c}"),
            });
        }
        Ok(())
    }

    /// Latents `[B, T, N, L]` of `videos` `[B, T, H, W, C]` in `[0, 1]`, with the patches where
    /// `mask` `[B, T, N]` is true replaced by the mask patch (`None`: nothing masked).
    pub fn encode_masked(&self, videos: Tensor<5>, mask: Option<&[bool]>) -> Result<Tensor<4>, NnError> {
        self.check_frames(videos.dims())?;
        let patches = patchify(videos, self.patch)?; // [b, t, n, p]
        let [b, t, n, p] = patches.dims();
        let patches = match mask {
            Some(mask) => {
                if mask.len() != b * t * n {
                    return Err(NnError::Shape {
                        what: "patch mask [B, T, N]",
                        expected: format!("{} entries", b * t * n),
                        got: format!("{} entries", mask.len()),
                    });
                }
                let mask = Tensor::<3, Bool>::from_data(
                    TensorData::new(mask.to_vec(), [b, t, n]),
                    &patches.device(),
                );
                let fill = self.mask_patch.val().reshape([1, 1, 1, p]).expand([b, t, n, p]); // [b, t, n, p]
                patches.mask_where(mask.unsqueeze_dim::<4>(3).expand([b, t, n, p]), fill)
            }
            None => patches,
        };
        Ok(self.encoder.forward(patches).tanh()) // [b, t, n, l]
    }

    /// Latents `[B, T, N, L]` of `videos` without masking (inference, and inside a world model).
    pub fn encode(&self, videos: Tensor<5>) -> Result<Tensor<4>, NnError> {
        self.encode_masked(videos, None)
    }

    /// Frames `[B, T, H, W, C]` in `[0, 1]` decoded from latents `[B, T, N, L]`.
    pub fn decode(&self, latents: Tensor<4>) -> Result<Tensor<5>, NnError> {
        let [_, _, n, l] = latents.dims();
        if n != self.grid().num_patches() || l != self.latent_dim() {
            return Err(NnError::Shape {
                what: "latents [B, T, N, L]",
                expected: format!("N = {}, L = {}", self.grid().num_patches(), self.latent_dim()),
                got: format!("N = {n}, L = {l}"),
            });
        }
        let patches = sigmoid(self.decoder.forward(latents)); // [b, t, n, p]
        unpatchify(patches, self.grid()) // [b, t, h, w, c]
    }

    /// Training forward (as `train_tokenizer_mae.py`): mask from `rng` ([`draw_patch_mask`]), encode, decode,
    /// MSE over all pixels.
    pub fn forward_train(&self, videos: Tensor<5>, streams: &SampleStreams) -> Result<MaeOutput, NnError> {
        let [b, t, ..] = videos.dims();
        let n = self.grid().num_patches();
        let (mask, _) = draw_patch_mask([b, t, n], self.max_mask_ratio, streams)?;
        self.forward_with(videos, Some(&mask))
    }

    /// The forward without masking (validation).
    pub fn forward_eval(&self, videos: Tensor<5>) -> Result<MaeOutput, NnError> {
        self.forward_with(videos, None)
    }

    fn forward_with(&self, videos: Tensor<5>, mask: Option<&[bool]>) -> Result<MaeOutput, NnError> {
        let latents = self.encode_masked(videos.clone(), mask)?; // [b, t, n, l]
        let recon = self.decode(latents.clone())?; // [b, t, h, w, c]
        let loss = mean_squared_error(recon.clone(), videos);
        Ok(MaeOutput { latents, recon, loss })
    }
}

#[cfg(test)]
pub(crate) mod tests;
