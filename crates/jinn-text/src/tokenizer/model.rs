//! [`Tokenizer`]: training, encoding, decoding and segmentation.

use super::affixes::{AffixKind, AffixRule, AffixSet, Condition};
use super::bpe::{select_tokens, train_merges, FewestTokens, Merge, MergeTable, Pair};
use super::error::{Result, TokenizerError};
use super::format::{
    AffixKindEntry, AffixRuleEntry, AffixSection, ByteRange, CostSection, Encoding, MergeEntry, MorphSection,
    SpecialEntry, TokenizerFile, FORMAT_NAME, FORMAT_VERSION, REQUIRED_SPECIALS,
};
use super::morph::{train_morphs, CostModel, LetterModel, MorphConfig, MorphLexicon};
use super::pretokenize::{pieces, Piece, PieceKind};
use rayon::prelude::*;
use std::collections::HashMap;
use std::path::Path;

/// Default [`TrainConfig::merges_per_slot`].
pub const DEFAULT_MERGES_PER_SLOT: f64 = 2.0;

/// Id of `<pad>`.
pub const PAD_ID: u32 = 0;
/// Id of `<bos>`.
pub const BOS_ID: u32 = 1;
/// Id of `<eos>`.
pub const EOS_ID: u32 = 2;

/// Settings of tokenizer training.
#[derive(Clone, Debug)]
pub struct TrainConfig {
    /// Total vocabulary: specials + anchors + 256 bytes + merges.
    pub vocab_size: usize,
    /// Reserved anchor tokens `<anchor_0>`… (never produced by `encode`).
    pub anchors: usize,
    /// Morph segmentation settings; `None` trains plain BPE over pieces (the baseline).
    pub morph: Option<MorphConfig>,
    /// hunspell affix rules; where one applies to a corpus-attested stem its boundary is kept by the
    /// morph model (may be empty; see [`AffixSet::analyse`]). They are saved with the tokenizer
    /// and cut new words too.
    pub affixes: AffixSet,
    /// How units are encoded into tokens.
    pub encoding: Encoding,
    /// Intermediate-token removal ([`select_tokens`]): BPE learns this many merges per
    /// vocabulary slot, then the least-used tokens are dropped until the vocabulary fits (they stay
    /// in the file as scaffolding). 1 keeps every merge (the vocabulary of plain BPE).
    pub merges_per_slot: f64,
}

impl Default for TrainConfig {
    fn default() -> Self {
        TrainConfig {
            vocab_size: 8000,
            anchors: 16,
            morph: Some(MorphConfig::default()),
            affixes: AffixSet::default(),
            encoding: Encoding::FewestTokensSpaceCut,
            merges_per_slot: DEFAULT_MERGES_PER_SLOT,
        }
    }
}

/// A trained MGT tokenizer. Ids: specials `0..S` (`<pad>`, `<bos>`, `<eos>`, anchors), bytes
/// `S..S+256`, then the vocabulary merges in rank order up to `vocab_size`; scaffolding merges
/// (removed from the vocabulary, never produced by encoding) are numbered after that.
#[derive(Clone, Debug)]
pub struct Tokenizer {
    specials: Vec<String>,
    /// Every merge in rank order, scaffolding (ids ≥ `vocab_size`) included.
    merges: Vec<Merge>,
    vocab_size: usize,
    /// The pair each scaffolding token joins (index: id − `vocab_size`).
    scaffold: Vec<Pair>,
    table: MergeTable,
    fewest: FewestTokens,
    encoding: Encoding,
    token_bytes: Vec<Vec<u8>>,
    morphs: MorphLexicon,
    morphs_enabled: bool,
}

