//! `self-ask`: follow-up questions answered by retrieval (Press et al., Findings of EMNLP
//! 2023, "Measuring and narrowing the compositionality gap").
//!
//! The model decides whether a follow-up question is needed; each follow-up is searched
//! and answered from what the search found (the paper answers it with a search engine),
//! and the chain of follow-ups and intermediate answers continues until the model gives a
//! final answer or the follow-ups run out. The chain goes as notes to the shared write
//! node for the cited answer.

use crate::graph::{Graph, NodeId, NodeResult, Transition};
use crate::nodes::{self, READ, RETRIEVE, WRITE};
use crate::prompts::{SYSTEM_CLOSED, over_sources};
use crate::registry::Strategy;
use crate::state::Run;
use crate::trace::StepKind;
use crate::verify::without_citations;
use crate::{Source, evidence};
use metarag_core::{ChatRequest, Message};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Asks the next follow-up question (or gives the final answer) and answers it.
pub const FOLLOW_UP: NodeId = NodeId("follow_up");

/// Self-Ask's settings (`[strategies.self-ask]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SelfAskConfig {
    /// Most follow-up questions.
    pub max_follow_ups: usize,
    /// Passages retrieved per follow-up.
    pub k_per_follow_up: usize,
}

impl Default for SelfAskConfig {
    fn default() -> Self {
        SelfAskConfig {
            max_follow_ups: 4,
            k_per_follow_up: 3,
        }
    }
}

/// The Self-Ask strategy.
#[derive(Debug, Clone)]
pub struct SelfAsk(SelfAskConfig);

/// Self-Ask's state: its settings and the follow-ups with their answers.
#[derive(Debug)]
pub struct SelfAskState {
    config: SelfAskConfig,
    chain: Vec<(String, String)>,
}

/// The decision reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SelfAskReply {
    /// The next follow-up question; empty when the final answer is given.
    pub follow_up: String,
    /// The final answer; empty while a follow-up is needed.
    pub final_answer: String,
}

impl Strategy for SelfAsk {
    const NAME: &'static str = "self-ask";
    const DESCRIPTION: &'static str = "ask and answer follow-up questions by retrieval, then answer (Self-Ask, Press et al. 2023)";
    type Config = SelfAskConfig;
    type State = SelfAskState;

    fn new(config: SelfAskConfig) -> Result<Self, String> {
        if config.k_per_follow_up == 0 {
            return Err("k_per_follow_up must be at least 1".into());
        }
        Ok(SelfAsk(config))
    }

    fn state(&self) -> SelfAskState {
        SelfAskState {
            config: self.0.clone(),
            chain: Vec::new(),
        }
    }

    fn graph(&self) -> Graph<Run<SelfAskState>> {
        Graph::new(RETRIEVE)
            .node(RETRIEVE, &[(FOLLOW_UP, "")], |s| {
                Box::pin(nodes::retrieve(s, FOLLOW_UP))
            })
            .node(
                FOLLOW_UP,
                &[
                    (FOLLOW_UP, "follow-up answered"),
                    (READ, "final answer or follow-ups spent"),
                ],
                |s| Box::pin(follow_up(s)),
            )
            .node(READ, &[(WRITE, "")], |s| {
                Box::pin(nodes::read(s, Transition::Goto(WRITE)))
            })
            .node(WRITE, &[], |s| {
                Box::pin(nodes::write(s, Transition::done("answered")))
            })
    }
}

fn chain_text(chain: &[(String, String)]) -> String {
    chain
        .iter()
        .map(|(q, a)| format!("Follow up: {q}\nIntermediate answer: {a}\n"))
        .collect()
}

/// The decision prompt: the question and the chain so far, no sources (as in the paper,
/// the decomposition is the model's own).
pub fn decide(question: &str, chain: &[(String, String)]) -> ChatRequest {
    ChatRequest::new(vec![
        Message::system(SYSTEM_CLOSED),
        Message::user(format!(
            "Question: {question}\n{}\nAre follow up questions needed to answer the question? If so, write the \
             next follow up question (a simple question about one thing) and leave final_answer empty. If the \
             intermediate answers already answer the question, give the final answer and leave follow_up empty.\n\
             Reply in JSON: {{\"follow_up\": \"...\", \"final_answer\": \"...\"}}",
            chain_text(chain)
        )),
    ])
    .json_schema::<SelfAskReply>()
    .max_tokens(64)
}

/// The prompt answering one follow-up from the passages found for it.
pub fn intermediate(follow_up: &str, sources: &[Source]) -> ChatRequest {
    ChatRequest::new(over_sources(
        sources,
        format!(
            "Question: {follow_up}\n\nAnswer the question from the sources in a few words (a name, a date, a \
             number). If the sources do not say, answer \"unknown\"."
        ),
    ))
    .max_tokens(24)
    .stop("\n")
}

async fn follow_up(s: &mut Run<SelfAskState>) -> NodeResult {
    let cfg = s.ext.config.clone();
    let c =
        s.gw.chat(
            FOLLOW_UP.as_str(),
            "follow_up",
            decide(&s.question, &s.ext.chain),
        )
        .await?;
    let reply = c.parsed::<SelfAskReply>().unwrap_or(SelfAskReply {
        // An unparsable reply ends the chain: the writer answers from what there is.
        follow_up: String::new(),
        final_answer: String::new(),
    });
    let question = reply.follow_up.trim().to_string();
    let repeated = s.ext.chain.iter().any(|(q, _)| *q == question);
    if question.is_empty() || repeated || s.ext.chain.len() >= cfg.max_follow_ups {
        let mut notes = chain_text(&s.ext.chain);
        let answer = reply.final_answer.trim();
        if !answer.is_empty() {
            s.step(FOLLOW_UP.as_str(), StepKind::Answer, answer);
            notes.push_str(&format!("So the final answer is: {answer}\n"));
        }
        s.notes = (!notes.is_empty()).then_some(notes);
        s.note = Some(format!(
            "{} follow-ups; final answer {answer:?}",
            s.ext.chain.len()
        ));
        return Ok(Transition::Goto(READ));
    }
    s.step(FOLLOW_UP.as_str(), StepKind::SubQuestion, question.clone());
    let found = nodes::gather(s, &question, cfg.k_per_follow_up).await?;
    let sources = evidence::read(
        std::slice::from_ref(&question),
        &found,
        s.cfg().max_evidence_chars,
    );
    let c =
        s.gw.chat(
            FOLLOW_UP.as_str(),
            "intermediate_answer",
            intermediate(&question, &sources),
        )
        .await?;
    let answer = without_citations(c.text().unwrap_or("unknown").trim());
    s.step(FOLLOW_UP.as_str(), StepKind::Answer, answer.clone());
    s.note = Some(format!("{question:?} -> {answer:?}"));
    s.ext.chain.push((question, answer));
    Ok(Transition::Goto(FOLLOW_UP))
}
