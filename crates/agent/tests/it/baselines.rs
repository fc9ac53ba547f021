//! The paper baselines (IRCoT, Self-Ask, ReAct, FLARE, Reflexion) and a plug-in strategy,
//! each driven through its graph by the scripted fake LLM.

use crate::context;
use metarag_agent::graph::{Graph, NodeId};
use metarag_agent::nodes::{self, READ, RETRIEVE, WRITE};
use metarag_agent::strategies::NoConfig;
use metarag_agent::{
    Agent, AgentConfig, Ask, Budget, BudgetKind, Registry, Run, StepKind, StopReason, Strategy,
    StrategySections, Trace, Transition,
};
use metarag_core::DynLlm;
use metarag_testkit::ScriptedLlm;
use std::sync::Arc;

use crate::branches::{GOOD, JAWS, Q, SPIELBERG, WRITE as WRITE_NEEDLE, agent};

const NOTES: &str = "Notes from your reasoning so far";

fn gold(strategy: &str) -> Ask {
    Ask::new(Q, strategy).with_context(context(&[JAWS, SPIELBERG]))
}

fn nodes_of(t: &Trace) -> Vec<&str> {
    t.graph.events.iter().map(|e| e.node.as_str()).collect()
}

fn kinds(t: &Trace) -> Vec<StepKind> {
    t.steps.iter().map(|s| s.kind).collect()
}

#[tokio::test]
async fn ircot_interleaves_reasoning_sentences_with_retrieval_until_the_answer() {
    let (agent, llm) = agent(
        ScriptedLlm::new()
            .on_seq(
                &["Continue the reasoning"],
                &[
                    "Jaws was directed by Steven Spielberg [1].",
                    "Steven Spielberg is American [2].",
                    "So the answer is: United States.",
                ],
            )
            .on(&[WRITE_NEEDLE], GOOD),
        AgentConfig::default(),
    );
    let t = agent.ask(&gold("ircot")).await.unwrap();
    assert_eq!(t.strategy, "ircot");
    assert_eq!(t.stop, StopReason::Done("answered".into()));
    assert_eq!(
        nodes_of(&t),
        ["retrieve", "read", "reason", "reason", "reason", "write"]
    );
    // Two sentences searched (action, observation), the third stated the answer.
    use StepKind::*;
    assert_eq!(
        kinds(&t),
        [
            Thought,
            Action,
            Observation,
            Thought,
            Action,
            Observation,
            Thought
        ]
    );
    assert_eq!(
        t.steps[1].text,
        "search: Jaws was directed by Steven Spielberg."
    );
    // Over gold context the query ranks the given paragraphs: Spielberg's comes first.
    assert!(
        t.steps[5].text.starts_with("Steven Spielberg"),
        "{}",
        t.steps[5].text
    );
    // The chain reaches the writer as notes.
    let write = crate::last_prompt(&llm, WRITE_NEEDLE);
    assert!(write.contains(NOTES) && write.contains("So the answer is: United States."));
    assert_eq!(t.short_answer, "United States");
    assert_eq!(t.usage.llm_calls, 4);
}

#[tokio::test]
async fn ircot_stops_at_its_step_limit_and_when_a_sentence_repeats() {
    let mut sections = StrategySections::new();
    sections.insert("ircot".into(), serde_json::json!({"max_steps": 2}));
    let llm = Arc::new(
        ScriptedLlm::new()
            .on_seq(
                &["Continue the reasoning"],
                &["Fact one [1].", "Fact two [2]."],
            )
            .on(&[WRITE_NEEDLE], GOOD),
    );
    let dynllm: Arc<dyn DynLlm> = llm.clone();
    let agent = Agent::builder(dynllm)
        .registry(Registry::builtin_with(&sections).unwrap())
        .build()
        .unwrap();
    let t = agent.ask(&gold("ircot")).await.unwrap();
    let thoughts = t
        .steps
        .iter()
        .filter(|s| s.kind == StepKind::Thought)
        .count();
    assert_eq!(thoughts, 2, "{:?}", t.steps);
    // Default settings: the repeated "Fact two" ends the chain as stuck.
    let (agent, _) = agent_with(
        ScriptedLlm::new()
            .on_seq(
                &["Continue the reasoning"],
                &["Fact one [1].", "Fact two [2]."],
            )
            .on(&[WRITE_NEEDLE], GOOD),
    );
    let t = agent.ask(&gold("ircot")).await.unwrap();
    let note = t.graph.events.iter().rev().find(|e| e.node == "reason");
    assert!(note.unwrap().note.as_deref().unwrap().contains("stuck"));
}

