//! Multi-head self-attention (the attention of Jasmine's `jasmine/utils/nn.py`).
//!
//! Separate Q, K, V projections `M → (H, M/H)` and an output projection `(H, M/H) → M`, all
//! with bias; scores `q·kᵀ / sqrt(M/H)`, softmax, weighted sum of V; optional causal mask. No
//! QK-norm, no RoPE, no dropout (Jasmine's dropout is a no-op). The attention itself is
//! [`crate::ops::self_attention`] / [`crate::ops::attention`] (the CPU kernel or Burn's op); the
//! parameters stay four layers.
//!
//! For KV caches, [`MultiHeadAttention::project_rows`] / [`MultiHeadAttention::project_qkv`]
//! and [`MultiHeadAttention::attend_projected`] / [`crate::ops::attention_heads`] are public, so
//! a decoder can project only new tokens and attend over cached keys/values.

use burn::config::Config;
use burn::module::Module;
use burn::nn::Linear;
use burn::tensor::{Device, Tensor};

use crate::error::NnError;
use crate::init;
use crate::ops::{self, linear_rows};

/// Configuration of [`MultiHeadAttention`].
#[derive(Config, Debug)]
pub struct MultiHeadAttentionConfig {
    /// Model width `M`.
    pub d_model: usize,
    /// Number of heads `H`; must divide `M`.
    pub num_heads: usize,
    /// Whether position `i` may only attend to positions `≤ i`.
    #[config(default = false)]
    pub causal: bool,
}

impl MultiHeadAttentionConfig {
    /// Builds the layer with LeCun-normal kernels and zero biases (flax NNX's defaults).
    pub fn init(&self, device: &Device) -> Result<MultiHeadAttention, NnError> {
        if self.num_heads == 0 || !self.d_model.is_multiple_of(self.num_heads) {
            return Err(NnError::InvalidConfig {
                field: "num_heads",
                reason: format!(
                    "must be positive and divide d_model = {}, got {}",
                    self.d_model, self.num_heads
                ),
            });
        }
        let m = self.d_model;
        Ok(MultiHeadAttention {
            query: init::linear(m, m, device),
            key: init::linear(m, m, device),
            value: init::linear(m, m, device),
            output: init::linear(m, m, device),
            num_heads: self.num_heads,
            causal: self.causal,
        })
    }
}

/// Multi-head self-attention over the middle axis of `[batch, seq, M]`.
#[derive(Module, Debug)]
pub struct MultiHeadAttention {
    /// Query projection `M → M` (heads concatenated, head-major).
    pub query: Linear,
    /// Key projection `M → M`.
    pub key: Linear,
    /// Value projection `M → M`.
    pub value: Linear,
    /// Output projection `M → M`.
    pub output: Linear,
    /// Number of heads `H`.
    pub num_heads: usize,
    /// Causal masking over the sequence axis.
    pub causal: bool,
}

