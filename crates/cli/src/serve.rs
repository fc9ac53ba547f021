//! `metarag serve` (the REST + SSE API and the web page), `metarag keys` (its API keys)
//! and `metarag runs` (the run log every ask writes to).

use crate::app::{App, UserError};
use crate::output::{print_json, truncate};
use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use metarag_agent::Agent;
use metarag_eval::runs::{RunLog, RunQuery, Surface};
use metarag_retrieve::HybridRetriever;
use metarag_server::{Engine, KeyStore, Keys};
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

/// `metarag serve`
#[derive(Args, Debug)]
pub struct ServeArgs {
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

/// `metarag mcp`
#[derive(Args, Debug)]
pub struct McpArgs {
    /// Chat model: an installed name or a .gguf file (default: `llm.model`).
    #[arg(long)]
    pub model: Option<String>,
    /// Replay and record calls in the LLM call cache.
    #[arg(long)]
    pub cache: bool,
}

/// `metarag keys ...`
#[derive(Subcommand, Debug)]
pub enum KeysCommand {
    /// Create an API key; it is printed once and stored only as a hash.
    Add {
        /// What the key is for.
        name: String,
    },
    /// List keys (ids and names; never the keys).
    List,
    /// Remove a key by its id.
    Rm {
        /// The key's id (from `metarag keys list`).
        id: String,
    },
}

/// `metarag runs ...`
#[derive(Subcommand, Debug)]
pub enum RunsCommand {
    /// Recorded runs, newest first.
    List {
        /// Only this strategy.
        #[arg(long)]
        strategy: Option<String>,
        /// Only runs from cli, rest, mcp or bench.
        #[arg(long)]
        surface: Option<String>,
        /// At most this many.
        #[arg(long, default_value_t = 20)]
        limit: usize,
    },
    /// One run with its trace (`--json` for the whole record).
    Show {
        /// The run's id.
        id: String,
    },
    /// Per-strategy latency, calls, tokens and cost over every recorded run.
    Stats,
}

impl App {
    /// The run log of the data directory.
    pub fn run_log(&self) -> Result<RunLog> {
        Ok(RunLog::open(&self.config.runs_path())?)
    }

