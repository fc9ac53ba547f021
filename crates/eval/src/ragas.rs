//! RAGAS-style metrics of an answered question (Es et al., *RAGAS: Automated Evaluation of
//! Retrieval Augmented Generation*, EACL 2024 demos), as seed `001` reports them beside
//! EM/F1, computed here with a judge model (the configured chat model unless another is
//! named; every score records which) and, for answer relevancy, the embedder:
//!
//! - **faithfulness**: the answer's claims, each judged supported or not by the sources it
//!   was written from; supported / claims.
//! - **answer relevancy**: questions the judge writes for the answer, embedded; their mean
//!   cosine similarity to the question (an answer that drifts raises other questions).
//! - **context precision**: each source, in rank order, judged useful or not for reaching
//!   the gold answer; the mean of precision@k over the useful ranks k.
//! - **context recall**: the share of the data set's supporting titles among the sources
//!   where it has them (HotpotQA, 2Wiki, MuSiQue); else whether the judge can attribute the
//!   gold answer to the sources (1 or 0).
//!
//! Each metric is one judge call (answer relevancy one call and one embedding batch); a
//! reply that does not parse leaves that metric out (`None`) rather than guessing. The
//! judge's calls go through the call cache when the caller built it with one, so a report
//! computed twice costs the calls once.

use crate::qa::QuestionResult;
use metarag_agent::Source;
use metarag_core::vector::cosine;
use metarag_core::{ChatRequest, DynEmbedder, DynLlm, Message, parse_json};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// The judge: a chat model and, for answer relevancy, an embedder.
#[derive(Clone)]
pub struct Judge {
    /// The model that judges.
    pub llm: Arc<dyn DynLlm>,
    /// The embedder of answer relevancy (left out without one).
    pub embedder: Option<Arc<dyn DynEmbedder>>,
}

/// One question's RAGAS scores, in [0, 1]; `None` where the judge's reply did not parse or
/// the metric does not apply (no sources, a refusal with no claims).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RagasScores {
    /// Supported claims over claims.
    pub faithfulness: Option<f64>,
    /// Mean cosine similarity of generated questions to the question.
    pub answer_relevancy: Option<f64>,
    /// Mean precision@k over the useful ranks.
    pub context_precision: Option<f64>,
    /// Supporting titles found (or the gold answer attributable).
    pub context_recall: Option<f64>,
    /// The judge model (and embedder) that produced them.
    pub judge: String,
}

/// The claims reply.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ClaimsReply {
    /// Every factual claim of the answer with the verdict.
    pub claims: Vec<ClaimVerdict>,
}

/// One claim and whether the sources support it.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ClaimVerdict {
    /// The claim.
    pub claim: String,
    /// Whether the sources support it.
    pub supported: bool,
}

/// The generated-questions reply.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct QuestionsReply {
    /// Questions the answer answers.
    pub questions: Vec<String>,
}

/// The context-usefulness reply.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct UsefulReply {
    /// Numbers of the sources useful for reaching the gold answer.
    pub useful: Vec<usize>,
}

/// The attribution reply.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct AttributedReply {
    /// Whether the gold answer can be attributed to the sources.
    pub attributed: bool,
}

