//! Answer metrics as the multi-hop QA papers compute them: SQuAD answer normalisation,
//! exact match, token F1 (with precision and recall), HotpotQA's yes/no rule, Sub-EM, and
//! the maximum over a question's answer aliases.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Scores of one prediction against one question's answers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct AnswerScores {
    /// 1.0 if the normalised prediction equals a normalised answer.
    pub em: f64,
    /// Token F1 against the best-matching answer.
    pub f1: f64,
    /// Token precision against the answer with the best F1.
    pub precision: f64,
    /// Token recall against the answer with the best F1.
    pub recall: f64,
    /// 1.0 if a normalised answer occurs inside the normalised prediction.
    pub sub_em: f64,
}

/// SQuAD normalisation: lower case, drop punctuation, drop the articles a/an/the, collapse
/// whitespace.
pub fn normalize_answer(s: &str) -> String {
    let lower = s.to_lowercase();
    let no_punct: String = lower
        .chars()
        .filter(|c| !c.is_ascii_punctuation())
        .collect();
    no_punct
        .split_whitespace()
        .filter(|w| !matches!(*w, "a" | "an" | "the"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// (F1, precision, recall) of one prediction against one answer, HotpotQA style: when either
/// side normalises to `yes`, `no` or `noanswer` and the two differ, every score is 0.
pub fn token_f1(prediction: &str, answer: &str) -> (f64, f64, f64) {
    let p = normalize_answer(prediction);
    let a = normalize_answer(answer);
    let special = |s: &str| matches!(s, "yes" | "no" | "noanswer");
    if (special(&p) || special(&a)) && p != a {
        return (0.0, 0.0, 0.0);
    }
    let p_tokens: Vec<&str> = p.split_whitespace().collect();
    let a_tokens: Vec<&str> = a.split_whitespace().collect();
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for t in &a_tokens {
        *counts.entry(t).or_default() += 1;
    }
    let mut common = 0usize;
    for t in &p_tokens {
        if let Some(c) = counts.get_mut(t)
            && *c > 0
        {
            *c -= 1;
            common += 1;
        }
    }
    if common == 0 {
        return (0.0, 0.0, 0.0);
    }
    let precision = common as f64 / p_tokens.len() as f64;
    let recall = common as f64 / a_tokens.len() as f64;
    (
        2.0 * precision * recall / (precision + recall),
        precision,
        recall,
    )
}

/// Scores a prediction against every answer alias and keeps the best of each metric (F1's
/// precision and recall come from the alias with the best F1). No answers scores 0.
pub fn score_answer(prediction: &str, answers: &[String]) -> AnswerScores {
    let p = normalize_answer(prediction);
    let mut best = AnswerScores::default();
    for a in answers {
        let na = normalize_answer(a);
        if p == na {
            best.em = 1.0;
        }
        if !na.is_empty() && contains_tokens(&p, &na) {
            best.sub_em = 1.0;
        }
        let (f1, precision, recall) = token_f1(prediction, a);
        if f1 > best.f1 {
            best.f1 = f1;
            best.precision = precision;
            best.recall = recall;
        }
    }
    best
}

/// Whether `needle`'s tokens occur as a contiguous run in `haystack`'s (so "1" is not found
/// inside "1914").
fn contains_tokens(haystack: &str, needle: &str) -> bool {
    let h: Vec<&str> = haystack.split_whitespace().collect();
    let n: Vec<&str> = needle.split_whitespace().collect();
    !n.is_empty() && h.windows(n.len()).any(|w| w == n.as_slice())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answers(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn normalisation_drops_case_punctuation_and_articles() {
        assert_eq!(normalize_answer("The  Eiffel Tower!"), "eiffel tower");
        assert_eq!(normalize_answer("an apple, a pear"), "apple pear");
        assert_eq!(normalize_answer("U.S.A."), "usa");
        assert_eq!(normalize_answer("Theatre"), "theatre");
    }

    #[test]
    fn hand_computed_f1() {
        // prediction tokens {barack, obama}, answer {obama}: P 1/2, R 1, F1 2/3.
        let (f1, p, r) = token_f1("Barack Obama", "Obama");
        assert!((p - 0.5).abs() < 1e-12 && (r - 1.0).abs() < 1e-12);
        assert!((f1 - 2.0 / 3.0).abs() < 1e-12);
        // Repeated tokens count once per occurrence on each side.
        let (f1, p, r) = token_f1("new new york", "new york");
        assert!((p - 2.0 / 3.0).abs() < 1e-12 && (r - 1.0).abs() < 1e-12);
        assert!((f1 - 0.8).abs() < 1e-12);
        assert_eq!(token_f1("Paris", "London"), (0.0, 0.0, 0.0));
    }

    #[test]
    fn yes_no_answers_must_match_exactly() {
        assert_eq!(token_f1("yes", "no").0, 0.0);
        assert_eq!(
            token_f1("yes it is", "yes").0,
            0.0,
            "gold yes vs a longer prediction"
        );
        assert_eq!(token_f1("Yes.", "yes").0, 1.0);
        let s = score_answer("no", &answers(&["no"]));
        assert_eq!((s.em, s.f1), (1.0, 1.0));
    }

    #[test]
    fn best_alias_wins() {
        let s = score_answer(
            "the United States",
            &answers(&["America", "United States of America", "United States"]),
        );
        assert_eq!(s.em, 1.0);
        assert_eq!(s.f1, 1.0);
        let s = score_answer("It was built in 1914 by the Americans", &answers(&["1914"]));
        assert_eq!((s.em, s.sub_em), (0.0, 1.0));
        assert!((s.recall - 1.0).abs() < 1e-12 && s.precision < 0.5);
        assert_eq!(score_answer("1914", &answers(&["1"])).sub_em, 0.0);
        assert_eq!(score_answer("anything", &[]), AnswerScores::default());
    }
}
