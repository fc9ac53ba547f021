//! The monitor measured as a classifier: for every first answer, each signal (and the
//! combination the gate uses) against whether the answer is right (F1 >= 0.5 against the
//! gold answers), as AUROC and the gate's accuracy, on the tuning and reporting halves
//! of the questions. Also fits the monitor's weights on the tuning half.
//!
//! **Splits.** A question belongs to the tuning half when the FNV-1a 64-bit hash of its
//! id is even, else to the reporting half ([`split_of`]). Weights and thresholds are
//! fitted on the tuning half only; tables that claim a result report the other half.

use crate::report::RunRecord;
use crate::score_answer;
use metarag_agent::graph::StopReason;
use metarag_agent::monitor::{FEATURES, MonitorModel, Signals};
use metarag_agent::trace::{Remediation, Round, Trace};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Which half of the dev data a question is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Split {
    /// Weights and thresholds are fitted here.
    Tune,
    /// Results are reported here.
    Report,
    /// Held out of both halves: read once, at the end of a piece of work, and reported
    /// beside the reporting half without changing anything after reading it.
    Final,
}

impl Split {
    /// The name in tables.
    pub fn as_str(self) -> &'static str {
        match self {
            Split::Tune => "tuning",
            Split::Report => "reporting",
            Split::Final => "final",
        }
    }
}

/// The split a question id falls in: a quarter of the ids (bits 32-33 of the id's FNV-1a
/// 64 hash both zero) is held out as [`Split::Final`]; of the rest, an even hash is
/// tuning, an odd one reporting. Bits 32-33 barely change between ids that differ only in
/// their last characters ("q001", "q002"), so a set of such ids should end them with a
/// common suffix or draw them at random.
pub fn split_of(id: &str) -> Split {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in id.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    if (h >> 32).is_multiple_of(4) {
        Split::Final
    } else if h.is_multiple_of(2) {
        Split::Tune
    } else {
        Split::Report
    }
}

/// Area under the ROC curve of `score` for telling `true` from `false` (the probability
/// that a random right answer scores above a random wrong one, ties counting half);
/// `None` when either class is empty.
pub fn auroc(scored: &[(f64, bool)]) -> Option<f64> {
    let pos: Vec<f64> = scored.iter().filter(|x| x.1).map(|x| x.0).collect();
    let neg: Vec<f64> = scored.iter().filter(|x| !x.1).map(|x| x.0).collect();
    if pos.is_empty() || neg.is_empty() {
        return None;
    }
    let mut wins = 0.0;
    for p in &pos {
        for n in &neg {
            wins += if p > n {
                1.0
            } else if p == n {
                0.5
            } else {
                0.0
            };
        }
    }
    Some(wins / (pos.len() * neg.len()) as f64)
}

/// A percentile-bootstrap 95% interval of [`auroc`]: the answers resampled with
/// replacement `resamples` times (seeded, so the interval is the same on every machine),
/// skipping resamples that hold one class only; `None` when the answers do not hold both
/// classes. With a hundred questions a third of them right the interval spans about
/// +-0.1: the difference between two halves' AUROCs is often within it.
pub fn auroc_interval(scored: &[(f64, bool)], resamples: usize, seed: u64) -> Option<(f64, f64)> {
    auroc(scored)?;
    let mut rng = crate::stats::SplitMix64::new(seed);
    let n = scored.len();
    let mut values: Vec<f64> = (0..resamples.max(1))
        .filter_map(|_| {
            let sample: Vec<(f64, bool)> = (0..n).map(|_| scored[rng.below(n)]).collect();
            auroc(&sample)
        })
        .collect();
    (!values.is_empty()).then(|| crate::stats::percentile_95(&mut values))
}

/// Resamples of [`auroc_interval`] in the tables.
const AUROC_RESAMPLES: usize = 1000;

/// One first answer as the monitor saw it.
#[derive(Debug, Clone)]
pub struct FirstAnswer {
    /// The question id.
    pub id: String,
    /// Its half.
    pub split: Split,
    /// Right: F1 >= 0.5 against the gold answers.
    pub right: bool,
    /// Signals by name (the monitor's, or the verification metrics of older traces).
    pub features: BTreeMap<String, f64>,
    /// The monitor's signals (traces of version 3 and later).
    pub signals: Option<Signals>,
    /// The gate's combined score (the monitor's confidence, or the sum of the older
    /// gate's three metrics) and whether the gate passed it.
    pub gate: Option<(f64, bool)>,
    /// What a retired wording reader said of this first answer, in traces written before
    /// the question program replaced them: `Some(true)` confirmed, `Some(false)`
    /// contradicted (the answer was replaced), `None` when no check applied (always, in
    /// today's traces).
    pub code_check: Option<bool>,
}

