//! Writing ArrayRecord files the way the official writer lays them out: file signature,
//! one simple chunk per `group_size` records, the footer chunk (metadata + one
//! `ArrayRecordFooter` per chunk, compressed like the records) padded to a block boundary,
//! and an uncompressed postscript chunk (three copies) filling the last block.

use super::chunk_writer::ChunkWriter;
use super::codec::Encoder;
use super::container::{ChunkHeader, CHUNK_SIMPLE};
use super::footer::{FooterEntry, FooterMetadata, Postscript, MAGIC, VERSION};
use super::options::{Compression, WriterOptions};
use super::simple_chunk;
use crate::atomic_file::AtomicFile;
use crate::error::{DataError, Result};
use std::path::{Path, PathBuf};

/// Writes an ArrayRecord file atomically.
pub struct ArrayRecordWriter {
    path: PathBuf,
    options: WriterOptions,
    out: ChunkWriter<AtomicFile>,
    encoder: Encoder,
    /// Size varints of the records of the open group.
    group_sizes: Vec<u8>,
    /// Bytes of the records of the open group, concatenated.
    group_values: Vec<u8>,
    group_len: usize,
    chunks: Vec<FooterEntry>,
    num_records: u64,
}

impl ArrayRecordWriter {
    /// Start writing `path` (it appears only when [`finish`](Self::finish) succeeds).
    pub fn create(path: &Path, options: WriterOptions) -> Result<Self> {
        options.validate()?;
        let io = |e| DataError::io(path, e);
        let file = AtomicFile::create(path)?;
        Ok(ArrayRecordWriter {
            path: path.to_path_buf(),
            options,
            out: ChunkWriter::new(file).map_err(io)?,
            encoder: Encoder::new(options.compression).map_err(io)?,
            group_sizes: Vec::new(),
            group_values: Vec::new(),
            group_len: 0,
            chunks: Vec::new(),
            num_records: 0,
        })
    }

    /// Append one record.
    pub fn write_record(&mut self, record: &[u8]) -> Result<()> {
        riegeli::proto::encode_varint64(&mut self.group_sizes, record.len() as u64);
        self.group_values.extend_from_slice(record);
        self.group_len += 1;
        self.num_records += 1;
        if self.group_len >= self.options.group_size {
            self.flush_group()?;
        }
        Ok(())
    }

    /// Write the open group as one chunk.
    fn flush_group(&mut self) -> Result<()> {
        if self.group_len == 0 {
            return Ok(());
        }
        let io = |e| DataError::io(&self.path, e);
        let data =
            simple_chunk::encode(&mut self.encoder, &self.group_sizes, &self.group_values).map_err(io)?;
        let entry = FooterEntry {
            chunk_offset: 0,
            decoded_data_size: self.group_values.len() as u64,
            num_records: self.group_len as u64,
        };
        let header = ChunkHeader::new(&data, CHUNK_SIMPLE, entry.num_records, entry.decoded_data_size);
        let chunk_offset = self.out.write_chunk(header, &data).map_err(io)?;
        self.chunks.push(FooterEntry { chunk_offset, ..entry });
        self.group_sizes.clear();
        self.group_values.clear();
        self.group_len = 0;
        Ok(())
    }

    /// Write a simple chunk holding `records`, compressed by `encoder`; returns its offset.
    fn write_records_chunk(&mut self, records: &[Vec<u8>], uncompressed: bool) -> Result<u64> {
        let io = |e| DataError::io(&self.path, e);
        let mut sizes = Vec::new();
        for r in records {
            riegeli::proto::encode_varint64(&mut sizes, r.len() as u64);
        }
        let values = records.concat();
        let data = if uncompressed {
            let mut plain = Encoder::new(Compression::Uncompressed).map_err(io)?;
            simple_chunk::encode(&mut plain, &sizes, &values)
        } else {
            simple_chunk::encode(&mut self.encoder, &sizes, &values)
        }
        .map_err(io)?;
        let header = ChunkHeader::new(&data, CHUNK_SIMPLE, records.len() as u64, values.len() as u64);
        self.out.write_chunk(header, &data).map_err(io)
    }

    /// Finish the file; returns the number of records.
    pub fn finish(mut self) -> Result<u64> {
        self.flush_group()?;
        let metadata = FooterMetadata {
            version: VERSION,
            num_chunks: self.chunks.len() as u64,
            num_records: self.num_records,
            writer_options: Some(self.options.to_options_string()),
        };
        let mut footer = Vec::with_capacity(self.chunks.len() + 1);
        footer.push(metadata.encode());
        footer.extend(self.chunks.iter().map(FooterEntry::encode));
        let footer_offset = self.write_records_chunk(&footer, false)?;
        let io = |e| DataError::io(&self.path, e);
        self.out.pad_to_block_boundary().map_err(io)?;
        let postscript = Postscript { footer_offset, magic: MAGIC }.encode();
        self.write_records_chunk(&vec![postscript; 3], true)?;
        let io = |e| DataError::io(&self.path, e);
        self.out.pad_to_block_boundary().map_err(io)?;
        self.out.into_inner().commit()?;
        Ok(self.num_records)
    }
}
