//! `metarag serve-llm`: the configured chat model as an OpenAI-compatible endpoint.

use crate::app::{App, UserError};
use anyhow::{Context, Result};
use clap::Args as ClapArgs;
use metarag_core::Llm;
use std::process::ExitCode;

/// `metarag serve-llm`
#[derive(ClapArgs, Debug)]
pub struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8089")]
    pub addr: String,
    /// Installed model or GGUF file to serve instead of the configured one.
    #[arg(long)]
    pub model: Option<String>,
    /// Requests allowed to wait while one runs; beyond this the server answers 503.
    #[arg(long, default_value_t = 16)]
    pub queue: usize,
    /// Largest max_tokens a request may ask for.
    #[arg(long, default_value_t = 2048)]
    pub max_tokens: u32,
    /// Serve repeated calls from the call cache.
    #[arg(long)]
    pub cache: bool,
}

/// `metarag serve-llm`
pub async fn run(app: &App, args: Args) -> Result<ExitCode> {
    let handle = app.llm(args.cache, args.model.as_deref()).await?;
    let limits = metarag_server::ServeLimits {
        concurrent: 1,
        queue: args.queue,
        max_tokens: args.max_tokens,
    };
    let listener = tokio::net::TcpListener::bind(&args.addr)
        .await
        .map_err(|e| UserError(format!("cannot listen on {}: {e}", args.addr)))?;
    let addr = listener.local_addr()?;
    eprintln!(
        "serving {} at http://{addr}/v1 (OpenAI-compatible: /v1/chat/completions, /v1/models); Ctrl-C stops",
        Llm::model_id(&handle.llm)
    );
    let router = metarag_server::openai_router(handle.llm.clone(), limits);
    metarag_server::serve(listener, router, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await
    .context("serving")?;
    let total = handle.ledger.total();
    eprintln!(
        "served {} calls: {} prompt tokens ({} reused), {} generated",
        total.calls, total.prompt_tokens, total.cached_prompt_tokens, total.completion_tokens
    );
    Ok(ExitCode::SUCCESS)
}
