//! Weighted softmax cross-entropy with z-loss over rows of logits: the mean losses and their
//! gradient in one host pass, for the CPU backend.
//!
//! Built from Burn ops, the loss of a `[rows, V]` logit tensor is a `log_softmax`, a gather, a
//! second `logsumexp` for the z-loss and their backward passes: a dozen single-threaded passes
//! over the logits, each a libm `expf` per element where it exponentiates. Here every row is
//! read once: `lse = max + ln Σ exp(x − max)`, `nll = lse − x[target]`, and the gradient of
//! `Σ w·(nll + λ·lse²) / Σ w`, `w/Σw · (p·(1 + 2λ·lse) − onehot(target))` with `p = softmax(x)`,
//! is written out at once. Rows of weight 0 are skipped. [`token_losses`] puts the loss on an
//! autodiff tape as `Σ x·sg(grad) + sg(offset)`.

use burn::tensor::{Int, Tensor, TensorData};
use rayon::prelude::*;

use super::math::exp_f32;
use crate::ops::TokenLosses;

/// The token losses of `logits` `[B, T, N, V]` (see [`crate::ops::token_cross_entropy`]) from
/// [`softmax_xent_rows`]; under autodiff the loss is `Σ logits·sg(grad) + sg(loss − Σ logits·grad)`,
/// whose value is the loss (to rounding) and whose gradient is `grad`. CPU backend, f32 only.
pub(in crate::ops) fn token_losses(
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

/// Rows per rayon task (≈ 64 kB of logits at V = 1024).
const ROWS_PER_TASK: usize = 16;

/// Mean cross-entropy and z-loss of weighted rows (see [`softmax_xent_rows`]).
#[derive(Clone, Copy, Debug, PartialEq)]
struct XentMeans {
    /// `Σ w·nll / Σ w` (0 when no row counts).
    ce: f64,
    /// `Σ w·lse² / Σ w`.
    z: f64,
    /// `Σ w`, the number of counted rows for 0/1 weights.
    weight_sum: f64,
    /// `Σ logits·grad` over every element when the gradient was written (else 0): what a
    /// tangent-line tape `Σ logits·sg(grad)` evaluates to, so its offset is `loss − this`.
    logits_dot_grad: f64,
}

/// Cross-entropy of the rows of `logits` `[rows, v]` against `targets` `[rows]`, weighted by
/// `weight` `[rows]` and averaged over `max(Σ w, 1)`, with the z-loss `logsumexp²` averaged the
/// same way. With `grad` `[rows, v]`, also writes the gradient of `ce + z_weight·z` with
/// respect to the logits (zero rows where `w = 0`).
///
/// # Panics
/// If the lengths disagree or a counted row's target is not in `0..v` (a caller's bug: token
/// ids come from a tokenizer with `v` codes).
fn softmax_xent_rows(
    logits: &[f32],
    targets: &[i64],
    weight: &[f32],
    v: usize,
    z_weight: f32,
    grad: Option<&mut [f32]>,
) -> XentMeans {
    let rows = targets.len();
    assert!(v > 0 && logits.len() == rows * v && weight.len() == rows, "softmax_xent_rows: shape mismatch");
    let weight_sum: f64 = weight.iter().map(|&w| w as f64).sum();
    let scale = 1.0 / weight_sum.max(1.0);
    let task = |(r0, x, g): (usize, &[f32], Option<&mut [f32]>)| -> [f64; 3] {
        let rows = r0..r0 + x.len() / v;
        let job = RowsJob {
            targets: &targets[rows.clone()],
            weight: &weight[rows],
            v,
            z_weight,
            scale: scale as f32,
        };
        run_rows(&job, x, g)
    };
    let chunk = ROWS_PER_TASK * v;
    // Per-task partial sums collected in order and added in order: the result does not depend
    // on how rayon splits the work.
    let partials: Vec<[f64; 3]> = match grad {
        Some(g) => {
            assert_eq!(g.len(), logits.len(), "softmax_xent_rows: gradient buffer length");
            logits
                .par_chunks(chunk)
                .zip(g.par_chunks_mut(chunk))
                .enumerate()
                .map(|(i, (x, g))| task((i * ROWS_PER_TASK, x, Some(g))))
                .collect()
        }
        None => {
            logits.par_chunks(chunk).enumerate().map(|(i, x)| task((i * ROWS_PER_TASK, x, None))).collect()
        }
    };
    let [nll, z, dot] = partials.iter().fold([0.0; 3], |a, b| [a[0] + b[0], a[1] + b[1], a[2] + b[2]]);
    XentMeans { ce: nll * scale, z: z * scale, weight_sum, logits_dot_grad: dot }
}

/// What every task of [`softmax_xent_rows`] shares.
struct RowsJob<'a> {
    /// This task's targets and weights.
    targets: &'a [i64],
    weight: &'a [f32],
    v: usize,
    z_weight: f32,
    /// `1 / max(Σ w, 1)`.
    scale: f32,
}

