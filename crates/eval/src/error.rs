//! Errors of the eval crate.

use metarag_core::Fault;
use std::path::PathBuf;

/// Failures loading data sets or running an evaluation.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Filesystem failure.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A record that does not match the expected schema.
    #[error("{path}:{line}: {reason}")]
    Record {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// Retrieval failed.
    #[error(transparent)]
    Backend(#[from] metarag_core::Error),
    /// The run log (SQLite or Postgres) could not be opened, read or written.
    #[error("run log {at}: {reason}")]
    RunLog {
        /// The database file, or the Postgres URL without its password.
        at: String,
        /// What went wrong.
        reason: String,
    },
}

impl Error {
    /// Whose fault the error is.
    pub fn fault(&self) -> Fault {
        match self {
            Error::Backend(e) => e.fault(),
            Error::RunLog { .. } => Fault::Internal,
            _ => Fault::User,
        }
    }

    /// A filesystem failure on `path`.
    pub fn io(path: &std::path::Path, source: std::io::Error) -> Self {
        Error::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Result alias for [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
