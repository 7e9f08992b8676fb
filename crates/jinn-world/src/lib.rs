//! jinn's Genie-style world model on Burn 0.22: the VQ-VAE video tokenizer
//! ([`tokenizer`]) and its training task ([`tokenizer_task`]).
#![warn(missing_docs)]

pub mod tokenizer;
pub mod tokenizer_eval;
pub mod tokenizer_task;

pub use tokenizer::{frames_to_unit, Tokenizer, TokenizerConfig, TokenizerOutput};
pub use tokenizer_task::{DataConfig, TokenizerRunConfig, TokenizerTask, TOKENIZER_KIND};
