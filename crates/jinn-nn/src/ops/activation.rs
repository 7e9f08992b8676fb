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
//! On the CPU backend (f32) [`gelu_tanh`] and [`sigmoid`] are one differentiable op each
//! ([`super::cpu::activation`]): one vectorised, multi-threaded pass computes the value and the
//! derivative, and the backward is one multiplication. Other backends evaluate the function and
//! its derivative off the tape from tensor ops, and the tape gets only the tangent line
//! `x·sg(gelu'(x)) + sg(gelu(x) − x·gelu'(x))` (sg = stop-gradient): its value is `gelu(x)` to
//! rounding and its gradient `gelu'(x)·g`. That replaces the backward of six taped elementwise
//! ops — one of them a second `sigmoid` evaluation, since Burn's sigmoid backward recomputes it
//! from the input — by one multiplication.

use burn::tensor::Tensor;

use super::cpu::activation::activation;
use super::cpu::math::Elementwise;
use super::on_cpu_f32;

/// `2·√(2/π)`.
const TWO_SQRT_2_OVER_PI: f64 = 2.0 * core::f64::consts::FRAC_2_SQRT_PI * core::f64::consts::FRAC_1_SQRT_2;
/// The cubic coefficient of the tanh approximation.
const GELU_CUBIC: f64 = 0.044715;

/// Tanh-approximated GELU, elementwise (see the module docs); any shape.
pub fn gelu_tanh<const D: usize>(x: Tensor<D>) -> Tensor<D> {
    if on_cpu_f32(&x) {
        return activation(Elementwise::GeluTanh, x);
    }
    gelu_tanh_by_tensor_ops(x)
}

/// The Burn-op path of [`gelu_tanh`]: the value, and under autodiff the tangent line of the
/// module docs.
fn gelu_tanh_by_tensor_ops<const D: usize>(x: Tensor<D>) -> Tensor<D> {
    let tracked = x.is_tracked();
    let (value, slope) = gelu_and_slope_by_tensor_ops(x.clone().detach(), tracked);
    match slope {
        Some(slope) => x * slope + value, // [..] the tangent line (module docs)
        None => value,
    }
}

/// The logistic function `1 / (1 + e⁻ˣ)`, elementwise; any shape. On the CPU backend the fused
/// op of [`gelu_tanh`] (Burn's sigmoid is a libm `expf` per element on one thread, and its
/// backward three more taped passes); elsewhere Burn's own.
pub fn sigmoid<const D: usize>(x: Tensor<D>) -> Tensor<D> {
    if on_cpu_f32(&x) {
        return activation(Elementwise::Sigmoid, x);
    }
    burn::tensor::activation::sigmoid(x)
}

