//! Run records, their summary statistics, and the markdown + SVG report `metarag bench
//! report` writes: the record and its statistics here, the published numbers beside which
//! a report sets them in [`baselines`], the markdown in [`markdown`](markdown()), the SVG
//! plots in [`plots`](plots()).

mod baselines;
mod markdown;
mod plots;

pub use baselines::{Baseline, baselines};
pub use markdown::markdown;
pub use plots::plots;

use crate::metrics::score_answer;
use crate::qa::{QuestionResult, RunConfig};
use crate::retrieval::percentile;
use crate::stats::{Estimate, bootstrap};
use crate::truth::{Truth, TruthScores, classify, truth_scores};
use crate::{Error, Result};
use metarag_agent::{StopReason, StrategyId};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// Version of the run-record format.
pub const RECORD_VERSION: u32 = 1;

/// Everything about a run: its config, provenance, per-question results with traces, and
/// the summary.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunRecord {
    /// [`RECORD_VERSION`].
    pub version: u32,
    /// What ran.
    pub config: RunConfig,
    /// The command line.
    pub command: String,
    /// The git commit of the code that ran (with `-dirty` for uncommitted changes).
    pub git_commit: Option<String>,
    /// Commits that wrote earlier parts of a resumed run, when they differ from
    /// `git_commit` ("unknown" when a part predates commit tracking).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub earlier_commits: Vec<String>,
    /// Unix seconds at the start and end.
    pub started_at: u64,
    /// See `started_at`.
    pub finished_at: u64,
    /// Per strategy.
    pub summary: Vec<StrategySummary>,
    /// Per question and strategy.
    pub results: Vec<QuestionResult>,
}

impl RunRecord {
    /// Reads a run record.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::Io {
            path: path.to_path_buf(),
            source: e,
        })?;
        serde_json::from_str(&text).map_err(|e| Error::Record {
            path: path.to_path_buf(),
            line: e.line(),
            reason: format!("not a run record: {e}"),
        })
    }
}

/// How a question's metacognitive loop ended (seed `000`'s rounds table).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct RoundsHistogram {
    /// No remediation (the first answer passed, or nothing to remediate).
    pub none: usize,
    /// Stopped after 1..max-1 remediation rounds (passed or converged).
    pub early: usize,
    /// Ran all remediation rounds.
    pub hit_max: usize,
    /// Stopped by the budget guard.
    pub budget: usize,
}

/// Mean and spread of one metric over the questions of a group.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GroupScores {
    /// Questions.
    pub n: usize,
    /// Exact match.
    pub em: f64,
    /// Token F1.
    pub f1: f64,
    /// Truthfulness (CRAG: +1 correct, 0 missing, -1 hallucinated; [`crate::truth`]).
    #[serde(default)]
    pub truthfulness: f64,
    /// Share of answers hallucinated.
    #[serde(default)]
    pub hallucination: f64,
}

