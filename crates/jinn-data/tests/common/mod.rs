//! Helpers shared by the integration tests.
#![allow(dead_code)]

use jinn_data::array_record::{ArrayRecordReader, Compression, WriterOptions};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Every codec, at the levels the tests use.
pub const CODECS: [Compression; 4] = [
    Compression::Uncompressed,
    Compression::Zstd { level: 3 },
    Compression::Brotli { level: 6 },
    Compression::Snappy,
];

/// Deterministic pseudo-random bytes (xorshift64*).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Records of varied sizes: empty, tiny, and larger than a 64 KiB block; some compressible.
pub fn varied_records(seed: u64) -> Vec<Vec<u8>> {
    let mut rng = Rng::new(seed);
    let sizes = [0usize, 1, 17, 300, 0, 70_000, 5, 140_000, 65_536, 2, 0, 1000, 200_001];
    sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            (0..n).map(|j| if i % 2 == 0 { rng.next() as u8 } else { ((j / 97) % 7) as u8 }).collect()
        })
        .collect()
}

/// The fixtures directory of this crate.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Whether Python with numpy and array_record can be used. Panics instead of skipping when
/// `JINN_REQUIRE_PYTHON=1`.
pub fn python_available(test: &str) -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import numpy, array_record"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        if std::env::var("JINN_REQUIRE_PYTHON").as_deref() == Ok("1") {
            panic!("{test}: python3 with numpy and array_record is required (JINN_REQUIRE_PYTHON=1)");
        }
        eprintln!("{test}: SKIPPED (python3 with numpy and array_record not available)");
    }
    ok
}

/// Run one of tests/python/*.py; panics with its stderr on failure; returns stdout.
pub fn run_python(script: &str, args: &[&str]) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python").join(script);
    let out = Command::new("python3").arg(&path).args(args).output().expect("run python3");
    assert!(out.status.success(), "{script} {args:?} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("utf-8 stdout")
}

/// Records as u64-LE length + bytes.
pub fn encode_length_prefixed(records: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    for r in records {
        out.extend_from_slice(&(r.len() as u64).to_le_bytes());
        out.extend_from_slice(r);
    }
    out
}

/// Inverse of [`encode_length_prefixed`].
pub fn decode_length_prefixed(mut bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
        out.push(bytes[8..8 + n].to_vec());
        bytes = &bytes[8 + n..];
    }
    out
}

/// Python's reading of each of `paths`: (writer options string, records).
pub fn python_read(paths: &[PathBuf]) -> Vec<(String, Vec<Vec<u8>>)> {
    let dumps: Vec<PathBuf> = paths.iter().map(|p| p.with_extension("pydump")).collect();
    let mut args = Vec::new();
    for (p, d) in paths.iter().zip(&dumps) {
        args.push(p.to_str().unwrap());
        args.push(d.to_str().unwrap());
    }
    let options = run_python("read_records.py", &args);
    let options: Vec<&str> = options.lines().collect();
    assert_eq!(options.len(), paths.len());
    dumps
        .iter()
        .zip(options)
        .map(|(d, o)| (o.to_string(), decode_length_prefixed(&std::fs::read(d).unwrap())))
        .collect()
}

/// All records through `read`, in a scrambled order, checked against `expected`.
pub fn assert_reads(reader: &ArrayRecordReader, expected: &[Vec<u8>]) {
    assert_eq!(reader.len(), expected.len() as u64);
    let n = expected.len() as u64;
    for k in 0..n {
        let i = (k * 7 + 3) % n;
        assert_eq!(reader.read(i).unwrap(), expected[i as usize], "record {i}");
    }
    assert_eq!(reader.read_range(0..n).unwrap(), expected);
    let all: Vec<Vec<u8>> = reader.iter().collect::<Result<_, _>>().unwrap();
    assert_eq!(all, expected);
}

/// Default options with another codec and group size.
pub fn options(group_size: usize, compression: Compression) -> WriterOptions {
    WriterOptions { group_size, compression }
}
