//! The memory-free backprop engine and its stored-input (gradient checkpointing) mode.
//!
//! A training step with a stem before the stack and a head after it:
//!
//! ```ignore
//! let h = stem.forward(x);                                  // normal autodiff, keeps its tape
//! let (y, tape) = engine.forward(&blocks, h.clone())?;      // no tape; y is a fresh leaf
//! let loss = head.forward(y.clone()).loss(target);          // normal autodiff
//! let mut g = loss.backward();
//! let grad_y = y.grad_remove(&mut g).unwrap();
//! let mut grads = GradientsParams::from_module(&mut g, &head);
//! let grad_h = engine.backward(&blocks, tape, grad_y, &mut grads)?;  // block by block
//! let mut g = backprop_into(h, grad_h);                      // continue into the stem
//! merge(&mut grads, &stem, GradientsParams::from_module(&mut g, &stem));
//! model = optim.step(lr, model, grads);                       // any optimizer
//! ```
//!
//! Modes:
//! - [`Mode::Reconstruct`] keeps only the stack output. Backward walks the blocks in reverse:
//!   each [`ReversibleBlock::reverse_vjp`] rebuilds the block input from its output, recomputes
//!   the block alone on the tape and takes the VJP. Activation memory is one block's worth,
//!   whatever the depth.
//! - [`Mode::StoreInputs`] keeps every block's input (one tensor per block) and recomputes each
//!   block from it: per-block activation recomputation for any [`Block`], reversible or not.
//!
//! Reconstruction monitor (reconstruct mode): every `every`-th forward also keeps the stack
//! input; the backward compares it with the input rebuilt through all blocks. If the relative
//! error `max|x̂ − x| / max(1, max|x|)` exceeds `threshold` (or is not finite) the engine warns
//! (`tracing`) and redoes the step by standard backprop from the stored input, discarding the
//! reconstructed gradients.

use burn::module::Module;
use burn::optim::GradientsParams;
use burn::tensor::{Gradients, Tensor};
use thiserror::Error;

use super::block::{input_grad, recompute_vjp, Block, ReversibleBlock};
use super::grads::{accumulate, merge, vjp, Lift};

/// What the forward pass keeps for the backward pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Keep only the output; rebuild block inputs by the inverse (reversible blocks only).
    Reconstruct,
    /// Keep every block's input; recompute each block from it (any block).
    StoreInputs,
}

/// When and how strictly the reconstruction is checked.
#[derive(Clone, Copy, Debug)]
pub struct MonitorConfig {
    /// Check every `every`-th step (0 = never).
    pub every: u64,
    /// Largest accepted relative reconstruction error.
    pub threshold: f64,
}

impl Default for MonitorConfig {
    /// Every 100th step, threshold 1e-3.
    fn default() -> Self {
        Self { every: 100, threshold: 1e-3 }
    }
}

/// What the monitor has seen so far.
#[derive(Clone, Copy, Debug, Default)]
pub struct MonitorStats {
    /// Checked steps.
    pub checks: u64,
    /// Checked steps that fell back to standard backprop.
    pub fallbacks: u64,
    /// Relative reconstruction error of the latest checked step.
    pub last_error: Option<f64>,
}

/// Misuse of the engine.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum EngineError {
    /// Neither the blocks nor the input are on an autodiff device.
    #[error("memory-free backprop needs the blocks on an autodiff device (Device::…().autodiff())")]
    NotAutodiff,
    /// A reconstruct-mode tape handed to the stored-input backward.
    #[error("this tape was recorded in Mode::Reconstruct; use Engine::backward (reversible blocks)")]
    NeedsReversible,
    /// The tape was recorded for a different number of blocks.
    #[error("tape recorded for {recorded} blocks, backward called with {given}")]
    DepthMismatch {
        /// Blocks at forward time.
        recorded: usize,
        /// Blocks at backward time.
        given: usize,
    },
}

/// What [`Engine::forward`] kept for [`Engine::backward`].
#[derive(Debug)]
pub struct Tape<const D: usize> {
    lift: Lift,
    depth: usize,
    kept: Kept<D>,
}

#[derive(Debug)]
enum Kept<const D: usize> {
    Reconstruct { output: Box<Tensor<D>>, input: Option<Box<Tensor<D>>> },
    Inputs(Vec<Tensor<D>>),
}

/// Forward without a tape and block-by-block backward (see the module docs).
#[derive(Debug)]
pub struct Engine {
    mode: Mode,
    monitor: MonitorConfig,
    step: u64,
    stats: MonitorStats,
}

impl Engine {
    /// An engine in `mode` with `monitor` (the monitor only acts in [`Mode::Reconstruct`]).
    pub fn new(mode: Mode, monitor: MonitorConfig) -> Self {
        Self { mode, monitor, step: 0, stats: MonitorStats::default() }
    }

    /// The mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The monitor's record.
    pub fn stats(&self) -> MonitorStats {
        self.stats
    }

    /// Runs `blocks` on `x` (autodiff or plain; only its value is used) without recording a
    /// graph. Returns the output as a fresh autodiff leaf (run the head on it and read its
    /// gradient) and the tape for [`Engine::backward`].
    pub fn forward<const D: usize, B: Block<D>>(
        &mut self,
        blocks: &[B],
        x: Tensor<D>,
    ) -> Result<(Tensor<D>, Tape<D>), EngineError> {
        let lift = blocks
            .first()
            .and_then(Lift::of)
            .or_else(|| Lift::of_tensor(&x))
            .ok_or(EngineError::NotAutodiff)?;
        let check = self.mode == Mode::Reconstruct
            && self.monitor.every > 0
            && self.step.is_multiple_of(self.monitor.every);
        self.step += 1;

        let mut h = x.inner(); // [.., M]
        let mut inputs = Vec::new();
        let stored_input = check.then(|| h.clone());
        for block in blocks {
            if self.mode == Mode::StoreInputs {
                inputs.push(h.clone());
            }
            h = block.valid().forward(h);
        }
        let kept = match self.mode {
            Mode::Reconstruct => {
                Kept::Reconstruct { output: Box::new(h.clone()), input: stored_input.map(Box::new) }
            }
            Mode::StoreInputs => Kept::Inputs(inputs),
        };
        Ok((lift.leaf(h), Tape { lift, depth: blocks.len(), kept }))
    }

