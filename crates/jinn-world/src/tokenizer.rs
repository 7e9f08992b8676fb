//! The VQ-VAE video tokenizer (Jasmine's `TokenizerVQVAE` in `jasmine/models/tokenizer.py`; loss
//! of `train_tokenizer_vqvae.py`).
//!
//! `videos` `[B, T, H, W, C]` u8 → f32 in `[0, 1]` (÷255) → patchify `[B, T, N, P]` →
//! axial encoder (spatial full, temporal causal) `[B, T, N, L]` → vector quantiser (cosine
//! codes, straight-through) → axial decoder (spatial full, temporal causal) `[B, T, N, P]` →
//! sigmoid → unpatchify `[B, T, H, W, C]`.
//!
//! Because both transformers are temporally causal, the tokens of frame `t` depend only on
//! frames `≤ t`: tokenising a clip frame by frame gives the same indices as tokenising it whole.
//!
//! Deviation: Jasmine runs the model in bf16; here it runs in f32 (the CPU backend's dtype).

/// Model kind stored in tokenizer checkpoints (VQ and MAE alike; `model.kind` tells them apart).
pub const TOKENIZER_KIND: &str = "tokenizer";

pub mod coder;
pub mod config;
pub mod eval;
pub mod task;

pub use coder::CoderConfig;
pub use config::{TokenizerConfig, TokenizerKind};

use crate::streams::clip_rngs;
use burn::module::Module;
use burn::tensor::{Device, Int, Tensor, TensorData};
use jinn_data::rng::SampleStreams;
use jinn_nn::ops::{mean_squared_error, sigmoid};
use jinn_nn::{
    patchify, unpatchify, AxialBlock, AxialTransformer, NnError, PatchGrid, VectorQuantizer,
    VectorQuantizerConfig, VqOutput,
};
use serde::{Deserialize, Serialize};

/// Architecture of a VQ [`Tokenizer`] (the `model` section of a tokenizer run config with
/// `kind = "vq"`, see [`TokenizerConfig`]). Defaults are Jasmine's (`train_tokenizer_vqvae.py`'s
/// `Args`): the [`CoderConfig`] defaults, 1024 codes, codebook dropout 0.01, β 0.25.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct VqConfig {
    /// Frames and encoder/decoder shapes (flattened into the section).
    #[serde(flatten)]
    pub coder: CoderConfig,
    /// Codebook size `K`.
    pub num_codes: usize,
    /// Codebook dropout rate in training (inverted dropout on the code distances), in `[0, 1)`.
    pub codebook_dropout: f64,
    /// Commitment weight β.
    pub vq_beta: f64,
    /// Dead-code reset in training: a code unused for this many consecutive steps becomes a
    /// copy of a used one (as the LAM does); 0 = off (Jasmine's tokenizer has none).
    pub reset_threshold: u32,
    /// Per-block activation recomputation in training: keep only each encoder/decoder block's
    /// input and recompute the block in the backward pass (less memory, ≈ one more forward of
    /// the blocks). Same gradients; not stored in the weights.
    pub remat: bool,
}

impl Default for VqConfig {
    fn default() -> Self {
        VqConfig {
            coder: CoderConfig::default(),
            num_codes: 1024,
            codebook_dropout: 0.01,
            vq_beta: jinn_nn::VQ_BETA,
            reset_threshold: 0,
            remat: false,
        }
    }
}

impl VqConfig {
    /// Build the VQ tokenizer (flax NNX's default initialisers, drawn lazily from the device's
    /// generator).
    pub fn init(&self, device: &Device) -> Result<Tokenizer, NnError> {
        let c = &self.coder;
        let grid = c.grid()?;
        if !(self.vq_beta.is_finite() && self.vq_beta >= 0.0) {
            return Err(NnError::InvalidConfig {
                field: "vq_beta",
                reason: format!("must be ≥ 0, got {}", self.vq_beta),
            });
        }
        Ok(Tokenizer {
            encoder: c.encoder(grid.patch_dim(), device)?,
            vq: VectorQuantizerConfig::new(self.num_codes, c.latent_dim)
                .with_dropout(self.codebook_dropout)
                .init(device)?,
            decoder: c.decoder(grid.patch_dim(), device)?,
            patch: c.patch,
            height: c.height,
            width: c.width,
            channels: c.channels,
            vq_beta: self.vq_beta,
        })
    }
}

