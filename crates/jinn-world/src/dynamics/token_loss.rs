//! The token loss of the dynamics models (as Jasmine's
//! `baselines/maskgit/train_dynamics_maskgit.py` and `train_dynamics_causal.py`):
//! cross-entropy and z-loss averaged over the loss positions. On the CPU backend one host pass computes both and their gradient
//! ([`jinn_nn::host_xent`]); the tape then holds only `Σ logits·sg(grad)`. Other backends build
//! them from Burn ops.

use burn::tensor::activation::log_softmax;
use burn::tensor::{Int, Tensor, TensorData};
use jinn_nn::host_math::runs_on_host;
use jinn_nn::host_xent::softmax_xent_rows;

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
pub fn weighted_token_losses(
    logits: Tensor<4>,
    targets: Tensor<3, Int>,
    weight: Tensor<3>,
    z_loss_weight: f64,
) -> TokenLosses {
    if runs_on_host(&logits) {
        return host_losses(logits, targets, weight, z_loss_weight);
    }
    let (ce, z) = losses_by_tensor_ops(logits, targets, weight);
    TokenLosses { loss: ce.clone() + z.clone() * z_loss_weight, ce, z }
}

/// `weight` `[B, T, N]` with every token that differs from the token at the same position one
/// frame earlier (frames `1..T`) scaled by `changed`; `weight` itself when `changed` is 1.
pub fn changed_token_weights(weight: Tensor<3>, tokens: &Tensor<3, Int>, changed: f64) -> Tensor<3> {
    if changed == 1.0 {
        return weight;
    }
    let [b, t, n] = tokens.dims();
    let ids: Vec<i64> =
        tokens.clone().into_data().convert::<i64>().try_into_vec::<i64>().expect("integer tokens");
    let scale: Vec<f32> = (0..b * t * n)
        .map(|i| {
            let frame = (i / n) % t;
            if frame > 0 && ids[i] != ids[i - n] {
                changed as f32
            } else {
                1.0
            }
        })
        .collect();
    let device = weight.device();
    weight * Tensor::<3>::from_data(TensorData::new(scale, [b, t, n]), &device)
}

/// The host path: losses and gradient from [`softmax_xent_rows`]; under autodiff the loss is
/// `Σ logits·sg(grad) + sg(loss − Σ logits·grad)`, whose value is the loss (to rounding) and
/// whose gradient is `grad`.
fn host_losses(
    logits: Tensor<4>,
    targets: Tensor<3, Int>,
    weight: Tensor<3>,
    z_loss_weight: f64,
) -> TokenLosses {
    let device = logits.device();
    let shape = logits.shape();
    let v = logits.dims()[3];
    let tracked = logits.is_tracked();
    let x: Vec<f32> =
        logits.clone().detach().into_data().try_into_vec::<f32>().expect("f32 logits (checked)");
    let t: Vec<i64> = targets.into_data().convert::<i64>().try_into_vec::<i64>().expect("integer targets");
    let w: Vec<f32> = weight.into_data().convert::<f32>().try_into_vec::<f32>().expect("float weights");
    let mut grad = if tracked { vec![0.0f32; x.len()] } else { Vec::new() };
    let means = softmax_xent_rows(&x, &t, &w, v, z_loss_weight as f32, tracked.then_some(&mut grad[..]));
    let scalar = |value: f64| Tensor::<1>::from_data(TensorData::new(vec![value as f32], [1]), &device);
    let value = means.ce + z_loss_weight * means.z;
    let loss = if tracked {
        let grad = Tensor::<4>::from_data(TensorData::new(grad, shape), &device); // [b, t, n, v]
        (logits * grad).sum() + scalar(value - means.logits_dot_grad)
    } else {
        scalar(value)
    };
    TokenLosses { loss, ce: scalar(means.ce), z: scalar(means.z) }
}

/// `(ce, z)` from Burn ops (GPU backends).
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
    use burn::tensor::{Device, Distribution};

    /// The host path against the Burn-op path: losses and logit gradients, with and without
    /// the z-loss in the loss.
    #[test]
    fn host_path_equals_tensor_ops() {
        let device = Device::flex().autodiff();
        let (dims, v) = ([2, 3, 5], 11);
        let logits = Tensor::<4>::random([2, 3, 5, v], Distribution::Normal(0.0, 3.0), &device);
        let targets = Tensor::<3, Int>::random(dims, Distribution::Uniform(0.0, v as f64), &device);
        let weight = Tensor::<3>::random(dims, Distribution::Bernoulli(0.6), &device);
        for lambda in [0.0, 0.25] {
            let run = |host: bool| {
                let x = logits.clone().detach().require_grad();
                let out = if host {
                    host_losses(x.clone(), targets.clone(), weight.clone(), lambda)
                } else {
                    let (ce, z) = losses_by_tensor_ops(x.clone(), targets.clone(), weight.clone());
                    TokenLosses { loss: ce.clone() + z.clone() * lambda, ce, z }
                };
                let scalars = [&out.loss, &out.ce, &out.z].map(|s| s.clone().into_scalar::<f32>());
                let g: Vec<f32> = x.grad(&out.loss.backward()).unwrap().try_into_vec_as::<f32>().unwrap();
                (scalars, g)
            };
            let ((host, hg), (ops, og)) = (run(true), run(false));
            for (a, b) in host.iter().zip(&ops) {
                assert!((a - b).abs() <= 1e-5 * b.abs().max(1.0), "λ = {lambda}: {host:?} vs {ops:?}");
            }
            for (a, b) in hg.iter().zip(&og) {
                assert!((a - b).abs() <= 1e-6, "λ = {lambda}: gradient {a} vs {b}");
            }
        }
    }

    #[test]
    fn untracked_host_losses_equal_tracked_ones() {
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
            host_losses(logits, targets, weight, 0.1)
        };
        let plain = mk(&Device::flex());
        let taped = mk(&Device::flex().autodiff());
        for (a, b) in [(plain.loss, taped.loss), (plain.ce, taped.ce), (plain.z, taped.z)] {
            let (a, b) = (a.into_scalar::<f32>(), b.into_scalar::<f32>());
            assert!((a - b).abs() <= 1e-6 * b.abs().max(1.0), "{a} vs {b}");
        }
    }
}