/// One task's rows: the AVX2 build where the CPU has it, else the baseline one.
fn run_rows(job: &RowsJob, x: &[f32], grad: Option<&mut [f32]>) -> [f64; 3] {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2 (checked just above).
        return unsafe { rows_avx2(job, x, grad) };
    }
    rows(job, x, grad)
}

/// [`rows`] compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn rows_avx2(job: &RowsJob, x: &[f32], grad: Option<&mut [f32]>) -> [f64; 3] {
    rows(job, x, grad)
}

/// `[Σ w·nll, Σ w·lse², Σ x·grad]` of the rows in `x`, the gradient rows written to `grad` if
/// given.
#[inline(always)]
fn rows(job: &RowsJob, x: &[f32], mut grad: Option<&mut [f32]>) -> [f64; 3] {
    let RowsJob { targets, weight, v, z_weight, scale } = *job;
    let write_grad = grad.is_some();
    let mut scratch = vec![0.0f32; if write_grad { 0 } else { v }];
    let (mut nll_sum, mut z_sum, mut dot_sum) = (0.0f64, 0.0f64, 0.0f64);
    for (r, row) in x.chunks_exact(v).enumerate() {
        let w = weight[r];
        let out: &mut [f32] = match grad.as_deref_mut() {
            Some(g) => &mut g[r * v..(r + 1) * v],
            None => &mut scratch,
        };
        if w == 0.0 {
            out.fill(0.0);
            continue;
        }
        let target = usize::try_from(targets[r]).ok().filter(|&t| t < v);
        let target = target.unwrap_or_else(|| panic!("target {} is not a class in 0..{v}", targets[r]));
        let max = row.iter().fold(f32::NEG_INFINITY, |m, &a| m.max(a));
        for (e, &a) in out.iter_mut().zip(row) {
            *e = exp_f32(a - max);
        }
        let sum = lane_sum(out);
        let lse = max + sum.ln();
        nll_sum += w as f64 * (lse - row[target]) as f64;
        z_sum += w as f64 * (lse as f64) * (lse as f64);
        if write_grad {
            // w/Σw · (p·(1 + 2λ·lse) − onehot): p = e / sum.
            let k = w * scale * (1.0 + 2.0 * z_weight * lse) / sum;
            for e in out.iter_mut() {
                *e *= k;
            }
            out[target] -= w * scale;
            dot_sum += lane_dot(row, out) as f64;
        }
    }
    [nll_sum, z_sum, dot_sum]
}

/// Sum of `x` with eight independent partial sums (so the loop vectorises).
#[inline(always)]
fn lane_sum(x: &[f32]) -> f32 {
    lane_dot_with(x, x, |a, _| a)
}

/// `Σ a·b`, likewise.
#[inline(always)]
fn lane_dot(a: &[f32], b: &[f32]) -> f32 {
    lane_dot_with(a, b, |a, b| a * b)
}

/// `Σ term(aᵢ, bᵢ)` over eight lanes.
#[inline(always)]
fn lane_dot_with(a: &[f32], b: &[f32], term: impl Fn(f32, f32) -> f32) -> f32 {
    let mut lanes = [0.0f32; 8];
    let (mut ia, mut ib) = (a.chunks_exact(8), b.chunks_exact(8));
    for (ca, cb) in (&mut ia).zip(&mut ib) {
        for ((l, &x), &y) in lanes.iter_mut().zip(ca).zip(cb) {
            *l += term(x, y);
        }
    }
    let tail: f32 = ia.remainder().iter().zip(ib.remainder()).map(|(&x, &y)| term(x, y)).sum();
    lanes.iter().sum::<f32>() + tail
}

