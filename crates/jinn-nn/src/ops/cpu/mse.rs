//! Mean squared error as one differentiable op on the CPU backend.
//!
//! `(pred − target).powi_scalar(2).mean()` is three single-threaded passes over the whole
//! prediction in the forward (the LAM's and tokenizer's pixel losses: 1.5 M values per
//! jasmine-small step) and four more in the backward (fill, square's derivative, scale,
//! difference). [`mean_squared_error`] registers the loss as one op through a Burn backend
//! extension: the forward is one parallel reduction that keeps no buffer, and the backward
//! writes `2·(pred − target)·g/n` in one parallel pass. Written by hand because Burn's autodiff
//! has no fused loss op.

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::flex::FlexTensor;
use burn::backend::tensor::FloatTensor;
use burn::backend::{backend_extension, Autodiff, Backend, Dispatch, Flex};
use burn::tensor::{Tensor, TensorData};
use rayon::prelude::*;

use super::fill::par_fill;
use super::math::f32_storage;

/// Elements per rayon task.
const CHUNK: usize = 16 * 1024;

/// `mean((pred − target)²)` over every element of two operands of one shape → `[1]`, as one
/// fused op (see the module docs). CPU backend, f32 only.
pub(in crate::ops) fn mean_squared_error<const D: usize>(pred: Tensor<D>, target: Tensor<D>) -> Tensor<1> {
    Tensor::from_dispatch(<Dispatch as FusedMse>::fused_mse(pred.into_dispatch(), target.into_dispatch()))
}

/// The fused loss as a Burn backend extension (flex, and autodiff over flex), for f32 tensors
/// of one shape (the door routes nothing else here).
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
fn mean_square_difference(pred: &[f32], target: &[f32]) -> f32 {
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
