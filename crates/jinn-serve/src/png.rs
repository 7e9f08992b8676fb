//! Frames as PNG bytes (what the API sends and accepts) and as base64 text in JSON.

use crate::model::Frame;
use base64::Engine;
use image::{ExtendedColorType, ImageEncoder};
use jinn_data::FrameShape;

/// Errors decoding an uploaded frame.
#[derive(Debug, thiserror::Error)]
pub enum PngError {
    /// Not base64.
    #[error("not valid base64: {0}")]
    Base64(#[from] base64::DecodeError),
    /// Not a PNG the decoder can read.
    #[error("not a readable PNG: {0}")]
    Decode(#[from] image::ImageError),
    /// Readable, but not the model's frame size.
    #[error("is {got_w}x{got_h} pixels (width x height); the model expects {want_w}x{want_h}")]
    WrongSize {
        /// Uploaded width.
        got_w: usize,
        /// Uploaded height.
        got_h: usize,
        /// Model width.
        want_w: usize,
        /// Model height.
        want_h: usize,
    },
    /// A frame shape PNG cannot hold.
    #[error("frames with {0} channels cannot be PNG-encoded; expected 1 or 3")]
    Channels(usize),
}

/// Encode a frame (1 or 3 channels) as PNG bytes.
pub fn encode_png(frame: &Frame) -> Result<Vec<u8>, PngError> {
    let color = match frame.shape.channels {
        1 => ExtendedColorType::L8,
        3 => ExtendedColorType::Rgb8,
        c => return Err(PngError::Channels(c)),
    };
    let mut out = Vec::new();
    // Fast compression: frames are small and latency matters more than bytes on loopback.
    let encoder = image::codecs::png::PngEncoder::new_with_quality(
        &mut out,
        image::codecs::png::CompressionType::Fast,
        image::codecs::png::FilterType::Sub,
    );
    encoder.write_image(&frame.pixels, frame.shape.width as u32, frame.shape.height as u32, color)?;
    Ok(out)
}

/// Decode PNG bytes into a frame of exactly `shape` (converting colour type: alpha dropped,
/// grey replicated to RGB or RGB averaged to grey by the decoder's luma).
pub fn decode_png(bytes: &[u8], shape: FrameShape) -> Result<Frame, PngError> {
    let img = image::load_from_memory_with_format(bytes, image::ImageFormat::Png)?;
    let (w, h) = (img.width() as usize, img.height() as usize);
    if (w, h) != (shape.width, shape.height) {
        return Err(PngError::WrongSize { got_w: w, got_h: h, want_w: shape.width, want_h: shape.height });
    }
    let pixels = match shape.channels {
        1 => img.into_luma8().into_raw(),
        3 => img.into_rgb8().into_raw(),
        c => return Err(PngError::Channels(c)),
    };
    Ok(Frame { shape, pixels })
}

/// Standard base64 with padding.
pub fn to_base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Decode standard base64, also accepting a `data:image/png;base64,` prefix.
pub fn from_base64(text: &str) -> Result<Vec<u8>, PngError> {
    let body = text.strip_prefix("data:image/png;base64,").unwrap_or(text);
    Ok(base64::engine::general_purpose::STANDARD.decode(body.trim())?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rgb_and_grey_frames_round_trip_exactly() {
        for shape in [FrameShape::rgb(5, 7), FrameShape { height: 4, width: 3, channels: 1 }] {
            let pixels: Vec<u8> = (0..shape.frame_bytes()).map(|i| (i * 37 % 256) as u8).collect();
            let frame = Frame { shape, pixels };
            let text = to_base64(&encode_png(&frame).unwrap());
            let back = decode_png(&from_base64(&format!("data:image/png;base64,{text}")).unwrap(), shape);
            assert_eq!(back.unwrap(), frame);
        }
    }

    #[test]
    fn bad_uploads_explain_themselves() {
        let frame = Frame { shape: FrameShape::rgb(2, 3), pixels: vec![9; 18] };
        let png = encode_png(&frame).unwrap();
        let e = decode_png(&png, FrameShape::rgb(3, 3)).unwrap_err();
        assert_eq!(e.to_string(), "is 3x2 pixels (width x height); the model expects 3x3");
        assert!(matches!(decode_png(b"not a png", FrameShape::rgb(2, 3)), Err(PngError::Decode(_))));
        assert!(matches!(from_base64("%%%"), Err(PngError::Base64(_))));
        // RGBA uploads lose their alpha.
        let rgba = image::RgbaImage::from_pixel(3, 2, image::Rgba([1, 2, 3, 4]));
        let mut bytes = Vec::new();
        rgba.write_to(&mut std::io::Cursor::new(&mut bytes), image::ImageFormat::Png).unwrap();
        assert_eq!(decode_png(&bytes, FrameShape::rgb(2, 3)).unwrap().pixels, [1, 2, 3].repeat(6));
    }
}
