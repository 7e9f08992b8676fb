//! Errors of the tokenizer: training, loading and decoding.

use std::path::PathBuf;

/// Everything that can go wrong when training, loading, saving or decoding with MGT.
#[derive(Debug, thiserror::Error)]
pub enum TokenizerError {
    /// The training corpus held no text at all.
    #[error("empty corpus: the training text contains no characters")]
    EmptyCorpus,
    /// The requested vocabulary cannot even hold the byte alphabet and the special tokens.
    #[error(
        "vocabulary size {requested} is too small: it must be at least {minimum} \
         (256 byte tokens + {specials} special/anchor tokens)"
    )]
    VocabTooSmall {
        /// The requested size.
        requested: usize,
        /// 256 + number of specials.
        minimum: usize,
        /// Number of special and anchor tokens.
        specials: usize,
    },
    /// A tokenizer file is not valid JSON or does not match the schema.
    #[error("tokenizer file {path}: not a valid MGT tokenizer JSON: {source}")]
    Json {
        /// The file (or `<string>`).
        path: PathBuf,
        /// The parse error (line and column included).
        source: serde_json::Error,
    },
    /// A tokenizer file parsed but its content is inconsistent.
    #[error("tokenizer file {path}: field `{field}`: {message}")]
    Invalid {
        /// The file (or `<string>`).
        path: PathBuf,
        /// The offending field.
        field: String,
        /// What is wrong and what was expected.
        message: String,
    },
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Writing a file atomically failed.
    #[error("writing {path}: {message}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        message: String,
    },
    /// A hunspell `.aff` file could not be parsed.
    #[error("affix file {path}, line {line}: {message}")]
    AffixFile {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// An id passed to `decode` is not in the vocabulary.
    #[error("token id {id} is not in the vocabulary (size {vocab_size})")]
    UnknownId {
        /// The id.
        id: u32,
        /// The vocabulary size.
        vocab_size: usize,
    },
    /// The decoded bytes are not valid UTF-8 (the ids cut a character in half).
    #[error("decoded bytes are not valid UTF-8 at byte {valid_up_to}: the ids split a character")]
    InvalidUtf8 {
        /// Length of the valid prefix.
        valid_up_to: usize,
    },
}

/// Result with [`TokenizerError`].
pub type Result<T> = std::result::Result<T, TokenizerError>;
