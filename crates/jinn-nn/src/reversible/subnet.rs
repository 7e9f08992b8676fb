//! Sub-networks for the coupling functions F, G, s, t: any module that maps a tensor to one of
//! the same shape. Each one here is pre-normed (LayerNorm first), so its output stays bounded
//! whatever the scale of the stream it reads, which keeps deep reversible stacks invertible in
//! floating point.

use burn::config::Config;
use burn::module::{Module, ModuleDisplay};
use burn::nn::{LayerNorm, Linear};

use crate::axial_step::{attention_layers, AttentionStep, FfnStep};
use crate::ops::{attention_heads, attention_heads_masked, layer_norm};
use burn::tensor::{Device, Tensor};

use burn::nn::{RotaryEncoding, RotaryEncodingConfig};
use burn::tensor::{Bool, TensorData};

use crate::attention::{MultiHeadAttention, MultiHeadAttentionConfig};
use crate::error::NnError;
use crate::init;

/// A shape-preserving sub-network usable as a coupling function (`[.., width]` → `[.., width]`).
pub trait SubNet<const D: usize>: Module + ModuleDisplay {
    /// Applies the sub-network; the output has the input's shape.
    fn apply(&self, x: Tensor<D>) -> Tensor<D>;
}

/// Configuration of a pre-normed [`Ffn`].
#[derive(Config, Debug)]
pub struct FfnConfig {
    /// Input and output width.
    pub width: usize,
    /// Hidden width.
    pub hidden: usize,
}

impl FfnConfig {
    /// Builds the FFN (LayerNorm eps 1e-6, LeCun-normal kernels, zero biases).
    pub fn init(&self, device: &Device) -> Ffn {
        Ffn {
            norm: init::layer_norm(self.width, device),
            up: init::linear(self.width, self.hidden, device),
            down: init::linear(self.hidden, self.width, device),
        }
    }
}

/// Pre-normed feed-forward network `LN → Linear(W→H) → tanh-GELU → Linear(H→W)`, any rank.
#[derive(Module, Debug)]
pub struct Ffn {
    /// LayerNorm over the width.
    pub norm: LayerNorm,
    /// Input projection `W → H`.
    pub up: Linear,
    /// Output projection `H → W`.
    pub down: Linear,
}

impl Ffn {
    /// The FFN as a sub-layer step.
    pub fn step(&self) -> FfnStep<'_> {
        FfnStep { norm: &self.norm, up: &self.up, down: &self.down }
    }
}

impl<const D: usize> SubNet<D> for Ffn {
    fn apply(&self, x: Tensor<D>) -> Tensor<D> {
        self.step().apply(x) // [.., width]
    }
}

/// Configuration of a pre-normed [`SelfAttention`].
#[derive(Config, Debug)]
pub struct SelfAttentionConfig {
    /// Width.
    pub width: usize,
    /// Attention heads (must divide the width).
    pub num_heads: usize,
    /// Causal over the sequence axis (true for a language model).
    #[config(default = true)]
    pub causal: bool,
    /// Rotary position embeddings on queries and keys (per head) for sequences up to this
    /// length; `None` = no position information (the default).
    #[config(default = "None")]
    pub rotary_max_seq: Option<usize>,
}

impl SelfAttentionConfig {
    /// Builds the sub-network.
    pub fn init(&self, device: &Device) -> Result<SelfAttention, NnError> {
        let attn = MultiHeadAttentionConfig::new(self.width, self.num_heads)
            .with_causal(self.causal)
            .init(device)?;
        let rotary = match self.rotary_max_seq {
            None => None,
            Some(max_seq) => Some(rotary_encoding(max_seq, self.width / self.num_heads, device)?),
        };
        Ok(SelfAttention { norm: init::layer_norm(self.width, device), attn, rotary })
    }
}

/// Burn's rotary encoding over `head_dim` channels for positions `0..max_seq`, checked
/// (Burn's own constructor panics on an odd width).
fn rotary_encoding(max_seq: usize, head_dim: usize, device: &Device) -> Result<RotaryEncoding, NnError> {
    if max_seq == 0 {
        return Err(NnError::InvalidConfig { field: "rotary_max_seq", reason: "must be ≥ 1".into() });
    }
    if !head_dim.is_multiple_of(2) {
        return Err(NnError::InvalidConfig {
            field: "num_heads",
            reason: format!(
                "rotary embeddings rotate channel pairs: the head width must be even, got {head_dim}"
            ),
        });
    }
    Ok(RotaryEncodingConfig::new(max_seq, head_dim).init(device))
}

/// Pre-normed multi-head self-attention `LN → MHA` over `[batch, seq, width]`, with optional
/// rotary position embeddings on queries and keys.
#[derive(Module, Debug)]
pub struct SelfAttention {
    /// LayerNorm over the width.
    pub norm: LayerNorm,
    /// The attention layer.
    pub attn: MultiHeadAttention,
    /// Rotary position embeddings (per head), if configured.
    pub rotary: Option<RotaryEncoding>,
}

