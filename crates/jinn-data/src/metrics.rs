//! Frame quality metrics: PSNR and SSIM, matching scikit-image (and so Jasmine's `dm_pix`).
//!
//! Images are `[H, W, C]` in C order. Pixel values are read through [`UnitPixel`]: `f32`/`f64`
//! as given (expected in `[0, 1]`), `u8` divided by 255, so every metric uses a data range of 1.
//! All arithmetic is done in `f64`.
//!
//! SSIM is scikit-image's `structural_similarity(a, b, gaussian_weights=True, sigma=1.5,
//! use_sample_covariance=False, data_range=1.0, channel_axis=-1)`: an 11-tap Gaussian window
//! (σ = 1.5, truncated at 3.5σ, radius `int(3.5·1.5 + 0.5) = 5`, normalised to sum 1),
//! K1 = 0.01, K2 = 0.03, the SSIM map averaged over the image with a 5-pixel border cropped,
//! then averaged over channels. scikit-image filters with `mode='reflect'`, but the crop removes
//! exactly the pixels whose window reaches the reflected border, so the kept values are those of
//! a "valid" convolution, which is what is computed here (separably: rows, then columns). This
//! is also what `dm_pix.ssim` computes.

use crate::episode::FrameShape;
use crate::error::{DataError, Result};

/// σ of the SSIM Gaussian window.
const SSIM_SIGMA: f64 = 1.5;
/// Window radius: `int(truncate·σ + 0.5)` with scikit-image's `truncate = 3.5`.
const SSIM_RADIUS: usize = 5;
/// Window side (11).
pub const SSIM_WINDOW: usize = 2 * SSIM_RADIUS + 1;
const SSIM_K1: f64 = 0.01;
const SSIM_K2: f64 = 0.03;

/// A pixel sample that can be read as a value in `[0, 1]`.
pub trait UnitPixel: Copy {
    /// The sample on the `[0, 1]` scale.
    fn to_unit(self) -> f64;
}

impl UnitPixel for f32 {
    fn to_unit(self) -> f64 {
        self as f64
    }
}

impl UnitPixel for f64 {
    fn to_unit(self) -> f64 {
        self
    }
}

impl UnitPixel for u8 {
    fn to_unit(self) -> f64 {
        self as f64 / 255.0
    }
}

/// Peak signal-to-noise ratio in dB of two `[H, W, C]` images with data range 1:
/// `10·log10(1 / MSE)`. Identical images give `f64::INFINITY`.
pub fn psnr<P: UnitPixel>(a: &[P], b: &[P], shape: FrameShape) -> Result<f64> {
    check_frames(a.len(), b.len(), shape, 1)?;
    let sse: f64 = a
        .iter()
        .zip(b)
        .map(|(&x, &y)| {
            let d = x.to_unit() - y.to_unit();
            d * d
        })
        .sum();
    let mse = sse / a.len() as f64;
    Ok(if mse == 0.0 { f64::INFINITY } else { -10.0 * mse.log10() })
}

/// Mean SSIM of two `[H, W, C]` images (see the module docs for the exact definition).
/// Both sides must be at least 11 pixels.
pub fn ssim<P: UnitPixel>(a: &[P], b: &[P], shape: FrameShape) -> Result<f64> {
    check_frames(a.len(), b.len(), shape, 1)?;
    if shape.height < SSIM_WINDOW || shape.width < SSIM_WINDOW {
        return Err(DataError::invalid(
            "SSIM image size",
            format!(
                "{}x{} is smaller than the {SSIM_WINDOW}x{SSIM_WINDOW} window; both sides must be >= {SSIM_WINDOW}",
                shape.height, shape.width
            ),
        ));
    }
    let weights = gaussian_window();
    let total: f64 = (0..shape.channels).map(|c| ssim_channel(a, b, shape, c, &weights)).sum();
    Ok(total / shape.channels as f64)
}

/// Mean over frames of [`psnr`] for `[N, H, W, C]` batches (infinite if any pair is identical).
pub fn mean_psnr<P: UnitPixel>(a: &[P], b: &[P], shape: FrameShape) -> Result<f64> {
    mean_over_frames(a, b, shape, psnr)
}

/// Mean over frames of [`ssim`] for `[N, H, W, C]` batches.
pub fn mean_ssim<P: UnitPixel>(a: &[P], b: &[P], shape: FrameShape) -> Result<f64> {
    mean_over_frames(a, b, shape, ssim)
}