impl FirstAnswer {
    /// The gate's score with the code check folded in by a fixed rule (nothing fitted):
    /// a confirmed answer ranks above every unchecked one (+1), a contradicted one below
    /// (-1), the gate's confidence ordering each group. The run acts the same way (a
    /// confirmed answer stops, a contradicted one is replaced), so this is the score of
    /// the monitor the run actually used.
    pub fn checked_score(&self) -> Option<f64> {
        let (score, _) = self.gate?;
        Some(fold_check(score, self.code_check))
    }
}

/// A monitor score with a check's verdict folded in ([`FirstAnswer::checked_score`]):
/// confirmed +1, contradicted -1, unchecked as it is. Scores are in [0, 1], so the three
/// groups never overlap.
fn fold_check(score: f64, check: Option<bool>) -> f64 {
    match check {
        Some(true) => score + 1.0,
        Some(false) => score - 1.0,
        None => score,
    }
}

/// The stop reasons with which the readers of particular question wordings (the date,
/// quantity, kinship, link, parts, attribute and shared checks, replaced by the question
/// program) confirmed a first answer, as traces before the program record them.
const READER_CONFIRMS: &[&str] = &[
    "the dates confirm the answer",
    "the quantities confirm the answer",
    "the relation chain confirms the answer",
    "the link confirms the answer",
    "the parts confirm the answer",
    "the pages confirm the answer",
    "both pages state the answer",
];

/// Whether a check in code judged a trace's first answer and what it said
/// ([`FirstAnswer::code_check`]): in traces of the readers the program replaced, one of
/// [`READER_CONFIRMS`] (confirmed) or a retired reader's remediation on the first round
/// (contradicted). The name is the signal's in the tables.
fn code_check(trace: &Trace) -> Option<(&'static str, bool)> {
    if let StopReason::Done(why) = &trace.stop
        && READER_CONFIRMS.contains(&why.as_str())
    {
        return Some(("code_check", true));
    }
    match trace.rounds.first()?.remediation {
        Some(Remediation::Retired) => Some(("code_check", false)),
        _ => None,
    }
}

/// The features of an older trace's first round: the verification metrics and the
/// faithfulness / completeness / citation-precision gate (trace version 2 and before).
fn legacy_features(r: &Round) -> Option<(BTreeMap<String, f64>, (f64, bool))> {
    let v = r.verification.as_ref()?;
    let facts = if v.facts.is_empty() {
        0.0
    } else {
        v.facts.iter().filter(|f| f.verified).count() as f64 / v.facts.len() as f64
    };
    let features = BTreeMap::from([
        ("faithfulness".to_string(), v.faithfulness),
        ("completeness".to_string(), v.completeness),
        ("citation_precision".to_string(), v.citation_precision),
        ("judge_confidence".to_string(), v.confidence),
        ("facts_verified".to_string(), facts),
    ]);
    let passed = r.monitor.is_some_and(|m| m.passed);
    let sum = v.faithfulness + v.completeness + v.citation_precision;
    Some((features, (sum, passed)))
}

/// Every first answer of `strategy` in the record whose trace the monitor (or the older
/// gate) assessed.
pub fn first_answers(record: &RunRecord, strategy: &str) -> Vec<FirstAnswer> {
    let mut out = Vec::new();
    for r in &record.results {
        if r.strategy.as_str() != strategy {
            continue;
        }
        let Some(trace) = r.trace.as_ref() else {
            continue;
        };
        let Some(round) = trace.rounds.first() else {
            continue;
        };
        let check = code_check(trace);
        let right = score_answer(&round.short_answer, &r.answers).f1 >= 0.5;
        let (mut features, signals, gate) = if let Some(a) = &round.assessment {
            let features: BTreeMap<String, f64> = FEATURES
                .iter()
                .filter_map(|f| a.signals.feature(f).map(|x| (f.to_string(), x)))
                .collect();
            (
                features,
                Some(a.signals.clone()),
                Some((a.confidence, a.passed)),
            )
        } else if let Some((features, gate)) = legacy_features(round) {
            (features, None, Some(gate))
        } else {
            continue;
        };
        if let Some((name, confirmed)) = check {
            features.insert(name.into(), f64::from(u8::from(confirmed)));
        }
        out.push(FirstAnswer {
            id: r.id.clone(),
            split: split_of(&r.id),
            right,
            features,
            signals,
            gate,
            code_check: check.map(|(_, confirmed)| confirmed),
        });
    }
    out
}

