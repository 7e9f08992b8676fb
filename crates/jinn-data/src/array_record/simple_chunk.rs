//! Riegeli's simple chunk (type `'r'`): a codec byte, the length-prefixed blob of record
//! sizes (one varint each) and the blob of concatenated record bytes.

use super::chunk_reader::Chunk;
use super::codec::{decode_blob, Codec, Encoder};
use super::container::CHUNK_SIMPLE;
use super::Issue;

/// Chunk data for records whose sizes (varints, concatenated) and bytes are given.
pub(crate) fn encode(encoder: &mut Encoder, sizes: &[u8], values: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut sizes_blob = Vec::with_capacity(sizes.len() + 16);
    encoder.encode_blob(sizes, &mut sizes_blob)?;
    let mut data = Vec::with_capacity(values.len() / 2 + sizes_blob.len() + 16);
    data.push(encoder.codec().byte());
    riegeli::proto::encode_varint64(&mut data, sizes_blob.len() as u64);
    data.extend_from_slice(&sizes_blob);
    encoder.encode_blob(values, &mut data)?;
    Ok(data)
}

/// A verified simple chunk, split into its parts.
pub(crate) struct SimpleChunk<'a> {
    begin: u64,
    codec: Codec,
    values_blob: &'a [u8],
    /// Record sizes, in order.
    pub sizes: Vec<u64>,
}

impl<'a> SimpleChunk<'a> {
    /// Split `chunk` and decode its record sizes, checking them against the header.
    pub fn parse(chunk: &'a Chunk) -> Result<Self, Issue> {
        let begin = chunk.begin;
        let bad = |reason: String| Issue::new(begin, reason);
        if chunk.header.chunk_type != CHUNK_SIMPLE {
            return Err(bad(format!(
                "chunk type {:?} is not a simple record chunk ('r'; transposed chunks are \
                 not supported)",
                chunk.header.chunk_type as char
            )));
        }
        let data = chunk.data();
        let (&codec_byte, rest) = data.split_first().ok_or_else(|| bad("empty record chunk".into()))?;
        let codec = Codec::from_byte(codec_byte)
            .ok_or_else(|| bad(format!("unknown compression type byte {codec_byte:#04x}")))?;
        let (sizes_len, used) =
            riegeli::varint::decode_u64(rest).map_err(|e| bad(format!("bad record-sizes length: {e}")))?;
        let rest = &rest[used..];
        if sizes_len > rest.len() as u64 {
            return Err(bad(format!("record-sizes blob of {sizes_len} bytes overruns the chunk")));
        }
        let (sizes_blob, values_blob) = rest.split_at(sizes_len as usize);
        let mut raw_sizes = Vec::new();
        decode_blob(codec, sizes_blob, &mut raw_sizes).map_err(|e| bad(format!("record sizes: {e}")))?;
        // Every size takes at least one byte, which bounds the count before allocating.
        let expected = chunk.header.num_records;
        if expected > raw_sizes.len() as u64 {
            return Err(bad(format!(
                "header claims {expected} records but the sizes blob has {} bytes",
                raw_sizes.len()
            )));
        }
        let mut sizes = Vec::with_capacity(expected as usize);
        let mut at = 0usize;
        let mut total = 0u64;
        while at < raw_sizes.len() {
            let (size, used) = riegeli::varint::decode_u64(&raw_sizes[at..])
                .map_err(|e| bad(format!("bad record size varint: {e}")))?;
            at += used;
            total = total.saturating_add(size);
            sizes.push(size);
        }
        if sizes.len() as u64 != expected || total != chunk.header.decoded_data_size {
            return Err(bad(format!(
                "chunk holds {} records of {total} bytes, header says {expected} records of {} bytes",
                sizes.len(),
                chunk.header.decoded_data_size
            )));
        }
        Ok(SimpleChunk { begin, codec, values_blob, sizes })
    }

    /// All record bytes, concatenated, appended to `out` (which should be empty and may be
    /// pre-sized by the caller).
    pub fn values_into(&self, out: &mut Vec<u8>) -> Result<(), Issue> {
        let expected: u64 = self.sizes.iter().sum();
        decode_blob(self.codec, self.values_blob, out)
            .map_err(|e| Issue::new(self.begin, format!("record bytes: {e}")))?;
        if out.len() as u64 != expected {
            return Err(Issue::new(
                self.begin,
                format!("record bytes total {} bytes, sizes say {expected}", out.len()),
            ));
        }
        Ok(())
    }

    /// Every record of the chunk.
    pub fn records(&self) -> Result<Vec<Vec<u8>>, Issue> {
        let mut values = Vec::new();
        self.values_into(&mut values)?;
        let mut start = 0usize;
        Ok(self
            .sizes
            .iter()
            .map(|&size| {
                let record = values[start..start + size as usize].to_vec();
                start += size as usize;
                record
            })
            .collect())
    }

    /// Replace `out`'s contents with record `i` (`i < sizes.len()`), reusing its capacity.
    pub fn record_into(&self, i: usize, out: &mut Vec<u8>) -> Result<(), Issue> {
        out.clear();
        self.values_into(out)?;
        let start = self.sizes[..i].iter().sum::<u64>() as usize;
        let end = start + self.sizes[i] as usize;
        out.copy_within(start..end, 0);
        out.truncate(end - start);
        Ok(())
    }

    /// Record `i` of the chunk (`i < sizes.len()`). A chunk of one record is decoded straight
    /// into the returned buffer.
    pub fn record(&self, i: usize) -> Result<Vec<u8>, Issue> {
        let mut values = Vec::new();
        self.values_into(&mut values)?;
        let start = self.sizes[..i].iter().sum::<u64>() as usize;
        let end = start + self.sizes[i] as usize;
        if start == 0 {
            values.truncate(end);
            Ok(values)
        } else {
            Ok(values[start..end].to_vec())
        }
    }
}