impl Tokenizer {
    /// Train on documents.
    pub fn train<S: AsRef<str>>(docs: &[S], cfg: &TrainConfig) -> Result<Tokenizer> {
        let specials = special_names(cfg.anchors);
        let minimum = specials.len() + 256;
        if cfg.vocab_size < minimum {
            return Err(TokenizerError::VocabTooSmall {
                requested: cfg.vocab_size,
                minimum,
                specials: specials.len(),
            });
        }
        // Piece counts.
        let mut piece_counts: HashMap<Piece<'_>, u64> = HashMap::new();
        for doc in docs {
            for p in pieces(doc.as_ref()) {
                *piece_counts.entry(p).or_default() += 1;
            }
        }
        if piece_counts.is_empty() {
            return Err(TokenizerError::EmptyCorpus);
        }
        // Morph model on word counts.
        let morphs = match &cfg.morph {
            Some(mc) => {
                let mut words: HashMap<&str, u64> = HashMap::new();
                for (p, &c) in &piece_counts {
                    if p.kind == PieceKind::Word {
                        *words.entry(p.body()).or_default() += c;
                    }
                }
                train_morphs(&words, &cfg.affixes, mc)
            }
            None => MorphLexicon::new(HashMap::new(), CostModel::Flat { unknown_char_cost: 0.0 }),
        };
        let tok =
            Tokenizer::assemble(specials, Vec::new(), minimum, morphs, cfg.morph.is_some(), cfg.encoding);
        // Units (morphs with the piece's leading space on the first) with counts.
        let mut unit_counts: HashMap<&str, u64> = HashMap::new();
        for (p, &c) in &piece_counts {
            tok.for_each_unit(p, |u| *unit_counts.entry(u).or_default() += c);
        }
        let first = tok.byte_offset();
        let mut units: Vec<(Vec<u8>, u64)> =
            unit_counts.into_iter().map(|(u, c)| (u.as_bytes().to_vec(), c)).collect();
        units.sort_unstable();
        let budget = cfg.vocab_size - minimum;
        let symbols =
            units.iter().map(|(u, c)| (u.iter().map(|&b| first + b as u32).collect(), *c)).collect();
        let candidates = (budget as f64 * cfg.merges_per_slot.max(1.0)).round() as usize;
        let trained = train_merges(symbols, first + 256, candidates);
        let space_cut = cfg.encoding == Encoding::FewestTokensSpaceCut;
        let keep = select_tokens(&units, &trained, first + 256, budget, space_cut);
        let merges = assign_ids(&trained, &keep, first + 256);
        let vocab_size = minimum + keep.iter().filter(|&&k| k).count();
        let Tokenizer { specials, morphs, morphs_enabled, .. } = tok;
        Ok(Tokenizer::assemble(specials, merges, vocab_size, morphs, morphs_enabled, cfg.encoding))
    }

    fn assemble(
        specials: Vec<String>,
        merges: Vec<Merge>,
        vocab_size: usize,
        morphs: MorphLexicon,
        morphs_enabled: bool,
        encoding: Encoding,
    ) -> Tokenizer {
        let first = specials.len() as u32;
        let mut token_bytes: Vec<Vec<u8>> = vec![Vec::new(); specials.len()];
        token_bytes.extend((0..=255u8).map(|b| vec![b]));
        token_bytes.resize(specials.len() + 256 + merges.len(), Vec::new());
        let mut scaffold = vec![(0, 0); specials.len() + 256 + merges.len() - vocab_size];
        for m in &merges {
            let (l, r) = m.pair;
            let mut t = token_bytes[l as usize].clone();
            t.extend_from_slice(&token_bytes[r as usize]);
            token_bytes[m.id as usize] = t;
            if let Some(slot) = (m.id as usize).checked_sub(vocab_size) {
                scaffold[slot] = m.pair;
            }
        }
        let table = MergeTable::new(&merges);
        let fewest = match encoding {
            Encoding::FewestTokens => FewestTokens::new(&token_bytes[first as usize..vocab_size], first),
            Encoding::FewestTokensSpaceCut => {
                FewestTokens::new(&token_bytes[first as usize..vocab_size], first).with_space_cut()
            }
            Encoding::Merges => FewestTokens::default(),
        };
        Tokenizer {
            specials,
            merges,
            vocab_size,
            scaffold,
            table,
            fewest,
            encoding,
            token_bytes,
            morphs,
            morphs_enabled,
        }
    }

    /// Append `id` to `out`, spelled by vocabulary tokens when it is scaffolding.
    fn push_vocab_token(&self, id: u32, out: &mut Vec<u32>) {
        match (id as usize).checked_sub(self.vocab_size) {
            None => out.push(id),
            Some(slot) => {
                let (l, r) = self.scaffold[slot];
                self.push_vocab_token(l, out);
                self.push_vocab_token(r, out);
            }
        }
    }

