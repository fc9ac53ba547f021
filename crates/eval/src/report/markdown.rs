//! The markdown report of a run.

use super::*;
use std::collections::BTreeMap;
use std::fmt::Write as _;

fn pct(e: &Estimate) -> String {
    format!(
        "{:.1} [{:.1}, {:.1}]",
        e.mean * 100.0,
        e.lo * 100.0,
        e.hi * 100.0
    )
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
        "- sample: {} questions, seed {} (ids sorted, SplitMix64 Fisher-Yates){}",
        c.n,
        c.seed,
        c.split.map_or(String::new(), |s| format!(
            ", {} half only (FNV-1a hash of the id, {})",
            s.as_str(),
            if s == crate::monitor::Split::Tune {
                "even"
            } else {
                "odd"
            }
        ))
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
    truthfulness(&mut out, record);
    declines(&mut out, record);
    declines_aside(&mut out, record);
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
        out.push_str("\n## By question type (F1 / EM / truthfulness)\n\n| type | n |");
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
                        let _ = write!(
                            out,
                            " {:.1} / {:.1} / {:+.0} |",
                            g.f1 * 100.0,
                            g.em * 100.0,
                            g.truthfulness * 100.0
                        );
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
    let verdicts: Vec<_> = record
        .summary
        .iter()
        .filter(|s| s.judge.is_some())
        .collect();
    if let Some((_, model, _)) = verdicts.first().and_then(|s| s.judge.clone()) {
        let _ = writeln!(
            out,
            "\n## LLM judge\n\nShare of answers `{model}` judged to mean the same as a gold answer (`metarag bench judge`), beside EM, Sub-EM and F1 of the same answers. A judge is trusted only as far as its agreement with hand labels goes (`bench judge --labels`).\n\n| strategy | judged | judge | EM | Sub-EM | F1 |\n|---|---|---|---|---|---|"
        );
        for s in verdicts {
            if let Some((acc, _, n)) = &s.judge {
                let _ = writeln!(
                    out,
                    "| {} | {n} | {:.1} | {:.1} | {:.1} | {:.1} |",
                    s.strategy,
                    acc * 100.0,
                    s.em.mean * 100.0,
                    s.sub_em.mean * 100.0,
                    s.f1.mean * 100.0
                );
            }
        }
    }
    let judged: Vec<_> = record
        .summary
        .iter()
        .filter(|s| !s.ragas.is_empty())
        .collect();
    if !judged.is_empty() {
        let judge = judged
            .iter()
            .find_map(|s| s.ragas_judge.clone())
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "\n## RAGAS metrics\n\nJudged by `{judge}` (Es et al. 2024 definitions; a 1.5B judge is a rough one: compare strategies under the same judge, not with published RAGAS numbers). Context recall is the share of supporting titles among the sources where the data set names them. In percent; n is the questions scored.\n\n| strategy | n | faithfulness | answer relevancy | context precision | context recall |\n|---|---|---|---|---|---|"
        );
        let cell = |m: &BTreeMap<String, f64>, k: &str| {
            m.get(k)
                .map_or_else(|| "-".to_string(), |v| format!("{:.1}", v * 100.0))
        };
        for s in judged {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} |",
                s.strategy,
                s.ragas.get("n").copied().unwrap_or(0.0),
                cell(&s.ragas, "faithfulness"),
                cell(&s.ragas, "answer_relevancy"),
                cell(&s.ragas, "context_precision"),
                cell(&s.ragas, "context_recall"),
            );
        }
    }
    token_section(&mut out, record);
    program_section(&mut out, record);
    let counted: Vec<_> = record
        .summary
        .iter()
        .filter(|s| !s.metrics.is_empty())
        .collect();
    if !counted.is_empty() {
        out.push_str("\n## Strategy counters\n\nEach strategy's own counters from its traces, averaged per question (a rate where the counter is 0 or 1).\n\n| strategy | counter | mean |\n|---|---|---|\n");
        for s in counted {
            for (k, v) in &s.metrics {
                let _ = writeln!(out, "| {} | {k} | {v:.2} |", s.strategy);
            }
        }
    }
    if !plots.is_empty() {
        out.push_str("\n## Plots\n\n");
        for p in plots {
            let _ = writeln!(out, "![{p}]({p})\n");
        }
    }
    out
}

