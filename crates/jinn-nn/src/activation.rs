//! Activations written so the CPU backend runs them fast.
//!
//! [`gelu_tanh`] is Jasmine's FFN activation (`jax.nn.gelu`, `approximate=True`):
//! `0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))`. Burn's `gelu_approximate` builds it from
//! `powf(x, 3)` and `tanh`, which the flex backend evaluates with one scalar libm `powf` and
//! `tanhf` call per element (about 15% of a tokenizer training step). Here the same function
//! is written with the identity `½(1 + tanh(u)) = sigmoid(2u)`:
//! `gelu(x) = x · sigmoid(x · (2√(2/π) + 2√(2/π)·0.044715·x²))` — products instead of `powf`,
//! one `sigmoid` instead of `tanh`. It also avoids the cancellation in `1 + tanh(u)` for large
//! negative `x`.
//!
//! Under autodiff the function and its derivative are evaluated off the tape, and the tape
//! gets only the tangent line `x·sg(gelu'(x)) + sg(gelu(x) − x·gelu'(x))` (sg = stop-gradient):
//! its value is `gelu(x)` to rounding and its gradient `gelu'(x)·g`. This replaces the backward
//! of six taped elementwise ops — one of them a second `sigmoid` evaluation, since Burn's
//! sigmoid backward recomputes it from the input — by one multiplication.
//!
//! On the CPU backend (f32) the value and derivative come from one vectorised, multi-threaded
//! pass on the host ([`crate::host_math::gelu_tanh_with_slope`]) instead of ten single-threaded
//! backend passes: the FFN of a jasmine-small LAM block went from 24 to about 13 ms per forward
//! and backward. Other backends build them from tensor ops.

use burn::tensor::activation::sigmoid;
use burn::tensor::{DType, Device, Tensor, TensorData};

use crate::host_math::gelu_tanh_with_slope;

/// `2·√(2/π)`.
const TWO_SQRT_2_OVER_PI: f64 = 2.0 * core::f64::consts::FRAC_2_SQRT_PI * core::f64::consts::FRAC_1_SQRT_2;
/// The cubic coefficient of the tanh approximation.
const GELU_CUBIC: f64 = 0.044715;

/// Tanh-approximated GELU, elementwise (see the module docs); any shape.
pub fn gelu_tanh<const D: usize>(x: Tensor<D>) -> Tensor<D> {
    let device = x.device();
    let tracked = x.is_tracked();
    let on_cpu = device.clone().without_autodiff() == Device::flex() && x.dtype() == DType::F32;
    let (value, slope) = if on_cpu {
        gelu_and_slope_on_host(x.clone().detach(), tracked, &device)
    } else {
        gelu_and_slope_by_tensor_ops(x.clone().detach(), tracked)
    };
    match slope {
        // x·sg(gelu'(x)) + sg(gelu(x) − x·gelu'(x)): `value` to rounding, gradient gelu'(x)·g.
        Some(slope) => x * slope + value, // [..]
        None => value,
    }
}

/// GELU of the detached `xs`, or, when `tracked`, its tangent line at `xs` as (offset, slope),
/// in one vectorised pass on the host (the CPU backend; see [`crate::host_math`]).
fn gelu_and_slope_on_host<const D: usize>(
    xs: Tensor<D>,
    tracked: bool,
    device: &Device,
) -> (Tensor<D>, Option<Tensor<D>>) {
    let shape = xs.shape();
    let xs: Vec<f32> = xs.into_data().try_into_vec::<f32>().expect("an f32 tensor (checked by the caller)");
    let mut value = vec![0.0f32; xs.len()];
    let mut slope = vec![0.0f32; xs.len()];
    gelu_tanh_with_slope(&xs, &mut value, &mut slope, tracked);
    let to_tensor = |v: Vec<f32>| Tensor::<D>::from_data(TensorData::new(v, shape.clone()), device);
    (to_tensor(value), tracked.then(|| to_tensor(slope)))
}

