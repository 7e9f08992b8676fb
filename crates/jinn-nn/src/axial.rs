//! Axial ("ST") transformer: spatial attention within each frame, temporal attention across
//! frames for each token position, and an FFN (Jasmine's `AxialTransformer`, `jasmine/utils/nn.py`).
//!
//! Activation rematerialisation: Jasmine wraps every block in `nnx.remat`. Burn 0.22 has no
//! per-segment checkpoint API; recomputation is a property of the autodiff device
//! (`Device::flex().autodiff().gradient_checkpointing()`, the `Balanced` strategy, which
//! recomputes memory-bound ops and keeps matmul outputs). The trainer chooses it when it
//! builds the device. Per-block recomputation (keep only each block's input) is the reversible
//! engine's `Mode::StoreInputs` over the blocks, between [`AxialTransformer::stem`] and
//! [`AxialTransformer::head`] (the tokenizer's `model.remat`).

use burn::config::Config;
use burn::module::Module;
use burn::nn::{LayerNorm, Linear};

use burn::tensor::{Device, Tensor};

use crate::attention::MultiHeadAttention;
use crate::axial_step::{attention_layers, AttentionStep, FfnStep};
use crate::error::NnError;
use crate::init;
use crate::ops::{layer_norm, linear_rows};
use crate::position::add_spatiotemporal_pe;

/// Configuration of one [`AxialBlock`].
#[derive(Config, Debug)]
pub struct AxialBlockConfig {
    /// Model width `M`.
    pub d_model: usize,
    /// FFN hidden width `D`.
    pub d_ffn: usize,
    /// Attention heads (must divide `M`).
    pub num_heads: usize,
    /// Causal attention over the N tokens of a frame (false for tokenizer/LAM/MaskGIT).
    #[config(default = false)]
    pub spatial_causal: bool,
    /// Causal attention over the T frames (true everywhere in Jasmine).
    #[config(default = true)]
    pub temporal_causal: bool,
}

impl AxialBlockConfig {
    /// Builds the block (LayerNorms scale 1 / bias 0 / eps 1e-6, LeCun-normal kernels, zero biases).
    pub fn init(&self, device: &Device) -> Result<AxialBlock, NnError> {
        let (m, heads) = (self.d_model, self.num_heads);
        let (norm_spatial, attn_spatial) = attention_layers(m, heads, self.spatial_causal, device)?;
        let (norm_temporal, attn_temporal) = attention_layers(m, heads, self.temporal_causal, device)?;
        Ok(AxialBlock {
            norm_spatial,
            attn_spatial,
            norm_temporal,
            attn_temporal,
            norm_ffn: init::layer_norm(m, device),
            ffn_in: init::linear(m, self.d_ffn, device),
            ffn_out: init::linear(self.d_ffn, m, device),
        })
    }
}

/// Pre-norm axial block with three residual sub-layers: spatial attention, temporal
/// attention, FFN (`M → D → M`, tanh-GELU).
#[derive(Module, Debug)]
pub struct AxialBlock {
    /// LayerNorm before spatial attention.
    pub norm_spatial: LayerNorm,
    /// Attention over the N axis, per (b, t).
    pub attn_spatial: MultiHeadAttention,
    /// LayerNorm before temporal attention.
    pub norm_temporal: LayerNorm,
    /// Attention over the T axis, per (b, n).
    pub attn_temporal: MultiHeadAttention,
    /// LayerNorm before the FFN.
    pub norm_ffn: LayerNorm,
    /// FFN input projection `M → D`.
    pub ffn_in: Linear,
    /// FFN output projection `D → M`.
    pub ffn_out: Linear,
}

impl AxialBlock {
    /// `x` `[B, T, N, M]` → `[B, T, N, M]`: the three residual sub-layers in turn.
    pub fn forward(&self, x: Tensor<4>) -> Tensor<4> {
        let x = x.clone() + self.spatial().over_tokens(x); // [b, t, n, m]
        let x = x.clone() + self.temporal().over_frames(x); // [b, t, n, m]
        x.clone() + self.ffn().apply(x) // [b, t, n, m]
    }

    /// The spatial attention sub-layer's layers.
    pub fn spatial(&self) -> AttentionStep<'_> {
        AttentionStep { norm: &self.norm_spatial, attn: &self.attn_spatial }
    }

    /// The temporal attention sub-layer's layers.
    pub fn temporal(&self) -> AttentionStep<'_> {
        AttentionStep { norm: &self.norm_temporal, attn: &self.attn_temporal }
    }

    /// The FFN sub-layer's layers.
    pub fn ffn(&self) -> FfnStep<'_> {
        FfnStep { norm: &self.norm_ffn, up: &self.ffn_in, down: &self.ffn_out }
    }
}

