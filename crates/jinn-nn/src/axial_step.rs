//! The sub-layers of an axial block, each written once: pre-normed attention (over the tokens
//! of a frame, over the frames of a token position, at one slot, or over cached keys/values)
//! and the pre-normed FFN. Each step is a residual branch (the caller adds it to its input).
//! The whole-clip forward ([`crate::axial`]), the one-slot forward ([`crate::axial_slot`]), the
//! KV-cache path ([`crate::axial_cache`]) and the reversible sub-networks
//! ([`crate::reversible::subnet`]) are built from them, and each step's multiply-accumulate
//! count stands next to it (summed by [`crate::flops`], checked against the work the code
//! runs by the crate's MAC tally tests).

use burn::nn::{LayerNorm, Linear};
use burn::tensor::{Device, Tensor};

use crate::attention::{MultiHeadAttention, MultiHeadAttentionConfig};
use crate::error::NnError;
use crate::flops::{attention_layer_macs, dense_macs};
use crate::init;
use crate::ops::{gelu_tanh, layer_norm, linear_rows};

/// A pre-normed attention branch `LN → MHA` (borrowed from the module that owns the layers).
#[derive(Debug, Clone, Copy)]
pub struct AttentionStep<'a> {
    /// LayerNorm before the attention.
    pub norm: &'a LayerNorm,
    /// The attention layer (its own causal flag applies where the sequence is whole).
    pub attn: &'a MultiHeadAttention,
}

/// A pre-normed FFN branch `LN → Linear(M→D) → tanh-GELU → Linear(D→M)`.
#[derive(Debug, Clone, Copy)]
pub struct FfnStep<'a> {
    /// LayerNorm before the FFN.
    pub norm: &'a LayerNorm,
    /// Input projection `M → D`.
    pub up: &'a Linear,
    /// Output projection `D → M`.
    pub down: &'a Linear,
}

/// Builds the layers of one [`AttentionStep`]: a LayerNorm and an attention layer over `width`.
pub(crate) fn attention_layers(
    width: usize,
    num_heads: usize,
    causal: bool,
    device: &Device,
) -> Result<(LayerNorm, MultiHeadAttention), NnError> {
    let norm = init::layer_norm(width, device);
    let attn = MultiHeadAttentionConfig::new(width, num_heads).with_causal(causal).init(device)?;
    Ok((norm, attn))
}

