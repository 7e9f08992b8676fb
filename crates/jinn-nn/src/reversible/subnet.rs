//! Sub-networks for the coupling functions F, G, s, t: any module that maps a tensor to one of
//! the same shape. Each one here is pre-normed (LayerNorm first), so its output stays bounded
//! whatever the scale of the stream it reads, which keeps deep reversible stacks invertible in
//! floating point.

use burn::config::Config;
use burn::module::{Module, ModuleDisplay};
use burn::nn::{LayerNorm, Linear};
use burn::tensor::activation::gelu_approximate;
use burn::tensor::{Device, Tensor};

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

impl<const D: usize> SubNet<D> for Ffn {
    fn apply(&self, x: Tensor<D>) -> Tensor<D> {
        let h = self.up.forward(self.norm.forward(x)); // [.., hidden]
        self.down.forward(gelu_approximate(h)) // [.., width]
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
}

impl SelfAttentionConfig {
    /// Builds the sub-network.
    pub fn init(&self, device: &Device) -> Result<SelfAttention, NnError> {
        Ok(SelfAttention {
            norm: init::layer_norm(self.width, device),
            attn: MultiHeadAttentionConfig::new(self.width, self.num_heads)
                .with_causal(self.causal)
                .init(device)?,
        })
    }
}

/// Pre-normed multi-head self-attention `LN → MHA` over `[batch, seq, width]`.
#[derive(Module, Debug)]
pub struct SelfAttention {
    /// LayerNorm over the width.
    pub norm: LayerNorm,
    /// The attention layer.
    pub attn: MultiHeadAttention,
}

impl SubNet<3> for SelfAttention {
    fn apply(&self, x: Tensor<3>) -> Tensor<3> {
        self.attn.forward(self.norm.forward(x)) // [batch, seq, width]
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
        let attn = |causal| {
            MultiHeadAttentionConfig::new(self.width, self.num_heads).with_causal(causal).init(device)
        };
        Ok(AxialAttention {
            norm_spatial: init::layer_norm(self.width, device),
            attn_spatial: attn(self.spatial_causal)?,
            norm_temporal: init::layer_norm(self.width, device),
            attn_temporal: attn(self.temporal_causal)?,
        })
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

impl SubNet<4> for AxialAttention {
    fn apply(&self, x: Tensor<4>) -> Tensor<4> {
        let [b, t, n, m] = x.dims();
        let h = self.norm_spatial.forward(x.clone()).reshape([b * t, n, m]); // [b·t, n, m]
        let spatial = self.attn_spatial.forward(h).reshape([b, t, n, m]); // [b, t, n, m]
        let h = self.norm_temporal.forward(x + spatial.clone()).swap_dims(1, 2); // [b, n, t, m]
        let h = self.attn_temporal.forward(h.reshape([b * n, t, m])); // [b·n, t, m]
        let temporal = h.reshape([b, n, t, m]).swap_dims(1, 2); // [b, t, n, m]
        spatial + temporal
    }
}
