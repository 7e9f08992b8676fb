//! Riegeli's compressed blobs: `varint(decoded size)` followed by one zstd frame, one brotli
//! stream or raw snappy data (uncompressed blobs carry no prefix).
//!
//! Hand-written on top of the `zstd`, `brotli` and `snap` crates: the `riegeli` crate's
//! (de)compression helpers are `pub(crate)`, and decoding here writes straight into the
//! caller's output buffer (the hot path of the data loader).

use super::options::{Compression, BROTLI_WINDOW_LOG, ZSTD_WINDOW_LOG};
use std::cell::RefCell;
use std::io::{Read, Write};
use zstd::zstd_safe::{self, DCtx, DParameter, InBuffer, OutBuffer, ResetDirective};

/// Compression type byte at the start of a simple chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Codec {
    /// `0`.
    None,
    /// `'b'`.
    Brotli,
    /// `'z'`.
    Zstd,
    /// `'s'`.
    Snappy,
}

impl Codec {
    /// The codec for a compression type byte.
    pub fn from_byte(byte: u8) -> Option<Self> {
        match byte {
            0 => Some(Codec::None),
            b'b' => Some(Codec::Brotli),
            b'z' => Some(Codec::Zstd),
            b's' => Some(Codec::Snappy),
            _ => None,
        }
    }

    /// The compression type byte.
    pub fn byte(self) -> u8 {
        match self {
            Codec::None => 0,
            Codec::Brotli => b'b',
            Codec::Zstd => b'z',
            Codec::Snappy => b's',
        }
    }
}

/// Largest output reserved up front without evidence from the compressed size: a declared
/// size beyond `max(64 × compressed, 16 MiB)` is grown into as data actually decodes.
fn initial_capacity(declared: u64, compressed_len: usize) -> usize {
    let plausible = (compressed_len as u64).saturating_mul(64).max(16 << 20);
    declared.min(plausible) as usize
}

/// Decode a blob whose codec is `codec` and append exactly its declared contents to `out`
/// (which should be empty; for [`Codec::None`] the blob itself is appended).
pub(crate) fn decode_blob(codec: Codec, blob: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
    if codec == Codec::None {
        out.extend_from_slice(blob);
        return Ok(());
    }
    let (declared, used) = riegeli::varint::decode_u64(blob)
        .map_err(|e| format!("bad decoded-size varint of a {codec:?} blob: {e}"))?;
    let compressed = &blob[used..];
    let start = out.len();
    out.try_reserve_exact(initial_capacity(declared, compressed.len()))
        .map_err(|_| format!("cannot allocate {declared} bytes for a {codec:?} blob"))?;
    match codec {
        Codec::None => unreachable!("handled above"),
        Codec::Zstd => decode_zstd(compressed, declared, out)?,
        Codec::Brotli => {
            let reader = brotli::Decompressor::new(compressed, 1 << 16);
            read_capped(reader, declared, out).map_err(|e| format!("brotli: {e}"))?
        }
        Codec::Snappy => {
            // Snappy states its decoded length; it must agree with Riegeli's prefix. A snappy
            // op expands at most 64 bytes from 2 bytes, which bounds the allocation.
            let len = snap::raw::decompress_len(compressed).map_err(|e| format!("snappy: {e}"))?;
            if len as u64 != declared || declared > 32 * compressed.len() as u64 {
                return Err(format!("snappy data decodes to {len} bytes, expected {declared}"));
            }
            out.resize(start + len, 0);
            let n = snap::raw::Decoder::new()
                .decompress(compressed, &mut out[start..])
                .map_err(|e| format!("snappy: {e}"))?;
            out.truncate(start + n);
        }
    }
    let got = (out.len() - start) as u64;
    if got != declared {
        return Err(format!("{codec:?} data decodes to {got} bytes, expected {declared}"));
    }
    Ok(())
}

/// Read all of `reader` into `out`, failing past `declared` bytes.
fn read_capped(reader: impl Read, declared: u64, out: &mut Vec<u8>) -> std::io::Result<()> {
    reader.take(declared.saturating_add(1)).read_to_end(out).map(|_| ())
}

thread_local! {
    /// One zstd decoding context per thread, reused across records.
    static ZSTD_DCTX: RefCell<Option<DCtx<'static>>> = const { RefCell::new(None) };
}