fn agent_with(llm: ScriptedLlm) -> (Agent, Arc<ScriptedLlm>) {
    agent(llm, AgentConfig::default())
}

#[tokio::test]
async fn self_ask_answers_follow_up_questions_by_retrieval_then_writes() {
    let (agent, llm) = agent_with(
        ScriptedLlm::new()
            .on_seq(
                &["Are follow up questions needed"],
                &[
                    r#"{"follow_up": "Who directed Jaws?", "final_answer": ""}"#,
                    r#"{"follow_up": "Which country is Steven Spielberg from?", "final_answer": ""}"#,
                    r#"{"follow_up": "", "final_answer": "United States"}"#,
                ],
            )
            .on_seq(
                &["Answer the question from the sources in a few words"],
                &["Steven Spielberg", "the United States"],
            )
            .on(&[WRITE_NEEDLE], GOOD),
    );
    let t = agent.ask(&gold("self-ask")).await.unwrap();
    assert_eq!(t.stop, StopReason::Done("answered".into()));
    use StepKind::*;
    assert_eq!(
        kinds(&t),
        [SubQuestion, Answer, SubQuestion, Answer, Answer]
    );
    assert_eq!(t.steps[1].text, "Steven Spielberg");
    // Each follow-up is answered from the passages found for it.
    let second = crate::last_prompt(&llm, "Question: Which country is Steven Spielberg from?");
    assert!(second.starts_with("--- system ---\nYou are a careful research assistant"));
    assert!(second.contains("[1] Steven Spielberg"), "{second}");
    let write = crate::last_prompt(&llm, WRITE_NEEDLE);
    assert!(write.contains("Follow up: Who directed Jaws?\nIntermediate answer: Steven Spielberg"));
    assert!(write.contains("So the final answer is: United States"));
    assert_eq!(
        nodes_of(&t),
        [
            "retrieve",
            "follow_up",
            "follow_up",
            "follow_up",
            "read",
            "write"
        ]
    );
}

const REACT_NEEDLE: &str = "alternating Thought and Action";

#[tokio::test]
async fn react_searches_looks_up_and_finishes() {
    let (agent, llm) = agent_with(
        ScriptedLlm::new()
            .on_seq(
                &[REACT_NEEDLE],
                &[
                    r#"{"thought": "I need the director of Jaws.", "action": "search", "argument": "Jaws director"}"#,
                    r#"{"thought": "Now his country.", "action": "lookup", "argument": "American"}"#,
                    r#"{"thought": "He is American.", "action": "finish", "argument": "United States"}"#,
                ],
            )
            .on(&[WRITE_NEEDLE], GOOD),
    );
    let t = agent.ask(&gold("react")).await.unwrap();
    assert_eq!(t.stop, StopReason::Done("answered".into()));
    assert_eq!(
        nodes_of(&t),
        ["retrieve", "act", "act", "act", "read", "write"]
    );
    let texts: Vec<&str> = t.steps.iter().map(|s| s.text.as_str()).collect();
    assert_eq!(texts[1], "search[Jaws director]");
    assert!(texts[2].starts_with("[Jaws (film)]"), "{}", texts[2]);
    assert_eq!(texts[4], "lookup[American]");
    assert_eq!(texts[5], "Steven Spielberg is an American filmmaker.");
    assert_eq!(t.steps.last().unwrap().kind, StepKind::Answer);
    // The trajectory, observations included, reaches the step prompts and the writer.
    assert!(
        crate::last_prompt(&llm, REACT_NEEDLE)
            .contains("Observation 2: Steven Spielberg is an American")
    );
    assert!(crate::last_prompt(&llm, WRITE_NEEDLE).contains("Proposed answer: United States"));
}

