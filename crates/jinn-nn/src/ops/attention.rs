//! Multi-head scaled dot-product attention: `softmax(q·kᵀ/√head_dim [+ causal mask])·v`.
//!
//! [`attention`] takes queries, keys and values in the projections' own layout
//! `[batch, seq, heads·head_dim]` (self- or cross-attention; keys and values may be windows of a
//! longer buffer, as a KV cache's are); [`self_attention`] projects them from one input first.
//! On the CPU backend in f32 both are the fused ops of [`super::cpu::attention`] (self-attention
//! projects Q, K and V in one matmul over the three weights side by side and attends on the
//! packed rows); elsewhere the heads are split off for Burn's fused attention op
//! ([`attention_heads`]). [`attention_heads`] and [`attention_heads_masked`] take heads already
//! split off `[batch, heads, seq, head_dim]` (rotary embeddings, explicit masks): Burn's op on
//! every device, since the CPU kernel reads the projections' layout.

use burn::nn::Linear;
use burn::tensor::module::attention as burn_attention;
use burn::tensor::ops::AttentionModuleOptions;
use burn::tensor::{Bool, Tensor};

use super::{cpu, linear_rows, on_cpu_f32};

/// Attention of the rows of `q` `[batch, seq_q, M]` over those of `k` and `v`
/// `[batch, seq_k, M]`, in `heads` heads of `M / heads` features each (head-major, as the
/// projections lay them out) → `[batch, seq_q, M]`, heads concatenated. `causal` hides key `j`
/// from query `i` when `j > i`.
pub fn attention(q: Tensor<3>, k: Tensor<3>, v: Tensor<3>, heads: usize, causal: bool) -> Tensor<3> {
    if on_cpu_f32(&q) {
        #[cfg(test)]
        {
            let ([b, sq, m], sk) = (q.dims(), k.dims()[1]);
            crate::mac_tally::record(crate::flops::attend_macs(b, sq, sk, m));
        }
        return cpu::attention::attention(q, k, v, heads, causal); // [batch, seq_q, M]
    }
    attention_by_heads(q, k, v, heads, causal)
}

/// The Burn-op path of [`attention`]: heads split off, [`attention_heads`], heads merged.
fn attention_by_heads(q: Tensor<3>, k: Tensor<3>, v: Tensor<3>, heads: usize, causal: bool) -> Tensor<3> {
    let (q, k, v) = (split_heads(q, heads), split_heads(k, heads), split_heads(v, heads)); // [batch, heads, seq, head_dim]
    merge_heads(attention_heads(q, k, v, causal)) // [batch, seq_q, M]
}

/// Self-attention of the rows of `x` `[batch, seq, M]`, projected to queries, keys and values
/// by `query`, `key` and `value` (`M → M` each) → `[batch, seq, M]`, heads concatenated (no
/// output projection). On the CPU backend in f32, when every projection has a bias, one matmul
/// projects all three (the weights side by side, so one matmul each way in the backward and no
/// sum of three input gradients) and the attention reads the packed `[q | k | v]` rows;
/// otherwise three projections and [`attention`].
pub fn self_attention(
    x: Tensor<3>,
    [query, key, value]: [&Linear; 3],
    heads: usize,
    causal: bool,
) -> Tensor<3> {
    let layers = [query, key, value];
    let biases = layers.map(|l| l.bias.as_ref().map(|b| b.val()));
    if on_cpu_f32(&x) && biases.iter().all(Option::is_some) {
        let [b, s, m] = x.dims();
        #[cfg(test)]
        crate::mac_tally::record((b * s * m * 3 * m) as u64 + crate::flops::attention_macs(b, s, m));
        let weight = Tensor::cat(layers.map(|l| l.weight.val()).to_vec(), 1); // [M, 3M]
        let bias = Tensor::cat(biases.into_iter().flatten().collect(), 0); // [3M]
        let qkv = cpu::linear::affine(x.reshape([b * s, m]), weight, bias); // [batch·seq, 3M]
        return cpu::attention::attention_packed(qkv.reshape([b, s, 3 * m]), heads, causal);
        // [batch, seq, M]
    }
    let q = linear_rows(query, x.clone()); // [batch, seq, M]
    let k = linear_rows(key, x.clone()); // [batch, seq, M]
    let v = linear_rows(value, x); // [batch, seq, M]
    attention(q, k, v, heads, causal)
}

/// Scaled dot-product attention on `[batch, heads, seq, head_dim]` tensors (Burn's fused op on
/// every device; the causal mask hides key positions after the query position, aligned at the
/// start of both sequences) → `[batch, heads, seq_q, head_dim]`.
pub fn attention_heads(q: Tensor<4>, k: Tensor<4>, v: Tensor<4>, causal: bool) -> Tensor<4> {
    #[cfg(test)]
    {
        let ([b, h, sq, hd], sk) = (q.dims(), k.dims()[2]);
        crate::mac_tally::record(crate::flops::attend_macs(b * h, sq, sk, hd));
    }
    let options = AttentionModuleOptions { scale: None, softcap: None, is_causal: causal };
    burn_attention(q, k, v, None, None, options) // [batch, heads, seq_q, head_dim]
}

/// [`attention_heads`] with key positions hidden where `mask` `[1 | batch, 1 | heads, seq_q,
/// seq_k]` is `true` instead of a causal flag (Burn's fused op on every device).
pub fn attention_heads_masked(q: Tensor<4>, k: Tensor<4>, v: Tensor<4>, mask: Tensor<4, Bool>) -> Tensor<4> {
    let options = AttentionModuleOptions { scale: None, softcap: None, is_causal: false };
    burn_attention(q, k, v, Some(mask), None, options) // [batch, heads, seq_q, head_dim]
}

/// `x` `[batch, seq, M]` → `[batch, heads, seq, M / heads]`.
pub(crate) fn split_heads(x: Tensor<3>, heads: usize) -> Tensor<4> {
    let [b, s, m] = x.dims();
    x.reshape([b, s, heads, m / heads]).swap_dims(1, 2) // [b, h, s, head_dim]
}

/// `x` `[batch, heads, seq, head_dim]` → `[batch, seq, heads·head_dim]`, heads concatenated.
pub(crate) fn merge_heads(x: Tensor<4>) -> Tensor<3> {
    let [b, h, s, hd] = x.dims();
    x.swap_dims(1, 2).reshape([b, s, h * hd]) // [b, s, M]
}

#[cfg(test)]
mod tests;