impl MultiHeadAttention {
    /// Self-attention: `x` `[batch, seq, M]` → `[batch, seq, M]`.
    pub fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        let projections = [&self.query, &self.key, &self.value];
        let attended = ops::self_attention(x, projections, self.num_heads, self.causal); // [batch, seq, M]
        linear_rows(&self.output, attended)
    }

    /// Unmasked attention of the rows of `queries` `[batch, seq_q, M]` over the rows of
    /// `context` `[batch, seq, M]` (the keys and values) → `[batch, seq_q, M]`. With `queries`
    /// a subset of `context`'s rows this is [`MultiHeadAttention::forward`] at those rows, for
    /// non-causal attention (causal callers pass only the keys a query may see).
    pub fn forward_cross(&self, queries: Tensor<3>, context: Tensor<3>) -> Tensor<3> {
        self.attend_rows(queries, context, false)
    }

    /// Attention of the rows of `queries` over those of `context`, output projection applied.
    fn attend_rows(&self, queries: Tensor<3>, context: Tensor<3>, causal: bool) -> Tensor<3> {
        let (q, k, v) = self.project_rows(queries, context); // [batch, seq_q | seq, M]
        self.attend_projected(q, k, v, causal)
    }

    /// Attention of projected queries `q` `[batch, seq_q, M]` over projected keys and values
    /// `[batch, seq, M]` (heads not split off, as [`MultiHeadAttention::project_rows`] gives
    /// them; keys and values may be windows of a larger buffer, as a KV cache's are), output
    /// projection applied → `[batch, seq_q, M]`.
    pub fn attend_projected(&self, q: Tensor<3>, k: Tensor<3>, v: Tensor<3>, causal: bool) -> Tensor<3> {
        let attended = ops::attention(q, k, v, self.num_heads, causal); // [batch, seq_q, M]
        linear_rows(&self.output, attended)
    }

    /// Projects `x` `[batch, seq, M]` to queries, keys and values, each
    /// `[batch, heads, seq, head_dim]`.
    pub fn project_qkv(&self, x: Tensor<3>) -> (Tensor<4>, Tensor<4>, Tensor<4>) {
        let (q, k, v) = self.project_rows(x.clone(), x); // each [batch, seq, M]
        let h = self.num_heads;
        (ops::split_heads(q, h), ops::split_heads(k, h), ops::split_heads(v, h))
    }

    /// Queries from the rows of `queries` `[batch, seq_q, M]`, keys and values from those of
    /// `context` `[batch, seq, M]`, heads not split off.
    pub fn project_rows(&self, queries: Tensor<3>, context: Tensor<3>) -> (Tensor<3>, Tensor<3>, Tensor<3>) {
        let q = linear_rows(&self.query, queries);
        let (k, v) = self.project_kv(context);
        (q, k, v)
    }

    /// Keys and values from the rows of `context` `[batch, seq, M]`, heads not split off.
    pub fn project_kv(&self, context: Tensor<3>) -> (Tensor<3>, Tensor<3>) {
        let k = linear_rows(&self.key, context.clone());
        (k, linear_rows(&self.value, context))
    }

    /// Concatenates heads `[batch, heads, seq, head_dim]` and applies the output projection
    /// → `[batch, seq, M]`.
    pub fn merge_heads(&self, context: Tensor<4>) -> Tensor<3> {
        linear_rows(&self.output, ops::merge_heads(context)) // [b, s, M]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::to_vec;
    use burn::tensor::Distribution;

    /// Dense layer in f64 loops: `x [rows, din] · w [din, dout] + b`.
    fn naive_linear(x: &[f32], rows: usize, l: &Linear) -> Vec<f32> {
        let [din, dout] = l.weight.val().dims();
        let w = to_vec(l.weight.val());
        let bias = to_vec(l.bias.as_ref().unwrap().val());
        let mut y = vec![0.0f32; rows * dout];
        for r in 0..rows {
            for o in 0..dout {
                let mut acc = bias[o] as f64;
                for i in 0..din {
                    acc += x[r * din + i] as f64 * w[i * dout + o] as f64;
                }
                y[r * dout + o] = acc as f32;
            }
        }
        y
    }

    /// Naive reference: explicit loops over batch, head, query, key.
    fn naive_mha(mha: &MultiHeadAttention, x: &[f32], [b, s, m]: [usize; 3]) -> Vec<f32> {
        let h = mha.num_heads;
        let hd = m / h;
        let q = naive_linear(x, b * s, &mha.query);
        let k = naive_linear(x, b * s, &mha.key);
        let v = naive_linear(x, b * s, &mha.value);
        let mut ctx = vec![0.0f32; b * s * m];
        for bi in 0..b {
            for hi in 0..h {
                for i in 0..s {
                    let at = |t: &[f32], pos: usize, d: usize| t[(bi * s + pos) * m + hi * hd + d] as f64;
                    let mut scores = vec![f64::NEG_INFINITY; s];
                    for (j, sc) in scores.iter_mut().enumerate() {
                        if mha.causal && j > i {
                            continue;
                        }
                        *sc = (0..hd).map(|d| at(&q, i, d) * at(&k, j, d)).sum::<f64>() / (hd as f64).sqrt();
                    }
                    let mx = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                    let e: Vec<f64> = scores.iter().map(|s| (s - mx).exp()).collect();
                    let z: f64 = e.iter().sum();
                    for d in 0..hd {
                        let val: f64 = (0..s).map(|j| e[j] / z * at(&v, j, d)).sum();
                        ctx[(bi * s + i) * m + hi * hd + d] = val as f32;
                    }
                }
            }
        }
        naive_linear(&ctx, b * s, &mha.output)
    }

    /// The layer against the f64 loops, on the plain device and, with the input on the tape,
    /// under autodiff.
    fn check(causal: bool) {
        for device in [Device::flex(), Device::flex().autodiff()] {
            let shape = [2, 5, 16];
            let mha = MultiHeadAttentionConfig::new(16, 4).with_causal(causal).init(&device).unwrap();
            let x = Tensor::<3>::random(shape, Distribution::Normal(0.0, 1.0), &device);
            let x = if device.is_autodiff() { x.require_grad() } else { x };
            let xs = to_vec(x.clone());
            let got = to_vec(mha.forward(x));
            let want = naive_mha(&mha, &xs, shape);
            for (g, w) in got.iter().zip(&want) {
                assert!((g - w).abs() < 1e-4, "causal={causal} on {device:?}: {g} vs {w}");
            }
        }
    }

    #[test]
    fn matches_naive_reference_non_causal() {
        check(false);
    }

    #[test]
    fn matches_naive_reference_causal() {
        check(true);
    }

    #[test]
    fn module_gradients_are_finite() {
        let device = Device::flex().autodiff();
        let mha = MultiHeadAttentionConfig::new(8, 2).with_causal(true).init(&device).unwrap();
        let x = Tensor::<3>::random([2, 4, 8], Distribution::Normal(0.0, 1.0), &device).require_grad();
        let grads = mha.forward(x.clone()).powi_scalar(2).mean().backward();
        let gx = to_vec(x.grad(&grads).unwrap());
        assert!(gx.iter().all(|v| v.is_finite()) && gx.iter().any(|v| *v != 0.0));
        let gw = to_vec(mha.query.weight.val().grad(&grads).unwrap());
        assert!(gw.iter().all(|v| v.is_finite()) && gw.iter().any(|v| *v != 0.0));
    }

    #[test]
    fn packed_projection_gradients_equal_the_separate_path() {
        // `forward` projects Q, K and V with one concatenated weight on the CPU; every
        // projection's weight and bias gradient, and the input's, must be those of three layers.
        let device = Device::flex().autodiff();
        for causal in [false, true] {
            let mha = MultiHeadAttentionConfig::new(12, 3).with_causal(causal).init(&device).unwrap();
            let x = Tensor::<3>::random([2, 5, 12], Distribution::Normal(0.0, 1.0), &device);
            let w = Tensor::<3>::random([2, 5, 12], Distribution::Normal(0.0, 1.0), &device);
            let grads_of = |packed: bool| {
                let x = x.clone().detach().require_grad();
                let y = if packed {
                    mha.forward(x.clone())
                } else {
                    mha.attend_rows(x.clone(), x.clone(), causal)
                };
                let grads = (y * w.clone()).sum().backward();
                let mut all = vec![to_vec(x.grad(&grads).unwrap())];
                for layer in [&mha.query, &mha.key, &mha.value] {
                    all.push(to_vec(layer.weight.val().grad(&grads).unwrap()));
                    all.push(to_vec(layer.bias.as_ref().unwrap().val().grad(&grads).unwrap()));
                }
                all
            };
            let (packed, separate) = (grads_of(true), grads_of(false));
            for (i, (gp, gs)) in packed.iter().zip(&separate).enumerate() {
                assert_eq!(gp.len(), gs.len(), "gradient {i}: length");
                for (a, b) in gp.iter().zip(gs) {
                    assert!((a - b).abs() < 1e-4, "causal {causal}, gradient {i}: {a} vs {b}");
                }
            }
        }
    }

    #[test]
    fn bad_head_count_is_an_error() {
        let device = Device::flex();
        assert!(MultiHeadAttentionConfig::new(10, 4).init(&device).is_err());
        assert!(MultiHeadAttentionConfig::new(10, 0).init(&device).is_err());
    }
}
