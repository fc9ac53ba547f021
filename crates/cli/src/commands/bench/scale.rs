//! `metarag bench scale`: the embedded index (or, with `--postgres`, the Postgres store) at
//! 100k-1M chunks. Builds an index of N chunks
//! through the same `apply` path ingest uses, then reports build time, reopen time, disk
//! size and peak RSS, search latency percentiles for BM25, dense, the graph walk and hybrid (query
//! embedding excluded; the first hybrid pass after opening apart, since it reads from disk
//! what the page cache does not hold), and the recall@10 of HNSW against exact search.
//!
//! Text and vectors: the passages of the three QA corpora (14,087), embedded once with the
//! configured embedder and cached; chunk `i` is base passage `i mod B` (variant 0 is the
//! passage itself). Later variants append a sentence of another passage to the text, and
//! their vector is the normalised mix `0.8·v(p) + 0.2·v(q)` plus small Gaussian noise, so
//! that near-duplicates cluster as they do in real collections without embedding a million
//! texts (4 hours on two cores). Queries are real HotpotQA dev questions, really embedded.

use crate::app::{App, UserError};
use crate::measure::{load_average, mix, peak_rss_bytes, threads, unit};
use crate::output::{print_json, write_json};
use anyhow::{Context, Result, bail};
use clap::Args;
use metarag_core::{
    ChunkDraft, DocFormat, DocId, Document, DocumentUpdate, Embedder, SearchMode, SearchRequest,
    Store, StoreRead,
};
use metarag_models::SentenceEmbedder;
use metarag_pgstore::PgStore;
use metarag_retrieve::HybridRetriever;
use serde_json::{Value, json};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

#[derive(Args, Debug)]
pub struct ScaleArgs {
    /// Chunks in the index.
    #[arg(long, default_value_t = 100_000)]
    chunks: usize,
    /// Chunks per `apply` (ingest writes 1,024 per batch).
    #[arg(long, default_value_t = 1024)]
    batch: usize,
    /// Questions timed per mode (HotpotQA dev).
    #[arg(long, default_value_t = 300)]
    queries: usize,
    /// Corpora whose passages are the base texts.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "data/qa/hotpotqa-corpus.jsonl,data/qa/2wikimultihopqa-corpus.jsonl,data/qa/musique-corpus.jsonl"
    )]
    corpora: Vec<PathBuf>,
    /// Questions file.
    #[arg(long, default_value = "data/qa/hotpotqa-dev.jsonl")]
    questions: PathBuf,
    /// Working directory: the base vectors are cached here and the index is built in
    /// `DIR/index-N` (replaced on each run).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Keep the built index (default: removed after the run).
    #[arg(long)]
    keep: bool,
    /// Measure the index a `--keep` run left in `DIR/index-N` again, without rebuilding
    /// it (a million chunks take twenty minutes to build): for comparing search changes.
    /// Build figures are then absent from the report; the index is kept.
    #[arg(long)]
    reuse: bool,
    /// Merge the BM25 index into one segment (`metarag compact`) after the build, before
    /// the timed reopen; the report gives the merge's time and segment counts.
    #[arg(long)]
    compact: bool,
    /// Also write the JSON report here.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Build and measure in this Postgres database instead of the embedded index (its
    /// `scale:` documents are replaced; other documents would skew the figures, so use a
    /// database of its own). Disk size is the tables' and indexes' total; "reopen" is a
    /// new connection with the schema and embedder checks.
    #[arg(long)]
    postgres: Option<String>,
}

/// A standard normal sample from two hashes (Box-Muller).
fn gaussian(seed: u64) -> f32 {
    // 1 - u keeps the logarithm's argument in (0, 1].
    let (u1, u2) = (1.0 - unit(seed), unit(seed ^ 0x5555));
    ((-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()) as f32
}

struct Base {
    titles: Vec<String>,
    texts: Vec<String>,
    /// Row-major `B × dim`.
    vectors: Vec<f32>,
    dim: usize,
}

fn read_corpus(path: &Path, titles: &mut Vec<String>, texts: &mut Vec<String>) -> Result<()> {
    let data =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    for (i, line) in data
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let v: Value = serde_json::from_str(line)
            .with_context(|| format!("{}:{}: not a JSON line", path.display(), i + 1))?;
        let (Some(title), Some(text)) = (v["title"].as_str(), v["text"].as_str()) else {
            bail!(
                "{}:{}: needs string `title` and `text`",
                path.display(),
                i + 1
            );
        };
        titles.push(title.to_string());
        texts.push(text.to_string());
    }
    Ok(())
}

