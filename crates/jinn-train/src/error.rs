//! The one error type of `jinn-train`. Every variant names the field, file or checkpoint at
//! fault and what was expected, so a user can act on the message alone.

use std::path::PathBuf;

/// Result alias for this crate.
pub type Result<T, E = TrainError> = std::result::Result<T, E>;

/// Everything that can go wrong in the shared training machinery.
#[derive(Debug, thiserror::Error)]
pub enum TrainError {
    /// A bad configuration value (a schedule, optimiser or run setting).
    #[error("invalid config field `{field}`: {reason}")]
    Config {
        /// Dotted name of the field at fault (e.g. `train.lr.warmup_steps`).
        field: String,
        /// What was wrong and what was expected.
        reason: String,
    },
    /// A config file or override that could not be parsed.
    #[error("{source_name}: {reason}")]
    ConfigParse {
        /// The file or `--set` override being parsed.
        source_name: String,
        /// What was wrong and what was expected.
        reason: String,
    },
    /// An operating-system error on a named file.
    #[error("{path}: {source}")]
    Io {
        /// File or directory being accessed.
        path: PathBuf,
        /// Underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A checkpoint that is incomplete, corrupted or does not belong to this run.
    #[error("checkpoint {path}: {reason}")]
    Checkpoint {
        /// The checkpoint directory (or file inside it).
        path: PathBuf,
        /// What was wrong and what was expected.
        reason: String,
    },
    /// A file in a known format (metrics log, event file) whose bytes are wrong.
    #[error("{path}: corrupt file at byte offset {offset}: {reason}")]
    Format {
        /// File being decoded.
        path: PathBuf,
        /// Byte offset where decoding failed.
        offset: u64,
        /// What was wrong and what was expected.
        reason: String,
    },
    /// A data-parallel run that cannot go on: ranks disagree, a rank stopped answering, or
    /// the process group reported an error ([`crate::distributed`]).
    #[error("data-parallel run: {reason}")]
    Distributed {
        /// What went wrong and, where known, which rank.
        reason: String,
    },
    /// An error from the data layer (atomic writes, loader positions).
    #[error(transparent)]
    Data(#[from] jinn_data::DataError),
}

impl TrainError {
    /// A [`TrainError::Config`] for `field`.
    pub fn config(field: impl Into<String>, reason: impl Into<String>) -> Self {
        TrainError::Config { field: field.into(), reason: reason.into() }
    }

    /// A [`TrainError::Io`] on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        TrainError::Io { path: path.into(), source }
    }

    /// A [`TrainError::Distributed`] saying `reason`.
    pub fn distributed(reason: impl Into<String>) -> Self {
        TrainError::Distributed { reason: reason.into() }
    }

    /// A [`TrainError::Checkpoint`] for `path`.
    pub fn checkpoint(path: impl Into<PathBuf>, reason: impl Into<String>) -> Self {
        TrainError::Checkpoint { path: path.into(), reason: reason.into() }
    }
}