    /// `metarag serve`
    pub async fn serve(&self, args: ServeArgs) -> Result<ExitCode> {
        let addr_text = args
            .addr
            .unwrap_or_else(|| self.config.raw.server.addr.clone());
        let addr: SocketAddr = addr_text.parse().map_err(|_| {
            UserError(format!(
                "--addr `{addr_text}` is not an IP address and port, like 127.0.0.1:8080"
            ))
        })?;
        let keys = Keys::new(KeyStore::new(self.config.keys_path()))?;
        if !addr.ip().is_loopback() && !keys.any()? {
            return Err(UserError(format!(
                "listening on {addr} (beyond this machine) needs an API key: create one with `metarag keys add NAME`, then send it as `Authorization: Bearer KEY`"
            ))
            .into());
        }
        let engine = self.engine(args.model.as_deref(), args.cache).await?;
        let mut limits = self.config.raw.server.limits();
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

    /// What `serve` and `mcp` serve: the index, its embedder and chunker, the agent over
    /// the configured chat model, and the run log.
    pub async fn engine(&self, model: Option<&str>, cache: bool) -> Result<Engine> {
        let embedder = self.embedder()?;
        let index = Arc::new(self.open_index(&self.config.index_dir(), &embedder)?);
        let chunker = Arc::new(self.chunker(&embedder)?);
        let handle = self.llm(cache, model).await?;
        let retriever = Arc::new(HybridRetriever::new(
            embedder.clone(),
            index.clone(),
            self.config.retrieval(),
        ));
        let mut builder = Agent::builder(handle.llm.clone())
            .config(self.config.raw.agent.clone())
            .registry(self.registry()?)
            .retriever(retriever);
        if let Some(r) = self.reranker(handle.local.as_ref())? {
            builder = builder.reranker(r);
        }
        Ok(Engine {
            index,
            embedder,
            chunker,
            ingest: self.ingest_options(None, Vec::new(), Vec::new()),
            retrieval: self.config.retrieval(),
            agent: builder.build()?,
            runs: self.run_log()?,
            pricing: self.config.price(),
        })
    }

    /// `metarag mcp`: the MCP tools over stdin/stdout.
    pub async fn mcp(&self, args: McpArgs) -> Result<ExitCode> {
        let engine = self.engine(args.model.as_deref(), args.cache).await?;
        let service = metarag_server::Service::new(engine, self.config.raw.server.limits(), None);
        // stdout carries the protocol: everything else goes to stderr.
        eprintln!(
            "metarag MCP server on stdio (tools: search, ask, ingest, list_documents, get_document)"
        );
        metarag_server::mcp::serve_stdio(service).await?;
        Ok(ExitCode::SUCCESS)
    }

    /// `metarag keys ...`
    pub fn keys(&self, command: KeysCommand) -> Result<ExitCode> {
        let store = KeyStore::new(self.config.keys_path());
        match command {
            KeysCommand::Add { name } => {
                let (record, key) = store.add(&name)?;
                if self.json {
                    print_json(
                        &serde_json::json!({ "id": record.id, "name": record.name, "key": key }),
                    )?;
                } else {
                    println!("{key}");
                    eprintln!(
                        "key `{}` ({}) created; it is shown only now. Send it as `Authorization: Bearer KEY`.",
                        record.id, record.name
                    );
                }
            }
            KeysCommand::List => {
                let keys = store.list()?;
                if self.json {
                    print_json(&keys)?;
                } else if keys.is_empty() {
                    eprintln!("no keys; `metarag keys add NAME` creates one");
                } else {
                    for k in keys {
                        println!("{}\t{}", k.id, k.name);
                    }
                }
            }
            KeysCommand::Rm { id } => {
                if !store.remove(&id)? {
                    return Err(UserError(format!(
                        "no key with id `{id}` (see `metarag keys list`)"
                    ))
                    .into());
                }
                if !self.json {
                    println!("removed key {id}");
                }
            }
        }
        Ok(ExitCode::SUCCESS)
    }

    /// `metarag runs ...`
    pub fn runs(&self, command: RunsCommand) -> Result<ExitCode> {
        let log = self.run_log()?;
        match command {
            RunsCommand::List {
                strategy,
                surface,
                limit,
            } => {
                let surface = surface
                    .map(|s| {
                        serde_json::from_value::<Surface>(serde_json::Value::String(s.clone()))
                            .map_err(|_| {
                                UserError(format!(
                                    "--surface `{s}`: expected cli, rest, mcp or bench"
                                ))
                            })
                    })
                    .transpose()?;
                let runs = log.list(&RunQuery {
                    strategy,
                    surface,
                    limit,
                    offset: 0,
                })?;
                if self.json {
                    print_json(&runs)?;
                } else if runs.is_empty() {
                    eprintln!("no runs recorded in {}", log.path().display());
                } else {
                    for r in runs {
                        println!(
                            "{}  {:<5} {:<10} {:>7.1}s {:>3} calls  {}  -> {}",
                            r.id,
                            r.surface.as_str(),
                            r.strategy,
                            r.wall_ms / 1e3,
                            r.llm_calls,
                            truncate(&r.question, 50),
                            truncate(&r.short_answer, 30)
                        );
                    }
                }
            }
            RunsCommand::Show { id } => {
                let run = log.get(&id)?.ok_or_else(|| {
                    UserError(format!("no run with id `{id}` (see `metarag runs list`)"))
                })?;
                if self.json {
                    print_json(&run)?;
                } else {
                    crate::ask::print_answer(&run.trace);
                    crate::ask::print_trace(&run.trace);
                }
            }
            RunsCommand::Stats => {
                let stats = log.stats()?;
                if self.json {
                    print_json(&stats)?;
                } else {
                    println!(
                        "{:<12} {:>6} {:>6} {:>9} {:>9} {:>7} {:>9} {:>9}",
                        "strategy", "runs", "failed", "p50 s", "p95 s", "calls", "tokens", "cost $"
                    );
                    for s in stats {
                        println!(
                            "{:<12} {:>6} {:>6} {:>9.1} {:>9.1} {:>7.1} {:>9.0} {:>9.4}",
                            s.strategy,
                            s.runs,
                            s.failed,
                            s.p50_ms / 1e3,
                            s.p95_ms / 1e3,
                            s.mean_calls,
                            s.mean_tokens,
                            s.cost_usd
                        );
                    }
                }
            }
        }
        Ok(ExitCode::SUCCESS)
    }
}
