//! Integration tests of the agent: every branch of the metacognitive loop on the scripted
//! fake LLM, snapshots of the prompts and of a trace, and runs on the real local models.

mod abstain;
mod agentic;
mod baselines;
mod branches;
mod cot;
mod critic;
mod layers;
mod program;
mod questions;
mod real;
mod router;
mod scope;
mod values;

use metarag_agent::Passage;
use metarag_core::{DynRetriever, Embedder};
use metarag_index::{EmbeddedIndex, IndexConfig};
use metarag_ingest::{ChunkSettings, Chunker, CorpusMode, IngestOptions, Ingester};
use metarag_retrieve::{HybridRetriever, RetrievalConfig};
use std::path::Path;
use std::sync::Arc;

/// Indexes passages (title, text) with the real embedder into `dir` and returns a hybrid
/// retriever over them.
pub async fn index(dir: &Path, passages: &[(String, String)]) -> Arc<dyn DynRetriever> {
    let records: Vec<serde_json::Value> = passages
        .iter()
        .map(|(t, x)| serde_json::json!({"doc_id": t, "title": t, "text": x}))
        .collect();
    index_records(dir, &records).await
}

/// Indexes corpus records (`{doc_id, title, text}`, optionally `date` in Unix seconds)
/// with the real embedder and returns a hybrid retriever over them.
pub async fn index_records(dir: &Path, records: &[serde_json::Value]) -> Arc<dyn DynRetriever> {
    let embedder = metarag_testkit::embedder();
    let index = EmbeddedIndex::open(
        dir.join("index"),
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
    let corpus = dir.join("corpus.jsonl");
    let lines: Vec<String> = records.iter().map(|r| r.to_string()).collect();
    std::fs::write(&corpus, lines.join("\n")).unwrap();
    let options = IngestOptions {
        corpus: CorpusMode::Corpus,
        ..Default::default()
    };
    let report = Ingester::new(&chunker, &embedder, &index, options)
        .run(&[corpus], &|_| {})
        .await
        .unwrap();
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    Arc::new(HybridRetriever::new(
        embedder,
        index,
        RetrievalConfig::default(),
    ))
}

/// Passages as gold context.
pub fn context(passages: &[(&str, &str)]) -> Vec<Passage> {
    passages
        .iter()
        .map(|(t, x)| Passage::paragraph(*t, *x))
        .collect()
}

/// A request's messages as text, one `--- role ---` header each (prompt snapshots).
pub fn render(messages: &[metarag_core::Message]) -> String {
    messages
        .iter()
        .map(|m| format!("--- {} ---\n{}", m.role.as_str(), m.content))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The last prompt the scripted model received whose text contains `needle`.
pub fn last_prompt(llm: &metarag_testkit::ScriptedLlm, needle: &str) -> String {
    llm.calls()
        .iter()
        .rev()
        .map(|r| render(&r.messages))
        .find(|p| p.contains(needle))
        .unwrap_or_default()
}

/// The Jaws paragraphs of `branches` with two distractors, plus `extra`, indexed with the
/// real embedder: a small corpus where the second hop must be searched for.
pub async fn jaws_index(dir: &Path, extra: &[(&str, &str)]) -> Arc<dyn DynRetriever> {
    let mut passages: Vec<(&str, &str)> = vec![
        branches::JAWS,
        branches::SPIELBERG,
        (
            "Roy Scheider",
            "Roy Scheider was an American actor born in Orange, New Jersey.",
        ),
        (
            "Amity Island",
            "Amity Island is a fictional island in the film Jaws.",
        ),
    ];
    passages.extend_from_slice(extra);
    let passages: Vec<(String, String)> = passages
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    index(dir, &passages).await
}
