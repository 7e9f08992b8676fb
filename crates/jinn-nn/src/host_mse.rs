//! Mean squared error as one differentiable op on the CPU backend.
//!
//! `(pred − target).powi_scalar(2).mean()` is three single-threaded passes over the whole
//! prediction in the forward (the LAM's and tokenizer's pixel losses: 1.5 M values per
//! jasmine-small step) and four more in the backward (fill, square's derivative, scale,
//! difference). [`mean_squared_error`] registers the loss as one op through a Burn backend
//! extension: the forward is one parallel reduction that keeps no buffer, and the backward
//! writes `2·(pred − target)·g/n` in one parallel pass. GPU backends and bf16 keep the Burn-op
//! formulation. Written by hand because Burn's autodiff has no fused loss op.

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::flex::FlexTensor;
use burn::backend::tensor::FloatTensor;
use burn::backend::{backend_extension, Autodiff, Backend, Dispatch, Flex};
use burn::tensor::{Tensor, TensorData};
use rayon::prelude::*;

use crate::host_fill::par_fill;
use crate::host_math::{f32_storage, runs_on_host};

/// Elements per rayon task.
const CHUNK: usize = 16 * 1024;

/// `mean((pred − target)²)` over every element → `[1]`. One fused op on the CPU backend in f32
/// for operands of one shape (see the module docs); elsewhere Burn's ops (which also
/// broadcast).
pub fn mean_squared_error<const D: usize>(pred: Tensor<D>, target: Tensor<D>) -> Tensor<1> {
    if !(runs_on_host(&pred) && runs_on_host(&target)) || pred.dims() != target.dims() {
        return (pred - target).powi_scalar(2).mean();
    }
    Tensor::from_dispatch(<Dispatch as FusedMse>::fused_mse(pred.into_dispatch(), target.into_dispatch()))
}

/// The fused loss as a Burn backend extension (flex, and autodiff over flex), for f32 tensors
/// of one shape ([`mean_squared_error`] routes nothing else here).
#[backend_extension(Flex, Autodiff)]
pub trait FusedMse: Backend {
    /// `mean((pred − target)²)` → `[1]`.
    fn fused_mse(pred: FloatTensor<Self>, target: FloatTensor<Self>) -> FloatTensor<Self>;
}

impl FusedMse for Flex {
    fn fused_mse(pred: FlexTensor, target: FlexTensor) -> FlexTensor {
        let (pred, target) = (pred.to_contiguous(), target.to_contiguous());
        let value = mean_square_difference(f32_storage(&pred), f32_storage(&target));
        FlexTensor::from_data(TensorData::new(vec![value], [1]))
    }
}

/// `Σ (p − t)² / n` with per-task partial sums in f64, added in task order (so the value does
/// not depend on how rayon splits the work); NaN for empty operands, which have no mean.
pub fn mean_square_difference(pred: &[f32], target: &[f32]) -> f32 {
    assert_eq!(pred.len(), target.len(), "mean_square_difference: length mismatch");
    if pred.is_empty() {
        return f32::NAN;
    }
    let partial: Vec<f64> = pred
        .par_chunks(CHUNK)
        .zip(target.par_chunks(CHUNK))
        .map(|(p, t)| p.iter().zip(t).map(|(p, t)| ((p - t) * (p - t)) as f64).sum())
        .collect();
    (partial.iter().sum::<f64>() / pred.len() as f64) as f32
}

/// The backward of the fused op; its state is the two (contiguous) operands.
#[derive(Debug)]
struct MseBackward;

