//! The one error type of `jinn-data`. Every variant names the file (or field) at fault and
//! what was expected, so a user can act on the message alone.

use std::path::PathBuf;

/// Result alias for this crate.
pub type Result<T, E = DataError> = std::result::Result<T, E>;

/// Everything that can go wrong while reading, writing or generating episode data.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// An operating-system error on a named file.
    #[error("{path}: {source}")]
    Io {
        /// File or directory being accessed.
        path: PathBuf,
        /// Underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A file whose bytes do not follow the expected container format.
    #[error("{path}: corrupt or unsupported file at byte offset {offset}: {reason}")]
    Format {
        /// File being decoded.
        path: PathBuf,
        /// Byte offset in the file where decoding failed.
        offset: u64,
        /// What was wrong and what was expected.
        reason: String,
    },
    /// A record payload (pickle) that could not be decoded.
    #[error("{path}: record {index}: {reason}")]
    Record {
        /// File holding the record.
        path: PathBuf,
        /// Index of the record in that file.
        index: u64,
        /// What was wrong and what was expected.
        reason: String,
    },
    /// A pickle stream that is malformed or uses something outside the supported subset.
    #[error("pickle: byte offset {offset}: {reason}")]
    Pickle {
        /// Offset in the pickle stream.
        offset: usize,
        /// What was wrong and what was expected.
        reason: String,
    },
    /// A bad argument, flag or configuration value.
    #[error("invalid {what}: {reason}")]
    Invalid {
        /// The flag, field or argument at fault (e.g. `--seq-len`).
        what: String,
        /// What was expected.
        reason: String,
    },
    /// An external tool (ffmpeg) missing or failing.
    #[error("{tool}: {reason}")]
    Tool {
        /// Program name.
        tool: String,
        /// What happened and how to fix it.
        reason: String,
    },
}

impl DataError {
    /// Wrap an I/O error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        DataError::Io { path: path.into(), source }
    }

    /// A format error at `offset` in `path`.
    pub fn format(path: impl Into<PathBuf>, offset: u64, reason: impl Into<String>) -> Self {
        DataError::Format { path: path.into(), offset, reason: reason.into() }
    }

    /// An invalid flag/field/argument.
    pub fn invalid(what: impl Into<String>, reason: impl Into<String>) -> Self {
        DataError::Invalid { what: what.into(), reason: reason.into() }
    }
}
