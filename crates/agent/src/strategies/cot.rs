//! `cot`: seed `004`'s linear planner (State-Aware RAG, Man et al.) over an explicit
//! reasoning memory.
//!
//! retrieve (the question) -> **program**: the question's typed program
//! ([`crate::program`]), planned and run as `metarag` runs it; resolved, it is the answer;
//! otherwise its grounded reads are the memory's first facts
//! ([`ReasoningMemory::from_program`]) and a read that found no source is the first
//! sub-question -> **decompose**: the generator sees the question's
//! sources and the memory and proposes the next sub-question, or a final answer ->
//! **extract**: the sub-question is searched and the extractor answers it from what was
//! found, citing the passages; the code scores the fact (are its words in the cited
//! passages? how probable were its tokens?) and adds it to the memory -> decompose again,
//! until a final answer, a repeated sub-question or `max_steps` -> read -> **write** with the
//! trusted facts as notes. The memory is the chain's state; a tree planner keeps one per
//! node.

use crate::evidence::{self, Passage};
use crate::graph::{Graph, NodeId, NodeResult, Transition};
use crate::monitor::field_logprobs;
use crate::nodes::{self, READ, RETRIEVE, WRITE};
use crate::program::exec::Outcome;
use crate::program::{self, PROGRAM, PROGRAM_RESOLVED};
use crate::prompts::over_sources;
use crate::reasoning::{Candidate, Fact, ReasoningMemory, fact_confidence};
use crate::registry::Strategy;
use crate::state::Run;
use crate::trace::{EvidenceMode, StepKind};
use crate::verify::without_citations;
use metarag_core::ChatRequest;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Proposes the next sub-question or the final answer.
pub const DECOMPOSE: NodeId = NodeId("decompose");
/// Searches the sub-question and extracts its answer from what was found.
pub const EXTRACT: NodeId = NodeId("extract");

/// CoT's settings (`[strategies.cot]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CotConfig {
    /// Most sub-questions.
    pub max_steps: usize,
    /// Passages retrieved per sub-question.
    pub k_per_step: usize,
    /// Facts below this confidence are shown as not found.
    pub min_confidence: f64,
    /// Plan and run the question's program first ([`crate::program`]): the chain starts
    /// from its grounded facts, or ends at its answer when every step grounds.
    pub program: bool,
}

impl Default for CotConfig {
    fn default() -> Self {
        CotConfig {
            max_steps: 4,
            k_per_step: 3,
            min_confidence: 0.5,
            program: true,
        }
    }
}

/// The CoT planner.
#[derive(Debug, Clone)]
pub struct Cot(CotConfig);

/// CoT's state: its settings, the memory and the sub-question being answered.
#[derive(Debug)]
pub struct CotState {
    config: CotConfig,
    memory: ReasoningMemory,
    /// Facts the program left in the memory: `max_steps` bounds the chain's own.
    seeded: usize,
}

/// The generator's reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DecomposeReply {
    /// The next sub-question to look up; empty when the final answer is given.
    pub sub_question: String,
    /// The final answer; empty while a sub-question is needed.
    pub final_answer: String,
}

/// The extractor's reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExtractReply {
    /// One sentence stating the answer, citing the source by its number.
    pub statement: String,
    /// The answer in a few words, or "unknown".
    pub answer: String,
}

impl Strategy for Cot {
    const NAME: &'static str = "cot";
    const DESCRIPTION: &'static str = "linear planner over an explicit reasoning memory: sub-question, search, extract, score the fact in code, until the answer (seed 004, State-Aware RAG)";
    type Config = CotConfig;
    type State = CotState;

    fn new(config: CotConfig) -> Result<Self, String> {
        if config.k_per_step == 0 {
            return Err("k_per_step must be at least 1".into());
        }
        if !(0.0..=1.0).contains(&config.min_confidence) {
            return Err(format!(
                "min_confidence {} is not in [0, 1]",
                config.min_confidence
            ));
        }
        Ok(Cot(config))
    }

    fn state(&self) -> CotState {
        CotState {
            config: self.0.clone(),
            memory: ReasoningMemory::default(),
            seeded: 0,
        }
    }

