//! Errors of the server crate, and the JSON error body every endpoint answers with.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use metarag_core::Fault;
use serde::Serialize;

/// Why a request failed: an HTTP status, a stable machine-readable code, and a message a
/// person can act on.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{code}: {message}")]
pub struct Error {
    /// The HTTP status.
    pub status: StatusCode,
    /// A stable code (`bad_request`, `not_found`, `too_many_requests`, ...).
    pub code: &'static str,
    /// What went wrong and, where there is one, the fix.
    pub message: String,
    /// Seconds after which a retry may succeed (429 and 503).
    pub retry_after: Option<u64>,
}

/// Result alias for [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Error {
            status,
            code,
            message: message.into(),
            retry_after: None,
        }
    }

    /// 400: the request is malformed or names something invalid.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    /// 401: a key is required and none, or a wrong one, was sent.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }

    /// 403: the key is valid but may not do this (read or write that collection, manage
    /// keys and collections).
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "forbidden", message)
    }

    /// 404: no such resource.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    /// 409: the request is valid but the state does not allow it (an empty index).
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, "conflict", message)
    }

    /// 413: the upload is larger than the configured limit.
    pub fn too_large(message: impl Into<String>) -> Self {
        Self::new(StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large", message)
    }

    /// 429: too many requests are waiting; retry after `seconds`.
    pub fn busy(message: impl Into<String>, seconds: u64) -> Self {
        Error {
            retry_after: Some(seconds.max(1)),
            ..Self::new(StatusCode::TOO_MANY_REQUESTS, "too_many_requests", message)
        }
    }

    /// 503: the request took longer than the server allows.
    pub fn timeout(message: impl Into<String>) -> Self {
        Error {
            retry_after: Some(5),
            ..Self::new(StatusCode::SERVICE_UNAVAILABLE, "timeout", message)
        }
    }

    /// 500: a failure inside metarag.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }

    /// A lower crate's error: the user's fault is a 400, ours a 500.
    pub fn from_fault(fault: Fault, message: impl Into<String>) -> Self {
        match fault {
            Fault::User => Self::bad_request(message),
            Fault::Internal => Self::internal(message),
        }
    }

    /// The JSON body.
    pub fn body(&self) -> ErrorBody {
        ErrorBody {
            error: ErrorDetail {
                code: self.code.to_string(),
                message: self.message.clone(),
            },
        }
    }
}

/// The body of every error response.
#[derive(Debug, Clone, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct ErrorBody {
    /// The error.
    pub error: ErrorDetail,
}

/// An error's code and message.
#[derive(Debug, Clone, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct ErrorDetail {
    /// Stable, machine-readable: `bad_request`, `unauthorized`, `not_found`, `conflict`,
    /// `payload_too_large`, `too_many_requests`, `timeout`, `internal`.
    pub code: String,
    /// What went wrong, for a person.
    pub message: String,
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        if self.status.is_server_error() && self.code == "internal" {
            tracing::error!(message = %self.message, "request failed");
        }
        let mut response = (self.status, axum::Json(self.body())).into_response();
        if let Some(s) = self.retry_after
            && let Ok(v) = HeaderValue::from_str(&s.to_string())
        {
            response.headers_mut().insert(header::RETRY_AFTER, v);
        }
        response
    }
}

macro_rules! from_crate_error {
    ($($t:ty),*) => {$(
        impl From<$t> for Error {
            fn from(e: $t) -> Self {
                Error::from_fault(e.fault(), e.to_string())
            }
        }
    )*};
}

from_crate_error!(
    metarag_core::Error,
    metarag_agent::Error,
    metarag_ingest::Error,
    metarag_index::Error,
    metarag_eval::Error
);