/// The summary of one strategy in a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StrategySummary {
    /// The strategy.
    pub strategy: String,
    /// Questions answered (including failed ones).
    pub questions: usize,
    /// Questions that failed (counted with zero scores).
    pub errors: usize,
    /// EM with its bootstrap 95% interval.
    pub em: Estimate,
    /// F1 with its interval.
    pub f1: Estimate,
    /// Token precision.
    pub precision: Estimate,
    /// Token recall.
    pub recall: Estimate,
    /// Sub-EM (a gold answer's tokens appear in order inside the prediction).
    pub sub_em: Estimate,
    /// Open protocol: supporting titles among the sources.
    pub support_recall: Option<Estimate>,
    /// Per question type.
    pub by_type: BTreeMap<String, GroupScores>,
    /// How the loop ended.
    pub rounds: RoundsHistogram,
    /// Mean remediation rounds.
    pub avg_rounds: f64,
    /// First-diagnosis category -> scores of those questions.
    pub by_category: BTreeMap<String, GroupScores>,
    /// Share of questions whose first answer passed the gate.
    pub passed_first: f64,
    /// Mean LLM calls per question.
    pub llm_calls: f64,
    /// Mean prompt + completion tokens per question.
    pub tokens: f64,
    /// Share of calls answered from the cache.
    pub cache_hit_rate: f64,
    /// Questions the timings are over: those whose time is known (see [`compute_seconds`]).
    #[serde(default)]
    pub timed: usize,
    /// Median seconds per question.
    pub latency_p50_s: f64,
    /// 95th percentile seconds per question.
    pub latency_p95_s: f64,
    /// Node -> (median, 95th percentile) seconds per question spent in it.
    pub node_latency_s: BTreeMap<String, (f64, f64)>,
    /// Mean orchestration overhead as a share of wall time.
    pub overhead_share: f64,
    /// The strategy's own counters ([`metarag_agent::Trace::metrics`]), each averaged over
    /// the questions whose traces have it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metrics: BTreeMap<String, f64>,
    /// RAGAS-style means (`faithfulness`, `answer_relevancy`, `context_precision`,
    /// `context_recall`) over the questions scored, with how many (`n`), when scored.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub ragas: BTreeMap<String, f64>,
    /// The judge of those scores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ragas_judge: Option<String>,
    /// How the model's prompts were spent: tokens per question, how many the local
    /// model's KV cache served again (prefix reuse), and the same per call purpose.
    #[serde(default)]
    pub token_use: TokenUse,
    /// Share of answers an LLM judge found correct, over the judged ones, with the judge
    /// model and how many it judged (`bench judge`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<(f64, String, usize)>,
    /// Truthfulness by CRAG's rules ([`crate::truth`]): correct, missing (refused) or
    /// hallucinated, and the score accuracy minus hallucination.
    #[serde(default)]
    pub truth: TruthScores,
}

/// Prompt and completion tokens of a strategy's LLM calls, per question, counted from each
/// call's usage in the traces. A call replayed from the call cache counts as it was
/// computed, with the prompt tokens the KV cache served then: what the strategy costs the
/// model, not what a replay cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TokenUse {
    /// Prompt tokens per question.
    pub prompt: f64,
    /// Of those, tokens served from the model's KV cache (a prefix kept from the call
    /// before) instead of evaluated; 0 for backends that do not report it.
    pub reused: f64,
    /// Completion tokens per question.
    pub generated: f64,
    /// Per call purpose ("write", "sample", "plan", ...).
    pub by_purpose: BTreeMap<String, PurposeTokens>,
}

impl TokenUse {
    /// Prompt tokens the model evaluated per question.
    pub fn evaluated(&self) -> f64 {
        self.prompt - self.reused
    }

    /// Share of prompt tokens served from the KV cache.
    pub fn reuse_rate(&self) -> f64 {
        if self.prompt > 0.0 {
            self.reused / self.prompt
        } else {
            0.0
        }
    }

    fn of(rs: &[&QuestionResult]) -> TokenUse {
        #[derive(Default)]
        struct Sums {
            calls: u64,
            prompt: u64,
            reused: u64,
        }
        let (mut prompt, mut reused, mut generated) = (0u64, 0u64, 0u64);
        let mut purposes: BTreeMap<&str, Sums> = BTreeMap::new();
        for c in rs
            .iter()
            .filter_map(|r| r.trace.as_ref())
            .flat_map(|t| &t.calls)
        {
            prompt += c.prompt_tokens;
            reused += c.cached_prompt_tokens;
            generated += c.completion_tokens;
            let p = purposes.entry(c.purpose.as_str()).or_default();
            p.calls += 1;
            p.prompt += c.prompt_tokens;
            p.reused += c.cached_prompt_tokens;
        }
        let n = rs.len().max(1) as f64;
        TokenUse {
            prompt: prompt as f64 / n,
            reused: reused as f64 / n,
            generated: generated as f64 / n,
            by_purpose: purposes
                .into_iter()
                .map(|(k, p)| {
                    (
                        k.to_string(),
                        PurposeTokens {
                            calls: p.calls as f64 / n,
                            prompt: p.prompt as f64 / n,
                            reused: p.reused as f64 / n,
                        },
                    )
                })
                .collect(),
        }
    }
}

