//! Errors of the Postgres store.

use metarag_core::Fault;

/// Everything that can go wrong connecting to, migrating, writing or searching the
/// Postgres store.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The connection URL does not parse.
    #[error("store.url: {0}")]
    Url(String),
    /// The database could not be reached (refused, authentication, TLS, DNS).
    #[error("cannot connect to Postgres at {url}: {reason}")]
    Connect {
        /// The URL without its password.
        url: String,
        /// What the driver said.
        reason: String,
    },
    /// The pgvector extension is not installed in the server.
    #[error(
        "the Postgres server has no pgvector extension (`CREATE EXTENSION vector` failed: {0}); install pgvector 0.5 or newer, or use a managed Postgres that offers it"
    )]
    NoPgvector(String),
    /// The database was set up for another embedding model.
    #[error(
        "the database holds vectors of embedder `{recorded}` ({recorded_dim}-d) but `{requested}` ({requested_dim}-d) was configured; use the same model, or another database"
    )]
    EmbedderMismatch {
        /// Model recorded in the database.
        recorded: String,
        /// Its dimension.
        recorded_dim: usize,
        /// Model asked for now.
        requested: String,
        /// Its dimension.
        requested_dim: usize,
    },
    /// The database's schema is newer than this build knows.
    #[error(
        "the database schema is version {found}, newer than this metarag's {known}: upgrade metarag"
    )]
    SchemaTooNew {
        /// The version in the database.
        found: i32,
        /// The newest this build applies.
        known: i32,
    },
    /// A chunk's embedding has the wrong length.
    #[error(
        "document {doc}, chunk {chunk}: embedding has {got} dimensions, the store expects {expected}"
    )]
    Dimension {
        /// The document.
        doc: String,
        /// The chunk ordinal.
        chunk: usize,
        /// Store dimension.
        expected: usize,
        /// Vector length given.
        got: usize,
    },
    /// A query vector has the wrong length.
    #[error("query vector has {got} dimensions, the store expects {expected}")]
    QueryDimension {
        /// Store dimension.
        expected: usize,
        /// Vector length given.
        got: usize,
    },
    /// A query or statement failed.
    #[error("postgres: {0}")]
    Db(#[from] tokio_postgres::Error),
    /// No connection could be taken from the pool.
    #[error("postgres connection pool: {0}")]
    Pool(String),
    /// TLS could not be set up: an unreadable or empty CA file, or no usable protocol.
    #[error("store TLS: {0}")]
    Tls(String),
    /// A search filter the store cannot apply (a metadata value that is a list).
    #[error(transparent)]
    Filter(metarag_core::Error),
    /// Stored data that does not parse.
    #[error("corrupt store data: {0}")]
    Corrupt(String),
    /// A change to collections the store refuses: a document id stored in another
    /// collection, the default collection renamed or deleted, a name taken or unknown.
    #[error("{0}")]
    Collection(String),
}

impl Error {
    /// Whose fault the error is.
    pub fn fault(&self) -> Fault {
        match self {
            Error::Url(_)
            | Error::Connect { .. }
            | Error::NoPgvector(_)
            | Error::EmbedderMismatch { .. }
            | Error::SchemaTooNew { .. }
            | Error::Dimension { .. }
            | Error::QueryDimension { .. }
            | Error::Tls(_)
            | Error::Filter(_)
            | Error::Collection(_) => Fault::User,
            Error::Db(_) | Error::Pool(_) | Error::Corrupt(_) => Fault::Internal,
        }
    }
}

impl From<deadpool_postgres::PoolError> for Error {
    fn from(e: deadpool_postgres::PoolError) -> Self {
        match e {
            deadpool_postgres::PoolError::Backend(e) => Error::Db(e),
            other => Error::Pool(other.to_string()),
        }
    }
}

impl From<Error> for metarag_core::Error {
    fn from(e: Error) -> Self {
        let fault = e.fault();
        metarag_core::Error::backend("postgres store", fault, e)
    }
}

/// Result alias for [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
