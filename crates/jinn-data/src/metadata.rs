//! `metadata.json` next to the splits, as Jasmine's generators write it (env, `num_actions`,
//! episode counts, chunk statistics, per-file entries) plus the frame shape, which Jasmine
//! makes users pass by hand and jinn reads from here.

use crate::atomic_file::write_atomically;
use crate::episode::FrameShape;
use crate::error::{DataError, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// File name of the metadata file.
pub const METADATA_FILE: &str = "metadata.json";

/// Statistics of one ArrayRecord file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileStats {
    /// Path relative to the dataset root (e.g. `train/data_0000.array_record`).
    pub path: String,
    /// Records (chunks) in the file.
    pub num_chunks: usize,
    /// Mean frames per record.
    pub avg_seq_len: f64,
    /// Frames of each record, in file order (jinn's extension: lets the loader index a
    /// dataset without decoding every record).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seq_lens: Vec<usize>,
}

/// Statistics of one split (train/val/test).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SplitStats {
    /// Episodes written.
    pub num_episodes: usize,
    /// Frames written.
    pub num_frames: usize,
    /// Records (chunks) written.
    pub num_chunks: usize,
    /// Mean episode length in frames.
    pub avg_episode_len: f64,
    /// Mean record length in frames.
    pub avg_chunk_len: f64,
    /// One entry per file.
    pub files: Vec<FileStats>,
}

/// Contents of `metadata.json`. Unknown keys (from Jasmine's generators) are kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DatasetMetadata {
    /// Environment or source name.
    pub env: String,
    /// Size of the discrete action space, when actions are recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_actions: Option<usize>,
    /// Frame height.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub height: Option<usize>,
    /// Frame width.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width: Option<usize>,
    /// Frame channels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channels: Option<usize>,
    /// Per-split statistics keyed by split name.
    #[serde(default)]
    pub splits: BTreeMap<String, SplitStats>,
    /// Everything else (generator settings, Jasmine's flat keys).
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl DatasetMetadata {
    /// Metadata for `env` with the given frame shape.
    pub fn new(env: impl Into<String>, num_actions: Option<usize>, shape: FrameShape) -> Self {
        DatasetMetadata {
            env: env.into(),
            num_actions,
            height: Some(shape.height),
            width: Some(shape.width),
            channels: Some(shape.channels),
            splits: BTreeMap::new(),
            extra: serde_json::Map::new(),
        }
    }

    /// The frame shape, if the file records it.
    pub fn frame_shape(&self) -> Option<FrameShape> {
        Some(FrameShape { height: self.height?, width: self.width?, channels: self.channels.unwrap_or(3) })
    }

    /// Record a split's statistics, also under Jasmine's flat key names
    /// (`num_episodes_train`, `avg_episode_len_train`, `episode_metadata_train`).
    pub fn set_split(&mut self, name: &str, stats: SplitStats) {
        use serde_json::json;
        self.extra.insert(format!("num_episodes_{name}"), json!(stats.num_episodes));
        self.extra.insert(format!("avg_episode_len_{name}"), json!(stats.avg_episode_len));
        self.extra.insert(format!("episode_metadata_{name}"), json!(stats.files));
        self.splits.insert(name.to_string(), stats);
    }

    /// Write `dir/metadata.json` atomically.
    pub fn save(&self, dir: &Path) -> Result<()> {
        let text = serde_json::to_string_pretty(self).expect("metadata serialises");
        write_atomically(dir.join(METADATA_FILE), text.as_bytes())
    }

    /// Read a metadata file.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| DataError::io(path, e))?;
        serde_json::from_str(&text).map_err(|e| {
            DataError::format(
                path,
                0,
                format!("not a valid metadata.json (expected at least an \"env\" string): {e}"),
            )
        })
    }

    /// Find `metadata.json` in `dir` or its parent (a split directory's dataset root).
    pub fn find(dir: &Path) -> Option<PathBuf> {
        [Some(dir), dir.parent()].into_iter().flatten().map(|d| d.join(METADATA_FILE)).find(|p| p.is_file())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_keeps_unknown_keys() {
        let dir = tempfile::tempdir().unwrap();
        let mut m = DatasetMetadata::new("breakout", Some(4), FrameShape::rgb(64, 48));
        m.extra.insert("custom".into(), serde_json::json!([1, 2]));
        m.set_split("train", SplitStats { num_episodes: 3, ..Default::default() });
        m.save(dir.path()).unwrap();
        let back = DatasetMetadata::load(&dir.path().join(METADATA_FILE)).unwrap();
        assert_eq!(back, m);
        assert_eq!(back.frame_shape(), Some(FrameShape::rgb(64, 48)));
        assert_eq!(back.extra["num_episodes_train"], 3);
    }

    #[test]
    fn jasmine_metadata_without_shape_loads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(METADATA_FILE);
        std::fs::write(&path, r#"{"env":"coinrun","num_actions":15,"num_episodes_train":10}"#).unwrap();
        let m = DatasetMetadata::load(&path).unwrap();
        assert_eq!(m.num_actions, Some(15));
        assert_eq!(m.frame_shape(), None);
    }
}
