//! Affix lists read from hunspell `.aff` files (PFX/SFX rules), used to seed the morph model.
//!
//! A rule line reads `PFX|SFX flag strip add [condition [morphology…]]`; `0` means empty and
//! `add` may carry continuation flags after `/`. The header line `PFX|SFX flag cross count`
//! gives the class's cross-product flag (`Y`: may combine with an affix of the other kind);
//! every other directive is skipped. A condition is a sequence of elements — `.` (any char), a
//! literal char, `[abc]` or `[^abc]` — that must match the end of the stem (suffixes) or its
//! start (prefixes) *before* `strip` is removed; a missing condition matches everything. Files that are not UTF-8 are read as ISO-8859-1 (the hunspell
//! default for `SET ISO8859-1` dictionaries).

use super::error::{Result, TokenizerError};
use std::collections::BTreeSet;
use std::path::Path;

/// Whether a rule adds a prefix or a suffix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AffixKind {
    /// `PFX`.
    Prefix,
    /// `SFX`.
    Suffix,
}

/// One hunspell affix rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AffixRule {
    /// Prefix or suffix.
    pub kind: AffixKind,
    /// The flag naming the rule class (e.g. `U`).
    pub flag: String,
    /// Characters removed from the stem before adding (empty for `0`).
    pub strip: String,
    /// The surface affix added (empty for `0`).
    pub add: String,
    /// What the stem must look like for the rule to apply.
    pub condition: Condition,
    /// Whether the rule may combine with an affix of the other kind (header flag `Y`).
    pub cross_product: bool,
}

/// One element of a hunspell affix condition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CondElement {
    /// `.`: any character.
    Any,
    /// A literal character or a bracket class: matches when membership in `chars` differs from
    /// `negated`.
    Class {
        /// The listed characters.
        chars: Vec<char>,
        /// `[^…]`.
        negated: bool,
    },
}

impl CondElement {
    fn matches(&self, c: char) -> bool {
        match self {
            CondElement::Any => true,
            CondElement::Class { chars, negated } => chars.contains(&c) != *negated,
        }
    }
}

/// A parsed affix condition: elements matched against consecutive stem characters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Condition(pub Vec<CondElement>);

impl Condition {
    /// Parse hunspell condition syntax; `Err` names what is malformed.
    pub fn parse(text: &str) -> std::result::Result<Condition, String> {
        let mut elements = Vec::new();
        let mut chars = text.chars();
        while let Some(c) = chars.next() {
            match c {
                '.' => elements.push(CondElement::Any),
                '[' => {
                    let mut set = Vec::new();
                    let mut negated = false;
                    let mut closed = false;
                    for (k, d) in chars.by_ref().enumerate() {
                        match d {
                            '^' if k == 0 => negated = true,
                            ']' => {
                                closed = true;
                                break;
                            }
                            d => set.push(d),
                        }
                    }
                    if !closed {
                        return Err(format!("condition {text:?}: `[` without a closing `]`"));
                    }
                    elements.push(CondElement::Class { chars: set, negated });
                }
                ']' => return Err(format!("condition {text:?}: `]` without an opening `[`")),
                c => elements.push(CondElement::Class { chars: vec![c], negated: false }),
            }
        }
        Ok(Condition(elements))
    }

    /// Whether the condition matches the start of `stem`.
    pub fn matches_start(&self, stem: &str) -> bool {
        let mut chars = stem.chars();
        self.0.iter().all(|e| chars.next().is_some_and(|c| e.matches(c)))
    }

    /// Whether the condition matches the end of `stem`.
    pub fn matches_end(&self, stem: &str) -> bool {
        let mut chars = stem.chars().rev();
        self.0.iter().rev().all(|e| chars.next().is_some_and(|c| e.matches(c)))
    }
}

impl std::fmt::Display for Condition {
    /// The hunspell syntax that [`Condition::parse`] reads back (`.` for an empty condition).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.is_empty() {
            return f.write_str(".");
        }
        for e in &self.0 {
            match e {
                CondElement::Any => f.write_str(".")?,
                CondElement::Class { chars, negated: false }
                    if chars.len() == 1 && !".[]^".contains(chars[0]) =>
                {
                    write!(f, "{}", chars[0])?
                }
                CondElement::Class { chars, negated } => {
                    let set: String = chars.iter().collect();
                    write!(f, "[{}{set}]", if *negated { "^" } else { "" })?
                }
            }
        }
        Ok(())
    }
}