    fn graph(&self) -> Graph<Run<CotState>> {
        Graph::new(RETRIEVE)
            .node(RETRIEVE, &[(PROGRAM, "")], |s| {
                Box::pin(nodes::retrieve(s, PROGRAM))
            })
            .node(
                PROGRAM,
                &[
                    (EXTRACT, "a read found no source"),
                    (DECOMPOSE, "no program, or a step unsettled"),
                ],
                |s| Box::pin(run_program(s)),
            )
            .node(
                DECOMPOSE,
                &[
                    (EXTRACT, "a new sub-question"),
                    (READ, "final answer, repeated sub-question or steps spent"),
                ],
                |s| Box::pin(decompose(s)),
            )
            .node(
                EXTRACT,
                &[(DECOMPOSE, ""), (READ, "budget nearly spent")],
                |s| Box::pin(extract(s)),
            )
            .node(READ, &[(WRITE, "")], |s| {
                Box::pin(nodes::read(s, Transition::Goto(WRITE)))
            })
            .node(WRITE, &[], |s| {
                Box::pin(nodes::write(s, Transition::done("answered")))
            })
    }
}

/// What the generator is asked after the question and the facts. Kept apart so that a reply
/// echoing it as a sub-question is recognised ([`crate::reasoning::meaningful`]).
pub const DECOMPOSE_INSTRUCTION: &str = "To answer the question, what is the next simple \
     question to look up (about one person, place or thing; name it, do not write \"he\" or \"it\")? \
     If the facts and sources above already answer the question, give the final answer in a few words \
     and leave sub_question empty.\nReply in JSON: {\"sub_question\": \"...\", \"final_answer\": \"...\"}";

/// The generator's prompt: the question's sources (the same prefix on every step, so a
/// local model reuses its cache), then the memory. Without sources (`mcts` below its root)
/// the prompt is the memory alone, with no empty "Sources:" heading.
pub fn decompose_prompt(
    question: &str,
    sources: &[crate::Source],
    memory: &ReasoningMemory,
    min_confidence: f64,
) -> ChatRequest {
    let task = format!(
        "Question: {question}\n\nFacts found so far:\n{}\n{DECOMPOSE_INSTRUCTION}",
        memory.render(min_confidence)
    );
    let messages = if sources.is_empty() {
        vec![
            metarag_core::Message::system(crate::prompts::SYSTEM),
            metarag_core::Message::user(task),
        ]
    } else {
        over_sources(sources, task)
    };
    ChatRequest::new(messages)
        .json_schema::<DecomposeReply>()
        .max_tokens(64)
}

/// The extractor's prompt: one sub-question over the passages found for it.
pub fn extract_prompt(sub_question: &str, sources: &[crate::Source]) -> ChatRequest {
    ChatRequest::new(over_sources(
        sources,
        format!(
            "Question: {sub_question}\n\nAnswer from the sources only. Write one sentence that states the answer \
             and cites its source by number, like [1], and the answer in a few words. If the sources do not say, \
             answer \"unknown\".\nReply in JSON: {{\"statement\": \"...\", \"answer\": \"...\"}}"
        ),
    ))
    .json_schema::<ExtractReply>()
    .max_tokens(96)
}

type S = Run<CotState>;

/// Plans and runs the question's program: resolved, its answer ends the run, with its
/// reads as the memory's facts; unresolved, the chain goes on from its grounded facts,
/// asking first for the read that found no source.
async fn run_program(s: &mut S) -> NodeResult {
    if s.sources_version == 0 {
        nodes::read(s, Transition::Goto(PROGRAM)).await?;
    }
    if !s.ext.config.program || s.sources.is_empty() || s.mode == EvidenceMode::ClosedBook {
        return Ok(Transition::Goto(DECOMPOSE));
    }
    let run = program::exec::solve(s, PROGRAM.as_str()).await?;
    s.ext.memory = ReasoningMemory::from_program(&run, &s.sources);
    s.ext.seeded = s.ext.memory.facts.len();
    if let Outcome::Resolved {
        answer,
        short_answer,
        ..
    } = &run.outcome
    {
        s.ext.memory.candidates.push(Candidate {
            answer: short_answer.clone(),
            confidence: 1.0,
        });
        let i = s.push_answer(answer.clone(), short_answer.clone());
        s.chosen = Some(i);
        finish(s, "the program resolved");
        return Ok(Transition::done(PROGRAM_RESOLVED));
    }
    match run.missing_read() {
        Some(sub) => {
            s.step(PROGRAM.as_str(), StepKind::SubQuestion, sub.to_string());
            s.ext.memory.open.push(sub.to_string());
            s.note = Some(format!("{}: no source states {sub:?}", run.outcome.name()));
            Ok(Transition::Goto(EXTRACT))
        }
        None => {
            s.note = Some(format!(
                "{}: {} facts grounded",
                run.outcome.name(),
                s.ext.memory.facts.len()
            ));
            Ok(Transition::Goto(DECOMPOSE))
        }
    }
}

