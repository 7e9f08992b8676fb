//! Run-directory metric logs: `metrics.jsonl` (one JSON object per line) and a TensorBoard
//! event file (see [`crate::tfevents`]).
//!
//! A line of `metrics.jsonl` looks like
//! `{"step":100,"split":"train","wall_time":1733000000.5,"metrics":{"loss":0.25,"lr":3e-4}}`.
//! Non-finite values are written as `null` (JSON has no NaN) and read back as NaN.

use crate::error::{Result, TrainError};
use crate::tfevents::EventWriter;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

/// File name of the JSON-lines metric log inside a run directory.
pub const METRICS_FILE: &str = "metrics.jsonl";

/// One logged set of metrics at a step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricRecord {
    /// Optimiser step the metrics belong to.
    pub step: u64,
    /// `"train"`, `"val"`, …
    pub split: String,
    /// Seconds since the Unix epoch when logged.
    #[serde(default)]
    pub wall_time: f64,
    /// Metric name → value (non-finite values round-trip as NaN).
    #[serde(with = "nan_as_null")]
    pub metrics: BTreeMap<String, f64>,
}

impl MetricRecord {
    /// A record stamped with the current wall time.
    pub fn now(step: u64, split: impl Into<String>, metrics: BTreeMap<String, f64>) -> Self {
        MetricRecord { step, split: split.into(), wall_time: unix_time(), metrics }
    }
}

/// Seconds since the Unix epoch.
pub fn unix_time() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

/// serde helpers: a name → f64 map whose non-finite values are `null` in JSON.
mod nan_as_null {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::collections::BTreeMap;

    pub fn serialize<S: Serializer>(map: &BTreeMap<String, f64>, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(map.iter().map(|(k, v)| (k, v.is_finite().then_some(*v))))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, f64>, D::Error> {
        let raw = BTreeMap::<String, Option<f64>>::deserialize(d)?;
        Ok(raw.into_iter().map(|(k, v)| (k, v.unwrap_or(f64::NAN))).collect())
    }
}

/// Read every record of a `metrics.jsonl`; a bad line is an error naming its line number.
/// A torn last line (a crash mid-write) is ignored.
pub fn read_metrics(path: &Path) -> Result<Vec<MetricRecord>> {
    let file = File::open(path).map_err(|e| TrainError::io(path, e))?;
    let lines: Vec<String> =
        BufReader::new(file).lines().collect::<std::io::Result<_>>().map_err(|e| TrainError::io(path, e))?;
    let mut out = Vec::with_capacity(lines.len());
    let mut offset = 0u64;
    for (i, line) in lines.iter().enumerate() {
        if !line.trim().is_empty() {
            match serde_json::from_str(line) {
                Ok(r) => out.push(r),
                Err(_) if i + 1 == lines.len() => break,
                Err(e) => {
                    return Err(TrainError::Format {
                        path: path.to_path_buf(),
                        offset,
                        reason: format!("line {}: not a metric record: {e}", i + 1),
                    })
                }
            }
        }
        offset += line.len() as u64 + 1;
    }
    Ok(out)
}

/// Appends metric records to `metrics.jsonl` and to a TensorBoard event file (tag
/// `split/name`), keeping the most recent records for checkpoints.
pub struct RunLogger {
    jsonl_path: PathBuf,
    jsonl: BufWriter<File>,
    events: EventWriter,
    head: std::collections::VecDeque<MetricRecord>,
    head_len: usize,
}

impl RunLogger {
    /// Open the logs of `run_dir` (created if needed). When resuming from `resume_step`,
    /// records after it (written by the interrupted run past its last checkpoint) are
    /// dropped from `metrics.jsonl` (atomic rewrite) so the log reads like one clean run.
    /// Each call starts a new event file; TensorBoard merges them by step.
    pub fn open(run_dir: &Path, resume_step: Option<u64>, head_len: usize) -> Result<RunLogger> {
        std::fs::create_dir_all(run_dir).map_err(|e| TrainError::io(run_dir, e))?;
        let jsonl_path = run_dir.join(METRICS_FILE);
        let mut head = std::collections::VecDeque::new();
        if jsonl_path.exists() {
            let mut kept = read_metrics(&jsonl_path)?;
            if let Some(step) = resume_step {
                kept.retain(|r| r.step <= step);
            } else {
                kept.clear(); // a fresh run: the old log is replaced
            }
            let mut text = Vec::new();
            for r in &kept {
                serde_json::to_writer(&mut text, r).expect("records serialise");
                text.push(b'\n');
            }
            jinn_data::atomic_file::write_atomically(&jsonl_path, &text)?;
            head.extend(kept.into_iter().rev().take(head_len).rev());
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&jsonl_path)
            .map_err(|e| TrainError::io(&jsonl_path, e))?;
        let events = EventWriter::create(run_dir)?;
        Ok(RunLogger { jsonl_path, jsonl: BufWriter::new(file), events, head, head_len })
    }

