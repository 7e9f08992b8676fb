//! Writes one split (`train/`, `val/`, `test/`) of episodes as ArrayRecord files of
//! fixed-length chunks, like Jasmine's `save_chunks`: episodes are cut into records of
//! `chunk_len` frames (the last one shorter), `chunks_per_file` records per
//! `data_{i:04d}.array_record`. Unlike Jasmine, chunks left over at the end of a split are
//! written to a final, smaller file instead of being dropped.

use crate::array_record::{ArrayRecordWriter, WriterOptions};
use crate::episode::{ActionArray, EpisodeRecord, FrameShape};
use crate::error::{DataError, Result};
use crate::metadata::{FileStats, SplitStats};
use crate::pickle::encode_episode;
use std::path::{Path, PathBuf};

/// Writer of one split directory.
pub struct SplitWriter {
    root: PathBuf,
    split: String,
    chunks_per_file: usize,
    options: WriterOptions,
    pending: Vec<EpisodeRecord>,
    stats: SplitStats,
    episode_frames: usize,
}

impl SplitWriter {
    /// Create `root/split/` and prepare to write into it.
    pub fn create(root: &Path, split: &str, chunks_per_file: usize, options: WriterOptions) -> Result<Self> {
        if chunks_per_file == 0 {
            return Err(DataError::invalid("--chunks-per-file", "must be at least 1"));
        }
        let dir = root.join(split);
        std::fs::create_dir_all(&dir).map_err(|e| DataError::io(&dir, e))?;
        Ok(SplitWriter {
            root: root.to_path_buf(),
            split: split.to_string(),
            chunks_per_file,
            options,
            pending: Vec::new(),
            stats: SplitStats::default(),
            episode_frames: 0,
        })
    }

    /// Add one episode: `frames` is `[T, H, W, C]` u8, `actions` (if any) has `T` steps.
    /// It is cut into records of at most `chunk_len` frames.
    pub fn write_episode(
        &mut self,
        frames: &[u8],
        shape: FrameShape,
        actions: Option<&ActionArray>,
        chunk_len: usize,
        video_file_name: Option<&str>,
    ) -> Result<()> {
        let frame_bytes = shape.frame_bytes();
        if chunk_len == 0 {
            return Err(DataError::invalid("--chunk-len", "must be at least 1"));
        }
        if frame_bytes == 0 || !frames.len().is_multiple_of(frame_bytes) {
            return Err(DataError::invalid(
                "episode frames",
                format!("{} bytes is not a whole number of {:?} frames", frames.len(), shape),
            ));
        }
        let steps = frames.len() / frame_bytes;
        if let Some(a) = actions {
            if a.steps() != steps {
                return Err(DataError::invalid(
                    "episode actions",
                    format!("{} action steps for {} frames; expected one action per frame", a.steps(), steps),
                ));
            }
        }
        for start in (0..steps).step_by(chunk_len) {
            let end = (start + chunk_len).min(steps);
            let record = EpisodeRecord {
                raw_video: frames[start * frame_bytes..end * frame_bytes].to_vec(),
                sequence_length: end - start,
                actions: actions.map(|a| slice_actions(a, start, end)),
                video_file_name: video_file_name.map(str::to_string),
            };
            self.pending.push(record);
            if self.pending.len() == self.chunks_per_file {
                self.flush_file()?;
            }
        }
        self.stats.num_episodes += 1;
        self.episode_frames += steps;
        Ok(())
    }

    /// Write what is buffered and return the split's statistics.
    pub fn finish(mut self) -> Result<SplitStats> {
        if !self.pending.is_empty() {
            self.flush_file()?;
        }
        let s = &mut self.stats;
        s.num_frames = self.episode_frames;
        s.avg_episode_len = ratio(self.episode_frames, s.num_episodes);
        s.avg_chunk_len = ratio(self.episode_frames, s.num_chunks);
        Ok(self.stats)
    }

    fn flush_file(&mut self) -> Result<()> {
        let name = format!("data_{:04}.array_record", self.stats.files.len());
        let path = self.root.join(&self.split).join(&name);
        let mut writer = ArrayRecordWriter::create(&path, self.options)?;
        let mut seq_lens = Vec::with_capacity(self.pending.len());
        for record in self.pending.drain(..) {
            seq_lens.push(record.sequence_length);
            writer.write_record(&encode_episode(&record))?;
        }
        let frames: usize = seq_lens.iter().sum();
        let chunks = writer.finish()? as usize;
        self.stats.num_chunks += chunks;
        self.stats.files.push(FileStats {
            path: format!("{}/{}", self.split, name),
            num_chunks: chunks,
            avg_seq_len: ratio(frames, chunks),
            seq_lens,
        });
        Ok(())
    }
}

/// Steps `start..end` of an action array.
fn slice_actions(a: &ActionArray, start: usize, end: usize) -> ActionArray {
    let k = a.per_step();
    let mut shape = a.shape.clone();
    shape[0] = end - start;
    ActionArray { dtype: a.dtype, shape, values: a.values[start * k..end * k].to_vec() }
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}
