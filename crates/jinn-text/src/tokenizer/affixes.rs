//! Affix lists read from hunspell `.aff` files (PFX/SFX rules), used to seed the morph model.
//!
//! A rule line reads `PFX|SFX flag strip add [condition [morphology…]]`; `0` means empty and
//! `add` may carry continuation flags after `/`. Header lines (`PFX flag cross count`) and every
//! other directive are skipped. Files that are not UTF-8 are read as ISO-8859-1 (the hunspell
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
        for (i, line) in text.lines().enumerate() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let kind = match fields.first() {
                Some(&"PFX") => AffixKind::Prefix,
                Some(&"SFX") => AffixKind::Suffix,
                _ => continue,
            };
            if fields.len() == 4 {
                continue; // header: PFX flag cross_product count
            }
            if fields.len() < 4 {
                return Err(TokenizerError::AffixFile {
                    path: path.to_path_buf(),
                    line: i + 1,
                    message: format!("expected `{} flag strip add [condition]`, got {line:?}", fields[0]),
                });
            }
            let empty_if_zero = |s: &str| if s == "0" { String::new() } else { s.to_string() };
            let add = fields[3].split('/').next().unwrap_or("");
            rules.push(AffixRule {
                kind,
                flag: fields[1].to_string(),
                strip: empty_if_zero(fields[2]),
                add: empty_if_zero(add),
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
            AffixRule { kind: AffixKind::Suffix, flag: "P".into(), strip: "y".into(), add: "iness".into() }
        );
        assert_eq!(set.surfaces(AffixKind::Suffix).into_iter().collect::<Vec<_>>(), ["iness", "ness"]);
        assert_eq!(set.surfaces(AffixKind::Prefix).into_iter().collect::<Vec<_>>(), ["un"]);
        let err = AffixSet::parse("SFX P y\n", Path::new("bad.aff")).unwrap_err().to_string();
        assert!(err.contains("bad.aff") && err.contains("line 1"), "{err}");
    }
}