impl AttentionStep<'_> {
    /// Self-attention branch over the middle axis of `x` `[batch, seq, M]` → `[batch, seq, M]`.
    pub fn over_seq(self, x: Tensor<3>) -> Tensor<3> {
        self.attn.forward(layer_norm(self.norm, x)) // [batch, seq, m]
    }

    /// MACs of [`AttentionStep::over_seq`] on `batch` sequences of `seq` rows.
    pub fn over_seq_macs(self, batch: usize, seq: usize) -> u64 {
        attention_layer_macs(self.attn, batch, seq, seq)
    }

    /// Spatial branch of `x` `[B, T, N, M]`: attention over the N tokens of each (b, t).
    pub fn over_tokens(self, x: Tensor<4>) -> Tensor<4> {
        let [b, t, n, m] = x.dims();
        self.over_seq(x.reshape([b * t, n, m])).reshape([b, t, n, m]) // [b, t, n, m]
    }

    /// MACs of [`AttentionStep::over_tokens`] on `[B, T, N, M]`.
    pub fn over_tokens_macs(self, [b, t, n]: [usize; 3]) -> u64 {
        self.over_seq_macs(b * t, n)
    }

    /// Temporal branch of `x` `[B, T, N, M]`: attention over the T frames of each (b, n).
    pub fn over_frames(self, x: Tensor<4>) -> Tensor<4> {
        let [b, t, n, m] = x.dims();
        let h = x.swap_dims(1, 2).reshape([b * n, t, m]); // [b·n, t, m]
        self.over_seq(h).reshape([b, n, t, m]).swap_dims(1, 2) // [b, t, n, m]
    }

    /// MACs of [`AttentionStep::over_frames`] on `[B, T, N, M]`.
    pub fn over_frames_macs(self, [b, t, n]: [usize; 3]) -> u64 {
        self.over_seq_macs(b * n, t)
    }

    /// The tokens slot `slot` attends to: all `N`, or `0..=slot` under causal attention.
    fn seen(self, n: usize, slot: usize) -> usize {
        if self.attn.causal {
            slot + 1
        } else {
            n
        }
    }

    /// [`AttentionStep::over_tokens`] at spatial slot `slot` only: `x` `[B, T, N, M]` →
    /// `[B, T, 1, M]`, the slot's query over the keys and values of the tokens it sees.
    pub fn over_tokens_at(self, x: Tensor<4>, slot: usize) -> Tensor<4> {
        let [b, t, n, m] = x.dims();
        let seen = self.seen(n, slot);
        let normed = layer_norm(self.norm, x); // [b, t, n, m]
        let query = normed.clone().slice([0..b, 0..t, slot..slot + 1, 0..m]).reshape([b * t, 1, m]); // [b·t, 1, m]
                                                                                                     // Not sliced when every token is seen: the backward of a whole-tensor slice is a
                                                                                                     // zero-fill and a copy.
        let context = if seen == n { normed } else { normed.slice([0..b, 0..t, 0..seen, 0..m]) };
        let context = context.reshape([b * t, seen, m]); // [b·t, seen, m]
        self.attn.forward_cross(query, context).reshape([b, t, 1, m]) // [b, t, 1, m]
    }

    /// MACs of [`AttentionStep::over_tokens_at`] on `[B, T, N, M]`.
    pub fn over_tokens_at_macs(self, [b, t, n]: [usize; 3], slot: usize) -> u64 {
        attention_layer_macs(self.attn, b * t, 1, self.seen(n, slot))
    }

    /// Branch of new rows `x` `[batch, new, M]` whose keys and values go to a cache: `kv` takes
    /// their projected keys and values (each `[batch, new, M]`, heads not split off), stores
    /// them and returns every key and value the rows attend to (`[batch, seq, M]`, e.g. a
    /// window of the cache's buffers). No mask: the source gives only what the rows may see.
    pub fn over_cache(
        self,
        x: Tensor<3>,
        kv: impl FnOnce(Tensor<3>, Tensor<3>) -> (Tensor<3>, Tensor<3>),
    ) -> Tensor<3> {
        let h = layer_norm(self.norm, x); // [batch, new, m]
        let (q, k, v) = self.attn.project_rows(h.clone(), h); // each [batch, new, m]
        let (keys, values) = kv(k, v); // each [batch, seq, m]
        self.attn.attend_projected(q, keys, values, false) // [batch, new, m]
    }

    /// The cache-filling part of [`AttentionStep::over_cache`] alone: the keys and values of
    /// `x` `[batch, new, M]` go to `kv`; no query, no attention.
    pub fn fill_cache(self, x: Tensor<3>, kv: impl FnOnce(Tensor<3>, Tensor<3>)) {
        let h = layer_norm(self.norm, x); // [batch, new, m]
        let (k, v) = self.attn.project_kv(h); // each [batch, new, m]
        kv(k, v);
    }
}

impl FfnStep<'_> {
    /// The FFN branch on `x` `[.., M]` → `[.., M]` (any rank).
    pub fn apply<const D: usize>(self, x: Tensor<D>) -> Tensor<D> {
        let h = linear_rows(self.up, layer_norm(self.norm, x)); // [.., d]
        linear_rows(self.down, gelu_tanh(h)) // [.., m]
    }

    /// MACs of [`FfnStep::apply`] on `rows` rows.
    pub fn macs(self, rows: usize) -> u64 {
        dense_macs(self.up, rows) + dense_macs(self.down, rows)
    }
}

#[cfg(test)]
mod tests {
    use crate::axial::AxialBlockConfig;
    use crate::test_util::to_vec;
    use burn::tensor::{Device, Distribution, Tensor};

    /// The slot's spatial branch is the full spatial branch at that slot.
    #[test]
    fn spatial_branch_at_a_slot_is_the_full_branch_there() {
        let device = Device::flex();
        let [b, t, n, m] = [2, 3, 5, 8];
        for causal in [false, true] {
            let block = AxialBlockConfig::new(m, 16, 2).with_spatial_causal(causal).init(&device).unwrap();
            let x = Tensor::<4>::random([b, t, n, m], Distribution::Normal(0.0, 1.0), &device);
            let full = block.spatial().over_tokens(x.clone()); // [b, t, n, m]
            for slot in [0, 2, n - 1] {
                let want = to_vec(full.clone().slice([0..b, 0..t, slot..slot + 1, 0..m]));
                let got = to_vec(block.spatial().over_tokens_at(x.clone(), slot));
                for (g, w) in got.iter().zip(&want) {
                    assert!((g - w).abs() < 1e-5, "causal {causal}, slot {slot}: {g} vs {w}");
                }
            }
        }
    }
}