async fn decompose(s: &mut S) -> NodeResult {
    let cfg = s.ext.config.clone();
    // The generator reads the question's own sources (read once, before the first step).
    if s.sources_version == 0 {
        nodes::read(s, Transition::Goto(DECOMPOSE)).await?;
    }
    let request = decompose_prompt(&s.question, &s.sources, &s.ext.memory, cfg.min_confidence);
    let c = s.gw.chat(DECOMPOSE.as_str(), "decompose", request).await?;
    // An unparsable reply ends the chain: the writer answers from what there is.
    let reply = c.parsed::<DecomposeReply>().unwrap_or(DecomposeReply {
        sub_question: String::new(),
        final_answer: String::new(),
    });
    // A placeholder ("...", the schema's example echoed) is no sub-question.
    let sub = crate::reasoning::meaningful(&reply.sub_question);
    let final_answer = reply.final_answer.trim().to_string();
    let asked = s.ext.memory.asked(&sub);
    let steps = s.ext.memory.facts.len() - s.ext.seeded;
    if sub.is_empty() || asked || steps >= cfg.max_steps {
        if !final_answer.is_empty() {
            s.step(DECOMPOSE.as_str(), StepKind::Answer, final_answer.clone());
            // A proposed answer is trusted as far as the trusted facts or the sources
            // state its words.
            let confidence = s
                .ext
                .memory
                .grounding(&final_answer, &s.sources, cfg.min_confidence);
            s.ext.memory.candidates.push(Candidate {
                answer: final_answer.clone(),
                confidence,
            });
        }
        let why = if sub.is_empty() {
            "final answer"
        } else if steps >= cfg.max_steps {
            "steps spent"
        } else {
            "repeated sub-question"
        };
        finish(s, why);
        return Ok(Transition::Goto(READ));
    }
    s.step(DECOMPOSE.as_str(), StepKind::SubQuestion, sub.clone());
    s.ext.memory.open.push(sub.clone());
    s.note = Some(format!("sub-question {}: {sub:?}", steps + 1));
    Ok(Transition::Goto(EXTRACT))
}

async fn extract(s: &mut S) -> NodeResult {
    let k = s.ext.config.k_per_step;
    let sub = s
        .ext
        .memory
        .open
        .pop()
        .ok_or("extract: no open sub-question")?;
    let fact = extract_fact(s, EXTRACT, &sub, k).await?;
    s.note = Some(format!(
        "{sub:?} -> {:?} ({:.2})",
        fact.answer, fact.confidence
    ));
    s.ext.memory.facts.push(fact);
    // Another step makes two calls (decompose, extract) and the write one more: stop
    // while the write still fits, so a tight budget ends with the facts written up.
    if !s.gw.room_for(3) {
        s.metrics.insert("stopped_short_of_budget".into(), 1.0);
        let note = s.note.take().unwrap_or_default();
        finish(s, "budget nearly spent");
        s.note = Some(format!("{note}; {}", s.note.take().unwrap_or_default()));
        return Ok(Transition::Goto(READ));
    }
    Ok(Transition::Goto(DECOMPOSE))
}

/// Searches `sub` (`k` passages), asks the extractor for its answer with a citation, and
/// scores the fact in code ([`fact_confidence`]); records the search, what it found and
/// the answer as steps of `node`. Shared by the chain and the tree planner.
pub async fn extract_fact<E: Send>(
    s: &mut Run<E>,
    node: NodeId,
    sub: &str,
    k: usize,
) -> Result<Fact, crate::graph::NodeError> {
    let asked = ask_fact(s, node, sub, k).await?;
    let c =
        s.gw.chat(node.as_str(), "extract", asked.request.clone())
            .await?;
    Ok(asked.score(s, node, &c))
}

