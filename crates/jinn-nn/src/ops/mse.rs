//! Mean squared error, the pixel loss of the tokenizers and the LAM.
//!
//! On the CPU backend in f32, for operands of one shape, it is the fused op of
//! [`super::cpu::mse`] (one parallel reduction forward, one parallel pass backward); elsewhere
//! Burn's ops, which also broadcast.

use burn::tensor::Tensor;

use super::{cpu, on_cpu_f32};

/// `mean((pred − target)²)` over every element → `[1]` (see the module docs for which op runs).
pub fn mean_squared_error<const D: usize>(pred: Tensor<D>, target: Tensor<D>) -> Tensor<1> {
    if !(on_cpu_f32(&pred) && on_cpu_f32(&target)) || pred.dims() != target.dims() {
        return mse_by_tensor_ops(pred, target);
    }
    cpu::mse::mean_squared_error(pred, target)
}

/// The Burn-op path of [`mean_squared_error`].
fn mse_by_tensor_ops<const D: usize>(pred: Tensor<D>, target: Tensor<D>) -> Tensor<1> {
    (pred - target).powi_scalar(2).mean()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::to_vec;
    use burn::tensor::{Device, Distribution};

    /// Loss and both gradients of `f(pred, target)`.
    fn value_and_grads(
        pred: &Tensor<3>,
        target: &Tensor<3>,
        f: impl Fn(Tensor<3>, Tensor<3>) -> Tensor<1>,
    ) -> (f32, Vec<f32>, Vec<f32>) {
        let (p, t) = (pred.clone().detach().require_grad(), target.clone().detach().require_grad());
        let loss = f(p.clone(), t.clone());
        let grads = (loss.clone() * 3.0).backward();
        (to_vec(loss)[0], to_vec(p.grad(&grads).unwrap()), to_vec(t.grad(&grads).unwrap()))
    }

    #[test]
    fn value_and_gradients_match_an_f64_reference() {
        let device = Device::flex().autodiff();
        // 40 000 values: three rayon tasks, the last one partial; the target read strided.
        let pred = Tensor::<3>::random([8, 50, 100], Distribution::Normal(0.3, 1.0), &device);
        let target =
            Tensor::<3>::random([8, 100, 50], Distribution::Uniform(0.0, 1.0), &device).swap_dims(1, 2);
        let (value, d_pred, d_target) = value_and_grads(&pred, &target, mean_squared_error);
        let (p, t) = (to_vec(pred), to_vec(target));
        let n = p.len() as f64;
        let want: f64 = p.iter().zip(&t).map(|(p, t)| (*p as f64 - *t as f64).powi(2)).sum::<f64>() / n;
        assert!((value as f64 - want).abs() < 1e-6 * want, "loss {value} vs {want}");
        for i in 0..p.len() {
            // Upstream gradient 3: ∂/∂pred = 3·2·(p − t)/n.
            let g = 6.0 * (p[i] as f64 - t[i] as f64) / n;
            assert!((d_pred[i] as f64 - g).abs() < 1e-9 + 1e-5 * g.abs(), "d_pred[{i}] {} vs {g}", d_pred[i]);
            assert_eq!(d_target[i], -d_pred[i], "d_target[{i}]");
        }
    }

    #[test]
    fn the_cpu_kernel_matches_the_burn_path() {
        let device = Device::flex().autodiff();
        let pred = Tensor::<3>::random([3, 7, 11], Distribution::Normal(0.0, 2.0), &device);
        let target = Tensor::<3>::random([3, 7, 11], Distribution::Normal(0.0, 2.0), &device);
        let fused = value_and_grads(&pred, &target, mean_squared_error);
        let composite = value_and_grads(&pred, &target, mse_by_tensor_ops);
        assert!((fused.0 - composite.0).abs() < 1e-5 * composite.0);
        for (a, b) in fused.1.iter().chain(&fused.2).zip(composite.1.iter().chain(&composite.2)) {
            assert!((a - b).abs() < 1e-6, "{a} vs {b}");
        }
    }
}
