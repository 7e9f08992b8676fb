//! Elementwise math on host slices, written so the compiler vectorises it, for the CPU backend.
//!
//! Burn's flex backend evaluates an elementwise op one element at a time on one thread (a libm
//! `expf` per element for `sigmoid`), and a composite such as the tanh-GELU and its derivative
//! is about ten such passes over memory. The kernels here compute a function and its derivative
//! in one branch-free pass, over chunks shared out to the rayon pool; on x86-64 the same code is
//! compiled a second time for AVX2 and picked at run time. Written by hand because no maintained crate
//! offers a vectorised, dependency-light `exp` for `f32` slices.

use burn::tensor::DType;

use super::fill::par_fill;

/// The f32 elements of the contiguous tensor `t`.
pub(super) fn f32_storage(t: &burn::backend::flex::FlexTensor) -> &[f32] {
    debug_assert!(t.dtype() == DType::F32 && t.is_contiguous());
    t.storage::<f32>()
}

/// Lanes of the partial sums: eight independent accumulators let the compiler keep a row
/// reduction in one vector register (a single running `f32` sum cannot be reordered).
pub(super) const LANES: usize = 8;

/// `(Σ f(a[i], b[i], c[i]).0, Σ ….1)` over the elements of `a` (`b` and `c` at least as
/// long), each in [`LANES`] interleaved partial sums added in a fixed order. The loop runs over
/// whole chunks of [`LANES`], which lets the compiler vectorise it (it does for [`dot`]; how far
/// depends on `f`).
#[inline(always)]
pub(super) fn lane_sums(
    a: &[f32],
    b: &[f32],
    c: &[f32],
    f: impl Fn(f32, f32, f32) -> (f32, f32),
) -> (f32, f32) {
    let n = a.len();
    let (b, c) = (&b[..n], &c[..n]);
    let (mut first, mut second) = ([0.0f32; LANES], [0.0f32; LANES]);
    let (ca, cb, cc) = (a.chunks_exact(LANES), b.chunks_exact(LANES), c.chunks_exact(LANES));
    let (mut tail_first, mut tail_second) = (0.0f32, 0.0f32);
    for ((x, y), z) in ca.remainder().iter().zip(cb.remainder()).zip(cc.remainder()) {
        let (u, v) = f(*x, *y, *z);
        tail_first += u;
        tail_second += v;
    }
    for ((x, y), z) in ca.zip(cb).zip(cc) {
        for lane in 0..LANES {
            let (u, v) = f(x[lane], y[lane], z[lane]);
            first[lane] += u;
            second[lane] += v;
        }
    }
    (first.iter().sum::<f32>() + tail_first, second.iter().sum::<f32>() + tail_second)
}

/// `Σ a[i]·b[i]` over the elements of `a` (`b` at least as long), in [`LANES`] partial sums
/// (see [`lane_sums`]).
#[inline(always)]
pub(super) fn dot(a: &[f32], b: &[f32]) -> f32 {
    lane_sums(a, b, b, |x, y, _| (x * y, 0.0)).0
}

/// `Σ a[i]` in [`LANES`] partial sums (see [`lane_sums`]).
#[inline(always)]
pub(super) fn sum(a: &[f32]) -> f32 {
    lane_sums(a, a, a, |x, _, _| (x, 0.0)).0
}

/// `max a[i]` (−∞ for an empty slice) in [`LANES`] partial maxima, so the loop vectorises:
/// `f32::max` treats NaN specially, which keeps a single running maximum scalar.
#[inline(always)]
pub(super) fn max(a: &[f32]) -> f32 {
    let larger = |m: f32, x: f32| if x > m { x } else { m };
    let chunks = a.chunks_exact(LANES);
    let tail = chunks.remainder().iter().fold(f32::NEG_INFINITY, |m, &x| larger(m, x));
    let mut lanes = [f32::NEG_INFINITY; LANES];
    for chunk in chunks {
        for lane in 0..LANES {
            lanes[lane] = larger(lanes[lane], chunk[lane]);
        }
    }
    lanes.into_iter().fold(tail, larger)
}

