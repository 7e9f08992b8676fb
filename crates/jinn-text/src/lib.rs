//! jinn-text: text for jinn.
//!
//! Modules:
//! - [`tokenizer`]: MGT, a morpheme-guided subword tokenizer (Morfessor-style unsupervised morph
//!   segmentation, optionally seeded by hunspell affix lists, then BPE whose merges never cross a
//!   morph boundary, with byte fallback). Free of any deep-learning dependency.
//! - [`lm`]: a causal language model built from reversible RSF blocks (and a standard
//!   transformer baseline), KV-cached generation, corpus shards and its training task.

#![warn(missing_docs)]

pub mod lm;
pub mod tokenizer;
