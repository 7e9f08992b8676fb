//! MGT: a morpheme-guided subword tokenizer.
//!
//! Pipeline: text → pieces ([`pretokenize`]: words with their leading space, digit runs,
//! punctuation runs, whitespace runs) → words are segmented into morphs ([`morph`], an
//! unsupervised Morfessor-Baseline-style MDL model, optionally seeded with hunspell affixes
//! from [`affixes`]) → each morph (and each non-word piece) is encoded with byte-level BPE
//! ([`bpe`]) whose merges were learnt inside morphs only, so no token crosses a morph boundary.
//! BPE learns twice as many merges as the vocabulary has slots; the least-used tokens
//! (intermediate "scaffolding" that later merges consume) are then removed until the
//! vocabulary fits ([`bpe::select_tokens`]), so the slots hold whole morphs rather than
//! fragments. Each unit is encoded with the fewest vocabulary tokens (a cut right after a
//! word's leading space breaking ties).
//! Every byte is a token, so any UTF-8 text round-trips exactly. The JSON file format is in
//! [`format`].

pub mod affixes;
pub mod bpe;
pub mod error;
pub mod format;
pub mod model;
pub mod morph;
pub mod pretokenize;

pub use affixes::AffixSet;
pub use error::{Result, TokenizerError};
pub use format::Encoding;
pub use model::{Tokenizer, TrainConfig, BOS_ID, EOS_ID, PAD_ID};
pub use morph::{Dampening, MorphConfig};