/// The VQ-VAE tokenizer (see the module docs).
#[derive(Module, Debug)]
pub struct Tokenizer {
    /// Patches `P` → latents `L`.
    pub encoder: AxialTransformer,
    /// The codebook.
    pub vq: VectorQuantizer,
    /// Codes `L` → patches `P`.
    pub decoder: AxialTransformer,
    /// Patch side.
    pub patch: usize,
    /// Frame rows.
    pub height: usize,
    /// Frame columns.
    pub width: usize,
    /// Frame channels.
    pub channels: usize,
    /// Commitment weight β.
    pub vq_beta: f64,
}

/// The result of [`Tokenizer::forward_train`]: the reconstruction and the loss terms.
#[derive(Debug, Clone)]
pub struct TokenizerOutput {
    /// Reconstruction `[B, T, H, W, C]` in `[0, 1]`.
    pub recon: Tensor<5>,
    /// Code indices `[B, T, N]`.
    pub indices: Tensor<3, Int>,
    /// Total loss `mse + q_loss + β·commitment` `[1]`.
    pub loss: Tensor<1>,
    /// Mean squared reconstruction error over every pixel and channel `[1]`.
    pub mse: Tensor<1>,
    /// Codebook loss `mean((sg(x̂) − z)²)` `[1]`.
    pub q_loss: Tensor<1>,
    /// Commitment loss `mean((x̂ − sg(z))²)` `[1]`.
    pub commitment: Tensor<1>,
}

/// u8 frames `[B, T, H, W, C]` → f32 tensor in `[0, 1]` (÷255, nothing else, as Jasmine).
pub fn frames_to_unit(frames: &[u8], shape: [usize; 5], device: &Device) -> Tensor<5> {
    let data: Vec<f32> = frames.iter().map(|&v| v as f32 / 255.0).collect();
    Tensor::from_data(TensorData::new(data, shape), device) // [b, t, h, w, c]
}

impl Tokenizer {
    /// The patch grid of the frames this tokenizer was built for.
    pub fn grid(&self) -> PatchGrid {
        PatchGrid { patch: self.patch, height: self.height, width: self.width, channels: self.channels }
    }