/// The base passages and their vectors, embedded once and cached in `dir`.
fn base(embedder: &SentenceEmbedder, args: &ScaleArgs, dir: &Path) -> Result<Base> {
    let (mut titles, mut texts) = (Vec::new(), Vec::new());
    for c in &args.corpora {
        read_corpus(c, &mut titles, &mut texts)?;
    }
    let dim = embedder.dimension();
    let cache = dir.join(format!("base-{}-{}.f32", embedder.model_id(), titles.len()));
    let vectors = match std::fs::read(&cache) {
        Ok(bytes) if bytes.len() == titles.len() * dim * 4 => bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect(),
        _ => {
            eprintln!(
                "embedding {} base passages once (cached in {})...",
                titles.len(),
                cache.display()
            );
            let inputs: Vec<String> = titles
                .iter()
                .zip(&texts)
                .map(|(t, x)| metarag_core::embedding_input(t, &[], x))
                .collect();
            let vectors: Vec<f32> = embedder.embed_blocking(&inputs)?.concat();
            let bytes: Vec<u8> = vectors.iter().flat_map(|v| v.to_le_bytes()).collect();
            std::fs::write(&cache, bytes)
                .with_context(|| format!("writing {}", cache.display()))?;
            vectors
        }
    };
    Ok(Base {
        titles,
        texts,
        vectors,
        dim,
    })
}

impl Base {
    fn len(&self) -> usize {
        self.titles.len()
    }

    fn vector(&self, i: usize) -> &[f32] {
        &self.vectors[i * self.dim..(i + 1) * self.dim]
    }

    /// Chunk `i`: its title, text and vector.
    fn chunk(&self, i: usize) -> (String, String, Vec<f32>) {
        let b = self.len();
        let (p, variant) = (i % b, i / b);
        if variant == 0 {
            return (
                self.titles[p].clone(),
                self.texts[p].clone(),
                self.vector(p).to_vec(),
            );
        }
        let q = (mix(i as u64) % b as u64) as usize;
        let borrowed = self.texts[q]
            .split_inclusive(". ")
            .next()
            .unwrap_or(&self.texts[q]);
        let text = format!("{} {borrowed}", self.texts[p]);
        let mut v: Vec<f32> = self
            .vector(p)
            .iter()
            .zip(self.vector(q))
            .enumerate()
            .map(|(d, (a, c))| 0.8 * a + 0.2 * c + 0.02 * gaussian((i * self.dim + d) as u64))
            .collect();
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
        v.iter_mut().for_each(|x| *x /= norm);
        (format!("{} ({variant})", self.titles[p]), text, v)
    }
}

fn dir_size(path: &Path) -> u64 {
    walk(path).unwrap_or(0)
}

fn walk(path: &Path) -> std::io::Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(path)? {
        let entry = entry?;
        let meta = entry.metadata()?;
        total += if meta.is_dir() {
            walk(&entry.path())?
        } else {
            meta.len()
        };
    }
    Ok(total)
}

fn percentiles(ms: &[f64]) -> Value {
    let at = |p| metarag_eval::percentile(ms, p);
    json!({"p50_ms": at(50.0), "p95_ms": at(95.0), "p99_ms": at(99.0), "mean_ms": ms.iter().sum::<f64>() / ms.len() as f64})
}

/// Where the exact nearest neighbours of the recall questions are kept for the index of
/// `args.chunks` chunks generated from `base` (the same vectors every time).
fn truth_path(dir: &Path, embedder: &SentenceEmbedder, base: &Base, args: &ScaleArgs) -> PathBuf {
    dir.join(format!(
        "exact-top10-{}-{}-{}.json",
        embedder.model_id(),
        base.titles.len(),
        args.chunks
    ))
}

