//! The QA benchmark runner: every sampled question through every strategy, scored the way
//! the papers score, each result appended to a results file as it finishes (so a run
//! interrupted at any point continues where it stopped), and a run record at the end.

use crate::metrics::{AnswerScores, score_answer};
use crate::monitor::{Split, split_of};
use crate::{QaRecord, stats};
use metarag_agent::verify::without_citations;
use metarag_agent::{Agent, AgentConfig, Ask, Passage, StopReason, StrategyId, Trace};
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
    /// The half of the data the questions were drawn from (`None`: both).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<Split>,
    /// The share of questions made unanswerable (`bench --unanswerable`; see
    /// [`crate::unanswerable`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unanswerable: Option<f64>,
    /// Strategies, in report order.
    pub strategies: Vec<StrategyId>,
    /// The chat model.
    pub model: String,
    /// The embedding model (open protocol).
    pub embedder: Option<String>,
    /// The agent's settings (records of any version: see [`agent_config_of_any_record`]).
    #[serde(deserialize_with = "agent_config_of_any_record")]
    pub agent: AgentConfig,
    /// Whether the LLM call cache was on.
    pub cache: bool,
    /// Each strategy's own settings (`[strategies.NAME]`, defaults filled in), e.g. the
    /// monitor's weights and threshold metarag ran with. Empty in records written before
    /// they were recorded.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub strategy_settings: std::collections::BTreeMap<String, serde_json::Value>,
    /// The role models' settings (`[roles.NAME]`), where any were configured.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub roles: std::collections::BTreeMap<String, serde_json::Value>,
}

/// Fields of the first gate (faithfulness / completeness / citation thresholds, an LLM
/// critic) that records written before the monitor replaced it still carry. They never
/// affect a run of today's code, so they are dropped on reading.
const RETIRED_AGENT_FIELDS: [&str; 7] = [
    "faithfulness_threshold",
    "completeness_threshold",
    "citation_precision_threshold",
    "fast_path_threshold",
    "evaluator_confidence_threshold",
    "convergence_threshold",
    "critic_timeout",
];

/// Reads the agent settings of a record of any version: today's shape (the `[agent]`
/// section of `metarag.toml`), or the shape written until the config was deserialised
/// directly (`routes` as an array of three, the budget's deadline as `{secs, nanos}`, the
/// retired gate fields), so old records can still be reported and resumed.
fn agent_config_of_any_record<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<AgentConfig, D::Error> {
    use serde::de::Error as _;
    let mut v = serde_json::Value::deserialize(d)?;
    if let Some(o) = v.as_object_mut() {
        for f in RETIRED_AGENT_FIELDS {
            o.remove(f);
        }
        // Runs recorded before abstaining existed always answered.
        o.entry("abstain").or_insert_with(|| "off".into());
        if let Some(serde_json::Value::Array(routes)) = o.remove("routes") {
            if routes.len() != 3 {
                return Err(D::Error::custom("agent.routes: expected three routes"));
            }
            for (name, r) in ["simple", "complex", "multi_hop"].into_iter().zip(routes) {
                o.insert(name.to_string(), r);
            }
        }
        if let Some(b) = o.get_mut("budget").and_then(|b| b.as_object_mut())
            && let Some(deadline) = b.remove("deadline")
        {
            let secs = deadline
                .get("secs")
                .cloned()
                .ok_or_else(|| D::Error::custom("agent.budget.deadline: expected {secs, nanos}"))?;
            b.insert("deadline_secs".into(), secs);
        }
    }
    serde_json::from_value(v).map_err(D::Error::custom)
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
    pub strategy: StrategyId,
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
    /// RAGAS-style scores, when asked for (`bench --ragas`, `bench report --ragas`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ragas: Option<crate::ragas::RagasScores>,
    /// An LLM judge's verdict on the prediction, when asked for (`bench judge`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<crate::judge::Verdict>,
}