fn mean_over_frames<P: UnitPixel>(
    a: &[P],
    b: &[P],
    shape: FrameShape,
    metric: fn(&[P], &[P], FrameShape) -> Result<f64>,
) -> Result<f64> {
    let frame = shape.frame_bytes();
    check_frames(a.len(), b.len(), shape, 0)?;
    let n = a.len() / frame;
    if n == 0 {
        return Err(DataError::invalid("metric batch", "no frames; expected at least one [H, W, C] frame"));
    }
    let mut sum = 0.0;
    for (fa, fb) in a.chunks_exact(frame).zip(b.chunks_exact(frame)) {
        sum += metric(fa, fb, shape)?;
    }
    Ok(sum / n as f64)
}

/// Checks that both buffers hold the same whole number of frames (exactly `frames` of them
/// unless `frames` is 0).
fn check_frames(len_a: usize, len_b: usize, shape: FrameShape, frames: usize) -> Result<()> {
    let frame = shape.frame_bytes();
    if frame == 0 {
        return Err(DataError::invalid("metric frame shape", format!("{shape:?} has no pixels")));
    }
    if len_a != len_b {
        return Err(DataError::invalid(
            "metric inputs",
            format!("buffers differ in length ({len_a} vs {len_b}); expected equal shapes"),
        ));
    }
    let ok = if frames == 0 { len_a.is_multiple_of(frame) } else { len_a == frames * frame };
    if !ok {
        return Err(DataError::invalid(
            "metric inputs",
            format!(
                "{len_a} values is not {} [H, W, C] = {:?} frame(s) of {frame} values",
                if frames == 0 { "a whole number of".to_string() } else { frames.to_string() },
                (shape.height, shape.width, shape.channels)
            ),
        ));
    }
    Ok(())
}

/// The normalised 1-D Gaussian window, as scipy's `_gaussian_kernel1d(1.5, 0, 5)`.
fn gaussian_window() -> [f64; SSIM_WINDOW] {
    let mut w = [0.0; SSIM_WINDOW];
    for (i, v) in w.iter_mut().enumerate() {
        let x = i as f64 - SSIM_RADIUS as f64;
        *v = (-0.5 * x * x / (SSIM_SIGMA * SSIM_SIGMA)).exp();
    }
    let sum: f64 = w.iter().sum();
    w.iter_mut().for_each(|v| *v /= sum);
    w
}

