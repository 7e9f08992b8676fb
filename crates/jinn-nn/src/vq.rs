//! Vector quantiser with cosine-similarity code selection (Jasmine's `VectorQuantizer` in
//! `jasmine/utils/nn.py`; the dead-code reset of `jasmine/baselines/train_lam.py`).
//!
//! Forward on `x` `[D, L]`:
//! 1. `x̂ = x / (‖x‖₂ + 1e-8)` row-wise, `Ĉ` likewise for the codebook rows;
//! 2. `dist = −x̂·Ĉᵀ` `[D, K]`;
//! 3. training only: inverted dropout on `dist` (kept entries scaled by `1/(1−p)`, dropped
//!    entries set to 0) — this randomises the choice;
//! 4. `idx = argmin(dist)` (first index on ties);
//! 5. `z = C[idx]`, the **un-normalised** code;
//! 6. straight-through `z_q = x̂ + stop_grad(z − x̂)` (value `z`, gradient to `x̂`).
//!
//! Losses (β = 0.25): codebook `mean((sg(x̂) − z)²)` trains C, commitment
//! `mean((x̂ − sg(z))²)` trains the encoder.
//!
//! Deviation: Jasmine computes the quantiser in bf16; here it runs in the tensors' dtype
//! (f32 on CPU). Randomness (dropout, dead-code reset) comes from a caller-supplied
//! [`rand::Rng`], which the trainer derives from (seed, step, purpose).

use burn::config::Config;
use burn::module::{Module, Param};
use burn::tensor::{Bool, Device, Distribution, Int, Tensor, TensorData};
use rand::Rng;

use crate::error::NnError;
use crate::init;

/// Commitment-loss weight β (`vq_beta`).
pub const VQ_BETA: f64 = 0.25;

/// Added to the L2 norm before dividing.
const NORM_EPS: f64 = 1e-8;

/// Configuration of [`VectorQuantizer`].
#[derive(Config, Debug)]
pub struct VectorQuantizerConfig {
    /// Codebook size `K`.
    pub num_codes: usize,
    /// Code width `L`.
    pub code_dim: usize,
    /// Codebook-dropout probability on the distance matrix in training.
    #[config(default = 0.01)]
    pub dropout: f64,
}

impl VectorQuantizerConfig {
    /// Builds the quantiser: codebook entries ~ N(0, 1), then every row L2-normalised
    /// (drawn lazily at first use from the device RNG, see [`crate::init`]).
    pub fn init(&self, device: &Device) -> Result<VectorQuantizer, NnError> {
        if self.num_codes == 0 || self.code_dim == 0 {
            return Err(NnError::InvalidConfig {
                field: "num_codes/code_dim",
                reason: "must be positive".into(),
            });
        }
        if !(0.0..1.0).contains(&self.dropout) {
            return Err(NnError::InvalidConfig {
                field: "dropout",
                reason: format!("must be in [0, 1), got {}", self.dropout),
            });
        }
        let (k, l) = (self.num_codes, self.code_dim);
        let codebook = init::lazy_param([k, l], device, move |dev| {
            let c = init::host_random([k, l], Distribution::Normal(0.0, 1.0), dev); // [k, l]
            let norm = c.clone().powi_scalar(2).sum_dim(1).sqrt(); // [k, 1]
            c / norm
        });
        Ok(VectorQuantizer { codebook, dropout: self.dropout })
    }
}

/// Codebook `C` `[K, L]` and the dropout rate used by [`VectorQuantizer::forward_train`].
#[derive(Module, Debug)]
pub struct VectorQuantizer {
    /// Codebook `[K, L]`.
    pub codebook: Param<Tensor<2>>,
    /// Codebook-dropout probability.
    pub dropout: f64,
}

/// Result of a quantiser forward pass over `D` vectors.
#[derive(Debug, Clone)]
pub struct VqOutput {
    /// Straight-through output `[D, L]`: value `z`, gradient into `emb`.
    pub z_q: Tensor<2>,
    /// Selected raw (un-normalised) code vectors `C[idx]` `[D, L]`; carries the codebook gradient.
    pub z: Tensor<2>,
    /// Normalised inputs `x̂` `[D, L]`.
    pub emb: Tensor<2>,
    /// Selected code indices `[D]`.
    pub indices: Tensor<1, Int>,
}

impl VqOutput {
    /// Codebook loss `mean((sg(x̂) − z)²)` (scalar `[1]`).
    pub fn codebook_loss(&self) -> Tensor<1> {
        (self.emb.clone().detach() - self.z.clone()).powi_scalar(2).mean()
    }

    /// Commitment loss `mean((x̂ − sg(z))²)` (scalar `[1]`).
    pub fn commitment_loss(&self) -> Tensor<1> {
        (self.emb.clone() - self.z.clone().detach()).powi_scalar(2).mean()
    }

