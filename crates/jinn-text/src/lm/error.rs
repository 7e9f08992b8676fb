//! Errors of language-model inference and data preparation (training errors are
//! [`jinn_train::TrainError`]).

use std::path::PathBuf;
use thiserror::Error;

/// Bad input to generation, evaluation or corpus preparation.
#[derive(Debug, Error)]
pub enum LmError {
    /// The prompt is empty (or encodes to no tokens).
    #[error("the prompt is empty: give at least one character")]
    EmptyPrompt,
    /// The sequence would outgrow the model's context.
    #[error("{what} is {len} tokens; the model's context (model.max_seq) holds {max}")]
    TooLong {
        /// What is too long (the prompt, prompt plus new tokens).
        what: &'static str,
        /// Its length in tokens.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A sampling setting out of range.
    #[error("invalid `{field}`: {reason}")]
    Sampling {
        /// The setting.
        field: &'static str,
        /// What was expected.
        reason: String,
    },
    /// A token id the tokenizer does not know, or invalid text.
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    /// A corpus or shard problem.
    #[error("{path}: {reason}")]
    Data {
        /// The file or directory.
        path: PathBuf,
        /// What was wrong and what was expected.
        reason: String,
    },
}

impl LmError {
    /// A data error on `path`.
    pub fn data(path: impl Into<PathBuf>, reason: impl Into<String>) -> Self {
        LmError::Data { path: path.into(), reason: reason.into() }
    }
}
