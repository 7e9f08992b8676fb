//! Laying chunks into the Riegeli block structure: a block header at every 64 KiB boundary,
//! zero padding for short chunks, padding chunks up to a block boundary.

use super::container::{
    block_header, chunk_end, ChunkHeader, BLOCK_SIZE, CHUNK_HEADER_SIZE, CHUNK_PADDING, CHUNK_SIGNATURE,
    USABLE_BLOCK_SIZE,
};
use std::io::{self, Write};

/// Writes chunks to `out`, tracking the file position.
pub(crate) struct ChunkWriter<W: Write> {
    out: W,
    pos: u64,
}

impl<W: Write> ChunkWriter<W> {
    /// Start a Riegeli file: writes the file signature chunk.
    pub fn new(out: W) -> io::Result<Self> {
        let mut w = ChunkWriter { out, pos: 0 };
        w.write_chunk(ChunkHeader::new(&[], CHUNK_SIGNATURE, 0, 0), &[])?;
        Ok(w)
    }

    /// The underlying writer.
    pub fn into_inner(self) -> W {
        self.out
    }

    /// Append a chunk; returns its offset.
    pub fn write_chunk(&mut self, header: ChunkHeader, data: &[u8]) -> io::Result<u64> {
        let begin = self.pos;
        let end = chunk_end(begin, header.data_size, header.num_records);
        self.write_spread(&header.to_bytes(), begin, end)?;
        self.write_spread(data, begin, end)?;
        const ZEROS: [u8; 4096] = [0; 4096];
        while self.pos < end {
            // write_spread first lays a block header when at a boundary.
            let data_start = self.pos + u64::from(self.pos.is_multiple_of(BLOCK_SIZE)) * 24;
            let room = BLOCK_SIZE - data_start % BLOCK_SIZE;
            let n = (end - data_start).min(room).min(ZEROS.len() as u64) as usize;
            self.write_spread(&ZEROS[..n], begin, end)?;
        }
        debug_assert_eq!(self.pos, end);
        Ok(begin)
    }

    /// Write a padding chunk so that the next chunk starts at a block boundary.
    pub fn pad_to_block_boundary(&mut self) -> io::Result<()> {
        let remaining = (BLOCK_SIZE - self.pos % BLOCK_SIZE) % BLOCK_SIZE;
        if remaining == 0 {
            return Ok(());
        }
        // Too little room for a chunk header: pad through the next block too.
        let length = if remaining < CHUNK_HEADER_SIZE { remaining + USABLE_BLOCK_SIZE } else { remaining };
        let zeros = vec![0u8; (length - CHUNK_HEADER_SIZE) as usize];
        self.write_chunk(ChunkHeader::new(&zeros, CHUNK_PADDING, 0, 0), &zeros)?;
        debug_assert_eq!(self.pos % BLOCK_SIZE, 0);
        Ok(())
    }

    /// Write chunk bytes of the chunk `[begin, end)`, inserting block headers at boundaries.
    fn write_spread(&mut self, mut bytes: &[u8], begin: u64, end: u64) -> io::Result<()> {
        while !bytes.is_empty() {
            if self.pos.is_multiple_of(BLOCK_SIZE) {
                self.out.write_all(&block_header(self.pos, begin, end))?;
                self.pos += 24;
            }
            let room = (BLOCK_SIZE - self.pos % BLOCK_SIZE) as usize;
            let (now, later) = bytes.split_at(room.min(bytes.len()));
            self.out.write_all(now)?;
            self.pos += now.len() as u64;
            bytes = later;
        }
        Ok(())
    }
}
