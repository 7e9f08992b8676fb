//! The part of a tokenizer config both kinds share: the frames and the axial encoder and
//! decoder around the latents (VQ codes or MAE latents).

use burn::tensor::Device;
use jinn_data::FrameShape;
use jinn_nn::{AxialTransformer, AxialTransformerConfig, NnError, PatchGrid};
use serde::{Deserialize, Serialize};

/// Frames, patches and the encoder/decoder shapes of a tokenizer. Defaults are Jasmine's
/// (`train_tokenizer_vqvae.py`'s `Args`): 64×64×3 frames, patch 16, width 512, FFN 2048, 8
/// heads, 4 + 4 blocks, latents of dimension 32.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CoderConfig {
    /// Frame rows `H`.
    pub height: usize,
    /// Frame columns `W`.
    pub width: usize,
    /// Frame channels `C`.
    pub channels: usize,
    /// Patch side `p` (frames are zero-padded to multiples of it).
    pub patch: usize,
    /// Transformer width `M`.
    pub model_dim: usize,
    /// FFN hidden width `D`.
    pub ffn_dim: usize,
    /// Attention heads (must divide `model_dim`).
    pub num_heads: usize,
    /// Encoder axial blocks.
    pub encoder_blocks: usize,
    /// Decoder axial blocks.
    pub decoder_blocks: usize,
    /// Latent (code) dimension `L`.
    pub latent_dim: usize,
}

impl Default for CoderConfig {
    fn default() -> Self {
        CoderConfig {
            height: 64,
            width: 64,
            channels: 3,
            patch: 16,
            model_dim: 512,
            ffn_dim: 2048,
            num_heads: 8,
            encoder_blocks: 4,
            decoder_blocks: 4,
            latent_dim: 32,
        }
    }
}

impl CoderConfig {
    /// The patch grid of this config's frames.
    pub fn grid(&self) -> Result<PatchGrid, NnError> {
        PatchGrid::new(self.patch, self.height, self.width, self.channels)
    }

    /// The frame shape the model sees.
    pub fn frames(&self) -> FrameShape {
        FrameShape { height: self.height, width: self.width, channels: self.channels }
    }

    /// The encoder: patches `P` → latents `L`, spatial full / temporal causal (as
    /// `TokenizerVQVAE`; the MAE tokenizer uses the same shapes).
    pub(crate) fn encoder(&self, patch_dim: usize, device: &Device) -> Result<AxialTransformer, NnError> {
        self.axial(patch_dim, self.latent_dim, self.encoder_blocks, device)
    }

    /// The decoder: latents `L` → patches `P`, spatial full / temporal causal.
    pub(crate) fn decoder(&self, patch_dim: usize, device: &Device) -> Result<AxialTransformer, NnError> {
        self.axial(self.latent_dim, patch_dim, self.decoder_blocks, device)
    }

    /// An axial transformer `d_in → d_out` of `blocks` blocks at this config's width, FFN and
    /// heads: spatial full, temporal causal (the tokenizers' and the LAM's).
    pub(crate) fn axial(
        &self,
        d_in: usize,
        d_out: usize,
        blocks: usize,
        device: &Device,
    ) -> Result<AxialTransformer, NnError> {
        AxialTransformerConfig::new(d_in, self.model_dim, self.ffn_dim, d_out, blocks, self.num_heads)
            .with_spatial_causal(false)
            .with_temporal_causal(true)
            .init(device)
    }
}