    /// Backward through reversible `blocks` from `grad_out` (the gradient of the loss w.r.t. the
    /// forward's output): adds every block's parameter gradients into `grads` and returns the
    /// gradient w.r.t. the stack input (plain tensor) to continue into the stem.
    pub fn backward<const D: usize, B: ReversibleBlock<D>>(
        &mut self,
        blocks: &[B],
        tape: Tape<D>,
        grad_out: Tensor<D>,
        grads: &mut GradientsParams,
    ) -> Result<Tensor<D>, EngineError> {
        check_depth(&tape, blocks.len())?;
        let lift = tape.lift;
        let (output, stored_input) = match tape.kept {
            Kept::Inputs(inputs) => return Ok(stored_backward(blocks, inputs, grad_out, &lift, grads)),
            Kept::Reconstruct { output, input } => (*output, input.map(|x| *x)),
        };
        let grad_out = grad_out.inner();
        let mut local = GradientsParams::new();
        let (mut y, mut g) = (output, grad_out.clone());
        for block in blocks.iter().rev() {
            let step = block.reverse_vjp(y, g, &lift, &mut local);
            (y, g) = (step.input, step.grad_input);
        }
        let Some(x) = stored_input else {
            merge_blocks(grads, blocks, local);
            return Ok(g);
        };

        let error = relative_error(&y, &x);
        self.stats.checks += 1;
        self.stats.last_error = Some(error);
        if error <= self.monitor.threshold {
            merge_blocks(grads, blocks, local);
            return Ok(g);
        }
        self.stats.fallbacks += 1;
        tracing::warn!(
            error,
            threshold = self.monitor.threshold,
            depth = blocks.len(),
            "reversible stack: input reconstruction error above threshold; standard backprop for this step"
        );
        Ok(standard_backward(blocks, x, grad_out, &lift, grads))
    }

    /// Backward of a [`Mode::StoreInputs`] tape through any `blocks` (see [`Engine::backward`]).
    pub fn backward_stored<const D: usize, B: Block<D>>(
        &mut self,
        blocks: &[B],
        tape: Tape<D>,
        grad_out: Tensor<D>,
        grads: &mut GradientsParams,
    ) -> Result<Tensor<D>, EngineError> {
        check_depth(&tape, blocks.len())?;
        match tape.kept {
            Kept::Inputs(inputs) => Ok(stored_backward(blocks, inputs, grad_out, &tape.lift, grads)),
            Kept::Reconstruct { .. } => Err(EngineError::NeedsReversible),
        }
    }
}

fn check_depth<const D: usize>(tape: &Tape<D>, given: usize) -> Result<(), EngineError> {
    if tape.depth != given {
        return Err(EngineError::DepthMismatch { recorded: tape.depth, given });
    }
    Ok(())
}

/// Stored-input backward: recompute each block from its kept input, last block first.
fn stored_backward<const D: usize, B: Block<D>>(
    blocks: &[B],
    inputs: Vec<Tensor<D>>,
    grad_out: Tensor<D>,
    lift: &Lift,
    grads: &mut GradientsParams,
) -> Tensor<D> {
    let mut g = grad_out.inner();
    for (block, x) in blocks.iter().zip(inputs).rev() {
        g = recompute_vjp(block, x, g, lift, grads);
    }
    g
}

fn merge_blocks<B: Module>(into: &mut GradientsParams, blocks: &[B], mut fresh: GradientsParams) {
    for block in blocks {
        merge(into, block, &mut fresh);
    }
}

/// Standard backprop through `blocks` from their stored input `x` (the monitor's fallback).
fn standard_backward<const D: usize, B: Block<D>>(
    blocks: &[B],
    x: Tensor<D>,
    grad_out: Tensor<D>,
    lift: &Lift,
    grads: &mut GradientsParams,
) -> Tensor<D> {
    let x_leaf = lift.leaf(x);
    let mut local = vjp(forward_standard(blocks, x_leaf.clone()), grad_out);
    for block in blocks {
        accumulate(grads, block, &mut local);
    }
    input_grad(&x_leaf, &mut local)
}

/// `max|a − b| / max(1, max|b|)`, NaN-safe (a non-finite error compares above any threshold).
fn relative_error<const D: usize>(a: &Tensor<D>, b: &Tensor<D>) -> f64 {
    let diff: f64 = (a.clone() - b.clone()).abs().max().into_scalar();
    let scale: f64 = b.clone().abs().max().into_scalar();
    let e = diff / scale.max(1.0);
    if e.is_finite() {
        e
    } else {
        f64::INFINITY
    }
}

/// Standard autodiff through `blocks` (the reference the engine is tested against, and its
/// fallback).
pub fn forward_standard<const D: usize, B: Block<D>>(blocks: &[B], x: Tensor<D>) -> Tensor<D> {
    blocks.iter().fold(x, |h, block| block.forward(h))
}

/// Continues backprop into the graph that produced `tensor` (e.g. the stem output fed to
/// [`Engine::forward`]) with the upstream gradient `grad` (e.g. from [`Engine::backward`]).
pub fn backprop_into<const D: usize>(tensor: Tensor<D>, grad: Tensor<D>) -> Gradients {
    vjp(tensor, grad)
}
