//! Small autodiff helpers shared by the couplings and the engine: lifting plain tensors onto
//! the autodiff graph of a module, local vector-Jacobian products, and adding one block's
//! parameter gradients into a [`GradientsParams`].

use burn::module::{Module, ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::tensor::{GradientCheckpointingStrategy, Gradients, Tensor};

/// How to put plain (non-autodiff) tensors onto a module's autodiff graph: with the same
/// gradient-checkpointing strategy as its parameters (mixing strategies panics in Burn).
#[derive(Clone, Copy, Debug)]
pub struct Lift {
    strategy: Option<GradientCheckpointingStrategy>,
}

impl Lift {
    /// The lift matching `module`'s parameters; `None` when the module is not on an autodiff
    /// device (it has no trainable float parameter with autodiff).
    pub fn of<M: Module>(module: &M) -> Option<Self> {
        let mut finder = StrategyFinder { found: None };
        module.visit(&mut finder);
        finder.found.map(|strategy| Self { strategy: Some(strategy) })
    }

    /// The lift matching an autodiff tensor; `None` for a plain tensor.
    pub fn of_tensor<const D: usize>(t: &Tensor<D>) -> Option<Self> {
        t.gradient_checkpointing_strategy().map(|s| Self { strategy: Some(s) })
    }

    /// `t` as an autodiff leaf that records its gradient.
    pub fn leaf<const D: usize>(&self, t: Tensor<D>) -> Tensor<D> {
        self.constant(t).require_grad()
    }

    /// `t` on the autodiff graph as a constant (no gradient).
    pub fn constant<const D: usize>(&self, t: Tensor<D>) -> Tensor<D> {
        let t = t.inner().autodiff();
        match self.strategy {
            Some(s) => t.with_gradient_checkpointing_strategy(s),
            None => t,
        }
    }
}

struct StrategyFinder {
    found: Option<GradientCheckpointingStrategy>,
}

impl ModuleVisitor for StrategyFinder {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if self.found.is_none() {
            self.found = param.val().gradient_checkpointing_strategy();
        }
    }
}

/// Backpropagates the upstream gradient `grad` (plain) through the tracked tensor `out`:
/// the vector-Jacobian product `gradᵀ · ∂out/∂(leaves)`, read back with `leaf.grad(..)`.
pub fn vjp<const D: usize>(out: Tensor<D>, grad: Tensor<D>) -> Gradients {
    (out * grad.inner()).sum().backward()
}

/// Moves `module`'s parameter gradients out of `grads` and adds them into `into` (summing with
/// any gradient already there, so micro-batches and blocks accumulate).
pub fn accumulate<M: Module>(into: &mut GradientsParams, module: &M, grads: &mut Gradients) {
    let mut fresh = GradientsParams::from_module(grads, module);
    merge(into, module, &mut fresh);
}

/// Moves every gradient of `module`'s parameters found in `fresh` into `into` (adding).
pub fn merge<M: Module>(into: &mut GradientsParams, module: &M, fresh: &mut GradientsParams) {
    module.visit(&mut Adder { into, fresh });
}

struct Adder<'a> {
    into: &'a mut GradientsParams,
    fresh: &'a mut GradientsParams,
}

impl ModuleVisitor for Adder<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if let Some(new) = self.fresh.remove::<D>(param.id) {
            let sum = match self.into.remove::<D>(param.id) {
                Some(old) => old + new,
                None => new,
            };
            self.into.register::<D>(param.id, sum);
        }
    }
}
