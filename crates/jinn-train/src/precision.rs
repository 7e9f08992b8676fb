//! Compute precision (`train.precision`): f32, or bf16 compute with f32 master weights.
//!
//! Burn 0.22 has no automatic mixed precision, so this does it by hand:
//! - the model being trained (the *master*) and the optimiser state stay f32, and so do
//!   checkpoints;
//! - each micro-batch runs its forward/backward on [`Precision::compute_model`], a copy whose
//!   parameters are **casts inside the autodiff graph** of the f32 parameters. Burn's cast
//!   backward casts the gradient back to the input's dtype, so `loss.backward()` leaves f32
//!   gradients on the f32 master parameters (same [`burn::module::ParamId`]s), ready for
//!   clipping and AdamW — read them with `GradientsParams::from_grads(grads, &master)`;
//! - inputs are cast with [`Precision::cast_input`]; tensors a model creates inside its
//!   forward must take their dtype from the activations they meet (flex asserts equal dtypes
//!   in debug builds and gives garbage for mixed ones in release).
//!
//! bf16 pays off on GPUs with bf16 units. On the flex CPU backend bf16 arithmetic is emulated
//! and about 1.7× *slower* than f32, so f32 is the default.

use crate::error::{Result, TrainError};
use burn::module::{Module, ModuleMapper, Param};
use burn::tensor::{Device, FloatDType, Tensor};
use serde::{Deserialize, Serialize};

/// Floating-point format of the forward/backward computation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// Everything in f32 (default; the fast choice on CPU).
    #[default]
    F32,
    /// bf16 forward/backward, f32 master weights, gradients and optimiser state.
    Bf16,
}

impl Precision {
    /// The compute dtype.
    pub fn dtype(self) -> FloatDType {
        match self {
            Precision::F32 => FloatDType::F32,
            Precision::Bf16 => FloatDType::BF16,
        }
    }

    /// Error (naming `train.precision`) if `device`'s backend cannot compute in this dtype.
    pub fn ensure_supported(self, device: &Device) -> Result<()> {
        if device.supports_dtype(self.dtype()) {
            Ok(())
        } else {
            Err(TrainError::config(
                "train.precision",
                format!("{self:?} is not supported by the device {device:?}; use \"f32\""),
            ))
        }
    }

    /// The model to run a training forward/backward on: `master` itself for f32; for bf16 a
    /// copy whose float parameters are in-graph bf16 casts of the master's (same ids), so the
    /// gradients of a backward through it land, in f32, on the master's parameters. Build a
    /// fresh one for every backward (each backward consumes the casts' graph).
    pub fn compute_model<M: Module>(self, master: &M) -> M {
        match self {
            Precision::F32 => master.clone(),
            precision => master.clone().map(&mut CastParams { dtype: precision.dtype() }),
        }
    }

    /// Cast a model input (or any tensor entering the computation) to the compute dtype; a
    /// no-op for f32 inputs under f32.
    pub fn cast_input<const D: usize>(self, x: Tensor<D>) -> Tensor<D> {
        x.cast(self.dtype())
    }
}

/// Casts every float parameter to `dtype`, keeping its id (and so its gradient slot).
struct CastParams {
    dtype: FloatDType,
}

impl ModuleMapper for CastParams {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let dtype = self.dtype;
        param.map(|t| t.cast(dtype))
    }
}

#[cfg(test)]
mod tests;
