//! Drawing helpers shared by the built-in games.
//!
//! Every game draws on a fixed logical canvas of [`LOGICAL_SIZE`]² units; [`Canvas`] maps
//! logical rectangles onto the requested frame size, so one game renders at any size (and
//! aspect ratio) with the same layout. Adjacent logical rectangles map to adjacent pixel
//! rectangles (no gaps, no overlaps), and a non-empty rectangle never vanishes: it covers at
//! least one pixel per axis even when scaled down.

use crate::episode::FrameShape;

/// Side of the logical canvas the games draw on, in logical units.
pub const LOGICAL_SIZE: i32 = 64;

/// An RGB colour.
pub type Rgb = [u8; 3];

/// An RGB frame being drawn, addressed in logical units.
pub struct Canvas<'a> {
    /// `[H, W, 3]` u8.
    frame: &'a mut [u8],
    height: usize,
    width: usize,
}

impl<'a> Canvas<'a> {
    /// Wrap `frame`, a `[H, W, 3]` u8 buffer of `shape`.
    ///
    /// # Panics
    /// If `frame` does not hold exactly one frame of `shape`, or `shape` is not RGB: the
    /// environments check their shape at construction, so this is a caller bug.
    pub fn new(frame: &'a mut [u8], shape: FrameShape) -> Self {
        assert_eq!(shape.channels, 3, "environments render RGB frames");
        assert_eq!(
            frame.len(),
            shape.frame_bytes(),
            "render buffer holds {} bytes; a {}x{}x3 frame needs {}",
            frame.len(),
            shape.height,
            shape.width,
            shape.frame_bytes()
        );
        Canvas { frame, height: shape.height, width: shape.width }
    }

    /// Fill the whole frame with `color`.
    pub fn clear(&mut self, color: Rgb) {
        self.fill_pixels(0, self.width, 0, self.height, color);
    }

    /// Fill the logical rectangle `[x0, x1) × [y0, y1)`, clipped to the canvas.
    pub fn fill_rect(&mut self, x0: i32, y0: i32, x1: i32, y1: i32, color: Rgb) {
        let Some((c0, c1)) = to_pixels(x0, x1, self.width) else { return };
        let Some((r0, r1)) = to_pixels(y0, y1, self.height) else { return };
        self.fill_pixels(c0, c1, r0, r1, color);
    }

    /// Fill pixel columns `c0..c1` of rows `r0..r1`: the first row pixel by pixel, the others
    /// copied from it.
    fn fill_pixels(&mut self, c0: usize, c1: usize, r0: usize, r1: usize, color: Rgb) {
        let stride = self.width * 3;
        let (start, end) = (r0 * stride + c0 * 3, r0 * stride + c1 * 3);
        for px in self.frame[start..end].chunks_exact_mut(3) {
            px.copy_from_slice(&color);
        }
        for row in r0 + 1..r1 {
            self.frame.copy_within(start..end, start + (row - r0) * stride);
        }
    }
}

/// Pixel range `[p0, p1)` covered by logical range `[l0, l1)` on an axis of `pixels` pixels;
/// `None` when the clipped logical range is empty.
pub(crate) fn to_pixels(l0: i32, l1: i32, pixels: usize) -> Option<(usize, usize)> {
    let (l0, l1) = (l0.max(0), l1.min(LOGICAL_SIZE));
    if l0 >= l1 {
        return None;
    }
    // Pixel p covers logical [p·64/n, (p+1)·64/n); it is drawn when its left edge lies in the
    // rectangle, i.e. for p in [ceil(l0·n/64), ceil(l1·n/64)).
    let n = LOGICAL_SIZE as usize;
    let scale = |l: i32| (l as usize * pixels).div_ceil(n);
    let p0 = scale(l0).min(pixels - 1);
    let p1 = scale(l1).max(p0 + 1);
    Some((p0, p1))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Naive reference: a pixel belongs to a logical rectangle when its logical position
    /// (`p · 64 / size`, rounded down) lies inside it, for sizes ≥ 64.
    #[test]
    fn rectangles_map_like_the_naive_pixel_test_when_upscaling() {
        for (h, w) in [(64, 64), (96, 128), (200, 70)] {
            let shape = FrameShape::rgb(h, w);
            let mut frame = vec![0u8; shape.frame_bytes()];
            Canvas::new(&mut frame, shape).fill_rect(5, 9, 23, 40, [1, 2, 3]);
            for r in 0..h {
                for c in 0..w {
                    let (lx, ly) = ((c * 64 / w) as i32, (r * 64 / h) as i32);
                    let inside = (5..23).contains(&lx) && (9..40).contains(&ly);
                    let px = &frame[(r * w + c) * 3..][..3];
                    assert_eq!(px == [1, 2, 3], inside, "{h}x{w} pixel ({r},{c})");
                }
            }
        }
    }

    #[test]
    fn adjacent_rects_tile_without_gaps_and_tiny_rects_survive() {
        let shape = FrameShape::rgb(16, 20);
        let mut frame = vec![0u8; shape.frame_bytes()];
        let mut canvas = Canvas::new(&mut frame, shape);
        for x in (0..64).step_by(8) {
            canvas.fill_rect(x, 0, x + 8, 64, [x as u8 + 1, 0, 0]);
        }
        assert!(frame.chunks_exact(3).all(|p| p[0] != 0), "every pixel covered");
        let mut frame = vec![0u8; shape.frame_bytes()];
        Canvas::new(&mut frame, shape).fill_rect(63, 63, 64, 64, [9, 9, 9]);
        assert_eq!(frame.chunks_exact(3).filter(|p| p[0] == 9).count(), 1);
        // Fully clipped rectangles draw nothing.
        let mut frame = vec![0u8; shape.frame_bytes()];
        Canvas::new(&mut frame, shape).fill_rect(-5, 10, 0, 20, [9, 9, 9]);
        assert!(frame.iter().all(|&b| b == 0));
    }
}