/// The monitor's quality on one half of one strategy's questions.
#[derive(Debug, Clone, Serialize)]
pub struct MonitorTable {
    /// The strategy.
    pub strategy: String,
    /// The half.
    pub split: Split,
    /// First answers assessed.
    pub n: usize,
    /// Share of them that are right.
    pub right_rate: f64,
    /// AUROC of each signal alone (signals constant on these questions give 0.5).
    pub signals: Vec<(String, Option<f64>)>,
    /// AUROC of the gate's combined score.
    pub combined: Option<f64>,
    /// Its bootstrap 95% interval ([`auroc_interval`]).
    pub combined_interval: Option<(f64, f64)>,
    /// AUROC of the gate's score with the code checks folded in
    /// ([`FirstAnswer::checked_score`]); `None` when no first answer was checked.
    pub with_checks: Option<f64>,
    /// Its bootstrap 95% interval.
    pub with_checks_interval: Option<(f64, f64)>,
    /// Share of answers the gate classified correctly (passed = right).
    pub gate_accuracy: Option<f64>,
    /// Share of answers the gate passed.
    pub pass_rate: Option<f64>,
}

/// The monitor's tables for `strategy`, one per half that has questions.
pub fn tables(record: &RunRecord, strategy: &str) -> Vec<MonitorTable> {
    let all = first_answers(record, strategy);
    let mut out = Vec::new();
    for split in [Split::Tune, Split::Report, Split::Final] {
        let xs: Vec<&FirstAnswer> = all.iter().filter(|a| a.split == split).collect();
        if xs.is_empty() {
            continue;
        }
        out.push(table(strategy, split, &xs));
    }
    out
}

fn table(strategy: &str, split: Split, xs: &[&FirstAnswer]) -> MonitorTable {
    let n = xs.len();
    let names: Vec<String> = {
        let mut v: Vec<String> = xs.iter().flat_map(|a| a.features.keys().cloned()).collect();
        v.sort();
        v.dedup();
        v
    };
    let signals = names
        .iter()
        .map(|name| {
            let scored: Vec<(f64, bool)> = xs
                .iter()
                .filter_map(|a| a.features.get(name).map(|x| (*x, a.right)))
                .collect();
            (name.clone(), auroc(&scored))
        })
        .collect();
    let gated: Vec<(f64, bool, bool)> = xs
        .iter()
        .filter_map(|a| a.gate.map(|(s, p)| (s, p, a.right)))
        .collect();
    let gate_scores: Vec<(f64, bool)> = gated.iter().map(|g| (g.0, g.2)).collect();
    let combined = auroc(&gate_scores);
    let combined_interval = auroc_interval(&gate_scores, AUROC_RESAMPLES, 42);
    let checked: Option<Vec<(f64, bool)>> = xs.iter().any(|a| a.code_check.is_some()).then(|| {
        xs.iter()
            .filter_map(|a| a.checked_score().map(|s| (s, a.right)))
            .collect()
    });
    let with_checks = checked.as_deref().and_then(auroc);
    let with_checks_interval = checked
        .as_deref()
        .and_then(|c| auroc_interval(c, AUROC_RESAMPLES, 42));
    let (gate_accuracy, pass_rate) = if gated.is_empty() {
        (None, None)
    } else {
        let m = gated.len() as f64;
        (
            Some(gated.iter().filter(|g| g.1 == g.2).count() as f64 / m),
            Some(gated.iter().filter(|g| g.1).count() as f64 / m),
        )
    };
    MonitorTable {
        strategy: strategy.to_string(),
        split,
        n,
        right_rate: xs.iter().filter(|a| a.right).count() as f64 / n as f64,
        signals,
        combined,
        combined_interval,
        with_checks,
        with_checks_interval,
        gate_accuracy,
        pass_rate,
    }
}

/// What fitting the monitor gave.
#[derive(Debug, Clone)]
pub struct Fit {
    /// The fitted model (weights and threshold from the tuning half).
    pub model: MonitorModel,
    /// Tuning questions it was fitted on.
    pub tune_n: usize,
    /// Reporting questions it was evaluated on.
    pub report_n: usize,
    /// AUROC of the fitted confidence on the reporting half.
    pub report_auroc: Option<f64>,
    /// Accuracy of its gate (threshold from the tuning half) on the reporting half.
    pub report_accuracy: Option<f64>,
    /// AUROC on the tuning half (optimistic: fitted there).
    pub tune_auroc: Option<f64>,
    /// The fitted model on the reporting half of each record on its own, in the order
    /// given: a monitor shared by several data sets has to hold on each of them.
    pub by_record: Vec<FitReport>,
}

