//! # metarag-server
//!
//! metarag's HTTP surfaces:
//!
//! - [`api::router`]: the service `metarag serve` runs. REST under `/v1` (ingest uploads
//!   and corpus records, documents, search, ask, ask with server-sent progress and
//!   streamed answer text, the run log, health, Prometheus metrics), the OpenAPI 3.1
//!   document at `/openapi.json` ([`openapi`]), a docs page at `/docs` and the web page at
//!   `/`, both embedded in the binary. API keys ([`auth`]) and bounds on uploads, time and
//!   concurrent asks ([`api::Limits`]) come with it.
//! - [`mcp`]: the same operations as MCP tools (`search`, `ask`, `ingest`,
//!   `list_documents`, `get_document`) over stdio (`metarag mcp`) and streamable HTTP at
//!   `/mcp`.
//! - [`openai::router`]: an OpenAI-compatible `/v1/chat/completions` (with SSE streaming
//!   and `response_format: json_schema`) and `/v1/models` over any
//!   [`metarag_core::DynLlm`], which `metarag serve-llm` uses to share one embedded model
//!   between processes.

pub mod api;
pub mod auth;
mod error;
pub mod mcp;
pub mod metrics;
pub mod openai;
pub mod openapi;
pub mod stream;

pub use api::{Engine, Limits, Service, router, router_for};
pub use auth::{Access, KeyRecord, KeyScope, KeyStore, Keys};
pub use error::{Error, ErrorBody, ErrorDetail, Result};
pub use openai::{ServeLimits, router as openai_router};

/// Serves `router` on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: axum::Router,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await
}