/// The same pair from Burn tensor ops (GPU backends), via `gelu(x) = x · sigmoid(x · (c₁ + c₃·x²))`.
fn gelu_and_slope_by_tensor_ops<const D: usize>(xs: Tensor<D>, tracked: bool) -> (Tensor<D>, Option<Tensor<D>>) {
    let x2 = xs.clone() * xs.clone(); // [..]
    let slope = x2.clone() * (TWO_SQRT_2_OVER_PI * GELU_CUBIC) + TWO_SQRT_2_OVER_PI; // [..] z = x·slope
    let s = sigmoid(xs.clone() * slope); // [..]
    let value = xs.clone() * s.clone(); // [..]
    if !tracked {
        return (value, None);
    }
    // d/dx x·σ(z) = σ + x·σ·(1 − σ)·z', z' = 2√(2/π)·(1 + 3·0.044715·x²).
    let dz = x2 * (3.0 * TWO_SQRT_2_OVER_PI * GELU_CUBIC) + TWO_SQRT_2_OVER_PI; // [..]
    let deriv = s.clone() + xs.clone() * s.clone() * (s.neg() + 1.0) * dz; // [..]
    (value - xs * deriv.clone(), Some(deriv))
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::{Device, TensorData};

    /// Jasmine's formula in f64.
    fn gelu_f64(x: f64) -> f64 {
        let c = (2.0 / core::f64::consts::PI).sqrt();
        0.5 * x * (1.0 + (c * (x + GELU_CUBIC * x * x * x)).tanh())
    }

    /// Its derivative in f64, by the product and chain rules.
    fn gelu_grad_f64(x: f64) -> f64 {
        let c = (2.0 / core::f64::consts::PI).sqrt();
        let t = (c * (x + GELU_CUBIC * x * x * x)).tanh();
        0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * c * (1.0 + 3.0 * GELU_CUBIC * x * x)
    }

    fn inputs() -> Vec<f32> {
        // −12 … 12 in steps of 1/64, plus tiny values.
        let mut v: Vec<f32> = (-768..=768).map(|i| i as f32 / 64.0).collect();
        v.extend([1e-6, -1e-6, 1e-30, -3e-3]);
        v
    }

    #[test]
    fn matches_f64_tanh_gelu() {
        let device = Device::flex();
        let xs = inputs();
        let x = Tensor::<1>::from_data(TensorData::new(xs.clone(), [xs.len()]), &device);
        let got: Vec<f32> = gelu_tanh(x).try_into_vec_as::<f32>().unwrap();
        for (&x, &g) in xs.iter().zip(&got) {
            let want = gelu_f64(x as f64);
            let tol = 1e-6 * (x.abs() as f64).max(1.0);
            assert!((g as f64 - want).abs() <= tol, "gelu({x}) = {g}, want {want}");
        }
    }

    #[test]
    fn gradient_matches_f64_derivative() {
        let device = Device::flex().autodiff();
        let xs = inputs();
        let x = Tensor::<1>::from_data(TensorData::new(xs.clone(), [xs.len()]), &device).require_grad();
        let grads = gelu_tanh(x.clone()).sum().backward();
        let got: Vec<f32> = x.grad(&grads).unwrap().try_into_vec_as::<f32>().unwrap();
        for (&x, &g) in xs.iter().zip(&got) {
            let want = gelu_grad_f64(x as f64);
            let tol = 2e-6 * (x.abs() as f64).max(1.0);
            assert!((g as f64 - want).abs() <= tol, "gelu'({x}) = {g}, want {want}");
        }
    }

    #[test]
    fn tracked_value_matches_f64_tanh_gelu() {
        // Under autodiff the value is the tangent line's, x·slope + offset: gelu(x) to rounding.
        let device = Device::flex().autodiff();
        let xs = inputs();
        let x = Tensor::<1>::from_data(TensorData::new(xs.clone(), [xs.len()]), &device).require_grad();
        let got: Vec<f32> = gelu_tanh(x).try_into_vec_as::<f32>().unwrap();
        for (&x, &g) in xs.iter().zip(&got) {
            let want = gelu_f64(x as f64);
            let tol = 1e-6 * (x.abs() as f64).max(1.0);
            assert!((g as f64 - want).abs() <= tol, "gelu({x}) = {g}, want {want}");
        }
    }

    #[test]
    fn host_kernel_and_tensor_ops_agree() {
        // The GPU path, run on the CPU backend, against the host kernel: values and slopes.
        let device = Device::flex();
        let xs = inputs();
        let x = Tensor::<1>::from_data(TensorData::new(xs.clone(), [xs.len()]), &device);
        for tracked in [false, true] {
            let (hv, hs) = gelu_and_slope_on_host(x.clone(), tracked, &device);
            let (tv, ts) = gelu_and_slope_by_tensor_ops(x.clone(), tracked);
            assert_eq!(hs.is_some(), tracked);
            assert_eq!(ts.is_some(), tracked);
            let pairs = [(Some(hv), Some(tv)), (hs, ts)];
            for (h, t) in pairs.into_iter().filter_map(|(h, t)| Some((h?, t?))) {
                let h: Vec<f32> = h.try_into_vec_as::<f32>().unwrap();
                let t: Vec<f32> = t.try_into_vec_as::<f32>().unwrap();
                for ((&x, &a), &b) in xs.iter().zip(&h).zip(&t) {
                    assert!((a - b).abs() <= 2e-6 * x.abs().max(1.0), "tracked={tracked}, x = {x}: {a} vs {b}");
                }
            }
        }
    }

    #[test]
    fn equals_burn_gelu_approximate() {
        let device = Device::flex();
        let xs = inputs();
        let x = Tensor::<1>::from_data(TensorData::new(xs.clone(), [xs.len()]), &device);
        let ours: Vec<f32> = gelu_tanh(x.clone()).try_into_vec_as::<f32>().unwrap();
        let burn: Vec<f32> = burn::tensor::activation::gelu_approximate(x).try_into_vec_as::<f32>().unwrap();
        for ((&x, &a), &b) in xs.iter().zip(&ours).zip(&burn) {
            assert!((a - b).abs() <= 2e-6 * x.abs().max(1.0), "x = {x}: {a} vs Burn's {b}");
        }
    }
}
