//! The error type shared by the traits in this crate.

use std::fmt;

/// Whose fault an error is: decides the exit code of the CLI and the HTTP status of the
/// server, and whether the message should tell the user to fix their input or report a bug.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fault {
    /// Bad input, a missing file, a wrong setting: the user can fix it.
    User,
    /// A failure inside metarag or its engines: a bug or an environment problem.
    Internal,
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Fault::User => "user error",
            Fault::Internal => "internal error",
        })
    }
}

/// Every crate's error says whose fault it is; the CLI maps that to its exit code and the
/// server to an HTTP status without knowing the crate the error came from.
pub trait HasFault: std::error::Error + Send + Sync + 'static {
    /// Whose fault this error is.
    fn fault(&self) -> Fault;
}

impl HasFault for Error {
    fn fault(&self) -> Fault {
        Error::fault(self)
    }
}

/// Errors returned through the shared traits. Backends convert their own error enums into
/// [`Error::Backend`], keeping the original as the source and stating whose fault it is.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The caller passed something invalid; the message names the field.
    #[error("invalid {field}: {reason}")]
    Invalid {
        /// The argument or field at fault.
        field: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A document or chunk that does not exist.
    #[error("{what} not found: {id}")]
    NotFound {
        /// The kind of thing looked for ("document", "chunk").
        what: &'static str,
        /// The id that was asked for.
        id: String,
    },
    /// A model's reply did not have the required shape (JSON that does not parse or does
    /// not match the schema). Callers fall back from this one (a heuristic, a retry).
    #[error("model output is not valid: {reason}")]
    InvalidOutput {
        /// What is wrong with it.
        reason: String,
        /// The reply as the model wrote it.
        raw: String,
    },
    /// The prompt plus the tokens to generate do not fit the model's context window. A
    /// strategy can react (fewer sources, shorter history) instead of failing.
    #[error(
        "the prompt takes {prompt_tokens} tokens and up to {max_tokens} may be generated, but the context window is {context} tokens"
    )]
    ContextOverflow {
        /// Prompt tokens.
        prompt_tokens: usize,
        /// Tokens asked to generate.
        max_tokens: usize,
        /// The context window.
        context: usize,
    },
    /// The model server refused the call for now (HTTP 429 after the backend's own
    /// retries). A caller may wait `retry_after` and try again.
    #[error("rate limited by {endpoint}{}", retry_after.map(|d| format!(" (retry after {d:?})")).unwrap_or_default())]
    RateLimited {
        /// The server.
        endpoint: String,
        /// How long the server asked to wait, when it said.
        retry_after: Option<std::time::Duration>,
    },
    /// A failure inside an implementation of one of the traits.
    #[error("{context}: {source}")]
    Backend {
        /// What was being done.
        context: String,
        /// Whose fault it is.
        fault: Fault,
        /// The backend's own error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl Error {
    /// Whose fault this error is.
    pub fn fault(&self) -> Fault {
        match self {
            Error::Invalid { .. } | Error::NotFound { .. } => Fault::User,
            // The user chose the context size and the evidence budget.
            Error::ContextOverflow { .. } => Fault::User,
            Error::InvalidOutput { .. } | Error::RateLimited { .. } => Fault::Internal,
            Error::Backend { fault, .. } => *fault,
        }
    }

    /// Shorthand for [`Error::Invalid`].
    pub fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::Invalid {
            field: field.into(),
            reason: reason.into(),
        }
    }

    /// Wraps a backend error with context and its fault.
    pub fn backend(
        context: impl Into<String>,
        fault: Fault,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        Error::Backend {
            context: context.into(),
            fault,
            source: source.into(),
        }
    }
}

/// Result alias for [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