/// Builds and measures the index at the requested scale.
pub async fn run(app: &App, args: ScaleArgs) -> Result<ExitCode> {
    if args.chunks == 0 || args.batch == 0 || args.queries == 0 {
        bail!("--chunks, --batch and --queries must be positive");
    }
    let dir = args
        .dir
        .clone()
        .unwrap_or_else(|| app.config.home.join("bench").join("scale"));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let embedder = app.embedder()?;
    let base = base(&embedder, &args, &dir)?;
    if let Some(url) = args.postgres.clone() {
        if args.reuse || args.compact {
            return Err(UserError(
                "--reuse and --compact act on a kept embedded index; they do not apply to --postgres"
                    .into(),
            )
            .into());
        }
        return run_postgres(app, &args, &embedder, &base, &url, &dir).await;
    }
    let index_dir = dir.join(format!("index-{}", args.chunks));
    let (exact, batch_seconds, build_s, rss_after_build) = if args.reuse {
        if !index_dir.is_dir() {
            return Err(UserError(format!(
                "--reuse: no index at {} (run once with --keep first)",
                index_dir.display()
            ))
            .into());
        }
        // The vectors the exact search compares with, generated as the build made them;
        // not needed when an earlier run of the same index left the exact answers.
        let mut exact = Vec::new();
        if !truth_path(&dir, &embedder, &base, &args).exists() {
            exact.reserve(args.chunks * base.dim);
            for i in 0..args.chunks {
                exact.extend_from_slice(&base.chunk(i).2);
            }
        }
        (exact, Vec::new(), None, None)
    } else {
        if index_dir.exists() {
            std::fs::remove_dir_all(&index_dir)
                .with_context(|| format!("removing the old {}", index_dir.display()))?;
        }
        // A build computes the exact answers afresh.
        let _ = std::fs::remove_file(truth_path(&dir, &embedder, &base, &args));
        // Build, batch by batch, through the index's atomic apply.
        let index = app.open_index(&index_dir, &embedder)?;
        let started = Instant::now();
        let (exact, batch_seconds) = build(&base, &args, async |updates| {
            Ok(index.apply(updates, Vec::new())?)
        })
        .await?;
        let build_s = started.elapsed().as_secs_f64();
        drop(index);
        (exact, batch_seconds, Some(build_s), Some(peak_rss_bytes()))
    };
    let compaction = if args.compact {
        let index = app.open_index(&index_dir, &embedder)?;
        let done = index.compact()?;
        eprintln!(
            "BM25 segments {} -> {} in {:.1} s",
            done.bm25_segments_before, done.bm25_segments_after, done.seconds
        );
        Some(done)
    } else {
        None
    };
    let disk = dir_size(&index_dir);

    let t = Instant::now();
    let index = app.open_index(&index_dir, &embedder)?;
    let reopen_s = t.elapsed().as_secs_f64();
    let (bm25_docs, dense_len) = index.engine_sizes()?;
    if bm25_docs != args.chunks || dense_len != args.chunks {
        bail!(
            "the reopened index holds {bm25_docs} BM25 documents and {dense_len} vectors, not {}",
            args.chunks
        );
    }

    let retriever = HybridRetriever::new(embedder.clone(), index, app.config.retrieval());
    let searched = measure(
        &retriever,
        &embedder,
        &args,
        &exact,
        base.dim,
        &truth_path(&dir, &embedder, &base, &args),
        &[
            ("bm25", SearchMode::Bm25),
            ("dense", SearchMode::Dense),
            // The entity-graph walk alone: hybrid's third branch, timed by itself so
            // that a slow hybrid names which branch made it slow.
            ("graph", SearchMode::Graph),
            ("hybrid", SearchMode::Hybrid),
        ],
    )
    .await?;
    let cfg = retriever.store().config();
    let report = report(
        &args,
        &base,
        &batch_seconds,
        [cfg.hnsw_m, cfg.hnsw_ef_construction, cfg.hnsw_ef_search],
        searched,
        json!({
            "store": "embedded",
            "reused": args.reuse,
            "build_s": build_s,
            "reopen_s": reopen_s,
            "compaction": compaction,
            "disk_bytes": disk,
            "peak_rss_bytes_after_build": rss_after_build,
        }),
    );
    if !args.keep && !args.reuse {
        drop(retriever);
        let _ = std::fs::remove_dir_all(&index_dir);
    }
    write_json(args.out.as_deref(), &report)?;
    print_json(&report)?;
    Ok(ExitCode::SUCCESS)
}

