//! `react`: reasoning and acting (Yao et al., ICLR 2023).
//!
//! The model alternates a thought with an action: `search` (passages about a query),
//! `lookup` (the next sentence with a keyword in the passages the last search found) or
//! `finish` (the answer). Each action's result comes back as an observation. The episode
//! ends at `finish` or when the steps run out; the trajectory goes as notes to the shared
//! write node for the cited answer. Unlike the paper, no search is made before the first
//! thought beyond the question's own retrieval: the model starts from what the question
//! finds, as every strategy here does.

use crate::evidence::Passage;
use crate::graph::{Graph, NodeId, NodeResult, Transition};
use crate::nodes::{self, READ, RETRIEVE, WRITE};
use crate::prompts::SYSTEM_CLOSED;
use crate::registry::Strategy;
use crate::state::Run;
use crate::text::sentences;
use crate::trace::StepKind;
use metarag_core::{ChatRequest, Message};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One thought, one action, one observation.
pub const ACT: NodeId = NodeId("act");

/// ReAct's settings (`[strategies.react]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReactConfig {
    /// Most thought/action steps (the paper uses 7 on HotpotQA).
    pub max_steps: usize,
    /// Passages a search returns.
    pub k_per_search: usize,
    /// Most characters of an observation.
    pub observation_chars: usize,
}

impl Default for ReactConfig {
    fn default() -> Self {
        ReactConfig {
            max_steps: 6,
            k_per_search: 3,
            observation_chars: 600,
        }
    }
}

/// The ReAct strategy.
#[derive(Debug, Clone)]
pub struct React(ReactConfig);

/// ReAct's state: settings, trajectory, and what `lookup` reads.
#[derive(Debug)]
pub struct ReactState {
    config: ReactConfig,
    trajectory: Vec<String>,
    last_found: Vec<Passage>,
    /// Sentences already returned by lookups, so the next lookup moves on.
    looked_up: Vec<String>,
}

/// The action kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Search for passages about the argument.
    Search,
    /// The next sentence containing the argument in the last passages found.
    Lookup,
    /// End with the argument as the answer.
    Finish,
}

/// One step's reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReactReply {
    /// The reasoning behind the action.
    pub thought: String,
    /// search, lookup or finish.
    pub action: Action,
    /// The query, the keyword, or the answer.
    pub argument: String,
}

impl Strategy for React {
    const NAME: &'static str = "react";
    const DESCRIPTION: &'static str =
        "thought / search / lookup / finish until the answer (ReAct, Yao et al. 2023)";
    type Config = ReactConfig;
    type State = ReactState;

    fn new(config: ReactConfig) -> Result<Self, String> {
        if config.max_steps == 0 || config.k_per_search == 0 || config.observation_chars < 100 {
            return Err(
                "max_steps and k_per_search must be at least 1, observation_chars at least 100"
                    .into(),
            );
        }
        Ok(React(config))
    }

    fn state(&self) -> ReactState {
        ReactState {
            config: self.0.clone(),
            trajectory: Vec::new(),
            last_found: Vec::new(),
            looked_up: Vec::new(),
        }
    }

    fn graph(&self) -> Graph<Run<ReactState>> {
        Graph::new(RETRIEVE)
            .node(RETRIEVE, &[(ACT, "")], |s| Box::pin(first_look(s)))
            .node(
                ACT,
                &[(ACT, "search or lookup"), (READ, "finish or steps spent")],
                |s| Box::pin(act(s)),
            )
            .node(READ, &[(WRITE, "")], |s| {
                Box::pin(nodes::read(s, Transition::Goto(WRITE)))
            })
            .node(WRITE, &[], |s| {
                Box::pin(nodes::write(s, Transition::done("answered")))
            })
    }
}

/// Retrieves with the question and shows the model what it found as the first
/// observation.
async fn first_look(s: &mut Run<ReactState>) -> NodeResult {
    nodes::retrieve(s, ACT).await?;
    let k = s.ext.config.k_per_search;
    let question = s.question.clone();
    let found = nodes::gather(s, &question, k).await?;
    let obs = observation(&found, s.ext.config.observation_chars);
    s.ext.trajectory.push(format!("Observation 0: {obs}"));
    s.ext.last_found = found;
    Ok(Transition::Goto(ACT))
}

