//! The Riegeli container layer: 64 KiB blocks with 24-byte block headers interleaved, and
//! 40-byte chunk headers, both protected by HighwayHash.
//!
//! Hand-written: the `riegeli` crate implements exactly this, but keeps its block and chunk
//! header types, block arithmetic and hashing `pub(crate)`; its public `RecordWriter` cannot
//! report chunk offsets, pad to a block boundary or write the footer/postscript chunks, and
//! its `RecordReader` cannot read one chunk at a known offset through `&self`.

use highway::{HighwayHash, HighwayHasher, Key};

/// Riegeli block size.
pub(crate) const BLOCK_SIZE: u64 = 1 << 16;
/// Block header size (hash, previous_chunk, next_chunk).
pub(crate) const BLOCK_HEADER_SIZE: u64 = 24;
/// Chunk-carrying bytes per block.
pub(crate) const USABLE_BLOCK_SIZE: u64 = BLOCK_SIZE - BLOCK_HEADER_SIZE;
/// Chunk header size.
pub(crate) const CHUNK_HEADER_SIZE: u64 = 40;

/// Chunk type byte: file signature.
pub(crate) const CHUNK_SIGNATURE: u8 = b's';
/// Chunk type byte: padding.
pub(crate) const CHUNK_PADDING: u8 = b'p';
/// Chunk type byte: simple chunk of records.
pub(crate) const CHUNK_SIMPLE: u8 = b'r';

/// The Riegeli HighwayHash key: ASCII `"Riegeli/records\nRiegeli/records\n"` as 4 LE u64.
const HASH_KEY: [u64; 4] =
    [0x2f69_6c65_6765_6952, 0x0a73_6472_6f63_6572, 0x2f69_6c65_6765_6952, 0x0a73_6472_6f63_6572];

/// Riegeli's 64-bit HighwayHash of `data`.
pub(crate) fn hash64(data: &[u8]) -> u64 {
    HighwayHasher::new(Key(HASH_KEY)).hash64(data)
}

/// File position after laying out `length` chunk bytes from `pos`, skipping block headers.
/// Closed form (no loop over blocks), saturating on absurd lengths.
pub(crate) fn add_with_overhead(pos: u64, length: u64) -> u64 {
    if length == 0 {
        return pos;
    }
    let mut pos = pos;
    let offset = pos % BLOCK_SIZE;
    if offset < BLOCK_HEADER_SIZE {
        pos += BLOCK_HEADER_SIZE - offset;
    }
    let available = BLOCK_SIZE - pos % BLOCK_SIZE;
    if length <= available {
        return pos + length;
    }
    let next_boundary = pos + available;
    let rest = length - available;
    let (blocks, tail) = (rest / USABLE_BLOCK_SIZE, rest % USABLE_BLOCK_SIZE);
    let whole = blocks.saturating_mul(BLOCK_SIZE);
    if tail == 0 {
        next_boundary.saturating_add(whole)
    } else {
        next_boundary.saturating_add(whole).saturating_add(BLOCK_HEADER_SIZE + tail)
    }
}

/// Smallest position ≥ `pos` where a chunk may begin (never inside or right after a header).
fn round_up_to_possible_chunk_boundary(pos: u64) -> u64 {
    let offset = pos % BLOCK_SIZE;
    if (1..=BLOCK_HEADER_SIZE).contains(&offset) {
        pos - offset + BLOCK_HEADER_SIZE + 1
    } else {
        pos
    }
}

/// End of a chunk beginning at `begin`: its header and data, but at least one byte per
/// record (writers zero-pad short chunks so that recovery can count records).
pub(crate) fn chunk_end(begin: u64, data_size: u64, num_records: u64) -> u64 {
    let from_data = add_with_overhead(begin, CHUNK_HEADER_SIZE.saturating_add(data_size));
    from_data.max(round_up_to_possible_chunk_boundary(begin.saturating_add(num_records)))
}

/// A serialized block header for the boundary `boundary` inside the chunk `[begin, end)`.
pub(crate) fn block_header(boundary: u64, begin: u64, end: u64) -> [u8; 24] {
    let mut bytes = [0u8; 24];
    bytes[8..16].copy_from_slice(&(boundary - begin).to_le_bytes());
    bytes[16..24].copy_from_slice(&(end - boundary).to_le_bytes());
    let hash = hash64(&bytes[8..24]);
    bytes[0..8].copy_from_slice(&hash.to_le_bytes());
    bytes
}

