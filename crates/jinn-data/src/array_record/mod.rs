//! ArrayRecord files: Google's `array_record` layout on the Riegeli container, readable and
//! writable by Python's `array_record` package (Jasmine's dataset format).
//!
//! Layout (written and expected here):
//! - Riegeli file signature chunk at byte 0; 64 KiB blocks, each starting with a 24-byte
//!   block header; every header hashed with HighwayHash.
//! - One simple chunk (`'r'`) per `group_size` records, compressed with zstd, brotli, snappy
//!   or not at all.
//! - The footer chunk: `RiegeliFooterMetadata` then one `ArrayRecordFooter` (offset, size,
//!   record count) per data chunk, compressed like the data; padded to a block boundary.
//! - The postscript chunk (three uncompressed `RiegeliPostscript` copies: footer offset and
//!   magic) filling the last block, so it starts at `file size - 65536`.
//!
//! The `riegeli` crate provides varints and protobuf wire helpers (and is used by the tests
//! as an independent reader); the block/chunk layer is written here because that crate keeps
//! it private (see [`container`]).

mod chunk_reader;
mod chunk_writer;
mod codec;
mod container;
mod footer;
mod options;
mod reader;
mod simple_chunk;
mod source;
mod writer;

pub use options::{Compression, WriterOptions};
pub use reader::ArrayRecordReader;
pub use writer::ArrayRecordWriter;

/// A format problem at a byte offset; turned into [`crate::error::DataError::Format`] with
/// the file name by the reader.
#[derive(Debug)]
pub(crate) struct Issue {
    offset: u64,
    reason: String,
}

impl Issue {
    fn new(offset: u64, reason: impl Into<String>) -> Self {
        Issue { offset, reason: reason.into() }
    }
}

#[cfg(test)]
mod tests;