/// GELU of the detached `xs` and, when `tracked`, its tangent line at `xs` as (offset, slope),
/// from Burn tensor ops (GPU backends), via `gelu(x) = x · sigmoid(x · (c₁ + c₃·x²))`.
fn gelu_and_slope_by_tensor_ops<const D: usize>(
    xs: Tensor<D>,
    tracked: bool,
) -> (Tensor<D>, Option<Tensor<D>>) {
    let x2 = xs.clone() * xs.clone(); // [..]
    let slope = x2.clone() * (TWO_SQRT_2_OVER_PI * GELU_CUBIC) + TWO_SQRT_2_OVER_PI; // [..] z = x·slope
    let s = burn::tensor::activation::sigmoid(xs.clone() * slope); // [..]
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
    use crate::ops::cpu::math::value_and_slope;
    use burn::tensor::{Device, Distribution, TensorData};

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
        // Untracked and tracked (autodiff): the CPU kernel's value.
        let xs = inputs();
        for device in [Device::flex(), Device::flex().autodiff()] {
            let x = Tensor::<1>::from_data(TensorData::new(xs.clone(), [xs.len()]), &device);
            let x = if device.is_autodiff() { x.require_grad() } else { x };
            let got: Vec<f32> = gelu_tanh(x).try_into_vec_as::<f32>().unwrap();
            for (&x, &g) in xs.iter().zip(&got) {
                let want = gelu_f64(x as f64);
                let tol = 1e-6 * (x.abs() as f64).max(1.0);
                assert!((g as f64 - want).abs() <= tol, "gelu({x}) = {g}, want {want} on {device:?}");
            }
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
    fn cpu_kernel_and_tensor_ops_agree() {
        // The Burn-op path, run on the CPU backend, against the CPU kernel: values and slopes.
        let device = Device::flex();
        let xs = inputs();
        let x = Tensor::<1>::from_data(TensorData::new(xs.clone(), [xs.len()]), &device);
        for tracked in [false, true] {
            let (mut hv, mut hs) = (vec![0.0; xs.len()], vec![0.0; xs.len()]);
            value_and_slope(Elementwise::GeluTanh, &xs, &mut hv, &mut hs, tracked);
            let (tv, ts) = gelu_and_slope_by_tensor_ops(x.clone(), tracked);
            assert_eq!(ts.is_some(), tracked);
            let mut pairs = vec![(hv, tv.try_into_vec_as::<f32>().unwrap())];
            pairs.extend(ts.map(|ts| (hs, ts.try_into_vec_as::<f32>().unwrap())));
            for (h, t) in pairs {
                for ((&x, &a), &b) in xs.iter().zip(&h).zip(&t) {
                    assert!(
                        (a - b).abs() <= 2e-6 * x.abs().max(1.0),
                        "tracked={tracked}, x = {x}: {a} vs {b}"
                    );
                }
            }
        }
    }

    #[test]
    fn cpu_and_burn_paths_agree_in_value_and_gradient() {
        // Both paths of each door under autodiff, with a random upstream gradient.
        let device = Device::flex().autodiff();
        let xs = inputs();
        let w = Tensor::<1>::random([xs.len()], Distribution::Normal(0.0, 1.0), &device);
        type Op = fn(Tensor<1>) -> Tensor<1>;
        let run = |f: Op| {
            let x = Tensor::<1>::from_data(TensorData::new(xs.clone(), [xs.len()]), &device).require_grad();
            let y = f(x.clone());
            let grads = (y.clone() * w.clone()).sum().backward();
            let dx = x.grad(&grads).unwrap().try_into_vec_as::<f32>().unwrap();
            (y.try_into_vec_as::<f32>().unwrap(), dx)
        };
        let paths: [(&str, Op, Op); 2] = [
            ("gelu", gelu_tanh, gelu_tanh_by_tensor_ops),
            ("sigmoid", sigmoid, burn::tensor::activation::sigmoid),
        ];
        for (name, cpu, burn) in paths {
            let ((cv, cg), (bv, bg)) = (run(cpu), run(burn));
            for (i, &x) in xs.iter().enumerate() {
                let tol = 4e-6 * x.abs().max(1.0);
                assert!((cv[i] - bv[i]).abs() <= tol, "{name}({x}): {} vs {}", cv[i], bv[i]);
                assert!((cg[i] - bg[i]).abs() <= tol, "{name}'({x})·w: {} vs {}", cg[i], bg[i]);
            }
        }
    }

    #[test]
    fn sigmoid_value_and_gradient_match_f64() {
        let xs = inputs();
        let want = |x: f64| 1.0 / (1.0 + (-x).exp());
        // Untracked value on the plain device; tracked value and gradient under autodiff.
        let plain = Tensor::<1>::from_data(TensorData::new(xs.clone(), [xs.len()]), &Device::flex());
        let untracked: Vec<f32> = sigmoid(plain.clone()).try_into_vec_as::<f32>().unwrap();
        let burns: Vec<f32> = burn::tensor::activation::sigmoid(plain).try_into_vec_as::<f32>().unwrap();
        let x = Tensor::<1>::from_data(TensorData::new(xs.clone(), [xs.len()]), &Device::flex().autodiff())
            .require_grad();
        let y = sigmoid(x.clone());
        let tracked: Vec<f32> = y.clone().try_into_vec_as::<f32>().unwrap();
        let grad: Vec<f32> = x.grad(&y.sum().backward()).unwrap().try_into_vec_as::<f32>().unwrap();
        for (i, &x) in xs.iter().enumerate() {
            let (s, x64) = (want(x as f64), x as f64);
            assert!((untracked[i] as f64 - s).abs() <= 1e-7, "σ({x}) = {}, want {s}", untracked[i]);
            assert!(
                (untracked[i] - burns[i]).abs() <= 2e-7,
                "σ({x}): {} vs Burn's {}",
                untracked[i],
                burns[i]
            );
            let tol = 2e-7 * x64.abs().max(1.0);
            assert!((tracked[i] as f64 - s).abs() <= tol, "tracked σ({x}) = {}, want {s}", tracked[i]);
            assert!(
                (grad[i] as f64 - s * (1.0 - s)).abs() <= 2e-7,
                "σ'({x}) = {}, want {}",
                grad[i],
                s * (1.0 - s)
            );
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

    #[test]
    fn a_strided_input_gives_the_values_and_gradients_of_its_copy() {
        // The CPU kernel reads a transposed view through a contiguous copy; the gradient goes back
        // to the view's layout.
        let device = Device::flex().autodiff();
        let base = Tensor::<2>::random([6, 9], Distribution::Normal(0.0, 2.0), &device);
        let w = Tensor::<2>::random([9, 6], Distribution::Normal(0.0, 1.0), &device);
        let run = |x: Tensor<2>| {
            let x = x.detach().require_grad();
            let y = gelu_tanh(x.clone().transpose());
            let grads = (y.clone() * w.clone()).sum().backward();
            (y.try_into_vec_as::<f32>().unwrap(), x.grad(&grads).unwrap().try_into_vec_as::<f32>().unwrap())
        };
        let strided = run(base.clone());
        let copied = {
            let contiguous = Tensor::<2>::from_data(base.clone().transpose().into_data(), &device);
            let x = contiguous.detach().require_grad();
            let y = gelu_tanh(x.clone());
            let grads = (y.clone() * w.clone()).sum().backward();
            let dx = x.grad(&grads).unwrap().transpose();
            (y.try_into_vec_as::<f32>().unwrap(), dx.try_into_vec_as::<f32>().unwrap())
        };
        assert_eq!(strided, copied);
    }
}
