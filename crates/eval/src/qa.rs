//! The QA benchmark runner: every sampled question through every strategy, scored the way
//! the papers score, each result appended to a results file as it finishes (so a run
//! interrupted at any point continues where it stopped), and a run record at the end.

use crate::metrics::{AnswerScores, score_answer};
use crate::{QaRecord, stats};
use metarag_agent::verify::without_citations;
use metarag_agent::{Agent, AgentConfig, Ask, Passage, StopReason, Strategy, Trace};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

/// Where a question's evidence comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    /// The question's own supporting paragraphs are the only sources (no index).
    Gold,
    /// The data set's corpus is indexed and every strategy retrieves from it.
    Open,
}

impl Protocol {
    /// The name in file names and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Gold => "gold",
            Protocol::Open => "open",
        }
    }
}

/// What a run was: everything needed to reproduce it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunConfig {
    /// Data set name (hotpotqa, 2wikimultihopqa, musique, or the file's stem).
    pub dataset: String,
    /// The questions file.
    pub dataset_path: String,
    /// Gold or open.
    pub protocol: Protocol,
    /// Questions sampled.
    pub n: usize,
    /// Sampling seed.
    pub seed: u64,
    /// Strategies, in report order.
    pub strategies: Vec<Strategy>,
    /// The chat model.
    pub model: String,
    /// The embedding model (open protocol).
    pub embedder: Option<String>,
    /// The agent's settings.
    pub agent: AgentConfig,
    /// Whether the LLM call cache was on.
    pub cache: bool,
}

impl RunConfig {
    /// Whether two configs produce the same results (so one can resume the other).
    pub fn same_experiment(&self, other: &RunConfig) -> bool {
        self == other
    }
}

/// One question answered by one strategy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuestionResult {
    /// The data set's id.
    pub id: String,
    /// The strategy.
    pub strategy: Strategy,
    /// The question.
    pub question: String,
    /// Question type (bridge, comparison, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Gold answers (canonical first).
    pub answers: Vec<String>,
    /// The scored prediction (the short answer, else the answer without citations).
    pub prediction: String,
    /// The full answer with citations.
    pub answer: String,
    /// EM, F1, precision, recall, Sub-EM.
    pub scores: AnswerScores,
    /// Open protocol: share of the supporting titles among the sources the answer was
    /// written from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub support_recall: Option<f64>,
    /// Wall time of the question.
    pub latency_ms: f64,
    /// Why the question failed, if it did (it still counts, with zero scores).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The agent's trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<Trace>,
}

impl QuestionResult {
    /// The results-file key: a question under a strategy.
    pub fn key(&self) -> (String, Strategy) {
        (self.id.clone(), self.strategy)
    }
}

/// The gold context of a record: its supporting paragraphs (all paragraphs when none are
/// marked).
pub fn gold_context(record: &QaRecord) -> Vec<Passage> {
    let supporting: Vec<&crate::QaContext> =
        record.contexts.iter().filter(|c| c.is_supporting).collect();
    let chosen: Vec<&crate::QaContext> = if supporting.is_empty() {
        record.contexts.iter().collect()
    } else {
        supporting
    };
    chosen
        .into_iter()
        .map(|c| Passage::paragraph(c.title.clone(), c.text.clone()))
        .collect()
}