fn sources_text(sources: &[Source]) -> String {
    sources
        .iter()
        .map(|s| format!("[{}] {}\n{}", s.n, s.passage.title, s.text()))
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// The faithfulness prompt.
pub fn claims_request(answer: &str, sources: &[Source]) -> ChatRequest {
    ChatRequest::new(vec![
        Message::system("You are a strict evaluator of answers against their sources."),
        Message::user(format!(
            "Sources:\n{}\n\nAnswer: {answer}\n\nSplit the answer into its factual claims (short statements). \
             For each, say whether the sources support it: supported means the sources state it or it follows \
             directly from them.\nReply in JSON: {{\"claims\": [{{\"claim\": \"...\", \"supported\": <true or false>}}]}}",
            sources_text(sources)
        )),
    ])
    .json_schema::<ClaimsReply>()
    .max_tokens(256)
}

/// The answer-relevancy prompt: questions the answer would answer.
pub fn questions_request(answer: &str) -> ChatRequest {
    ChatRequest::new(vec![
        Message::system("You write questions."),
        Message::user(format!(
            "Answer: {answer}\n\nWrite three different questions that this answer answers.\n\
             Reply in JSON: {{\"questions\": [\"...\", \"...\", \"...\"]}}"
        )),
    ])
    .json_schema::<QuestionsReply>()
    .max_tokens(128)
}

/// The context-precision prompt: which sources help reach the gold answer.
pub fn useful_request(question: &str, gold: &str, sources: &[Source]) -> ChatRequest {
    ChatRequest::new(vec![
        Message::system("You are a strict evaluator of retrieved sources."),
        Message::user(format!(
            "Sources:\n{}\n\nQuestion: {question}\nCorrect answer: {gold}\n\nWhich sources were useful in \
             arriving at the correct answer? List their numbers.\nReply in JSON: {{\"useful\": [1]}}",
            sources_text(sources)
        )),
    ])
    .json_schema::<UsefulReply>()
    .max_tokens(48)
}

/// The context-recall prompt where the data set names no supporting titles.
pub fn attributed_request(question: &str, gold: &str, sources: &[Source]) -> ChatRequest {
    ChatRequest::new(vec![
        Message::system("You are a strict evaluator of retrieved sources."),
        Message::user(format!(
            "Sources:\n{}\n\nQuestion: {question}\nCorrect answer: {gold}\n\nCan the correct answer be \
             attributed to the sources (stated in them, or following directly from them)?\n\
             Reply in JSON: {{\"attributed\": <true or false>}}",
            sources_text(sources)
        )),
    ])
    .json_schema::<AttributedReply>()
    .max_tokens(16)
}

/// Mean precision@k over the ranks k whose source is useful (RAGAS context precision); 0
/// when none is.
pub fn average_precision(useful: &[bool]) -> f64 {
    let mut hits = 0.0;
    let mut sum = 0.0;
    for (i, &u) in useful.iter().enumerate() {
        if u {
            hits += 1.0;
            sum += hits / (i + 1) as f64;
        }
    }
    if hits == 0.0 { 0.0 } else { sum / hits }
}

async fn ask<T: serde::de::DeserializeOwned>(llm: &dyn DynLlm, request: ChatRequest) -> Option<T> {
    match llm.chat_dyn(&request).await {
        Ok(c) => parse_json::<T>(&c.text).ok(),
        Err(e) => {
            tracing::warn!("ragas judge call failed: {e}");
            None
        }
    }
}

/// Scores one answered question. Questions without a trace (failed before answering) get
/// no scores.
pub async fn score(judge: &Judge, r: &QuestionResult) -> Option<RagasScores> {
    let trace = r.trace.as_ref()?;
    let sources = &trace.sources;
    let gold = r.answers.first().cloned().unwrap_or_default();
    let mut out = RagasScores {
        judge: match &judge.embedder {
            Some(e) => format!("{} + {}", judge.llm.model_id(), e.model_id()),
            None => judge.llm.model_id().to_string(),
        },
        ..RagasScores::default()
    };
    let answer = r.answer.trim();
    if !answer.is_empty() && !sources.is_empty() {
        out.faithfulness = ask::<ClaimsReply>(&*judge.llm, claims_request(answer, sources))
            .await
            .filter(|c| !c.claims.is_empty())
            .map(|c| {
                c.claims.iter().filter(|v| v.supported).count() as f64 / c.claims.len() as f64
            });
    }
    if !answer.is_empty()
        && let Some(embedder) = &judge.embedder
        && let Some(q) = ask::<QuestionsReply>(&*judge.llm, questions_request(answer)).await
    {
        let generated: Vec<String> = q
            .questions
            .into_iter()
            .filter(|x| !x.trim().is_empty())
            .collect();
        if !generated.is_empty() {
            let original = embedder.embed_query_dyn(&r.question).await;
            let others = embedder.embed_dyn(&generated).await;
            if let (Ok(o), Ok(g)) = (original, others) {
                out.answer_relevancy =
                    Some(g.iter().map(|v| f64::from(cosine(&o, v))).sum::<f64>() / g.len() as f64);
            }
        }
    }
    if !sources.is_empty() && !gold.is_empty() {
        out.context_precision =
            ask::<UsefulReply>(&*judge.llm, useful_request(&r.question, &gold, sources))
                .await
                .map(|u| {
                    let flags: Vec<bool> =
                        sources.iter().map(|s| u.useful.contains(&s.n)).collect();
                    average_precision(&flags)
                });
    }
    out.context_recall = match r.support_recall {
        Some(recall) => Some(recall),
        None if !sources.is_empty() && !gold.is_empty() => {
            ask::<AttributedReply>(&*judge.llm, attributed_request(&r.question, &gold, sources))
                .await
                .map(|a| f64::from(u8::from(a.attributed)))
        }
        None => None,
    };
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_precision_rewards_useful_sources_ranked_first() {
        assert_eq!(average_precision(&[true, false, false]), 1.0);
        assert_eq!(average_precision(&[false, false, true]), 1.0 / 3.0);
        // Ranks 1 and 3 useful: (1/1 + 2/3) / 2.
        assert!((average_precision(&[true, false, true]) - (1.0 + 2.0 / 3.0) / 2.0).abs() < 1e-12);
        assert_eq!(average_precision(&[false, false]), 0.0);
        assert_eq!(average_precision(&[]), 0.0);
    }
}