/// Configuration of an [`AxialTransformer`] (`I → M → … → O`).
#[derive(Config, Debug)]
pub struct AxialTransformerConfig {
    /// Input width `I`.
    pub d_input: usize,
    /// Model width `M`.
    pub d_model: usize,
    /// FFN hidden width `D`.
    pub d_ffn: usize,
    /// Output width `O`.
    pub d_output: usize,
    /// Number of axial blocks.
    pub num_blocks: usize,
    /// Attention heads (must divide `M`).
    pub num_heads: usize,
    /// Causal spatial attention.
    #[config(default = false)]
    pub spatial_causal: bool,
    /// Causal temporal attention.
    #[config(default = true)]
    pub temporal_causal: bool,
}

impl AxialTransformerConfig {
    /// Builds the transformer with flax NNX's default initialisers (see [`crate::init`]).
    pub fn init(&self, device: &Device) -> Result<AxialTransformer, NnError> {
        let block = AxialBlockConfig::new(self.d_model, self.d_ffn, self.num_heads)
            .with_spatial_causal(self.spatial_causal)
            .with_temporal_causal(self.temporal_causal);
        let blocks = (0..self.num_blocks).map(|_| block.init(device)).collect::<Result<Vec<_>, _>>()?;
        Ok(AxialTransformer {
            norm_in: init::layer_norm(self.d_input, device),
            proj_in: init::linear(self.d_input, self.d_model, device),
            norm_model: init::layer_norm(self.d_model, device),
            blocks,
            proj_out: init::linear(self.d_model, self.d_output, device),
        })
    }
}

/// Stem `LN → Linear(I→M) → LN → +PE`, then the axial blocks, then `Linear(M→O)`
/// (no final LayerNorm).
#[derive(Module, Debug)]
pub struct AxialTransformer {
    /// LayerNorm over the input width `I`.
    pub norm_in: LayerNorm,
    /// Input projection `I → M`.
    pub proj_in: Linear,
    /// LayerNorm over `M` after the input projection.
    pub norm_model: LayerNorm,
    /// The axial blocks.
    pub blocks: Vec<AxialBlock>,
    /// Output projection `M → O`.
    pub proj_out: Linear,
}

impl AxialTransformer {
    /// `x` `[B, T, N, I]` → `[B, T, N, O]`.
    pub fn forward(&self, x: Tensor<4>) -> Tensor<4> {
        let mut x = self.stem(x); // [b, t, n, m]
        for block in &self.blocks {
            x = block.forward(x); // [b, t, n, m]
        }
        self.head(x) // [b, t, n, o]
    }

    /// The part before the blocks: `x` `[B, T, N, I]` → `LN → Linear → LN → +PE` `[B, T, N, M]`
    /// (split out so a trainer can run the blocks through the reversible engine).
    pub fn stem(&self, x: Tensor<4>) -> Tensor<4> {
        let x = layer_norm(&self.norm_in, x); // [b, t, n, i]
        let x = layer_norm(&self.norm_model, linear_rows(&self.proj_in, x)); // [b, t, n, m]
        add_spatiotemporal_pe(x) // [b, t, n, m]
    }

