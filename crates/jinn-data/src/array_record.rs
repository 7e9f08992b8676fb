//! ArrayRecord files. (API stand-in; the implementation lands with the record-format work.)

use crate::error::Result;
use std::path::{Path, PathBuf};

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

/// Writes an ArrayRecord file atomically.
pub struct ArrayRecordWriter {
    _path: PathBuf,
}

impl ArrayRecordWriter {
    /// Start writing `path`.
    pub fn create(path: &Path, _options: WriterOptions) -> Result<Self> {
        Ok(ArrayRecordWriter { _path: path.to_path_buf() })
    }
    /// Append one record.
    pub fn write_record(&mut self, _record: &[u8]) -> Result<()> {
        todo!("array_record writer")
    }
    /// Finish the file; returns the number of records.
    pub fn finish(self) -> Result<u64> {
        todo!("array_record writer")
    }
}

/// Random-access reader of an ArrayRecord file; `Send + Sync`, reads take `&self`.
pub struct ArrayRecordReader {
    _path: PathBuf,
}

impl ArrayRecordReader {
    /// Open a file and read its footer index.
    pub fn open(path: &Path) -> Result<Self> {
        Ok(ArrayRecordReader { _path: path.to_path_buf() })
    }
    /// Read from memory; `name` is used in error messages.
    pub fn from_bytes(name: impl Into<PathBuf>, _bytes: Vec<u8>) -> Result<Self> {
        Ok(ArrayRecordReader { _path: name.into() })
    }
    /// The file path (or name given to `from_bytes`).
    pub fn path(&self) -> &Path {
        &self._path
    }
    /// Number of records.
    pub fn len(&self) -> u64 {
        todo!()
    }
    /// True when the file holds no record.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Record `index`.
    pub fn read(&self, _index: u64) -> Result<Vec<u8>> {
        todo!()
    }
}