impl AffixRule {
    /// Apply the rule to `stem`: the derived word, or `None` when strip or condition does not fit
    /// (or nothing would be left of the stem).
    pub fn apply(&self, stem: &str) -> Option<String> {
        match self.kind {
            AffixKind::Prefix => {
                let rest = stem.strip_prefix(self.strip.as_str())?;
                (self.condition.matches_start(stem) && !rest.is_empty())
                    .then(|| format!("{}{rest}", self.add))
            }
            AffixKind::Suffix => {
                let rest = stem.strip_suffix(self.strip.as_str())?;
                (self.condition.matches_end(stem) && !rest.is_empty()).then(|| format!("{rest}{}", self.add))
            }
        }
    }

    /// Undo the rule on `word`: the stem it would come from and the byte offset in `word` of the
    /// affix boundary, or `None` when the rule cannot have produced `word` (empty `add`, no
    /// match, or the condition fails on the restored stem).
    pub fn unapply(&self, word: &str) -> Option<(String, usize)> {
        if self.add.is_empty() {
            return None;
        }
        let (stem, boundary) = match self.kind {
            AffixKind::Prefix => {
                let rest = word.strip_prefix(self.add.as_str())?;
                (format!("{}{rest}", self.strip), self.add.len())
            }
            AffixKind::Suffix => {
                let rest = word.strip_suffix(self.add.as_str())?;
                (format!("{rest}{}", self.strip), rest.len())
            }
        };
        (boundary > 0 && boundary < word.len() && self.apply(&stem).as_deref() == Some(word))
            .then_some((stem, boundary))
    }
}

/// One rule analysis of a word: where the affixes are cut off and what stem is left.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AffixAnalysis {
    /// Boundary byte offsets in the word (sorted, inside the word).
    pub bounds: Vec<usize>,
    /// The innermost stem as the rules restore it (strip added back), e.g. `happy` for
    /// `happiness`.
    pub stem: String,
    /// The byte range of the word between the affixes (the stem's surface form, `happ`).
    pub stem_span: std::ops::Range<usize>,
}

/// The affixes of one or more `.aff` files.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AffixSet {
    /// Every rule, in file order.
    pub rules: Vec<AffixRule>,
}

