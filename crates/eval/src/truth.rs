//! Truthfulness scoring by the rules of CRAG (Yang et al., NeurIPS 2024; the KDD Cup 2024
//! benchmark): each answer is **correct** (+1), **missing** (0: the strategy abstained, or
//! said the sources do not say) or **hallucinated** (-1: it answered, wrongly). F1 alone
//! charges a confident wrong answer no more than a refusal; this score charges it, so a
//! strategy that knows when it does not know scores above one that always answers.
//!
//! Order of the rules, each deciding when it applies:
//! 1. A question with no gold answer (unanswerable in its corpus): abstaining is correct,
//!    any answer hallucinated.
//! 2. The prediction matches a gold answer (EM or Sub-EM, the papers' normalisation):
//!    correct, even when it contains a refusal's words ("The Unknown Soldier").
//! 3. The strategy abstained (the trace's `abstained`), the prediction is a refusal
//!    ([`metarag_agent::text::is_refusal`]) or the question failed: missing.
//! 4. No gold token in the prediction (F1 0): hallucinated.
//! 5. Otherwise the match is unclear ("Spielberg" for "Steven Spielberg", a date written
//!    another way): an LLM judge's verdict (`bench judge`) decides when there is one, and
//!    without one, F1 >= 0.5 counts as correct. The summary says how many each way decided.

use crate::qa::QuestionResult;
use crate::stats::{Estimate, bootstrap};
use metarag_agent::text::is_refusal;
use serde::{Deserialize, Serialize};

/// An answer's truthfulness class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Truth {
    /// It answers the question.
    Correct,
    /// It does not answer (abstained, refused, or failed).
    Missing,
    /// It answers, wrongly.
    Hallucinated,
}

impl Truth {
    /// The class's score: +1, 0 or -1.
    pub fn score(self) -> f64 {
        match self {
            Truth::Correct => 1.0,
            Truth::Missing => 0.0,
            Truth::Hallucinated => -1.0,
        }
    }
}

/// Which rule decided an answer's class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecidedBy {
    /// The gold is "no answer" (rule 1).
    Unanswerable,
    /// An exact or contained match (rule 2), a refusal (3) or no shared token (4).
    Match,
    /// The LLM judge's verdict on an unclear match (rule 5).
    Judge,
    /// F1 >= 0.5 on an unclear match no judge saw (rule 5).
    F1,
}

/// The F1 at or above which an unclear match no judge saw counts as correct.
pub const UNCLEAR_F1: f64 = 0.5;

/// Classifies one answer by the rules above.
pub fn classify(r: &QuestionResult) -> (Truth, DecidedBy) {
    // The run's own decline (its trace says so), or a reply that declines in words.
    let declined = r.trace.as_ref().is_some_and(|t| t.abstained) || is_refusal(&r.prediction);
    if r.answers.iter().all(|a| a.trim().is_empty()) {
        let t = if r.error.is_some() || declined {
            Truth::Correct
        } else {
            Truth::Hallucinated
        };
        return (t, DecidedBy::Unanswerable);
    }
    if r.error.is_none() && !declined && (r.scores.em >= 1.0 || r.scores.sub_em >= 1.0) {
        return (Truth::Correct, DecidedBy::Match);
    }
    if r.error.is_some() || declined {
        return (Truth::Missing, DecidedBy::Match);
    }
    if r.scores.f1 <= 0.0 {
        return (Truth::Hallucinated, DecidedBy::Match);
    }
    match &r.judge {
        Some(v) => (
            if v.correct {
                Truth::Correct
            } else {
                Truth::Hallucinated
            },
            DecidedBy::Judge,
        ),
        None => (
            if r.scores.f1 >= UNCLEAR_F1 {
                Truth::Correct
            } else {
                Truth::Hallucinated
            },
            DecidedBy::F1,
        ),
    }
}

/// A strategy's truthfulness over a set of questions, each rate with its bootstrap 95%
/// interval.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TruthScores {
    /// Questions.
    pub n: usize,
    /// Share correct.
    pub accuracy: Estimate,
    /// Share hallucinated.
    pub hallucination: Estimate,
    /// Share missing.
    pub missing: Estimate,
    /// Truthfulness: accuracy minus hallucination (the mean of +1 / 0 / -1).
    pub score: Estimate,
    /// Answers an LLM judge's verdict decided.
    pub judged: usize,
    /// Unclear answers no judge saw, decided by F1 >= [`UNCLEAR_F1`].
    pub by_f1: usize,
    /// Questions with no gold answer.
    pub unanswerable: usize,
    /// Of the answers withheld (missing, or abstained on a question with no answer), the
    /// share on questions that had none: abstention precision. `None` when nothing was
    /// withheld or no question lacks an answer.
    pub abstention_precision: Option<f64>,
    /// Of the questions with no answer, the share withheld: abstention recall.
    pub abstention_recall: Option<f64>,
}

