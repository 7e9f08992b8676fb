//! MGT: a morpheme-guided subword tokenizer.
//!
//! Pipeline: text → pieces ([`pretokenize`]: words with their leading space, digit runs,
//! punctuation runs, whitespace runs) → words are segmented into morphs ([`morph`], an
//! unsupervised Morfessor-Baseline-style MDL model, optionally seeded with hunspell affixes
//! from [`affixes`]) → each morph (and each non-word piece) is encoded with byte-level BPE
//! ([`bpe`]) whose merges were learnt inside morphs only, so no token crosses a morph boundary.
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
