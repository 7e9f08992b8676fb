//! Layer normalisation as one differentiable op on the CPU backend.
//!
//! Under autodiff Burn 0.22 builds `LayerNorm` from nine taped tensor ops (mean, centre, square,
//! mean, add ε, square root, divide, scale, shift), each a single-threaded pass over the
//! activations, and their backward is about fifteen more passes. Flex has a fused, SIMD,
//! multi-threaded layer-norm kernel, but autodiff never reaches it. [`layer_norm`] registers
//! the whole normalisation as one op through a Burn backend extension: the forward is a host
//! pass like flex's fused kernel ([`layer_norm_rows`], without its serial zero-fill), and the
//! backward is a hand-written host pass ([`layer_norm_backward_rows`]) that yields the input,
//! scale and shift gradients together.
//!
//! Written by hand because Burn's autodiff has no fused layer-norm backward.

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::flex::FlexTensor;
use burn::backend::tensor::FloatTensor;
use burn::backend::{backend_extension, Autodiff, Backend, Dispatch, Flex};
use burn::tensor::{Tensor, TensorData};

use super::fill::par_fill;
use super::math::{avx2_dispatch, f32_storage, lane_sums};
use crate::init::LAYER_NORM_EPS;

/// `γ·(x − μ)/√(σ² + ε) + β` over the last axis of `x` (any rank), ε = [`LAYER_NORM_EPS`], as
/// one fused op (see the module docs). CPU backend, f32 only.
pub(in crate::ops) fn layer_norm<const D: usize>(
    x: Tensor<D>,
    gamma: Tensor<1>,
    beta: Tensor<1>,
) -> Tensor<D> {
    let out = <Dispatch as FusedLayerNorm>::fused_layer_norm(
        x.into_dispatch(),
        gamma.into_dispatch(),
        beta.into_dispatch(),
    );
    Tensor::from_dispatch(out)
}

/// The fused layer norm as a Burn backend extension (flex, and autodiff over flex), for f32
/// tensors: the backward reads its inputs as f32 (the door routes nothing else here).
#[backend_extension(Flex, Autodiff)]
pub trait FusedLayerNorm: Backend {
    /// `γ·(x − μ)/√(σ² + ε) + β` over the last axis, ε = [`LAYER_NORM_EPS`].
    fn fused_layer_norm(
        x: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        beta: FloatTensor<Self>,
    ) -> FloatTensor<Self>;
}

impl FusedLayerNorm for Flex {
    fn fused_layer_norm(x: FlexTensor, gamma: FlexTensor, beta: FlexTensor) -> FlexTensor {
        let (x, gamma, beta) = (x.to_contiguous(), gamma.to_contiguous(), beta.to_contiguous());
        let shape = x.layout().shape().clone();
        let out =
            layer_norm_rows(f32_storage(&x), f32_storage(&gamma), f32_storage(&beta), LAYER_NORM_EPS as f32);
        FlexTensor::from_data(TensorData::new(out, shape))
    }
}

/// The backward of the fused op; its state is the input and the scale.
#[derive(Debug)]
struct LayerNormBackward;

impl Backward<Flex, 3> for LayerNormBackward {
    type State = (FlexTensor, FlexTensor);

    fn backward(self, ops: Ops<Self::State, 3>, grads: &mut Gradients, _checkpointer: &mut Checkpointer) {
        let [x_node, gamma_node, beta_node] = ops.parents;
        let grad = grads.consume::<Flex>(&ops.node);
        let (x, gamma) = ops.state;
        let shape = x.layout().shape().clone();
        let d = gamma.layout().shape()[0];
        let (x, grad, gamma) = (x.to_contiguous(), grad.to_contiguous(), gamma.to_contiguous());
        let (dx, dgamma, dbeta) = layer_norm_backward_rows(
            f32_storage(&x),
            f32_storage(&grad),
            f32_storage(&gamma),
            LAYER_NORM_EPS as f32,
        );
        let tensor = |v: Vec<f32>, shape| FlexTensor::from_data(TensorData::new(v, shape));
        if let Some(node) = x_node {
            grads.register::<Flex>(node.id, tensor(dx, shape));
        }
        if let Some(node) = gamma_node {
            grads.register::<Flex>(node.id, tensor(dgamma, vec![d].into()));
        }
        if let Some(node) = beta_node {
            grads.register::<Flex>(node.id, tensor(dbeta, vec![d].into()));
        }
    }
}