#[cfg(test)]
mod tests {
    use super::*;

    /// f64 loops: the means and the gradient of `ce + λ·z`.
    fn naive(x: &[f32], t: &[i64], w: &[f32], v: usize, lambda: f64) -> (f64, f64, Vec<f64>) {
        let count = w.iter().map(|&w| w as f64).sum::<f64>().max(1.0);
        let (mut ce, mut z, mut g) = (0.0, 0.0, vec![0.0; x.len()]);
        for (r, row) in x.chunks(v).enumerate() {
            let max = row.iter().fold(f64::NEG_INFINITY, |m, &a| m.max(a as f64));
            let sum: f64 = row.iter().map(|&a| (a as f64 - max).exp()).sum();
            let lse = max + sum.ln();
            let wr = w[r] as f64;
            ce += wr * (lse - row[t[r] as usize] as f64);
            z += wr * lse * lse;
            for j in 0..v {
                let p = (row[j] as f64 - lse).exp();
                let onehot = if j == t[r] as usize { 1.0 } else { 0.0 };
                g[r * v + j] = wr / count * (p * (1.0 + 2.0 * lambda * lse) - onehot);
            }
        }
        (ce / count, z / count, g)
    }

    #[test]
    fn matches_f64_loops_with_and_without_gradient() {
        let (rows, v) = (3 * ROWS_PER_TASK + 5, 37);
        let x: Vec<f32> = (0..rows * v).map(|i| (i as f32 * 0.71).sin() * 9.0).collect();
        let t: Vec<i64> = (0..rows).map(|r| (r * 7 % v) as i64).collect();
        let w: Vec<f32> = (0..rows).map(|r| if r % 3 == 1 { 0.0 } else { 1.0 }).collect();
        for lambda in [0.0, 0.3] {
            let (ce, z, g) = naive(&x, &t, &w, v, lambda);
            let mut got_g = vec![f32::NAN; x.len()];
            let with = softmax_xent_rows(&x, &t, &w, v, lambda as f32, Some(&mut got_g));
            let without = softmax_xent_rows(&x, &t, &w, v, lambda as f32, None);
            assert_eq!([with.ce, with.z, with.weight_sum], [without.ce, without.z, without.weight_sum]);
            assert!((with.ce - ce).abs() < 1e-5 * ce.abs().max(1.0), "ce {} vs {ce}", with.ce);
            assert!((with.z - z).abs() < 1e-5 * z.abs().max(1.0), "z {} vs {z}", with.z);
            assert_eq!(with.weight_sum, w.iter().map(|&w| w as f64).sum::<f64>());
            let dot: f64 = x.iter().zip(&g).map(|(&a, &b)| a as f64 * b).sum();
            assert!((with.logits_dot_grad - dot).abs() < 1e-5, "Σ x·grad {} vs {dot}", with.logits_dot_grad);
            assert_eq!(without.logits_dot_grad, 0.0);
            for (a, b) in got_g.iter().zip(&g) {
                assert!((*a as f64 - b).abs() < 1e-6, "gradient {a} vs {b}");
            }
        }
    }

    #[test]
    fn no_counted_row_gives_zero_losses_and_gradient() {
        let x = vec![1.0f32; 4 * 5];
        let mut g = vec![f32::NAN; x.len()];
        let m = softmax_xent_rows(&x, &[0, 1, 2, 3], &[0.0; 4], 5, 0.1, Some(&mut g));
        assert_eq!((m.ce, m.z, m.weight_sum), (0.0, 0.0, 0.0));
        assert!(g.iter().all(|&a| a == 0.0));
    }

    #[test]
    #[should_panic(expected = "target 9 is not a class in 0..5")]
    fn a_target_outside_the_vocabulary_is_reported() {
        softmax_xent_rows(&[0.0; 5], &[9], &[1.0], 5, 0.0, None);
    }
}
