//! Turning the raw bytes of one chunk, as stored in the file (block headers interleaved),
//! into its verified header and data.

use super::container::hash64;
use super::container::{chunk_end, ChunkHeader, BLOCK_HEADER_SIZE, BLOCK_SIZE, CHUNK_HEADER_SIZE};
use super::Issue;

/// A chunk whose header, block headers and data hash have been verified.
pub(crate) struct Chunk {
    /// File offset of the chunk.
    pub begin: u64,
    /// Its header.
    pub header: ChunkHeader,
    /// Header, data and record-count padding with block headers removed.
    bytes: Vec<u8>,
}

impl Chunk {
    /// The chunk data (after the 40-byte header).
    pub fn data(&self) -> &[u8] {
        &self.bytes[CHUNK_HEADER_SIZE as usize..(CHUNK_HEADER_SIZE + self.header.data_size) as usize]
    }
}

/// Parse the chunk starting at file offset `begin` from `stored`, the file bytes
/// `[begin, begin + stored.len())`; the chunk must end within them. Block headers crossed by
/// the chunk are checked (hash and distances) and removed in place.
pub(crate) fn parse_chunk(mut stored: Vec<u8>, begin: u64) -> Result<Chunk, Issue> {
    let limit = begin + stored.len() as u64;
    // The 40 header bytes, skipping a block header that may precede or split them.
    let mut header_bytes = [0u8; CHUNK_HEADER_SIZE as usize];
    let mut filled = 0usize;
    let mut pos = begin;
    while filled < header_bytes.len() {
        let in_block = pos % BLOCK_SIZE;
        if in_block < BLOCK_HEADER_SIZE {
            pos += BLOCK_HEADER_SIZE - in_block;
            continue;
        }
        let take = ((BLOCK_SIZE - in_block) as usize).min(header_bytes.len() - filled);
        if pos + take as u64 > limit {
            return Err(Issue::new(
                begin,
                format!("chunk header runs past byte {limit} (file truncated or index wrong)"),
            ));
        }
        let at = (pos - begin) as usize;
        header_bytes[filled..filled + take].copy_from_slice(&stored[at..at + take]);
        filled += take;
        pos += take as u64;
    }
    let header = ChunkHeader::parse(&header_bytes)
        .ok_or_else(|| Issue::new(begin, "chunk header hash mismatch (corrupt data)"))?;
    let end = chunk_end(begin, header.data_size, header.num_records);
    if end > limit {
        return Err(Issue::new(
            begin,
            format!(
                "chunk of {} data bytes would end at byte {end}, past its limit {limit} \
                 (file truncated or index wrong)",
                header.data_size
            ),
        ));
    }
    stored.truncate((end - begin) as usize);
    strip_block_headers(&mut stored, begin, end)?;
    let chunk = Chunk { begin, header, bytes: stored };
    if hash64(chunk.data()) != header.data_hash {
        return Err(Issue::new(begin, "chunk data hash mismatch (corrupt data)"));
    }
    Ok(chunk)
}

/// Verify and remove, in place, every block header inside the chunk `[begin, end)` whose
/// bytes `stored` holds.
fn strip_block_headers(stored: &mut Vec<u8>, begin: u64, end: u64) -> Result<(), Issue> {
    let mut boundary = begin.div_ceil(BLOCK_SIZE) * BLOCK_SIZE;
    let mut write = (boundary.min(end) - begin) as usize;
    while boundary < end {
        let at = (boundary - begin) as usize;
        let header: [u8; 24] = stored[at..at + 24].try_into().expect("24 bytes");
        let word = |i: usize| u64::from_le_bytes(header[i..i + 8].try_into().expect("8 bytes"));
        if word(0) != hash64(&header[8..24]) {
            return Err(Issue::new(boundary, "block header hash mismatch (corrupt data)"));
        }
        if word(8) != boundary - begin || word(16) != end - boundary {
            return Err(Issue::new(
                boundary,
                format!(
                    "block header points to chunk bounds -{}/+{}, expected -{}/+{} \
                     (corrupt data or index wrong)",
                    word(8),
                    word(16),
                    boundary - begin,
                    end - boundary
                ),
            ));
        }
        let next = (boundary + BLOCK_SIZE).min(end);
        let src = at + BLOCK_HEADER_SIZE as usize..(next - begin) as usize;
        let len = src.len();
        stored.copy_within(src, write);
        write += len;
        boundary += BLOCK_SIZE;
    }
    stored.truncate(write);
    Ok(())
}