/// A sub-question searched and put to the extractor, its answer not yet in: the planner
/// that runs several at once sends every request together, then scores each reply.
#[derive(Debug)]
pub struct AskedFact {
    sub: String,
    sources: Vec<crate::Source>,
    /// The extractor's request.
    pub request: ChatRequest,
}

/// Searches `sub` (`k` passages) and builds the extractor's request; records the search
/// and what it found as steps of `node`.
pub async fn ask_fact<E: Send>(
    s: &mut Run<E>,
    node: NodeId,
    sub: &str,
    k: usize,
) -> Result<AskedFact, crate::graph::NodeError> {
    s.step(node.as_str(), StepKind::Action, format!("search: {sub}"));
    let found = nodes::gather(s, sub, k).await?;
    let titles: Vec<&str> = found.iter().map(|p| p.title.as_str()).collect();
    s.step(node.as_str(), StepKind::Observation, titles.join("; "));
    let sources = evidence::read(&[sub.to_string()], &found, s.cfg().max_evidence_chars);
    let mut request = extract_prompt(sub, &sources);
    if s.gw.capabilities_for("extract").logprobs {
        request = request.logprobs();
    }
    Ok(AskedFact {
        sub: sub.to_string(),
        sources,
        request,
    })
}

impl AskedFact {
    /// The fact the extractor's reply `c` states, scored in code; recorded as a step.
    pub fn score<E: Send>(&self, s: &mut Run<E>, node: NodeId, c: &crate::gateway::Called) -> Fact {
        let logprob = c
            .result
            .as_ref()
            .ok()
            .and_then(|d| d.logprobs.as_deref())
            .and_then(|lp| field_logprobs(lp, "answer"));
        let reply = c.parsed::<ExtractReply>().unwrap_or(ExtractReply {
            statement: String::new(),
            answer: "unknown".into(),
        });
        let cited_numbers: Vec<usize> = crate::verify::citations(&reply.statement)
            .into_iter()
            .flat_map(|(_, ns)| ns)
            .collect();
        // A statement that cites nothing (small models often drop the number) is checked
        // against every passage the extractor was shown.
        let cited: Vec<&Passage> = self
            .sources
            .iter()
            .filter(|x| cited_numbers.is_empty() || cited_numbers.contains(&x.n))
            .map(|x| &x.passage)
            .collect();
        let answer = without_citations(reply.answer.trim());
        let confidence = fact_confidence(&answer, &cited, logprob);
        s.step(
            node.as_str(),
            StepKind::Answer,
            format!("{answer} (confidence {confidence:.2})"),
        );
        Fact {
            sub_question: self.sub.clone(),
            answer,
            statement: without_citations(reply.statement.trim()),
            sources: cited.iter().map(|p| p.title.clone()).collect(),
            confidence,
        }
    }
}

/// Hands the trusted facts (and a proposed final answer) to the writer as notes, and
/// records the memory's counts.
fn finish(s: &mut S, why: &str) {
    let min = s.ext.config.min_confidence;
    let memory = &s.ext.memory;
    let mut notes = memory.render(min);
    if let Some(c) = memory.candidates.last() {
        notes.push_str(&format!("Proposed answer: {}\n", c.answer));
    }
    let trusted = memory.trusted(min).count();
    let total = memory.facts.len();
    let mean = if total == 0 {
        0.0
    } else {
        memory.facts.iter().map(|f| f.confidence).sum::<f64>() / total as f64
    };
    s.metrics
        .entry("stopped_short_of_budget".into())
        .or_insert(0.0);
    s.metrics.insert("sub_questions".into(), total as f64);
    s.metrics.insert("trusted_facts".into(), trusted as f64);
    s.metrics.insert("mean_fact_confidence".into(), mean);
    if let Some(c) = memory.candidates.last() {
        s.metrics
            .insert("candidate_confidence".into(), c.confidence);
    }
    s.notes = Some(notes);
    s.note = Some(format!(
        "{why}: {total} sub-questions, {trusted} facts trusted"
    ));
}
