//! `metarag bench retrieval`: ingest a QA corpus into its own index (once; later runs reuse
//! it) and report recall@k, MRR and latency for BM25, dense, graph and hybrid retrieval.

use crate::app::App;
use crate::commands::bench::qa::SplitArg;
use crate::commands::ingest::FormatArg;
use crate::commands::search::ModeArg;
use crate::output::{print_json, write_json};
use anyhow::Result;
use clap::Args;
use metarag_core::Embedder;
use metarag_ingest::IngestReport;
use metarag_models::{Precision, SentenceEmbedder};
use metarag_retrieve::HybridRetriever;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct RetrievalArgs {
    /// Corpus of `{doc_id, title, text}` lines.
    #[arg(long)]
    corpus: PathBuf,
    /// Questions with supporting titles: the normalised QA JSONL, or the official HotpotQA,
    /// 2WikiMultiHopQA or MuSiQue dev files.
    #[arg(long)]
    questions: PathBuf,
    /// Evaluate only the first N questions (after `--split`).
    #[arg(long)]
    n: Option<usize>,
    /// Only one half of the questions (FNV-1a hash of the id): choose settings on
    /// `tuning`, report on `reporting`.
    #[arg(long, value_enum)]
    split: Option<SplitArg>,
    /// Cut-offs, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "2,5,10,20")]
    k: Vec<usize>,
    /// Modes to evaluate, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        value_enum,
        default_value = "bm25,dense,hybrid"
    )]
    modes: Vec<ModeArg>,
    /// Index directory (default: a per-corpus, per-embedder directory under the data dir).
    #[arg(long)]
    index: Option<PathBuf>,
    /// Also copy the corpus index into this Postgres database (`[store] url` if given as
    /// `config`) and evaluate the same questions over it, in the same run.
    #[arg(long, value_name = "URL")]
    pub postgres: Option<String>,
    /// Also measure the agent's second hop: the pool after a first hybrid search of this
    /// many passages and one hop (none, the next-hop query, following the bridge entities
    /// in the graph, both, or the bridge hop: the entities the question's relation passes
    /// through, searched by name).
    #[arg(long, value_name = "K")]
    hops: Option<usize>,
    /// Also write the JSON report here.
    #[arg(long)]
    out: Option<PathBuf>,
}

/// Ingests a benchmark corpus into its own index (`index`, or a per-corpus, per-embedder
/// directory under the data dir), once: later runs find it unchanged. Returns the directory
/// and what the ingest did.
pub async fn corpus_index(
    app: &App,
    corpus: &Path,
    index: Option<PathBuf>,
    embedder: &SentenceEmbedder,
) -> Result<(PathBuf, IngestReport)> {
    let dir = index.unwrap_or_else(|| corpus_index_dir(app, corpus, embedder));
    let options = app.ingest_options(Some(FormatArg::CorpusJsonl), Vec::new(), Vec::new());
    let report = app
        .ingest_into(&dir, &[corpus.to_path_buf()], options, embedder)
        .await?;
    Ok((dir, report))
}

/// [`corpus_index`] for a benchmark that only searches: when another metarag process holds
/// the index for writing (a QA benchmark over the same corpus), its documents are already
/// in, so it is searched as it is (`None`: nothing ingested) instead of failing.
pub async fn corpus_index_to_search(
    app: &App,
    corpus: &Path,
    index: Option<PathBuf>,
    embedder: &SentenceEmbedder,
) -> Result<(PathBuf, Option<IngestReport>)> {
    let dir = index
        .clone()
        .unwrap_or_else(|| corpus_index_dir(app, corpus, embedder));
    eprintln!(
        "indexing {} (only new or changed documents are embedded)...",
        corpus.display()
    );
    match corpus_index(app, corpus, index, embedder).await {
        Ok((dir, ingest)) => {
            eprintln!(
                "index {}: {}",
                dir.display(),
                crate::commands::ingest::ingest_summary(&ingest)
            );
            Ok((dir, Some(ingest)))
        }
        Err(e)
            if matches!(
                e.downcast_ref::<metarag_index::Error>(),
                Some(metarag_index::Error::Busy { .. })
            ) =>
        {
            eprintln!(
                "{} is being written by another metarag process: searching it as it is, read-only",
                dir.display()
            );
            Ok((dir, None))
        }
        Err(e) => Err(e),
    }
}

