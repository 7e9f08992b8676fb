//! Replays the fuzz seed corpora (`fuzz/seeds/<target>/`) as ordinary tests, so every seed (and
//! every crash reproducer added there) is checked on each `cargo test`, with or without
//! cargo-fuzz. Errors are fine; panics are not.

use jinn_data::array_record::ArrayRecordReader;
use jinn_data::pickle::decode_episode;
use std::path::{Path, PathBuf};

fn seeds(target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds").join(target);
    let Ok(entries) = std::fs::read_dir(&dir) else { return Vec::new() };
    let mut files: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).filter(|p| p.is_file()).collect();
    files.sort();
    files
}

#[test]
fn pickle_decode_seeds_do_not_panic() {
    let files = seeds("pickle_decode");
    assert!(!files.is_empty(), "fuzz/seeds/pickle_decode is empty or missing");
    for path in files {
        let data = std::fs::read(&path).unwrap();
        let result = std::panic::catch_unwind(|| decode_episode(&data).map(|_| ()));
        assert!(result.is_ok(), "{} panicked", path.display());
    }
}

#[test]
fn array_record_read_seeds_do_not_panic() {
    let files = seeds("array_record_read");
    assert!(!files.is_empty(), "fuzz/seeds/array_record_read is empty or missing");
    for path in files {
        let data = std::fs::read(&path).unwrap();
        let result = std::panic::catch_unwind(|| {
            if let Ok(reader) = ArrayRecordReader::from_bytes(path.clone(), data) {
                for i in 0..reader.len() {
                    let _ = reader.read(i);
                }
            }
        });
        assert!(result.is_ok(), "{} panicked", path.display());
    }
}
