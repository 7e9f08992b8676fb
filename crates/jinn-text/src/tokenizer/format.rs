//! The JSON file format of a trained MGT tokenizer (version 1) and its validation.
//!
//! ```json
//! {
//!   "format": "jinn-mgt",
//!   "version": 1,
//!   "vocab_size": 8000,
//!   "specials": [{"id": 0, "name": "<pad>"}, {"id": 1, "name": "<bos>"}, {"id": 2, "name": "<eos>"},
//!                {"id": 3, "name": "<anchor_0>"}, …],
//!   "bytes": {"first_id": 19, "count": 256},
//!   "merges": [{"id": 275, "left": 135, "right": 123}, …],
//!   "morphs": {"enabled": true, "unknown_char_cost": 4.1, "lexicon": [["un", 57], …]}
//! }
//! ```
//! - `specials` take ids `0..S` in order: `<pad>`, `<bos>`, `<eos>`, then the anchors.
//! - byte `b` has id `bytes.first_id + b`, with `first_id = S` and `count = 256`.
//! - merge `k` (rank order) has id `S + 256 + k` and joins two earlier non-special ids.
//! - `morphs.lexicon` lists morph strings with their counts (sorted by morph); segmentation of
//!   a word is Viterbi over it (see `morph`). `enabled: false` means plain BPE over pieces.
//! - `morphs.analyses` (optional): `[["turned", [4, 6]], …]`, training words whose trained
//!   segmentation Viterbi would not reproduce, with the byte offsets where their morphs end
//!   (increasing, on char boundaries, the last = the word's length); sorted by word. These words
//!   segment as stored.
//! - `vocab_size = S + 256 + merges`; every id below it is used exactly once.

use super::error::{Result, TokenizerError};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The `format` value.
pub const FORMAT_NAME: &str = "jinn-mgt";
/// The version this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// A special token entry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpecialEntry {
    /// Its id.
    pub id: u32,
    /// Its name, e.g. `<bos>`.
    pub name: String,
}

/// Where the 256 byte tokens sit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ByteRange {
    /// Id of byte 0.
    pub first_id: u32,
    /// Always 256.
    pub count: u32,
}

/// One merge: `left` and `right` joined into `id`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MergeEntry {
    /// The new token's id.
    pub id: u32,
    /// Left part's id.
    pub left: u32,
    /// Right part's id.
    pub right: u32,
}

/// The morph model section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MorphSection {
    /// Whether words are segmented into morphs (false: plain BPE).
    pub enabled: bool,
    /// Per-char cost (nats) of spans outside the lexicon during Viterbi segmentation.
    pub unknown_char_cost: f64,
    /// Morphs with their counts, sorted by morph.
    pub lexicon: Vec<(String, u64)>,
    /// Training words whose trained analysis Viterbi would not reproduce, with the byte offsets
    /// where their morphs end; sorted by word. Optional (absent = none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub analyses: Vec<(String, Vec<usize>)>,
}

/// The whole file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenizerFile {
    /// Always [`FORMAT_NAME`].
    pub format: String,
    /// [`FORMAT_VERSION`].
    pub version: u32,
    /// Number of ids.
    pub vocab_size: u32,
    /// Special and anchor tokens.
    pub specials: Vec<SpecialEntry>,
    /// The byte tokens.
    pub bytes: ByteRange,
    /// Merges in rank order.
    pub merges: Vec<MergeEntry>,
    /// The morph model.
    pub morphs: MorphSection,
}

/// Required first three specials.
pub const REQUIRED_SPECIALS: [&str; 3] = ["<pad>", "<bos>", "<eos>"];

impl TokenizerFile {
    /// Parse and validate JSON text; `path` names the source in errors.
    pub fn from_json(text: &str, path: &Path) -> Result<TokenizerFile> {
        let file: TokenizerFile = serde_json::from_str(text)
            .map_err(|e| TokenizerError::Json { path: path.to_path_buf(), source: e })?;
        file.validate(path)?;
        Ok(file)
    }

