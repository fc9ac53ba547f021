//! `metarag search`: hybrid, text (BM25 + dense), BM25, dense or graph search over the index, with filters.

use crate::app::App;
use crate::output::{parse_date, parse_meta, print_json, truncate};
use anyhow::Result;
use clap::{Args as ClapArgs, ValueEnum};
use metarag_core::{DocId, Filter, SearchRequest};
use metarag_retrieve::HybridRetriever;
use std::process::ExitCode;

/// Retrieval mode.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum ModeArg {
    /// BM25, dense and the entity graph fused by weighted RRF.
    Hybrid,
    /// BM25 only.
    Bm25,
    /// Dense only.
    Dense,
    /// The entity graph only.
    Graph,
    /// BM25 and dense fused, without the entity graph.
    Text,
}

impl From<ModeArg> for metarag_core::SearchMode {
    fn from(m: ModeArg) -> Self {
        match m {
            ModeArg::Hybrid => metarag_core::SearchMode::Hybrid,
            ModeArg::Bm25 => metarag_core::SearchMode::Bm25,
            ModeArg::Dense => metarag_core::SearchMode::Dense,
            ModeArg::Graph => metarag_core::SearchMode::Graph,
            ModeArg::Text => metarag_core::SearchMode::Text,
        }
    }
}

#[derive(ClapArgs, Debug)]
pub struct Args {
    /// The query.
    pub query: String,
    /// Retrieval mode.
    #[arg(long, value_enum, default_value = "hybrid")]
    pub mode: ModeArg,
    /// Number of hits (default: retrieval.k from the configuration).
    #[arg(long)]
    pub k: Option<usize>,
    /// Only these documents; repeatable.
    #[arg(long = "doc", value_name = "DOC_ID")]
    pub docs: Vec<String>,
    /// Only documents whose title contains this text.
    #[arg(long)]
    pub title: Option<String>,
    /// Only documents dated on or after this day (YYYY-MM-DD or Unix seconds).
    #[arg(long)]
    pub after: Option<String>,
    /// Only documents dated before this day (YYYY-MM-DD or Unix seconds).
    #[arg(long)]
    pub before: Option<String>,
    /// Only documents whose metadata has KEY equal to VALUE (or a list holding it);
    /// repeatable, all must hold.
    #[arg(long = "where", value_name = "KEY=VALUE")]
    pub wheres: Vec<String>,
    /// Only documents of this collection; repeatable (every collection when absent).
    #[arg(long, value_name = "NAME")]
    pub collection: Vec<metarag_core::CollectionId>,
}

/// Searches the index and prints the hits with their scores and documents.
pub async fn run(app: &App, args: Args) -> Result<ExitCode> {
    let embedder = app.embedder()?;
    let index = app.store(&embedder, false, None).await?.store;
    let filter = Filter {
        doc_ids: args
            .docs
            .into_iter()
            .map(DocId::new)
            .collect::<Result<_, _>>()?,
        title_contains: args.title,
        date_from: args.after.as_deref().map(parse_date).transpose()?,
        date_to: args.before.as_deref().map(parse_date).transpose()?,
        metadata: args
            .wheres
            .iter()
            .map(|w| parse_meta(w, "--where"))
            .collect::<Result<_>>()?,
        collections: args.collection,
    };
    let request = SearchRequest {
        query: args.query,
        k: args.k.unwrap_or(app.config.raw.retrieval.k),
        mode: args.mode.into(),
        filter,
    };
    let retriever = HybridRetriever::new(embedder, index, app.config.retrieval());
    let (hits, timings) = retriever.search_timed(&request).await?;
    if app.json {
        print_json(&serde_json::json!({
            "query": request.query,
            "mode": request.mode,
            "hits": hits,
            "embed_ms": timings.embed.as_secs_f64() * 1e3,
            "search_ms": timings.search.as_secs_f64() * 1e3,
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    if hits.is_empty() {
        eprintln!("no results");
    }
    for (i, h) in hits.iter().enumerate() {
        let found: Vec<String> = h
            .sources
            .iter()
            .map(|s| format!("{:?}#{}", s.retriever, s.rank).to_lowercase())
            .collect();
        // The top heading usually repeats the title; print the path below it.
        let section: String = h
            .chunk
            .draft
            .section
            .iter()
            .filter(|s| **s != h.chunk.title)
            .map(|s| format!(" > {s}"))
            .collect();
        let pages = h
            .chunk
            .draft
            .pages
            .map(|(a, b)| {
                if a == b {
                    format!(" (p. {a})")
                } else {
                    format!(" (pp. {a}-{b})")
                }
            })
            .unwrap_or_default();
        println!(
            "{:>2}. {:.4}  {}{}{}  [{}]",
            i + 1,
            h.score,
            h.chunk.title,
            section,
            pages,
            found.join(" ")
        );
        println!(
            "    {}",
            truncate(&h.chunk.draft.text.replace('\n', " "), 240)
        );
        println!("    doc: {}", h.chunk.doc_id);
    }
    Ok(ExitCode::SUCCESS)
}
