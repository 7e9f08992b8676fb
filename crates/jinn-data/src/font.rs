//! Text labels on frames, with the public-domain 8×8 bitmap font of the `font8x8` crate
//! (ASCII `U+0000..U+007F`; other characters are drawn as `?`). Glyphs are scaled by an
//! integer factor with nearest-neighbour pixels, so labels stay crisp.

use crate::episode::FrameShape;
use crate::error::{DataError, Result};
use font8x8::legacy::BASIC_LEGACY;

/// Width and height of one unscaled glyph in pixels.
pub const GLYPH_SIZE: usize = 8;

/// Width in pixels of `text` drawn at `scale` (every character advances `8·scale`).
pub fn text_width(text: &str, scale: usize) -> usize {
    text.chars().count() * GLYPH_SIZE * scale
}

/// Height in pixels of a line of text drawn at `scale`.
pub fn text_height(scale: usize) -> usize {
    GLYPH_SIZE * scale
}

/// Draw `text` into one `[H, W, C]` u8 frame with its top-left corner at column `x`, row `y`.
/// Only the glyphs' set pixels are painted (the background is left as it is); anything
/// outside the frame is clipped. With `C = 3` the pixels get `color`; with `C = 1` its luma
/// (`0.299 R + 0.587 G + 0.114 B`); other channel counts are refused, as is `scale = 0`.
pub fn draw_text(
    frame: &mut [u8],
    shape: FrameShape,
    x: usize,
    y: usize,
    text: &str,
    color: [u8; 3],
    scale: usize,
) -> Result<()> {
    if frame.len() != shape.frame_bytes() {
        return Err(DataError::invalid(
            "text frame",
            format!("{} bytes for a {:?} frame of {} bytes", frame.len(), shape, shape.frame_bytes()),
        ));
    }
    if scale == 0 {
        return Err(DataError::invalid("text scale", "must be at least 1"));
    }
    let luma = (0.299 * color[0] as f64 + 0.587 * color[1] as f64 + 0.114 * color[2] as f64).round() as u8;
    let paint: &[u8] = match shape.channels {
        3 => &color,
        1 => std::slice::from_ref(&luma),
        c => {
            return Err(DataError::invalid(
                "text frame channels",
                format!("{c}; text can be drawn on RGB (3) or grey (1) frames"),
            ))
        }
    };
    for (i, ch) in text.chars().enumerate() {
        let glyph = glyph(ch);
        let left = x + i * GLYPH_SIZE * scale;
        if left >= shape.width {
            break;
        }
        for (gy, bits) in glyph.iter().enumerate() {
            for gx in 0..GLYPH_SIZE {
                // font8x8 stores each row as a byte whose least significant bit is the leftmost pixel.
                if bits >> gx & 1 == 1 {
                    fill_block(frame, shape, left + gx * scale, y + gy * scale, scale, paint);
                }
            }
        }
    }
    Ok(())
}

/// The 8 row bytes of `ch`, `?` for characters outside ASCII.
fn glyph(ch: char) -> [u8; 8] {
    let code = if ch.is_ascii() { ch as usize } else { '?' as usize };
    BASIC_LEGACY[code]
}

/// Paint the `scale × scale` block at (`x`, `y`), clipped to the frame.
fn fill_block(frame: &mut [u8], shape: FrameShape, x: usize, y: usize, scale: usize, paint: &[u8]) {
    let c = shape.channels;
    for row in y..(y + scale).min(shape.height) {
        for col in x..(x + scale).min(shape.width) {
            let i = (row * shape.width + col) * c;
            frame[i..i + c].copy_from_slice(paint);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Render to a grid of '#'/'.' for readable assertions.
    fn ascii_art(frame: &[u8], shape: FrameShape) -> Vec<String> {
        (0..shape.height)
            .map(|r| {
                (0..shape.width)
                    .map(|c| if frame[(r * shape.width + c) * shape.channels] > 0 { '#' } else { '.' })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn draws_known_glyph_shapes() {
        let shape = FrameShape::rgb(8, 16);
        let mut frame = vec![0u8; shape.frame_bytes()];
        draw_text(&mut frame, shape, 0, 0, "I-", [255, 128, 0], 1).unwrap();
        let art = ascii_art(&frame, shape);
        // font8x8's "I" is rows [1E 0C 0C 0C 0C 0C 1E 00] and "-" has 3F in row 3, least
        // significant bit leftmost.
        assert_eq!(art[0], ".####...........");
        assert_eq!(art[3], "..##....######..");
        assert_eq!(art[6], ".####...........");
        assert_eq!(art[7], "................");
        // Painted pixels have exactly the colour.
        let i = 3; // row 0, column 1
        assert_eq!(&frame[i..i + 3], &[255, 128, 0]);
        assert_eq!(text_width("I-", 1), 16);
    }

    #[test]
    fn scales_clips_and_handles_grey() {
        let shape = FrameShape { height: 10, width: 12, channels: 1 };
        let mut frame = vec![0u8; shape.frame_bytes()];
        draw_text(&mut frame, shape, 4, 2, "Hé", [255, 255, 255], 2).unwrap();
        let art = ascii_art(&frame, shape);
        // "H" is rows of 33 (##..##..): at scale 2 its left stem covers columns 4..8.
        assert_eq!(art[2], "....####....");
        assert_eq!(&art[0], "............");
        assert_eq!(frame.iter().filter(|&&v| v > 0).count() % 2, 0, "2x2 blocks, clipped");
        assert_eq!(frame.iter().copied().max(), Some(255));
        assert_eq!(text_width("Hé", 2), 32);
        assert_eq!(text_height(3), 24);
    }

    #[test]
    fn refuses_bad_arguments() {
        let shape = FrameShape::rgb(8, 8);
        let mut frame = vec![0u8; 10];
        assert!(draw_text(&mut frame, shape, 0, 0, "a", [1, 1, 1], 1).is_err());
        let mut frame = vec![0u8; shape.frame_bytes()];
        assert!(draw_text(&mut frame, shape, 0, 0, "a", [1, 1, 1], 0).is_err());
        let rgba = FrameShape { height: 8, width: 8, channels: 4 };
        let mut frame = vec![0u8; rgba.frame_bytes()];
        assert!(draw_text(&mut frame, rgba, 0, 0, "a", [1, 1, 1], 1).is_err());
    }
}