/// A fitted model on one record's reporting half.
#[derive(Debug, Clone, Serialize)]
pub struct FitReport {
    /// The record: data set, protocol and size.
    pub run: String,
    /// Reporting first answers with the monitor's signals.
    pub n: usize,
    /// AUROC of the fitted confidence.
    pub auroc: Option<f64>,
    /// AUROC of the fitted confidence with the checks made in code folded in, as the
    /// run would act on it ([`FirstAnswer::checked_score`]); `None` when no answer was
    /// checked.
    pub with_checks: Option<f64>,
    /// Accuracy of its gate (threshold from the tuning half).
    pub accuracy: Option<f64>,
}

/// Fits the monitor's weights on the tuning half of `strategy`'s first answers in every
/// record, using `features` (the names in [`FEATURES`]), and evaluates the fit on the
/// reporting half.
pub fn fit(records: &[RunRecord], strategy: &str, features: &[&str]) -> Fit {
    let label = |r: &RunRecord| {
        format!(
            "{} {} n{}",
            r.config.dataset,
            r.config.protocol.as_str(),
            r.config.n
        )
    };
    // Each record's first answers with the monitor's signals, kept apart so that the fit
    // can be reported on each record's reporting half as well as on all of them.
    let per_record: Vec<Vec<FirstAnswer>> = records
        .iter()
        .map(|r| {
            first_answers(r, strategy)
                .into_iter()
                .filter(|a| a.signals.is_some())
                .collect()
        })
        .collect();
    let in_half = |xs: &[FirstAnswer], split: Split| -> Vec<FirstAnswer> {
        xs.iter().filter(|a| a.split == split).cloned().collect()
    };
    let pairs = |xs: &[FirstAnswer]| -> Vec<(Signals, bool)> {
        xs.iter()
            .filter_map(|a| a.signals.clone().map(|s| (s, a.right)))
            .collect()
    };
    let all: Vec<FirstAnswer> = per_record.iter().flatten().cloned().collect();
    let tune_half = in_half(&all, Split::Tune);
    let tune = pairs(&tune_half);
    let sources: Vec<String> = records.iter().map(label).collect();
    let model = MonitorModel::fit(
        &tune,
        features,
        &format!(
            "tuning half ({} first answers of {strategy}) of: {}",
            tune.len(),
            sources.join(", ")
        ),
    );
    let evaluate = |xs: &[FirstAnswer]| {
        let scored: Vec<(f64, bool)> = pairs(xs)
            .iter()
            .map(|(s, y)| (model.confidence(s), *y))
            .collect();
        let acc = (!scored.is_empty()).then(|| {
            scored
                .iter()
                .filter(|(c, y)| (*c >= model.threshold) == *y)
                .count() as f64
                / scored.len() as f64
        });
        let with_checks = xs.iter().any(|a| a.code_check.is_some()).then(|| {
            xs.iter()
                .filter_map(|a| {
                    let s = a.signals.as_ref()?;
                    Some((fold_check(model.confidence(s), a.code_check), a.right))
                })
                .collect::<Vec<_>>()
        });
        (auroc(&scored), acc, with_checks.and_then(|w| auroc(&w)))
    };
    let report = in_half(&all, Split::Report);
    let (report_auroc, report_accuracy, _) = evaluate(&report);
    let (tune_auroc, _, _) = evaluate(&tune_half);
    let by_record = records
        .iter()
        .zip(&per_record)
        .filter_map(|(r, xs)| {
            let half = in_half(xs, Split::Report);
            if half.is_empty() {
                return None;
            }
            let (auroc, accuracy, with_checks) = evaluate(&half);
            Some(FitReport {
                run: label(r),
                n: half.len(),
                auroc,
                with_checks,
                accuracy,
            })
        })
        .collect();
    Fit {
        tune_n: tune.len(),
        report_n: report.len(),
        report_auroc,
        report_accuracy,
        tune_auroc,
        by_record,
        model,
    }
}

/// An AUROC with its interval, "0.69 [0.58, 0.79]", or "-".
pub fn with_interval(x: Option<f64>, interval: Option<(f64, f64)>) -> String {
    match (x, interval) {
        (Some(v), Some((lo, hi))) => format!("{v:.2} [{lo:.2}, {hi:.2}]"),
        (Some(v), None) => format!("{v:.2}"),
        _ => "-".to_string(),
    }
}