impl<C: CheckpointStrategy> FusedLayerNorm for Autodiff<Flex, C> {
    fn fused_layer_norm(
        x: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        beta: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        let nodes = [x.node(), gamma.node(), beta.node()];
        // One contiguous copy of a strided input, shared by the forward and the backward.
        let x = x.into_primitive().to_contiguous();
        let (gamma, beta) = (gamma.into_primitive(), beta.into_primitive());
        match LayerNormBackward.prepare::<C>(nodes).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let out = Flex::fused_layer_norm(x.clone(), gamma.clone(), beta);
                prep.finish((x, gamma), out)
            }
            OpsKind::UnTracked(prep) => prep.finish(Flex::fused_layer_norm(x, gamma, beta)),
        }
    }
}

/// Rows per rayon task of the backward.
const ROWS_PER_TASK: usize = 64;

/// The layer-norm forward over rows of `γ.len()` features: `γ·(x − μ)·r + β` per row, with
/// `r = 1/√(σ² + ε)` and the variance in two passes (as flex's kernel and the backward), into a
/// new vector written by parallel tasks (no serial zero-fill; flex's own kernel has one).
fn layer_norm_rows(x: &[f32], gamma: &[f32], beta: &[f32], eps: f32) -> Vec<f32> {
    let d = gamma.len();
    assert!(d > 0 && x.len().is_multiple_of(d) && beta.len() == d);
    let chunk = ROWS_PER_TASK * d;
    let ([out], _) = par_fill([x.len()], [chunk], 1, |i, [out]| {
        rows_forward(&x[i * chunk..][..out.len()], gamma, beta, eps, out)
    });
    out
}

avx2_dispatch! {
    /// The rows of one forward task (see [`rows_forward_body`]).
    fn rows_forward = rows_forward_body(x: &[f32], gamma: &[f32], beta: &[f32], eps: f32, out: &mut [f32])
}

/// Rows of [`layer_norm_rows`].
#[inline(always)]
fn rows_forward_body(x: &[f32], gamma: &[f32], beta: &[f32], eps: f32, out: &mut [f32]) {
    let d = gamma.len();
    let n = d as f32;
    let (gamma, beta) = (&gamma[..d], &beta[..d]);
    for (x, out) in x.chunks_exact(d).zip(out.chunks_exact_mut(d)) {
        let (x, out) = (&x[..d], &mut out[..d]);
        let mean = lane_sums(x, x, x, |x, _, _| (x, 0.0)).0 / n;
        let sq = lane_sums(x, x, x, |x, _, _| ((x - mean) * (x - mean), 0.0)).0;
        let r = 1.0 / (sq / n + eps).sqrt();
        for i in 0..d {
            out[i] = (x[i] - mean) * r * gamma[i] + beta[i];
        }
    }
}

/// The layer-norm backward over rows of `γ.len()` features: returns `(∂L/∂x, ∂L/∂γ, ∂L/∂β)`
/// for the upstream gradient `g`. Per row, with `x̂ = (x − μ)·r`, `r = 1/√(σ² + ε)` and
/// `h = g·γ`: `∂L/∂x = r·(h − mean(h) − x̂·mean(h·x̂))`; `∂L/∂γ = Σ g·x̂` and `∂L/∂β = Σ g`
/// over rows. The column sums are added task by task in order, so the result does not depend
/// on how rayon splits the work.
fn layer_norm_backward_rows(x: &[f32], g: &[f32], gamma: &[f32], eps: f32) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let d = gamma.len();
    assert!(d > 0 && x.len().is_multiple_of(d) && g.len() == x.len());
    let chunk = ROWS_PER_TASK * d;
    let ([dx], partial) = par_fill([x.len()], [chunk], 1, |i, [dx]| {
        let (x, g) = (&x[i * chunk..][..dx.len()], &g[i * chunk..][..dx.len()]);
        let mut dgamma = vec![0.0f32; d];
        let mut dbeta = vec![0.0f32; d];
        rows_backward(Rows { x, g, gamma, eps, dx, dgamma: &mut dgamma, dbeta: &mut dbeta });
        (dgamma, dbeta)
    });
    let mut dgamma = vec![0.0f32; d];
    let mut dbeta = vec![0.0f32; d];
    for (pg, pb) in partial {
        dgamma.iter_mut().zip(&pg).for_each(|(a, b)| *a += b);
        dbeta.iter_mut().zip(&pb).for_each(|(a, b)| *a += b);
    }
    (dx, dgamma, dbeta)
}