/// Writes the `args.chunks` chunks `args.batch` at a time through `apply`, printing progress
/// every ten batches; returns every vector written (for the exact search) and each
/// batch's seconds.
async fn build(
    base: &Base,
    args: &ScaleArgs,
    mut apply: impl AsyncFnMut(Vec<DocumentUpdate>) -> Result<()>,
) -> Result<(Vec<f32>, Vec<f64>)> {
    let started = Instant::now();
    let mut exact: Vec<f32> = Vec::with_capacity(args.chunks * base.dim);
    let mut batch_seconds = Vec::new();
    let mut next = 0;
    while next < args.chunks {
        let end = (next + args.batch).min(args.chunks);
        let updates = batch(base, next..end, &mut exact)?;
        let t = Instant::now();
        apply(updates).await?;
        batch_seconds.push(t.elapsed().as_secs_f64());
        next = end;
        if batch_seconds.len() % 10 == 0 || next == args.chunks {
            eprintln!(
                "  {next}/{} chunks, last batch {:.2}s, {:.0}s so far",
                args.chunks,
                batch_seconds.last().copied().unwrap_or(0.0),
                started.elapsed().as_secs_f64()
            );
        }
    }
    Ok((exact, batch_seconds))
}

/// The documents of chunks `range`, one chunk each; their vectors are appended to `exact`
/// (the exact search's copy).
fn batch(
    base: &Base,
    range: std::ops::Range<usize>,
    exact: &mut Vec<f32>,
) -> Result<Vec<DocumentUpdate>> {
    range
        .map(|i| {
            let (title, text, vector) = base.chunk(i);
            exact.extend_from_slice(&vector);
            let draft = ChunkDraft {
                ordinal: 0,
                section: Vec::new(),
                pages: None,
                bytes: 0..text.len(),
                token_count: 0,
                text: text.clone(),
            };
            Ok(DocumentUpdate {
                document: Document {
                    id: DocId::new(format!("scale:{i}"))?,
                    title,
                    source: format!("scale:{i}"),
                    format: DocFormat::Text,
                    content_hash: i.to_string(),
                    bytes: text.len() as u64,
                    date: None,
                    ingested_at: 0,
                    chunk_count: 1,
                    metadata: Default::default(),
                    collection: Default::default(),
                    text: Some(text),
                },
                chunks: vec![(draft, vector)],
                staged: None,
            })
        })
        .collect()
}

/// Search latency per mode (query embedding excluded) over real questions, and the
/// recall@10 of the store's nearest-neighbour search against exact search over `exact`.
/// Returns those figures as the report's fields.
async fn measure<S: StoreRead>(
    retriever: &HybridRetriever<SentenceEmbedder, S>,
    embedder: &SentenceEmbedder,
    args: &ScaleArgs,
    exact: &[f32],
    dim: usize,
    truth: &Path,
    modes: &[(&str, SearchMode)],
) -> Result<Value> {
    // Queries: real questions, embedded once outside the timing.
    let mut questions = metarag_eval::load_dataset(&args.questions)?;
    questions.truncate(args.queries);
    let time = async |mode: SearchMode| -> Result<Vec<f64>> {
        let mut ms = Vec::with_capacity(questions.len());
        for q in &questions {
            let mut request = SearchRequest::new(q.question.clone(), 10);
            request.mode = mode;
            let (_, timings) = retriever.search_timed(&request).await?;
            ms.push(timings.search.as_secs_f64() * 1000.0);
        }
        Ok(ms)
    };
    // The first pass after opening reads the index files from disk where the page cache
    // does not hold them (a mapped vector graph, SQLite's pages, tantivy's segments): what
    // a freshly started server's first users see. It is timed apart, as hybrid searches
    // (which touch every part), so that the per-mode figures below are the steady state
    // and do not depend on which mode happened to run first.
    let first_pass = time(SearchMode::Hybrid).await?;
    let mut out = serde_json::Map::new();
    for &(name, mode) in modes {
        out.insert(name.into(), percentiles(&time(mode).await?));
    }

    // At most 100 questions: each exact search reads every vector (ten minutes at a
    // million in the debug build), so the exact answers are kept beside the index for the
    // next `--reuse` run; a build starts afresh.
    let recall_questions = &questions[..questions.len().min(100)];
    let ids: Vec<&str> = recall_questions.iter().map(|q| q.id.as_str()).collect();
    let cached: Option<Vec<Vec<usize>>> = std::fs::read(truth)
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .filter(|v| v["questions"] == json!(ids))
        .and_then(|v| serde_json::from_value(v["top10"].clone()).ok());
    let mut answers = Vec::with_capacity(recall_questions.len());
    let mut recall_sum = 0.0;
    for (n, q) in recall_questions.iter().enumerate() {
        let v = embedder.embed_query(&q.question).await?;
        let truth: HashSet<usize> = match &cached {
            Some(c) => c[n].iter().copied().collect(),
            None if exact.is_empty() => {
                bail!(
                    "{} holds the exact answers of other questions; remove it and run again to compute them for these",
                    truth.display()
                )
            }
            None => {
                let mut scored: Vec<(f32, usize)> = exact
                    .chunks_exact(dim)
                    .enumerate()
                    .map(|(i, row)| (row.iter().zip(&v).map(|(a, b)| a * b).sum(), i))
                    .collect();
                let top = scored.len().min(10);
                scored.select_nth_unstable_by(top - 1, |a, b| b.0.total_cmp(&a.0));
                scored[..top].iter().map(|s| s.1).collect()
            }
        };
        let mut sorted: Vec<usize> = truth.iter().copied().collect();
        sorted.sort_unstable();
        answers.push(sorted);
        let top = truth.len();
        let store = retriever.store();
        let hits = StoreRead::nearest(store, &v, 10, &metarag_core::Filter::default()).await?;
        let chunks =
            StoreRead::chunks(store, &hits.iter().map(|h| h.id).collect::<Vec<_>>()).await?;
        let found = chunks
            .iter()
            .filter_map(|c| {
                c.doc_id
                    .as_str()
                    .strip_prefix("scale:")?
                    .parse::<usize>()
                    .ok()
            })
            .filter(|i| truth.contains(i))
            .count();
        recall_sum += found as f64 / top as f64;
    }
    let recall = recall_sum / recall_questions.len() as f64;
    if cached.is_none() {
        let record = json!({"questions": ids, "top10": answers});
        std::fs::write(truth, serde_json::to_vec(&record)?)
            .with_context(|| format!("writing {}", truth.display()))?;
    }
    Ok(json!({
        "queries": questions.len(),
        "hybrid_first_pass_after_open": percentiles(&first_pass),
        "search_excluding_query_embedding": out,
        "hnsw_recall_at_10_vs_exact": recall,
        "recall_queries": recall_questions.len(),
    }))
}

