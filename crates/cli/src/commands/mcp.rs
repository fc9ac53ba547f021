//! `metarag mcp`: the MCP tools over stdio.

use crate::app::App;
use anyhow::Result;
use clap::Args as ClapArgs;
use std::process::ExitCode;

/// `metarag mcp`
#[derive(ClapArgs, Debug)]
pub struct Args {
    /// Chat model: an installed name or a .gguf file (default: `llm.model`).
    #[arg(long)]
    pub model: Option<String>,
    /// Replay and record calls in the LLM call cache.
    #[arg(long)]
    pub cache: bool,
}

/// `metarag mcp`: the MCP tools over stdin/stdout.
pub async fn run(app: &App, args: Args) -> Result<ExitCode> {
    let engine = app.engine(args.model.as_deref(), args.cache, None).await?;
    let service = metarag_server::Service::new(engine, app.config.raw.server.limits(), None);
    // stdout carries the protocol: everything else goes to stderr.
    eprintln!(
        "metarag MCP server on stdio (tools: search, ask, ingest, list_documents, get_document)"
    );
    metarag_server::mcp::serve_stdio(service).await?;
    Ok(ExitCode::SUCCESS)
}
