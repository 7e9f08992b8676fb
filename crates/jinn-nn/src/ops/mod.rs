//! The operations model code calls, behind one door: dense layers on rows, layer norm,
//! attention, tanh-GELU, sigmoid, the pixel MSE and the token cross-entropy.
//!
//! Each function decides once per call whether jinn's CPU kernel ([`cpu`]: hand-written
//! differentiable ops for Burn's flex backend, f32 only) or Burn's own tensor ops run. The
//! kernel runs when the operands live on the CPU backend in f32 ([`on_cpu_f32`]); everything
//! else (GPU backends, bf16) takes the Burn-op path, which computes the same function and is
//! what a GPU user gets. The tests run both paths on the CPU and compare values and gradients.
//!
//! [`on_cpu`] is also the device check for the rest of the CPU thread policy (the warm pool of
//! [`crate::warm_pool`], a sampler's own rayon pool).

use burn::tensor::{DType, Device, Tensor};

mod activation;
mod attention;
mod cpu;
mod layer_norm;
mod linear;
mod mse;
#[cfg(all(test, feature = "wgpu"))]
mod on_wgpu;
mod xent;

pub use activation::{gelu_tanh, sigmoid};
pub use attention::{attention, attention_heads, attention_heads_masked, self_attention};
pub(crate) use attention::{merge_heads, split_heads};
pub use layer_norm::layer_norm;
pub use linear::linear_rows;
pub use mse::mean_squared_error;
pub use xent::{token_cross_entropy, TokenLosses};

/// Whether `device` is the CPU (flex) backend, with or without autodiff.
pub fn on_cpu(device: &Device) -> bool {
    device.clone().without_autodiff() == Device::flex()
}

/// Whether `x` lives on the CPU backend in f32: the operands the CPU kernels take.
pub fn on_cpu_f32<const D: usize>(x: &Tensor<D>) -> bool {
    on_cpu(&x.device()) && x.dtype() == DType::F32
}