/// The same build and measurements in a Postgres database.
async fn run_postgres(
    app: &App,
    args: &ScaleArgs,
    embedder: &SentenceEmbedder,
    base: &Base,
    url: &str,
    dir: &Path,
) -> Result<ExitCode> {
    let config = app.pg_config(url, embedder.model_id(), embedder.dimension());
    let store = PgStore::connect(config.clone()).await?;
    {
        let client = store.database().client().await?;
        let others: i64 = client
            .query_one(
                "SELECT count(*) FROM documents WHERE id NOT LIKE 'scale:%'",
                &[],
            )
            .await?
            .get(0);
        if others > 0 {
            bail!(
                "{url} holds {others} documents besides the benchmark's: use a database of its own"
            );
        }
        client
            .execute("DELETE FROM documents WHERE id LIKE 'scale:%'", &[])
            .await?;
    }
    store.analyze().await?;
    let started = Instant::now();
    let (exact, batch_seconds) = build(base, args, async |updates| {
        Ok(Store::apply(&store, updates, Vec::new()).await?)
    })
    .await?;
    // As `metarag migrate` does after a bulk copy: vacuum (visibility map) and analyse.
    store.analyze().await?;
    let build_s = started.elapsed().as_secs_f64();
    drop(store);

    let t = Instant::now();
    let store = PgStore::connect(config).await?;
    let reopen_s = t.elapsed().as_secs_f64();
    let stats = StoreRead::stats(&store).await?;
    if stats.chunks != args.chunks as u64 {
        bail!(
            "the database holds {} chunks, not {}",
            stats.chunks,
            args.chunks
        );
    }
    let disk: i64 = store
        .database()
        .client()
        .await?
        .query_one(
            "SELECT pg_total_relation_size('chunks') + pg_total_relation_size('documents') + pg_total_relation_size('postings')
                  + pg_total_relation_size('entities') + pg_total_relation_size('entity_aliases')
                  + pg_total_relation_size('entity_words') + pg_total_relation_size('mentions')
                  + pg_total_relation_size('relations')",
            &[],
        )
        .await?
        .get(0);
    let cfg = store.config().clone();
    let retriever = HybridRetriever::new(embedder.clone(), store, app.config.retrieval());
    // "text" (BM25 + dense) beside "hybrid" (with the graph walk) shows what the walk
    // costs there.
    let searched = measure(
        &retriever,
        embedder,
        args,
        &exact,
        base.dim,
        &truth_path(dir, embedder, base, args),
        &[
            ("bm25", SearchMode::Bm25),
            ("dense", SearchMode::Dense),
            ("graph", SearchMode::Graph),
            ("text", SearchMode::Text),
            ("hybrid", SearchMode::Hybrid),
        ],
    )
    .await?;
    let fused_in_sql = fused_in_sql(&retriever, embedder, args, &app.config.retrieval()).await?;
    let report = report(
        args,
        base,
        &batch_seconds,
        [cfg.hnsw_m, cfg.hnsw_ef_construction, cfg.hnsw_ef_search],
        searched,
        json!({
            "store": "postgres",
            "hybrid_rrf_in_sql": fused_in_sql,
            "build_s": build_s,
            "reopen_s": reopen_s,
            "disk_bytes": disk,
        }),
    );
    write_json(args.out.as_deref(), &report)?;
    print_json(&report)?;
    Ok(ExitCode::SUCCESS)
}