    /// VQ term `codebook + β·commitment`.
    pub fn loss(&self, beta: f64) -> Tensor<1> {
        self.codebook_loss() + self.commitment_loss() * beta
    }
}

/// Row-wise `x / (‖x‖₂ + 1e-8)` of `[rows, L]`.
fn normalize(x: Tensor<2>) -> Tensor<2> {
    let norm = x.clone().powi_scalar(2).sum_dim(1).sqrt() + NORM_EPS; // [rows, 1]
    x / norm
}

/// A codebook-dropout mask `[rows, codes]` (`true` = dropped), every entry dropped
/// independently with probability `p` in `[0, 1)`.
///
/// Drawn as a Bernoulli process by skipping: the gap before the next dropped entry is
/// geometric, `⌊ln U / ln(1−p)⌋` with `U` uniform in `(0, 1]`, so the cost is one draw per
/// *dropped* entry (≈ 21k for 2048×1024 at p = 0.01) instead of one per entry (2M).
pub fn dropout_mask(
    rows: usize,
    codes: usize,
    p: f64,
    rng: &mut impl Rng,
    device: &Device,
) -> Tensor<2, Bool> {
    let mut mask = vec![false; rows * codes];
    fill_dropout(&mut mask, p, rng);
    Tensor::from_data(TensorData::new(mask, [rows, codes]), device)
}

/// Drops entries of the all-`false` `mask` with probability `p` (see [`dropout_mask`]).
fn fill_dropout(mask: &mut [bool], p: f64, rng: &mut impl Rng) {
    let len = mask.len();
    if p > 0.0 {
        let log_keep = (1.0 - p).ln(); // < 0
        let mut pos = 0usize;
        loop {
            let u = 1.0 - rng.random::<f64>(); // (0, 1]
            let gap = (u.ln() / log_keep).floor(); // kept entries before the next dropped one, ≥ 0
            if gap >= (len - pos) as f64 {
                break;
            }
            pos += gap as usize;
            mask[pos] = true;
            pos += 1;
            if pos >= len {
                break;
            }
        }
    }
}

/// A dropout mask `[rows, codes]` whose rows belong to `sample_rngs.len()` samples in order
/// (equally many each); each sample's rows are drawn from its own generator, so a sample's
/// mask does not depend on the other samples of its batch.
pub fn per_sample_dropout_mask<R: Rng>(
    rows: usize,
    codes: usize,
    p: f64,
    sample_rngs: &mut [R],
    device: &Device,
) -> Result<Tensor<2, Bool>, NnError> {
    let samples = sample_rngs.len();
    if samples == 0 || !rows.is_multiple_of(samples) {
        return Err(NnError::InvalidConfig {
            field: "codebook dropout",
            reason: format!("{rows} rows cannot be split evenly over {samples} sample generators"),
        });
    }
    // One buffer, each sample's rows filled in place (a collected iterator of 2 M bools costs
    // a few ms a step at Jasmine's sizes).
    let mut mask = vec![false; rows * codes];
    for (rows_of_sample, rng) in mask.chunks_mut(rows / samples * codes).zip(sample_rngs) {
        fill_dropout(rows_of_sample, p, rng);
    }
    Ok(Tensor::from_data(TensorData::new(mask, [rows, codes]), device))
}

impl VectorQuantizer {
    /// Codebook size `K`.
    pub fn num_codes(&self) -> usize {
        self.codebook.val().dims()[0]
    }

    /// Evaluation forward (no dropout): `x` `[D, L]`.
    pub fn forward(&self, x: Tensor<2>) -> VqOutput {
        self.quantize(x, None)
    }

    /// Training forward: codebook dropout with probability `self.dropout`. The rows of `x`
    /// belong to `sample_rngs.len()` samples in order, each drawing its rows' dropout from its
    /// own generator ([`per_sample_dropout_mask`]).
    pub fn forward_train<R: Rng>(&self, x: Tensor<2>, sample_rngs: &mut [R]) -> Result<VqOutput, NnError> {
        if self.dropout == 0.0 {
            return Ok(self.quantize(x, None));
        }
        let [d, _] = x.dims();
        let mask = per_sample_dropout_mask(d, self.num_codes(), self.dropout, sample_rngs, &x.device())?;
        Ok(self.quantize(x, Some(mask)))
    }

    /// Forward with an explicit dropout mask `[D, K]` (`true` = dropped), or none.
    pub fn quantize(&self, x: Tensor<2>, dropped: Option<Tensor<2, Bool>>) -> VqOutput {
        let [d, _] = x.dims();
        let codebook = self.codebook.val(); // [k, l]
        let emb = normalize(x); // [d, l]
        let codes_hat = normalize(codebook.clone().detach()); // [k, l]

        // The choice takes no gradient: compute it off the autodiff tape.
        let dist = emb.clone().detach().matmul(codes_hat.transpose()).neg(); // [d, k]
        let dist = match dropped {
            Some(mask) => (dist / (1.0 - self.dropout)).mask_fill(mask, 0.0), // [d, k]
            None => dist,
        };
        let indices = dist.argmin(1).reshape([d]); // [d]
        let z = codebook.select(0, indices.clone()); // [d, l]
        let z_q = emb.clone() + (z.clone() - emb.clone()).detach(); // [d, l]
        VqOutput { z_q, z, emb, indices }
    }

