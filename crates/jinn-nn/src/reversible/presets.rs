//! Ready-made reversible blocks and their configurations: the axial block (dynamics backbone),
//! the causal attention/FFN block (language-model backbone) and FFN-only additive/affine blocks.
//! Block `i` of a stack gets scatter seed `seed + i`.
//!
//! Depth-scaled initialisation: the last projection of every coupling function starts scaled
//! by `1/√(2·depth)` (as GPT-2 scales its residual branches), so the stream keeps an O(1)
//! magnitude at any depth. That keeps the inverse accurate in f32: with plain LeCun init the
//! stream grows like √depth and the round-trip error of a 16-block FFN stack was 1.3e-5.

use burn::config::Config;
use burn::nn::Linear;
use burn::tensor::Device;

use super::coupling::{AdditiveCoupling, AffineCoupling};
use super::scatter::Scatter;
use super::subnet::{
    AxialAttention, AxialAttentionConfig, Ffn, FfnConfig, SelfAttention, SelfAttentionConfig,
};
use crate::error::NnError;

/// Reversible axial block on `[B, T, N, M]`: F = pre-normed spatial + temporal attention,
/// G = pre-normed FFN, each on `M/2` channels.
pub type ReversibleAxialBlock = AdditiveCoupling<AxialAttention, Ffn>;

/// Reversible causal block on `[batch, seq, M]`: F = pre-normed causal self-attention,
/// G = pre-normed FFN, each on `M/2` channels.
pub type ReversibleCausalBlock = AdditiveCoupling<SelfAttention, Ffn>;

/// Additive coupling with two FFNs (any rank; tests and benchmarks).
pub type AdditiveFfnBlock = AdditiveCoupling<Ffn, Ffn>;

/// Affine coupling with FFN log-scale and shift networks (any rank).
pub type AffineFfnBlock = AffineCoupling<Ffn, Ffn>;

/// The half width, checked: `d_model` must be even and positive.
fn half_width(d_model: usize) -> Result<usize, NnError> {
    if d_model == 0 || !d_model.is_multiple_of(2) {
        return Err(NnError::InvalidConfig {
            field: "d_model",
            reason: format!(
                "a coupling splits the width in two halves: must be even and positive, got {d_model}"
            ),
        });
    }
    Ok(d_model / 2)
}

/// `1/√(2·depth)`: the initial scale of every coupling function's last projection.
fn branch_scale(depth: usize) -> f64 {
    1.0 / (2.0 * depth.max(1) as f64).sqrt()
}

/// `layer` with its (lazily drawn) kernel scaled by `factor`.
fn scaled(mut layer: Linear, factor: f64) -> Linear {
    layer.weight = layer.weight.init_mapper(move |w| w * factor);
    layer
}

fn scaled_ffn(mut ffn: Ffn, factor: f64) -> Ffn {
    ffn.down = scaled(ffn.down, factor);
    ffn
}

/// Configuration of a [`ReversibleAxialBlock`] stack.
#[derive(Config, Debug)]
pub struct ReversibleAxialConfig {
    /// Model width `M` (even; each half `M/2` must be divisible by `num_heads`).
    pub d_model: usize,
    /// FFN hidden width.
    pub d_ffn: usize,
    /// Attention heads per half.
    pub num_heads: usize,
    /// Causal attention over the tokens of a frame.
    #[config(default = false)]
    pub spatial_causal: bool,
    /// Causal attention over frames.
    #[config(default = true)]
    pub temporal_causal: bool,
    /// Base seed of the scatter permutations.
    #[config(default = 0)]
    pub seed: u64,
}

impl ReversibleAxialConfig {
    /// Builds `depth` blocks.
    pub fn init_stack(&self, depth: usize, device: &Device) -> Result<Vec<ReversibleAxialBlock>, NnError> {
        let half = half_width(self.d_model)?;
        let scale = branch_scale(depth);
        (0..depth)
            .map(|i| {
                let mut f = AxialAttentionConfig::new(half, self.num_heads)
                    .with_spatial_causal(self.spatial_causal)
                    .with_temporal_causal(self.temporal_causal)
                    .init(device)?;
                f.attn_spatial.output = scaled(f.attn_spatial.output, scale);
                f.attn_temporal.output = scaled(f.attn_temporal.output, scale);
                Ok(AdditiveCoupling {
                    f,
                    g: scaled_ffn(FfnConfig::new(half, self.d_ffn).init(device), scale),
                    scatter: Scatter::seeded(self.d_model, self.seed + i as u64),
                })
            })
            .collect()
    }
}