    /// The part after the blocks: `[B, T, N, M]` → `Linear(M→O)` `[B, T, N, O]`.
    pub fn head(&self, x: Tensor<4>) -> Tensor<4> {
        linear_rows(&self.proj_out, x) // [b, t, n, o]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::to_vec;
    use burn::tensor::Distribution;

    fn small(device: &Device) -> AxialTransformer {
        AxialTransformerConfig::new(6, 16, 32, 5, 2, 4).init(device).unwrap()
    }

    #[test]
    fn shapes() {
        let device = Device::flex();
        let model = small(&device);
        let x = Tensor::<4>::random([2, 3, 4, 6], Distribution::Normal(0.0, 1.0), &device);
        assert_eq!(model.forward(x).dims(), [2, 3, 4, 5]);
    }

    #[test]
    fn temporal_attention_is_causal() {
        let device = Device::flex();
        let model = small(&device);
        let (b, t, n, i) = (2, 4, 3, 6);
        let x = Tensor::<4>::random([b, t, n, i], Distribution::Normal(0.0, 1.0), &device);
        let y = model.forward(x.clone());
        let cut = 2; // frames ≥ cut are changed
        let noise = Tensor::<4>::random([b, t - cut, n, i], Distribution::Normal(0.0, 1.0), &device);
        let x2 = x.slice_assign([0..b, cut..t, 0..n, 0..i], noise);
        let y2 = model.forward(x2);
        let early = |y: Tensor<4>| to_vec(y.slice([0..b, 0..cut, 0..n, 0..5]));
        let late = |y: Tensor<4>| to_vec(y.slice([0..b, cut..t, 0..n, 0..5]));
        assert_eq!(early(y.clone()), early(y2.clone()), "frames < cut must not see later frames");
        assert_ne!(late(y), late(y2));
    }

    #[test]
    fn spatial_attention_sees_every_token_of_the_frame() {
        let device = Device::flex();
        let model = small(&device);
        let (b, t, n, i) = (1, 2, 4, 6);
        let x = Tensor::<4>::random([b, t, n, i], Distribution::Normal(0.0, 1.0), &device);
        let y = to_vec(model.forward(x.clone()));
        // Change only the last token of frame 0: every token of frame 0 must change.
        let noise = Tensor::<4>::random([1, 1, 1, i], Distribution::Normal(0.0, 1.0), &device);
        let x2 = x.slice_assign([0..1, 0..1, n - 1..n, 0..i], noise);
        let y2 = to_vec(model.forward(x2));
        let o = 5;
        for tok in 0..n {
            let r = tok * o..(tok + 1) * o;
            assert_ne!(y[r.clone()], y2[r], "token {tok} of frame 0 did not see the change");
        }
    }

    #[test]
    fn spatial_causal_option_hides_later_tokens() {
        let device = Device::flex();
        let model =
            AxialTransformerConfig::new(6, 16, 32, 5, 1, 2).with_spatial_causal(true).init(&device).unwrap();
        let (b, t, n, i) = (1, 2, 4, 6);
        let x = Tensor::<4>::random([b, t, n, i], Distribution::Normal(0.0, 1.0), &device);
        let y = model.forward(x.clone());
        let noise = Tensor::<4>::random([b, t, 1, i], Distribution::Normal(0.0, 1.0), &device);
        let y2 = model.forward(x.slice_assign([0..b, 0..t, n - 1..n, 0..i], noise));
        let first = |y: Tensor<4>| to_vec(y.slice([0..b, 0..t, 0..n - 1, 0..5]));
        assert_eq!(first(y), first(y2));
    }

    /// The block, written out inline from its layers: pre-normed spatial attention, temporal
    /// attention and FFN, each added to the stream.
    fn inline_block(block: &AxialBlock, x: Tensor<4>) -> Tensor<4> {
        use crate::ops::gelu_tanh;
        let [b, t, n, m] = x.dims();
        let h = layer_norm(&block.norm_spatial, x.clone()).reshape([b * t, n, m]); // [b·t, n, m]
        let x = x + block.attn_spatial.forward(h).reshape([b, t, n, m]); // [b, t, n, m]
        let h = layer_norm(&block.norm_temporal, x.clone()).swap_dims(1, 2).reshape([b * n, t, m]); // [b·n, t, m]
        let x = x + block.attn_temporal.forward(h).reshape([b, n, t, m]).swap_dims(1, 2); // [b, t, n, m]
        let h = linear_rows(&block.ffn_in, layer_norm(&block.norm_ffn, x.clone())); // [b, t, n, d]
        x + linear_rows(&block.ffn_out, gelu_tanh(h)) // [b, t, n, m]
    }

    /// The block is the composition of its three sub-layer steps, to the bit, values and
    /// input gradients.
    #[test]
    fn block_equals_its_sub_layers_written_inline() {
        let device = Device::flex().autodiff();
        for causal in [false, true] {
            let block = AxialBlockConfig::new(16, 32, 4).with_spatial_causal(causal).init(&device).unwrap();
            let x = Tensor::<4>::random([2, 3, 5, 16], Distribution::Normal(0.0, 1.0), &device);
            let w = Tensor::<4>::random([2, 3, 5, 16], Distribution::Normal(0.0, 1.0), &device);
            let run = |f: &dyn Fn(Tensor<4>) -> Tensor<4>| {
                let x = x.clone().detach().require_grad();
                let y = f(x.clone());
                let grads = (y.clone() * w.clone()).sum().backward();
                (to_vec(y), to_vec(x.grad(&grads).unwrap()))
            };
            let steps = run(&|x| block.forward(x));
            let inline = run(&|x| inline_block(&block, x));
            assert_eq!(steps, inline, "spatial causal {causal}");
        }
    }

    #[test]
    fn gradients_flow_with_checkpointing_device() {
        let device = Device::flex().autodiff().gradient_checkpointing();
        let model = small(&device);
        let x = Tensor::<4>::random([1, 2, 3, 6], Distribution::Normal(0.0, 1.0), &device);
        let grads = model.forward(x).powi_scalar(2).mean().backward();
        let g = to_vec(model.blocks[0].ffn_in.weight.val().grad(&grads).unwrap());
        assert!(g.iter().all(|v| v.is_finite()) && g.iter().any(|v| *v != 0.0));
    }
}
