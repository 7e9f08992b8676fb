//! The JSON file format of a trained MGT tokenizer (version 3; versions 1 and 2 are still read)
//! and its validation.
//!
//! ```json
//! {
//!   "format": "jinn-mgt",
//!   "version": 3,
//!   "vocab_size": 8000,
//!   "encoding": "fewest_tokens_space_cut",
//!   "specials": [{"id": 0, "name": "<pad>"}, {"id": 1, "name": "<bos>"}, {"id": 2, "name": "<eos>"},
//!                {"id": 3, "name": "<anchor_0>"}, …],
//!   "bytes": {"first_id": 19, "count": 256},
//!   "merges": [{"id": 275, "left": 135, "right": 123}, …],
//!   "morphs": {
//!     "enabled": true,
//!     "cost": {"corpus_weight": 5.0, "letters": [["a", 20187], …], "word_ends": 36470},
//!     "lexicon": [["un", 57], …],
//!     "analyses": [["turned", [4, 6]], …],
//!     "affixes": {"min_stem_chars": 3, "min_stem_count": 1,
//!                 "rules": [{"kind": "suffix", "flag": "P", "strip": "y", "add": "iness",
//!                            "condition": "[^aeiou]y", "cross_product": true}, …]}
//!   }
//! }
//! ```
//! - `specials` take ids `0..S` in order: `<pad>`, `<bos>`, `<eos>`, then the anchors.
//! - byte `b` has id `bytes.first_id + b`, with `first_id = S` and `count = 256`.
//! - `merges` lists every BPE merge of training in rank order; each joins two ids made before it
//!   (bytes or earlier merges). Version 3: a merge whose id is below `vocab_size` makes a
//!   vocabulary token, and these take the ids `S + 256, S + 257, …` in list order; a merge whose
//!   id is `vocab_size` or more makes a scaffolding token (an intermediate token that training
//!   removed from the vocabulary, see `bpe::select_tokens`), and these take the ids
//!   `vocab_size, vocab_size + 1, …` in list order. Scaffolding is never produced by encoding.
//!   Versions 1 and 2 have no scaffolding: merge `k` has id `S + 256 + k`.
//! - every id below `vocab_size` is used exactly once (specials, bytes, vocabulary merges).
//! - `encoding`: how a unit (a morph, or a non-word piece) becomes tokens. `"merges"`: apply the
//!   merges in rank order (classic BPE; a scaffolding token left at the end is spelled by its two
//!   parts, recursively); `"fewest_tokens"`: the fewest vocabulary tokens whose bytes concatenate
//!   to the unit (ties: the smallest sum of ids, then the earliest cut);
//!   `"fewest_tokens_space_cut"` (version 3): as `"fewest_tokens"`, but among the spellings with
//!   the fewest tokens one cut right after a leading space (a unit that starts with a space and
//!   then a byte that is not ASCII whitespace) wins before the id sum.
//! - `morphs.enabled: false` means plain BPE over pieces (no morphs; `cost` may be absent).
//! - `morphs.lexicon` lists morph strings with their counts (sorted by morph).
//! - `morphs.cost` (required when enabled, see below for version 1): the corpus weight α and the letter counts (and
//!   number of word ends) of the letter model that price morphs in Viterbi segmentation (see
//!   `morph::CostModel::Mdl`).
//! - `morphs.analyses`: `[["turned", [4, 6]], …]`, every training word cut into two or more
//!   morphs, with the byte offsets where its morphs end (increasing, on char boundaries, the last
//!   = the word's length); sorted by word. Training words not listed are lexicon morphs.
//! - `morphs.affixes` (optional): the hunspell rules (condition in hunspell syntax) that cut new
//!   words whose stem is a lexicon morph or a listed training word, with the stem limits.
//!
//! Version 1 (read, never written) has no `encoding` (it means `"merges"`), no `cost` and no
//! `affixes`; instead `morphs.unknown_char_cost` prices unknown spans (`morph::CostModel::Flat`),
//! and `analyses` lists only the training words Viterbi would not reproduce. A version 1 file
//! saved again becomes version 2 with `"encoding": "merges"` and that `unknown_char_cost` in
//! place of `cost` (so it still segments and encodes as before). Version 2 is version 3 without
//! scaffolding and without `"fewest_tokens_space_cut"`; saved again it becomes version 3 and
//! encodes as before.