/// Defines `fn $name(args) -> R` that runs the `#[inline(always)]` function `$body(args)`
/// compiled for AVX2 where the CPU has it (8 lanes instead of SSE2's 4; no FMA, so both builds
/// round identically), else its baseline build.
macro_rules! avx2_dispatch {
    ($(#[$meta:meta])* $vis:vis fn $name:ident = $body:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)?) => {
        $(#[$meta])*
        $vis fn $name($($arg: $ty),*) $(-> $ret)? {
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx2") {
                #[target_feature(enable = "avx2")]
                unsafe fn avx2($($arg: $ty),*) $(-> $ret)? {
                    $body($($arg),*)
                }
                // SAFETY: the CPU supports AVX2 (checked just above).
                return unsafe { avx2($($arg),*) };
            }
            $body($($arg),*)
        }
    };
}
pub(super) use avx2_dispatch;

/// Elements per rayon task (64 kB of `f32`: large enough to amortise the task, small enough to
/// share a few-MB tensor among the cores).
const CHUNK: usize = 16 * 1024;

/// `ln 2` split so that `n·LN2_HI` is exact for the `n` that occur (Cody–Waite reduction).
const LN2_HI: f32 = 0.693_359_4;
const LN2_LO: f32 = -2.121_944_4e-4;
/// `1.5·2²³`: adding it rounds an `f32` of magnitude < 2²² to an integer held in the low
/// mantissa bits.
const ROUND_MAGIC: f32 = 12_582_912.0;

/// `eˣ` for `x` in `[-87, 88]` (clamped outside), within 2 ulp: `x = n·ln2 + r`, `|r| ≤ ln2/2`,
/// `eʳ` by a degree-6 minimax polynomial, `2ⁿ` assembled in the exponent bits. Branch-free so a
/// loop over it vectorises.
#[inline(always)]
pub(super) fn exp_f32(x: f32) -> f32 {
    let x = x.clamp(-87.0, 88.0);
    let t = x * core::f32::consts::LOG2_E + ROUND_MAGIC;
    let n = t - ROUND_MAGIC; // round(x / ln2)
    let r = x - n * LN2_HI - n * LN2_LO;
    // eʳ ≈ 1 + r + r²·P(r) (minimax coefficients of the classic single-precision expf).
    let p = 1.987_569_1e-4;
    let p = p * r + 1.398_199_9e-3;
    let p = p * r + 8.333_452e-3;
    let p = p * r + 4.166_579_6e-2;
    let p = p * r + 1.666_666_5e-1;
    let p = p * r + 0.5;
    let er = p * r * r + r + 1.0;
    // t's bits are those of ROUND_MAGIC plus n; shift n + 127 into the exponent field.
    let two_n = f32::from_bits((t.to_bits().wrapping_sub(ROUND_MAGIC.to_bits()).wrapping_add(127)) << 23);
    er * two_n
}

/// `1 / (1 + e⁻ᶻ)`.
#[inline(always)]
fn sigmoid_f32(z: f32) -> f32 {
    1.0 / (1.0 + exp_f32(-z))
}

/// `2·√(2/π)`.
const TWO_SQRT_2_OVER_PI: f32 =
    (2.0 * core::f64::consts::FRAC_2_SQRT_PI * core::f64::consts::FRAC_1_SQRT_2) as f32;
/// The cubic coefficient of the tanh approximation.
const GELU_CUBIC: f32 = 0.044_715;

/// An elementwise function with a host kernel for its value and derivative.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::ops) enum Elementwise {
    /// Tanh-GELU `x·σ(2√(2/π)·(x + 0.044715·x³))`.
    GeluTanh,
    /// The logistic function `1 / (1 + e⁻ˣ)`.
    Sigmoid,
}

/// `f(x)` and `f'(x)` at every element of `x`, written to `value` and `slope` (all three the
/// same length), on the rayon pool. With `tangent_offset`, `value` receives `f(x) − x·f'(x)`
/// instead: the offset of the tangent line at `x`, so that `x·slope + value` is `f(x)` (to
/// rounding) and has gradient `slope`. The tests' reference; the kernels use
/// [`value_and_slope_vecs`].
#[cfg(test)]
pub(in crate::ops) fn value_and_slope(
    f: Elementwise,
    x: &[f32],
    value: &mut [f32],
    slope: &mut [f32],
    tangent_offset: bool,
) {
    use rayon::prelude::*;
    assert!(x.len() == value.len() && x.len() == slope.len(), "value_and_slope: length mismatch");
    x.par_chunks(CHUNK)
        .zip(value.par_chunks_mut(CHUNK))
        .zip(slope.par_chunks_mut(CHUNK))
        .for_each(|((x, v), s)| elementwise_chunk(f, x, v, s, tangent_offset));
}

/// `f(x)` and `f'(x)` as new vectors, in one parallel pass that also allocates them (no serial
/// zero-fill, see [`par_fill`]).
pub(super) fn value_and_slope_vecs(f: Elementwise, x: &[f32]) -> (Vec<f32>, Vec<f32>) {
    let n = x.len();
    let ([value, slope], _) = par_fill([n, n], [CHUNK, CHUNK], 1, |i, [v, s]| {
        elementwise_chunk(f, &x[i * CHUNK..][..v.len()], v, s, false)
    });
    (value, slope)
}

/// The elementwise product `a ⊙ b` as a new vector, in one parallel pass.
pub(super) fn product_vec(a: &[f32], b: &[f32]) -> Vec<f32> {
    assert_eq!(a.len(), b.len(), "product_vec: length mismatch");
    let n = a.len();
    let ([out], _) = par_fill([n], [CHUNK], 1, |i, [out]| {
        let (a, b) = (&a[i * CHUNK..][..out.len()], &b[i * CHUNK..][..out.len()]);
        out.iter_mut().zip(a.iter().zip(b)).for_each(|(o, (a, b))| *o = a * b);
    });
    out
}

