//! Memory-free training of a reversible dynamics model (`model.reversible = true`).
//!
//! The dynamics backbone (a stack of reversible axial blocks) runs through the reversible
//! engine: the forward keeps only the stack's output, and the backward rebuilds every block's
//! input from its output by the inverse, so activation memory does not grow with depth. The
//! rest stays on the ordinary autodiff tape, cut at the stack boundaries:
//!
//! ```text
//! stem: tokens, mask, actions (LAM) → embedding → transformer stem → h   [stack: engine]
//! head: y (leaf) → transformer head → logits → cross-entropy + z-loss
//! ```
//!
//! Backward: `loss.backward()` covers the head and gives the gradient at `y`; the engine
//! carries it to `h` block by block; a last VJP covers the stem (and a co-trained LAM).
//! Inference and validation need nothing special: [`Genie::forward`] runs the blocks forward.

use burn::optim::GradientsParams;
use burn::tensor::{Int, Tensor};
use jinn_data::rng::SampleStreams;
use jinn_nn::reversible::{accumulate, backprop_into, Engine, EngineError, Tape};
use jinn_nn::NnError;

use super::{Genie, GenieOutput};
use crate::code_partners::CodeGrounding;

/// The stack's forward record: its (autodiff) input, the tape, its output leaf.
struct StackRun {
    input: Tensor<4>,
    tape: Tape<4>,
    output: Tensor<4>,
}

impl Genie {
    /// One training forward and backward (the LAM's codes grounded by `grounding`, see
    /// [`Genie::forward_grounded`]) with the dynamics backbone run by `engine` (memory-free
    /// in [`jinn_nn::reversible::Mode::Reconstruct`]): the outputs (for the metrics) and the
    /// gradients of `loss · scale(outputs)` w.r.t. every trainable parameter (on an autodiff
    /// device). They equal `GradientsParams::from_grads((out.loss · scale(out)).backward(), self)`
    /// up to float rounding (or exactly that, when the engine's monitor falls back).
    pub fn forward_backward_reversible(
        &self,
        videos: Tensor<5>,
        actions: Option<Tensor<2, Int>>,
        grounding: Option<&CodeGrounding>,
        mask_streams: &SampleStreams,
        scale: &dyn Fn(&GenieOutput) -> f64,
        engine: &mut Engine,
    ) -> Result<(GenieOutput, GradientsParams), NnError> {
        let blocks = &self.dynamics.reversible_blocks;
        if blocks.is_empty() {
            return Err(NnError::InvalidConfig {
                field: "reversible",
                reason: "memory-free training needs a dynamics model built with reversible = true".into(),
            });
        }
        let mut run: Option<StackRun> = None;
        let mut failure: Option<EngineError> = None;
        let mut backbone = |h: Tensor<4>| -> Tensor<4> {
            match engine.forward(blocks, h.clone()) {
                Ok((output, tape)) => {
                    run = Some(StackRun { input: h, tape, output: output.clone() });
                    output // [b, t, n+1, m]
                }
                Err(e) => {
                    failure.get_or_insert(e);
                    h
                }
            }
        };
        let out = self.forward_with(videos, actions, grounding, mask_streams, &mut backbone)?;
        if let Some(e) = failure {
            return Err(engine_err(e));
        }
        let StackRun { input, tape, output } = run.ok_or_else(|| NnError::InvalidConfig {
            field: "reversible",
            reason: "the dynamics backbone did not run".into(),
        })?;

        let mut grads = GradientsParams::new();
        let mut g = out.loss.clone().mul_scalar(scale(&out)).backward();
        let grad_y = output
            .grad_remove(&mut g)
            .unwrap_or_else(|| Tensor::zeros(output.dims(), &output.device()).inner()); // [b, t, n+1, m]
        accumulate(&mut grads, self, &mut g);
        let grad_h = engine.backward(blocks, tape, grad_y, &mut grads).map_err(engine_err)?;
        let mut g = backprop_into(input, grad_h);
        accumulate(&mut grads, self, &mut g);
        Ok((out, grads))
    }
}

fn engine_err(e: EngineError) -> NnError {
    NnError::InvalidConfig { field: "reversible", reason: e.to_string() }
}

#[cfg(test)]
mod tests;