impl SelfAttention {
    /// The longest sequence the rotary table covers (`None`: no rotary, any length).
    pub fn max_seq(&self) -> Option<usize> {
        self.rotary.as_ref().map(|r| r.freq_complex.dims()[0])
    }

    /// Queries, keys, values `[batch, heads, seq, head_dim]` of `x` `[batch, seq, width]` whose
    /// first position is `start` (rotated when rotary embeddings are on).
    fn qkv(&self, x: Tensor<3>, start: usize) -> (Tensor<4>, Tensor<4>, Tensor<4>) {
        let (q, k, v) = self.attn.project_qkv(layer_norm(&self.norm, x));
        match &self.rotary {
            Some(rope) => (rope.apply(q, start), rope.apply(k, start), v),
            None => (q, k, v),
        }
    }

    /// Incremental (decoding) forward: `x` `[batch, new, width]` are the next positions after
    /// those in `cache`; their keys and values are appended to `cache` and they attend over all
    /// cached positions (causally among themselves). Equals [`SubNet::apply`] on the whole
    /// sequence, restricted to the new positions. Needs causal attention.
    ///
    /// Panics (from Burn's rotary table) when the sequence outgrows [`SelfAttention::max_seq`];
    /// callers check the length first.
    pub fn apply_cached(&self, x: Tensor<3>, cache: &mut KvCache) -> Tensor<3> {
        let start = cache.len();
        let new = x.dims()[1];
        let (q, k, v) = self.qkv(x, start); // each [b, h, new, hd]
        let (k, v) = cache.append(k, v); // each [b, h, start + new, hd]
        let context = if start == 0 {
            attention_heads(q, k, v, self.attn.causal)
        } else if new == 1 {
            attention_heads(q, k, v, false)
        } else {
            let mask = future_mask(start, new, &q.device()); // [1, 1, new, start + new]
            attention_heads_masked(q, k, v, mask)
        };
        self.attn.merge_heads(context) // [b, new, width]
    }
}

/// `true` where new query `i` (absolute position `start + i`) must not see key `j`:
/// `j > start + i`. Shape `[1, 1, new, start + new]`.
fn future_mask(start: usize, new: usize, device: &Device) -> Tensor<4, Bool> {
    let total = start + new;
    let mask: Vec<bool> = (0..new * total).map(|ij| ij % total > start + ij / total).collect();
    Tensor::<2, Bool>::from_data(TensorData::new(mask, [new, total]), device).unsqueeze::<4>()
}

impl SubNet<3> for SelfAttention {
    fn apply(&self, x: Tensor<3>) -> Tensor<3> {
        let (q, k, v) = self.qkv(x, 0); // each [batch, heads, seq, head_dim]
        self.attn.merge_heads(attention_heads(q, k, v, self.attn.causal)) // [batch, seq, width]
    }
}

/// Keys and values of the positions one [`SelfAttention`] layer has seen while decoding,
/// each `[batch, heads, positions, head_dim]`.
#[derive(Debug, Clone, Default)]
pub struct KvCache {
    kv: Option<(Tensor<4>, Tensor<4>)>,
}

impl KvCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cached positions.
    pub fn len(&self) -> usize {
        self.kv.as_ref().map_or(0, |(k, _)| k.dims()[2])
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends new keys/values along the position axis; returns all of them.
    fn append(&mut self, k: Tensor<4>, v: Tensor<4>) -> (Tensor<4>, Tensor<4>) {
        let kv = match self.kv.take() {
            None => (k, v),
            Some((ck, cv)) => (Tensor::cat(vec![ck, k], 2), Tensor::cat(vec![cv, v], 2)),
        };
        self.kv = Some(kv.clone());
        kv
    }
}

/// Configuration of an [`AxialAttention`] sub-network.
#[derive(Config, Debug)]
pub struct AxialAttentionConfig {
    /// Width.
    pub width: usize,
    /// Attention heads (must divide the width).
    pub num_heads: usize,
    /// Causal attention over the tokens of a frame.
    #[config(default = false)]
    pub spatial_causal: bool,
    /// Causal attention over the frames.
    #[config(default = true)]
    pub temporal_causal: bool,
}

impl AxialAttentionConfig {
    /// Builds the sub-network.
    pub fn init(&self, device: &Device) -> Result<AxialAttention, NnError> {
        let (w, heads) = (self.width, self.num_heads);
        let (norm_spatial, attn_spatial) = attention_layers(w, heads, self.spatial_causal, device)?;
        let (norm_temporal, attn_temporal) = attention_layers(w, heads, self.temporal_causal, device)?;
        Ok(AxialAttention { norm_spatial, attn_spatial, norm_temporal, attn_temporal })
    }
}

/// Pre-normed spatial then temporal attention over `[B, T, N, width]`, as one function:
/// `a = Spatial(LN(x))`, `b = Temporal(LN(x + a))`, output `a + b` (the two residual
/// sub-layers of an axial block, minus the identity path that the coupling supplies).
#[derive(Module, Debug)]
pub struct AxialAttention {
    /// LayerNorm before spatial attention.
    pub norm_spatial: LayerNorm,
    /// Attention over the N axis, per (b, t).
    pub attn_spatial: MultiHeadAttention,
    /// LayerNorm before temporal attention.
    pub norm_temporal: LayerNorm,
    /// Attention over the T axis, per (b, n).
    pub attn_temporal: MultiHeadAttention,
}

