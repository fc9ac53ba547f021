//! `metarag serve`: the REST + SSE API, its OpenAPI document and the web page.

use crate::app::{App, UserError};
use anyhow::{Context, Result};
use clap::Args as ClapArgs;
use metarag_server::Keys;
use std::net::SocketAddr;
use std::process::ExitCode;

/// `metarag serve`
#[derive(ClapArgs, Debug)]
pub struct Args {
    /// Address to listen on (default: `server.addr`, 127.0.0.1:8080). Beyond loopback an
    /// API key must exist (`metarag keys add NAME`).
    #[arg(long)]
    pub addr: Option<String>,
    /// Chat model: an installed name or a .gguf file (default: `llm.model`).
    #[arg(long)]
    pub model: Option<String>,
    /// Replay and record calls in the LLM call cache.
    #[arg(long)]
    pub cache: bool,
}

/// `metarag serve`
pub async fn run(app: &App, args: Args) -> Result<ExitCode> {
    let addr_text = args
        .addr
        .unwrap_or_else(|| app.config.raw.server.addr.clone());
    let addr: SocketAddr = addr_text.parse().map_err(|_| {
        UserError(format!(
            "--addr `{addr_text}` is not an IP address and port, like 127.0.0.1:8080"
        ))
    })?;
    // Over Postgres one pool serves the store, the run log and the keys.
    let db = app.database().await?;
    let keys = Keys::new(app.key_store(db.as_ref())).await?;
    if !addr.ip().is_loopback() && !keys.any().await? {
        return Err(UserError(format!(
            "listening on {addr} (beyond this machine) needs an API key: create one with `metarag keys add NAME`, then send it as `Authorization: Bearer KEY`"
        ))
        .into());
    }
    let engine = app.engine(args.model.as_deref(), args.cache, db).await?;
    let mut limits = app.config.raw.server.limits();
    if !addr.ip().is_loopback() {
        // Beyond loopback every request carries a key, which DNS rebinding cannot
        // supply: /mcp need not also pin the Host header.
        limits.mcp_allowed_hosts = Some(Vec::new());
    }
    let router = metarag_server::router(engine, limits, Some(keys));
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| UserError(format!("cannot listen on {addr}: {e}")))?;
    let local = listener.local_addr()?;
    eprintln!(
        "metarag at http://{local}/ (API: /v1, docs: /docs, OpenAPI: /openapi.json); Ctrl-C stops"
    );
    metarag_server::serve(listener, router, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await
    .context("serving")?;
    Ok(ExitCode::SUCCESS)
}
