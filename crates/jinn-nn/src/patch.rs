//! Patchify / unpatchify of videos (as Jasmine's `jasmine/utils/preprocess.py`).
//!
//! A frame `[H, W, C]` is padded with zeros at the bottom and right up to multiples of the
//! patch size `p`, cut into a row-major grid of `(H/p)·(W/p)` patches (token `n = row·(W/p) +
//! col`), and each patch is flattened as (row-in-patch, col-in-patch, channel) with the channel
//! fastest, so `P = p·p·C`.

use burn::tensor::Tensor;

use crate::error::NnError;

/// Geometry of the patch grid for frames of `height × width × channels` and patch size `patch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PatchGrid {
    /// Patch side length `p`.
    pub patch: usize,
    /// Frame height `H` (before padding).
    pub height: usize,
    /// Frame width `W` (before padding).
    pub width: usize,
    /// Channels `C`.
    pub channels: usize,
}

impl PatchGrid {
    /// A grid for the given frame size; every size must be positive.
    pub fn new(patch: usize, height: usize, width: usize, channels: usize) -> Result<Self, NnError> {
        for (field, v) in [("patch", patch), ("height", height), ("width", width), ("channels", channels)] {
            if v == 0 {
                return Err(NnError::InvalidConfig { field, reason: "must be positive".into() });
            }
        }
        Ok(Self { patch, height, width, channels })
    }

    /// Patch rows `ceil(H/p)`.
    pub fn rows(&self) -> usize {
        self.height.div_ceil(self.patch)
    }

    /// Patch columns `ceil(W/p)`.
    pub fn cols(&self) -> usize {
        self.width.div_ceil(self.patch)
    }

    /// Tokens per frame `N = rows·cols`.
    pub fn num_patches(&self) -> usize {
        self.rows() * self.cols()
    }

    /// Patch vector length `P = p·p·C`.
    pub fn patch_dim(&self) -> usize {
        self.patch * self.patch * self.channels
    }
}

/// Cuts videos `[B, T, H, W, C]` into patch tokens `[B, T, N, P]`.
///
/// Returns [`NnError`] when `patch` is 0 (the frame size comes from the tensor).
pub fn patchify(videos: Tensor<5>, patch: usize) -> Result<Tensor<4>, NnError> {
    let [b, t, h, w, c] = videos.dims();
    let grid = PatchGrid::new(patch, h, w, c)?;
    let (rows, cols) = (grid.rows(), grid.cols());
    let (hp, wp) = (rows * patch, cols * patch);
    // Padding takes the input's dtype (f32, or bf16 under `train.precision = "bf16"`).
    let (device, dtype) = (videos.device(), videos.dtype());
    let mut x = videos; // [b, t, h, w, c]
    if hp > h {
        let pad = Tensor::<5>::zeros([b, t, hp - h, w, c], (&device, dtype));
        x = Tensor::cat(vec![x, pad], 2); // [b, t, hp, w, c]
    }
    if wp > w {
        let pad = Tensor::<5>::zeros([b, t, hp, wp - w, c], (&device, dtype));
        x = Tensor::cat(vec![x, pad], 3); // [b, t, hp, wp, c]
    }
    let x = x.reshape([b * t, rows, patch, cols, patch * c]); // [bt, rows, p, cols, p·c]
    let x = x.swap_dims(2, 3); // [bt, rows, cols, p, p·c]
    Ok(x.reshape([b, t, rows * cols, grid.patch_dim()])) // [b, t, n, p·p·c]
}

