//! Hand-built files with a wrong magic, version or footer: the reader must name the file and
//! the offset of the inconsistency.

use super::chunk_writer::ChunkWriter;
use super::codec::Encoder;
use super::container::{ChunkHeader, CHUNK_SIMPLE};
use super::footer::{FooterEntry, FooterMetadata, Postscript, MAGIC, VERSION};
use super::{simple_chunk, ArrayRecordReader, Compression};
use crate::error::DataError;

/// How to damage the index of a file with chunks of 1 and 2 records.
struct Tamper {
    magic: u64,
    version: u64,
    /// Added to the metadata's chunk count / record count.
    extra_chunks: u64,
    extra_records: u64,
    /// Footer entries are built from the real (offset, count) pairs by this function.
    entries: fn(&[(u64, u64)]) -> Vec<FooterEntry>,
}

fn honest(real: &[(u64, u64)]) -> Vec<FooterEntry> {
    real.iter()
        .map(|&(chunk_offset, num_records)| FooterEntry { chunk_offset, decoded_data_size: 0, num_records })
        .collect()
}

const HONEST: Tamper =
    Tamper { magic: MAGIC, version: VERSION, extra_chunks: 0, extra_records: 0, entries: honest };

fn records_chunk(w: &mut ChunkWriter<Vec<u8>>, records: &[&[u8]]) -> u64 {
    let mut enc = Encoder::new(Compression::Uncompressed).unwrap();
    let mut sizes = Vec::new();
    for r in records {
        riegeli::proto::encode_varint64(&mut sizes, r.len() as u64);
    }
    let values = records.concat();
    let data = simple_chunk::encode(&mut enc, &sizes, &values).unwrap();
    let header = ChunkHeader::new(&data, CHUNK_SIMPLE, records.len() as u64, values.len() as u64);
    w.write_chunk(header, &data).unwrap()
}

/// A file holding records `a`, then `b`, `c` (two chunks), indexed as `t` says; returns the
/// bytes and the footer offset.
fn build(t: &Tamper) -> (Vec<u8>, u64) {
    let mut w = ChunkWriter::new(Vec::new()).unwrap();
    let first = records_chunk(&mut w, &[b"a"]);
    let second = records_chunk(&mut w, &[b"b", b"c"]);
    let entries = (t.entries)(&[(first, 1), (second, 2)]);
    let meta = FooterMetadata {
        version: t.version,
        num_chunks: entries.len() as u64 + t.extra_chunks,
        num_records: entries.iter().map(|e| e.num_records).sum::<u64>() + t.extra_records,
        writer_options: None,
    };
    let mut footer = vec![meta.encode()];
    footer.extend(entries.iter().map(FooterEntry::encode));
    let refs: Vec<&[u8]> = footer.iter().map(Vec::as_slice).collect();
    let footer_offset = records_chunk(&mut w, &refs);
    w.pad_to_block_boundary().unwrap();
    let ps = Postscript { footer_offset, magic: t.magic }.encode();
    records_chunk(&mut w, &[&ps, &ps, &ps]);
    w.pad_to_block_boundary().unwrap();
    (w.into_inner(), footer_offset)
}

fn open_error(t: &Tamper) -> (DataError, Vec<u8>, u64) {
    let (bytes, footer_offset) = build(t);
    let err = ArrayRecordReader::from_bytes("hand.array_record", bytes.clone()).err().expect("must fail");
    (err, bytes, footer_offset)
}

fn assert_format_at(err: &DataError, offset: u64, words: &str) {
    match err {
        DataError::Format { path, offset: at, reason } => {
            assert_eq!(path.to_str(), Some("hand.array_record"));
            assert_eq!(*at, offset, "{err}");
            assert!(reason.contains(words), "{err}");
        }
        other => panic!("expected a format error, got {other:?}"),
    }
}

#[test]
fn honest_hand_built_file_reads() {
    let (bytes, _) = build(&HONEST);
    let reader = ArrayRecordReader::from_bytes("hand.array_record", bytes).unwrap();
    let all: Vec<Vec<u8>> = (0..3).map(|i| reader.read(i).unwrap()).collect();
    assert_eq!(all, [b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]);
}

#[test]
fn wrong_magic_and_version_are_rejected() {
    let (err, bytes, _) = open_error(&Tamper { magic: MAGIC ^ 1, ..HONEST });
    assert_format_at(&err, bytes.len() as u64 - 65536, "magic");
    let (err, _, footer) = open_error(&Tamper { version: 2, ..HONEST });
    assert_format_at(&err, footer, "version");
}

#[test]
fn inconsistent_footers_are_rejected() {
    let (err, _, footer) = open_error(&Tamper { extra_chunks: 1, ..HONEST });
    assert_format_at(&err, footer, "footer inconsistent");
    let (err, _, footer) = open_error(&Tamper { extra_records: 1, ..HONEST });
    assert_format_at(&err, footer, "footer inconsistent");
    // Offsets out of order, past the footer, or inside a block header.
    for entries in [
        (|r: &[(u64, u64)]| {
            let mut e = honest(r);
            e.swap(0, 1);
            e
        }) as fn(&[(u64, u64)]) -> Vec<FooterEntry>,
        |r| {
            let mut e = honest(r);
            e[1].chunk_offset = 1 << 20;
            e
        },
        |r| {
            let mut e = honest(r);
            e[1].chunk_offset = 65536 + 3;
            e
        },
    ] {
        let (err, _, footer) = open_error(&Tamper { entries, ..HONEST });
        assert_format_at(&err, footer, "footer inconsistent");
    }
}

#[test]
fn record_counts_disagreeing_with_chunks_fail_on_read() {
    // Same total, wrong split: 2 + 1 instead of 1 + 2.
    let t = Tamper {
        entries: |r| {
            let mut e = honest(r);
            e[0].num_records = 2;
            e[1].num_records = 1;
            e
        },
        ..HONEST
    };
    let (bytes, _) = build(&t);
    let reader = ArrayRecordReader::from_bytes("hand.array_record", bytes).unwrap();
    assert_format_at(&reader.read(0).unwrap_err(), 64, "footer says");
    // A chunk offset that points into the middle of a chunk.
    let t = Tamper {
        entries: |r| {
            let mut e = honest(r);
            e[1].chunk_offset += 1;
            e
        },
        ..HONEST
    };
    let (bytes, _) = build(&t);
    let reader = ArrayRecordReader::from_bytes("hand.array_record", bytes).unwrap();
    let err = reader.read(2).unwrap_err();
    assert!(matches!(err, DataError::Format { .. }), "{err:?}");
}
