//! Importing recorded frames as an episode dataset: video files through ffmpeg ([`video`]) and
//! folders of numbered PNG frames ([`pngs`]).
//!
//! Both importers produce the same layout as `jinn data gen`: `train/`, `val/`, `test/` of
//! `data_NNNN.array_record` files (records of at most `chunk_len` frames, `chunks_per_file`
//! records per file, no actions) and `metadata.json`. Episodes go to splits deterministically
//! from a seed (see [`splits`]). Episodes shorter than `min_frames` are skipped and reported.

pub mod pngs;
pub mod splits;
pub mod video;

pub use pngs::{import_pngs, PngImportConfig};
pub use splits::{Split, SplitFractions};
pub use video::{import_video, VideoImportConfig};

use crate::array_record::WriterOptions;
use crate::episode::FrameShape;
use crate::error::{DataError, Result};
use crate::metadata::DatasetMetadata;
use crate::split_writer::SplitWriter;
use splits::SplitAssigner;
use std::path::{Path, PathBuf};

/// Where and how an import writes its dataset.
#[derive(Debug, Clone)]
pub struct OutputConfig {
    /// Dataset root (`--out`); created if missing, must be empty unless `overwrite`.
    pub out_dir: PathBuf,
    /// Frames per record (`--chunk-len`, default 160).
    pub chunk_len: usize,
    /// Records per ArrayRecord file (`--chunks-per-file`, default 100).
    pub chunks_per_file: usize,
    /// Episodes with fewer frames (after frame-rate conversion) are skipped (`--min-frames`).
    /// `None` means `chunk_len`, so every kept episode fills at least one whole record.
    pub min_frames: Option<usize>,
    /// Seed of the episode order behind the split assignment (`--seed`, default 0).
    pub seed: u64,
    /// Target shares of frames per split (default 0.8 / 0.1 / 0.1).
    pub splits: SplitFractions,
    /// Allow writing into a non-empty `out_dir` (`--overwrite`): its `train/`, `val/`,
    /// `test/` and `metadata.json` are removed first; other files there are left alone.
    pub overwrite: bool,
    /// ArrayRecord writer settings.
    pub writer: WriterOptions,
}

impl OutputConfig {
    /// Defaults for writing to `out_dir`.
    pub fn new(out_dir: impl Into<PathBuf>) -> Self {
        OutputConfig {
            out_dir: out_dir.into(),
            chunk_len: 160,
            chunks_per_file: 100,
            min_frames: None,
            seed: 0,
            splits: SplitFractions::default(),
            overwrite: false,
            writer: WriterOptions::default(),
        }
    }

    /// The effective minimum episode length.
    pub fn min_frames(&self) -> usize {
        self.min_frames.unwrap_or(self.chunk_len)
    }

    /// Check the numbers before any work is done.
    fn validate(&self) -> Result<()> {
        if self.chunk_len == 0 {
            return Err(DataError::invalid("--chunk-len", "must be at least 1"));
        }
        if self.chunks_per_file == 0 {
            return Err(DataError::invalid("--chunks-per-file", "must be at least 1"));
        }
        self.splits.normalized().map(|_| ())
    }
}

/// An input episode that was not imported.
#[derive(Debug, Clone, PartialEq)]
pub struct SkippedEpisode {
    /// The video file or frame folder.
    pub path: PathBuf,
    /// Its length in frames (after frame-rate conversion).
    pub frames: usize,
    /// Why it was skipped.
    pub reason: String,
}

/// What an import wrote.
#[derive(Debug, Clone)]
pub struct ImportSummary {
    /// The `metadata.json` that was written (per-split statistics included).
    pub metadata: DatasetMetadata,
    /// Inputs left out, in processing order.
    pub skipped: Vec<SkippedEpisode>,
}

pub use crate::output_dir::prepare_output_dir;

/// Receives whole episodes, assigns each a split and writes it; `finish` writes metadata.
struct DatasetSink {
    writers: Vec<SplitWriter>,
    assigner: SplitAssigner,
    config: OutputConfig,
    shape: FrameShape,
    skipped: Vec<SkippedEpisode>,
}