impl Backward<Flex, 2> for MseBackward {
    type State = (FlexTensor, FlexTensor);

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, _checkpointer: &mut Checkpointer) {
        let [pred_node, target_node] = ops.parents;
        let grad = grads.consume::<Flex>(&ops.node).to_contiguous(); // [1]
        let (pred, target) = ops.state;
        let (p, t) = (f32_storage(&pred), f32_storage(&target));
        // ∂L/∂pred = 2·(pred − target)·g / n; ∂L/∂target is its negative.
        let scale = 2.0 * f32_storage(&grad)[0] / p.len() as f32;
        let shape = pred.layout().shape().clone();
        let ([d_pred], _) = par_fill([p.len()], [CHUNK], 1, |i, [d]| {
            let (p, t) = (&p[i * CHUNK..][..d.len()], &t[i * CHUNK..][..d.len()]);
            d.iter_mut().zip(p.iter().zip(t)).for_each(|(d, (p, t))| *d = (p - t) * scale);
        });
        if let Some(node) = target_node {
            let ([d_target], _) = par_fill([p.len()], [CHUNK], 1, |i, [d]| {
                let src = &d_pred[i * CHUNK..][..d.len()];
                d.iter_mut().zip(src).for_each(|(d, s)| *d = -s);
            });
            grads.register::<Flex>(node.id, FlexTensor::from_data(TensorData::new(d_target, shape.clone())));
        }
        if let Some(node) = pred_node {
            grads.register::<Flex>(node.id, FlexTensor::from_data(TensorData::new(d_pred, shape)));
        }
    }
}

impl<C: CheckpointStrategy> FusedMse for Autodiff<Flex, C> {
    fn fused_mse(pred: FloatTensor<Self>, target: FloatTensor<Self>) -> FloatTensor<Self> {
        let nodes = [pred.node(), target.node()];
        let pred = pred.into_primitive().to_contiguous();
        let target = target.into_primitive().to_contiguous();
        match MseBackward.prepare::<C>(nodes).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let out = Flex::fused_mse(pred.clone(), target.clone());
                prep.finish((pred, target), out)
            }
            OpsKind::UnTracked(prep) => prep.finish(Flex::fused_mse(pred, target)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::to_vec;
    use burn::tensor::{Device, Distribution};

    /// Loss and both gradients of `f(pred, target)`.
    fn value_and_grads(
        pred: &Tensor<3>,
        target: &Tensor<3>,
        f: impl Fn(Tensor<3>, Tensor<3>) -> Tensor<1>,
    ) -> (f32, Vec<f32>, Vec<f32>) {
        let (p, t) = (pred.clone().detach().require_grad(), target.clone().detach().require_grad());
        let loss = f(p.clone(), t.clone());
        let grads = (loss.clone() * 3.0).backward();
        (to_vec(loss)[0], to_vec(p.grad(&grads).unwrap()), to_vec(t.grad(&grads).unwrap()))
    }

    #[test]
    fn value_and_gradients_match_an_f64_reference() {
        let device = Device::flex().autodiff();
        // 40 000 values: three rayon tasks, the last one partial; the target read strided.
        let pred = Tensor::<3>::random([8, 50, 100], Distribution::Normal(0.3, 1.0), &device);
        let target =
            Tensor::<3>::random([8, 100, 50], Distribution::Uniform(0.0, 1.0), &device).swap_dims(1, 2);
        let (value, d_pred, d_target) = value_and_grads(&pred, &target, mean_squared_error);
        let (p, t) = (to_vec(pred), to_vec(target));
        let n = p.len() as f64;
        let want: f64 = p.iter().zip(&t).map(|(p, t)| (*p as f64 - *t as f64).powi(2)).sum::<f64>() / n;
        assert!((value as f64 - want).abs() < 1e-6 * want, "loss {value} vs {want}");
        for i in 0..p.len() {
            // Upstream gradient 3: ∂/∂pred = 3·2·(p − t)/n.
            let g = 6.0 * (p[i] as f64 - t[i] as f64) / n;
            assert!((d_pred[i] as f64 - g).abs() < 1e-9 + 1e-5 * g.abs(), "d_pred[{i}] {} vs {g}", d_pred[i]);
            assert_eq!(d_target[i], -d_pred[i], "d_target[{i}]");
        }
    }

    #[test]
    fn matches_burns_composite() {
        let device = Device::flex().autodiff();
        let pred = Tensor::<3>::random([3, 7, 11], Distribution::Normal(0.0, 2.0), &device);
        let target = Tensor::<3>::random([3, 7, 11], Distribution::Normal(0.0, 2.0), &device);
        let fused = value_and_grads(&pred, &target, mean_squared_error);
        let composite = value_and_grads(&pred, &target, |p, t| (p - t).powi_scalar(2).mean());
        assert!((fused.0 - composite.0).abs() < 1e-5 * composite.0);
        for (a, b) in fused.1.iter().chain(&fused.2).zip(composite.1.iter().chain(&composite.2)) {
            assert!((a - b).abs() < 1e-6, "{a} vs {b}");
        }
    }
}