#[tokio::test]
async fn the_budget_bounds_a_loop_that_never_finishes() {
    let mut sections = StrategySections::new();
    sections.insert("react".into(), serde_json::json!({"max_steps": 1000}));
    let llm = Arc::new(ScriptedLlm::new().on(
        &[REACT_NEEDLE],
        r#"{"thought": "Search again.", "action": "search", "argument": "Jaws"}"#,
    ));
    let dynllm: Arc<dyn DynLlm> = llm.clone();
    let agent = Agent::builder(dynllm)
        .registry(Registry::builtin_with(&sections).unwrap())
        .config(AgentConfig {
            budget: Budget {
                max_llm_calls: 5,
                ..Budget::default()
            },
            ..AgentConfig::default()
        })
        .build()
        .unwrap();
    let t = agent.ask(&gold("react")).await.unwrap();
    assert!(
        matches!(&t.stop, StopReason::Budget(b) if b.kind == BudgetKind::MaxLlmCalls && b.limit == 5),
        "{:?}",
        t.stop
    );
    assert_eq!(llm.call_count(), 5);
}

#[tokio::test]
async fn flare_retrieves_and_rewrites_only_the_unsure_sentence() {
    let (agent, llm) = agent_with(
        ScriptedLlm::new()
            .unsure_of(&["Spielberg"])
            .on_seq(
                &["Write the next sentence of the answer"],
                &[
                    "Jaws was directed by Steven Spielberg.",
                    "Jaws was directed by Steven Spielberg [1].",
                    "He is American [2].",
                    "DONE",
                ],
            )
            .on(&[WRITE_NEEDLE], GOOD),
    );
    let t = agent.ask(&gold("flare")).await.unwrap();
    assert_eq!(t.stop, StopReason::Done("answered".into()));
    use StepKind::*;
    assert_eq!(
        kinds(&t),
        [Thought, Action, Observation, Answer, Thought, Answer]
    );
    assert!(
        t.steps[0].text.contains("unsure: Spielberg"),
        "{}",
        t.steps[0].text
    );
    // The unsure token is masked out of the query.
    assert_eq!(t.steps[1].text, "search: Jaws was directed by Steven");
    assert_eq!(
        t.steps[3].text,
        "Jaws was directed by Steven Spielberg [1]."
    );
    assert_eq!(t.steps[5].text, "He is American [2].");
    let purposes: Vec<&str> = t.calls.iter().map(|c| c.purpose.as_str()).collect();
    assert_eq!(purposes, ["draft", "rewrite", "draft", "draft", "write"]);
    // Drafts ask for log-probabilities; the rewrite does not need them.
    let calls = llm.calls();
    assert!(calls[0].params.logprobs && !calls[1].params.logprobs);
    assert!(crate::last_prompt(&llm, WRITE_NEEDLE).contains("He is American [2]."));
}

#[tokio::test]
async fn reflexion_reflects_on_a_failed_attempt_and_retries_with_the_reflection() {
    let (agent, llm) = agent_with(
        ScriptedLlm::new()
            .on_seq(
                &[WRITE_NEEDLE],
                &[
                    r#"{"answer": "Jaws was made in Hollywood by a studio executive.", "short_answer": "Hollywood"}"#,
                    GOOD,
                ],
            )
            .on(
                &["It failed a check"],
                "I named no director from the sources. Next time I will find the director first.",
            ),
    );
    let t = agent.ask(&gold("reflexion")).await.unwrap();
    assert_eq!(t.stop, StopReason::Done("passed".into()));
    assert_eq!(
        nodes_of(&t),
        [
            "retrieve", "read", "write", "evaluate", "reflect", "write", "evaluate"
        ]
    );
    assert_eq!(t.rounds.len(), 2);
    assert!(
        t.steps[0].text.starts_with("attempt 1: "),
        "{}",
        t.steps[0].text
    );
    assert!(t.steps[0].text.contains("not supported"));
    assert_eq!(t.steps[1].kind, StepKind::Thought);
    assert_eq!(t.steps[2].text, "attempt 2: passed");
    let second = crate::last_prompt(&llm, WRITE_NEEDLE);
    assert!(second.contains(
        "Reflections on your earlier attempts: (1) I named no director from the sources."
    ));
    // The last attempt is the answer.
    assert_eq!(t.final_round, Some(1));
    assert_eq!(t.short_answer, "United States");
}

