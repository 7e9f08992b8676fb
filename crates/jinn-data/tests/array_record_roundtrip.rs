//! jinn → jinn ArrayRecord round trips for every codec and several group sizes, checked
//! also against the `riegeli` crate's independent sequential reader.

mod common;

use common::*;
use jinn_data::array_record::{ArrayRecordReader, ArrayRecordWriter, Compression, WriterOptions};
use jinn_data::DataError;
use std::path::Path;

fn write(path: &Path, opts: WriterOptions, records: &[Vec<u8>]) {
    let mut w = ArrayRecordWriter::create(path, opts).unwrap();
    for r in records {
        w.write_record(r).unwrap();
    }
    assert_eq!(w.finish().unwrap(), records.len() as u64);
}

/// The riegeli crate sees an ArrayRecord file as plain Riegeli records: the data records,
/// then the footer chunk's records (metadata + one per chunk), then 3 postscript copies.
fn riegeli_records(path: &Path) -> Vec<Vec<u8>> {
    let file = std::fs::File::open(path).unwrap();
    let mut reader = riegeli::RecordReader::new(file, riegeli::ReaderOptions::new()).unwrap();
    let mut out = Vec::new();
    while let Some(r) = reader.read_record().unwrap() {
        out.push(r);
    }
    out
}

#[test]
fn round_trip_every_codec_and_group_size() {
    let dir = tempfile::tempdir().unwrap();
    let records = varied_records(1);
    for compression in CODECS {
        for group_size in [1, 3, 8] {
            let opts = options(group_size, compression);
            let path = dir.path().join("rt.array_record");
            write(&path, opts, &records);
            let size = std::fs::metadata(&path).unwrap().len();
            assert_eq!(size % 65536, 0, "{opts:?}: postscript fills the last block");

            let reader = ArrayRecordReader::open(&path).unwrap();
            assert_reads(&reader, &records);
            assert_eq!(reader.options_string(), Some(opts.to_options_string().as_str()));
            let chunks = records.len().div_ceil(group_size);
            assert_eq!(reader.num_chunks(), chunks);

            let mem =
                ArrayRecordReader::from_bytes("mem.array_record", std::fs::read(&path).unwrap()).unwrap();
            assert_reads(&mem, &records);

            let seen = riegeli_records(&path);
            assert_eq!(seen.len(), records.len() + 1 + chunks + 3, "{opts:?}");
            assert!(seen[..records.len()] == records[..], "{opts:?}: riegeli crate disagrees");
            assert_eq!(seen[seen.len() - 1], seen[seen.len() - 2], "postscript copies");
        }
    }
}

#[test]
fn empty_and_single_record_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("e.array_record");
    write(&path, WriterOptions::default(), &[]);
    let reader = ArrayRecordReader::open(&path).unwrap();
    assert!(reader.is_empty());
    assert!(reader.iter().next().is_none());
    assert!(matches!(reader.read(0), Err(DataError::Invalid { .. })));

    write(&path, options(8, Compression::Zstd { level: 1 }), &[vec![]]);
    assert_reads(&ArrayRecordReader::open(&path).unwrap(), &[vec![]]);
}

#[test]
fn many_small_records_and_partial_ranges() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.array_record");
    // 3000 empty-ish records per chunk: chunks shorter than their record count get padded.
    let records: Vec<Vec<u8>> =
        (0..7000u32).map(|i| if i % 5 == 0 { vec![] } else { i.to_le_bytes().to_vec() }).collect();
    write(&path, options(3000, Compression::Zstd { level: 3 }), &records);
    let reader = ArrayRecordReader::open(&path).unwrap();
    assert_eq!(reader.read_range(2990..3010).unwrap(), records[2990..3010]);
    assert_eq!(reader.read_range(6999..7000).unwrap(), records[6999..]);
    assert!(reader.read_range(5..5).unwrap().is_empty());
    assert!(matches!(reader.read_range(6990..7001), Err(DataError::Invalid { .. })));
    assert_eq!(riegeli_records(&path)[..7000], records[..]);
    assert_reads(&reader, &records);
}

#[test]
fn concurrent_reads_share_one_reader() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<ArrayRecordReader>();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.array_record");
    let records = varied_records(3);
    write(&path, WriterOptions::default(), &records);
    let reader = ArrayRecordReader::open(&path).unwrap();
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let (reader, records) = (&reader, &records);
            s.spawn(move || {
                for k in 0..40u64 {
                    let i = (k * 5 + t) % records.len() as u64;
                    assert_eq!(reader.read(i).unwrap(), records[i as usize]);
                }
            });
        }
    });
}

#[test]
fn bad_options_and_paths_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.array_record");
    for opts in [options(0, Compression::Snappy), options(1, Compression::Brotli { level: 12 })] {
        assert!(matches!(ArrayRecordWriter::create(&path, opts), Err(DataError::Invalid { .. })));
    }
    let missing = dir.path().join("no/such/dir/x.array_record");
    assert!(matches!(
        ArrayRecordWriter::create(&missing, WriterOptions::default()),
        Err(DataError::Io { .. })
    ));
    assert!(matches!(ArrayRecordReader::open(&missing), Err(DataError::Io { .. })));
    // A writer dropped without finish leaves no file behind.
    let mut w = ArrayRecordWriter::create(&path, WriterOptions::default()).unwrap();
    w.write_record(b"abc").unwrap();
    drop(w);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}
