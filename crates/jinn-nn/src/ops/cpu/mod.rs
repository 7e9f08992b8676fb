//! The CPU kernels behind [`crate::ops`]: differentiable ops for Burn's flex backend, f32 only.
//!
//! Burn 0.22 runs most ops on flex one element at a time on one thread, and under autodiff it
//! builds layer norm, attention and the losses from many taped passes over memory. Each kernel
//! here registers one op through a Burn backend extension (or, for the token loss, computes the
//! gradient off the tape): vectorised host passes shared out to the rayon pool, with a
//! hand-written backward. The door functions of [`crate::ops`] call them only for operands
//! [`crate::ops::on_cpu_f32`] accepts.

pub(super) mod activation;
pub(super) mod attention;
mod fill;
pub(super) mod layer_norm;
pub(super) mod linear;
pub(super) mod math;
pub(super) mod mse;
pub(super) mod xent;