/// One task's chunk of [`value_and_slope`].
fn elementwise_chunk(f: Elementwise, x: &[f32], value: &mut [f32], slope: &mut [f32], tangent_offset: bool) {
    match f {
        Elementwise::GeluTanh => run_chunk(gelu_tanh_point, x, value, slope, tangent_offset),
        Elementwise::Sigmoid => run_chunk(sigmoid_point, x, value, slope, tangent_offset),
    }
}

/// Tanh-GELU and its derivative at `x`.
#[inline(always)]
fn gelu_tanh_point(x: f32) -> (f32, f32) {
    let x2 = x * x;
    // z = x·(2√(2/π) + 2√(2/π)·0.044715·x²); gelu = x·σ(z).
    let z = x * (TWO_SQRT_2_OVER_PI + (TWO_SQRT_2_OVER_PI * GELU_CUBIC) * x2);
    let sig = sigmoid_f32(z);
    // d/dx x·σ(z) = σ + x·σ·(1 − σ)·z', z' = 2√(2/π)·(1 + 3·0.044715·x²).
    let dz = TWO_SQRT_2_OVER_PI + (3.0 * TWO_SQRT_2_OVER_PI * GELU_CUBIC) * x2;
    (x * sig, sig + x * sig * (1.0 - sig) * dz)
}

/// The logistic function and its derivative `σ·(1 − σ)` at `x`.
#[inline(always)]
fn sigmoid_point(x: f32) -> (f32, f32) {
    let sig = sigmoid_f32(x);
    (sig, sig * (1.0 - sig))
}

/// One chunk of [`value_and_slope`]: the AVX2 build where the CPU has it, else the baseline one.
#[inline(always)]
fn run_chunk<F: Fn(f32) -> (f32, f32)>(f: F, x: &[f32], value: &mut [f32], slope: &mut [f32], offset: bool) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2 (checked just above).
        return unsafe { chunk_avx2(f, x, value, slope, offset) };
    }
    chunk(f, x, value, slope, offset)
}

/// [`chunk`] compiled for AVX2 (8 lanes instead of SSE2's 4; no FMA, so both builds round
/// identically).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn chunk_avx2<F: Fn(f32) -> (f32, f32)>(
    f: F,
    x: &[f32],
    value: &mut [f32],
    slope: &mut [f32],
    offset: bool,
) {
    chunk(f, x, value, slope, offset)
}

#[inline(always)]
fn chunk<F: Fn(f32) -> (f32, f32)>(
    f: F,
    x: &[f32],
    value: &mut [f32],
    slope: &mut [f32],
    tangent_offset: bool,
) {
    // One flag for the whole chunk: the loop stays branch-free.
    let at_origin = if tangent_offset { 1.0 } else { 0.0 };
    for ((&x, v), s) in x.iter().zip(value.iter_mut()).zip(slope.iter_mut()) {
        let (fx, dfx) = f(x);
        *v = fx - at_origin * (x * dfx);
        *s = dfx;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_is_within_two_ulp_of_f64() {
        let mut worst = 0.0f64;
        for i in -87_000..=88_000 {
            let x = i as f32 / 1000.0;
            let want = (x as f64).exp();
            let ulp = f32::EPSILON as f64 * want;
            worst = worst.max((exp_f32(x) as f64 - want).abs() / ulp);
        }
        assert!(worst <= 2.0, "worst error {worst} ulp");
    }

    #[test]
    fn exp_saturates_instead_of_wrapping() {
        assert!(exp_f32(-1000.0) < 1e-37 && exp_f32(-1000.0) >= 0.0);
        assert!(exp_f32(1000.0) > 1e38 && exp_f32(1000.0).is_finite());
        assert!(sigmoid_f32(200.0) == 1.0 && (0.0..1e-37).contains(&sigmoid_f32(-200.0)));
    }

    #[test]
    fn chunked_parallel_result_equals_one_pass() {
        // Lengths around the chunk size, so the split into tasks cannot change a value.
        let n = 3 * CHUNK + 17;
        let x: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin() * 6.0).collect();
        let (mut v, mut s) = (vec![0.0; n], vec![0.0; n]);
        for (f, point) in [
            (Elementwise::GeluTanh, gelu_tanh_point as fn(f32) -> (f32, f32)),
            (Elementwise::Sigmoid, sigmoid_point),
        ] {
            for offset in [false, true] {
                value_and_slope(f, &x, &mut v, &mut s, offset);
                let (mut v1, mut s1) = (vec![0.0; n], vec![0.0; n]);
                chunk(point, &x, &mut v1, &mut s1, offset);
                assert_eq!(v, v1, "{f:?}, offset {offset}");
                assert_eq!(s, s1, "{f:?}, offset {offset}");
            }
        }
    }
}