/// Answers one question with one strategy and scores it. Never fails: an error is
/// recorded in the result.
pub async fn run_question(
    agent: &Agent,
    record: &QaRecord,
    strategy: Strategy,
    protocol: Protocol,
) -> QuestionResult {
    let mut ask = Ask::new(record.question.clone(), strategy);
    if protocol == Protocol::Gold && strategy != Strategy::Direct {
        ask = ask.with_context(gold_context(record));
    }
    let started = Instant::now();
    let outcome = agent.ask(&ask).await;
    let latency_ms = started.elapsed().as_secs_f64() * 1e3;
    let mut result = QuestionResult {
        id: record.id.clone(),
        strategy,
        question: record.question.clone(),
        kind: record.kind.clone(),
        answers: record.answers.clone(),
        prediction: String::new(),
        answer: String::new(),
        scores: AnswerScores::default(),
        support_recall: None,
        latency_ms,
        error: None,
        trace: None,
    };
    let trace = match outcome {
        Ok(t) => t,
        Err(e) => {
            result.error = Some(e.to_string());
            return result;
        }
    };
    if let StopReason::Failed(m) = &trace.stop {
        result.error = Some(m.clone());
    }
    result.answer = trace.answer.clone();
    result.prediction = if trace.short_answer.trim().is_empty() {
        without_citations(&trace.answer)
    } else {
        trace.short_answer.clone()
    };
    result.scores = score_answer(&result.prediction, &record.answers);
    if protocol == Protocol::Open
        && strategy != Strategy::Direct
        && !record.supporting_titles.is_empty()
    {
        let titles: HashSet<&str> = trace
            .sources
            .iter()
            .map(|s| s.passage.title.as_str())
            .collect();
        let found = record
            .supporting_titles
            .iter()
            .filter(|t| titles.contains(t.as_str()))
            .count();
        result.support_recall = Some(found as f64 / record.supporting_titles.len() as f64);
    }
    result.trace = Some(trace);
    result
}

/// Runs every (question, strategy) pair not in `done`, `concurrency` at a time, handing
/// each result to `on_result` as it finishes (to append it to the results file and move
/// the progress bar).
pub async fn run_all(
    agent: &Agent,
    records: &[QaRecord],
    strategies: &[Strategy],
    protocol: Protocol,
    concurrency: usize,
    done: &HashSet<(String, Strategy)>,
    mut on_result: impl FnMut(QuestionResult),
) {
    let semaphore = Arc::new(tokio::sync::Semaphore::new(concurrency.max(1)));
    let mut tasks = tokio::task::JoinSet::new();
    // Strategy-major order: with concurrency 1 a strategy's results come in together.
    for &strategy in strategies {
        for record in records {
            if done.contains(&(record.id.clone(), strategy)) {
                continue;
            }
            let permit = semaphore.clone();
            let agent = agent.clone();
            let record = record.clone();
            tasks.spawn(async move {
                let _permit = permit.acquire_owned().await;
                run_question(&agent, &record, strategy, protocol).await
            });
            // Keep the set bounded so results stream out in order of submission.
            while tasks.len() >= concurrency.max(1) * 2 {
                if let Some(Ok(r)) = tasks.join_next().await {
                    on_result(r);
                }
            }
        }
    }
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok(r) => on_result(r),
            Err(e) => tracing::error!("a benchmark task panicked: {e}"),
        }
    }
}

/// Picks the questions of a run: records sorted by id, a seeded shuffle, the first `n`.
pub fn sample(mut records: Vec<QaRecord>, n: usize, seed: u64) -> Vec<QaRecord> {
    records.sort_by(|a, b| a.id.cmp(&b.id));
    let idx = stats::sample_indices(records.len(), n, seed);
    idx.into_iter().map(|i| records[i].clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::QaContext;

    fn record(id: &str) -> QaRecord {
        QaRecord {
            id: id.into(),
            dataset: "t".into(),
            question: "q?".into(),
            answers: vec!["a".into()],
            kind: None,
            supporting_titles: vec!["S".into()],
            contexts: vec![
                QaContext {
                    title: "D".into(),
                    text: "distractor".into(),
                    is_supporting: false,
                },
                QaContext {
                    title: "S".into(),
                    text: "support".into(),
                    is_supporting: true,
                },
            ],
        }
    }

    #[test]
    fn gold_context_is_the_supporting_paragraphs() {
        let g = gold_context(&record("1"));
        assert_eq!(g.len(), 1);
        assert_eq!(g[0].title, "S");
        let mut r = record("2");
        r.contexts.iter_mut().for_each(|c| c.is_supporting = false);
        assert_eq!(gold_context(&r).len(), 2);
    }

    #[test]
    fn sampling_ignores_input_order() {
        let a: Vec<QaRecord> = ["c", "a", "b", "d"].iter().map(|i| record(i)).collect();
        let mut b = a.clone();
        b.reverse();
        let ids = |v: Vec<QaRecord>| v.into_iter().map(|r| r.id).collect::<Vec<_>>();
        assert_eq!(ids(sample(a, 2, 42)), ids(sample(b, 2, 42)));
    }
}