    /// How units are encoded.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// The same vocabulary and morphs with another unit encoding.
    pub fn with_encoding(self, encoding: Encoding) -> Tokenizer {
        let Tokenizer { specials, merges, vocab_size, morphs, morphs_enabled, .. } = self;
        Tokenizer::assemble(specials, merges, vocab_size, morphs, morphs_enabled, encoding)
    }

    /// Id of byte 0 (= number of special tokens).
    pub fn byte_offset(&self) -> u32 {
        self.specials.len() as u32
    }

    /// Number of ids.
    pub fn vocab_size(&self) -> usize {
        self.vocab_size
    }

    /// Names of the special tokens (index = id).
    pub fn specials(&self) -> &[String] {
        &self.specials
    }

    /// Id of anchor `k`, if reserved.
    pub fn anchor_id(&self, k: usize) -> Option<u32> {
        (k + REQUIRED_SPECIALS.len() < self.specials.len()).then(|| (k + REQUIRED_SPECIALS.len()) as u32)
    }

    /// Every merge of training in rank order. Vocabulary tokens have ids below
    /// [`Self::vocab_size`], in rank order from `byte_offset() + 256`; scaffolding tokens
    /// (intermediate tokens left out of the vocabulary, see [`TrainConfig::min_token_share`])
    /// have ids from `vocab_size()` on and are never produced by encoding.
    pub fn merges(&self) -> &[Merge] {
        &self.merges
    }

    /// Number of scaffolding tokens (merges left out of the vocabulary).
    pub fn scaffold_len(&self) -> usize {
        self.scaffold.len()
    }

    /// The bytes a token stands for (empty for specials), or `None` for an id outside the
    /// vocabulary.
    pub fn token_bytes(&self, id: u32) -> Option<&[u8]> {
        self.token_bytes[..self.vocab_size].get(id as usize).map(|v| v.as_slice())
    }

    /// Whether words are segmented into morphs (false for the plain-BPE baseline).
    pub fn morphs_enabled(&self) -> bool {
        self.morphs_enabled
    }

    /// The morph lexicon.
    pub fn morph_lexicon(&self) -> &MorphLexicon {
        &self.morphs
    }

    /// Call `f` on each unit of a piece: its morphs (the leading space joins the first), or the
    /// whole piece when it is not a word or morphs are disabled.
    fn for_each_unit<'p>(&self, p: &Piece<'p>, mut f: impl FnMut(&'p str)) {
        if p.kind != PieceKind::Word || !self.morphs_enabled {
            f(p.text);
            return;
        }
        let mut start = 0;
        for end in self.morphs.segment_ends(p.body()) {
            f(&p.text[start..p.lead + end]);
            start = p.lead + end;
        }
    }