    /// Cosine similarity of every row of `x` `[D, L]` to every code `[D, K]`, with gradients
    /// into both `x` and the codebook (the logits of a code classifier).
    pub fn cosine_similarities(&self, x: Tensor<2>) -> Tensor<2> {
        normalize(x).matmul(normalize(self.codebook.val()).transpose()) // [d, k]
    }

    /// The largest cosine similarity between two distinct codes (1 when two codes point the
    /// same way; 0 for a single code): a codebook collapsed to one direction shows up here
    /// even while every code is "used".
    pub fn max_code_cosine(&self) -> f64 {
        let [k, l] = self.codebook.val().dims();
        let c: Vec<f32> = self.codebook.val().detach().try_into_vec_as::<f32>().expect("float tensor data");
        let rows: Vec<Vec<f64>> = c
            .chunks(l)
            .map(|r| {
                let norm = r.iter().map(|&x| (x as f64).powi(2)).sum::<f64>().sqrt() + NORM_EPS;
                r.iter().map(|&x| x as f64 / norm).collect()
            })
            .collect();
        let mut best = if k > 1 { f64::NEG_INFINITY } else { 0.0 };
        for i in 0..k {
            for j in i + 1..k {
                best = best.max(rows[i].iter().zip(&rows[j]).map(|(a, b)| a * b).sum());
            }
        }
        best
    }

    /// Raw codebook rows `C[idx]` `[D, L]` for indices `[D]`.
    pub fn codes(&self, indices: Tensor<1, Int>) -> Tensor<2> {
        self.codebook.val().select(0, indices)
    }

    /// Replaces codebook row `dead` by a copy of row `source` for every pair, keeping the
    /// parameter id (optimizer state is untouched, as in Jasmine). Works on autodiff devices:
    /// the new codebook is a fresh leaf that keeps the old one's `require_grad` flag.
    pub fn reset_codes(self, resets: &[CodeReset]) -> Result<Self, NnError> {
        let k = self.num_codes();
        if let Some(bad) = resets.iter().find(|r| r.source >= k) {
            return Err(NnError::Shape {
                what: "code reset source",
                expected: format!("< {k}"),
                got: format!("{bad:?}"),
            });
        }
        let codebook = self.codebook.val().detach(); // [k, l]
        let sources: Vec<i64> = resets.iter().map(|r| r.source as i64).collect();
        let device = codebook.device();
        let picked = Tensor::<1, Int>::from_data(TensorData::new(sources, [resets.len()]), &device);
        let values = codebook.select(0, picked); // [resets, l]
        let rows: Vec<usize> = resets.iter().map(|r| r.dead).collect();
        self.overwrite_codes(&rows, values)
    }

    /// Applies dead-code `resets` as `target` says: [`ResetTarget::UsedCode`] copies each
    /// reset's `source` code; [`ResetTarget::EncoderOutput`] moves each dead code onto a row of
    /// `emb` `[D, L]` (the batch's normalised encoder outputs) drawn uniformly from `rng`.
    pub fn apply_resets(
        self,
        resets: &[CodeReset],
        target: ResetTarget,
        emb: Tensor<2>,
        rng: &mut impl Rng,
    ) -> Result<Self, NnError> {
        if resets.is_empty() {
            return Ok(self);
        }
        match target {
            ResetTarget::UsedCode => self.reset_codes(resets),
            ResetTarget::EncoderOutput => {
                let d = emb.dims()[0];
                if d == 0 {
                    return Err(NnError::Shape {
                        what: "encoder outputs for a code reset",
                        expected: "at least one row".into(),
                        got: "0".into(),
                    });
                }
                let picks: Vec<i64> = resets.iter().map(|_| rng.random_range(0..d) as i64).collect();
                let device = emb.device();
                let picked = Tensor::<1, Int>::from_data(TensorData::new(picks, [resets.len()]), &device);
                let values = emb.detach().select(0, picked); // [resets, l]
                let rows: Vec<usize> = resets.iter().map(|r| r.dead).collect();
                self.overwrite_codes(&rows, values)
            }
        }
    }

