//! The agent's error type.

use metarag_core::Fault;

/// Errors of the agent layer. A run itself does not fail with these: a node that fails
/// ends the run with a `Failed` stop reason in its trace. These are for setting a run up.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A configuration value is out of range; names the field.
    #[error("invalid agent setting `{field}`: {reason}")]
    Config {
        /// The field at fault.
        field: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A context file (gold paragraphs) could not be read or parsed.
    #[error("{path}: {reason}")]
    Context {
        /// The file.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// The request cannot run as asked (empty question, unknown strategy, no retriever).
    #[error("{0}")]
    Request(String),
    /// An error from a lower layer.
    #[error(transparent)]
    Core(#[from] metarag_core::Error),
}

impl Error {
    /// Whose fault the error is.
    pub fn fault(&self) -> Fault {
        match self {
            Error::Config { .. } | Error::Context { .. } | Error::Request(_) => Fault::User,
            Error::Core(e) => e.fault(),
        }
    }

    pub(crate) fn config(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::Config {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

impl metarag_core::HasFault for Error {
    fn fault(&self) -> Fault {
        Error::fault(self)
    }
}

/// Result with the agent's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