/// One call purpose's share of [`TokenUse`], per question.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PurposeTokens {
    /// Calls per question.
    pub calls: f64,
    /// Prompt tokens per question.
    pub prompt: f64,
    /// Of those, served from the KV cache.
    pub reused: f64,
}

/// The strategy the metacognitive section compares with: the papers' standard RAG row.
const BASELINE: &str = "standard";

/// Whether a strategy's answers went through a monitoring gate (its traces have
/// monitored rounds): the report's metacognitive section is about those.
fn gated(record: &RunRecord, strategy: &str) -> bool {
    record.results.iter().any(|q| {
        q.strategy == strategy
            && q.trace
                .as_ref()
                .is_some_and(|t| t.rounds.iter().any(|r| r.gate_passed().is_some()))
    })
}

/// Summarises a run's results per strategy, in `strategies` order.
pub fn summarize(
    strategies: &[StrategyId],
    results: &[QuestionResult],
    max_rounds: usize,
) -> Vec<StrategySummary> {
    strategies
        .iter()
        .map(|s| {
            let rs: Vec<&QuestionResult> = results.iter().filter(|r| r.strategy == *s).collect();
            summarize_one(s, &rs, max_rounds)
        })
        .collect()
}

/// Seconds a question took as computed: its wall time, with each call replayed from the
/// call cache counted at what it took when the model computed it (a replay takes
/// milliseconds, which would make a resumed or repeated run look fast). `None` when a
/// replayed call does not know that time (traces from before it was kept).
pub fn compute_seconds(r: &QuestionResult) -> Option<f64> {
    let Some(t) = &r.trace else {
        return Some(r.latency_ms / 1e3);
    };
    let mut ms = r.latency_ms;
    for c in t.calls.iter().filter(|c| c.cached) {
        ms += c.original_ms? - c.ms;
    }
    Some(ms / 1e3)
}

/// Whether a question's time is known (see [`compute_seconds`]).
pub fn timed(r: &QuestionResult) -> bool {
    compute_seconds(r).is_some()
}

fn group(rs: &[&QuestionResult]) -> GroupScores {
    let n = rs.len().max(1) as f64;
    let truths: Vec<Truth> = rs.iter().map(|r| classify(r).0).collect();
    GroupScores {
        n: rs.len(),
        em: rs.iter().map(|r| r.scores.em).sum::<f64>() / n,
        f1: rs.iter().map(|r| r.scores.f1).sum::<f64>() / n,
        truthfulness: truths.iter().map(|t| t.score()).sum::<f64>() / n,
        hallucination: truths.iter().filter(|t| **t == Truth::Hallucinated).count() as f64 / n,
    }
}

