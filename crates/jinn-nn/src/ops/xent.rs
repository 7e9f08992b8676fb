//! The token loss of the dynamics models (as Jasmine's
//! `baselines/maskgit/train_dynamics_maskgit.py` and `train_dynamics_causal.py`): weighted
//! softmax cross-entropy and z-loss averaged over the loss positions.
//!
//! On the CPU backend one host pass computes both losses and their gradient
//! ([`super::cpu::xent`]); the tape then holds only `Σ logits·sg(grad)`. Other backends build
//! them from Burn ops.

use burn::tensor::activation::log_softmax;
use burn::tensor::{Int, Tensor};

use super::{cpu, on_cpu_f32};

/// The losses of one batch.
#[derive(Debug, Clone)]
pub struct TokenLosses {
    /// `ce + z_loss_weight·z`, the training loss (carries the gradient).
    pub loss: Tensor<1>,
    /// Mean cross-entropy over the loss positions (for logging).
    pub ce: Tensor<1>,
    /// Mean `logsumexp(logits)²` over the loss positions (for logging).
    pub z: Tensor<1>,
}

/// Cross-entropy and z-loss of `logits` `[B, T, N, V]` against `targets` `[B, T, N]`, averaged
/// over the positions where `weight` `[B, T, N]` is 1: `Σ w·CE / Σ w` and
/// `Σ w·logsumexp² / Σ w` (0 when no position counts), and the loss `ce + z_loss_weight·z`.
pub fn token_cross_entropy(
    logits: Tensor<4>,
    targets: Tensor<3, Int>,
    weight: Tensor<3>,
    z_loss_weight: f64,
) -> TokenLosses {
    if on_cpu_f32(&logits) {
        return cpu::xent::token_losses(logits, targets, weight, z_loss_weight);
    }
    let (ce, z) = losses_by_tensor_ops(logits, targets, weight);
    TokenLosses { loss: ce.clone() + z.clone() * z_loss_weight, ce, z }
}

/// `(ce, z)` from Burn ops: the Burn-op path of [`token_cross_entropy`].
fn losses_by_tensor_ops(
    logits: Tensor<4>,
    targets: Tensor<3, Int>,
    weight: Tensor<3>,
) -> (Tensor<1>, Tensor<1>) {
    let [b, t, n, _] = logits.dims();
    let logp = log_softmax(logits.clone(), 3); // [b, t, n, v]
    let nll = -logp.gather(3, targets.reshape([b, t, n, 1])).reshape([b, t, n]); // [b, t, n]
    let max = logits.clone().detach().max_dim(3); // [b, t, n, 1]
    let lse = (logits - max.clone()).exp().sum_dim(3).log() + max; // [b, t, n, 1]
    let lse = lse.reshape([b, t, n]); // [b, t, n]
    let count = weight.clone().sum().clamp_min(1.0); // [1]
    let ce = (nll * weight.clone()).sum() / count.clone();
    let z = (lse.powi_scalar(2) * weight).sum() / count;
    (ce, z)
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::{Device, Distribution, TensorData};

    /// The CPU path against the Burn-op path: losses and logit gradients, with and without
    /// the z-loss in the loss.
    #[test]
    fn cpu_path_equals_tensor_ops() {
        let device = Device::flex().autodiff();
        let (dims, v) = ([2, 3, 5], 11);
        let logits = Tensor::<4>::random([2, 3, 5, v], Distribution::Normal(0.0, 3.0), &device);
        let targets = Tensor::<3, Int>::random(dims, Distribution::Uniform(0.0, v as f64), &device);
        let weight = Tensor::<3>::random(dims, Distribution::Bernoulli(0.6), &device);
        for lambda in [0.0, 0.25] {
            let run = |cpu: bool| {
                let x = logits.clone().detach().require_grad();
                let out = if cpu {
                    token_cross_entropy(x.clone(), targets.clone(), weight.clone(), lambda)
                } else {
                    let (ce, z) = losses_by_tensor_ops(x.clone(), targets.clone(), weight.clone());
                    TokenLosses { loss: ce.clone() + z.clone() * lambda, ce, z }
                };
                let scalars = [&out.loss, &out.ce, &out.z].map(|s| s.clone().into_scalar::<f32>());
                let g: Vec<f32> = x.grad(&out.loss.backward()).unwrap().try_into_vec_as::<f32>().unwrap();
                (scalars, g)
            };
            let ((cpu, cg), (ops, og)) = (run(true), run(false));
            for (a, b) in cpu.iter().zip(&ops) {
                assert!((a - b).abs() <= 1e-5 * b.abs().max(1.0), "λ = {lambda}: {cpu:?} vs {ops:?}");
            }
            for (a, b) in cg.iter().zip(&og) {
                assert!((a - b).abs() <= 1e-6, "λ = {lambda}: gradient {a} vs {b}");
            }
        }
    }

    #[test]
    fn untracked_cpu_losses_equal_tracked_ones() {
        let (dims, v) = ([1, 2, 4], 6);
        let mk = |device: &Device| {
            let logits = Tensor::<4>::from_data(
                TensorData::new(
                    (0..8 * v).map(|i| (i as f32 * 0.3).cos() * 4.0).collect::<Vec<_>>(),
                    [1, 2, 4, v],
                ),
                device,
            );
            let targets =
                Tensor::<3, Int>::from_data(TensorData::new(vec![0i64, 1, 2, 3, 4, 5, 0, 1], dims), device);
            let weight = Tensor::<3>::ones(dims, device);
            token_cross_entropy(logits, targets, weight, 0.1)
        };
        let plain = mk(&Device::flex());
        let taped = mk(&Device::flex().autodiff());
        for (a, b) in [(plain.loss, taped.loss), (plain.ce, taped.ce), (plain.z, taped.z)] {
            let (a, b) = (a.into_scalar::<f32>(), b.into_scalar::<f32>());
            assert!((a - b).abs() <= 1e-6 * b.abs().max(1.0), "{a} vs {b}");
        }
    }
}