use super::affixes::Condition;
use super::error::{Result, TokenizerError};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The `format` value.
pub const FORMAT_NAME: &str = "jinn-mgt";
/// The version this build writes.
pub const FORMAT_VERSION: u32 = 3;
/// Versions this build reads.
pub const READABLE_VERSIONS: [u32; 3] = [1, 2, 3];

/// How units are encoded (the file's `encoding`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Encoding {
    /// Apply the merges in rank order (classic BPE; every version 1 file).
    Merges,
    /// The fewest vocabulary tokens that spell the unit.
    FewestTokens,
    /// As `FewestTokens`, but among the spellings with the fewest tokens one cut right after a
    /// word's leading space wins (version 3; see `bpe::FewestTokens::with_space_cut`).
    FewestTokensSpaceCut,
}

/// The letter model and corpus weight that price morphs (version 2).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CostSection {
    /// Corpus weight α.
    pub corpus_weight: f64,
    /// Letter counts, sorted by letter.
    pub letters: Vec<(char, u64)>,
    /// Number of word ends (end markers) counted with the letters.
    pub word_ends: u64,
}

/// Which side of the stem an affix rule adds to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AffixKindEntry {
    /// `PFX`.
    Prefix,
    /// `SFX`.
    Suffix,
}

/// One hunspell affix rule.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AffixRuleEntry {
    /// Prefix or suffix.
    pub kind: AffixKindEntry,
    /// The rule class's flag.
    pub flag: String,
    /// Removed from the stem (may be empty).
    pub strip: String,
    /// Added (non-empty for a rule that can cut a word).
    pub add: String,
    /// hunspell condition syntax.
    pub condition: String,
    /// Whether it combines with an affix of the other kind.
    pub cross_product: bool,
}

/// The affix rules applied to new words (version 2).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AffixSection {
    /// A stem needs at least this many chars…
    pub min_stem_chars: usize,
    /// …and at least this count (lexicon count; 1 for a listed training word).
    pub min_stem_count: u64,
    /// The rules.
    pub rules: Vec<AffixRuleEntry>,
}

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
    /// Version 1 pricing: per-char cost (nats) of spans outside the lexicon (in version 2 only
    /// for tokenizers read from version 1 files, instead of `cost`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unknown_char_cost: Option<f64>,
    /// Version 2: what prices morphs (required when `enabled`, unless `unknown_char_cost`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<CostSection>,
    /// Morphs with their counts, sorted by morph.
    pub lexicon: Vec<(String, u64)>,
    /// Training words with the byte offsets where their morphs end; sorted by word. Optional
    /// (absent = none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub analyses: Vec<(String, Vec<usize>)>,
    /// Version 2, optional: affix rules for new words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affixes: Option<AffixSection>,
}

