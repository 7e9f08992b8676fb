//! Argument types shared by subcommands.

use jinn_data::array_record::{Compression, WriterOptions};
use jinn_data::FrameShape;

/// Parse `HxW` or `HxWxC` (e.g. `64x64`, `90x160x3`).
pub fn parse_frame_shape(s: &str) -> Result<FrameShape, String> {
    let parts: Vec<&str> = s.split(['x', 'X']).collect();
    let nums: Result<Vec<usize>, _> = parts.iter().map(|p| p.trim().parse::<usize>()).collect();
    match nums.as_deref() {
        Ok([h, w]) if *h > 0 && *w > 0 => Ok(FrameShape::rgb(*h, *w)),
        Ok([h, w, c]) if *h > 0 && *w > 0 && *c > 0 => Ok(FrameShape { height: *h, width: *w, channels: *c }),
        _ => Err(format!("expected HxW or HxWxC with positive integers (e.g. 64x64 or 64x64x3), got '{s}'")),
    }
}

/// Chunk codec of written ArrayRecord files.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Codec {
    /// Zstandard, level 3 (ArrayRecord's default).
    Zstd,
    /// Brotli, level 6.
    Brotli,
    /// Snappy.
    Snappy,
    /// No compression.
    None,
}

/// Writer options for a codec and chunk group size.
pub fn writer_options(codec: Codec, group_size: usize) -> WriterOptions {
    let compression = match codec {
        Codec::Zstd => Compression::Zstd { level: 3 },
        Codec::Brotli => Compression::Brotli { level: 6 },
        Codec::Snappy => Compression::Snappy,
        Codec::None => Compression::Uncompressed,
    };
    WriterOptions { group_size, compression }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_shapes_parse_and_bad_ones_explain() {
        assert_eq!(parse_frame_shape("64x48").unwrap(), FrameShape::rgb(64, 48));
        assert_eq!(parse_frame_shape("10x10x1").unwrap(), FrameShape { height: 10, width: 10, channels: 1 });
        for bad in ["64", "0x4", "ax4", "1x2x3x4"] {
            assert!(parse_frame_shape(bad).unwrap_err().contains("HxW"), "{bad}");
        }
    }
}