/// Configuration of a [`ReversibleCausalBlock`] stack.
#[derive(Config, Debug)]
pub struct ReversibleCausalConfig {
    /// Model width `M` (even; `M/2` must be divisible by `num_heads`).
    pub d_model: usize,
    /// FFN hidden width.
    pub d_ffn: usize,
    /// Attention heads per half.
    pub num_heads: usize,
    /// Base seed of the scatter permutations.
    #[config(default = 0)]
    pub seed: u64,
    /// Rotary position embeddings in F's attention for sequences up to this length (`None`:
    /// none, the default).
    #[config(default = "None")]
    pub rotary_max_seq: Option<usize>,
}

impl ReversibleCausalConfig {
    /// Builds `depth` blocks.
    pub fn init_stack(&self, depth: usize, device: &Device) -> Result<Vec<ReversibleCausalBlock>, NnError> {
        let half = half_width(self.d_model)?;
        (0..depth)
            .map(|i| {
                let (f, g) =
                    causal_subnets(half, self.d_ffn, self.num_heads, self.rotary_max_seq, depth, device)?;
                Ok(AdditiveCoupling { f, g, scatter: Scatter::seeded(self.d_model, self.seed + i as u64) })
            })
            .collect()
    }
}

/// The two functions of one causal block on `width` channels, depth-scaled for a stack of
/// `depth` blocks: pre-normed causal self-attention (rotary up to `rotary_max_seq` if given)
/// and a pre-normed FFN with `d_ffn` hidden units. A [`ReversibleCausalBlock`] couples them on
/// the two halves of its width; a standard pre-norm transformer block adds them as residuals.
pub fn causal_subnets(
    width: usize,
    d_ffn: usize,
    num_heads: usize,
    rotary_max_seq: Option<usize>,
    depth: usize,
    device: &Device,
) -> Result<(SelfAttention, Ffn), NnError> {
    let scale = branch_scale(depth);
    let mut f = SelfAttentionConfig::new(width, num_heads)
        .with_causal(true)
        .with_rotary_max_seq(rotary_max_seq)
        .init(device)?;
    f.attn.output = scaled(f.attn.output, scale);
    Ok((f, scaled_ffn(FfnConfig::new(width, d_ffn).init(device), scale)))
}

/// Configuration of FFN-only coupling stacks ([`AdditiveFfnBlock`], [`AffineFfnBlock`]).
#[derive(Config, Debug)]
pub struct FfnCouplingConfig {
    /// Model width `M` (even).
    pub d_model: usize,
    /// Hidden width of each FFN.
    pub d_hidden: usize,
    /// Log-scale bound `c` of the affine coupling.
    #[config(default = 2.0)]
    pub bound: f64,
    /// Base seed of the scatter permutations.
    #[config(default = 0)]
    pub seed: u64,
}

impl FfnCouplingConfig {
    /// Builds `depth` additive blocks.
    pub fn init_additive(&self, depth: usize, device: &Device) -> Result<Vec<AdditiveFfnBlock>, NnError> {
        let half = half_width(self.d_model)?;
        let scale = branch_scale(depth);
        Ok((0..depth)
            .map(|i| AdditiveCoupling {
                f: scaled_ffn(FfnConfig::new(half, self.d_hidden).init(device), scale),
                g: scaled_ffn(FfnConfig::new(half, self.d_hidden).init(device), scale),
                scatter: Scatter::seeded(self.d_model, self.seed + i as u64),
            })
            .collect())
    }

    /// Builds `depth` affine blocks.
    pub fn init_affine(&self, depth: usize, device: &Device) -> Result<Vec<AffineFfnBlock>, NnError> {
        let half = half_width(self.d_model)?;
        let scale = branch_scale(depth);
        if !(self.bound > 0.0 && self.bound.is_finite()) {
            return Err(NnError::InvalidConfig {
                field: "bound",
                reason: format!("the log-scale bound must be positive and finite, got {}", self.bound),
            });
        }
        Ok((0..depth)
            .map(|i| AffineCoupling {
                s: scaled_ffn(FfnConfig::new(half, self.d_hidden).init(device), scale),
                t: scaled_ffn(FfnConfig::new(half, self.d_hidden).init(device), scale),
                bound: self.bound,
                scatter: Scatter::seeded(self.d_model, self.seed + i as u64),
            })
            .collect())
    }
}
