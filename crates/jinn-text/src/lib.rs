//! jinn-text: text for jinn.
//!
//! Modules:
//! - [`tokenizer`]: MGT, a morpheme-guided subword tokenizer (Morfessor-style unsupervised morph
//!   segmentation, optionally seeded by hunspell affix lists, then BPE whose merges never cross a
//!   morph boundary, with byte fallback). Free of any deep-learning dependency.

pub mod tokenizer;