/// The whole file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenizerFile {
    /// Always [`FORMAT_NAME`].
    pub format: String,
    /// [`FORMAT_VERSION`].
    pub version: u32,
    /// Number of vocabulary ids (scaffolding ids, version 3, come after them).
    pub vocab_size: u32,
    /// Version 2: how units are encoded (absent in version 1 = merges).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoding: Option<Encoding>,
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
        if !READABLE_VERSIONS.contains(&self.version) {
            return Err(bad(
                "version",
                format!(
                    "unsupported version {}; this build reads versions {READABLE_VERSIONS:?}",
                    self.version
                ),
            ));
        }
        self.validate_version_fields(path)?;
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
        for (k, m) in self.merges.iter().enumerate().filter(|(_, m)| m.id < self.vocab_size) {
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
        // Vocabulary merges take minimum, minimum + 1, … and scaffolding (version 3) vocab_size,
        // vocab_size + 1, … in list order; parts must be bytes or ids made earlier in the list.
        let (mut next_vocab, mut next_scaffold) = (minimum, self.vocab_size);
        let mut made: std::collections::HashSet<u32> = (s..minimum).collect();
        for (k, m) in self.merges.iter().enumerate() {
            let scaffold = m.id >= self.vocab_size;
            if scaffold && self.version < 3 {
                return Err(bad(
                    &format!("merges[{k}].id"),
                    format!(
                        "id {} is not below vocab_size {} (version {} has no scaffolding)",
                        m.id, self.vocab_size, self.version
                    ),
                ));
            }
            let expected = if scaffold { &mut next_scaffold } else { &mut next_vocab };
            if m.id != *expected {
                let what = if scaffold {
                    "scaffolding ids from vocab_size"
                } else {
                    "vocabulary ids from the bytes' end"
                };
                return Err(bad(
                    &format!("merges[{k}].id"),
                    format!("expected {} (rank order: {what} count up), found {}", *expected, m.id),
                ));
            }
            *expected += 1;
            for (side, part) in [("left", m.left), ("right", m.right)] {
                if !made.contains(&part) {
                    return Err(bad(
                        &format!("merges[{k}].{side}"),
                        format!("unknown merge token {part}: must be a byte or the id of an earlier merge"),
                    ));
                }
            }
            made.insert(m.id);
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
        Ok(())
    }

    /// The fields that differ between versions: present where required, absent where foreign.
    fn validate_version_fields(&self, path: &Path) -> Result<()> {
        let bad = |field: &str, message: String| TokenizerError::Invalid {
            path: path.to_path_buf(),
            field: field.to_string(),
            message,
        };
        let m = &self.morphs;
        if self.version == 1 {
            let v2_only = [
                ("encoding", self.encoding.is_some()),
                ("morphs.cost", m.cost.is_some()),
                ("morphs.affixes", m.affixes.is_some()),
            ];
            if let Some((field, _)) = v2_only.iter().find(|(_, present)| *present) {
                return Err(bad(field, "is a version 2 field, but the file says version 1".into()));
            }
            let c = m
                .unknown_char_cost
                .ok_or_else(|| bad("morphs.unknown_char_cost", "missing (version 1)".into()))?;
            if !(c.is_finite() && c >= 0.0) {
                return Err(bad("morphs.unknown_char_cost", "expected a finite number ≥ 0".into()));
            }
            return Ok(());
        }
        if self.version < 3 && self.encoding == Some(Encoding::FewestTokensSpaceCut) {
            return Err(bad(
                "encoding",
                format!("is a version 3 value, but the file says version {}", self.version),
            ));
        }
        if self.encoding.is_none() {
            return Err(bad(
                "encoding",
                "missing: expected \"merges\", \"fewest_tokens\" or \"fewest_tokens_space_cut\"".into(),
            ));
        }
        match (&m.cost, m.unknown_char_cost) {
            (Some(_), Some(_)) => {
                return Err(bad(
                    "morphs.unknown_char_cost",
                    "give either `morphs.cost` or the version 1 `morphs.unknown_char_cost`, not both".into(),
                ))
            }
            (None, None) if m.enabled => {
                return Err(bad("morphs.cost", "missing (required when morphs are enabled)".into()))
            }
            (None, Some(c)) if !(c.is_finite() && c >= 0.0) => {
                return Err(bad("morphs.unknown_char_cost", "expected a finite number ≥ 0".into()))
            }
            (Some(c), None) => {
                if !(c.corpus_weight.is_finite() && c.corpus_weight > 0.0) {
                    return Err(bad(
                        "morphs.cost.corpus_weight",
                        format!("expected a finite number > 0, found {}", c.corpus_weight),
                    ));
                }
                if let Some(k) = c.letters.windows(2).position(|p| p[0].0 >= p[1].0) {
                    return Err(bad(
                        &format!("morphs.cost.letters[{}]", k + 1),
                        "letters must be sorted and distinct".into(),
                    ));
                }
            }
            _ => {}
        }
        if let Some(a) = &m.affixes {
            for (i, r) in a.rules.iter().enumerate() {
                Condition::parse(&r.condition)
                    .map_err(|e| bad(&format!("morphs.affixes.rules[{i}].condition"), e))?;
            }
        }
        Ok(())
    }
}