fn summarize_one(
    strategy: &StrategyId,
    rs: &[&QuestionResult],
    max_rounds: usize,
) -> StrategySummary {
    let col =
        |f: &dyn Fn(&QuestionResult) -> f64| -> Vec<f64> { rs.iter().map(|r| f(r)).collect() };
    let seed = 0x5EED;
    let mut by_type: BTreeMap<String, Vec<&QuestionResult>> = BTreeMap::new();
    let mut by_category: BTreeMap<String, Vec<&QuestionResult>> = BTreeMap::new();
    let mut rounds = RoundsHistogram::default();
    let (mut total_rounds, mut passed_first, mut calls, mut tokens, mut cached) =
        (0usize, 0usize, 0u64, 0u64, 0u64);
    let mut node_times: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut overhead = Vec::new();
    let mut metrics: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for r in rs {
        by_type
            .entry(r.kind.clone().unwrap_or_else(|| "all".into()))
            .or_default()
            .push(r);
        let Some(t) = &r.trace else { continue };
        let rem = t.remediation_rounds();
        total_rounds += rem;
        if matches!(t.stop, StopReason::Budget(_)) {
            rounds.budget += 1;
        } else if rem == 0 {
            rounds.none += 1;
        } else if rem < max_rounds {
            rounds.early += 1;
        } else {
            rounds.hit_max += 1;
        }
        if t.rounds.first().and_then(|r| r.gate_passed()) == Some(true) {
            passed_first += 1;
        }
        if let Some(c) = t.categories().first() {
            by_category
                .entry(c.as_str().to_string())
                .or_default()
                .push(r);
        }
        for (k, v) in &t.metrics {
            metrics.entry(k.clone()).or_default().push(*v);
        }
        calls += t.usage.llm_calls;
        tokens += t.usage.prompt_tokens + t.usage.completion_tokens;
        cached += t.usage.cached_calls;
        let Some(secs) = compute_seconds(r) else {
            continue;
        };
        let mut per_node: HashMap<&str, f64> = HashMap::new();
        for e in &t.graph.events {
            *per_node.entry(e.node.as_str()).or_default() += e.elapsed_ms / 1e3;
        }
        for c in t.calls.iter().filter(|c| c.cached) {
            // `compute_seconds` returned, so every replayed call knows its time.
            let replayed = c.original_ms.unwrap_or(c.ms) - c.ms;
            *per_node.entry(c.node.as_str()).or_default() += replayed / 1e3;
        }
        for (node, secs) in per_node {
            node_times.entry(node.to_string()).or_default().push(secs);
        }
        if secs > 0.0 {
            overhead.push(t.graph.overhead_ms / 1e3 / secs);
        }
    }
    let n = rs.len().max(1) as f64;
    let latency: Vec<f64> = rs.iter().filter_map(|r| compute_seconds(r)).collect();
    let support: Vec<f64> = rs.iter().filter_map(|r| r.support_recall).collect();
    StrategySummary {
        strategy: strategy.to_string(),
        questions: rs.len(),
        errors: rs.iter().filter(|r| r.error.is_some()).count(),
        em: bootstrap(&col(&|r| r.scores.em), 1000, seed),
        f1: bootstrap(&col(&|r| r.scores.f1), 1000, seed),
        precision: bootstrap(&col(&|r| r.scores.precision), 1000, seed),
        recall: bootstrap(&col(&|r| r.scores.recall), 1000, seed),
        sub_em: bootstrap(&col(&|r| r.scores.sub_em), 1000, seed),
        support_recall: (!support.is_empty()).then(|| bootstrap(&support, 1000, seed)),
        truth: truth_scores(rs, 1000, seed),
        by_type: by_type.iter().map(|(k, v)| (k.clone(), group(v))).collect(),
        rounds,
        avg_rounds: total_rounds as f64 / n,
        by_category: by_category
            .iter()
            .map(|(k, v)| (k.clone(), group(v)))
            .collect(),
        passed_first: passed_first as f64 / n,
        llm_calls: calls as f64 / n,
        tokens: tokens as f64 / n,
        cache_hit_rate: if calls == 0 {
            0.0
        } else {
            cached as f64 / calls as f64
        },
        timed: latency.len(),
        latency_p50_s: percentile(&latency, 50.0),
        latency_p95_s: percentile(&latency, 95.0),
        node_latency_s: node_times
            .into_iter()
            .map(|(k, v)| (k, (percentile(&v, 50.0), percentile(&v, 95.0))))
            .collect(),
        overhead_share: if overhead.is_empty() {
            0.0
        } else {
            overhead.iter().sum::<f64>() / overhead.len() as f64
        },
        metrics: metrics
            .into_iter()
            .map(|(k, v)| (k, v.iter().sum::<f64>() / v.len() as f64))
            .collect(),
        ragas: ragas_means(rs),
        judge: {
            let judged: Vec<&crate::judge::Verdict> =
                rs.iter().filter_map(|r| r.judge.as_ref()).collect();
            judged.first().map(|v| {
                let correct = judged.iter().filter(|v| v.correct).count();
                (
                    correct as f64 / judged.len() as f64,
                    v.model.clone(),
                    judged.len(),
                )
            })
        },
        ragas_judge: rs
            .iter()
            .find_map(|r| r.ragas.as_ref().map(|g| g.judge.clone())),
        token_use: TokenUse::of(rs),
    }
}