impl AffixSet {
    /// Parse the text of an `.aff` file (`path` only names it in errors).
    pub fn parse(text: &str, path: &Path) -> Result<AffixSet> {
        let mut rules = Vec::new();
        let mut cross: std::collections::HashMap<(String, String), bool> = Default::default();
        for (i, line) in text.lines().enumerate() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let kind = match fields.first() {
                Some(&"PFX") => AffixKind::Prefix,
                Some(&"SFX") => AffixKind::Suffix,
                _ => continue,
            };
            let error = |message: String| TokenizerError::AffixFile {
                path: path.to_path_buf(),
                line: i + 1,
                message,
            };
            if fields.len() == 4 && matches!(fields[2], "Y" | "N") && fields[3].parse::<u32>().is_ok() {
                // Header: PFX flag cross_product count.
                cross.insert((fields[0].to_string(), fields[1].to_string()), fields[2] == "Y");
                continue;
            }
            if fields.len() < 4 {
                return Err(error(format!(
                    "expected `{} flag strip add [condition]`, got {line:?}",
                    fields[0]
                )));
            }
            let empty_if_zero = |s: &str| if s == "0" { String::new() } else { s.to_string() };
            let add = fields[3].split('/').next().unwrap_or("");
            let condition = Condition::parse(fields.get(4).copied().unwrap_or(".")).map_err(error)?;
            rules.push(AffixRule {
                kind,
                flag: fields[1].to_string(),
                strip: empty_if_zero(fields[2]),
                add: empty_if_zero(add),
                condition,
                cross_product: cross
                    .get(&(fields[0].to_string(), fields[1].to_string()))
                    .copied()
                    .unwrap_or(true),
            });
        }
        Ok(AffixSet { rules })
    }

    /// Read and parse an `.aff` file.
    pub fn load(path: &Path) -> Result<AffixSet> {
        let bytes =
            std::fs::read(path).map_err(|e| TokenizerError::Io { path: path.to_path_buf(), source: e })?;
        let text = match String::from_utf8(bytes) {
            Ok(s) => s,
            Err(e) => e.into_bytes().iter().map(|&b| b as char).collect(), // ISO-8859-1
        };
        Self::parse(&text, path)
    }

    /// Distinct non-empty surface strings of the given kind, sorted.
    pub fn surfaces(&self, kind: AffixKind) -> BTreeSet<String> {
        self.rules.iter().filter(|r| r.kind == kind && !r.add.is_empty()).map(|r| r.add.clone()).collect()
    }

    /// The affix analysis of `word` that hunspell-style rule application licenses with stems
    /// attested in the corpus: at most one suffix and one prefix (both only when both rules allow
    /// the cross product), each undone by [`AffixRule::unapply`], the innermost stem at least
    /// `min_stem` chars and `count(stem) ≥ min_count`. Returns the boundary byte offsets in `word` (sorted;
    /// empty when no rule fits). Among fitting analyses the one with more boundaries wins, then
    /// the more frequent innermost stem, then the earlier boundaries (deterministic).
    pub fn analyse(
        &self,
        word: &str,
        count: impl Fn(&str) -> u64,
        min_stem: usize,
        min_count: u64,
    ) -> Vec<usize> {
        self.best_analysis(word, count, min_stem, min_count).map(|a| a.bounds).unwrap_or_default()
    }

    /// [`Self::analyse`] with the innermost stem and where it sits in `word`; `None` when no rule
    /// fits.
    pub fn best_analysis(
        &self,
        word: &str,
        count: impl Fn(&str) -> u64,
        min_stem: usize,
        min_count: u64,
    ) -> Option<AffixAnalysis> {
        let attested = |stem: &str| {
            let c = count(stem);
            (stem.chars().count() >= min_stem && c >= min_count).then_some(c)
        };
        // (analysis, innermost stem count)
        let mut best: Option<(AffixAnalysis, u64)> = None;
        let mut consider = |a: AffixAnalysis, c: u64| {
            let better = match &best {
                None => true,
                Some((b, bc)) => {
                    (a.bounds.len(), c, std::cmp::Reverse(&a.bounds))
                        > (b.bounds.len(), *bc, std::cmp::Reverse(&b.bounds))
                }
            };
            if better {
                best = Some((a, c));
            }
        };
        let prefixes = || self.rules.iter().filter(|r| r.kind == AffixKind::Prefix);
        for p in prefixes() {
            if let Some((stem, b)) = p.unapply(word) {
                if let Some(c) = attested(&stem) {
                    consider(AffixAnalysis { bounds: vec![b], stem, stem_span: b..word.len() }, c);
                }
            }
        }
        for s in self.rules.iter().filter(|r| r.kind == AffixKind::Suffix) {
            let Some((stem, b)) = s.unapply(word) else { continue };
            // With both affixes only the innermost stem must be attested, as in hunspell:
            // "unkindness" is un|kind|ness whether or not "unkind" occurs.
            for p in prefixes().filter(|p| p.cross_product && s.cross_product) {
                if let Some((inner, pb)) = p.unapply(&stem) {
                    if let Some(ci) = attested(&inner).filter(|_| pb < b) {
                        consider(AffixAnalysis { bounds: vec![pb, b], stem: inner, stem_span: pb..b }, ci);
                    }
                }
            }
            if let Some(c) = attested(&stem) {
                consider(AffixAnalysis { bounds: vec![b], stem, stem_span: 0..b }, c);
            }
        }
        best.map(|(a, _)| a)
    }

    /// Whether the set holds no rule.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_rules_and_skips_headers() {
        let text =
            "SET UTF-8\nPFX U Y 1\nPFX U 0 un .\nSFX P Y 2\nSFX P y iness [^aeiou]y\nSFX P 0 ness/X [^y]\n";
        let set = AffixSet::parse(text, Path::new("t.aff")).unwrap();
        assert_eq!(set.rules.len(), 3);
        assert_eq!(
            set.rules[1],
            AffixRule {
                kind: AffixKind::Suffix,
                flag: "P".into(),
                strip: "y".into(),
                add: "iness".into(),
                condition: Condition(vec![
                    CondElement::Class { chars: "aeiou".chars().collect(), negated: true },
                    CondElement::Class { chars: vec!['y'], negated: false },
                ]),
                cross_product: true,
            }
        );
        assert_eq!(set.surfaces(AffixKind::Suffix).into_iter().collect::<Vec<_>>(), ["iness", "ness"]);
        assert_eq!(set.surfaces(AffixKind::Prefix).into_iter().collect::<Vec<_>>(), ["un"]);
        let err = AffixSet::parse("SFX P y\n", Path::new("bad.aff")).unwrap_err().to_string();
        assert!(err.contains("bad.aff") && err.contains("line 1"), "{err}");
        let err = AffixSet::parse("SFX P Y 1\nSFX P 0 s [^y\n", Path::new("b.aff")).unwrap_err().to_string();
        assert!(err.contains("line 2") && err.contains("closing"), "{err}");
    }

    #[test]
    fn rules_apply_and_unapply_only_where_strip_and_condition_fit() {
        let text = "PFX U N 1\nPFX U 0 un .\nSFX P Y 2\nSFX P y iness [^aeiou]y\nSFX P 0 ness [^y]\n\
                    SFX D Y 2\nSFX D 0 d e\nSFX D 0 ed [^ey]\n";
        let set = AffixSet::parse(text, Path::new("t.aff")).unwrap();
        let rule = |flag: &str, add: &str| set.rules.iter().find(|r| r.flag == flag && r.add == add).unwrap();
        assert!(!rule("U", "un").cross_product && rule("P", "ness").cross_product);
        // Reference: hunspell's documented behaviour on these rules, written out by hand.
        assert_eq!(rule("P", "iness").apply("happy").as_deref(), Some("happiness"));
        assert_eq!(rule("P", "iness").apply("grey"), None); // [^aeiou]y fails on "ey"
        assert_eq!(rule("P", "ness").apply("kind").as_deref(), Some("kindness"));
        assert_eq!(rule("D", "d").apply("love").as_deref(), Some("loved"));
        assert_eq!(rule("D", "ed").apply("love"), None);
        assert_eq!(rule("U", "un").apply("kind").as_deref(), Some("unkind"));
        assert_eq!(rule("P", "iness").unapply("happiness"), Some(("happy".to_string(), 4)));
        assert_eq!(rule("D", "d").unapply("loved"), Some(("love".to_string(), 4)));
        // The condition allows "lov" + "ed" too: only the stem's attestation can tell them apart.
        assert_eq!(rule("D", "ed").unapply("loved"), Some(("lov".to_string(), 3)));
        assert_eq!(rule("D", "ed").unapply("freed"), None); // "fre" ends in e: [^ey] fails
        assert_eq!(rule("D", "ed").unapply("walked"), Some(("walk".to_string(), 4)));
        assert_eq!(rule("U", "un").unapply("unkind"), Some(("kind".to_string(), 2)));
        assert_eq!(rule("U", "un").unapply("un"), None); // nothing left of the stem
        assert_eq!(rule("P", "ness").unapply("kindly"), None);
    }

    #[test]
    fn analysis_needs_attested_stems_and_the_cross_product() {
        let text = "PFX U Y 1\nPFX U 0 un .\nPFX N N 1\nPFX N 0 non .\nSFX P Y 2\nSFX P y iness [^aeiou]y\n\
                    SFX P 0 ness [^y]\nSFX D Y 2\nSFX D 0 d e\nSFX D 0 ed [^ey]\n";
        let set = AffixSet::parse(text, Path::new("t.aff")).unwrap();
        let corpus: std::collections::HashMap<&str, u64> = [
            ("kind", 5),
            ("unkind", 1),
            ("happy", 3),
            ("love", 4),
            ("lov", 0),
            ("sense", 2),
            ("nonsense", 1),
        ]
        .into();
        let count = |w: &str| corpus.get(w).copied().unwrap_or(0);
        assert_eq!(set.analyse("unkindness", count, 3, 1), [2, 6]);
        assert_eq!(set.analyse("unhappiness", count, 3, 1), [2, 6]); // "unhappy" need not occur
        assert_eq!(set.analyse("happiness", count, 3, 1), [4]);
        assert_eq!(set.analyse("loved", count, 3, 1), [4]); // "lov" is not attested
        assert_eq!(set.analyse("nonsenseness", count, 3, 1), [8]); // N forbids the cross product
        assert_eq!(set.analyse("nonsense", count, 3, 1), [3]);
        assert_eq!(set.analyse("kindness", count, 5, 1), Vec::<usize>::new()); // stem too short
        assert_eq!(set.analyse("kindness", count, 3, 6), Vec::<usize>::new()); // stem too rare
        assert_eq!(set.analyse("blessed", count, 3, 1), Vec::<usize>::new());
    }
}