    /// Codebook size `K`.
    pub fn num_codes(&self) -> usize {
        self.vq.num_codes()
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

    /// Encoder + quantiser on `videos` `[B, T, H, W, C]` in `[0, 1]`; `streams` (one per clip) enable
    /// codebook dropout (training). Returns the quantiser output over `[B·T·N, L]` rows and
    /// `[B, T, N]`.
    pub fn vq_encode(
        &self,
        videos: Tensor<5>,
        streams: Option<&SampleStreams>,
    ) -> Result<(VqOutput, [usize; 3]), NnError> {
        self.vq_encode_with(videos, streams, &mut run_blocks)
    }

    /// [`Tokenizer::vq_encode`] with the encoder's blocks run by `blocks`.
    fn vq_encode_with(
        &self,
        videos: Tensor<5>,
        streams: Option<&SampleStreams>,
        blocks: &mut BlockRunner<'_>,
    ) -> Result<(VqOutput, [usize; 3]), NnError> {
        self.check_frames(videos.dims())?;
        let patches = patchify(videos, self.patch)?; // [b, t, n, p]
        let [b, t, n, _] = patches.dims();
        let stem = self.encoder.stem(patches); // [b, t, n, m]
        let latents = self.encoder.head(blocks(&self.encoder.blocks, stem)); // [b, t, n, l]
        let l = latents.dims()[3];
        let rows = latents.reshape([b * t * n, l]); // [b·t·n, l]
        let out = match streams {
            Some(streams) => self.vq.forward_train(rows, &mut clip_rngs(streams, b)?)?,
            None => self.vq.forward(rows),
        };
        Ok((out, [b, t, n]))
    }

    /// Code indices `[B, T, N]` of `videos` `[B, T, H, W, C]` in `[0, 1]` (no dropout).
    pub fn encode(&self, videos: Tensor<5>) -> Result<Tensor<3, Int>, NnError> {
        let (out, [b, t, n]) = self.vq_encode(videos, None)?;
        Ok(out.indices.reshape([b, t, n]))
    }

    /// Decoder on quantised latents `[B, T, N, L]` → frames `[B, T, H, W, C]` in `[0, 1]`.
    pub fn decode_latents(&self, z_q: Tensor<4>) -> Result<Tensor<5>, NnError> {
        self.decode_latents_with(z_q, &mut run_blocks)
    }

    /// [`Tokenizer::decode_latents`] with the decoder's blocks run by `blocks`.
    fn decode_latents_with(
        &self,
        z_q: Tensor<4>,
        blocks: &mut BlockRunner<'_>,
    ) -> Result<Tensor<5>, NnError> {
        let stem = self.decoder.stem(z_q); // [b, t, n, m]
        let patches = sigmoid(self.decoder.head(blocks(&self.decoder.blocks, stem))); // [b, t, n, p]
        unpatchify(patches, self.grid()) // [b, t, h, w, c]
    }

    /// Frames `[B, T, H, W, C]` in `[0, 1]` from code indices `[B, T, N]` (raw codebook rows).
    pub fn decode(&self, indices: Tensor<3, Int>) -> Result<Tensor<5>, NnError> {
        let [b, t, n] = indices.dims();
        if n != self.grid().num_patches() {
            return Err(NnError::Shape {
                what: "indices [B, T, N]",
                expected: format!("N = {}", self.grid().num_patches()),
                got: format!("N = {n}"),
            });
        }
        let codes = self.vq.codes(indices.reshape([b * t * n])); // [b·t·n, l]
        let l = codes.dims()[1];
        self.decode_latents(codes.reshape([b, t, n, l]))
    }

    /// Full training forward on `videos` `[B, T, H, W, C]` in `[0, 1]` with codebook dropout
    /// drawn from `rng`: reconstruction and the loss of `train_tokenizer_vqvae.py`
    /// `MSE(recon, videos) + q_loss + β·commitment`.
    pub fn forward_train(
        &self,
        videos: Tensor<5>,
        streams: &SampleStreams,
    ) -> Result<TokenizerOutput, NnError> {
        self.forward_with(videos, Some(streams))
    }

    /// Like [`Tokenizer::forward_train`] without codebook dropout (validation).
    pub fn forward_eval(&self, videos: Tensor<5>) -> Result<TokenizerOutput, NnError> {
        self.forward_with(videos, None)
    }

    fn forward_with(
        &self,
        videos: Tensor<5>,
        streams: Option<&SampleStreams>,
    ) -> Result<TokenizerOutput, NnError> {
        self.forward_parts(videos, streams, &mut run_blocks)
    }

    /// The training forward with the encoder's, then the decoder's blocks run by `blocks`.
    fn forward_parts(
        &self,
        videos: Tensor<5>,
        streams: Option<&SampleStreams>,
        blocks: &mut BlockRunner<'_>,
    ) -> Result<TokenizerOutput, NnError> {
        let (out, [b, t, n]) = self.vq_encode_with(videos.clone(), streams, blocks)?;
        let l = out.z_q.dims()[1];
        let recon = self.decode_latents_with(out.z_q.clone().reshape([b, t, n, l]), blocks)?; // [b, t, h, w, c]
        let mse = mean_squared_error(recon.clone(), videos);
        let q_loss = out.codebook_loss();
        let commitment = out.commitment_loss();
        let loss = mse.clone() + q_loss.clone() + commitment.clone() * self.vq_beta;
        Ok(TokenizerOutput { recon, indices: out.indices.reshape([b, t, n]), loss, mse, q_loss, commitment })
    }
}

/// Runs a transformer's axial blocks on its stem output `[B, T, N, M]` (plain autodiff, or
/// the recomputation engine of [`remat`]).
type BlockRunner<'a> = dyn FnMut(&[AxialBlock], Tensor<4>) -> Tensor<4> + 'a;

/// The blocks one after the other, on the autodiff tape.
fn run_blocks(blocks: &[AxialBlock], x: Tensor<4>) -> Tensor<4> {
    blocks.iter().fold(x, |h, block| block.forward(h)) // [b, t, n, m]
}

pub mod remat;
#[cfg(test)]
pub(crate) mod tests;