/// Latency of hybrid search fused inside Postgres (`PgStore::fused`: one statement, RRF in
/// SQL) plus loading the hits' chunks, to set beside the retriever's fusion in Rust (two
/// statements side by side, RRF in Rust), which `measure` times the same way. Returns the
/// percentiles and the share of queries whose top 10 equals the Rust fusion's.
async fn fused_in_sql(
    retriever: &HybridRetriever<SentenceEmbedder, PgStore>,
    embedder: &SentenceEmbedder,
    args: &ScaleArgs,
    config: &metarag_retrieve::RetrievalConfig,
) -> Result<Value> {
    let mut questions = metarag_eval::load_dataset(&args.questions)?;
    questions.truncate(args.queries);
    let store = retriever.store();
    let fusion = metarag_pgstore::SqlFusion {
        n: 10,
        depth: config.candidates,
        bm25_weight: config.bm25_weight,
        dense_weight: config.dense_weight,
        rrf_k: config.rrf_k,
    };
    let mut ms = Vec::with_capacity(questions.len());
    let mut same = 0;
    for q in &questions {
        let v = embedder.embed_query(&q.question).await?;
        let t = Instant::now();
        let fused = store
            .fused(&q.question, &v, &fusion, &metarag_core::Filter::default())
            .await?;
        let ids: Vec<_> = fused.iter().map(|f| f.id).collect();
        StoreRead::chunks(store, &ids).await?;
        ms.push(t.elapsed().as_secs_f64() * 1000.0);
        let mut request = SearchRequest::new(q.question.clone(), 10);
        request.mode = SearchMode::Text;
        let (hits, _) = retriever.search_timed(&request).await?;
        same += usize::from(hits.iter().map(|h| h.chunk.id).eq(ids.iter().copied()));
    }
    Ok(json!({
        "search_excluding_query_embedding": percentiles(&ms),
        "same_top10_as_rust_fusion": same as f64 / questions.len().max(1) as f64,
    }))
}

/// One run's report: the figures both stores share, the search figures of [`measure`] and
/// the store's own (`own`: build, reopen, disk).
fn report(
    args: &ScaleArgs,
    base: &Base,
    batch_seconds: &[f64],
    [m, ef_construction, ef_search]: [usize; 3],
    searched: Value,
    own: Value,
) -> Value {
    let first = &batch_seconds[..batch_seconds.len().min(5)];
    let last = &batch_seconds[batch_seconds.len().saturating_sub(5)..];
    // No batches: a `--reuse` run, which built nothing (null, not NaN).
    let mean = |b: &[f64]| (!b.is_empty()).then(|| b.iter().sum::<f64>() / b.len() as f64);
    let mut report = json!({
        "chunks": args.chunks,
        "batch": args.batch,
        "base_passages": base.len(),
        "hnsw": {"m": m, "ef_construction": ef_construction, "ef_search": ef_search},
        "apply_s_first_batches_mean": mean(first),
        "apply_s_last_batches_mean": mean(last),
        "peak_rss_bytes": peak_rss_bytes(),
        "threads": threads(),
        "load_average": load_average(),
    });
    if let Some(fields) = report.as_object_mut() {
        for part in [searched, own] {
            if let Value::Object(more) = part {
                fields.extend(more);
            }
        }
    }
    report
}
