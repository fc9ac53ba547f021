//! Run records, their summary statistics, and the markdown + SVG report `metarag bench
//! report` writes.

use crate::metrics::score_answer;
use crate::qa::{QuestionResult, RunConfig};
use crate::retrieval::percentile;
use crate::stats::{Estimate, bootstrap};
use crate::{Error, Result};
use metarag_agent::{StopReason, StrategyId};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
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
    GroupScores {
        n: rs.len(),
        em: rs.iter().map(|r| r.scores.em).sum::<f64>() / n,
        f1: rs.iter().map(|r| r.scores.f1).sum::<f64>() / n,
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
    }
}

/// A published result to compare with (seed `000`'s tables, 500 questions, gold context).
#[derive(Debug, Clone, Copy)]
pub struct Baseline {
    /// Method.
    pub method: &'static str,
    /// EM, F1, precision, recall (percent).
    pub scores: [f64; 4],
}

/// The paper baselines for a data set, as seed `000` lists them (MetaRAG paper, GPT-3.5
/// turbo, and the seed's DeepSeek V3.2 implementation).
pub fn baselines(dataset: &str) -> &'static [Baseline] {
    const HOTPOT: &[Baseline] = &[
        Baseline {
            method: "Standard RAG",
            scores: [24.6, 33.0, 34.1, 34.5],
        },
        Baseline {
            method: "ReAct",
            scores: [24.8, 41.7, 42.6, 44.7],
        },
        Baseline {
            method: "Flare",
            scores: [29.2, 42.4, 42.8, 43.0],
        },
        Baseline {
            method: "IR-CoT",
            scores: [31.4, 40.3, 41.6, 41.2],
        },
        Baseline {
            method: "Self-Ask",
            scores: [28.2, 43.1, 43.4, 44.8],
        },
        Baseline {
            method: "Reflexion",
            scores: [30.0, 43.4, 43.2, 44.3],
        },
        Baseline {
            method: "MetaRAG (paper, GPT-3.5-turbo)",
            scores: [37.8, 49.9, 52.1, 50.9],
        },
        Baseline {
            method: "seed 000 MetaRAG (DeepSeek V3.2)",
            scores: [59.0, 75.1, 77.1, 78.2],
        },
    ];
    const WIKI: &[Baseline] = &[
        Baseline {
            method: "Standard RAG",
            scores: [18.8, 25.2, 25.6, 26.2],
        },
        Baseline {
            method: "ReAct",
            scores: [21.0, 28.0, 27.6, 30.0],
        },
        Baseline {
            method: "Flare",
            scores: [28.2, 39.8, 40.0, 40.8],
        },
        Baseline {
            method: "IR-CoT",
            scores: [30.8, 42.6, 42.3, 40.9],
        },
        Baseline {
            method: "Self-Ask",
            scores: [28.6, 37.5, 36.5, 42.8],
        },
        Baseline {
            method: "Reflexion",
            scores: [31.8, 41.7, 40.6, 44.2],
        },
        Baseline {
            method: "MetaRAG (paper, GPT-3.5-turbo)",
            scores: [42.8, 50.8, 50.7, 52.2],
        },
        Baseline {
            method: "seed 000 MetaRAG (DeepSeek V3.2)",
            scores: [66.2, 74.2, 72.7, 78.4],
        },
    ];
    match dataset {
        "hotpotqa" => HOTPOT,
        "2wikimultihopqa" => WIKI,
        _ => &[],
    }
}

