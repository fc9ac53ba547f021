//! Hybrid search over an index of real HotpotQA passages (the first 2,000 of the shared
//! corpus, ingested once per run with the real embedder): one search per iteration, cycling
//! through real dev questions, as a caller waits for it (dense and hybrid include embedding
//! the query; `embed_query` alone is timed too, so the index's share is the difference).
//! Run with `cargo bench -p metarag-retrieve --bench search`.

use metarag_core::{Embedder, SearchMode, SearchRequest};
use metarag_index::{EmbeddedIndex, IndexConfig};
use metarag_ingest::{ChunkSettings, Chunker, CorpusMode, IngestOptions, Ingester};
use metarag_models::SentenceEmbedder;
use metarag_retrieve::{HybridRetriever, RetrievalConfig};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

fn main() {
    divan::main();
}

struct Fixture {
    runtime: tokio::runtime::Runtime,
    retriever: HybridRetriever<SentenceEmbedder, EmbeddedIndex>,
    questions: Vec<String>,
    _dir: tempfile::TempDir,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let corpus: String = metarag_testkit::qa_file("hotpotqa-corpus.jsonl")
            .lines()
            .take(2000)
            .map(|l| format!("{l}\n"))
            .collect();
        let corpus_path = dir.path().join("corpus.jsonl");
        std::fs::write(&corpus_path, corpus).unwrap();
        let embedder = metarag_testkit::embedder();
        let index = EmbeddedIndex::open(
            dir.path().join("index"),
            IndexConfig::new(embedder.model_id(), embedder.dimension()),
        )
        .unwrap();
        let chunker = Chunker::new(
            embedder.tokenizer().clone(),
            ChunkSettings {
                max_tokens: embedder.max_tokens(),
                overlap: 32,
            },
        )
        .unwrap();
        let options = IngestOptions {
            corpus: CorpusMode::Corpus,
            ..Default::default()
        };
        runtime
            .block_on(
                Ingester::new(&chunker, &embedder, &index, options).run(&[corpus_path], &|_| {}),
            )
            .unwrap();
        let questions = first_questions(&metarag_testkit::qa_dir().join("hotpotqa-dev.jsonl"), 100);
        Fixture {
            runtime,
            retriever: HybridRetriever::new(embedder, index, RetrievalConfig::default()),
            questions,
            _dir: dir,
        }
    })
}

/// The first `n` questions of a normalised QA file.
fn first_questions(path: &std::path::Path, n: usize) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .take(n)
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["question"].as_str().unwrap().to_string()
        })
        .collect()
}

fn run(mode: SearchMode, bencher: divan::Bencher) {
    let f = fixture();
    let next = AtomicUsize::new(0);
    bencher.bench(|| {
        let q = &f.questions[next.fetch_add(1, Ordering::Relaxed) % f.questions.len()];
        let mut request = SearchRequest::new(q.clone(), 10);
        request.mode = mode;
        f.runtime
            .block_on(metarag_core::Retriever::search(&f.retriever, &request))
            .unwrap()
    });
}

#[divan::bench(sample_count = 100)]
fn search_bm25(bencher: divan::Bencher) {
    run(SearchMode::Bm25, bencher);
}

#[divan::bench(sample_count = 100)]
fn search_dense(bencher: divan::Bencher) {
    run(SearchMode::Dense, bencher);
}

#[divan::bench(sample_count = 100)]
fn search_hybrid(bencher: divan::Bencher) {
    run(SearchMode::Hybrid, bencher);
}

#[divan::bench(sample_count = 100)]
fn embed_query(bencher: divan::Bencher) {
    let f = fixture();
    let embedder = metarag_testkit::embedder();
    bencher.bench(|| {
        f.runtime
            .block_on(embedder.embed_query("Which country is the director of Jaws from?"))
            .unwrap()
    });
}
