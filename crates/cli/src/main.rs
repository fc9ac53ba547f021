//! # metarag
//!
//! The command-line front end: `ingest`, `docs`, `search`, `ask`, `serve` (REST + SSE API
//! and web page), `keys`, `runs`, `chat`, `serve-llm`, `models`, `cache`, `bench` and
//! `config`.
//! Every command that prints something a script would read accepts `--json`.
//!
//! Exit codes: 0 success; 1 internal error (a bug or a broken environment); 2 user error
//! (bad arguments, input or configuration); 3 finished, but some inputs failed (ingest).

mod app;
mod commands;
mod config;
mod measure;
mod output;

use anyhow::Result;
use clap::{Parser, Subcommand};
use commands::{
    ask, audit, bench, cache, chat, collections, compact, context, docs, graph, import, ingest,
    keys, mcp, migrate, models, runs, search, serve, serve_llm, strategies, tree,
};
use metarag_core::Fault;
use std::path::PathBuf;
use std::process::ExitCode;

/// Agentic retrieval-augmented generation that knows when its answer is weak.
#[derive(Parser, Debug)]
#[command(name = "metarag", version, about)]
struct Cli {
    /// Configuration file (default: ./metarag.toml, then $METARAG_HOME/metarag.toml).
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Print machine-readable JSON instead of text.
    #[arg(long, global = true)]
    json: bool,
    /// More logging on stderr (-v info, -vv debug); RUST_LOG overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Ingest files and directories (PDF, DOCX, HTML, Markdown, text, JSON/JSONL).
    Ingest(ingest::Args),
    /// Import a JSON/JSONL vector dump (`{id, text, embedding, metadata}`), keeping its
    /// vectors after checking they come from the index's embedding model.
    Import(import::Args),
    /// Copy the embedded index (documents, chunks and vectors, not embedded again) into a
    /// Postgres store with pgvector.
    Migrate(migrate::Args),
    /// Route a question to the memories its intents call for and print the context found,
    /// without generating an answer (for a generator elsewhere).
    Context(context::Args),
    /// The audit memory: documents added, updated and removed, by time and document.
    Audit(audit::Args),
    /// List, create, rename or delete collections (the bodies of documents searches,
    /// asks and API keys are scoped to).
    Collections {
        #[command(subcommand)]
        command: collections::Command,
    },
    /// List, show or remove ingested documents.
    Docs {
        #[command(subcommand)]
        command: docs::Command,
    },
    /// Merge the embedded index's BM25 segments into one (after a large ingest: each search
    /// then reads one segment instead of many).
    Compact,
    /// Search the index.
    Search(search::Args),
    /// Answer a question over the index (or given paragraphs) with a strategy; prints the
    /// answer with numbered sources, or the whole trace.
    Ask(ask::Args),
    /// Print a strategy's graph (Mermaid).
    Graph(graph::Args),
    /// Show a saved `mcts` search tree: its best path, Mermaid, SVG.
    Tree(tree::Args),
    /// List the registered strategies.
    Strategies(strategies::Args),
    /// Send one message to the configured chat model and stream its reply.
    Chat(chat::Args),
    /// Serve the REST + SSE API, its OpenAPI document and the web page
    /// (`metarag serve`, then open http://127.0.0.1:8080/).
    Serve(serve::Args),
    /// Serve the MCP tools (search, ask, ingest, list_documents, get_document) over
    /// stdio, for an MCP client to launch.
    Mcp(mcp::Args),
    /// Create, list and remove the API keys of `metarag serve`.
    Keys {
        #[command(subcommand)]
        command: keys::Command,
    },
    /// List, show and summarise recorded runs (every ask from the CLI, the API or a
    /// benchmark).
    Runs {
        #[command(subcommand)]
        command: runs::Command,
    },
    /// Serve the configured chat model as an OpenAI-compatible endpoint.
    ServeLlm(serve_llm::Args),
    /// Inspect or clear the LLM call cache.
    Cache {
        #[command(subcommand)]
        command: cache::Command,
    },
    /// Fetch, add and list local models.
    Models {
        #[command(subcommand)]
        command: models::Command,
    },
    /// Benchmarks: `bench --dataset hotpotqa --mode gold --strategy standard,metarag` runs
    /// the QA benchmark; `bench report RUN.json` reports it; `bench retrieval|llm|rerank`.
    Bench(Box<bench::Args>),
    /// Print the effective configuration.
    Config,
    /// Parse the files sent on standard input, one reply line each on standard output: the
    /// child process `ingest` runs the PDF, DOCX and HTML parsers in (`ingest.isolate_parsers`).
    #[command(hide = true)]
    ParseWorker,
}