    /// Log one record (written through to both files; call [`RunLogger::flush`] to push to disk).
    pub fn log(&mut self, record: MetricRecord) -> Result<()> {
        serde_json::to_writer(&mut self.jsonl, &record).expect("records serialise");
        self.jsonl.write_all(b"\n").map_err(|e| TrainError::io(&self.jsonl_path, e))?;
        for (name, value) in &record.metrics {
            self.events.scalar(
                &format!("{}/{name}", record.split),
                *value as f32,
                record.step,
                record.wall_time,
            )?;
        }
        self.head.push_back(record);
        while self.head.len() > self.head_len {
            self.head.pop_front();
        }
        Ok(())
    }

    /// Flush both files to the operating system.
    pub fn flush(&mut self) -> Result<()> {
        self.jsonl.flush().map_err(|e| TrainError::io(&self.jsonl_path, e))?;
        self.events.flush()
    }

    /// The most recent records, oldest first (stored in checkpoints as the metric head).
    pub fn head(&self) -> Vec<MetricRecord> {
        self.head.iter().cloned().collect()
    }

    /// Path of the TensorBoard event file being written.
    pub fn events_path(&self) -> &Path {
        self.events.path()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(step: u64, loss: f64) -> MetricRecord {
        MetricRecord {
            step,
            split: "train".into(),
            wall_time: 1.5,
            metrics: [("loss".to_string(), loss)].into(),
        }
    }

    #[test]
    fn jsonl_round_trip_with_nan_and_resume_truncation() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = RunLogger::open(dir.path(), None, 2).unwrap();
        for (s, v) in [(1, 0.5), (2, f64::NAN), (3, 0.25), (4, 0.125)] {
            log.log(rec(s, v)).unwrap();
        }
        log.flush().unwrap();
        assert_eq!(log.head().iter().map(|r| r.step).collect::<Vec<_>>(), vec![3, 4]);
        drop(log);
        let path = dir.path().join(METRICS_FILE);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text.lines().next().unwrap(),
            r#"{"step":1,"split":"train","wall_time":1.5,"metrics":{"loss":0.5}}"#
        );
        let back = read_metrics(&path).unwrap();
        assert_eq!(back.len(), 4);
        assert!(back[1].metrics["loss"].is_nan());
        assert_eq!(back[3], rec(4, 0.125));

        // Resume from step 2: steps 3 and 4 are dropped, new records append.
        let mut log = RunLogger::open(dir.path(), Some(2), 8).unwrap();
        assert_eq!(log.head().len(), 2);
        log.log(rec(3, 1.0)).unwrap();
        log.flush().unwrap();
        let back = read_metrics(&path).unwrap();
        assert_eq!(back.iter().map(|r| r.step).collect::<Vec<_>>(), vec![1, 2, 3]);
        assert_eq!(back[2].metrics["loss"], 1.0);
    }

    #[test]
    fn torn_last_line_is_ignored_but_bad_middle_line_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(METRICS_FILE);
        let good = serde_json::to_string(&rec(1, 0.5)).unwrap();
        std::fs::write(&path, format!("{good}\n{{\"step\":2,\"spl")).unwrap();
        assert_eq!(read_metrics(&path).unwrap().len(), 1);
        std::fs::write(&path, format!("{good}\nnot json\n{good}\n")).unwrap();
        let err = read_metrics(&path).unwrap_err().to_string();
        assert!(err.contains("line 2") && err.contains(METRICS_FILE), "{err}");
    }
}