/// Where the benchmarks keep the index of `corpus` built with `embedder`: one directory per
/// corpus, model and precision. The precision is part of the name (f32, the default, keeps
/// the plain name) because a document's content hash does not change with it: an int8 run
/// over the f32 directory would find every document unchanged and search f32 vectors with
/// int8 queries, which is not what its record says.
pub fn corpus_index_dir(app: &App, corpus: &Path, embedder: &SentenceEmbedder) -> PathBuf {
    index_dir_name(
        &app.config.home,
        corpus,
        embedder.model_id(),
        embedder.precision(),
    )
}

/// [`corpus_index_dir`] from its parts.
fn index_dir_name(home: &Path, corpus: &Path, model: &str, precision: Precision) -> PathBuf {
    let stem = corpus
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("corpus");
    let precision = match precision {
        Precision::F32 => String::new(),
        other => format!("-{other}"),
    };
    home.join("bench")
        .join(format!("{stem}-{model}{precision}"))
}

/// Measures retrieval quality and latency per mode.
pub async fn run(app: &App, args: RetrievalArgs) -> Result<ExitCode> {
    let embedder = app.embedder()?;
    let (dir, ingest) =
        corpus_index_to_search(app, &args.corpus, args.index.clone(), &embedder).await?;
    let mut questions = metarag_eval::load_dataset(&args.questions)?;
    if let Some(split) = args.split.map(SplitArg::split) {
        questions.retain(|q| metarag_eval::monitor::split_of(&q.id) == split);
    }
    if let Some(n) = args.n {
        questions.truncate(n);
    }
    let index = app.open_index_for_reading(&dir, &embedder)?;
    let retriever = HybridRetriever::new(embedder.clone(), index, app.config.retrieval());
    let modes: Vec<_> = args.modes.iter().map(|&m| m.into()).collect();
    let report = metarag_eval::evaluate_retrieval(&retriever, &questions, &modes, &args.k).await?;
    let hops = match args.hops {
        Some(k) => Some(metarag_eval::evaluate_hops(&retriever, &questions, k).await?),
        None => None,
    };
    // The same questions over Postgres: the index copied (vectors included), then the
    // modes it supports (it keeps no entity graph).
    let postgres = match &args.postgres {
        None => None,
        Some(url) => {
            let url = if url == "config" {
                app.config.raw.store.url.clone().ok_or_else(|| {
                    crate::app::UserError("--postgres config: no `[store] url` set".into())
                })?
            } else {
                url.clone()
            };
            let cfg = retriever.store().config();
            let store =
                crate::commands::migrate::connect(app, &url, &cfg.embedder, cfg.dimension).await?;
            let copy =
                crate::commands::migrate::copy(retriever.store(), &store, 64, !app.json).await?;
            let pg_modes: Vec<_> = modes
                .iter()
                .copied()
                .filter(|m| *m != metarag_core::SearchMode::Graph)
                .collect();
            let pg = HybridRetriever::new(embedder, store, app.config.retrieval());
            let report =
                metarag_eval::evaluate_retrieval(&pg, &questions, &pg_modes, &args.k).await?;
            Some((copy, report))
        }
    };
    let retrieval = app.config.retrieval();
    let json = serde_json::json!({
        "corpus": args.corpus,
        "questions": args.questions,
        "embedder": retriever.store().config().embedder,
        "hnsw_ef_search": retriever.store().config().hnsw_ef_search,
        "rrf_k": retrieval.rrf_k,
        "bm25_weight": retrieval.bm25_weight,
        "dense_weight": retrieval.dense_weight,
        "graph_weight": retrieval.graph_weight,
        "graph": retrieval.graph,
        "split": args.split.map(|s| s.split().as_str()),
        "questions_evaluated": questions.len(),
        "candidates": retrieval.candidates,
        "ingest": ingest,
        "retrieval": report,
        "hops": hops.as_ref().map(|h| serde_json::json!({"k": args.hops, "methods": h})),
        "postgres": postgres.as_ref().map(|(copy, report)| serde_json::json!({"copy": copy, "retrieval": report})),
    });
    write_json(args.out.as_deref(), &json)?;
    if app.json {
        print_json(&json)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut md = String::new();
    if let Some(ingest) = ingest.as_ref().filter(|i| i.chunks > 0) {
        writeln!(
            md,
            "Ingest: {} documents, {} chunks, {} tokens in {:.1}s ({:.1} chunks/s, {:.0} tokens/s; embedding {:.1}s = {:.0} tokens/s)\n",
            ingest.added + ingest.updated,
            ingest.chunks,
            ingest.tokens,
            ingest.seconds,
            ingest.chunks as f64 / ingest.seconds.max(1e-9),
            ingest.tokens as f64 / ingest.seconds.max(1e-9),
            ingest.embed_seconds,
            ingest.tokens as f64 / ingest.embed_seconds.max(1e-9),
        )?;
    }
    table(&mut md, &report)?;
    if let (Some(hops), Some(k)) = (&hops, args.hops) {
        writeln!(
            md,
            "\nThe pool after a first search of {k} and one hop of {k} (all supporting titles in the pool):\n"
        )?;
        writeln!(md, "| hop | recall (all) | completes | by type |")?;
        writeln!(md, "|---|---|---|---|")?;
        for h in hops {
            let types: Vec<String> = h
                .recall_all_by_type
                .iter()
                .map(|(t, v)| format!("{t} {v:.3}"))
                .collect();
            writeln!(
                md,
                "| {:?} | {:.3} | {:.3} | {} |",
                h.method,
                h.recall_all,
                h.completed,
                types.join(", ")
            )?;
        }
    }
    if let Some((copy, pg)) = &postgres {
        writeln!(
            md,
            "\nPostgres (copied {} documents, {} chunks in {:.1}s; {} unchanged):\n",
            copy.copied, copy.chunks, copy.seconds, copy.unchanged
        )?;
        table(&mut md, pg)?;
    }
    println!("{md}");
    Ok(ExitCode::SUCCESS)
}

/// One row per mode: recall at each cut-off, MRR, latencies.
fn table(md: &mut String, report: &metarag_eval::RetrievalReport) -> std::fmt::Result {
    let ks: Vec<String> = report.ks.iter().map(|k| format!("R@{k} (all)")).collect();
    writeln!(
        md,
        "| mode | {} | MRR | search p50 ms | search p95 ms | embed p50 ms |",
        ks.join(" | ")
    )?;
    writeln!(md, "|---|{}---|---|---|---|", "---|".repeat(ks.len()))?;
    for m in &report.modes {
        let r: Vec<String> = report
            .ks
            .iter()
            .map(|k| format!("{:.3}", m.recall_all[k]))
            .collect();
        writeln!(
            md,
            "| {:?} | {} | {:.3} | {:.2} | {:.2} | {:.2} |",
            m.mode,
            r.join(" | "),
            m.mrr,
            m.search_ms_p50,
            m.search_ms_p95,
            m.embed_ms_p50
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_precision_has_its_own_corpus_index_and_f32_keeps_the_plain_name() {
        let home = Path::new("/data");
        let corpus = Path::new("data/qa/hotpotqa-corpus.jsonl");
        let f32 = index_dir_name(home, corpus, "all-minilm-l6-v2", Precision::F32);
        let int8 = index_dir_name(home, corpus, "all-minilm-l6-v2", Precision::Int8);
        assert_eq!(
            f32,
            Path::new("/data/bench/hotpotqa-corpus-all-minilm-l6-v2")
        );
        assert_eq!(
            int8,
            Path::new("/data/bench/hotpotqa-corpus-all-minilm-l6-v2-int8")
        );
    }
}