fn pct(e: &Estimate) -> String {
    format!(
        "{:.1} [{:.1}, {:.1}]",
        e.mean * 100.0,
        e.lo * 100.0,
        e.hi * 100.0
    )
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

/// The markdown report of a run (and, with `compare`, its differences from another run).
/// `plots` are the SVG files to embed, relative to where the report is written.
pub fn markdown(record: &RunRecord, compare: Option<&RunRecord>, plots: &[String]) -> String {
    let c = &record.config;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# {} ({}), {} questions\n",
        c.dataset,
        c.protocol.as_str(),
        c.n
    );
    let _ = writeln!(
        out,
        "- model: `{}`{}",
        c.model,
        c.embedder
            .as_ref()
            .map(|e| format!(", embedder `{e}`"))
            .unwrap_or_default()
    );
    let _ = writeln!(
        out,
        "- sample: {} questions, seed {} (ids sorted, SplitMix64 Fisher-Yates)",
        c.n, c.seed
    );
    let _ = writeln!(
        out,
        "- code: `{}`",
        record.git_commit.as_deref().unwrap_or("unknown")
    );
    if !record.earlier_commits.is_empty() {
        let _ = writeln!(
            out,
            "- resumed: earlier parts of this run were written by `{}`",
            record.earlier_commits.join("`, `")
        );
    }
    let _ = writeln!(out, "- command: `{}`", record.command);
    let _ = writeln!(
        out,
        "- agent: max_rounds {}, max_evidence_chars {}, call cache {}",
        c.agent.max_rounds,
        c.agent.max_evidence_chars,
        if c.cache { "on" } else { "off" }
    );
    for (name, settings) in &c.strategy_settings {
        // The monitor's weights are in the record; the header names where they came from.
        let mut shown = settings.clone();
        if let Some(m) = shown.get_mut("monitor").and_then(|m| m.as_object_mut()) {
            m.remove("weights");
        }
        if shown.as_object().is_some_and(|o| !o.is_empty()) {
            let _ = writeln!(out, "- `{name}`: `{shown}`");
        }
    }
    out.push('\n');
    out.push_str("## Answers\n\nMeans with bootstrap 95% intervals (1,000 resamples), in percent. Failed questions count as zero. Seconds per question count each call replayed from the call cache at the time it took when computed (n given where some replayed calls predate that record).\n\n");
    let open = record.summary.iter().any(|s| s.support_recall.is_some());
    out.push_str("| strategy | EM | F1 | precision | recall | Sub-EM |");
    if open {
        out.push_str(" support recall |");
    }
    out.push_str(
        " s/question (p50 / p95) | LLM calls | from cache | tokens | overhead | errors |\n|---|---|---|---|---|---|---|",
    );
    if open {
        out.push_str("---|");
    }
    out.push_str("---|---|---|---|---|\n");
    for s in &record.summary {
        let _ = write!(
            out,
            "| {} | {} | {} | {:.1} | {:.1} | {:.1} |",
            s.strategy,
            pct(&s.em),
            pct(&s.f1),
            s.precision.mean * 100.0,
            s.recall.mean * 100.0,
            s.sub_em.mean * 100.0
        );
        if open {
            let _ = write!(
                out,
                " {} |",
                s.support_recall.as_ref().map_or("-".into(), pct)
            );
        }
        let latency = match s.timed {
            0 => "- (all replayed)".to_string(),
            t if t == s.questions => format!("{:.1} / {:.1}", s.latency_p50_s, s.latency_p95_s),
            t => format!("{:.1} / {:.1} (n={t})", s.latency_p50_s, s.latency_p95_s),
        };
        // Orchestration overhead: wall time outside model calls and searches.
        let overhead = if s.timed > 0 {
            format!("{:.2}%", s.overhead_share * 100.0)
        } else {
            "-".into()
        };
        let _ = writeln!(
            out,
            " {latency} | {:.1} | {:.0}% | {:.0} | {overhead} | {} |",
            s.llm_calls,
            s.cache_hit_rate * 100.0,
            s.tokens,
            s.errors
        );
    }
    let base = baselines(&c.dataset);
    if !base.is_empty() {
        out.push_str("\n## Beside the published numbers\n\nThe paper rows are 500 questions with GPT-3.5-turbo (MetaRAG paper) and DeepSeek V3.2 (seed `000`), gold context; ours are this run's sample and model, so compare the ordering of methods more than the absolute numbers.\n\n| method | EM | F1 | precision | recall |\n|---|---|---|---|---|\n");
        for b in base {
            let _ = writeln!(
                out,
                "| {} | {:.1} | {:.1} | {:.1} | {:.1} |",
                b.method, b.scores[0], b.scores[1], b.scores[2], b.scores[3]
            );
        }
        for s in &record.summary {
            let _ = writeln!(
                out,
                "| **ours: {}** ({}) | {:.1} | {:.1} | {:.1} | {:.1} |",
                s.strategy,
                c.model,
                s.em.mean * 100.0,
                s.f1.mean * 100.0,
                s.precision.mean * 100.0,
                s.recall.mean * 100.0
            );
        }
    }
    // Per type.
    let types: Vec<String> = {
        let mut t: Vec<String> = record
            .summary
            .iter()
            .flat_map(|s| s.by_type.keys().cloned())
            .collect();
        t.sort();
        t.dedup();
        t
    };
    if !types.is_empty() {
        out.push_str("\n## By question type (F1 / EM)\n\n| type | n |");
        for s in &record.summary {
            let _ = write!(out, " {} |", s.strategy);
        }
        out.push_str("\n|---|---|");
        for _ in &record.summary {
            out.push_str("---|");
        }
        out.push('\n');
        for t in &types {
            let n = record
                .summary
                .iter()
                .filter_map(|s| s.by_type.get(t))
                .map(|g| g.n)
                .max()
                .unwrap_or(0);
            let _ = write!(out, "| {t} | {n} |");
            for s in &record.summary {
                match s.by_type.get(t) {
                    Some(g) => {
                        let _ = write!(out, " {:.1} / {:.1} |", g.f1 * 100.0, g.em * 100.0);
                    }
                    None => out.push_str(" - |"),
                }
            }
            out.push('\n');
        }
    }
    // Paired comparisons against each earlier strategy.
    let strategies = &c.strategies;
    if strategies.len() > 1 {
        out.push_str("\n## Question by question\n\n| comparison | n | F1 difference [95% CI] | EM difference | wins / ties / losses |\n|---|---|---|---|---|\n");
        for (i, a) in strategies.iter().enumerate() {
            for b in &strategies[..i] {
                let p = paired(&record.results, a, b);
                let _ = writeln!(
                    out,
                    "| {} vs {} | {} | {:+.1} [{:+.1}, {:+.1}] | {:+.1} | {} / {} / {} |",
                    a,
                    b,
                    p.n,
                    p.f1_delta.mean * 100.0,
                    p.f1_delta.lo * 100.0,
                    p.f1_delta.hi * 100.0,
                    p.em_delta * 100.0,
                    p.wins,
                    p.ties,
                    p.losses
                );
            }
        }
    }
    // The monitor as a classifier of first answers (AUROC per signal and of the gate).
    let monitor = crate::monitor::markdown(record);
    if !monitor.is_empty() {
        out.push('\n');
        out.push_str(&monitor);
    }
    // The metacognitive loop, of every strategy whose answers went through a gate.
    for s in record.summary.iter().filter(|s| gated(record, &s.strategy)) {
        let n = s.questions.max(1) as f64;
        let r = &s.rounds;
        let _ = writeln!(out, "\n## The metacognitive loop ({})\n", s.strategy);
        let _ = writeln!(out, "| | questions |\n|---|---|");
        let _ = writeln!(
            out,
            "| first answer passed the gate | {:.0} ({:.1}%) |",
            s.passed_first * n,
            s.passed_first * 100.0
        );
        let _ = writeln!(
            out,
            "| no remediation (round 0) | {} ({:.1}%) |",
            r.none,
            r.none as f64 / n * 100.0
        );
        let _ = writeln!(
            out,
            "| stopped early (0 < rounds < {}) | {} ({:.1}%) |",
            c.agent.max_rounds,
            r.early,
            r.early as f64 / n * 100.0
        );
        let _ = writeln!(
            out,
            "| hit max rounds ({}) | {} ({:.1}%) |",
            c.agent.max_rounds,
            r.hit_max,
            r.hit_max as f64 / n * 100.0
        );
        let _ = writeln!(out, "| stopped by the budget | {} |", r.budget);
        let _ = writeln!(out, "| average remediation rounds | {:.2} |", s.avg_rounds);
        if s.timed > 0 {
            let _ = writeln!(
                out,
                "| orchestration overhead | {:.3}% of wall time |",
                s.overhead_share * 100.0
            );
        }
        if !s.by_category.is_empty() {
            let standard: HashMap<&str, f64> = record
                .results
                .iter()
                .filter(|q| q.strategy == BASELINE)
                .map(|q| (q.id.as_str(), q.scores.f1))
                .collect();
            out.push_str("\nFirst diagnosis of the questions whose first answer failed the gate, with metarag's F1 on them and, when it ran, standard RAG's on the same questions and metarag's wins / ties / losses against it by F1:\n\n| category | questions | metarag F1 | standard F1 | wins / ties / losses |\n|---|---|---|---|---|\n");
            for (cat, g) in &s.by_category {
                let ids: Vec<&QuestionResult> = record
                    .results
                    .iter()
                    .filter(|q| q.strategy == s.strategy.as_str())
                    .filter(|q| {
                        q.trace
                            .as_ref()
                            .and_then(|t| t.categories().first().map(|c| c.as_str() == cat))
                            .unwrap_or(false)
                    })
                    .collect();
                let pairs: Vec<(f64, f64)> = ids
                    .iter()
                    .filter_map(|q| {
                        standard
                            .get(q.id.as_str())
                            .map(|&std_f1| (q.scores.f1, std_f1))
                    })
                    .collect();
                let (std_col, wtl) = if pairs.is_empty() {
                    ("-".to_string(), "-".to_string())
                } else {
                    let mean = pairs.iter().map(|p| p.1).sum::<f64>() / pairs.len() as f64;
                    let wins = pairs.iter().filter(|(m, s)| m > s).count();
                    let losses = pairs.iter().filter(|(m, s)| m < s).count();
                    (
                        format!("{:.1}", mean * 100.0),
                        format!("{wins} / {} / {losses}", pairs.len() - wins - losses),
                    )
                };
                let _ = writeln!(
                    out,
                    "| {cat} | {} | {:.1} | {std_col} | {wtl} |",
                    g.n,
                    g.f1 * 100.0
                );
            }
        }
        if !s.node_latency_s.is_empty() {
            let _ = writeln!(
                out,
                "\nSeconds per question in each node (p50 / p95, over the {} timed questions):\n\n| node | p50 | p95 |\n|---|---|---|",
                s.timed
            );
            for (node, (p50, p95)) in &s.node_latency_s {
                let _ = writeln!(out, "| {node} | {p50:.2} | {p95:.2} |");
            }
        }
    }
    if let Some(other) = compare {
        let _ = writeln!(
            out,
            "\n## Compared with `{}`\n",
            other.git_commit.as_deref().unwrap_or("the other run")
        );
        out.push_str(
            "| strategy | EM (this / other) | F1 (this / other) | F1 change |\n|---|---|---|---|\n",
        );
        for s in &record.summary {
            if let Some(o) = other.summary.iter().find(|o| o.strategy == s.strategy) {
                let _ = writeln!(
                    out,
                    "| {} | {:.1} / {:.1} | {:.1} / {:.1} | {:+.1} |",
                    s.strategy,
                    s.em.mean * 100.0,
                    o.em.mean * 100.0,
                    s.f1.mean * 100.0,
                    o.f1.mean * 100.0,
                    (s.f1.mean - o.f1.mean) * 100.0
                );
            }
        }
    }
    // Answers no short-answer EM can match.
    let long_gold = record
        .results
        .iter()
        .filter(|r| r.strategy == c.strategies[0])
        .filter(|r| {
            r.answers
                .first()
                .is_some_and(|a| a.split_whitespace().count() > 6)
        })
        .count();
    if long_gold > 0 {
        let _ = writeln!(
            out,
            "\nNote: {long_gold} of the sampled questions {} a whole sentence as the gold answer (an artefact of the sample's source); EM is out of reach there and F1 is capped.",
            if long_gold == 1 { "has" } else { "have" }
        );
    }
    if !plots.is_empty() {
        out.push_str("\n## Plots\n\n");
        for p in plots {
            let _ = writeln!(out, "![{p}]({p})\n");
        }
    }
    out
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

/// Writes the SVG plots of a run into `dir`: F1 by question type, the rounds histogram
/// and the latency distribution. Returns the file names.
pub fn plots(record: &RunRecord, dir: &Path, stem: &str) -> Result<Vec<PathBuf>> {
    use plotters::prelude::*;
    std::fs::create_dir_all(dir).map_err(|e| Error::Io {
        path: dir.to_path_buf(),
        source: e,
    })?;
    let plot_err = |path: &Path, e: String| Error::Record {
        path: path.to_path_buf(),
        line: 0,
        reason: format!("plot: {e}"),
    };
    let palette = [
        RGBColor(0x4c, 0x72, 0xb0),
        RGBColor(0xdd, 0x84, 0x52),
        RGBColor(0x55, 0xa8, 0x68),
        RGBColor(0xc4, 0x4e, 0x52),
        RGBColor(0x81, 0x72, 0xb3),
    ];
    let mut written = Vec::new();

    // F1 by type, grouped bars per strategy.
    let types: Vec<String> = {
        let mut t: Vec<String> = record
            .summary
            .iter()
            .flat_map(|s| s.by_type.keys().cloned())
            .collect();
        t.sort();
        t.dedup();
        t
    };
    let path = dir.join(format!("{stem}-f1-by-type.svg"));
    {
        let root = SVGBackend::new(&path, (720, 400)).into_drawing_area();
        root.fill(&WHITE)
            .map_err(|e| plot_err(&path, e.to_string()))?;
        let groups = types.len().max(1);
        let k = record.summary.len().max(1);
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!(
                    "F1 by question type: {} ({})",
                    record.config.dataset,
                    record.config.protocol.as_str()
                ),
                ("sans-serif", 18),
            )
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(44)
            .build_cartesian_2d(0f64..groups as f64, 0f64..100f64)
            .map_err(|e| plot_err(&path, e.to_string()))?;
        let labels = types.clone();
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(groups * 2 + 1)
            .x_label_formatter(&|x| {
                let i = x.floor() as usize;
                if (x - i as f64 - 0.5).abs() < 0.01 {
                    labels.get(i).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .y_desc("F1 (%)")
            .draw()
            .map_err(|e| plot_err(&path, e.to_string()))?;
        for (si, s) in record.summary.iter().enumerate() {
            let color = palette[si % palette.len()];
            let width = 0.8 / k as f64;
            let bars: Vec<Rectangle<(f64, f64)>> = types
                .iter()
                .enumerate()
                .filter_map(|(ti, t)| s.by_type.get(t).map(|g| (ti, g)))
                .map(|(ti, g)| {
                    let x0 = ti as f64 + 0.1 + si as f64 * width;
                    Rectangle::new(
                        [(x0, 0.0), (x0 + width * 0.95, g.f1 * 100.0)],
                        color.filled(),
                    )
                })
                .collect();
            chart
                .draw_series(bars)
                .map_err(|e| plot_err(&path, e.to_string()))?
                .label(s.strategy.clone())
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled())
                });
        }
        chart
            .configure_series_labels()
            .border_style(BLACK)
            .background_style(WHITE.mix(0.8))
            .draw()
            .map_err(|e| plot_err(&path, e.to_string()))?;
        root.present().map_err(|e| plot_err(&path, e.to_string()))?;
    }
    written.push(path);

    // Rounds histogram of the metacognitive strategy.
    if let Some(s) = record.summary.iter().find(|s| gated(record, &s.strategy)) {
        let path = dir.join(format!("{stem}-rounds.svg"));
        let r = s.rounds;
        let bars = [
            ("no remediation", r.none),
            ("stopped early", r.early),
            ("hit max rounds", r.hit_max),
            ("budget", r.budget),
        ];
        let top = bars.iter().map(|b| b.1).max().unwrap_or(1).max(1) as f64 * 1.15;
        let root = SVGBackend::new(&path, (560, 360)).into_drawing_area();
        root.fill(&WHITE)
            .map_err(|e| plot_err(&path, e.to_string()))?;
        let mut chart = ChartBuilder::on(&root)
            .caption("MetaRAG: how the loop ended", ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(44)
            .build_cartesian_2d(0f64..bars.len() as f64, 0f64..top)
            .map_err(|e| plot_err(&path, e.to_string()))?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(bars.len() * 2 + 1)
            .x_label_formatter(&|x| {
                let i = x.floor() as usize;
                if (x - i as f64 - 0.5).abs() < 0.01 {
                    bars.get(i).map(|b| b.0.to_string()).unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .y_desc("questions")
            .draw()
            .map_err(|e| plot_err(&path, e.to_string()))?;
        chart
            .draw_series(bars.iter().enumerate().map(|(i, b)| {
                Rectangle::new(
                    [(i as f64 + 0.15, 0.0), (i as f64 + 0.85, b.1 as f64)],
                    palette[0].filled(),
                )
            }))
            .map_err(|e| plot_err(&path, e.to_string()))?;
        root.present().map_err(|e| plot_err(&path, e.to_string()))?;
        drop(chart);
        drop(root);
        written.push(path);
    }

    // Latency: per strategy, the sorted seconds per question (a quantile plot).
    let path = dir.join(format!("{stem}-latency.svg"));
    {
        let series: Vec<(String, Vec<f64>)> = record
            .summary
            .iter()
            .map(|s| {
                let mut v: Vec<f64> = record
                    .results
                    .iter()
                    .filter(|r| r.strategy == s.strategy.as_str())
                    .filter_map(compute_seconds)
                    .collect();
                v.sort_by(f64::total_cmp);
                (s.strategy.clone(), v)
            })
            .collect();
        let top = series
            .iter()
            .flat_map(|s| s.1.iter().copied())
            .fold(1.0, f64::max)
            * 1.05;
        let root = SVGBackend::new(&path, (640, 380)).into_drawing_area();
        root.fill(&WHITE)
            .map_err(|e| plot_err(&path, e.to_string()))?;
        let mut chart = ChartBuilder::on(&root)
            .caption("Seconds per question (sorted)", ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(44)
            .build_cartesian_2d(0f64..100f64, 0f64..top)
            .map_err(|e| plot_err(&path, e.to_string()))?;
        chart
            .configure_mesh()
            .x_desc("percent of questions")
            .y_desc("seconds")
            .draw()
            .map_err(|e| plot_err(&path, e.to_string()))?;
        for (si, (name, v)) in series.iter().enumerate() {
            let color = palette[si % palette.len()];
            let n = v.len().max(1) as f64;
            chart
                .draw_series(LineSeries::new(
                    v.iter()
                        .enumerate()
                        .map(|(i, s)| ((i as f64 + 1.0) / n * 100.0, *s)),
                    color.stroke_width(2),
                ))
                .map_err(|e| plot_err(&path, e.to_string()))?
                .label(name.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 14, y)], color.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .border_style(BLACK)
            .background_style(WHITE.mix(0.8))
            .draw()
            .map_err(|e| plot_err(&path, e.to_string()))?;
        root.present().map_err(|e| plot_err(&path, e.to_string()))?;
    }
    written.push(path);
    Ok(written)
}