impl DatasetSink {
    /// Prepare `config.out_dir` (see [`prepare_output_dir`]) and open the three split writers.
    fn create(config: &OutputConfig, shape: FrameShape) -> Result<Self> {
        config.validate()?;
        prepare_output_dir(&config.out_dir, config.overwrite)?;
        let writers = Split::ALL
            .iter()
            .map(|s| SplitWriter::create(&config.out_dir, s.name(), config.chunks_per_file, config.writer))
            .collect::<Result<Vec<_>>>()?;
        Ok(DatasetSink {
            writers,
            assigner: SplitAssigner::new(config.splits)?,
            config: config.clone(),
            shape,
            skipped: Vec::new(),
        })
    }

    /// If an episode of `frames` frames is shorter than the minimum, record it as skipped
    /// (with a warning) and return true.
    fn skip_if_short(&mut self, path: &Path, frames: usize) -> bool {
        let min = self.config.min_frames();
        if frames >= min {
            return false;
        }
        let reason = format!("{frames} frames, fewer than --min-frames {min}");
        tracing::warn!("skipping {}: {reason}", path.display());
        self.skipped.push(SkippedEpisode { path: path.to_path_buf(), frames, reason });
        true
    }

    /// Write one episode (`[T, H, W, C]` u8) to the split the assigner picks; returns it.
    fn add(&mut self, frames: &[u8], video_file_name: Option<&str>) -> Result<Split> {
        let steps = frames.len() / self.shape.frame_bytes();
        let split = self.assigner.assign(steps);
        let writer = &mut self.writers[split as usize];
        writer.write_episode(frames, self.shape, None, self.config.chunk_len, video_file_name)?;
        Ok(split)
    }

    /// Close the splits and write `metadata.json` for source `env` with `extra` settings.
    fn finish(self, env: &str, extra: serde_json::Map<String, serde_json::Value>) -> Result<ImportSummary> {
        let mut metadata = DatasetMetadata::new(env, None, self.shape);
        metadata.extra = extra;
        metadata.extra.insert("seed".into(), self.config.seed.into());
        metadata.extra.insert("chunk_len".into(), self.config.chunk_len.into());
        metadata.extra.insert("min_frames".into(), self.config.min_frames().into());
        metadata.extra.insert("num_skipped_episodes".into(), self.skipped.len().into());
        for (split, writer) in Split::ALL.iter().zip(self.writers) {
            metadata.set_split(split.name(), writer.finish()?);
        }
        metadata.save(&self.config.out_dir)?;
        Ok(ImportSummary { metadata, skipped: self.skipped })
    }
}

/// Sorted files in `dir` (not recursing), with a clear error naming the directory.
fn list_dir(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| DataError::io(dir, e))? {
        out.push(entry.map_err(|e| DataError::io(dir, e))?.path());
    }
    out.sort();
    Ok(out)
}

/// Whether `path` has extension `ext` (ASCII case-insensitive).
fn has_extension(path: &Path, exts: &[&str]) -> bool {
    path.extension().and_then(|e| e.to_str()).is_some_and(|e| exts.iter().any(|x| e.eq_ignore_ascii_case(x)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::METADATA_FILE;

    #[test]
    fn output_dir_must_be_empty_unless_overwrite() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("ds");
        prepare_output_dir(&out, false).unwrap();
        assert!(out.is_dir());
        prepare_output_dir(&out, false).unwrap(); // still empty
        std::fs::create_dir_all(out.join("train")).unwrap();
        std::fs::write(out.join("train/data_0000.array_record"), b"x").unwrap();
        std::fs::write(out.join(METADATA_FILE), b"{}").unwrap();
        std::fs::write(out.join("notes.txt"), b"keep").unwrap();
        let e = prepare_output_dir(&out, false).unwrap_err().to_string();
        assert!(e.contains("--out") && e.contains("not empty") && e.contains("--overwrite"), "{e}");
        prepare_output_dir(&out, true).unwrap();
        assert!(!out.join("train").exists() && !out.join(METADATA_FILE).exists());
        assert!(out.join("notes.txt").exists());
        let file = dir.path().join("f");
        std::fs::write(&file, b"").unwrap();
        assert!(prepare_output_dir(&file, true).unwrap_err().to_string().contains("not a directory"));
    }

    #[test]
    fn config_validation_names_flags() {
        let mut c = OutputConfig::new("/nonexistent");
        assert_eq!(c.min_frames(), 160);
        c.chunk_len = 0;
        assert!(c.validate().unwrap_err().to_string().contains("--chunk-len"));
        c.chunk_len = 4;
        c.chunks_per_file = 0;
        assert!(c.validate().unwrap_err().to_string().contains("--chunks-per-file"));
    }
}
