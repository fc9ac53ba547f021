//! `metarag bench`: the QA benchmark (`bench --dataset ...`, with `report` and
//! `monitor` over its records) and the benchmarks of retrieval, embedding, scale, crash
//! consistency, the local model, reranking and the server under load.

mod crash;
mod embed;
mod injection;
mod llm;
mod load;
mod qa;
mod retrieval;
mod router;
mod scale;

use crate::app::App;
use anyhow::Result;
use clap::{Args as ClapArgs, Subcommand};
use std::process::ExitCode;

pub use retrieval::{corpus_index, corpus_index_to_search};

/// `metarag bench`: the QA benchmark (`--dataset ...`) or one of the other benchmarks.
#[derive(ClapArgs, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub qa: qa::QaArgs,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Turn a QA run record into a markdown report with SVG plots (F1 by type, rounds,
    /// latency) beside the paper baselines.
    Report(qa::ReportArgs),
    /// The monitor as a classifier of first answers (AUROC per signal, on each half of
    /// the questions), and `--fit`: its weights fitted on the tuning half.
    Monitor(qa::MonitorArgs),
    /// An LLM judge of a run's answers (does each mean the same as a gold answer?), kept
    /// in the record; `--labels` measures its agreement with answers labelled by hand.
    Judge(qa::JudgeArgs),
    /// Retrieval quality (recall@k of supporting titles, MRR) and latency per mode.
    Retrieval(retrieval::RetrievalArgs),
    /// The prompt-injection screens (patterns, the model, either) against labelled sets of
    /// attacks and benign look-alikes: recall and precision per set.
    Injection(injection::InjectionArgs),
    /// The intent classifiers of `metarag context` against a labelled question set.
    Router(router::RouterArgs),
    /// Corpus embedding throughput (tokens per second and per CPU-second), optionally
    /// beside the Python stack (sentence-transformers + torch) in the same run.
    Embed(embed::EmbedArgs),
    /// The index at 100k-1M chunks: build and reopen time, disk, peak RSS, search latency
    /// percentiles per mode and HNSW recall@10 against exact search.
    Scale(scale::ScaleArgs),
    /// Crash consistency: kill ingest, re-ingest and `docs rm` with SIGKILL at random
    /// moments, reopen, check every invariant, resume, check again.
    Crash(crash::CrashArgs),
    /// The local chat model on gold QA: EM/F1, seconds per question, tokens/s and the
    /// saving of prefix reuse.
    Llm(llm::LlmArgs),
    /// The local chat model as a reranker of hybrid retrieval: recall@k and NDCG@10 before
    /// and after, pairs/s.
    Rerank(llm::RerankArgs),
    /// The server under concurrent searches and asks on loopback: latency percentiles,
    /// statuses, hung requests.
    Load(load::LoadArgs),
}

/// Runs the QA benchmark or the named one.
pub async fn run(app: &App, args: Args) -> Result<ExitCode> {
    match args.command {
        None => qa::run(app, args.qa).await,
        Some(Command::Report(a)) => qa::report(app, a).await,
        Some(Command::Monitor(a)) => qa::monitor(app, a),
        Some(Command::Judge(a)) => qa::judge(app, a).await,
        Some(Command::Retrieval(a)) => retrieval::run(app, a).await,
        Some(Command::Router(a)) => router::run(app, a).await,
        Some(Command::Injection(a)) => injection::run(app, a).await,
        Some(Command::Embed(a)) => embed::run(app, a).await,
        Some(Command::Scale(a)) => scale::run(app, a).await,
        Some(Command::Crash(a)) => crash::run(app, a).await,
        Some(Command::Llm(a)) => llm::run(app, a).await,
        Some(Command::Rerank(a)) => llm::rerank(app, a).await,
        Some(Command::Load(a)) => load::run(app, a).await,
    }
}
