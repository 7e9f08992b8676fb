//! Layer normalisation over the last axis.
//!
//! On the CPU backend in f32, for a norm with a shift, it is the fused op of
//! [`super::cpu::layer_norm`] (one forward pass, one hand-written backward pass); elsewhere
//! Burn's `LayerNorm::forward`.

use burn::nn::LayerNorm;
use burn::tensor::Tensor;

use super::{cpu, on_cpu_f32};
use crate::init::LAYER_NORM_EPS;

/// `LayerNorm` over the last axis of `x` (any rank): `γ·(x − μ)/√(σ² + ε) + β`. `norm` must
/// come from [`crate::init::layer_norm`] (ε = [`LAYER_NORM_EPS`], which the CPU kernel
/// assumes: Burn keeps a module's ε private; debug builds check it).
pub fn layer_norm<const D: usize>(norm: &LayerNorm, x: Tensor<D>) -> Tensor<D> {
    let beta = match &norm.beta {
        Some(beta) if on_cpu_f32(&x) => beta.val(),
        _ => return norm.forward(x),
    };
    debug_assert_eq!(
        display_epsilon(norm),
        Some(LAYER_NORM_EPS),
        "ops::layer_norm needs a LayerNorm built by init::layer_norm (ε = {LAYER_NORM_EPS})"
    );
    cpu::layer_norm::layer_norm(x, norm.gamma.val(), beta)
}

/// The ε of `norm` as its `Display` shows it (`LayerNorm {d_model: 6, epsilon: 0.00001, …}`):
/// Burn keeps the field private. Debug builds only.
fn display_epsilon(norm: &LayerNorm) -> Option<f64> {
    let shown = norm.to_string();
    let rest = shown.split("epsilon: ").nth(1)?;
    rest.split([',', '}']).next()?.trim().parse().ok()
}

#[cfg(test)]
mod tests;
