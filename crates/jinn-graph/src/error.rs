//! The error type of `jinn-graph`: every variant names the file, line, name or field at fault.

use std::path::PathBuf;

/// Result alias for this crate.
pub type Result<T, E = GraphError> = std::result::Result<T, E>;

/// Everything that can go wrong loading graphs, building models and answering queries.
#[derive(Debug, thiserror::Error)]
pub enum GraphError {
    /// A triple file line that is not `head<TAB>relation<TAB>tail`.
    #[error("{path}:{line}: {reason}")]
    Parse {
        /// The triple file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What was wrong and what was expected.
        reason: String,
    },
    /// An entity or relation name that the vocabulary does not hold.
    #[error("{context}: unknown {what} `{name}` ({known} {what} names are known)")]
    UnknownName {
        /// `entity` or `relation`.
        what: &'static str,
        /// The name looked up.
        name: String,
        /// Where the name came from (file:line, a flag).
        context: String,
        /// Vocabulary size.
        known: usize,
    },
    /// A bad setting (config field, query argument).
    #[error("invalid `{field}`: {reason}")]
    Config {
        /// Dotted name of the field or flag.
        field: String,
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
}

impl GraphError {
    /// A [`GraphError::Config`] for `field`.
    pub fn config(field: impl Into<String>, reason: impl Into<String>) -> Self {
        GraphError::Config { field: field.into(), reason: reason.into() }
    }
}

impl From<GraphError> for jinn_train::TrainError {
    fn from(e: GraphError) -> Self {
        match e {
            GraphError::Io { path, source } => jinn_train::TrainError::io(path, source),
            GraphError::Config { field, reason } => jinn_train::TrainError::config(field, reason),
            other => jinn_train::TrainError::config("data", other.to_string()),
        }
    }
}