/// Each RAGAS metric's mean over the questions where it was scored, and `n`, the
/// questions scored at all.
fn ragas_means(rs: &[&QuestionResult]) -> BTreeMap<String, f64> {
    let scored: Vec<&crate::ragas::RagasScores> =
        rs.iter().filter_map(|r| r.ragas.as_ref()).collect();
    let mut out = BTreeMap::new();
    if scored.is_empty() {
        return out;
    }
    out.insert("n".to_string(), scored.len() as f64);
    type Get = fn(&crate::ragas::RagasScores) -> Option<f64>;
    let metrics: [(&str, Get); 4] = [
        ("faithfulness", |g| g.faithfulness),
        ("answer_relevancy", |g| g.answer_relevancy),
        ("context_precision", |g| g.context_precision),
        ("context_recall", |g| g.context_recall),
    ];
    for (name, get) in metrics {
        let v: Vec<f64> = scored.iter().filter_map(|g| get(g)).collect();
        if !v.is_empty() {
            out.insert(name.to_string(), v.iter().sum::<f64>() / v.len() as f64);
        }
    }
    out
}

/// Paired comparison of two strategies on the questions both answered: mean F1 difference
/// with a bootstrap interval, and wins / ties / losses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Paired {
    /// Questions both answered.
    pub n: usize,
    /// Mean F1 difference (a - b) with its interval.
    pub f1_delta: Estimate,
    /// Mean EM difference.
    pub em_delta: f64,
    /// Questions where a's F1 is higher.
    pub wins: usize,
    /// Equal F1.
    pub ties: usize,
    /// Questions where b's F1 is higher.
    pub losses: usize,
}

/// Compares strategy `a` with `b` question by question.
pub fn paired(results: &[QuestionResult], a: &StrategyId, b: &StrategyId) -> Paired {
    let bs: HashMap<&str, &QuestionResult> = results
        .iter()
        .filter(|r| r.strategy == *b)
        .map(|r| (r.id.as_str(), r))
        .collect();
    let pairs: Vec<(&QuestionResult, &QuestionResult)> = results
        .iter()
        .filter(|r| r.strategy == *a)
        .filter_map(|r| bs.get(r.id.as_str()).map(|o| (r, *o)))
        .collect();
    let deltas: Vec<f64> = pairs
        .iter()
        .map(|(x, y)| x.scores.f1 - y.scores.f1)
        .collect();
    Paired {
        n: pairs.len(),
        f1_delta: bootstrap(&deltas, 1000, 0x5EED),
        em_delta: if pairs.is_empty() {
            0.0
        } else {
            pairs
                .iter()
                .map(|(x, y)| x.scores.em - y.scores.em)
                .sum::<f64>()
                / pairs.len() as f64
        },
        wins: deltas.iter().filter(|d| **d > 1e-9).count(),
        ties: deltas.iter().filter(|d| d.abs() <= 1e-9).count(),
        losses: deltas.iter().filter(|d| **d < -1e-9).count(),
    }
}

/// Rescores every result (after a metric change) without rerunning anything.
pub fn rescore(record: &mut RunRecord) {
    for r in &mut record.results {
        r.scores = score_answer(&r.prediction, &r.answers);
    }
    record.summary = summarize(
        &record.config.strategies,
        &record.results,
        record.config.agent.max_rounds,
    );
}