/// A strategy defined outside the crate: one file's worth, registered by one line.
struct AnswerTwice;

/// Its state: how many answers were written.
#[derive(Default)]
struct Count(usize);

const AGAIN: NodeId = NodeId("again");

impl Strategy for AnswerTwice {
    const NAME: &'static str = "answer-twice";
    const DESCRIPTION: &'static str = "writes two answers and keeps the second";
    type Config = NoConfig;
    type State = Count;

    fn new(_: NoConfig) -> Result<Self, String> {
        Ok(AnswerTwice)
    }

    fn state(&self) -> Count {
        Count::default()
    }

    fn graph(&self) -> Graph<Run<Count>> {
        Graph::new(RETRIEVE)
            .node(RETRIEVE, &[(READ, "")], |s| {
                Box::pin(nodes::retrieve(s, READ))
            })
            .node(READ, &[(WRITE, "")], |s| {
                Box::pin(nodes::read(s, Transition::Goto(WRITE)))
            })
            .node(WRITE, &[(AGAIN, "")], |s| {
                Box::pin(nodes::write(s, Transition::Goto(AGAIN)))
            })
            .node(AGAIN, &[(WRITE, "first answer")], |s: &mut Run<Count>| {
                Box::pin(async move {
                    s.ext.0 += 1;
                    Ok(if s.ext.0 < 2 {
                        Transition::Goto(WRITE)
                    } else {
                        Transition::done("two answers")
                    })
                })
            })
    }
}

#[tokio::test]
async fn a_strategy_from_outside_the_crate_registers_and_runs() {
    let mut registry = Registry::builtin();
    registry
        .register::<AnswerTwice>(&StrategySections::new())
        .unwrap();
    assert!(registry.names().contains(&"answer-twice"));
    assert!(
        registry
            .get("answer-twice")
            .unwrap()
            .mermaid()
            .contains("again -->|first answer| write")
    );
    let llm: Arc<dyn DynLlm> = Arc::new(ScriptedLlm::new().on(&[WRITE_NEEDLE], GOOD));
    let agent = Agent::builder(llm).registry(registry).build().unwrap();
    let t = agent.ask(&gold("answer-twice")).await.unwrap();
    assert_eq!(t.stop, StopReason::Done("two answers".into()));
    assert_eq!(t.rounds.len(), 2);
    // Registering a name twice is refused.
    let mut r = Registry::builtin();
    assert!(r.register::<AnswerTwice>(&StrategySections::new()).is_ok());
    assert!(r.register::<AnswerTwice>(&StrategySections::new()).is_err());
}

#[tokio::test]
async fn over_an_index_a_reasoning_sentence_is_searched_and_its_hits_observed() {
    let tmp = tempfile::tempdir().unwrap();
    let passages: Vec<(String, String)> = [JAWS, SPIELBERG]
        .iter()
        .map(|(t, x)| (t.to_string(), x.to_string()))
        .collect();
    let retriever = crate::index(tmp.path(), &passages).await;
    let llm: Arc<dyn DynLlm> = Arc::new(
        ScriptedLlm::new()
            .on_seq(
                &["Continue the reasoning"],
                &[
                    "Steven Spielberg is an American filmmaker [2].",
                    "So the answer is: United States.",
                ],
            )
            .on(&[WRITE_NEEDLE], GOOD),
    );
    let agent = Agent::builder(llm).retriever(retriever).build().unwrap();
    let t = agent.ask(&Ask::new(Q, "ircot")).await.unwrap();
    assert_eq!(t.mode, metarag_agent::EvidenceMode::Retrieval);
    use metarag_agent::trace::RetrievalReason;
    let reasons: Vec<RetrievalReason> = t.retrievals.iter().map(|r| r.reason).collect();
    assert_eq!(reasons, [RetrievalReason::Initial, RetrievalReason::Hop]);
    assert_eq!(
        t.retrievals[1].query,
        "Steven Spielberg is an American filmmaker."
    );
    // The observation is the retriever's own order: the passage the sentence is about first.
    assert!(
        t.steps[2].text.starts_with("Steven Spielberg"),
        "{:?}",
        t.steps
    );
}