/// What the model sees of passages: each title with its first sentences, within `chars`.
fn observation(found: &[Passage], chars: usize) -> String {
    if found.is_empty() {
        return "nothing found".into();
    }
    let share = chars / found.len();
    found
        .iter()
        .map(|p| {
            let mut text = String::new();
            for (a, b) in sentences(&p.text) {
                if !text.is_empty() && text.len() + (b - a) > share {
                    break;
                }
                text.push_str(&p.text[a..b]);
                text.push(' ');
            }
            format!("[{}] {}", p.title, text.trim())
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The step prompt: the question and the trajectory so far.
pub fn step(question: &str, trajectory: &[String]) -> ChatRequest {
    ChatRequest::new(vec![
        Message::system(SYSTEM_CLOSED),
        Message::user(format!(
            "Answer the question by alternating Thought and Action steps. A thought is one short \
             sentence. Actions: search (find passages about \
             an entity or topic; argument: the query), lookup (the next sentence containing a keyword in the \
             passages last found; argument: the keyword), finish (end with the answer; argument: the answer \
             in a few words).\n\nQuestion: {question}\n{}\n\
             Give the next thought and action. Reply in JSON: {{\"thought\": \"...\", \"action\": \"search\" | \
             \"lookup\" | \"finish\", \"argument\": \"...\"}}",
            trajectory.join("\n")
        )),
    ])
    .json_schema::<ReactReply>()
    .max_tokens(160)
}

async fn act(s: &mut Run<ReactState>) -> NodeResult {
    let cfg = s.ext.config.clone();
    let n = s
        .ext
        .trajectory
        .iter()
        .filter(|t| t.starts_with("Thought"))
        .count()
        + 1;
    let c =
        s.gw.chat(ACT.as_str(), "act", step(&s.question, &s.ext.trajectory))
            .await?;
    let reply = match c.parsed::<ReactReply>() {
        Ok(r) => r,
        Err(e) => {
            // The paper's episodes end on an unparsable action too.
            s.note = Some(format!(
                "unparsable action ({e}); answering from what was found"
            ));
            return finish(s, None);
        }
    };
    s.step(ACT.as_str(), StepKind::Thought, reply.thought.clone());
    s.ext
        .trajectory
        .push(format!("Thought {n}: {}", reply.thought.trim()));
    let arg = reply.argument.trim().to_string();
    let action = match reply.action {
        Action::Search => "search",
        Action::Lookup => "lookup",
        Action::Finish => "finish",
    };
    s.step(ACT.as_str(), StepKind::Action, format!("{action}[{arg}]"));
    s.ext
        .trajectory
        .push(format!("Action {n}: {action}[{arg}]"));
    if reply.action == Action::Finish {
        return finish(s, Some(arg));
    }
    let obs = match reply.action {
        Action::Search => {
            let found = nodes::gather(s, &arg, cfg.k_per_search).await?;
            let obs = observation(&found, cfg.observation_chars);
            s.ext.last_found = found;
            s.ext.looked_up.clear();
            obs
        }
        _ => lookup(&mut s.ext, &arg),
    };
    s.step(ACT.as_str(), StepKind::Observation, obs.clone());
    s.ext.trajectory.push(format!("Observation {n}: {obs}"));
    s.note = Some(format!("{action}[{arg}]"));
    if n >= cfg.max_steps {
        return finish(s, None);
    }
    Ok(Transition::Goto(ACT))
}

/// The next sentence containing `keyword` in the passages last found (case-insensitive).
fn lookup(st: &mut ReactState, keyword: &str) -> String {
    let k = keyword.to_lowercase();
    for p in &st.last_found {
        for (a, b) in sentences(&p.text) {
            let sentence = p.text[a..b].to_string();
            if sentence.to_lowercase().contains(&k) && !st.looked_up.contains(&sentence) {
                st.looked_up.push(sentence.clone());
                return sentence;
            }
        }
    }
    format!("no (more) sentences with {keyword:?}")
}

fn finish(s: &mut Run<ReactState>, answer: Option<String>) -> NodeResult {
    let mut notes = s.ext.trajectory.join("\n");
    if let Some(a) = &answer {
        s.step(ACT.as_str(), StepKind::Answer, a.clone());
        notes.push_str(&format!("\nProposed answer: {a}"));
    }
    s.notes = Some(notes);
    if s.note.is_none() {
        s.note = Some(match &answer {
            Some(a) => format!("finish[{a}]"),
            None => "steps spent".into(),
        });
    }
    Ok(Transition::Goto(READ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_moves_to_the_next_matching_sentence() {
        let mut st = React(ReactConfig::default()).state();
        st.last_found = vec![Passage::paragraph(
            "Jaws",
            "Jaws is a film. Jaws was a hit. It won awards.",
        )];
        assert_eq!(lookup(&mut st, "jaws"), "Jaws is a film.");
        assert_eq!(lookup(&mut st, "jaws"), "Jaws was a hit.");
        assert!(lookup(&mut st, "jaws").starts_with("no (more)"));
    }
}