/// How the question programs ran, per strategy and program shape (its ops in order): how
/// many resolved (every step grounded), stopped at an unresolved step, did not type, or
/// were one plain read, and the F1 of the resolved programs' answers against the gold:
/// the per-op accuracy of the programs that answered.
fn program_section(out: &mut String, record: &RunRecord) {
    use metarag_agent::program::exec::{Outcome, ProgramRun};
    // (strategy, shape) -> [resolved, unresolved, invalid, skipped], F1 of resolved.
    let mut rows: BTreeMap<(String, String), ([usize; 4], Vec<f64>)> = BTreeMap::new();
    for r in &record.results {
        let Some(run) = r
            .trace
            .as_ref()
            .and_then(|t| t.records.get("program"))
            .and_then(|v| serde_json::from_value::<ProgramRun>(v.clone()).ok())
        else {
            continue;
        };
        let shape = match run.outcome {
            Outcome::Invalid { .. } => "(invalid)".to_string(),
            _ => run
                .program
                .lines()
                .filter_map(|l| l.split(" = ").nth(1)?.split('(').next())
                .collect::<Vec<_>>()
                .join(" > "),
        };
        let row = rows
            .entry((r.strategy.as_str().to_string(), shape))
            .or_default();
        let i = match run.outcome {
            Outcome::Resolved { .. } => {
                row.1.push(r.scores.f1);
                0
            }
            Outcome::Unresolved { .. } => 1,
            Outcome::Invalid { .. } => 2,
            Outcome::Skipped => 3,
        };
        row.0[i] += 1;
    }
    if rows.is_empty() {
        return;
    }
    out.push_str("\n## Question programs\n\nEach question's program by shape (its ops in order): resolved (every step grounded: the program's answer), unresolved (a step did not ground: the write answered), invalid (did not parse or type), skipped (one plain read, left to the write); F1 of the resolved programs' answers, in percent.\n\n| strategy | program | n | resolved | unresolved | invalid | skipped | F1 resolved |\n|---|---|---|---|---|---|---|---|\n");
    for ((strategy, shape), (counts, f1)) in rows {
        let n: usize = counts.iter().sum();
        let mean = if f1.is_empty() {
            "-".to_string()
        } else {
            format!("{:.1}", 100.0 * f1.iter().sum::<f64>() / f1.len() as f64)
        };
        let _ = writeln!(
            out,
            "| {strategy} | {shape} | {n} | {} | {} | {} | {} | {mean} |",
            counts[0], counts[1], counts[2], counts[3]
        );
    }
}

/// Where each strategy's prompt tokens go: what the model evaluated and what the local
/// model's KV cache served again, in total and per call purpose.
fn token_section(out: &mut String, record: &RunRecord) {
    if record.summary.iter().all(|s| s.token_use.prompt == 0.0) {
        return;
    }
    out.push_str("\n## LLM tokens\n\nPer question, from each call's usage in the traces (a call replayed from the call cache counts as it was computed). *Reused*: prompt tokens the local model's KV cache still held from the call before (prefix reuse), which it did not evaluate again; API backends report none. Prompt evaluation is most of a local model's time, so *evaluated* is the figure to cut.\n\n| strategy | calls | prompt | reused | evaluated | reuse rate | generated |\n|---|---|---|---|---|---|---|\n");
    for s in &record.summary {
        let t = &s.token_use;
        let _ = writeln!(
            out,
            "| {} | {:.1} | {:.0} | {:.0} | {:.0} | {:.0}% | {:.0} |",
            s.strategy,
            s.llm_calls,
            t.prompt,
            t.reused,
            t.evaluated(),
            t.reuse_rate() * 100.0,
            t.generated
        );
    }
    out.push_str("\n| strategy | purpose | calls | prompt | reused | evaluated |\n|---|---|---|---|---|---|\n");
    for s in &record.summary {
        for (purpose, p) in &s.token_use.by_purpose {
            let _ = writeln!(
                out,
                "| {} | {purpose} | {:.2} | {:.0} | {:.0} | {:.0} |",
                s.strategy,
                p.calls,
                p.prompt,
                p.reused,
                p.prompt - p.reused
            );
        }
    }
}

/// The truthfulness table: each answer correct, missing or hallucinated by CRAG's rules
/// ([`crate::truth`]), with the score and, where the sample has unanswerable questions,
/// abstention precision and recall.
fn truthfulness(out: &mut String, record: &RunRecord) {
    let pct = |e: &Estimate| {
        format!(
            "{:.1} [{:.1}, {:.1}]",
            e.mean * 100.0,
            e.lo * 100.0,
            e.hi * 100.0
        )
    };
    let opt = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{:.0}%", v * 100.0));
    out.push_str("\n## Truthfulness\n\nCRAG's scoring (Yang et al. 2024): an answer is correct (+1), missing (0: it says the sources do not say) or hallucinated (-1); truthfulness is accuracy minus hallucination, in percent with bootstrap 95% intervals. A match decides first (EM or Sub-EM), then a refusal, then no shared token; an unclear match goes to the LLM judge where `bench judge` ran, else counts as correct at F1 >= 0.5 (columns *judged* and *by F1*). A question with no gold answer is correct only when withheld.\n\n| strategy | n | accuracy | hallucination | missing | truthfulness | judged | by F1 | unanswerable | abstention precision | abstention recall |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
    for s in &record.summary {
        let t = &s.truth;
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            s.strategy,
            t.n,
            pct(&t.accuracy),
            pct(&t.hallucination),
            pct(&t.missing),
            pct(&t.score),
            t.judged,
            t.by_f1,
            t.unanswerable,
            opt(t.abstention_precision),
            opt(t.abstention_recall)
        );
    }
}