impl QuestionResult {
    /// The results-file key: a question under a strategy.
    pub fn key(&self) -> (String, StrategyId) {
        (self.id.clone(), self.strategy.clone())
    }

    /// A zero-scored result for a question that could not be answered: a failure is a
    /// row of the table, never a missing one.
    pub fn failed(record: &QaRecord, strategy: &StrategyId, error: String) -> Self {
        QuestionResult {
            id: record.id.clone(),
            strategy: strategy.clone(),
            question: record.question.clone(),
            kind: record.kind.clone(),
            answers: record.answers.clone(),
            prediction: String::new(),
            answer: String::new(),
            scores: AnswerScores::default(),
            support_recall: None,
            latency_ms: 0.0,
            error: Some(error),
            trace: None,
            ragas: None,
            judge: None,
        }
    }
}

/// The gold context of a record: its supporting paragraphs (all paragraphs when none are
/// marked).
///
/// An unanswerable question's gold context is the rest: its distractors, without any
/// paragraph of a supporting title.
pub fn gold_context(record: &QaRecord) -> Vec<Passage> {
    if record.unanswerable {
        return record
            .contexts
            .iter()
            .filter(|c| !c.is_supporting && !record.supporting_titles.contains(&c.title))
            .map(|c| Passage::paragraph(c.title.clone(), c.text.clone()))
            .collect();
    }
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
    strategy: &StrategyId,
    protocol: Protocol,
) -> QuestionResult {
    let needs_evidence = match agent.registry().get(strategy.as_str()) {
        Ok(s) => s.needs_evidence(),
        Err(e) => return QuestionResult::failed(record, strategy, e.to_string()),
    };
    let mut ask = Ask::new(record.question.clone(), strategy.clone());
    if protocol == Protocol::Gold && needs_evidence {
        ask = ask.with_context(gold_context(record));
    }
    let started = Instant::now();
    let outcome = agent.ask(&ask).await;
    let mut result = QuestionResult::failed(record, strategy, String::new());
    result.error = None;
    result.latency_ms = started.elapsed().as_secs_f64() * 1e3;
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
    if protocol == Protocol::Open && needs_evidence && !record.supporting_titles.is_empty() {
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
/// the progress bar). One at a time, each pair starts with the model's context forgotten
/// ([`Agent::forget_context`]): a strategy that follows another on the same question
/// would otherwise find its sources already evaluated in a local model's KV cache and be
/// timed faster than it runs alone.
pub async fn run_all(
    agent: &Agent,
    records: &[QaRecord],
    strategies: &[StrategyId],
    protocol: Protocol,
    concurrency: usize,
    done: &HashSet<(String, StrategyId)>,
    mut on_result: impl FnMut(QuestionResult),
) {
    let semaphore = Arc::new(tokio::sync::Semaphore::new(concurrency.max(1)));
    let one_at_a_time = concurrency <= 1;
    let mut tasks = tokio::task::JoinSet::new();
    let mut deliver = |joined: Option<Result<QuestionResult, tokio::task::JoinError>>| {
        match joined {
            Some(Ok(r)) => on_result(r),
            // Unreachable: each task catches its question's panic below.
            Some(Err(e)) => tracing::error!("a benchmark task failed: {e}"),
            None => {}
        }
    };
    // Question-major order: every strategy answers a question before the next question
    // starts, so a run stopped part-way is still a paired comparison over the questions it
    // finished (and a question's later strategies find its shared calls in the cache).
    for record in records {
        for strategy in strategies {
            if done.contains(&(record.id.clone(), strategy.clone())) {
                continue;
            }
            let permit = semaphore.clone();
            let agent = agent.clone();
            let record = record.clone();
            let strategy = strategy.clone();
            tasks.spawn(async move {
                let _permit = permit.acquire_owned().await;
                if one_at_a_time {
                    agent.forget_context().await;
                }
                // The question runs in its own task so a panic in it becomes a failed,
                // zero-scored result of this question instead of a missing row.
                let (r, s) = (record.clone(), strategy.clone());
                let inner = tokio::spawn(async move {
                    run_question(&agent, &record, &strategy, protocol).await
                });
                match inner.await {
                    Ok(result) => result,
                    Err(e) => QuestionResult::failed(&r, &s, format!("the run panicked: {e}")),
                }
            });
            // Keep the set bounded so results stream out in order of submission.
            while tasks.len() >= concurrency.max(1) * 2 {
                deliver(tasks.join_next().await);
            }
        }
    }
    while let Some(joined) = tasks.join_next().await {
        deliver(Some(joined));
    }
}

/// Picks the questions of a run: records sorted by id, a seeded shuffle, the first `n`.
pub fn sample(records: Vec<QaRecord>, n: usize, seed: u64) -> Vec<QaRecord> {
    sample_split(records, n, seed, None)
}

/// Like [`sample`], keeping only questions of one half of the data (by the hash of their
/// id): the first `n` of that half in the same seeded order, so a run over one half holds
/// the same questions as that half of a larger run over both.
pub fn sample_split(
    mut records: Vec<QaRecord>,
    n: usize,
    seed: u64,
    split: Option<Split>,
) -> Vec<QaRecord> {
    records.sort_by(|a, b| a.id.cmp(&b.id));
    let order = stats::sample_indices(records.len(), records.len(), seed);
    order
        .into_iter()
        .map(|i| &records[i])
        .filter(|r| split.is_none_or(|s| split_of(r.split_id()) == s))
        .take(n)
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::QaContext;

    /// The agent section of a record written before the config was deserialised directly
    /// (the header of the MuSiQue run in docs/results/qa/in-progress, verbatim).
    const LEGACY_AGENT: &str = r#"{"routes":[{"top_k":5,"rerank":false,"hops":1},{"top_k":10,"rerank":true,"hops":1},{"top_k":10,"rerank":true,"hops":3}],"plan_with_llm":true,"evidence_coverage_threshold":0.45,"min_retrieval_diversity":0.25,"near_duplicate_threshold":0.9,"max_evidence_chars":6000,"faithfulness_threshold":0.7,"completeness_threshold":0.6,"citation_precision_threshold":0.4,"support_threshold":0.6,"fast_path_threshold":null,"evaluator_confidence_threshold":0.4,"max_rounds":3,"convergence_threshold":0.85,"judge_weight":0.25,"critic_timeout":{"secs":120,"nanos":0},"answer_max_tokens":256,"budget":{"max_steps":64,"max_llm_calls":40,"max_tokens":200000,"deadline":{"secs":600,"nanos":0}}}"#;

    fn config_with_agent(agent: &str) -> String {
        format!(
            r#"{{"dataset":"musique","dataset_path":"x.jsonl","protocol":"open","n":100,"seed":42,"strategies":["standard"],"model":"m","embedder":null,"agent":{agent},"cache":true}}"#
        )
    }

    #[test]
    fn records_of_the_old_agent_shape_read_as_todays_config_and_still_resume() {
        let old: RunConfig = serde_json::from_str(&config_with_agent(LEGACY_AGENT)).unwrap();
        // Old records never declined to answer: they read as `abstain = "off"`.
        let answering = AgentConfig {
            abstain: metarag_agent::Abstain::Off,
            ..AgentConfig::default()
        };
        assert_eq!(old.agent, answering);
        let today = serde_json::to_string(&answering).unwrap();
        let new: RunConfig = serde_json::from_str(&config_with_agent(&today)).unwrap();
        assert!(old.same_experiment(&new));
        // A changed setting in an old record is kept, not defaulted.
        let changed = LEGACY_AGENT.replace(r#""max_rounds":3"#, r#""max_rounds":1"#);
        let old: RunConfig = serde_json::from_str(&config_with_agent(&changed)).unwrap();
        assert_eq!(old.agent.max_rounds, 1);
        assert!(!old.same_experiment(&new));
    }

    fn record(id: &str) -> QaRecord {
        QaRecord {
            id: id.into(),
            dataset: "t".into(),
            question: "q?".into(),
            answers: vec!["a".into()],
            kind: None,
            supporting_titles: vec!["S".into()],
            original_id: None,
            unanswerable: false,
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
        // Unanswerable: the distractors only, even where the support is unmarked.
        r.unanswerable = true;
        let g = gold_context(&r);
        assert_eq!(
            g.iter().map(|p| p.title.as_str()).collect::<Vec<_>>(),
            ["D"]
        );
    }

    #[test]
    fn a_split_sample_is_that_half_of_the_seeded_order() {
        let records: Vec<QaRecord> = (0..200).map(|i| record(&format!("q{i}"))).collect();
        let all = sample(records.clone(), 200, 42);
        let report = sample_split(records.clone(), 30, 42, Some(Split::Report));
        assert_eq!(report.len(), 30);
        assert!(report.iter().all(|r| split_of(&r.id) == Split::Report));
        // The same questions, in the same order, as the reporting half of a larger run.
        let expected: Vec<&str> = all
            .iter()
            .filter(|r| split_of(&r.id) == Split::Report)
            .take(30)
            .map(|r| r.id.as_str())
            .collect();
        assert_eq!(
            report.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
            expected
        );
        // Without a split, the first n of the seeded order.
        let ten: Vec<String> = sample(records, 10, 42).into_iter().map(|r| r.id).collect();
        let first: Vec<String> = all.into_iter().take(10).map(|r| r.id).collect();
        assert_eq!(ten, first);
    }

    /// A model that panics on every call.
    struct Panicking;

    impl metarag_core::Llm for Panicking {
        fn model_id(&self) -> &str {
            "panicking"
        }
        async fn chat(
            &self,
            _: &metarag_core::ChatRequest,
        ) -> metarag_core::Result<metarag_core::Completion> {
            panic!("boom")
        }
    }

    #[tokio::test]
    async fn a_question_whose_run_panics_is_a_failed_zero_scored_row() {
        let agent = Agent::builder(Arc::new(Panicking)).build().unwrap();
        let records = vec![record("1"), record("2")];
        let strategies = vec![StrategyId::new("standard"), StrategyId::new("direct")];
        let run = |concurrency| {
            let (agent, records, strategies) = (&agent, &records, &strategies);
            async move {
                let mut results = Vec::new();
                let none = HashSet::new();
                run_all(
                    agent,
                    records,
                    strategies,
                    Protocol::Gold,
                    concurrency,
                    &none,
                    |r| results.push(r),
                )
                .await;
                results
            }
        };
        let results = run(2).await;
        assert_eq!(
            results.len(),
            4,
            "every (question, strategy) pair has a row"
        );
        for r in &results {
            assert!(
                r.error.as_deref().is_some_and(|e| e.contains("panicked")),
                "{:?}",
                r.error
            );
            assert_eq!(r.scores.f1, 0.0);
        }
        // One at a time, question-major: a run stopped part-way is a paired comparison.
        let order: Vec<(String, String)> = run(1)
            .await
            .into_iter()
            .map(|r| (r.id, r.strategy.to_string()))
            .collect();
        let pair = |id: &str, s: &str| (id.to_string(), s.to_string());
        assert_eq!(
            order,
            [
                pair("1", "standard"),
                pair("1", "direct"),
                pair("2", "standard"),
                pair("2", "direct")
            ]
        );
    }

    #[tokio::test]
    async fn an_unknown_strategy_is_a_failed_row_naming_the_registered_ones() {
        let agent = Agent::builder(Arc::new(Panicking)).build().unwrap();
        let r = run_question(
            &agent,
            &record("1"),
            &StrategyId::new("nope"),
            Protocol::Gold,
        )
        .await;
        assert!(r.error.unwrap().contains("registered: direct"));
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