/// Inverse of [`patchify`]: tokens `[B, T, N, P]` → videos `[B, T, H, W, C]` of the size
/// described by `grid`, with the padding cropped away.
///
/// Returns [`NnError::Shape`] when `N` or `P` do not match `grid`.
pub fn unpatchify(patches: Tensor<4>, grid: PatchGrid) -> Result<Tensor<5>, NnError> {
    let [b, t, n, pd] = patches.dims();
    if n != grid.num_patches() || pd != grid.patch_dim() {
        return Err(NnError::Shape {
            what: "patches [B, T, N, P]",
            expected: format!("N = {}, P = {}", grid.num_patches(), grid.patch_dim()),
            got: format!("N = {n}, P = {pd}"),
        });
    }
    let (p, c) = (grid.patch, grid.channels);
    let (rows, cols) = (grid.rows(), grid.cols());
    let x = patches.reshape([b * t, rows, cols, p, p * c]); // [bt, rows, cols, p, p·c]
    let x = x.swap_dims(2, 3); // [bt, rows, p, cols, p·c]
    let x = x.reshape([b, t, rows * p, cols * p, c]); // [b, t, hp, wp, c]
    if rows * p == grid.height && cols * p == grid.width {
        // No padding: a whole-tensor slice would cost a zero-fill and a copy in the backward.
        return Ok(x);
    }
    Ok(x.slice([0..b, 0..t, 0..grid.height, 0..grid.width, 0..c])) // [b, t, h, w, c]
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::{Device, TensorData};

    /// Deterministic, distinct values for every element.
    fn video(shape: [usize; 5]) -> Vec<f32> {
        let len: usize = shape.iter().product();
        (0..len).map(|i| (i as f32) * 0.5 + 1.0).collect()
    }

    /// Naive patchify by explicit loops, following the spec's index formulas.
    fn naive_patchify(v: &[f32], [b, t, h, w, c]: [usize; 5], p: usize) -> (Vec<f32>, [usize; 4]) {
        let (rows, cols) = (h.div_ceil(p), w.div_ceil(p));
        let (n, pd) = (rows * cols, p * p * c);
        let mut out = vec![0.0f32; b * t * n * pd];
        for bi in 0..b {
            for ti in 0..t {
                for r in 0..rows {
                    for cl in 0..cols {
                        let tok = r * cols + cl;
                        for i in 0..p {
                            for j in 0..p {
                                for ch in 0..c {
                                    let (y, x) = (r * p + i, cl * p + j);
                                    let val = if y < h && x < w {
                                        v[(((bi * t + ti) * h + y) * w + x) * c + ch]
                                    } else {
                                        0.0
                                    };
                                    let k = (i * p + j) * c + ch;
                                    out[((bi * t + ti) * n + tok) * pd + k] = val;
                                }
                            }
                        }
                    }
                }
            }
        }
        (out, [b, t, n, pd])
    }

    fn check(shape: [usize; 5], p: usize) {
        let device = Device::flex();
        let v = video(shape);
        let x = Tensor::<5>::from_data(TensorData::new(v.clone(), shape), &device);
        let tokens = patchify(x, p).unwrap();
        let (expected, eshape) = naive_patchify(&v, shape, p);
        assert_eq!(tokens.dims(), eshape);
        let got: Vec<f32> = tokens.clone().try_into_vec_as::<f32>().unwrap();
        assert_eq!(got, expected, "patchify {shape:?} p={p}");
        let grid = PatchGrid::new(p, shape[2], shape[3], shape[4]).unwrap();
        let back = unpatchify(tokens, grid).unwrap();
        assert_eq!(back.dims(), shape);
        let back: Vec<f32> = back.try_into_vec_as::<f32>().unwrap();
        assert_eq!(back, v, "round trip {shape:?} p={p}");
    }

    #[test]
    fn matches_naive_loops_and_round_trips() {
        check([2, 3, 4, 6, 3], 2); // divisible
        check([1, 2, 5, 7, 3], 2); // padded bottom and right
        check([2, 1, 9, 4, 1], 4); // padded bottom only
        check([1, 1, 3, 3, 2], 4); // one padded patch
    }

    #[test]
    fn spec_default_geometry() {
        let g = PatchGrid::new(16, 64, 64, 3).unwrap();
        assert_eq!((g.num_patches(), g.patch_dim()), (16, 768));
        let g = PatchGrid::new(16, 90, 160, 3).unwrap();
        assert_eq!(g.num_patches(), 60);
    }

    #[test]
    fn bad_input_is_an_error() {
        let device = Device::flex();
        let x = Tensor::<5>::zeros([1, 1, 4, 4, 3], &device);
        assert!(matches!(patchify(x, 0), Err(NnError::InvalidConfig { field: "patch", .. })));
        let tokens = Tensor::<4>::zeros([1, 1, 4, 12], &device);
        let grid = PatchGrid::new(2, 4, 6, 3).unwrap();
        assert!(matches!(unpatchify(tokens, grid), Err(NnError::Shape { .. })));
    }
}
