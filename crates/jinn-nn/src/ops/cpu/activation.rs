//! Elementwise activations as differentiable ops on the CPU backend.
//!
//! [`activation`] registers `f(x)` for an [`Elementwise`] `f` through a Burn backend extension:
//! the forward reads the input's storage in place and computes `f(x)` and `f'(x)` in one
//! vectorised, multi-threaded pass ([`super::math`]) into buffers that become tensors without a
//! copy; the tape keeps only `f'(x)`, and the backward is one parallel multiplication
//! `g·f'(x)`. The earlier form (a tangent line of two taped ops on tensors copied out of the
//! backend and back in) took four more passes over the activations in the forward.
//!
//! Written by hand because Burn's autodiff has no fused elementwise op with a known derivative.

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::flex::FlexTensor;
use burn::backend::tensor::FloatTensor;
use burn::backend::{backend_extension, Autodiff, Backend, Dispatch, Flex};
use burn::tensor::{Tensor, TensorData};

use super::math::{f32_storage, product_vec, value_and_slope_vecs, Elementwise};

/// `f(x)` elementwise, any shape, as one op. CPU backend, f32 only.
pub(in crate::ops) fn activation<const D: usize>(f: Elementwise, x: Tensor<D>) -> Tensor<D> {
    let gelu = match f {
        Elementwise::GeluTanh => true,
        Elementwise::Sigmoid => false,
    };
    Tensor::from_dispatch(<Dispatch as FusedActivation>::fused_activation(x.into_dispatch(), gelu))
}

/// The fused activation as a Burn backend extension (flex, and autodiff over flex), for f32
/// tensors.
#[backend_extension(Flex, Autodiff)]
pub trait FusedActivation: Backend {
    /// Tanh-GELU (`gelu`) or the logistic function of `x`, elementwise.
    fn fused_activation(x: FloatTensor<Self>, gelu: bool) -> FloatTensor<Self>;
}

impl FusedActivation for Flex {
    fn fused_activation(x: FlexTensor, gelu: bool) -> FlexTensor {
        value_and_slope_tensors(&x, gelu).0
    }
}

/// `f(x)` and `f'(x)` as contiguous tensors of `x`'s shape.
fn value_and_slope_tensors(x: &FlexTensor, gelu: bool) -> (FlexTensor, FlexTensor) {
    let f = if gelu { Elementwise::GeluTanh } else { Elementwise::Sigmoid };
    let x = x.to_contiguous();
    let xs = f32_storage(&x);
    let (value, slope) = value_and_slope_vecs(f, xs);
    let shape = x.layout().shape().clone();
    let tensor = |v: Vec<f32>| FlexTensor::from_data(TensorData::new(v, shape.clone()));
    (tensor(value), tensor(slope))
}

/// The backward of the fused op; its state is `f'(x)`.
#[derive(Debug)]
struct ActivationBackward;

impl Backward<Flex, 1> for ActivationBackward {
    type State = FlexTensor;

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _checkpointer: &mut Checkpointer) {
        let [x_node] = ops.parents;
        let grad = grads.consume::<Flex>(&ops.node).to_contiguous();
        if let Some(node) = x_node {
            let slope = ops.state; // contiguous
            let shape = slope.layout().shape().clone();
            let dx = product_vec(f32_storage(&grad), f32_storage(&slope));
            grads.register::<Flex>(node.id, FlexTensor::from_data(TensorData::new(dx, shape)));
        }
    }
}

impl<C: CheckpointStrategy> FusedActivation for Autodiff<Flex, C> {
    fn fused_activation(x: FloatTensor<Self>, gelu: bool) -> FloatTensor<Self> {
        let x_node = x.node();
        let x = x.into_primitive();
        match ActivationBackward.prepare::<C>([x_node]).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let (value, slope) = value_and_slope_tensors(&x, gelu);
                prep.finish(slope, value)
            }
            OpsKind::UnTracked(prep) => prep.finish(Flex::fused_activation(x, gelu)),
        }
    }
}
