//! Damaged ArrayRecord files: every failure is a `DataError::Format` naming the file and a
//! byte offset; no damage yields a panic or wrong record bytes.

mod common;

use common::*;
use jinn_data::array_record::{ArrayRecordReader, ArrayRecordWriter, Compression};
use jinn_data::DataError;

/// A file of `varied_records(5)`, zstd, groups of 3.
fn sample() -> (Vec<u8>, Vec<Vec<u8>>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.array_record");
    let records = varied_records(5);
    let mut w = ArrayRecordWriter::create(&path, options(3, Compression::Zstd { level: 3 })).unwrap();
    for r in &records {
        w.write_record(r).unwrap();
    }
    w.finish().unwrap();
    (std::fs::read(&path).unwrap(), records)
}

/// The error must be a format error whose message names `name` and `offset`.
fn assert_format(err: DataError, name: &str, offset: Option<u64>) {
    let message = err.to_string();
    match err {
        DataError::Format { offset: at, .. } => {
            assert!(message.contains(name), "{message}");
            assert!(message.contains(&format!("byte offset {at}")), "{message}");
            if let Some(o) = offset {
                assert_eq!(at, o, "{message}");
            }
        }
        other => panic!("expected a format error, got {other:?}"),
    }
}

#[test]
fn truncated_files_fail_to_open() {
    let (bytes, _) = sample();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.array_record");
    let n = bytes.len();
    for cut in [0, 10, 64, 1000, 65536, n / 2, n - 65536, n - 65535, n - 100, n - 1] {
        std::fs::write(&path, &bytes[..cut]).unwrap();
        let err = ArrayRecordReader::open(&path).err().unwrap_or_else(|| panic!("cut {cut} opened"));
        assert_format(err, "t.array_record", None);
    }
}

#[test]
fn flipped_bytes_never_give_wrong_records() {
    let (bytes, records) = sample();
    let mut detected = 0;
    for pos in (0..bytes.len()).step_by(331).chain([5, 30, 64 + 3, 64 + 45, 65536 + 3]) {
        let mut bad = bytes.clone();
        bad[pos] ^= 0x10;
        let reader = match ArrayRecordReader::from_bytes("flip.array_record", bad) {
            Ok(r) => r,
            Err(e) => {
                assert_format(e, "flip.array_record", None);
                detected += 1;
                continue;
            }
        };
        assert_eq!(reader.len(), records.len() as u64);
        for (i, expected) in records.iter().enumerate() {
            match reader.read(i as u64) {
                Ok(got) => assert!(&got == expected, "flip at {pos}: record {i} silently wrong"),
                Err(e) => {
                    assert_format(e, "flip.array_record", None);
                    detected += 1;
                }
            }
        }
    }
    assert!(detected > 100, "only {detected} detections");
}

#[test]
fn damage_is_located() {
    let (bytes, _) = sample();
    let flip = |pos: usize| {
        let mut bad = bytes.clone();
        bad[pos] ^= 1;
        ArrayRecordReader::from_bytes("d.array_record", bad)
    };
    // The file signature (block header and chunk header at 0).
    for pos in [3, 20, 40] {
        assert_format(flip(pos).err().unwrap(), "d.array_record", Some(0));
    }
    // Header and data of the first data chunk, at byte 64.
    for pos in [64 + 12, 64 + 40 + 7] {
        let reader = flip(pos).unwrap();
        assert_format(reader.read(1).unwrap_err(), "d.array_record", Some(64));
    }
    // The block header at 65536 lies inside a chunk; reading that chunk names the header.
    let reader = flip(65536 + 9).unwrap();
    let errors: Vec<DataError> = (0..reader.len()).filter_map(|i| reader.read(i).err()).collect();
    assert!(!errors.is_empty());
    for e in errors {
        assert_format(e, "d.array_record", Some(65536));
    }
    // The postscript, in the last block.
    let last = bytes.len() - 65536;
    assert_format(flip(last + 24 + 40 + 9).err().unwrap(), "d.array_record", Some(last as u64));
    // Not an ArrayRecord file at all.
    let err = ArrayRecordReader::from_bytes("z.array_record", vec![0; 200_000]).err().unwrap();
    assert_format(err, "z.array_record", Some(0));
}

#[test]
fn out_of_range_index_is_invalid() {
    let (bytes, records) = sample();
    let reader = ArrayRecordReader::from_bytes("i.array_record", bytes).unwrap();
    let err = reader.read(records.len() as u64).unwrap_err();
    assert!(matches!(err, DataError::Invalid { .. }), "{err:?}");
    assert!(err.to_string().contains("i.array_record"), "{err}");
    assert!(reader.read(u64::MAX).is_err());
}