    /// The morphs of a word (the word itself when morphs are disabled).
    pub fn segment<'w>(&self, word: &'w str) -> Vec<&'w str> {
        if self.morphs_enabled {
            self.morphs.segment(word)
        } else {
            vec![word]
        }
    }

    /// Byte offsets in `text` where units (morphs, non-word pieces) end; token boundaries of
    /// `encode(text)` always include all of them.
    pub fn unit_ends(&self, text: &str) -> Vec<usize> {
        let mut ends = Vec::new();
        let mut base = 0;
        for p in pieces(text) {
            let mut off = base;
            self.for_each_unit(&p, |u| {
                off += u.len();
                ends.push(off);
            });
            base += p.text.len();
        }
        ends
    }

    fn encode_piece(&self, p: &Piece<'_>, out: &mut Vec<u32>) {
        let first = self.byte_offset();
        self.for_each_unit(p, |u| match self.encoding {
            Encoding::Merges => {
                let seq: Vec<u32> = u.bytes().map(|b| first + b as u32).collect();
                for id in self.table.apply(seq) {
                    self.push_vocab_token(id, out);
                }
            }
            Encoding::FewestTokens | Encoding::FewestTokensSpaceCut => self.fewest.encode(u.as_bytes(), out),
        });
    }

    /// Encode text to ids (no specials added). Deterministic; pieces are cached per call.
    pub fn encode(&self, text: &str) -> Vec<u32> {
        let mut cache: HashMap<&str, Vec<u32>> = HashMap::new();
        let mut out = Vec::with_capacity(text.len() / 3 + 1);
        for p in pieces(text) {
            match cache.get(p.text) {
                Some(ids) => out.extend_from_slice(ids),
                None => {
                    let mut ids = Vec::new();
                    self.encode_piece(&p, &mut ids);
                    out.extend_from_slice(&ids);
                    cache.insert(p.text, ids);
                }
            }
        }
        out
    }

    /// Encode with optional `<bos>` before and `<eos>` after.
    pub fn encode_with_specials(&self, text: &str, bos: bool, eos: bool) -> Vec<u32> {
        let mut out = Vec::new();
        if bos {
            out.push(BOS_ID);
        }
        out.extend(self.encode(text));
        if eos {
            out.push(EOS_ID);
        }
        out
    }

    /// Encode many documents in parallel (rayon); same result as calling [`Self::encode`] on each.
    pub fn encode_batch<S: AsRef<str> + Sync>(&self, docs: &[S]) -> Vec<Vec<u32>> {
        docs.par_iter().map(|d| self.encode(d.as_ref())).collect()
    }

    /// The bytes of `ids` concatenated (specials and anchors contribute nothing).
    pub fn decode_bytes(&self, ids: &[u32]) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        for &id in ids {
            let t = self
                .token_bytes(id)
                .ok_or(TokenizerError::UnknownId { id, vocab_size: self.vocab_size() })?;
            out.extend_from_slice(t);
        }
        Ok(out)
    }

    /// Decode ids to text; errors on unknown ids or bytes that are not UTF-8.
    pub fn decode(&self, ids: &[u32]) -> Result<String> {
        String::from_utf8(self.decode_bytes(ids)?)
            .map_err(|e| TokenizerError::InvalidUtf8 { valid_up_to: e.utf8_error().valid_up_to() })
    }

    /// The file representation (always the current [`FORMAT_VERSION`]).
    pub fn to_file(&self) -> TokenizerFile {
        let s = self.byte_offset();
        let (unknown_char_cost, cost) = match self.morphs.costs() {
            CostModel::Flat { unknown_char_cost } => (Some(*unknown_char_cost), None),
            CostModel::Mdl { corpus_weight, letters } => (
                None,
                Some(CostSection {
                    corpus_weight: *corpus_weight,
                    letters: letters.counts().iter().map(|(&c, &n)| (c, n)).collect(),
                    word_ends: letters.ends(),
                }),
            ),
        };
        let (affixes, min_stem_chars, min_stem_count) = self.morphs.affixes();
        TokenizerFile {
            format: FORMAT_NAME.to_string(),
            version: FORMAT_VERSION,
            vocab_size: self.vocab_size() as u32,
            encoding: Some(self.encoding),
            specials: self
                .specials
                .iter()
                .enumerate()
                .map(|(i, n)| SpecialEntry { id: i as u32, name: n.clone() })
                .collect(),
            bytes: ByteRange { first_id: s, count: 256 },
            merges: self
                .merges
                .iter()
                .map(|m| MergeEntry { id: m.id, left: m.pair.0, right: m.pair.1 })
                .collect(),
            morphs: MorphSection {
                enabled: self.morphs_enabled,
                unknown_char_cost,
                cost,
                lexicon: self.morphs.entries().into_iter().map(|(m, c)| (m.to_string(), c)).collect(),
                analyses: self
                    .morphs
                    .analyses()
                    .into_iter()
                    .map(|(w, e)| (w.to_string(), e.to_vec()))
                    .collect(),
                affixes: (!affixes.is_empty()).then(|| AffixSection {
                    min_stem_chars,
                    min_stem_count,
                    rules: affixes.rules.iter().map(rule_entry).collect(),
                }),
            },
        }
    }

    /// Validate a file (`path` names it in errors) and build the tokenizer. A version 1 file
    /// keeps its segmentation costs and merge encoding, so it encodes as it always did.
    pub fn from_file(file: TokenizerFile, path: &Path) -> Result<Tokenizer> {
        file.validate(path)?;
        let specials = file.specials.into_iter().map(|e| e.name).collect();
        let vocab_size = file.vocab_size as usize;
        let merges = file.merges.iter().map(|m| Merge { pair: (m.left, m.right), id: m.id }).collect();
        let m = file.morphs;
        let costs = match (m.cost, m.unknown_char_cost) {
            (Some(c), _) => CostModel::Mdl {
                corpus_weight: c.corpus_weight,
                letters: LetterModel::new(c.letters.into_iter().collect(), c.word_ends),
            },
            (None, c) => CostModel::Flat { unknown_char_cost: c.unwrap_or(0.0) },
        };
        let mut morphs = MorphLexicon::new(m.lexicon.into_iter().collect(), costs)
            .with_analyses(m.analyses.into_iter().collect());
        if let Some(a) = m.affixes {
            let rules = a
                .rules
                .into_iter()
                .enumerate()
                .map(|(i, r)| rule_from_entry(r, path, i))
                .collect::<Result<Vec<_>>>()?;
            morphs = morphs.with_affixes(AffixSet { rules }, a.min_stem_chars, a.min_stem_count);
        }
        let encoding = file.encoding.unwrap_or(Encoding::Merges);
        Ok(Tokenizer::assemble(specials, merges, vocab_size, morphs, m.enabled, encoding))
    }

    /// Serialize to JSON text (deterministic).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(&self.to_file()).expect("tokenizer serializes")
    }

    /// Parse and validate JSON text; `path` names the source in errors.
    pub fn from_json(text: &str, path: &Path) -> Result<Tokenizer> {
        Tokenizer::from_file(TokenizerFile::from_json(text, path)?, path)
    }

    /// Write to `path` atomically.
    pub fn save(&self, path: &Path) -> Result<()> {
        jinn_data::atomic_file::write_atomically(path, self.to_json().as_bytes())
            .map_err(|e| TokenizerError::Write { path: path.to_path_buf(), message: e.to_string() })
    }

    /// Read and validate a tokenizer file.
    pub fn load(path: &Path) -> Result<Tokenizer> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| TokenizerError::Io { path: path.to_path_buf(), source: e })?;
        Tokenizer::from_json(&text, path)
    }
}