/// A decoded chunk header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ChunkHeader {
    /// Bytes of chunk data after the header.
    pub data_size: u64,
    /// HighwayHash of the chunk data.
    pub data_hash: u64,
    /// Chunk type byte (`b's'`, `b'r'`, `b'p'`, ...).
    pub chunk_type: u8,
    /// Records in the chunk (56 bits).
    pub num_records: u64,
    /// Sum of the decoded record sizes.
    pub decoded_data_size: u64,
}

impl ChunkHeader {
    /// Header for `data`.
    pub fn new(data: &[u8], chunk_type: u8, num_records: u64, decoded_data_size: u64) -> Self {
        ChunkHeader {
            data_size: data.len() as u64,
            data_hash: hash64(data),
            chunk_type,
            num_records,
            decoded_data_size,
        }
    }

    /// The 40 header bytes, hash first.
    pub fn to_bytes(self) -> [u8; 40] {
        let mut bytes = [0u8; 40];
        bytes[8..16].copy_from_slice(&self.data_size.to_le_bytes());
        bytes[16..24].copy_from_slice(&self.data_hash.to_le_bytes());
        let type_and_records = (self.num_records << 8) | u64::from(self.chunk_type);
        bytes[24..32].copy_from_slice(&type_and_records.to_le_bytes());
        bytes[32..40].copy_from_slice(&self.decoded_data_size.to_le_bytes());
        let hash = hash64(&bytes[8..40]);
        bytes[0..8].copy_from_slice(&hash.to_le_bytes());
        bytes
    }

    /// Parse 40 header bytes; `None` when the header hash does not match.
    pub fn parse(bytes: &[u8; 40]) -> Option<Self> {
        let word = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().expect("8 bytes"));
        if word(0) != hash64(&bytes[8..40]) {
            return None;
        }
        Some(ChunkHeader {
            data_size: word(8),
            data_hash: word(16),
            chunk_type: (word(24) & 0xff) as u8,
            num_records: word(24) >> 8,
            decoded_data_size: word(32),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Naive reference: walk byte by byte.
    fn add_with_overhead_naive(mut pos: u64, mut length: u64) -> u64 {
        while length > 0 {
            if pos % BLOCK_SIZE < BLOCK_HEADER_SIZE {
                pos += 1;
            } else {
                pos += 1;
                length -= 1;
            }
        }
        pos
    }

    #[test]
    fn add_with_overhead_matches_naive_walk() {
        let starts = [0, 1, 23, 24, 25, 100, 65535, 65536, 65560, 65561, 131000];
        let lengths = [0, 1, 39, 40, 65471, 65472, 65511, 65512, 65513, 131024, 200000];
        for &s in &starts {
            for &l in &lengths {
                assert_eq!(add_with_overhead(s, l), add_with_overhead_naive(s, l), "{s} {l}");
            }
        }
        assert_eq!(add_with_overhead(64, u64::MAX), u64::MAX);
    }

    #[test]
    fn hash_matches_riegeli_reference() {
        // Value pinned by the riegeli crate against the C++ implementation.
        assert_eq!(hash64(b""), 0x72c3b1e9c0139fe1);
    }

    #[test]
    fn chunk_header_round_trip_and_corruption() {
        let h = ChunkHeader::new(b"abc", CHUNK_SIMPLE, 7, 99);
        let mut bytes = h.to_bytes();
        assert_eq!(ChunkHeader::parse(&bytes), Some(h));
        bytes[30] ^= 1;
        assert_eq!(ChunkHeader::parse(&bytes), None);
    }

    #[test]
    fn chunk_end_pads_for_records_and_never_ends_in_a_header() {
        assert_eq!(chunk_end(64, 10, 1), 114);
        // 1000 empty records in a 10-byte chunk: padded to one byte per record.
        assert_eq!(chunk_end(64, 10, 1000), 1064);
        // A record-count end inside a block header moves past it.
        assert_eq!(chunk_end(65000, 0, 540), 65536 + 25);
    }
}