/// Mean of the cropped SSIM map of channel `c`.
fn ssim_channel<P: UnitPixel>(a: &[P], b: &[P], shape: FrameShape, c: usize, w: &[f64; SSIM_WINDOW]) -> f64 {
    let (h, wd, ch) = (shape.height, shape.width, shape.channels);
    let (oh, ow) = (h - 2 * SSIM_RADIUS, wd - 2 * SSIM_RADIUS);
    // Row pass: five filtered quantities (x, y, x², y², xy) per output pixel.
    let mut rows = vec![[0.0f64; 5]; h * ow]; // [H, W-10, 5]
    let mut line = vec![(0.0f64, 0.0f64); wd]; // [W] (x, y)
    for r in 0..h {
        for (col, v) in line.iter_mut().enumerate() {
            let i = (r * wd + col) * ch + c;
            *v = (a[i].to_unit(), b[i].to_unit());
        }
        for col in 0..ow {
            let mut acc = [0.0f64; 5];
            for (k, &wk) in w.iter().enumerate() {
                let (x, y) = line[col + k];
                acc[0] += wk * x;
                acc[1] += wk * y;
                acc[2] += wk * x * x;
                acc[3] += wk * y * y;
                acc[4] += wk * x * y;
            }
            rows[r * ow + col] = acc;
        }
    }
    // Column pass and the SSIM formula.
    let c1 = SSIM_K1 * SSIM_K1;
    let c2 = SSIM_K2 * SSIM_K2;
    let mut sum = 0.0;
    for r in 0..oh {
        for col in 0..ow {
            let mut m = [0.0f64; 5];
            for (k, &wk) in w.iter().enumerate() {
                let v = &rows[(r + k) * ow + col];
                for q in 0..5 {
                    m[q] += wk * v[q];
                }
            }
            let [ux, uy, uxx, uyy, uxy] = m;
            let vx = uxx - ux * ux;
            let vy = uyy - uy * uy;
            let vxy = uxy - ux * uy;
            let num = (2.0 * ux * uy + c1) * (2.0 * vxy + c2);
            let den = (ux * ux + uy * uy + c1) * (vx + vy + c2);
            sum += num / den;
        }
    }
    sum / (oh * ow) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic test image pair, reproducible in NumPy (see `SKIMAGE_SNIPPET`):
    /// `a = 0.5 + 0.4·sin(0.3x + 0.7c)·cos(0.2y − 0.5c)`, `b = clip(a + amp·(h/255 − 0.5), 0, 1)`
    /// with `h = ((i·2654435761) mod 2³²) >> 16 & 255` for the flat index `i`; with `invert`,
    /// `b` starts from `1 − a`. Both rounded to `f32`.
    fn pair(h: usize, w: usize, c: usize, amp: f64, invert: bool) -> (Vec<f32>, Vec<f32>) {
        let mut a = Vec::with_capacity(h * w * c);
        let mut b = Vec::with_capacity(h * w * c);
        for y in 0..h {
            for x in 0..w {
                for ch in 0..c {
                    let i = ((y * w + x) * c + ch) as u64;
                    let v = 0.5
                        + 0.4
                            * (0.3 * x as f64 + 0.7 * ch as f64).sin()
                            * (0.2 * y as f64 - 0.5 * ch as f64).cos();
                    let hash = ((i.wrapping_mul(2654435761) & 0xffff_ffff) >> 16) & 255;
                    let base = if invert { 1.0 - v } else { v };
                    let n = (base + amp * (hash as f64 / 255.0 - 0.5)).clamp(0.0, 1.0);
                    a.push(v as f32);
                    b.push(n as f32);
                }
            }
        }
        (a, b)
    }

    // Values below were computed once with scikit-image 0.26.0 (scipy 1.17.1, numpy 2.4):
    //
    // import numpy as np
    // from skimage.metrics import structural_similarity, peak_signal_noise_ratio
    // def pair(h, w, c, amp, invert):
    //     y, x, ch = np.meshgrid(np.arange(h), np.arange(w), np.arange(c), indexing="ij")
    //     i = ((y * w + x) * c + ch).astype(np.uint64)
    //     v = 0.5 + 0.4 * np.sin(0.3 * x + 0.7 * ch) * np.cos(0.2 * y - 0.5 * ch)
    //     hsh = (((i * np.uint64(2654435761)) & np.uint64(0xffffffff)) >> np.uint64(16)) & np.uint64(255)
    //     base = 1.0 - v if invert else v
    //     n = np.clip(base + amp * (hsh.astype(np.float64) / 255.0 - 0.5), 0.0, 1.0)
    //     f = lambda z: z.astype(np.float32).astype(np.float64)
    //     return f(v), f(n)
    // for args in [(16,20,3,0.1,False), (64,64,3,0.2,False), (11,13,1,0.05,False),
    //              (24,40,3,0.5,True), (33,17,2,0.3,False)]:
    //     a, b = pair(*args)
    //     s = structural_similarity(a, b, gaussian_weights=True, sigma=1.5,
    //             use_sample_covariance=False, data_range=1.0, channel_axis=-1)
    //     p = peak_signal_noise_ratio(a, b, data_range=1.0)
    //     print(args, repr(s), repr(p))
    // Output, as (args, ssim, psnr):
    type Case = ((usize, usize, usize, f64, bool), f64, f64);
    const CASES: [Case; 5] = [
        ((16, 20, 3, 0.1, false), 0.9532825729640212, 30.75669177723935),
        ((64, 64, 3, 0.2, false), 0.8386878353051669, 24.7372236952268),
        ((11, 13, 1, 0.05, false), 0.9886390304505266, 36.77808722178352),
        ((24, 40, 3, 0.5, true), -0.3758538751048793, 6.826685396516345),
        ((33, 17, 2, 0.3, false), 0.6987935339065878, 21.233484962093275),
    ];

    #[test]
    fn matches_scikit_image() {
        for ((h, w, c, amp, inv), want_ssim, want_psnr) in CASES {
            let (a, b) = pair(h, w, c, amp, inv);
            let shape = FrameShape { height: h, width: w, channels: c };
            let s = ssim(&a, &b, shape).unwrap();
            let p = psnr(&a, &b, shape).unwrap();
            assert!((s - want_ssim).abs() < 1e-10, "{h}x{w}x{c}: ssim {s} vs skimage {want_ssim}");
            assert!((p - want_psnr).abs() < 1e-10, "{h}x{w}x{c}: psnr {p} vs skimage {want_psnr}");
        }
    }

    /// Naive reference: direct 2-D convolution with the 11×11 outer-product window at every
    /// valid position, per channel, in f64.
    fn naive_ssim(a: &[f32], b: &[f32], h: usize, w: usize, c: usize) -> f64 {
        let g: Vec<f64> = (0..11)
            .map(|i| {
                let x = i as f64 - 5.0;
                (-x * x / 4.5).exp()
            })
            .collect();
        let gs: f64 = g.iter().sum();
        let mut total = 0.0;
        for ch in 0..c {
            let mut sum = 0.0;
            for y in 5..h - 5 {
                for x in 5..w - 5 {
                    let (mut mx, mut my, mut mxx, mut myy, mut mxy) = (0.0, 0.0, 0.0, 0.0, 0.0);
                    for dy in 0..11 {
                        for dx in 0..11 {
                            let wt = g[dy] * g[dx] / (gs * gs);
                            let i = ((y + dy - 5) * w + (x + dx - 5)) * c + ch;
                            let (p, q) = (a[i] as f64, b[i] as f64);
                            mx += wt * p;
                            my += wt * q;
                            mxx += wt * p * p;
                            myy += wt * q * q;
                            mxy += wt * p * q;
                        }
                    }
                    let (c1, c2) = (1e-4, 9e-4);
                    sum += (2.0 * mx * my + c1) * (2.0 * (mxy - mx * my) + c2)
                        / ((mx * mx + my * my + c1) * (mxx - mx * mx + myy - my * my + c2));
                }
            }
            total += sum / ((h - 10) * (w - 10)) as f64;
        }
        total / c as f64
    }

    #[test]
    fn matches_naive_convolution_on_random_images() {
        use rand::Rng;
        let mut rng = crate::rng::rng_for(7, "metrics-test", 0);
        let (h, w, c) = (23, 31, 3);
        let a: Vec<f32> = (0..h * w * c).map(|_| rng.random::<f32>()).collect();
        let b: Vec<f32> = a.iter().map(|&v| (v + rng.random_range(-0.2..0.2f32)).clamp(0.0, 1.0)).collect();
        let shape = FrameShape { height: h, width: w, channels: c };
        let fast = ssim(&a, &b, shape).unwrap();
        let slow = naive_ssim(&a, &b, h, w, c);
        assert!((fast - slow).abs() < 1e-12, "{fast} vs {slow}");
        assert!((ssim(&a, &a, shape).unwrap() - 1.0).abs() < 1e-12);
    }

    #[test]
    fn u8_batches_average_per_frame_values() {
        let shape = FrameShape::rgb(12, 14);
        let n = shape.frame_bytes();
        let a: Vec<u8> = (0..2 * n).map(|i| (i * 37 % 251) as u8).collect();
        let mut b = a.clone();
        b[..n].iter_mut().for_each(|v| *v = v.wrapping_add(9));
        let unit = |v: &[u8]| v.iter().map(|&x| x as f32 / 255.0).collect::<Vec<f32>>();
        let (fa, fb) = (unit(&a), unit(&b));
        let s0 = ssim(&fa[..n], &fb[..n], shape).unwrap();
        assert!((mean_ssim(&a, &b, shape).unwrap() - (s0 + 1.0) / 2.0).abs() < 1e-6);
        assert!((ssim(&a[..n], &b[..n], shape).unwrap() - s0).abs() < 1e-6);
        assert_eq!(psnr(&a[n..], &b[n..], shape).unwrap(), f64::INFINITY);
        assert_eq!(mean_psnr(&a, &b, shape).unwrap(), f64::INFINITY);
        // A constant difference of d/255 everywhere gives 20·log10(255/d) (wrapping aside).
        let c: Vec<u8> = vec![100; n];
        let d: Vec<u8> = vec![110; n];
        let p = psnr(&c, &d, shape).unwrap();
        assert!((p - 20.0 * (25.5f64).log10()).abs() < 1e-9, "{p}");
    }

    #[test]
    fn rejects_bad_shapes() {
        let shape = FrameShape::rgb(10, 12);
        let a = vec![0.5f32; shape.frame_bytes()];
        assert!(ssim(&a, &a, shape).unwrap_err().to_string().contains("smaller than the 11x11 window"));
        assert!(psnr(&a, &a[1..], shape).is_err());
        assert!(psnr(&a[1..], &a[1..], shape).is_err());
        assert!(mean_psnr(&a[..0], &a[..0], shape).is_err());
    }
}