/// One rayon task of the backward: its rows of `x`, `g` and `dx`, and its column sums.
struct Rows<'a> {
    x: &'a [f32],
    g: &'a [f32],
    gamma: &'a [f32],
    eps: f32,
    dx: &'a mut [f32],
    dgamma: &'a mut [f32],
    dbeta: &'a mut [f32],
}

avx2_dispatch! {
    /// The rows of one task (see [`rows_backward_body`]).
    fn rows_backward = rows_backward_body(rows: Rows)
}

/// Rows of [`layer_norm_backward_rows`], accumulating into the column sums.
#[inline(always)]
fn rows_backward_body(rows: Rows) {
    let Rows { x, g, gamma, eps, dx, dgamma, dbeta } = rows;
    let d = gamma.len();
    let n = d as f32;
    let (gamma, dgamma, dbeta) = (&gamma[..d], &mut dgamma[..d], &mut dbeta[..d]);
    for ((x, g), dx) in x.chunks_exact(d).zip(g.chunks_exact(d)).zip(dx.chunks_exact_mut(d)) {
        let (x, g, dx) = (&x[..d], &g[..d], &mut dx[..d]);
        let (sum, _) = lane_sums(x, g, gamma, |x, _, _| (x, 0.0));
        let mean = sum / n;
        // Two passes for the variance, as flex's forward kernel.
        let (sq, sum_h) = lane_sums(x, g, gamma, |x, g, gamma| ((x - mean) * (x - mean), g * gamma));
        let r = 1.0 / (sq / n + eps).sqrt();
        let (sum_hc, _) = lane_sums(x, g, gamma, |x, g, gamma| (g * gamma * (x - mean), 0.0));
        let (mean_h, mean_hx) = (sum_h / n, sum_hc * r / n);
        for i in 0..d {
            let xhat = (x[i] - mean) * r;
            dgamma[i] += g[i] * xhat;
            dbeta[i] += g[i];
            dx[i] = r * (g[i] * gamma[i] - mean_h - xhat * mean_hx);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::layer_norm_backward_rows;

    /// The backward kernel against the same formulas in f64, row by row.
    #[test]
    fn backward_rows_match_an_f64_reference() {
        let (rows, d) = (150, 37); // 37 features: the 8-lane sums have a tail
        let val = |i: usize, k: f64| ((i as f64 * k).sin() * 2.0) as f32;
        let x: Vec<f32> = (0..rows * d).map(|i| val(i, 0.37) + 0.5).collect();
        let g: Vec<f32> = (0..rows * d).map(|i| val(i, 1.13)).collect();
        let gamma: Vec<f32> = (0..d).map(|i| 1.0 + val(i, 0.71) / 4.0).collect();
        let eps = 1e-6;
        let (dx, dgamma, dbeta) = layer_norm_backward_rows(&x, &g, &gamma, eps);

        let (mut dgamma64, mut dbeta64) = (vec![0.0f64; d], vec![0.0f64; d]);
        for r in 0..rows {
            let xr: Vec<f64> = x[r * d..(r + 1) * d].iter().map(|&v| v as f64).collect();
            let gr: Vec<f64> = g[r * d..(r + 1) * d].iter().map(|&v| v as f64).collect();
            let n = d as f64;
            let mean = xr.iter().sum::<f64>() / n;
            let var = xr.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
            let rs = 1.0 / (var + eps as f64).sqrt();
            let xhat: Vec<f64> = xr.iter().map(|v| (v - mean) * rs).collect();
            let h: Vec<f64> = (0..d).map(|i| gr[i] * gamma[i] as f64).collect();
            let mean_h = h.iter().sum::<f64>() / n;
            let mean_hx = (0..d).map(|i| h[i] * xhat[i]).sum::<f64>() / n;
            for i in 0..d {
                let want = rs * (h[i] - mean_h - xhat[i] * mean_hx);
                assert!((dx[r * d + i] as f64 - want).abs() < 1e-4 * (1.0 + want.abs()), "dx[{r}, {i}]");
                dgamma64[i] += gr[i] * xhat[i];
                dbeta64[i] += gr[i];
            }
        }
        for i in 0..d {
            assert!((dgamma[i] as f64 - dgamma64[i]).abs() < 1e-3 * (1.0 + dgamma64[i].abs()), "dgamma[{i}]");
            assert!((dbeta[i] as f64 - dbeta64[i]).abs() < 1e-3 * (1.0 + dbeta64[i].abs()), "dbeta[{i}]");
        }
    }
}
