//! Per-block activation recomputation for tokenizer training (`model.remat = true`).
//!
//! The encoder's and the decoder's axial blocks run through the reversible engine in
//! [`Mode::StoreInputs`]: the forward keeps one tensor per block (its input) instead of every
//! intermediate activation, and the backward recomputes each block alone. The rest of the
//! model stays on the ordinary autodiff tape, cut into three segments at the stack boundaries:
//!
//! ```text
//! A: patches → encoder stem → h_enc          [encoder blocks: engine]  y_enc (leaf)
//! B: y_enc → encoder head → VQ → decoder stem → h_dec    [decoder blocks: engine]  y_dec (leaf)
//! C: y_dec → decoder head → sigmoid → frames → MSE
//! ```
//!
//! Backward, last segment first: `mse.backward()` (C) gives the gradient at `y_dec`; the engine
//! turns it into the gradient at `h_dec`; one backward of `q_loss + β·commitment + ⟨h_dec, g⟩`
//! covers all of segment B (the VQ losses live there, so B is walked once); the engine carries
//! the gradient at `y_enc` to `h_enc`; a last VJP covers segment A.

use burn::optim::GradientsParams;
use burn::tensor::Tensor;
use jinn_data::rng::SampleStreams;
use jinn_nn::reversible::{accumulate, backprop_into, Engine, Lift, Mode, MonitorConfig, Tape};
use jinn_nn::{AxialBlock, NnError};

use super::{Tokenizer, TokenizerOutput};

/// One stack's forward record: its (autodiff) input, the engine and tape, its output leaf.
struct StackRun {
    input: Tensor<4>,
    engine: Engine,
    tape: Tape<4>,
    output: Tensor<4>,
}

impl Tokenizer {
    /// One training forward and backward with per-block recomputation: the outputs (for the
    /// metrics) and the gradients of `loss / divisor` w.r.t. every parameter of `self` (on an
    /// autodiff device; `divisor` averages over micro-batches). The gradients equal
    /// `GradientsParams::from_grads((forward_train(..).loss / divisor).backward(), self)` up
    /// to float rounding.
    pub fn forward_backward_remat(
        &self,
        videos: Tensor<5>,
        streams: &SampleStreams,
        divisor: f64,
    ) -> Result<(TokenizerOutput, GradientsParams), NnError> {
        if Lift::of(self).is_none() {
            return Err(NnError::InvalidConfig {
                field: "remat",
                reason: "recomputation needs the model on an autodiff device".into(),
            });
        }
        let mut runs: Vec<StackRun> = Vec::with_capacity(2);
        let mut failure = None;
        let mut stack = |blocks: &[AxialBlock], h: Tensor<4>| -> Tensor<4> {
            let mut engine = Engine::new(Mode::StoreInputs, MonitorConfig::default());
            match engine.forward(blocks, h.clone()) {
                Ok((output, tape)) => {
                    runs.push(StackRun { input: h, engine, tape, output: output.clone() });
                    output // [b, t, n, m]
                }
                Err(e) => {
                    failure.get_or_insert(e);
                    h
                }
            }
        };
        let out = self.forward_parts(videos, Some(streams), &mut stack)?;
        if let Some(e) = failure {
            return Err(engine_err(e));
        }
        let [enc, dec]: [StackRun; 2] = runs.try_into().map_err(|_| NnError::InvalidConfig {
            field: "remat",
            reason: "expected exactly one encoder and one decoder stack".into(),
        })?;

        let mut grads = GradientsParams::new();
        // Segment C: the reconstruction loss from the decoder stack's output leaf.
        let mut g = out.mse.clone().div_scalar(divisor).backward();
        let grad_y_dec = leaf_grad(&dec.output, &mut g);
        accumulate(&mut grads, self, &mut g);
        let (h_dec, grad_h_dec) = dec.backward(&self.decoder.blocks, grad_y_dec, &mut grads)?;
        // Segment B: the VQ losses plus the VJP at the decoder stem's output, in one backward.
        let vq_loss = (out.q_loss.clone() + out.commitment.clone() * self.vq_beta).div_scalar(divisor);
        let mut g = (vq_loss + (h_dec * grad_h_dec).sum()).backward();
        let grad_y_enc = leaf_grad(&enc.output, &mut g);
        accumulate(&mut grads, self, &mut g);
        // Segment A: the encoder stem.
        let (h_enc, grad_h_enc) = enc.backward(&self.encoder.blocks, grad_y_enc, &mut grads)?;
        let mut g = backprop_into(h_enc, grad_h_enc);
        accumulate(&mut grads, self, &mut g);
        Ok((out, grads))
    }
}

impl StackRun {
    /// Backward through the stack from the gradient at its output: adds the blocks' parameter
    /// gradients into `grads`; returns the stack input (autodiff) and the gradient at it.
    fn backward(
        self,
        blocks: &[AxialBlock],
        grad_out: Tensor<4>,
        grads: &mut GradientsParams,
    ) -> Result<(Tensor<4>, Tensor<4>), NnError> {
        let StackRun { input, mut engine, tape, .. } = self;
        let grad_in = engine.backward_stored(blocks, tape, grad_out, grads).map_err(engine_err)?;
        Ok((input, grad_in))
    }
}

/// The gradient reaching the stack-output leaf `y` (zeros when the loss does not use it).
fn leaf_grad(y: &Tensor<4>, grads: &mut burn::tensor::Gradients) -> Tensor<4> {
    y.grad_remove(grads).unwrap_or_else(|| Tensor::zeros(y.dims(), &y.device()).inner())
}

fn engine_err(e: jinn_nn::reversible::EngineError) -> NnError {
    NnError::InvalidConfig { field: "remat", reason: e.to_string() }
}

#[cfg(test)]
mod tests;
