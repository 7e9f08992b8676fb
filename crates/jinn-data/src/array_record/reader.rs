//! Random access to ArrayRecord files: the postscript in the last block points to the footer
//! chunk, whose records give every chunk's offset and record count; reading a record is one
//! positional read of its chunk, verification and decompression.

use super::chunk_reader::{parse_chunk, Chunk};
use super::container::{BLOCK_HEADER_SIZE, BLOCK_SIZE, CHUNK_HEADER_SIZE, CHUNK_SIGNATURE};
use super::footer::{FooterEntry, FooterMetadata, Postscript, MAGIC, VERSION};
use super::simple_chunk::SimpleChunk;
use super::source::Source;
use super::Issue;
use crate::error::{DataError, Result};
use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// Where one data chunk lies and which records it holds.
#[derive(Debug, Clone, Copy)]
struct ChunkEntry {
    /// File offset of the chunk.
    offset: u64,
    /// Index of its first record in the file.
    first_record: u64,
    /// Records in the chunk.
    num_records: u64,
}

/// Random-access reader of an ArrayRecord file; `Send + Sync`, reads take `&self`.
pub struct ArrayRecordReader {
    path: PathBuf,
    source: Source,
    /// Data chunks in file order.
    chunks: Vec<ChunkEntry>,
    /// Offset of the footer chunk (the end of the last data chunk's span).
    footer_offset: u64,
    num_records: u64,
    writer_options: Option<String>,
}

impl ArrayRecordReader {
    /// Open a file and read its footer index.
    pub fn open(path: &Path) -> Result<Self> {
        let file = File::open(path).map_err(|e| DataError::io(path, e))?;
        let size = file.metadata().map_err(|e| DataError::io(path, e))?.len();
        Self::from_source(path.to_path_buf(), Source::File(file), size)
    }

    /// Read from memory; `name` is used in error messages.
    pub fn from_bytes(name: impl Into<PathBuf>, bytes: Vec<u8>) -> Result<Self> {
        let size = bytes.len() as u64;
        Self::from_source(name.into(), Source::Memory(bytes), size)
    }

    fn from_source(path: PathBuf, source: Source, size: u64) -> Result<Self> {
        let mut reader = ArrayRecordReader {
            path,
            source,
            chunks: Vec::new(),
            footer_offset: 0,
            num_records: 0,
            writer_options: None,
        };
        reader.load_index(size).map_err(|issue| reader.format_error(issue))?;
        Ok(reader)
    }

    /// The file path (or name given to `from_bytes`).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Number of records.
    pub fn len(&self) -> u64 {
        self.num_records
    }

    /// True when the file holds no record.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The writer options string recorded in the footer (e.g.
    /// `group_size:1,transpose:false,...,zstd:3,...`), if any.
    pub fn options_string(&self) -> Option<&str> {
        self.writer_options.as_deref()
    }

    /// Number of data chunks.
    pub fn num_chunks(&self) -> usize {
        self.chunks.len()
    }

    /// Record `index`.
    pub fn read(&self, index: u64) -> Result<Vec<u8>> {
        let c = self.chunk_of(index)?;
        let chunk = self.read_chunk(c)?;
        let simple = self.checked(&chunk, c)?;
        simple.record((index - self.chunks[c].first_record) as usize).map_err(|i| self.format_error(i))
    }

    /// Record `index` into `out` (its previous contents are replaced). Reusing one buffer
    /// per thread avoids allocating and page-faulting a fresh multi-megabyte buffer per read.
    pub fn read_into(&self, index: u64, out: &mut Vec<u8>) -> Result<()> {
        let c = self.chunk_of(index)?;
        let chunk = self.read_chunk(c)?;
        let simple = self.checked(&chunk, c)?;
        simple
            .record_into((index - self.chunks[c].first_record) as usize, out)
            .map_err(|i| self.format_error(i))
    }