/// The monitor section of a report: a table per strategy that was assessed.
pub fn markdown(record: &RunRecord) -> String {
    let mut strategies: Vec<String> = record
        .results
        .iter()
        .map(|r| r.strategy.as_str().to_string())
        .collect();
    strategies.sort();
    strategies.dedup();
    let tables: Vec<MonitorTable> = strategies.iter().flat_map(|s| tables(record, s)).collect();
    if tables.is_empty() {
        return String::new();
    }
    let f = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.2}"));
    let mut out = String::from(
        "## Monitor: does it tell right first answers from wrong?\n\n\
         Each first answer labelled right when its F1 against the gold answers is at least 0.5. \
         AUROC 0.5 is chance. Halves by the FNV-1a hash of the question id (even: tuning, where \
         weights and thresholds are fitted; odd: reporting).\n\n\
         *With the checks*: in traces of the retired wording readers only (today's program \
         answers before the first write, so it judges no written answer), the gate's score \
         with the reader's verdict folded in: confirmed above every unchecked answer, \
         contradicted below, as those runs acted on it; `-` for today's traces. In \
         brackets: bootstrap 95% intervals over the questions.\n\n\
         | strategy | half | n | right | gate AUROC | with the checks | gate accuracy | passed |\n|---|---|---|---|---|---|---|---|\n",
    );
    for t in &tables {
        out.push_str(&format!(
            "| {} | {} | {} | {:.0}% | {} | {} | {} | {} |\n",
            t.strategy,
            t.split.as_str(),
            t.n,
            t.right_rate * 100.0,
            with_interval(t.combined, t.combined_interval),
            with_interval(t.with_checks, t.with_checks_interval),
            t.gate_accuracy
                .map_or("-".into(), |v| format!("{:.0}%", v * 100.0)),
            t.pass_rate
                .map_or("-".into(), |v| format!("{:.0}%", v * 100.0)),
        ));
    }
    out.push_str("\nAUROC of each signal alone:\n\n| strategy | half | signal | AUROC |\n|---|---|---|---|\n");
    for t in &tables {
        for (name, a) in &t.signals {
            out.push_str(&format!(
                "| {} | {} | {name} | {} |\n",
                t.strategy,
                t.split.as_str(),
                f(*a)
            ));
        }
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auroc_is_the_probability_a_right_answer_scores_higher() {
        assert_eq!(auroc(&[(0.9, true), (0.1, false)]), Some(1.0));
        assert_eq!(auroc(&[(0.1, true), (0.9, false)]), Some(0.0));
        assert_eq!(auroc(&[(0.5, true), (0.5, false)]), Some(0.5));
        assert_eq!(
            auroc(&[(0.8, true), (0.4, true), (0.6, false), (0.2, false)]),
            Some(0.75)
        );
        assert_eq!(auroc(&[(0.8, true)]), None);
    }

    #[test]
    fn the_auroc_interval_brackets_it_and_narrows_with_more_answers() {
        // Scores that order right above wrong most of the time.
        let make = |n: usize| -> Vec<(f64, bool)> {
            (0..n)
                .map(|i| {
                    (
                        (i % 10) as f64 + if i % 3 == 0 { 5.0 } else { 0.0 },
                        i % 3 == 0,
                    )
                })
                .collect()
        };
        let (small, large) = (make(60), make(600));
        let a = auroc(&small).unwrap();
        let (lo, hi) = auroc_interval(&small, 500, 1).unwrap();
        assert!(lo <= a && a <= hi, "{lo} {a} {hi}");
        assert!(hi > lo);
        let (lo2, hi2) = auroc_interval(&large, 500, 1).unwrap();
        assert!(hi2 - lo2 < (hi - lo) / 2.0, "{lo2} {hi2} vs {lo} {hi}");
        assert_eq!(
            auroc_interval(&small, 500, 1),
            auroc_interval(&small, 500, 1)
        );
        // One class only: no AUROC, no interval.
        assert_eq!(auroc_interval(&[(0.3, true), (0.6, true)], 100, 1), None);
    }

    #[test]
    fn splits_are_stable_and_roughly_even() {
        assert_eq!(
            split_of("5a8b57f25542995d1e6f1371"),
            split_of("5a8b57f25542995d1e6f1371")
        );
        let tune = (0..1000)
            .filter(|i| split_of(&format!("q{i}")) == Split::Tune)
            .count();
        assert!((400..600).contains(&tune), "{tune}");
    }
}