/// The truthfulness of `results` (one strategy's), with intervals from `resamples`
/// bootstrap resamples seeded by `seed`.
pub fn truth_scores(results: &[&QuestionResult], resamples: usize, seed: u64) -> TruthScores {
    let classes: Vec<(Truth, DecidedBy)> = results.iter().map(|r| classify(r)).collect();
    let share = |t: Truth| -> Vec<f64> {
        classes
            .iter()
            .map(|(c, _)| f64::from(u8::from(*c == t)))
            .collect()
    };
    let scores: Vec<f64> = classes.iter().map(|(c, _)| c.score()).collect();
    let decided = |d: DecidedBy| classes.iter().filter(|(_, b)| *b == d).count();
    // Withheld: missing on an answerable question, correct on an unanswerable one.
    let withheld: Vec<bool> = classes
        .iter()
        .map(|(c, d)| {
            (*d == DecidedBy::Unanswerable && *c == Truth::Correct) || *c == Truth::Missing
        })
        .collect();
    let unanswerable = decided(DecidedBy::Unanswerable);
    let withheld_n = withheld.iter().filter(|w| **w).count();
    let rightly = classes
        .iter()
        .zip(&withheld)
        .filter(|((_, d), w)| **w && *d == DecidedBy::Unanswerable)
        .count();
    TruthScores {
        n: results.len(),
        accuracy: bootstrap(&share(Truth::Correct), resamples, seed),
        hallucination: bootstrap(&share(Truth::Hallucinated), resamples, seed),
        missing: bootstrap(&share(Truth::Missing), resamples, seed),
        score: bootstrap(&scores, resamples, seed),
        judged: decided(DecidedBy::Judge),
        by_f1: decided(DecidedBy::F1),
        unanswerable,
        abstention_precision: (withheld_n > 0 && unanswerable > 0)
            .then(|| rightly as f64 / withheld_n as f64),
        abstention_recall: (unanswerable > 0).then(|| rightly as f64 / unanswerable as f64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::score_answer;
    use crate::qa::QuestionResult;

    fn result(prediction: &str, answers: &[&str]) -> QuestionResult {
        let answers: Vec<String> = answers.iter().map(|a| a.to_string()).collect();
        QuestionResult {
            id: "q".into(),
            strategy: metarag_agent::StrategyId::new("standard"),
            question: "Who directed the harbour film?".into(),
            kind: None,
            scores: score_answer(prediction, &answers),
            answers,
            prediction: prediction.into(),
            answer: prediction.into(),
            support_recall: None,
            latency_ms: 0.0,
            error: None,
            trace: None,
            ragas: None,
            judge: None,
        }
    }

    #[test]
    fn each_rule_decides_in_order() {
        use DecidedBy::*;
        use Truth::*;
        let cases = [
            // A match wins over a refusal's words inside the answer.
            (
                "The Unknown Soldier",
                &["The Unknown Soldier"][..],
                (Correct, Match),
            ),
            (
                "Edda Marrow directed it",
                &["Edda Marrow"][..],
                (Correct, Match),
            ),
            (
                "The sources do not say.",
                &["Edda Marrow"][..],
                (Missing, Match),
            ),
            ("unknown", &["Edda Marrow"][..], (Missing, Match)),
            ("Oskar Lind", &["Edda Marrow"][..], (Hallucinated, Match)),
            // Unclear: F1 decides without a judge.
            ("Marrow", &["Edda Marrow"][..], (Correct, F1)),
            ("Edda Lind Berg", &["Edda Marrow"][..], (Hallucinated, F1)),
            // No gold answer: abstaining is right, answering is not.
            (
                "The documents do not say.",
                &[][..],
                (Correct, Unanswerable),
            ),
            ("Kafka", &[""][..], (Hallucinated, Unanswerable)),
        ];
        for (prediction, gold, want) in cases {
            assert_eq!(classify(&result(prediction, gold)), want, "{prediction:?}");
        }
    }

    #[test]
    fn a_judge_decides_unclear_matches_and_failures_are_missing() {
        let mut r = result("Marrow", &["Edda Marrow"]);
        r.judge = Some(crate::judge::Verdict {
            correct: false,
            model: "judge".into(),
        });
        assert_eq!(classify(&r), (Truth::Hallucinated, DecidedBy::Judge));
        // A judge does not overrule a clear match or a refusal.
        let mut r = result("Edda Marrow", &["Edda Marrow"]);
        r.judge = Some(crate::judge::Verdict {
            correct: false,
            model: "judge".into(),
        });
        assert_eq!(classify(&r).0, Truth::Correct);
        let mut r = result("", &["Edda Marrow"]);
        r.error = Some("timed out".into());
        assert_eq!(classify(&r), (Truth::Missing, DecidedBy::Match));
    }

    #[test]
    fn scores_are_accuracy_minus_hallucination_with_abstention_precision_and_recall() {
        let rs = [
            result("Edda Marrow", &["Edda Marrow"]),
            result("Oskar Lind", &["Edda Marrow"]),
            result("unknown", &["Edda Marrow"]),
            result("unknown", &[]),
            result("Kafka", &[]),
        ];
        let refs: Vec<&QuestionResult> = rs.iter().collect();
        let t = truth_scores(&refs, 200, 1);
        assert_eq!(t.n, 5);
        // Correct: the match and the abstention on the unanswerable one.
        assert!((t.accuracy.mean - 0.4).abs() < 1e-12);
        assert!((t.hallucination.mean - 0.4).abs() < 1e-12);
        assert!((t.missing.mean - 0.2).abs() < 1e-12);
        assert!(t.score.mean.abs() < 1e-12);
        assert!(t.score.lo <= t.score.mean && t.score.mean <= t.score.hi);
        assert_eq!(t.unanswerable, 2);
        // Withheld twice, once on a question with no answer.
        assert_eq!(t.abstention_precision, Some(0.5));
        assert_eq!(t.abstention_recall, Some(0.5));
        // Nothing unanswerable: no precision or recall to report.
        let t = truth_scores(&refs[..3], 200, 1);
        assert_eq!((t.abstention_precision, t.abstention_recall), (None, None));
    }
}
