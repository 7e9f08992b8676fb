//! `metadata.json` next to the splits, as Jasmine's generators write it (env, `num_actions`,
//! episode counts, chunk statistics, per-file entries) plus the frame shape, which Jasmine
//! makes users pass by hand and jinn reads from here.
//!
//! Jasmine writes the file with Python's `json.dump`, which spells the mean of an empty split
//! `NaN` (and infinities `Infinity`): [`DatasetMetadata::load`] reads those as `null`. Jasmine's
//! flat keys (`num_episodes_<split>`, `avg_episode_len_<split>`, `episode_metadata_<split>`
//! with `path`, `num_chunks`, `avg_seq_len`) are kept in [`DatasetMetadata::extra`]; their
//! `path`s are where the generator ran and are never used to find files.

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
    /// Mean frames per record (NaN when the file says `null` or `NaN`).
    #[serde(deserialize_with = "nan_if_null")]
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
    /// Mean episode length in frames (NaN for an empty split).
    #[serde(deserialize_with = "nan_if_null")]
    pub avg_episode_len: f64,
    /// Mean record length in frames (NaN for an empty split).
    #[serde(deserialize_with = "nan_if_null")]
    pub avg_chunk_len: f64,
    /// One entry per file.
    pub files: Vec<FileStats>,
}

/// Contents of `metadata.json`. Unknown keys (from Jasmine's generators) are kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DatasetMetadata {
    /// Environment or source name; empty when the file has none (Jasmine's Atari generator
    /// writes no `env` key).
    #[serde(default)]
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

    /// Read a metadata file: strict JSON, or what Python's `json.dump` writes (`NaN`,
    /// `Infinity` and `-Infinity` read as `null`).
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| DataError::io(path, e))?;
        serde_json::from_str(&python_json_to_strict(&text)).map_err(|e| {
            DataError::format(
                path,
                0,
                format!(
                    "not a valid metadata.json (expected a JSON object as jinn or Jasmine's \
                     generators write it): {e}"
                ),
            )
        })
    }

    /// Find `metadata.json` in `dir` or its parent (a split directory's dataset root).
    pub fn find(dir: &Path) -> Option<PathBuf> {
        [Some(dir), dir.parent()].into_iter().flatten().map(|d| d.join(METADATA_FILE)).find(|p| p.is_file())
    }
}

/// `text` with Python's non-standard JSON number tokens (`NaN`, `Infinity`, `-Infinity`) outside
/// strings replaced by `null`. serde_json rejects them and cannot hold a NaN in a `Value`; this
/// one-pass rewrite keeps serde_json (and its error positions, up to the few bytes a token
/// shrinks) instead of adding a JSON5 parser for three tokens.
fn python_json_to_strict(text: &str) -> std::borrow::Cow<'_, str> {
    const TOKENS: [&str; 3] = ["-Infinity", "Infinity", "NaN"];
    if !TOKENS.iter().any(|t| text.contains(t)) {
        return text.into();
    }
    let mut out = String::with_capacity(text.len());
    let (mut in_string, mut escaped) = (false, false);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
        } else if let Some(t) = TOKENS.iter().find(|t| rest.starts_with(*t)) {
            out.push_str("null");
            rest = &rest[t.len()..];
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out.into()
}

/// An `f64` that may be `null` (how Python's `NaN` reads after [`python_json_to_strict`], and
/// how serde_json writes a NaN): NaN then.
fn nan_if_null<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// CoinRun's 15 actions as procgen names its key combinations (`ProcgenGym3Env.get_combos`),
/// the combo joined with `+`, the empty one `NOOP`.
pub const COINRUN_ACTIONS: [&str; 15] = [
    "LEFT+DOWN",
    "LEFT",
    "LEFT+UP",
    "DOWN",
    "NOOP",
    "UP",
    "RIGHT+DOWN",
    "RIGHT",
    "RIGHT+UP",
    "D",
    "A",
    "W",
    "S",
    "Q",
    "E",
];

/// Names of the actions of a dataset's `env` (its `metadata.json`), index = action id: jinn's
/// built-in games and procgen's `coinrun` (Jasmine's CoinRun generator). `None` for other
/// environments, or when `num_actions` is given and differs from the environment's count.
pub fn action_names(env: &str, num_actions: Option<usize>) -> Option<Vec<String>> {
    let names: Vec<String> = if env.eq_ignore_ascii_case("coinrun") {
        COINRUN_ACTIONS.iter().map(|s| s.to_string()).collect()
    } else {
        let game = crate::envs::make_env(env, FrameShape::rgb(64, 64), 0).ok()?;
        game.action_names().iter().map(|s| s.to_string()).collect()
    };
    num_actions.is_none_or(|n| n == names.len()).then_some(names)
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

    #[test]
    fn python_json_tokens_outside_strings_become_null() {
        let text = r#"{"a": NaN, "b": [Infinity, -Infinity, 1e5], "s": "NaN \" Infinity", "n": -1}"#;
        let v: serde_json::Value = serde_json::from_str(&python_json_to_strict(text)).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"a": null, "b": [null, null, 1e5], "s": "NaN \" Infinity", "n": -1})
        );
        assert!(matches!(python_json_to_strict(r#"{"x": 1}"#), std::borrow::Cow::Borrowed(_)));
    }

    #[test]
    fn nan_statistics_and_missing_env_load() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(METADATA_FILE);
        std::fs::write(&path, r#"{"num_actions": 4, "avg_episode_len_val": NaN}"#).unwrap();
        let m = DatasetMetadata::load(&path).unwrap();
        assert_eq!((m.env.as_str(), m.num_actions), ("", Some(4)));
        assert!(m.extra["avg_episode_len_val"].is_null());
        // jinn's own statistics of an empty split: NaN, written as null, read back as NaN.
        let mut m = DatasetMetadata::new("breakout", Some(4), FrameShape::rgb(16, 16));
        m.set_split("val", SplitStats { avg_episode_len: f64::NAN, ..Default::default() });
        m.save(dir.path()).unwrap();
        assert!(DatasetMetadata::load(&path).unwrap().splits["val"].avg_episode_len.is_nan());
    }

    #[test]
    fn bad_json_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(METADATA_FILE);
        std::fs::write(&path, r#"{"env": "coinrun", "num_actions": Nope}"#).unwrap();
        let e = DatasetMetadata::load(&path).unwrap_err().to_string();
        assert!(e.contains("metadata.json") && e.contains("line 1"), "{e}");
    }

    #[test]
    fn action_names_know_coinrun_and_the_built_in_games() {
        let coinrun = action_names("coinrun", Some(15)).unwrap();
        assert_eq!(
            (coinrun[0].as_str(), coinrun[4].as_str(), coinrun[14].as_str()),
            ("LEFT+DOWN", "NOOP", "E")
        );
        assert_eq!(action_names("coinrun", Some(6)), None);
        for env in crate::envs::ENV_NAMES {
            let names = action_names(env, None).unwrap();
            assert_eq!(action_names(env, Some(names.len())), Some(names.clone()));
        }
        assert_eq!(action_names("MinAtar-Breakout", Some(6)), None);
        assert_eq!(action_names("", None), None);
    }
}
