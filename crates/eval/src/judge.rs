//! An LLM judge of answers (seed `004`): does the prediction mean the same as any gold
//! answer? EM and token F1 miss paraphrases ("the United States" / "American") and credit
//! answers that share words with the gold without meaning it; a judge reads them as a
//! person would, at the price of trusting a model. So its agreement with answers labelled
//! by hand is measured before its accuracy is reported (`bench judge --labels`).
//!
//! The prompt is fixed and the reply constrained to `{"same": true|false}`; the call goes
//! through the call cache when the caller built the model with one, so judging a record
//! twice costs the calls once.

use crate::qa::QuestionResult;
use metarag_core::{ChatRequest, DynLlm, Message, parse_json};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The judge's reply.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct SameReply {
    /// Whether the prediction means the same as a gold answer.
    pub same: bool,
}

/// One answer's verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// Whether the judge found the prediction correct.
    pub correct: bool,
    /// The judge model.
    pub model: String,
}

/// The judge's prompt.
pub fn request(question: &str, gold: &[String], prediction: &str) -> ChatRequest {
    let gold = gold
        .iter()
        .map(|g| format!("\"{g}\""))
        .collect::<Vec<_>>()
        .join(" or ");
    ChatRequest::new(vec![
        Message::system("You grade answers to quiz questions. You are strict and fair."),
        Message::user(format!(
            "Question: {question}\nCorrect answer: {gold}\nGiven answer: \"{prediction}\"\n\nDoes the given answer \
             mean the same as the correct answer? Different wording, an added title or a fuller name is fine; \
             a different entity, date or number, a vaguer or partial answer, or a refusal is not.\n\
             Reply in JSON: {{\"same\": <true or false>}}"
        )),
    ])
    .json_schema::<SameReply>()
    .max_tokens(12)
}

/// Judges one result's prediction; `None` when the call fails or the reply does not parse.
/// An empty prediction is wrong without asking.
pub async fn judge(llm: &dyn DynLlm, r: &QuestionResult) -> Option<Verdict> {
    let model = llm.model_id().to_string();
    if r.prediction.trim().is_empty() {
        return Some(Verdict {
            correct: false,
            model,
        });
    }
    let c = llm
        .chat_dyn(&request(&r.question, &r.answers, r.prediction.trim()))
        .await
        .map_err(|e| tracing::warn!("judge call failed: {e}"))
        .ok()?;
    let reply = parse_json::<SameReply>(&c.text).ok()?;
    Some(Verdict {
        correct: reply.same,
        model,
    })
}

/// An answer labelled by hand: the reference the judge is measured against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Label {
    /// The question id.
    pub id: String,
    /// The strategy that answered.
    pub strategy: String,
    /// Whether the prediction is correct.
    pub correct: bool,
    /// Why, in a few words.
    pub reason: String,
}

/// How often each way of scoring agrees with the hand labels.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Agreement {
    /// Labelled answers found in the record.
    pub n: usize,
    /// Of those, the judge scored.
    pub judged: usize,
    /// The judge's verdict equals the label.
    pub judge: f64,
    /// Exact match (1) equals the label.
    pub em: f64,
    /// F1 >= 0.5 equals the label.
    pub f1_half: f64,
    /// Labels the judge got wrong: (id, strategy, the label).
    pub judge_misses: Vec<(String, String, bool)>,
}

/// Agreement of the judge, EM and F1 >= 0.5 with `labels`, over the labelled answers in
/// `results`.
pub fn agreement(results: &[QuestionResult], labels: &[Label]) -> Agreement {
    let mut a = Agreement::default();
    let (mut judge_ok, mut em_ok, mut f1_ok) = (0usize, 0usize, 0usize);
    for l in labels {
        let Some(r) = results
            .iter()
            .find(|r| r.id == l.id && r.strategy.as_str() == l.strategy)
        else {
            continue;
        };
        a.n += 1;
        em_ok += usize::from((r.scores.em >= 1.0) == l.correct);
        f1_ok += usize::from((r.scores.f1 >= 0.5) == l.correct);
        if let Some(v) = &r.judge {
            a.judged += 1;
            if v.correct == l.correct {
                judge_ok += 1;
            } else {
                a.judge_misses
                    .push((l.id.clone(), l.strategy.clone(), l.correct));
            }
        }
    }
    let share = |k: usize, n: usize| if n == 0 { 0.0 } else { k as f64 / n as f64 };
    a.judge = share(judge_ok, a.judged);
    a.em = share(em_ok, a.n);
    a.f1_half = share(f1_ok, a.n);
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(id: &str, em: f64, f1: f64, judged: Option<bool>) -> QuestionResult {
        let record = crate::QaRecord {
            id: id.into(),
            dataset: "t".into(),
            question: "q?".into(),
            answers: vec!["a".into()],
            kind: None,
            supporting_titles: Vec::new(),
            contexts: Vec::new(),
            original_id: None,
            unanswerable: false,
        };
        let mut r = QuestionResult::failed(&record, &"standard".into(), String::new());
        r.scores.em = em;
        r.scores.f1 = f1;
        r.judge = judged.map(|correct| Verdict {
            correct,
            model: "m".into(),
        });
        r
    }

    #[test]
    fn agreement_counts_each_scorer_against_the_labels() {
        let results = vec![
            result("a", 1.0, 1.0, Some(true)),
            // A paraphrase: EM misses it, F1 and the judge do not.
            result("b", 0.0, 0.8, Some(true)),
            // A wrong answer sharing words: F1 credits it, the judge does too.
            result("c", 0.0, 0.6, Some(true)),
            result("d", 0.0, 0.0, None),
        ];
        let label = |id: &str, correct| Label {
            id: id.into(),
            strategy: "standard".into(),
            correct,
            reason: String::new(),
        };
        let labels = vec![
            label("a", true),
            label("b", true),
            label("c", false),
            label("d", false),
            label("not-in-the-record", true),
        ];
        let a = agreement(&results, &labels);
        assert_eq!((a.n, a.judged), (4, 3));
        assert_eq!(a.judge, 2.0 / 3.0);
        assert_eq!(a.em, 3.0 / 4.0);
        assert_eq!(a.f1_half, 3.0 / 4.0);
        assert_eq!(
            a.judge_misses,
            [("c".to_string(), "standard".to_string(), false)]
        );
    }

    #[test]
    fn the_prompt_names_every_gold_answer() {
        let r = request("Who?", &["Ann Lee".into(), "Lee".into()], "A. Lee");
        let text = &r.messages[1].content;
        assert!(
            text.contains("Correct answer: \"Ann Lee\" or \"Lee\""),
            "{text}"
        );
        assert!(text.contains("Given answer: \"A. Lee\""));
    }
}
