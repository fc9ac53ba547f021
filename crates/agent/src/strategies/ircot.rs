//! `ircot`: interleaving retrieval with chain-of-thought (Trivedi et al., ACL 2023).
//!
//! Retrieve with the question; then repeat: the model writes the next sentence of its
//! reasoning over the sources found so far, and that sentence becomes the next query,
//! until a sentence states the answer ("So the answer is: ...") or the steps run out. The
//! reasoning then goes, as notes, to the shared write node, which gives the cited answer
//! (the paper's separate reader step).

use crate::graph::{Graph, NodeId, NodeResult, Transition};
use crate::nodes::{self, READ, RETRIEVE, WRITE};
use crate::prompts::over_sources;
use crate::registry::Strategy;
use crate::state::Run;
use crate::trace::StepKind;
use crate::verify::without_citations;
use metarag_core::ChatRequest;
use serde::{Deserialize, Serialize};

/// Writes one reasoning sentence and retrieves with it.
pub const REASON: NodeId = NodeId("reason");

/// IRCoT's settings (`[strategies.ircot]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IrcotConfig {
    /// Most reasoning sentences (each after the first also retrieves).
    pub max_steps: usize,
    /// Passages retrieved per reasoning sentence.
    pub k_per_step: usize,
    /// Most tokens per reasoning sentence.
    pub sentence_tokens: u32,
}

impl Default for IrcotConfig {
    fn default() -> Self {
        IrcotConfig {
            max_steps: 5,
            k_per_step: 4,
            sentence_tokens: 64,
        }
    }
}

/// The IRCoT strategy.
#[derive(Debug, Clone)]
pub struct Ircot(IrcotConfig);

/// IRCoT's state: its settings and the reasoning so far.
#[derive(Debug)]
pub struct IrcotState {
    config: IrcotConfig,
    chain: Vec<String>,
}

impl Strategy for Ircot {
    const NAME: &'static str = "ircot";
    const DESCRIPTION: &'static str = "interleave one chain-of-thought sentence and one retrieval until the answer (IRCoT, Trivedi et al. 2023)";
    type Config = IrcotConfig;
    type State = IrcotState;

    fn new(config: IrcotConfig) -> Result<Self, String> {
        if config.max_steps == 0 || config.k_per_step == 0 || config.sentence_tokens == 0 {
            return Err("max_steps, k_per_step and sentence_tokens must be at least 1".into());
        }
        Ok(Ircot(config))
    }

    fn state(&self) -> IrcotState {
        IrcotState {
            config: self.0.clone(),
            chain: Vec::new(),
        }
    }

    fn graph(&self) -> Graph<Run<IrcotState>> {
        Graph::new(RETRIEVE)
            .node(RETRIEVE, &[(READ, "")], |s| {
                Box::pin(nodes::retrieve(s, READ))
            })
            .node(READ, &[(REASON, "")], |s| {
                Box::pin(nodes::read(s, Transition::Goto(REASON)))
            })
            .node(
                REASON,
                &[
                    (REASON, "no answer yet, steps left"),
                    (WRITE, "answer stated or steps spent"),
                ],
                |s| Box::pin(reason(s)),
            )
            .node(WRITE, &[], |s| {
                Box::pin(nodes::write(s, Transition::done("answered")))
            })
    }
}

/// The prompt for the next reasoning sentence.
pub fn next_sentence(
    question: &str,
    sources: &[crate::Source],
    chain: &[String],
    max_tokens: u32,
) -> ChatRequest {
    let so_far = if chain.is_empty() {
        "(none yet)".to_string()
    } else {
        chain.join(" ")
    };
    ChatRequest::new(over_sources(
        sources,
        format!(
            "Question: {question}\n\nReasoning so far: {so_far}\n\nContinue the reasoning with ONE short sentence \
             that states one fact from the sources needed to answer the question. When the facts so far answer \
             the question, write instead: So the answer is: <the answer>."
        ),
    ))
    .max_tokens(max_tokens)
    .stop("\n")
}

/// True when a reasoning sentence states the final answer.
fn states_answer(sentence: &str) -> bool {
    sentence.to_lowercase().contains("answer is")
}

async fn reason(s: &mut Run<IrcotState>) -> NodeResult {
    let cfg = s.ext.config.clone();
    let request = next_sentence(&s.question, &s.sources, &s.ext.chain, cfg.sentence_tokens);
    let c = s.gw.chat(REASON.as_str(), "reason", request).await?;
    let sentence = c
        .text()
        .map_err(|e| format!("reason: {e}"))?
        .trim()
        .to_string();
    // A repeated or empty sentence means the model is stuck: more steps will not help.
    let stuck = sentence.is_empty() || s.ext.chain.contains(&sentence);
    if !stuck {
        s.step(REASON.as_str(), StepKind::Thought, sentence.clone());
        s.ext.chain.push(sentence.clone());
    }
    let done = stuck || states_answer(&sentence) || s.ext.chain.len() >= cfg.max_steps;
    if done {
        s.notes = Some(s.ext.chain.join(" "));
        s.note = Some(format!(
            "{} reasoning sentences; {}",
            s.ext.chain.len(),
            if stuck {
                "stuck"
            } else if states_answer(&sentence) {
                "answer stated"
            } else {
                "steps spent"
            }
        ));
        return Ok(Transition::Goto(WRITE));
    }
    let query = without_citations(&sentence);
    s.step(
        REASON.as_str(),
        StepKind::Action,
        format!("search: {query}"),
    );
    let found = nodes::gather(s, &query, cfg.k_per_step).await?;
    let titles: Vec<&str> = found.iter().map(|p| p.title.as_str()).collect();
    s.step(REASON.as_str(), StepKind::Observation, titles.join("; "));
    // Read again so the next sentence sees what this one found.
    nodes::read(s, Transition::Goto(REASON)).await?;
    s.note = Some(format!("{sentence:?} -> {} passages", found.len()));
    Ok(Transition::Goto(REASON))
}