// mimalloc keeps freed pages for reuse where glibc's malloc returns large blocks to the
// kernel: the embedder's per-batch buffers were costing ~10% of ingest in page faults.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Command::ParseWorker = cli.command {
        // Before any runtime or logging: the child should hold as little as possible
        // under its memory limit, and its standard streams are the protocol.
        metarag_ingest::parse::quiet_parser_panics();
        return metarag_ingest::parse::worker::serve_stdio();
    }
    init_tracing(cli.verbose);
    metarag_ingest::parse::quiet_parser_panics();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(match fault_of(&e) {
                Fault::User => 2,
                Fault::Internal => 1,
            })
        }
    }
}

fn init_tracing(verbose: u8) {
    let default = match verbose {
        // lopdf warns about text it cannot decode, which pdf-extract then reads, or the
        // file gets its own error: noise between the per-file lines.
        0 => "warn,llama-cpp-2=error,lopdf=error",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}

/// Whose fault an error is, from the first typed error in its chain.
fn fault_of(e: &anyhow::Error) -> Fault {
    for cause in e.chain() {
        if let Some(e) = cause.downcast_ref::<metarag_core::Error>() {
            return e.fault();
        }
        if let Some(e) = cause.downcast_ref::<metarag_index::Error>() {
            return e.fault();
        }
        if let Some(e) = cause.downcast_ref::<metarag_models::Error>() {
            return e.fault();
        }
        if let Some(e) = cause.downcast_ref::<metarag_ingest::Error>() {
            return e.fault();
        }
        if let Some(e) = cause.downcast_ref::<metarag_eval::Error>() {
            return e.fault();
        }
        if let Some(e) = cause.downcast_ref::<metarag_pgstore::Error>() {
            return e.fault();
        }
        if let Some(e) = cause.downcast_ref::<metarag_agent::Error>() {
            return e.fault();
        }
        if let Some(e) = cause.downcast_ref::<metarag_server::Error>() {
            return if e.status.is_client_error() {
                Fault::User
            } else {
                Fault::Internal
            };
        }
        if cause.downcast_ref::<config::ConfigError>().is_some()
            || cause.downcast_ref::<app::UserError>().is_some()
        {
            return Fault::User;
        }
    }
    Fault::Internal
}

async fn run(cli: Cli) -> Result<ExitCode> {
    let config = config::Config::load(cli.config.as_deref())?;
    let app = app::App::new(config, cli.json);
    match cli.command {
        Command::Ingest(args) => ingest::run(&app, args).await,
        Command::Import(args) => import::run(&app, args).await,
        Command::Migrate(args) => migrate::run(&app, args).await,
        Command::Context(args) => context::run(&app, args).await,
        Command::Audit(args) => audit::run(&app, args).await,
        Command::Collections { command } => collections::run(&app, command).await,
        Command::Docs { command } => docs::run(&app, command).await,
        Command::Compact => compact::run(&app).await,
        Command::Search(args) => search::run(&app, args).await,
        Command::Ask(args) => ask::run(&app, args).await,
        Command::Graph(args) => graph::run(&app, args).await,
        Command::Tree(args) => tree::run(&app, args),
        Command::Strategies(args) => strategies::run(&app, args),
        Command::Chat(args) => chat::run(&app, args).await,
        Command::Serve(args) => serve::run(&app, args).await,
        Command::Mcp(args) => mcp::run(&app, args).await,
        Command::Keys { command } => keys::run(&app, command).await,
        Command::Runs { command } => runs::run(&app, command).await,
        Command::ServeLlm(args) => serve_llm::run(&app, args).await,
        Command::Cache { command } => cache::run(&app, command),
        Command::Models { command } => models::run(&app, command).await,
        Command::Bench(args) => bench::run(&app, *args).await,
        Command::Config => commands::config::run(&app),
        Command::ParseWorker => unreachable!("dispatched before the runtime starts"),
    }
}