/// Which check declined, per strategy: declines of questions with no answer (right to
/// decline), and of answerable ones, whether the answer held back held a gold answer (a
/// decline that cost a right answer) or not (one that withheld a wrong one). This is each
/// check's precision, which the truthfulness table's single figure hides.
fn declines(out: &mut String, record: &RunRecord) {
    // (strategy, check) -> [unanswerable, held back right, held back wrong, nothing held].
    let mut rows: BTreeMap<(String, &'static str), [usize; 4]> = BTreeMap::new();
    for r in &record.results {
        let Some(a) = r.trace.as_ref().and_then(|t| t.abstention.as_ref()) else {
            continue;
        };
        let i = if r.answers.iter().all(|g| g.trim().is_empty()) {
            0
        } else {
            match a.withheld.as_deref() {
                Some(w) if crate::score_answer(w, &r.answers).sub_em >= 1.0 => 1,
                Some(_) => 2,
                None => 3,
            }
        };
        rows.entry((r.strategy.as_str().to_string(), a.by.as_str()))
            .or_default()[i] += 1;
    }
    if rows.is_empty() {
        return;
    }
    out.push_str("\n## Declines by check\n\nEach decline by the check that decided it (`trace.abstention.by`): on a question with no answer in the documents (right to decline), or on an answerable one, where the answer held back contained a gold answer (the decline cost it) or did not (it withheld a wrong one), or nothing was written (declined before writing).\n\n| strategy | check | declines | no answer exists | held back a right answer | held back a wrong one | nothing written |\n|---|---|---|---|---|---|---|\n");
    for ((strategy, by), c) in rows {
        let _ = writeln!(
            out,
            "| {strategy} | {by} | {} | {} | {} | {} | {} |",
            c.iter().sum::<usize>(),
            c[0],
            c[1],
            c[2],
            c[3]
        );
    }
}

/// F1 on the answerable questions as scored (a decline scores 0) and with every decline
/// that held an answer back scored on that answer instead: how the strategy's reasoning
/// did apart from its declining, which the first column mixes in. Only for runs where
/// something was held back. The writer's own declines and those made before writing hold
/// nothing back and stay at 0, so this approximates, not reproduces, a run with
/// `abstain = "off"`.
fn declines_aside(out: &mut String, record: &RunRecord) {
    // strategy -> (F1 as scored, F1 with the held-back answers, how many were restored).
    let mut rows: BTreeMap<String, (Vec<f64>, Vec<f64>, usize)> = BTreeMap::new();
    for r in &record.results {
        if r.answers.iter().all(|g| g.trim().is_empty()) {
            continue;
        }
        let held_back = r
            .trace
            .as_ref()
            .filter(|t| t.abstention.as_ref().is_some_and(|a| a.withheld.is_some()))
            .and_then(|t| t.final_round.and_then(|i| t.rounds.get(i)))
            .map(|kept| crate::score_answer(&kept.short_answer, &r.answers).f1);
        let row = rows.entry(r.strategy.as_str().to_string()).or_default();
        row.0.push(r.scores.f1);
        row.1.push(held_back.unwrap_or(r.scores.f1));
        row.2 += usize::from(held_back.is_some());
    }
    if rows.values().all(|(_, _, restored)| *restored == 0) {
        return;
    }
    out.push_str("\n## F1, declines aside\n\nOn the questions that have an answer: F1 as scored (a decline scores 0), and with the answer each decline held back scored in its place (`trace.abstention.withheld`; the writer's own declines and those made before writing held nothing back and stay at 0). The second column is the reasoning apart from the declining.\n\n| strategy | answerable | F1 | F1, declines aside | declines restored |\n|---|---|---|---|---|\n");
    for (strategy, (scored, aside, restored)) in rows {
        let _ = writeln!(
            out,
            "| {strategy} | {} | {} | {} | {restored} |",
            scored.len(),
            pct(&bootstrap(&scored, 1000, 42)),
            pct(&bootstrap(&aside, 1000, 42))
        );
    }
}