    /// Check every invariant listed in the module documentation.
    pub fn validate(&self, path: &Path) -> Result<()> {
        let bad = |field: &str, message: String| TokenizerError::Invalid {
            path: path.to_path_buf(),
            field: field.to_string(),
            message,
        };
        if self.format != FORMAT_NAME {
            return Err(bad("format", format!("expected \"{FORMAT_NAME}\", found {:?}", self.format)));
        }
        if self.version != FORMAT_VERSION {
            return Err(bad(
                "version",
                format!("unsupported version {}; this build reads version {FORMAT_VERSION}", self.version),
            ));
        }
        let s = self.specials.len() as u32;
        if self.bytes.count != 256 {
            return Err(bad("bytes.count", format!("expected 256, found {}", self.bytes.count)));
        }
        let minimum = s + 256;
        if self.vocab_size < minimum {
            return Err(bad(
                "vocab_size",
                format!(
                    "{} is smaller than the byte alphabet plus {s} specials ({minimum})",
                    self.vocab_size
                ),
            ));
        }
        // Every id in 0..vocab_size exactly once.
        let mut seen = vec![false; self.vocab_size as usize];
        let mut claim = |id: u32, field: &str| -> Result<()> {
            match seen.get_mut(id as usize) {
                None => Err(bad(field, format!("id {id} is outside 0..{}", self.vocab_size))),
                Some(true) => Err(bad(field, format!("duplicate id {id}"))),
                Some(slot) => {
                    *slot = true;
                    Ok(())
                }
            }
        };
        for (i, e) in self.specials.iter().enumerate() {
            claim(e.id, &format!("specials[{i}].id"))?;
        }
        for b in 0..256 {
            claim(self.bytes.first_id + b, "bytes.first_id")?;
        }
        for (k, m) in self.merges.iter().enumerate() {
            claim(m.id, &format!("merges[{k}].id"))?;
        }
        if let Some(missing) = seen.iter().position(|&x| !x) {
            return Err(bad("vocab_size", format!("id {missing} is not assigned to any token")));
        }
        for (i, e) in self.specials.iter().enumerate() {
            if e.id != i as u32 {
                return Err(bad(&format!("specials[{i}].id"), format!("expected id {i}, found {}", e.id)));
            }
            if let Some(req) = REQUIRED_SPECIALS.get(i) {
                if e.name != *req {
                    return Err(bad(
                        &format!("specials[{i}].name"),
                        format!("expected {req:?}, found {:?}", e.name),
                    ));
                }
            }
        }
        if self.specials.len() < REQUIRED_SPECIALS.len() {
            return Err(bad("specials", format!("expected at least {:?}", REQUIRED_SPECIALS)));
        }
        if self.bytes.first_id != s {
            return Err(bad("bytes.first_id", format!("expected {s} (right after the specials)")));
        }
        for (k, m) in self.merges.iter().enumerate() {
            let id = minimum + k as u32;
            if m.id != id {
                return Err(bad(
                    &format!("merges[{k}].id"),
                    format!("expected {id} (rank order), found {}", m.id),
                ));
            }
            for (side, part) in [("left", m.left), ("right", m.right)] {
                if part < s || part >= id {
                    return Err(bad(
                        &format!("merges[{k}].{side}"),
                        format!(
                            "unknown merge token {part}: must be a byte or an earlier merge id in {s}..{id}"
                        ),
                    ));
                }
            }
        }
        let mut prev: Option<&str> = None;
        for (i, (m, c)) in self.morphs.lexicon.iter().enumerate() {
            if m.is_empty() || *c == 0 {
                return Err(bad(
                    &format!("morphs.lexicon[{i}]"),
                    "morphs must be non-empty with count > 0".into(),
                ));
            }
            if prev.is_some_and(|p| p >= m.as_str()) {
                return Err(bad(
                    &format!("morphs.lexicon[{i}]"),
                    format!("{m:?} is out of order or repeated"),
                ));
            }
            prev = Some(m);
        }
        let mut prev: Option<&str> = None;
        for (i, (w, ends)) in self.morphs.analyses.iter().enumerate() {
            let field = format!("morphs.analyses[{i}]");
            if prev.is_some_and(|p| p >= w.as_str()) {
                return Err(bad(&field, format!("{w:?} is out of order or repeated")));
            }
            prev = Some(w);
            let increasing = ends.windows(2).all(|p| p[0] < p[1]) && ends.first().is_some_and(|&e| e > 0);
            if !(increasing && ends.last() == Some(&w.len()) && ends.iter().all(|&e| w.is_char_boundary(e))) {
                return Err(bad(
                    &field,
                    format!(
                        "morph ends {ends:?} of {w:?} must increase from above 0 to its length {} on char boundaries",
                        w.len()
                    ),
                ));
            }
        }
        if !(self.morphs.unknown_char_cost.is_finite() && self.morphs.unknown_char_cost >= 0.0) {
            return Err(bad("morphs.unknown_char_cost", "expected a finite number ≥ 0".into()));
        }
        Ok(())
    }
}
