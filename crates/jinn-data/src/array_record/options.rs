//! Writer options and their textual form, as the official ArrayRecord writer records it in
//! the footer (`group_size:1,transpose:false,pad_to_block_boundary:false,zstd:3,...`).

use crate::error::{DataError, Result};

/// Chunk compression codec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// No compression.
    Uncompressed,
    /// Zstandard at `level` (ArrayRecord's default codec, level 3).
    Zstd {
        /// Compression level.
        level: i32,
    },
    /// Brotli at `level`.
    Brotli {
        /// Compression level.
        level: u32,
    },
    /// Snappy.
    Snappy,
}

/// How an ArrayRecord file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriterOptions {
    /// Records per chunk (1 = cheapest random access, Jasmine's setting).
    pub group_size: usize,
    /// Chunk codec.
    pub compression: Compression,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions { group_size: 1, compression: Compression::Zstd { level: 3 } }
    }
}

/// Zstd window the official writer uses unless told otherwise (`window_log:20`).
pub(crate) const ZSTD_WINDOW_LOG: u32 = 20;
/// Brotli window (the Riegeli/Brotli default, `window_log` 22).
pub(crate) const BROTLI_WINDOW_LOG: u32 = 22;

impl WriterOptions {
    /// Check the ranges the official writer accepts.
    pub fn validate(&self) -> Result<()> {
        if self.group_size == 0 || self.group_size > i32::MAX as usize {
            return Err(DataError::invalid(
                "group_size",
                format!("{} is not in [1, {}]", self.group_size, i32::MAX),
            ));
        }
        match self.compression {
            Compression::Zstd { level } if !(-131072..=22).contains(&level) => {
                Err(DataError::invalid("zstd level", format!("{level} is not in [-131072, 22]")))
            }
            Compression::Brotli { level } if level > 11 => {
                Err(DataError::invalid("brotli level", format!("{level} is not in [0, 11]")))
            }
            _ => Ok(()),
        }
    }

    /// The options string written into the footer, in the official writer's format.
    pub fn to_options_string(&self) -> String {
        let codec = match self.compression {
            Compression::Uncompressed => "uncompressed".to_string(),
            Compression::Brotli { level } => format!("brotli:{level}"),
            Compression::Zstd { level } => format!("zstd:{level},window_log:{ZSTD_WINDOW_LOG}"),
            Compression::Snappy => "snappy".to_string(),
        };
        format!(
            "group_size:{},transpose:false,pad_to_block_boundary:false,{codec},max_parallelism:1",
            self.group_size
        )
    }

    /// Parse an options string such as `"group_size:1"`, `"group_size:8,brotli:6"` or the
    /// full form [`to_options_string`](Self::to_options_string) produces. Unset values keep
    /// their defaults (group size 1, zstd level 3); codecs without a level use the official
    /// defaults (brotli 6, zstd 3). `transpose:true`, `pad_to_block_boundary:true` and a
    /// non-default `window_log` are not supported.
    pub fn from_options_string(text: &str) -> Result<Self> {
        let mut options = WriterOptions::default();
        let bad = |what: &str, reason: String| DataError::invalid(format!("{what} in {text:?}"), reason);
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (key, value) = match item.split_once(':') {
                Some((k, v)) => (k.trim(), Some(v.trim())),
                None => (item, None),
            };
            match (key, value) {
                ("default", None) => {}
                ("group_size", Some(v)) => {
                    options.group_size = v
                        .parse()
                        .map_err(|_| bad("group_size", format!("{v:?} is not a positive integer")))?;
                }
                ("uncompressed", None) => options.compression = Compression::Uncompressed,
                ("snappy", None) => options.compression = Compression::Snappy,
                ("zstd", v) => {
                    let level = match v {
                        Some(v) => {
                            v.parse().map_err(|_| bad("zstd", format!("level {v:?} is not an integer")))?
                        }
                        None => 3,
                    };
                    options.compression = Compression::Zstd { level };
                }
                ("brotli", v) => {
                    let level = match v {
                        Some(v) => {
                            v.parse().map_err(|_| bad("brotli", format!("level {v:?} is not an integer")))?
                        }
                        None => 6,
                    };
                    options.compression = Compression::Brotli { level };
                }
                ("transpose", Some("false")) | ("pad_to_block_boundary", Some("false")) => {}
                ("max_parallelism", Some(_)) | ("saturation_delay_ms", Some(_)) => {}
                ("window_log", Some(v)) if v == ZSTD_WINDOW_LOG.to_string() => {}
                _ => {
                    return Err(bad(
                        "writer option",
                        format!(
                            "{item:?} is not supported (expected group_size:N, zstd[:L], brotli[:L], \
                             snappy or uncompressed)"
                        ),
                    ))
                }
            }
        }
        options.validate()?;
        Ok(options)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_string_matches_official_writer_and_parses_back() {
        // The first string is what Python's array_record 0.8.6 records for "group_size:1"
        // (see tests/fixtures/*.array_record).
        assert_eq!(
            WriterOptions::default().to_options_string(),
            "group_size:1,transpose:false,pad_to_block_boundary:false,zstd:3,window_log:20,max_parallelism:1"
        );
        for o in [
            WriterOptions::default(),
            WriterOptions { group_size: 8, compression: Compression::Brotli { level: 6 } },
            WriterOptions { group_size: 3, compression: Compression::Snappy },
            WriterOptions { group_size: 2, compression: Compression::Uncompressed },
            WriterOptions { group_size: 1, compression: Compression::Zstd { level: -5 } },
        ] {
            assert_eq!(WriterOptions::from_options_string(&o.to_options_string()).unwrap(), o);
        }
        assert_eq!(
            WriterOptions::from_options_string("group_size:8,brotli").unwrap(),
            WriterOptions { group_size: 8, compression: Compression::Brotli { level: 6 } }
        );
        for bad in ["group_size:0", "transpose:true", "zstd:99", "lz4", "group_size:x"] {
            assert!(WriterOptions::from_options_string(bad).is_err(), "{bad}");
        }
    }
}
