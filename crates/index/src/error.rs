//! Errors of the index crate.

use metarag_core::Fault;
use std::path::{Path, PathBuf};

/// Everything that can go wrong opening, writing or searching an embedded index.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The index was built with another embedding model.
    #[error(
        "the index was built with embedder `{recorded}` ({recorded_dim}-d) but `{requested}` ({requested_dim}-d) was configured; use the same model, or a new data directory"
    )]
    EmbedderMismatch {
        /// Model recorded in the index.
        recorded: String,
        /// Its dimension.
        recorded_dim: usize,
        /// Model asked for now.
        requested: String,
        /// Its dimension.
        requested_dim: usize,
    },
    /// A chunk's embedding has the wrong length.
    #[error(
        "document {doc}, chunk {chunk}: embedding has {got} dimensions, index expects {expected}"
    )]
    Dimension {
        /// The document.
        doc: String,
        /// The chunk ordinal.
        chunk: usize,
        /// Index dimension.
        expected: usize,
        /// Vector length given.
        got: usize,
    },
    /// A query vector has the wrong length.
    #[error("query vector has {got} dimensions, index expects {expected}")]
    QueryDimension {
        /// Index dimension.
        expected: usize,
        /// Vector length given.
        got: usize,
    },
    /// Filesystem failure.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// SQLite failure.
    #[error("index database: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// tantivy failure.
    #[error("BM25 index: {0}")]
    Tantivy(#[from] tantivy::TantivyError),
    /// usearch failure.
    #[error("vector index: {0}")]
    Usearch(String),
    /// Stored data that does not parse: the index files were damaged or written by a newer
    /// version.
    #[error("corrupt index data: {0}")]
    Corrupt(String),
    /// A lock was poisoned by a panic in another thread.
    #[error("index lock poisoned by an earlier panic")]
    Poisoned,
    /// Another process has the index open for writing.
    #[error(
        "the index at {dir} is open for writing by another metarag process{}: make changes through it (`metarag serve`: POST /v1/ingest, DELETE /v1/documents/ID, or the web page) or stop it first; searching and asking still work meanwhile",
        pid.map(|p| format!(" (pid {p})")).unwrap_or_default()
    )]
    Busy {
        /// The index directory.
        dir: PathBuf,
        /// The holder's process id, if it wrote one.
        pid: Option<u32>,
    },
    /// A search filter the index cannot apply (a metadata value that is a list); the
    /// message names the field.
    #[error("{0}")]
    Filter(String),
    /// The name embedder of the entity-linking cascade failed or returned vectors of
    /// another dimension.
    #[error("embedding names for entity linking: {0}")]
    NameEmbedding(String),
    /// A change to collections the index refuses: a document id stored in another
    /// collection, the default collection renamed or deleted, a name taken or unknown.
    #[error("{0}")]
    Collection(String),
    /// A write to an index opened read-only.
    #[error("the index at {0} is open read-only (another process is writing to it)")]
    ReadOnly(PathBuf),
}

impl Error {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        Error::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    /// Whose fault the error is.
    pub fn fault(&self) -> Fault {
        match self {
            Error::EmbedderMismatch { .. }
            | Error::Dimension { .. }
            | Error::QueryDimension { .. }
            | Error::Busy { .. }
            | Error::Filter(_)
            | Error::Collection(_)
            | Error::ReadOnly(_) => Fault::User,
            Error::Io { source, .. } if source.kind() == std::io::ErrorKind::PermissionDenied => {
                Fault::User
            }
            _ => Fault::Internal,
        }
    }
}

impl From<Error> for metarag_core::Error {
    fn from(e: Error) -> Self {
        let fault = e.fault();
        metarag_core::Error::backend("embedded index", fault, e)
    }
}

/// Result alias for [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
