//! # metarag-server
//!
//! metarag's HTTP surfaces. For now: [`openai::router`], an OpenAI-compatible
//! `/v1/chat/completions` (with SSE streaming and `response_format: json_schema`) and
//! `/v1/models` over any [`metarag_core::DynLlm`], which `metarag serve-llm` uses to share
//! one embedded model between processes. The REST + SSE API of the agent comes with it.

pub mod openai;

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
