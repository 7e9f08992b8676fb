//! The block traits the engine drives: [`Block`] (any shape-preserving block: enough for the
//! stored-input mode) and [`ReversibleBlock`] (an exact inverse plus a fused
//! reconstruct-and-VJP step: needed for the memory-free mode).

use burn::module::Module;
use burn::optim::GradientsParams;
use burn::tensor::Tensor;

use super::grads::{accumulate, vjp, Lift};
use crate::axial::AxialBlock;

/// A shape-preserving block of a deep stack.
pub trait Block<const D: usize>: Module {
    /// `x` → `y`, same shape.
    fn forward(&self, x: Tensor<D>) -> Tensor<D>;
}

/// The result of one reverse step: the block's input and the gradient of the loss w.r.t. it.
#[derive(Debug, Clone)]
pub struct ReverseStep<const D: usize> {
    /// The reconstructed block input (plain tensor, no autodiff).
    pub input: Tensor<D>,
    /// Gradient of the loss w.r.t. the block input (plain tensor).
    pub grad_input: Tensor<D>,
}

/// A bijective block.
pub trait ReversibleBlock<const D: usize>: Block<D> {
    /// The exact inverse of [`Block::forward`].
    fn inverse(&self, y: Tensor<D>) -> Tensor<D>;

    /// One step of memory-free backprop on the training (autodiff) block: rebuild the input
    /// from the output `y`, recompute the block's functions on the tape, take the VJP with
    /// `grad_y` and add the parameter gradients into `grads`. `y`, `grad_y` and the returned
    /// tensors are plain (no autodiff); `lift` puts tensors on this block's graph.
    fn reverse_vjp(
        &self,
        y: Tensor<D>,
        grad_y: Tensor<D>,
        lift: &Lift,
        grads: &mut GradientsParams,
    ) -> ReverseStep<D>;
}

/// Stored-input step for any block: recompute `block` from its stored input `x` (plain) with
/// the tape on, VJP with `grad_y`, add the parameter gradients into `grads`; returns the input
/// gradient (plain).
pub fn recompute_vjp<const D: usize, B: Block<D>>(
    block: &B,
    x: Tensor<D>,
    grad_y: Tensor<D>,
    lift: &Lift,
    grads: &mut GradientsParams,
) -> Tensor<D> {
    let x_leaf = lift.leaf(x);
    let mut local = vjp(block.forward(x_leaf.clone()), grad_y);
    accumulate(grads, block, &mut local);
    input_grad(&x_leaf, &mut local)
}

/// The gradient of leaf `x` in `grads`, or zeros when nothing reached it.
pub(crate) fn input_grad<const D: usize>(x: &Tensor<D>, grads: &mut burn::tensor::Gradients) -> Tensor<D> {
    x.grad_remove(grads).unwrap_or_else(|| Tensor::zeros(x.dims(), &x.device()).inner())
}

/// The plain (non-reversible) axial block, for stored-input recomputation (gradient
/// checkpointing) of an [`crate::AxialTransformer`]'s blocks.
impl Block<4> for AxialBlock {
    fn forward(&self, x: Tensor<4>) -> Tensor<4> {
        AxialBlock::forward(self, x)
    }
}
