//! A minimal TensorBoard event-file writer for scalars.
//!
//! Hand-written because crates.io has no maintained, dependency-light tfevents writer (the
//! existing ones pull in protobuf code generation or are unmaintained); the format is tiny:
//!
//! * file: a sequence of TFRecords, each `len: u64 LE`, `masked_crc32c(len bytes): u32 LE`,
//!   `data[len]`, `masked_crc32c(data): u32 LE`, where
//!   `masked(c) = ((c >> 15) | (c << 17)) + 0xa282ead8` (wrapping);
//! * data: a `tensorflow.Event` protobuf — `wall_time` (field 1, double), `step` (2, int64),
//!   then either `file_version` (3, string; the first record, `"brain.Event:2"`) or
//!   `summary` (5, message) holding `Summary.Value` entries (field 1) with `tag` (1, string)
//!   and `simple_value` (2, float).
//!
//! TensorBoard only reads files whose name contains `tfevents`.

use crate::error::{Result, TrainError};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// The CRC mask of the TFRecord format.
pub fn masked_crc32c(bytes: &[u8]) -> u32 {
    let c = crc32c::crc32c(bytes);
    (c.rotate_right(15)).wrapping_add(0xa282_ead8)
}

/// Appends `value` as a protobuf varint.
fn varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Appends a field key (field number, wire type).
fn key(out: &mut Vec<u8>, field: u32, wire: u8) {
    varint(out, ((field as u64) << 3) | wire as u64);
}