    /// Codebook rows `rows[i]` replaced by `values[i]` `[rows, L]`, the others kept; the
    /// parameter id and its `require_grad` flag are kept (see [`VectorQuantizer::reset_codes`]).
    pub fn overwrite_codes(self, rows: &[usize], values: Tensor<2>) -> Result<Self, NnError> {
        let [k, l] = self.codebook.val().dims();
        if let Some(bad) = rows.iter().find(|&&r| r >= k) {
            return Err(NnError::Shape {
                what: "code reset index",
                expected: format!("< {k}"),
                got: bad.to_string(),
            });
        }
        if values.dims() != [rows.len(), l] {
            return Err(NnError::Shape {
                what: "new code vectors [rows, L]",
                expected: format!("[{}, {l}]", rows.len()),
                got: format!("{:?}", values.dims()),
            });
        }
        // Row r of [codebook; values] that ends up at each position: itself, or its replacement.
        let mut mapping: Vec<i64> = (0..k as i64).collect();
        for (i, &r) in rows.iter().enumerate() {
            mapping[r] = (k + i) as i64;
        }
        let codebook = self.codebook.map(|c| {
            let requires = c.is_require_grad();
            let device = c.device();
            let mapping = Tensor::<1, Int>::from_data(TensorData::new(mapping, [k]), &device);
            let stacked = Tensor::cat(vec![c.detach(), values.detach().to_device(&device)], 0); // [k + rows, l]

            // `select` makes a non-leaf on an autodiff device, which cannot require gradients;
            // the second `detach` turns it into a fresh leaf.
            let replaced = stacked.select(0, mapping).detach(); // [k, l]
            if requires {
                replaced.require_grad()
            } else {
                replaced.set_require_grad(false)
            }
        });
        Ok(Self { codebook, ..self })
    }
}

/// Where a dead code is moved by a reset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResetTarget {
    /// Onto a normalised encoder output of the current batch (the k-means-style restart of
    /// Jukebox and SoundStream); the default. A copy of a live code starts on the same spot,
    /// so when the encoder outputs all sit near one code the copies only split that spot:
    /// every code is "used" while all mean the same (the demo LAM ended with 6 codes of
    /// pairwise cosine 0.999 and an NMI with the true actions of 0.03).
    #[default]
    EncoderOutput,
    /// A copy of a code used in the batch (Jasmine's `train_lam.py`).
    UsedCode,
}

/// Per-code usage of a batch of indices.
#[derive(Debug, Clone, PartialEq)]
pub struct CodeUsage {
    /// Occurrences of each code `[K]`.
    pub counts: Vec<u64>,
}

impl CodeUsage {
    /// Counts the indices `[D]` into `num_codes` bins; an index `≥ num_codes` is an error.
    pub fn from_indices(indices: Tensor<1, Int>, num_codes: usize) -> Result<Self, NnError> {
        let idx: Vec<i64> = indices.try_into_vec_as::<i64>().expect("integer tensor data");
        let mut counts = vec![0u64; num_codes];
        for &i in &idx {
            let slot = usize::try_from(i).ok().filter(|&i| i < num_codes).ok_or_else(|| NnError::Shape {
                what: "code index",
                expected: format!("in 0..{num_codes}"),
                got: i.to_string(),
            })?;
            counts[slot] += 1;
        }
        Ok(Self { counts })
    }

    /// Fraction of the K codes used at least once (Jasmine's `codebook_usage`).
    pub fn fraction_used(&self) -> f64 {
        let used = self.counts.iter().filter(|&&c| c > 0).count();
        used as f64 / self.counts.len().max(1) as f64
    }
}

/// One dead-code replacement: row `dead` becomes a copy of row `source`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeReset {
    /// Code index to overwrite.
    pub dead: usize,
    /// Code index copied from (a code used in the current batch).
    pub source: usize,
}

/// The LAM's dead-code bookkeeping (as Jasmine's `train_lam.py`): per-code steps since last use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadCodeTracker {
    /// Steps since each code was last used `[K]`.
    pub last_active: Vec<u32>,
    /// Codes with `last_active ≥ threshold` are reset (Jasmine `vq_reset_thresh`, 50).
    pub threshold: u32,
}

impl DeadCodeTracker {
    /// All counters at 0.
    pub fn new(num_codes: usize, threshold: u32) -> Self {
        Self { last_active: vec![0; num_codes], threshold }
    }

