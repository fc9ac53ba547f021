//! `reflexion`: verbal reinforcement from failed attempts (Shinn et al., NeurIPS 2023).
//!
//! Answer; evaluate the attempt; if it fails, the model reflects on why in a few
//! sentences, the reflection is kept in an episodic memory, and the next attempt is
//! written with every reflection so far in front of it. The last attempt is the answer.
//!
//! Where this differs from the paper: its HotpotQA evaluator was exact match against the
//! gold answer, which an engine answering new questions does not have. The evaluator
//! here is the check metarag runs without asking the model: the answer's claims supported
//! by the sources they cite, citation precision, and a short answer that is not a
//! refusal ([`crate::verify`]).

use crate::graph::{Graph, NodeId, NodeResult, Transition};
use crate::nodes::{self, READ, RETRIEVE, WRITE};
use crate::prompts::over_sources;
use crate::registry::Strategy;
use crate::state::Run;
use crate::text::is_refusal;
use crate::trace::StepKind;
use crate::verify::{VerifyInput, verify};
use metarag_core::ChatRequest;
use serde::{Deserialize, Serialize};

/// Evaluates the latest attempt.
pub const EVALUATE: NodeId = NodeId("evaluate");
/// Reflects on a failed attempt.
pub const REFLECT: NodeId = NodeId("reflect");

/// Reflexion's settings (`[strategies.reflexion]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReflexionConfig {
    /// Most attempts (the first included).
    pub max_trials: usize,
    /// An attempt passes when this share of its claims is supported by its citations.
    pub min_faithfulness: f64,
    /// ... and at least this share of its citations support their sentence.
    pub min_citation_precision: f64,
}

impl Default for ReflexionConfig {
    fn default() -> Self {
        ReflexionConfig {
            max_trials: 3,
            min_faithfulness: 0.7,
            min_citation_precision: 0.4,
        }
    }
}

/// The Reflexion strategy.
#[derive(Debug, Clone)]
pub struct Reflexion(ReflexionConfig);

/// Reflexion's state: settings, the episodic memory, and why the last attempt failed.
#[derive(Debug)]
pub struct ReflexionState {
    config: ReflexionConfig,
    reflections: Vec<String>,
    failure: String,
}

impl Strategy for Reflexion {
    const NAME: &'static str = "reflexion";
    const DESCRIPTION: &'static str = "answer, evaluate, reflect on a failed attempt and retry with the reflections (Reflexion, Shinn et al. 2023)";
    type Config = ReflexionConfig;
    type State = ReflexionState;

    fn new(config: ReflexionConfig) -> Result<Self, String> {
        if config.max_trials == 0 {
            return Err("max_trials must be at least 1".into());
        }
        for (name, v) in [
            ("min_faithfulness", config.min_faithfulness),
            ("min_citation_precision", config.min_citation_precision),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return Err(format!("{name} {v} is not in [0, 1]"));
            }
        }
        Ok(Reflexion(config))
    }

    fn state(&self) -> ReflexionState {
        ReflexionState {
            config: self.0.clone(),
            reflections: Vec::new(),
            failure: String::new(),
        }
    }

    fn graph(&self) -> Graph<Run<ReflexionState>> {
        Graph::new(RETRIEVE)
            .node(RETRIEVE, &[(READ, "")], |s| {
                Box::pin(nodes::retrieve(s, READ))
            })
            .node(READ, &[(WRITE, "")], |s| {
                Box::pin(nodes::read(s, Transition::Goto(WRITE)))
            })
            .node(WRITE, &[(EVALUATE, "")], |s| {
                Box::pin(nodes::write(s, Transition::Goto(EVALUATE)))
            })
            .node(EVALUATE, &[(REFLECT, "failed, trials left")], |s| {
                Box::pin(evaluate(s))
            })
            .node(REFLECT, &[(WRITE, "")], |s| Box::pin(reflect(s)))
    }
}

async fn evaluate(s: &mut Run<ReflexionState>) -> NodeResult {
    let cfg = s.ext.config.clone();
    let (answer, short) = {
        let r = s.current_round()?;
        (r.answer.clone(), r.short_answer.clone())
    };
    let v = verify(VerifyInput {
        answer: &answer,
        short_answer: &short,
        sources: &s.sources,
        facts: Err("not asked: Reflexion's evaluator runs in code".into()),
        judge: Err("not asked: Reflexion's evaluator runs in code".into()),
        support_threshold: s.cfg().support_threshold,
        judge_weight: 0.0,
    });
    let unsupported = v.claims.iter().filter(|c| !c.supported).count();
    let mut why = Vec::new();
    if short.trim().is_empty() || is_refusal(&answer) {
        why.push("the answer does not answer the question".to_string());
    }
    if v.faithfulness < cfg.min_faithfulness {
        why.push(format!(
            "{unsupported} of {} claims are not supported by the source they cite",
            v.claims.len()
        ));
    }
    if v.citation_precision < cfg.min_citation_precision {
        why.push(format!(
            "only {:.0}% of the citations support their sentence",
            v.citation_precision * 100.0
        ));
    }
    let trial = s.rounds.len();
    let verdict = if why.is_empty() {
        "passed".to_string()
    } else {
        why.join("; ")
    };
    s.step(
        EVALUATE.as_str(),
        StepKind::Observation,
        format!("attempt {trial}: {verdict}"),
    );
    s.note = Some(format!("attempt {trial}: {verdict}"));
    if why.is_empty() {
        return Ok(Transition::done("passed"));
    }
    if trial >= cfg.max_trials {
        return Ok(Transition::done(format!("max_trials {}", cfg.max_trials)));
    }
    s.ext.failure = verdict;
    Ok(Transition::Goto(REFLECT))
}

/// The self-reflection prompt.
pub fn reflection(
    question: &str,
    sources: &[crate::Source],
    answer: &str,
    failure: &str,
) -> ChatRequest {
    ChatRequest::new(over_sources(
        sources,
        format!(
            "Question: {question}\n\nYour earlier answer: {answer}\n\nIt failed a check: {failure}.\n\nIn two \
             sentences, say what went wrong in that answer and what you will do differently in the next attempt. \
             Do not answer the question itself."
        ),
    ))
    .max_tokens(96)
}

async fn reflect(s: &mut Run<ReflexionState>) -> NodeResult {
    let answer = s.current_round()?.answer.clone();
    let request = reflection(&s.question, &s.sources, &answer, &s.ext.failure);
    let c = s.gw.chat(REFLECT.as_str(), "reflect", request).await?;
    let text = c
        .text()
        .map_err(|e| format!("reflect: {e}"))?
        .trim()
        .to_string();
    s.step(REFLECT.as_str(), StepKind::Thought, text.clone());
    s.ext.reflections.push(text);
    let memory: Vec<String> = s
        .ext
        .reflections
        .iter()
        .enumerate()
        .map(|(i, r)| format!("({}) {r}", i + 1))
        .collect();
    s.directive = Some(format!(
        "Reflections on your earlier attempts: {} Write a better answer.",
        memory.join(" ")
    ));
    s.note = Some(format!("{} reflections", s.ext.reflections.len()));
    Ok(Transition::Goto(WRITE))
}
