//! `metarag context`: seed `002`'s router-only mode. Classifies the question's intents,
//! searches the memories they call for, and prints the context without generating an
//! answer, for a larger generator elsewhere.

use crate::app::App;
use crate::output::{print_json, truncate};
use anyhow::Result;
use clap::{Args as ClapArgs, ValueEnum};
use metarag_core::SearchRequest;
use metarag_retrieve::router::merge_with_rules;
use metarag_retrieve::{EmbeddingRouter, HybridRetriever, Memory, Route};
use std::process::ExitCode;

/// Which classifier routes the question.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum RouterArg {
    /// The question's embedding against example phrases, then cue words (no model call).
    Embedding,
    /// The local chat model with a JSON schema, then cue words.
    Llm,
}

/// `metarag context`
#[derive(ClapArgs, Debug)]
pub struct Args {
    /// The question.
    pub question: String,
    /// Chunks returned (default: retrieval.k).
    #[arg(long)]
    pub k: Option<usize>,
    /// The classifier.
    #[arg(long, value_enum, default_value = "embedding")]
    pub router: RouterArg,
}

/// Classifies `question` with the chosen router.
pub async fn route(app: &App, question: &str, router: RouterArg) -> Result<Route> {
    let embedder = app.embedder()?;
    Ok(match router {
        RouterArg::Embedding => {
            let r = EmbeddingRouter::new(embedder, ROUTER_MARGIN).await?;
            merge_with_rules(question, r.classify(question).await?)
        }
        RouterArg::Llm => {
            let handle = app.llm(true, None).await?;
            metarag_agent::router::classify_with_llm(&*handle.llm, question).await?
        }
    })
}

/// Intents within this cosine of the best one are kept by the embedding router.
pub const ROUTER_MARGIN: f32 = 0.02;

/// Routes, retrieves and prints the context.
pub async fn run(app: &App, args: Args) -> Result<ExitCode> {
    let embedder = app.embedder()?;
    let index = app.open_index_for_reading(&app.config.index_dir(), &embedder)?;
    let route = route(app, &args.question, args.router).await?;
    let request = SearchRequest::new(&args.question, args.k.unwrap_or(app.config.raw.retrieval.k));
    let retriever = HybridRetriever::new(embedder, index, app.config.retrieval());
    let (hits, timings) = retriever.search_routed(&request, &route).await?;
    // The audit memory for a temporal route: the document changes in the range the
    // question states (the latest ones when it states none).
    let audit = if route.memories.contains(&Memory::Audit) {
        let (from, to) =
            metarag_retrieve::router::time_range(&args.question, crate::commands::audit::now())
                .unwrap_or((None, None));
        retriever.store().audit_events(from, to, None, 20)?
    } else {
        Vec::new()
    };
    if app.json {
        print_json(&serde_json::json!({
            "question": args.question,
            "route": route,
            "audit": audit,
            "context": hits,
            "search_ms": timings.search.as_secs_f64() * 1e3,
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    let names = |v: Vec<String>| v.join(", ");
    println!(
        "intents: {} ({:?}); memories: {}",
        names(
            route
                .intents
                .iter()
                .map(|i| i.as_str().to_string())
                .collect()
        ),
        route.source,
        names(
            route
                .memories
                .iter()
                .map(|m| format!("{m:?}").to_lowercase())
                .collect()
        ),
    );
    if !audit.is_empty() {
        println!("\naudit memory:");
        for e in &audit {
            println!("  {}\t{}\t{}", e.at, e.kind, truncate(&e.title, 60));
        }
    }
    for (i, h) in hits.iter().enumerate() {
        println!("\n[{}] {} (chunk {})", i + 1, h.chunk.title, h.chunk.id);
        println!("{}", truncate(&h.chunk.draft.text, 600));
    }
    Ok(ExitCode::SUCCESS)
}