/// Decode one zstd frame into `out`'s spare capacity, growing it (up to `declared + 1`
/// bytes) only when the reservation was smaller than the declared size. With the whole
/// frame and room for it, zstd decodes in a single pass straight into `out`.
fn decode_zstd(compressed: &[u8], declared: u64, out: &mut Vec<u8>) -> Result<(), String> {
    let zerr = |code: usize| format!("zstd: {}", zstd_safe::get_error_name(code));
    ZSTD_DCTX.with(|cell| {
        let mut slot = cell.borrow_mut();
        let dctx = slot.get_or_insert_with(|| {
            let mut d = DCtx::create();
            // Writers may use windows up to 2^31 (the official reader allows the same).
            let _ = d.set_parameter(DParameter::WindowLogMax(31));
            d
        });
        dctx.reset(ResetDirective::SessionOnly).map_err(zerr)?;
        let limit = declared.saturating_add(1);
        let mut input = InBuffer::around(compressed);
        loop {
            if out.len() == out.capacity() {
                if out.len() as u64 >= limit {
                    return Err(format!("zstd data decodes to more than {declared} bytes"));
                }
                let grow = (out.capacity().max(1 << 16) as u64).min(limit - out.len() as u64);
                out.try_reserve_exact(grow as usize)
                    .map_err(|_| format!("cannot allocate {declared} bytes for zstd data"))?;
            }
            let pos = out.len();
            let consumed = input.pos();
            let mut output = OutBuffer::around_pos(out, pos);
            let hint = dctx.decompress_stream(&mut output, &mut input).map_err(zerr)?;
            let produced = output.pos() != pos;
            if hint == 0 {
                if input.pos() != compressed.len() {
                    return Err("trailing bytes after the zstd frame".into());
                }
                return Ok(());
            }
            if !produced && input.pos() == consumed && out.len() < out.capacity() {
                return Err("truncated zstd frame".into());
            }
        }
    })
}

/// Encodes blobs with one codec, reusing its context.
pub(crate) struct Encoder {
    compression: Compression,
    zstd: Option<zstd::bulk::Compressor<'static>>,
}

impl Encoder {
    /// An encoder for `compression` (levels must have been validated).
    pub fn new(compression: Compression) -> std::io::Result<Self> {
        let zstd = match compression {
            Compression::Zstd { level } => {
                let mut c = zstd::bulk::Compressor::new(level)?;
                c.set_parameter(zstd::zstd_safe::CParameter::WindowLog(ZSTD_WINDOW_LOG))?;
                Some(c)
            }
            _ => None,
        };
        Ok(Encoder { compression, zstd })
    }

    /// The codec byte for chunks this encoder writes.
    pub fn codec(&self) -> Codec {
        match self.compression {
            Compression::Uncompressed => Codec::None,
            Compression::Zstd { .. } => Codec::Zstd,
            Compression::Brotli { .. } => Codec::Brotli,
            Compression::Snappy => Codec::Snappy,
        }
    }

    /// Append the blob for `raw` to `out`: `varint(raw.len())` + compressed data, or `raw`
    /// itself when uncompressed.
    pub fn encode_blob(&mut self, raw: &[u8], out: &mut Vec<u8>) -> std::io::Result<()> {
        if let Compression::Uncompressed = self.compression {
            out.extend_from_slice(raw);
            return Ok(());
        }
        riegeli::proto::encode_varint64(out, raw.len() as u64);
        match self.compression {
            Compression::Uncompressed => unreachable!("handled above"),
            Compression::Zstd { .. } => {
                let c = self.zstd.as_mut().expect("zstd encoder");
                out.extend_from_slice(&c.compress(raw)?);
            }
            Compression::Brotli { level } => {
                let mut w = brotli::CompressorWriter::new(&mut *out, 1 << 16, level, BROTLI_WINDOW_LOG);
                w.write_all(raw)?;
                w.flush()?;
            }
            Compression::Snappy => {
                let data = snap::raw::Encoder::new().compress_vec(raw).map_err(std::io::Error::other)?;
                out.extend_from_slice(&data);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blobs_round_trip_for_every_codec_and_reject_wrong_sizes() {
        let raw: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8 ^ (i / 977) as u8).collect();
        for compression in [
            Compression::Uncompressed,
            Compression::Zstd { level: 3 },
            Compression::Brotli { level: 5 },
            Compression::Snappy,
        ] {
            let mut enc = Encoder::new(compression).unwrap();
            for input in [&raw[..], &[][..], &raw[..1]] {
                let mut blob = Vec::new();
                enc.encode_blob(input, &mut blob).unwrap();
                let mut out = Vec::new();
                decode_blob(enc.codec(), &blob, &mut out).unwrap();
                assert_eq!(out, input, "{compression:?}");
                if enc.codec() != Codec::None && !input.is_empty() {
                    // Claim one byte more or less than the data holds.
                    for claim in [input.len() as u64 + 1, input.len() as u64 - 1] {
                        let mut bad = Vec::new();
                        riegeli::proto::encode_varint64(&mut bad, claim);
                        let used = riegeli::varint::decode_u64(&blob).unwrap().1;
                        bad.extend_from_slice(&blob[used..]);
                        assert!(decode_blob(enc.codec(), &bad, &mut Vec::new()).is_err());
                    }
                    // Truncated stream.
                    let cut = &blob[..blob.len() - 1];
                    assert!(decode_blob(enc.codec(), cut, &mut Vec::new()).is_err(), "{compression:?}");
                }
            }
        }
    }

    #[test]
    fn huge_declared_size_does_not_allocate_it() {
        let mut enc = Encoder::new(Compression::Zstd { level: 1 }).unwrap();
        let mut blob = Vec::new();
        enc.encode_blob(b"tiny", &mut blob).unwrap();
        let mut bad = Vec::new();
        riegeli::proto::encode_varint64(&mut bad, 1 << 60);
        bad.extend_from_slice(&blob[1..]);
        let mut out = Vec::new();
        assert!(decode_blob(Codec::Zstd, &bad, &mut out).is_err());
        assert!(out.capacity() <= 16 << 20);
    }
}