/// Ids of the `trained` merges (merge `k` made training id `first_id + k`): the kept ones
/// (`keep`) take `first_id, first_id + 1, …` in rank order, the others (scaffolding) the ids
/// after them; training merges beyond the last kept one are dropped. Pairs are renumbered.
fn assign_ids(trained: &[Pair], keep: &[bool], first_id: u32) -> Vec<Merge> {
    let used = keep.iter().rposition(|&k| k).map_or(0, |k| k + 1);
    let kept = keep[..used].iter().filter(|&&k| k).count() as u32;
    let mut ids = Vec::with_capacity(used);
    let (mut next_kept, mut next_scaffold) = (first_id, first_id + kept);
    for &k in &keep[..used] {
        let slot = if k { &mut next_kept } else { &mut next_scaffold };
        ids.push(*slot);
        *slot += 1;
    }
    let map = |id: u32| if id < first_id { id } else { ids[(id - first_id) as usize] };
    trained[..used].iter().zip(&ids).map(|(&(l, r), &id)| Merge { pair: (map(l), map(r)), id }).collect()
}

fn special_names(anchors: usize) -> Vec<String> {
    REQUIRED_SPECIALS
        .iter()
        .map(|s| s.to_string())
        .chain((0..anchors).map(|k| format!("<anchor_{k}>")))
        .collect()
}

fn rule_entry(r: &AffixRule) -> AffixRuleEntry {
    AffixRuleEntry {
        kind: match r.kind {
            AffixKind::Prefix => AffixKindEntry::Prefix,
            AffixKind::Suffix => AffixKindEntry::Suffix,
        },
        flag: r.flag.clone(),
        strip: r.strip.clone(),
        add: r.add.clone(),
        condition: r.condition.to_string(),
        cross_product: r.cross_product,
    }
}

fn rule_from_entry(r: AffixRuleEntry, path: &Path, i: usize) -> Result<AffixRule> {
    let condition = Condition::parse(&r.condition).map_err(|message| TokenizerError::Invalid {
        path: path.to_path_buf(),
        field: format!("morphs.affixes.rules[{i}].condition"),
        message,
    })?;
    Ok(AffixRule {
        kind: match r.kind {
            AffixKindEntry::Prefix => AffixKind::Prefix,
            AffixKindEntry::Suffix => AffixKind::Suffix,
        },
        flag: r.flag,
        strip: r.strip,
        add: r.add,
        condition,
        cross_product: r.cross_product,
    })
}