impl AxialAttention {
    /// The spatial attention step (as [`crate::AxialBlock::spatial`]).
    pub fn spatial(&self) -> AttentionStep<'_> {
        AttentionStep { norm: &self.norm_spatial, attn: &self.attn_spatial }
    }

    /// The temporal attention step (as [`crate::AxialBlock::temporal`]).
    pub fn temporal(&self) -> AttentionStep<'_> {
        AttentionStep { norm: &self.norm_temporal, attn: &self.attn_temporal }
    }
}

impl SubNet<4> for AxialAttention {
    fn apply(&self, x: Tensor<4>) -> Tensor<4> {
        let spatial = self.spatial().over_tokens(x.clone()); // [b, t, n, m]
        let temporal = self.temporal().over_frames(x + spatial.clone()); // [b, t, n, m]
        spatial + temporal
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::Distribution;

    fn max_abs_diff(a: Tensor<3>, b: Tensor<3>) -> f32 {
        (a - b).abs().max().into_scalar()
    }

    #[test]
    fn cached_attention_equals_full_attention() {
        let device = Device::flex();
        for rotary in [None, Some(16)] {
            let sa = SelfAttentionConfig::new(8, 2).with_rotary_max_seq(rotary).init(&device).unwrap();
            let x = Tensor::<3>::random([2, 9, 8], Distribution::Normal(0.0, 1.0), &device);
            let full = sa.apply(x.clone()); // [2, 9, 8]
            let mut cache = KvCache::new();
            // A prefill of 4, one token, then a chunk of 4 (masked among themselves).
            let parts = [(0, 4), (4, 1), (5, 4)];
            let outs: Vec<Tensor<3>> =
                parts.iter().map(|&(s, n)| sa.apply_cached(x.clone().narrow(1, s, n), &mut cache)).collect();
            assert_eq!(cache.len(), 9);
            let d = max_abs_diff(Tensor::cat(outs, 1), full);
            assert!(d < 1e-5, "rotary {rotary:?}: cached differs by {d}");
        }
    }

    /// Without positions, non-causal attention is permutation-equivariant over the sequence
    /// (reversing the input reverses the output); rotary embeddings break that.
    #[test]
    fn rotary_breaks_permutation_equivariance() {
        let device = Device::flex();
        let x = Tensor::<3>::random([1, 5, 8], Distribution::Normal(0.0, 1.0), &device);
        let reversed = |t: Tensor<3>| t.flip([1]);
        let asymmetry =
            |sa: &SelfAttention| max_abs_diff(sa.apply(reversed(x.clone())), reversed(sa.apply(x.clone())));
        let plain = SelfAttentionConfig::new(8, 2).with_causal(false).init(&device).unwrap();
        assert!(asymmetry(&plain) < 1e-5, "without positions attention is equivariant");
        let mut rope = SelfAttentionConfig::new(8, 2)
            .with_causal(false)
            .with_rotary_max_seq(Some(8))
            .init(&device)
            .unwrap();
        rope.norm = plain.norm.clone();
        rope.attn = plain.attn.clone();
        assert!(asymmetry(&rope) > 1e-3, "rotary embeddings must tell positions apart");
    }

    /// The reversible axial F is the axial block's two attention sub-layers less the identity
    /// path, and its G the block's FFN sub-layer.
    #[test]
    fn axial_subnets_are_the_axial_block_sub_layers() {
        let device = Device::flex();
        let block = crate::AxialBlockConfig::new(8, 16, 2).with_spatial_causal(true).init(&device).unwrap();
        let f = AxialAttention {
            norm_spatial: block.norm_spatial.clone(),
            attn_spatial: block.attn_spatial.clone(),
            norm_temporal: block.norm_temporal.clone(),
            attn_temporal: block.attn_temporal.clone(),
        };
        let g = Ffn { norm: block.norm_ffn.clone(), up: block.ffn_in.clone(), down: block.ffn_out.clone() };
        let x = Tensor::<4>::random([2, 3, 4, 8], Distribution::Normal(0.0, 1.0), &device);
        let after_spatial = x.clone() + block.spatial().over_tokens(x.clone());
        let attention_layers = after_spatial.clone() + block.temporal().over_frames(after_spatial);
        let d: f32 = (x.clone() + f.apply(x.clone()) - attention_layers).abs().max().into_scalar();
        assert!(d < 1e-5, "F differs from the attention sub-layers by {d}");
        let same: f32 = (g.apply(x.clone()) - block.ffn().apply(x)).abs().max().into_scalar();
        assert_eq!(same, 0.0, "G is the FFN sub-layer");
    }

    #[test]
    fn odd_rotary_head_width_is_an_error() {
        let device = Device::flex();
        let err = SelfAttentionConfig::new(6, 2).with_rotary_max_seq(Some(4)).init(&device).unwrap_err();
        assert!(err.to_string().contains("even"), "{err}");
    }
}
