//! A causal language model built from reversible RSF blocks, with a standard transformer
//! baseline of equal parameter count, KV-cached decoding, and its training task.

pub mod config;
pub mod data;
pub mod decode;
pub mod error;
pub mod model;
pub mod task;
pub mod text_tokenizer;
pub mod utf8_stream;

#[cfg(test)]
mod tests;

pub use config::{Arch, Backprop, LmModelConfig};
pub use data::{LmData, ShardMeta};
pub use decode::{generate, LmCache, Sampling};
pub use error::LmError;
pub use model::{LanguageModel, StandardBlock};
pub use task::{bits_per_byte, stream_loss, LmDataConfig, LmRunConfig, LmTask, TrainedLm, LM_KIND};
pub use text_tokenizer::{TextTokenizer, TokenizerSpec};
pub use utf8_stream::Utf8Stream;
