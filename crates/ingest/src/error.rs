//! Errors of the ingest crate.

use metarag_core::Fault;
use std::path::PathBuf;

/// Why a file (or a line of one) could not be ingested, or why an ingest run stopped.
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
    /// The file is larger than the configured limit; it is refused, never truncated.
    #[error(
        "{path}: {size} bytes exceeds the ingest limit of {limit} bytes (raise ingest.max_file_bytes)"
    )]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// A document's extracted text is larger than any real document's: a decompression or
    /// parser blow-up, refused before it is chunked and embedded.
    #[error(
        "{path}: {size} bytes of extracted text exceed the limit of {limit} bytes per document"
    )]
    TextTooLarge {
        /// The file (or `file:line`).
        path: String,
        /// The text's size.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// An uploaded file's name is not a plain file name.
    #[error("file name `{name}` is refused: {reason}")]
    BadName {
        /// The name as sent (cut to 80 characters).
        name: String,
        /// Why.
        reason: String,
    },
    /// No parser for this kind of file.
    #[error(
        "{path}: unsupported file type (known: pdf, docx, html, htm, md, markdown, txt, json, jsonl)"
    )]
    Unsupported {
        /// The file.
        path: PathBuf,
    },
    /// A parser rejected the file.
    #[error("{path}: not a valid {format} file: {reason}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The format it was read as.
        format: &'static str,
        /// The parser's message.
        reason: String,
    },
    /// An encrypted PDF that can't be read without its password.
    #[error("{path}: the PDF is encrypted; decrypt it first (e.g. `qpdf --decrypt`)")]
    Encrypted {
        /// The file.
        path: PathBuf,
    },
    /// A bad record in a JSON or JSONL file.
    #[error("{path}:{line}: {reason}")]
    Record {
        /// The file.
        path: PathBuf,
        /// 1-based line (JSONL) or element index + 1 (JSON array).
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// The document is stored in another collection than the one ingested into.
    #[error(
        "{path}: already stored in collection {held:?} (as {id}), not {wanted:?}; remove it there first (`metarag docs rm`)"
    )]
    OtherCollection {
        /// The file or record.
        path: String,
        /// Its document id.
        id: String,
        /// The collection holding it.
        held: String,
        /// The collection asked for.
        wanted: String,
    },
    /// The document has no text at all.
    #[error("{path}: no text could be extracted")]
    Empty {
        /// The file or record.
        path: String,
    },
    /// A bad include/exclude pattern.
    #[error("invalid glob `{pattern}`: {reason}")]
    Glob {
        /// The pattern.
        pattern: String,
        /// Why.
        reason: String,
    },
    /// Invalid chunking settings.
    #[error("invalid chunking settings: {0}")]
    Chunking(String),
    /// The tokenizer failed on a text.
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    /// A vector dump's vectors do not come from the index's embedding model.
    #[error(
        "{path}: the dump's vectors do not match the embedder `{embedder}` (mean cosine {cosine:.3} against {min} on re-embedded records): import it into an index built with the model that made them, or pass --trust-vectors"
    )]
    VectorsMismatch {
        /// The dump.
        path: PathBuf,
        /// The index's embedder.
        embedder: String,
        /// Mean cosine between re-embedded records and their dump vectors.
        cosine: f32,
        /// The least accepted.
        min: f32,
    },
    /// The thread that reads and chunks the inputs ahead of the embedder could not start
    /// or stopped without finishing (a panic); the run stops, batches already written stay.
    #[error("the ingest's reading thread {0}")]
    Reader(String),
    /// The child process that parses untrusted formats could not be started or answered
    /// nothing readable: a broken installation, not a bad file.
    #[error("the parser process `{program}` {reason}")]
    Worker {
        /// The program started.
        program: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// The embedder or the store failed; the run stops (already applied batches stay).
    #[error(transparent)]
    Backend(#[from] metarag_core::Error),
}

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// Whose fault the error is.
    pub fn fault(&self) -> Fault {
        match self {
            Error::Backend(e) => e.fault(),
            Error::Tokenizer(_) | Error::Reader(_) | Error::Worker { .. } => Fault::Internal,
            _ => Fault::User,
        }
    }
}

/// Result alias for [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
