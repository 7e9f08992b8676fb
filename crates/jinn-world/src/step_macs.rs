//! Multiply-accumulates of one training step of the tokenizer, the LAM and the token dynamics
//! on a batch of `B` clips of `T` frames, read from the built models' weights (see
//! [`jinn_nn::flops`]). A trained part costs its forward pass three times (forward, and a
//! backward that forms both the input and the weight gradients), less the input gradient of
//! the one layer fed straight from the frames (the LAM decoder's `patch_up`; the encoders' input
//! layers read a LayerNorm with trainable scale and bias, so their input gradients are needed);
//! a frozen part costs one forward pass; the quantisers' code distances are counted once (the
//! nearest-code choice passes no gradient).
//! `jinn bench train` reports them as FLOPs (2 per MAC) and as a time floor.

use crate::genie::Genie;
use crate::lam::Lam;
use crate::tokenizer::Tokenizer;
use jinn_nn::flops::dense_macs;
use jinn_nn::VectorQuantizer;

/// MACs of the distances of `rows` latents to every code of `vq` (`[K, L]` codebook).
fn code_distance_macs(vq: &VectorQuantizer, rows: usize) -> u64 {
    let [k, l] = vq.codebook.dims();
    (rows * k * l) as u64
}

impl Tokenizer {
    /// MACs of encoding `[B, T]` clips to tokens (encoder and code distances).
    pub fn encode_macs(&self, b: usize, t: usize) -> u64 {
        let n = self.grid().num_patches();
        self.encoder.forward_macs([b, t, n]) + code_distance_macs(&self.vq, b * t * n)
    }

    /// MACs of one training step on `[B, T]` clips.
    pub fn train_step_macs(&self, b: usize, t: usize) -> u64 {
        let n = self.grid().num_patches();
        let forward = self.encoder.forward_macs([b, t, n]) + self.decoder.forward_macs([b, t, n]);
        3 * forward + code_distance_macs(&self.vq, b * t * n)
    }
}

impl Lam {
    /// MACs of inferring the latent actions of `[B, T]` clips (encoder over the patches plus
    /// the action slot, and code distances), trained (forward and backward) or frozen.
    fn encoder_macs(&self, b: usize, t: usize, trained: bool) -> u64 {
        let n = self.grid().num_patches();
        // Only the action slot leaves the encoder (`Lam::vq_encode`).
        let forward = self.encoder.forward_at_slot_macs([b, t, n + 1], 0);
        let passes = if trained { 3 } else { 1 };
        passes * forward + code_distance_macs(&self.vq, b * (t - 1))
    }

    /// MACs of one training step on `[B, T]` clips (the decoder too, when the LAM has one).
    pub fn train_step_macs(&self, b: usize, t: usize) -> u64 {
        let n = self.grid().num_patches();
        let decoder = self.decoder.as_ref().map_or(0, |decoder| {
            let rows = b * (t - 1) * n;
            let forward = dense_macs(&decoder.patch_up, rows)
                + dense_macs(&decoder.action_up, b * (t - 1))
                + decoder.transformer.forward_macs([b, t - 1, n]);
            3 * forward - dense_macs(&decoder.patch_up, rows)
        });
        self.encoder_macs(b, t, true) + decoder
    }
}

impl Genie {
    /// MACs of one dynamics training step on `[B, T]` clips: the frozen tokenizer's encoding,
    /// the LAM's latent actions (frozen, or trained along with the dynamics when
    /// `lam_co_trained`) and the dynamics model (the action projection, the transformer over
    /// the tokens and the action slot). `None` for a reversible backbone, whose blocks this
    /// count does not cover.
    pub fn train_step_macs(&self, b: usize, t: usize, lam_co_trained: bool) -> Option<u64> {
        if !self.dynamics.reversible_blocks.is_empty() {
            return None;
        }
        let n = self.tokenizer.grid().num_patches();
        let dynamics = dense_macs(&self.dynamics.action_up, b * (t - 1))
            + self.dynamics.transformer.forward_macs([b, t, n + 1]);
        let lam = self.lam.as_ref().map_or(0, |lam| lam.encoder_macs(b, t, lam_co_trained));
        Some(self.tokenizer.encode_macs(b, t) + lam + 3 * dynamics)
    }
}

#[cfg(test)]
mod tests;