    /// Records `range`, decoding each chunk once.
    pub fn read_range(&self, range: Range<u64>) -> Result<Vec<Vec<u8>>> {
        if range.start > range.end || range.end > self.num_records {
            return Err(self.bad_index(format!(
                "range {}..{} is outside 0..{}",
                range.start, range.end, self.num_records
            )));
        }
        // Record counts come from the footer: reserve no more than a modest amount up front.
        let mut out = Vec::with_capacity((range.end - range.start).min(1 << 16) as usize);
        let mut next = range.start;
        while next < range.end {
            let c = self.chunk_of(next)?;
            let entry = self.chunks[c];
            let chunk = self.read_chunk(c)?;
            let records = self.checked(&chunk, c)?.records().map_err(|i| self.format_error(i))?;
            let skip = (next - entry.first_record) as usize;
            let take = ((range.end - next) as usize).min(records.len() - skip);
            out.extend(records.into_iter().skip(skip).take(take));
            next += take as u64;
        }
        Ok(out)
    }

    /// Iterate over all records in order, decoding each chunk once.
    pub fn iter(&self) -> impl Iterator<Item = Result<Vec<u8>>> + '_ {
        (0..self.chunks.len()).flat_map(move |c| {
            let entry = self.chunks[c];
            match self.read_range(entry.first_record..entry.first_record + entry.num_records) {
                Ok(records) => records.into_iter().map(Ok).collect::<Vec<_>>(),
                Err(e) => vec![Err(e)],
            }
        })
    }

    /// Index of the chunk holding record `index`.
    fn chunk_of(&self, index: u64) -> Result<usize> {
        if index >= self.num_records {
            return Err(self.bad_index(format!(
                "record {index} is out of range (the file holds {} records)",
                self.num_records
            )));
        }
        Ok(self.chunks.partition_point(|c| c.first_record + c.num_records <= index))
    }

    /// Read and verify data chunk `c` with one positional read of its span.
    fn read_chunk(&self, c: usize) -> Result<Chunk> {
        let begin = self.chunks[c].offset;
        let end = self.chunks.get(c + 1).map_or(self.footer_offset, |n| n.offset);
        let stored = self.source.read_range(begin, end).map_err(|e| DataError::io(&self.path, e))?;
        parse_chunk(stored, begin).map_err(|i| self.format_error(i))
    }

    /// Split chunk `c` and check it against its footer entry.
    fn checked<'a>(&self, chunk: &'a Chunk, c: usize) -> Result<SimpleChunk<'a>> {
        let simple = SimpleChunk::parse(chunk).map_err(|i| self.format_error(i))?;
        let expected = self.chunks[c].num_records;
        if simple.sizes.len() as u64 != expected {
            return Err(self.format_error(Issue::new(
                chunk.begin,
                format!(
                    "chunk holds {} records but the footer says {expected} (footer inconsistent)",
                    simple.sizes.len()
                ),
            )));
        }
        Ok(simple)
    }

    /// Read a whole chunk's records from `[begin, end)`.
    fn read_records_at(&self, begin: u64, end: u64) -> Result<Vec<Vec<u8>>, Issue> {
        let stored = self
            .source
            .read_range(begin, end)
            .map_err(|e| Issue::new(begin, format!("cannot read bytes {begin}..{end}: {e}")))?;
        let chunk = parse_chunk(stored, begin)?;
        SimpleChunk::parse(&chunk)?.records()
    }

    /// Check the file signature, then read the postscript and footer.
    fn load_index(&mut self, size: u64) -> Result<(), Issue> {
        if size < BLOCK_SIZE {
            return Err(Issue::new(
                size,
                format!(
                    "file is {size} bytes; an ArrayRecord file is at least {BLOCK_SIZE} bytes (truncated?)"
                ),
            ));
        }
        self.check_signature()?;
        let postscript_offset = size - BLOCK_SIZE;
        let postscript = self.read_records_at(postscript_offset, size)?;
        let first = postscript
            .first()
            .ok_or_else(|| Issue::new(postscript_offset, "postscript chunk holds no record"))?;
        let postscript = Postscript::decode(first).map_err(|r| Issue::new(postscript_offset, r))?;
        if postscript.magic != MAGIC {
            return Err(Issue::new(
                postscript_offset,
                format!(
                    "postscript magic {:#x}, expected {MAGIC:#x} (not an ArrayRecord file)",
                    postscript.magic
                ),
            ));
        }
        let footer_offset = postscript.footer_offset;
        if !is_chunk_start(footer_offset) || footer_offset < 64 || footer_offset >= postscript_offset {
            return Err(Issue::new(
                postscript_offset,
                format!(
                    "postscript points to footer at byte {footer_offset}, outside 64..{postscript_offset}"
                ),
            ));
        }
        let footer = self.read_records_at(footer_offset, postscript_offset)?;
        let bad = |reason: String| Issue::new(footer_offset, reason);
        let (metadata, entries) =
            footer.split_first().ok_or_else(|| bad("footer chunk holds no record".into()))?;
        let metadata = FooterMetadata::decode(metadata).map_err(bad)?;
        if metadata.version != VERSION {
            return Err(bad(format!("ArrayRecord version {}, expected {VERSION}", metadata.version)));
        }
        if metadata.num_chunks != entries.len() as u64 {
            return Err(bad(format!(
                "footer metadata says {} chunks but lists {} (footer inconsistent)",
                metadata.num_chunks,
                entries.len()
            )));
        }
        let mut chunks = Vec::with_capacity(entries.len());
        let mut first_record = 0u64;
        let mut min_offset = 64u64;
        for (i, entry) in entries.iter().enumerate() {
            let entry = FooterEntry::decode(entry).map_err(|r| bad(format!("footer entry {i}: {r}")))?;
            let offset = entry.chunk_offset;
            if offset < min_offset || offset >= footer_offset || !is_chunk_start(offset) {
                return Err(bad(format!(
                    "footer entry {i} puts a chunk at byte {offset}, outside {min_offset}..{footer_offset} \
                     or not a chunk boundary (footer inconsistent)"
                )));
            }
            chunks.push(ChunkEntry { offset, first_record, num_records: entry.num_records });
            first_record = first_record
                .checked_add(entry.num_records)
                .ok_or_else(|| bad("record counts overflow".into()))?;
            min_offset = offset + CHUNK_HEADER_SIZE;
        }
        if first_record != metadata.num_records {
            return Err(bad(format!(
                "footer metadata says {} records but the chunks hold {first_record} (footer inconsistent)",
                metadata.num_records
            )));
        }
        self.chunks = chunks;
        self.footer_offset = footer_offset;
        self.num_records = first_record;
        self.writer_options = metadata.writer_options;
        Ok(())
    }

    /// The file must start with Riegeli's file signature chunk.
    fn check_signature(&self) -> Result<(), Issue> {
        let stored = self
            .source
            .read_range(0, BLOCK_HEADER_SIZE + CHUNK_HEADER_SIZE)
            .map_err(|e| Issue::new(0, format!("cannot read the file signature: {e}")))?;
        let not_riegeli = || Issue::new(0, "missing Riegeli file signature (not an ArrayRecord file)");
        let chunk = parse_chunk(stored, 0).map_err(|_| not_riegeli())?;
        if chunk.header.chunk_type != CHUNK_SIGNATURE || chunk.header.data_size != 0 {
            return Err(not_riegeli());
        }
        Ok(())
    }

    fn format_error(&self, issue: Issue) -> DataError {
        DataError::format(&self.path, issue.offset, issue.reason)
    }

    fn bad_index(&self, reason: String) -> DataError {
        DataError::invalid(format!("record index for {}", self.path.display()), reason)
    }
}

/// Whether a chunk may begin at `pos` (not inside or right after a block header).
fn is_chunk_start(pos: u64) -> bool {
    !(1..=BLOCK_HEADER_SIZE).contains(&(pos % BLOCK_SIZE))
}