/// Appends a length-delimited field.
fn bytes_field(out: &mut Vec<u8>, field: u32, bytes: &[u8]) {
    key(out, field, 2);
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// An `Event` with `wall_time`, `step` and one extra already-encoded field.
fn event(wall_time: f64, step: u64, body: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut e = Vec::with_capacity(64);
    key(&mut e, 1, 1);
    e.extend_from_slice(&wall_time.to_le_bytes());
    key(&mut e, 2, 0);
    varint(&mut e, step);
    body(&mut e);
    e
}

/// `Event { wall_time, step, summary { value { tag, simple_value } } }`.
pub fn scalar_event(tag: &str, value: f32, step: u64, wall_time: f64) -> Vec<u8> {
    let mut v = Vec::with_capacity(tag.len() + 8);
    bytes_field(&mut v, 1, tag.as_bytes());
    key(&mut v, 2, 5);
    v.extend_from_slice(&value.to_le_bytes());
    let mut summary = Vec::with_capacity(v.len() + 2);
    bytes_field(&mut summary, 1, &v);
    event(wall_time, step, |e| bytes_field(e, 5, &summary))
}

/// Frames `data` as one TFRecord.
pub fn record(data: &[u8]) -> Vec<u8> {
    let len = (data.len() as u64).to_le_bytes();
    let mut r = Vec::with_capacity(data.len() + 16);
    r.extend_from_slice(&len);
    r.extend_from_slice(&masked_crc32c(&len).to_le_bytes());
    r.extend_from_slice(data);
    r.extend_from_slice(&masked_crc32c(data).to_le_bytes());
    r
}

/// Writes scalar summaries to `run_dir/events.out.tfevents.<secs>.jinn.<pid>`.
pub struct EventWriter {
    path: PathBuf,
    out: BufWriter<File>,
}

impl EventWriter {
    /// Create a new event file in `run_dir` and write its version record.
    pub fn create(run_dir: &Path) -> Result<EventWriter> {
        let now = crate::metrics_log::unix_time();
        let path =
            run_dir.join(format!("events.out.tfevents.{:010}.jinn.{}", now as u64, std::process::id()));
        let file = File::create(&path).map_err(|e| TrainError::io(&path, e))?;
        let mut w = EventWriter { path, out: BufWriter::new(file) };
        let version = event(now, 0, |e| bytes_field(e, 3, b"brain.Event:2"));
        w.write_record(&version)?;
        Ok(w)
    }

    fn write_record(&mut self, data: &[u8]) -> Result<()> {
        self.out.write_all(&record(data)).map_err(|e| TrainError::io(&self.path, e))
    }

    /// Append one scalar.
    pub fn scalar(&mut self, tag: &str, value: f32, step: u64, wall_time: f64) -> Result<()> {
        self.write_record(&scalar_event(tag, value, step, wall_time))
    }

    /// Flush buffered records to the operating system.
    pub fn flush(&mut self) -> Result<()> {
        self.out.flush().map_err(|e| TrainError::io(&self.path, e))
    }

    /// The event file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Split an event file into record payloads, verifying both CRCs of every record.
pub fn read_records(path: &Path) -> Result<Vec<Vec<u8>>> {
    let bytes = std::fs::read(path).map_err(|e| TrainError::io(path, e))?;
    let bad = |offset: usize, reason: String| TrainError::Format {
        path: path.to_path_buf(),
        offset: offset as u64,
        reason,
    };
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < bytes.len() {
        let head = bytes.get(pos..pos + 12).ok_or_else(|| bad(pos, "truncated record header".into()))?;
        let len_bytes = &head[..8];
        let crc = u32::from_le_bytes(head[8..12].try_into().unwrap());
        if crc != masked_crc32c(len_bytes) {
            return Err(bad(pos, "length CRC mismatch".into()));
        }
        let len = u64::from_le_bytes(len_bytes.try_into().unwrap());
        let start = pos + 12;
        let end = usize::try_from(len)
            .ok()
            .and_then(|l| start.checked_add(l))
            .filter(|&e| e + 4 <= bytes.len())
            .ok_or_else(|| bad(pos, format!("record length {len} runs past the end of the file")))?;
        let data = &bytes[start..end];
        let crc = u32::from_le_bytes(bytes[end..end + 4].try_into().unwrap());
        if crc != masked_crc32c(data) {
            return Err(bad(start, "data CRC mismatch".into()));
        }
        out.push(data.to_vec());
        pos = end + 4;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny protobuf reader for the test: (field, wire, payload) triples.
    fn fields(mut b: &[u8]) -> Vec<(u64, u8, Vec<u8>)> {
        fn read_varint(b: &mut &[u8]) -> u64 {
            let (mut v, mut shift) = (0u64, 0);
            loop {
                let byte = b[0];
                *b = &b[1..];
                v |= ((byte & 0x7f) as u64) << shift;
                if byte < 0x80 {
                    return v;
                }
                shift += 7;
            }
        }
        let mut out = Vec::new();
        while !b.is_empty() {
            let k = read_varint(&mut b);
            let (field, wire) = (k >> 3, (k & 7) as u8);
            let payload = match wire {
                0 => read_varint(&mut b).to_le_bytes().to_vec(),
                1 => {
                    let p = b[..8].to_vec();
                    b = &b[8..];
                    p
                }
                2 => {
                    let n = read_varint(&mut b) as usize;
                    let p = b[..n].to_vec();
                    b = &b[n..];
                    p
                }
                5 => {
                    let p = b[..4].to_vec();
                    b = &b[4..];
                    p
                }
                w => panic!("unexpected wire type {w}"),
            };
            out.push((field, wire, payload));
        }
        out
    }

    #[test]
    #[allow(clippy::manual_rotate)] // the reference is the spelled-out formula
    fn crc_mask_matches_known_value() {
        // crc32c("123456789") = 0xE3069283 (the standard check value); mask by hand.
        assert_eq!(crc32c::crc32c(b"123456789"), 0xE306_9283);
        let c: u32 = 0xE306_9283;
        assert_eq!(masked_crc32c(b"123456789"), ((c >> 15) | (c << 17)).wrapping_add(0xa282_ead8));
    }

    #[test]
    fn written_records_reparse_with_valid_crcs() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = EventWriter::create(dir.path()).unwrap();
        w.scalar("train/loss", 0.75, 300, 1234.5).unwrap();
        w.scalar("val/psnr", 21.5, 1_000_000, 1240.0).unwrap();
        w.flush().unwrap();
        let path = w.path().to_path_buf();
        assert!(path.file_name().unwrap().to_str().unwrap().contains("tfevents"));
        let recs = read_records(&path).unwrap();
        assert_eq!(recs.len(), 3);
        let version = fields(&recs[0]);
        assert_eq!(version[2], (3, 2, b"brain.Event:2".to_vec()));
        let ev = fields(&recs[2]);
        assert_eq!(f64::from_le_bytes(ev[0].2[..].try_into().unwrap()), 1240.0);
        assert_eq!(u64::from_le_bytes(ev[1].2[..].try_into().unwrap()), 1_000_000);
        assert_eq!(ev[2].0, 5);
        let value = fields(&fields(&ev[2].2)[0].2);
        assert_eq!(value[0], (1, 2, b"val/psnr".to_vec()));
        assert_eq!(f32::from_le_bytes(value[1].2[..].try_into().unwrap()), 21.5);

        // Flip one byte of the last record's payload: its data CRC must catch it.
        let mut bytes = std::fs::read(&path).unwrap();
        let n = bytes.len();
        bytes[n - 6] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        assert!(read_records(&path).unwrap_err().to_string().contains("CRC"));
    }

    /// Python cross-check: TensorBoard's own reader must see our scalars. Skips when the
    /// `tensorboard` package is missing (it is optional even in CI); fails on a wrong read.
    #[test]
    fn tensorboard_reads_scalars() {
        let has_python =
            std::process::Command::new("python3").arg("--version").output().is_ok_and(|o| o.status.success());
        if !has_python {
            assert!(
                std::env::var("JINN_REQUIRE_PYTHON").as_deref() != Ok("1"),
                "JINN_REQUIRE_PYTHON=1 but python3 is not available"
            );
            eprintln!("skipped tensorboard_reads_scalars: python3 not available");
            return;
        }
        let probe = std::process::Command::new("python3")
            .args([
                "-c",
                "from tensorboard.backend.event_processing.event_accumulator import EventAccumulator",
            ])
            .output();
        if !probe.is_ok_and(|o| o.status.success()) {
            eprintln!("skipped tensorboard_reads_scalars: the `tensorboard` Python package is not installed");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let mut w = EventWriter::create(dir.path()).unwrap();
        for step in 0..5u64 {
            w.scalar("train/loss", 1.0 / (step as f32 + 1.0), step * 10, 100.0 + step as f64).unwrap();
        }
        w.flush().unwrap();
        let script = r#"
import sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
acc = EventAccumulator(sys.argv[1]); acc.Reload()
for e in acc.Scalars("train/loss"):
    print(e.step, repr(e.value), e.wall_time)
"#;
        let out = std::process::Command::new("python3")
            .args(["-c", script, w.path().to_str().unwrap()])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8(out.stdout).unwrap();
        let rows: Vec<(u64, f32, f64)> = text
            .lines()
            .map(|l| {
                let p: Vec<&str> = l.split_whitespace().collect();
                (p[0].parse().unwrap(), p[1].parse().unwrap(), p[2].parse().unwrap())
            })
            .collect();
        assert_eq!(rows.len(), 5, "{text}");
        for (i, (step, value, wall)) in rows.into_iter().enumerate() {
            assert_eq!(step, i as u64 * 10);
            assert_eq!(value, 1.0 / (i as f32 + 1.0));
            assert_eq!(wall, 100.0 + i as f64);
        }
    }
}
