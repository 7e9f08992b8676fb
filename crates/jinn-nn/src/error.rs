//! Errors of the neural building blocks.

use thiserror::Error;

/// An invalid argument handed to a jinn-nn function (shape, size or configuration).
#[derive(Debug, Error, PartialEq, Eq)]
pub enum NnError {
    /// A configuration value is out of its valid range.
    #[error("invalid configuration `{field}`: {reason}")]
    InvalidConfig {
        /// The offending configuration field or argument.
        field: &'static str,
        /// What was expected.
        reason: String,
    },
    /// A tensor or array has the wrong shape or length.
    #[error("shape mismatch for `{what}`: expected {expected}, got {got}")]
    Shape {
        /// The offending tensor or argument.
        what: &'static str,
        /// The expected shape / length.
        expected: String,
        /// The shape / length received.
        got: String,
    },
}