    /// One training step (after the optimizer update): counters of used codes go to 0, the
    /// others grow by 1; K replacement sources are drawn with replacement uniformly among the
    /// used codes, and every code with counter `≥ threshold` is assigned source `k` of that
    /// draw and its counter reset to 0. Apply the result with [`VectorQuantizer::reset_codes`].
    /// If no code was used (empty batch), counters advance but nothing is reset.
    pub fn step(&mut self, usage: &CodeUsage, rng: &mut impl Rng) -> Result<Vec<CodeReset>, NnError> {
        let k = self.last_active.len();
        if usage.counts.len() != k {
            return Err(NnError::Shape {
                what: "code usage counts",
                expected: k.to_string(),
                got: usage.counts.len().to_string(),
            });
        }
        for (last, &count) in self.last_active.iter_mut().zip(&usage.counts) {
            *last = if count > 0 { 0 } else { last.saturating_add(1) };
        }
        let used: Vec<usize> = (0..k).filter(|&c| usage.counts[c] > 0).collect();
        if used.is_empty() {
            return Ok(Vec::new());
        }
        let sources: Vec<usize> = (0..k).map(|_| used[rng.random_range(0..used.len())]).collect();
        let mut resets = Vec::new();
        for (code, last) in self.last_active.iter_mut().enumerate() {
            if *last >= self.threshold {
                resets.push(CodeReset { dead: code, source: sources[code] });
                *last = 0;
            }
        }
        Ok(resets)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::to_vec;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn ints(t: Tensor<1, Int>) -> Vec<i64> {
        t.try_into_vec_as::<i64>().unwrap()
    }

    /// A quantiser whose codebook rows have different norms (so normalisation matters).
    fn quantizer(k: usize, l: usize, dropout: f64, device: &Device) -> VectorQuantizer {
        let mut vq = VectorQuantizerConfig::new(k, l).with_dropout(dropout).init(device).unwrap();
        let scale: Vec<f32> = (0..k).map(|i| 0.5 + i as f32 * 0.37).collect();
        let scale = Tensor::<1>::from_data(TensorData::new(scale, [k]), device).reshape([k, 1]);
        vq.codebook = vq.codebook.map(|c| (c * scale).detach().require_grad_if(device));
        vq
    }

    trait RequireGradIf {
        fn require_grad_if(self, device: &Device) -> Self;
    }
    impl RequireGradIf for Tensor<2> {
        fn require_grad_if(self, device: &Device) -> Self {
            if device.is_autodiff() {
                self.require_grad()
            } else {
                self
            }
        }
    }

    /// Naive selection: cosine similarity of normalised rows, optional inverted dropout,
    /// argmin of the negated similarity (first index on ties).
    fn naive_select(x: &[f32], c: &[f32], l: usize, p: f64, dropped: Option<&[bool]>) -> Vec<usize> {
        let k = c.len() / l;
        let norm = |v: &[f32]| v.iter().map(|a| (*a as f64).powi(2)).sum::<f64>().sqrt() + 1e-8;
        x.chunks(l)
            .enumerate()
            .map(|(row, xv)| {
                let nx = norm(xv);
                let mut best = (f64::INFINITY, 0);
                for code in 0..k {
                    let cv = &c[code * l..(code + 1) * l];
                    let cos: f64 =
                        xv.iter().zip(cv).map(|(a, b)| *a as f64 * *b as f64).sum::<f64>() / (nx * norm(cv));
                    let mut dist = -cos;
                    if let Some(m) = dropped {
                        dist = if m[row * k + code] { 0.0 } else { dist / (1.0 - p) };
                    }
                    if dist < best.0 {
                        best = (dist, code);
                    }
                }
                best.1
            })
            .collect()
    }

    #[test]
    fn nearest_code_matches_naive_loop_and_outputs_raw_code() {
        let device = Device::flex();
        let (k, l, d) = (10, 8, 24);
        let vq = quantizer(k, l, 0.0, &device);
        let x = Tensor::<2>::random([d, l], Distribution::Normal(0.0, 2.0), &device);
        let out = vq.forward(x.clone());
        let c = to_vec(vq.codebook.val());
        let want = naive_select(&to_vec(x), &c, l, 0.0, None);
        let got: Vec<usize> = ints(out.indices.clone()).into_iter().map(|i| i as usize).collect();
        assert_eq!(got, want);
        let z = to_vec(out.z);
        let zq = to_vec(out.z_q);
        for (row, &code) in want.iter().enumerate() {
            for j in 0..l {
                assert_eq!(z[row * l + j], c[code * l + j], "z is the raw code row");
                assert!((zq[row * l + j] - c[code * l + j]).abs() < 1e-6, "z_q value equals z");
            }
        }
        let emb = to_vec(out.emb);
        for row in emb.chunks(l) {
            let n: f32 = row.iter().map(|v| v * v).sum::<f32>().sqrt();
            assert!((n - 1.0).abs() < 1e-5, "emb is normalised");
        }
    }

    #[test]
    fn straight_through_gradient() {
        let device = Device::flex().autodiff();
        let (k, l, d) = (6, 8, 5);
        let vq = quantizer(k, l, 0.0, &device);
        let x_data = Tensor::<2>::random([d, l], Distribution::Normal(0.0, 1.0), &device).detach();
        let g = Tensor::<2>::random([d, l], Distribution::Normal(0.0, 1.0), &device).detach();

        let x = x_data.clone().require_grad();
        let out = vq.forward(x.clone());
        let grads = (out.z_q * g.clone()).sum().backward();
        let got = to_vec(x.grad(&grads).unwrap());
        let codebook_grad = vq.codebook.val().grad(&grads).map(to_vec).unwrap_or_default();
        assert!(codebook_grad.iter().all(|v| *v == 0.0), "z_q sends no gradient to the codebook");

        // Expected: the gradient wrt z_q passed unchanged to x̂, then through x̂ = x/(‖x‖+1e-8).
        let x2 = x_data.require_grad();
        let norm = x2.clone().powi_scalar(2).sum_dim(1).sqrt() + 1e-8;
        let grads = ((x2.clone() / norm) * g).sum().backward();
        let want = to_vec(x2.grad(&grads).unwrap());
        for (a, b) in got.iter().zip(&want) {
            assert!((a - b).abs() < 1e-6, "{a} vs {b}");
        }
    }

    #[test]
    fn losses_match_hand_computation_and_route_gradients() {
        let device = Device::flex().autodiff();
        let (k, l, d) = (5, 4, 6);
        let vq = quantizer(k, l, 0.0, &device);
        let x = Tensor::<2>::random([d, l], Distribution::Normal(0.0, 1.0), &device).require_grad();
        let out = vq.forward(x.clone());
        // Hand computation from x and the codebook on the host.
        let xs = to_vec(x.clone());
        let c = to_vec(vq.codebook.val());
        let idx = naive_select(&xs, &c, l, 0.0, None);
        let mut sq = 0.0f64;
        for (row, &code) in idx.iter().enumerate() {
            let xv = &xs[row * l..(row + 1) * l];
            let n = xv.iter().map(|a| (*a as f64).powi(2)).sum::<f64>().sqrt() + 1e-8;
            for j in 0..l {
                sq += (xv[j] as f64 / n - c[code * l + j] as f64).powi(2);
            }
        }
        let mse = sq / (d * l) as f64;
        let q = to_vec(out.codebook_loss())[0] as f64;
        let commit = to_vec(out.commitment_loss())[0] as f64;
        let total = to_vec(out.loss(VQ_BETA))[0] as f64;
        assert!((q - mse).abs() < 1e-5 && (commit - mse).abs() < 1e-5, "{q} {commit} {mse}");
        assert!((total - 1.25 * mse).abs() < 1e-5);

        // Codebook loss trains only C; commitment trains only the encoder side.
        let grads = out.codebook_loss().backward();
        assert!(vq.codebook.val().grad(&grads).map(to_vec).unwrap().iter().any(|v| *v != 0.0));
        assert!(x.grad(&grads).map(to_vec).unwrap_or_default().iter().all(|v| *v == 0.0));
        let out = vq.forward(x.clone());
        let grads = out.commitment_loss().backward();
        assert!(vq.codebook.val().grad(&grads).map(to_vec).unwrap_or_default().iter().all(|v| *v == 0.0));
        assert!(x.grad(&grads).map(to_vec).unwrap().iter().any(|v| *v != 0.0));
    }

    #[test]
    fn dropout_matches_naive_and_never_picks_a_dropped_code_when_a_kept_one_is_closer() {
        let device = Device::flex();
        let (k, l, d, p) = (8, 4, 64, 0.5);
        let vq = quantizer(k, l, p, &device);
        let x = Tensor::<2>::random([d, l], Distribution::Normal(0.0, 1.0), &device);
        let rng = ChaCha8Rng::seed_from_u64(3);
        let mut replay = rng.clone();
        let out = vq.forward_train(x.clone(), &mut [rng]).unwrap();
        let mask: Vec<bool> = dropout_mask(d, k, p, &mut replay, &device).try_into_vec_as::<bool>().unwrap();
        assert!(mask.iter().any(|m| *m) && mask.iter().any(|m| !*m));
        let xs = to_vec(x);
        let c = to_vec(vq.codebook.val());
        let want = naive_select(&xs, &c, l, p, Some(&mask));
        let got: Vec<usize> = ints(out.indices).into_iter().map(|i| i as usize).collect();
        assert_eq!(got, want);
        // Without dropout the choice differs for some row (the mask matters).
        assert_ne!(want, naive_select(&xs, &c, l, 0.0, None));
        // A dropped code scores 0; a kept code with positive cosine always beats it.
        let cos_positive = |row: usize, code: usize| {
            let (xv, cv) = (&xs[row * l..(row + 1) * l], &c[code * l..(code + 1) * l]);
            xv.iter().zip(cv).map(|(a, b)| a * b).sum::<f32>() > 0.0
        };
        for (row, &code) in got.iter().enumerate() {
            if (0..k).any(|c2| !mask[row * k + c2] && cos_positive(row, c2)) {
                assert!(!mask[row * k + code], "row {row} picked dropped code {code}");
            }
        }
    }

    /// The skip-sampled mask is an i.i.d. Bernoulli(p) field: the dropped fraction, the
    /// fraction of adjacent dropped pairs (p²) and of dropped entries per row are all within a
    /// few standard deviations of their expectations.
    #[test]
    fn dropout_mask_is_bernoulli() {
        let device = Device::flex();
        for (p, seed) in [(0.01, 1u64), (0.3, 2), (0.9, 3)] {
            let (rows, codes) = (500, 1000);
            let n = (rows * codes) as f64;
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let m: Vec<bool> =
                dropout_mask(rows, codes, p, &mut rng, &device).try_into_vec_as::<bool>().unwrap();
            let frac = m.iter().filter(|v| **v).count() as f64 / n;
            let sd = (p * (1.0 - p) / n).sqrt();
            assert!((frac - p).abs() < 5.0 * sd, "p={p}: dropped fraction {frac}");
            let pairs = m.windows(2).filter(|w| w[0] && w[1]).count() as f64 / (n - 1.0);
            let sd2 = (p * p * (1.0 - p * p) / n).sqrt() * 2.0; // overlapping pairs: inflate
            assert!((pairs - p * p).abs() < 5.0 * sd2, "p={p}: adjacent pairs {pairs} vs {}", p * p);
            // Rows are not special: the first and last columns drop at rate p too.
            for col in [0, codes - 1] {
                let c = (0..rows).filter(|r| m[r * codes + col]).count() as f64 / rows as f64;
                let sdc = (p * (1.0 - p) / rows as f64).sqrt();
                assert!((c - p).abs() < 5.0 * sdc, "p={p}: column {col} rate {c}");
            }
        }
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let none: Vec<bool> = dropout_mask(3, 4, 0.0, &mut rng, &device).try_into_vec_as::<bool>().unwrap();
        assert!(none.iter().all(|v| !*v));
    }

    /// Each sample's rows come from its own generator: the mask of a batch of samples is the
    /// masks of the samples, stacked; rows that do not split evenly are refused.
    #[test]
    fn per_sample_masks_stack_the_samples_masks() {
        let device = Device::flex();
        let (rows, codes, p) = (6, 5, 0.4);
        let rngs = |seeds: &[u64]| seeds.iter().map(|&s| ChaCha8Rng::seed_from_u64(s)).collect::<Vec<_>>();
        let whole = per_sample_dropout_mask(rows, codes, p, &mut rngs(&[1, 2, 3]), &device).unwrap();
        let whole: Vec<bool> = whole.try_into_vec_as::<bool>().unwrap();
        for (i, seed) in [1u64, 2, 3].into_iter().enumerate() {
            let one = per_sample_dropout_mask(2, codes, p, &mut rngs(&[seed]), &device).unwrap();
            let one: Vec<bool> = one.try_into_vec_as::<bool>().unwrap();
            assert_eq!(one, whole[i * 2 * codes..(i + 1) * 2 * codes], "sample {i}");
        }
        let err = per_sample_dropout_mask(7, codes, p, &mut rngs(&[1, 2]), &device).unwrap_err();
        assert!(err.to_string().contains("7 rows"), "{err}");
    }

    #[test]
    fn usage_counts_and_fraction() {
        let device = Device::flex();
        let idx = Tensor::<1, Int>::from_data(TensorData::new(vec![0i64, 3, 3, 1, 3], [5]), &device);
        let usage = CodeUsage::from_indices(idx, 6).unwrap();
        assert_eq!(usage.counts, vec![1, 1, 0, 3, 0, 0]);
        assert!((usage.fraction_used() - 0.5).abs() < 1e-12);
        let bad = Tensor::<1, Int>::from_data(TensorData::new(vec![6i64], [1]), &device);
        assert!(CodeUsage::from_indices(bad, 6).is_err());
    }

    #[test]
    fn dead_codes_are_reset_to_copies_of_used_codes() {
        let device = Device::flex();
        let (k, l) = (6, 3);
        let vq = quantizer(k, l, 0.0, &device);
        let id = vq.codebook.id;
        let before = to_vec(vq.codebook.val());
        let mut tracker = DeadCodeTracker::new(k, 2);
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let usage = |counts: Vec<u64>| CodeUsage { counts };
        // Step 1: codes 0, 1 used. Counters: [0,0,1,1,1,1] → nothing reset.
        assert!(tracker.step(&usage(vec![2, 1, 0, 0, 0, 0]), &mut rng).unwrap().is_empty());
        assert_eq!(tracker.last_active, vec![0, 0, 1, 1, 1, 1]);
        // Step 2: codes 0, 2 used. Counters: [0,1,0,2,2,2] → 3, 4, 5 reset from {0, 2}.
        let resets = tracker.step(&usage(vec![1, 0, 4, 0, 0, 0]), &mut rng).unwrap();
        assert_eq!(resets.iter().map(|r| r.dead).collect::<Vec<_>>(), vec![3, 4, 5]);
        assert!(resets.iter().all(|r| r.source == 0 || r.source == 2));
        assert_eq!(tracker.last_active, vec![0, 1, 0, 0, 0, 0]);
        let vq = vq.reset_codes(&resets).unwrap();
        assert_eq!(vq.codebook.id, id, "parameter id kept for the optimizer");
        let after = to_vec(vq.codebook.val());
        for code in 0..k {
            let src = resets.iter().find(|r| r.dead == code).map_or(code, |r| r.source);
            assert_eq!(after[code * l..(code + 1) * l], before[src * l..(src + 1) * l], "code {code}");
        }
        // Same seed → same draw.
        let mut t2 = DeadCodeTracker::new(k, 2);
        let mut rng2 = ChaCha8Rng::seed_from_u64(9);
        t2.step(&usage(vec![2, 1, 0, 0, 0, 0]), &mut rng2).unwrap();
        assert_eq!(t2.step(&usage(vec![1, 0, 4, 0, 0, 0]), &mut rng2).unwrap(), resets);
        assert!(tracker.step(&usage(vec![1; 5]), &mut rng).is_err());
    }

    #[test]
    fn reset_codes_on_autodiff_device_copies_rows_and_still_trains() {
        let device = Device::flex().autodiff();
        let (k, l) = (4, 3);
        let vq = quantizer(k, l, 0.0, &device);
        assert!(vq.codebook.val().is_require_grad());
        let before = to_vec(vq.codebook.val());
        let vq = vq.reset_codes(&[CodeReset { dead: 1, source: 3 }]).unwrap();
        let after = to_vec(vq.codebook.val());
        let want: Vec<f32> = [0, 3, 2, 3].iter().flat_map(|&r| before[r * l..(r + 1) * l].to_vec()).collect();
        assert_eq!(after, want);
        // The reset codebook is a leaf that receives the codebook-loss gradient.
        assert!(vq.codebook.val().is_require_grad());
        let x = Tensor::<2>::random([5, l], Distribution::Normal(0.0, 1.0), &device);
        let grads = vq.forward(x).codebook_loss().backward();
        let g = vq.codebook.val().grad(&grads).map(to_vec).expect("codebook gradient");
        assert!(g.iter().any(|v| *v != 0.0));
        assert!(vq.reset_codes(&[CodeReset { dead: 4, source: 0 }]).is_err());
    }

    #[test]
    fn dead_codes_reset_to_encoder_outputs_land_on_batch_rows() {
        let device = Device::flex().autodiff();
        let (k, l, d) = (5, 3, 7);
        let vq = quantizer(k, l, 0.0, &device);
        let id = vq.codebook.id;
        let before = to_vec(vq.codebook.val());
        let x = Tensor::<2>::random([d, l], Distribution::Normal(0.0, 1.0), &device);
        let emb = vq.forward(x).emb; // [d, l], unit rows
        let rows = to_vec(emb.clone());
        let resets = [CodeReset { dead: 1, source: 0 }, CodeReset { dead: 4, source: 0 }];
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let vq = vq.apply_resets(&resets, ResetTarget::EncoderOutput, emb.clone(), &mut rng).unwrap();
        assert_eq!(vq.codebook.id, id, "parameter id kept for the optimizer");
        let after = to_vec(vq.codebook.val());
        for code in 0..k {
            let got = &after[code * l..(code + 1) * l];
            if code == 1 || code == 4 {
                let on_a_row = (0..d).any(|r| got == &rows[r * l..(r + 1) * l]);
                assert!(on_a_row, "code {code} moved onto an encoder output: {got:?}");
                assert_ne!(got, &before[..l], "not a copy of the source code");
            } else {
                assert_eq!(got, &before[code * l..(code + 1) * l], "code {code} untouched");
            }
        }
        assert!(vq.codebook.val().is_require_grad());
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let used = ResetTarget::UsedCode;
        let copied = quantizer(k, l, 0.0, &device).apply_resets(&resets, used, emb, &mut rng).unwrap();
        let c = to_vec(copied.codebook.val());
        assert_eq!(c[l..2 * l], c[..l], "Jasmine's reset copies the source code");
        let empty = Tensor::<2>::zeros([0, l], &device);
        let q = quantizer(k, l, 0.0, &device);
        assert!(q.apply_resets(&resets, ResetTarget::EncoderOutput, empty, &mut rng).is_err());
        let q = quantizer(k, l, 0.0, &device);
        assert!(q.overwrite_codes(&[k], Tensor::zeros([1, l], &device)).is_err());
    }

    #[test]
    fn max_code_cosine_matches_a_naive_pairwise_scan() {
        let device = Device::flex();
        let codes = vec![1.0f32, 0.0, 0.0, 3.0, 4.0, 0.0, 0.0, -2.0, 0.0];
        let mut vq = VectorQuantizerConfig::new(3, 3).init(&device).unwrap();
        vq.codebook = Param::from_tensor(Tensor::from_data(TensorData::new(codes, [3, 3]), &device));
        // Pairs: (0,1) cos 0.6, (0,2) 0, (1,2) −0.8.
        assert!((vq.max_code_cosine() - 0.6).abs() < 1e-7, "{}", vq.max_code_cosine());
        let single = VectorQuantizerConfig::new(1, 3).init(&device).unwrap();
        assert_eq!(single.max_code_cosine(), 0.0);
    }
}
