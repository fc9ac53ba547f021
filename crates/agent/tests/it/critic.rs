//! The evidence-gap critic (seed `001`) on the scripted LLM: plan -> map -> reduce ->
//! write; gap -> rewrite -> sufficient; a "sufficient" the evidence does not bear out;
//! rewrites spent; HyDE; and its prompts.

use crate::branches::{GOOD, JAWS, Q, SPIELBERG, WRITE as WRITE_NEEDLE, agent};
use crate::{context, last_prompt, render};
use metarag_agent::strategies::CriticConfig;
use metarag_agent::strategies::critic as critic_prompts;
use metarag_agent::{
    Agent, AgentConfig, Ask, Registry, StepKind, StopReason, StrategySections, Trace,
};
use metarag_core::DynLlm;
use metarag_testkit::ScriptedLlm;
use std::sync::Arc;

const PLANNER: &str = "need several separate look-ups";
const CRITIC: &str = "You are an evidence-gap critic";
const HYDE: &str = "encyclopedia paragraph";
const ONE_LOOKUP: &str =
    r#"{"needs_decomposition": false, "subquestions": [], "global_constraints": []}"#;

fn nodes_of(t: &Trace) -> Vec<&str> {
    t.graph.events.iter().map(|e| e.node.as_str()).collect()
}

fn with_config(llm: ScriptedLlm, config: serde_json::Value) -> (Agent, Arc<ScriptedLlm>) {
    let mut sections = StrategySections::new();
    sections.insert("critic".into(), config);
    let llm = Arc::new(llm);
    let dynllm: Arc<dyn DynLlm> = llm.clone();
    let agent = Agent::builder(dynllm)
        .registry(Registry::builtin_with(&sections).unwrap())
        .build()
        .unwrap();
    (agent, llm)
}

/// The Jaws corpus with Cincinnati beside it.
async fn corpus(dir: &std::path::Path) -> Arc<dyn metarag_core::DynRetriever> {
    crate::jaws_index(
        dir,
        &[(
            "Cincinnati",
            "Cincinnati is a city in Ohio on the Ohio River.",
        )],
    )
    .await
}

#[tokio::test]
async fn a_decomposed_question_is_mapped_per_sub_question_and_answered_once() {
    let plan = r#"{"needs_decomposition": true, "subquestions": [
        {"id": "sq1", "question": "Who directed Jaws?", "must_have_constraints": ["a person"], "expected_answer_type": "factual", "priority": "high"},
        {"id": "sq2", "question": "Which country is Steven Spielberg from?", "must_have_constraints": [], "expected_answer_type": "factual", "priority": "normal"}
    ], "global_constraints": []}"#;
    let (agent, llm) = agent(
        ScriptedLlm::new()
            .on(&[PLANNER], plan)
            .on(&[WRITE_NEEDLE], GOOD),
        AgentConfig::default(),
    );
    let t = agent
        .ask(&Ask::new(Q, "critic").with_context(context(&[JAWS, SPIELBERG])))
        .await
        .unwrap();
    assert_eq!(t.stop, StopReason::Done("answered".into()));
    assert_eq!(nodes_of(&t), ["plan_query", "map", "reduce", "write"]);
    use StepKind::*;
    assert_eq!(
        t.steps.iter().map(|s| s.kind).collect::<Vec<_>>(),
        [SubQuestion, SubQuestion, Observation, Observation]
    );
    // Each sub-question ranked the given paragraphs: its own passage first.
    assert!(
        t.steps[2].text.starts_with("sq1: Jaws"),
        "{}",
        t.steps[2].text
    );
    assert!(
        t.steps[3].text.starts_with("sq2: Steven Spielberg"),
        "{}",
        t.steps[3].text
    );
    // The writer is told which sources answer which sub-question.
    let write = last_prompt(&llm, WRITE_NEEDLE);
    assert!(
        write.contains("- sq1 Who directed Jaws?: [1], [2]"),
        "{write}"
    );
    assert!(
        write.contains("- sq2 Which country is Steven Spielberg from?: [2], [1]")
            || write.contains("- sq2 Which country is Steven Spielberg from?: [1], [2]"),
        "{write}"
    );
    assert_eq!(t.short_answer, "United States");
    assert_eq!(t.usage.llm_calls, 2);
}

#[tokio::test]
async fn a_gap_named_by_the_critic_is_searched_then_the_answer_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let retriever = corpus(tmp.path()).await;
    let llm = Arc::new(
        ScriptedLlm::new()
            .on(&[PLANNER], ONE_LOOKUP)
            .on_seq(
                &[CRITIC],
                &[
                    r#"{"is_sufficient": false, "missing_points": ["where Spielberg is from"], "unsupported_claims": [], "next_retrieval_tasks": [{"query": "Steven Spielberg nationality", "focus": "country"}], "confidence": "medium"}"#,
                    r#"{"is_sufficient": true, "missing_points": [], "unsupported_claims": [], "next_retrieval_tasks": [], "confidence": "high"}"#,
                ],
            )
            .on(&[WRITE_NEEDLE], GOOD),
    );
    let dynllm: Arc<dyn DynLlm> = llm.clone();
    let agent = Agent::builder(dynllm)
        .retriever(retriever)
        .config(
            AgentConfig::default().with_route(metarag_agent::RouteConfig {
                top_k: 1,
                rerank: false,
                hops: 1,
            }),
        )
        .build()
        .unwrap();
    let t = agent.ask(&Ask::new(Q, "critic")).await.unwrap();
    assert_eq!(
        nodes_of(&t),
        [
            "plan_query",
            "retrieve",
            "read",
            "critic",
            "rewrite",
            "retrieve",
            "read",
            "critic",
            "write"
        ]
    );
    assert_eq!(t.retrievals.len(), 2);
    assert_eq!(t.retrievals[1].query, "Steven Spielberg nationality");
    let action = t.steps.iter().find(|s| s.kind == StepKind::Action).unwrap();
    assert_eq!(
        action.text,
        "search (critic task): Steven Spielberg nationality"
    );
    assert!(
        t.sources
            .iter()
            .any(|s| s.passage.title == "Steven Spielberg")
    );
    assert_eq!(llm.hits(&[CRITIC]), 2);
}

#[tokio::test]
async fn a_small_models_sufficient_is_not_enough_when_the_evidence_misses_the_question() {
    let tmp = tempfile::tempdir().unwrap();
    let retriever = corpus(tmp.path()).await;
    let yes = r#"{"is_sufficient": true, "missing_points": [], "unsupported_claims": [], "next_retrieval_tasks": [], "confidence": "high"}"#;
    let llm = Arc::new(
        ScriptedLlm::new()
            .on(&[PLANNER], ONE_LOOKUP)
            .on(&[CRITIC], yes)
            .on(&[WRITE_NEEDLE], GOOD),
    );
    let dynllm: Arc<dyn DynLlm> = llm.clone();
    let agent = Agent::builder(dynllm)
        .retriever(retriever)
        .config(
            AgentConfig::default().with_route(metarag_agent::RouteConfig {
                top_k: 1,
                rerank: false,
                hops: 1,
            }),
        )
        .build()
        .unwrap();
    // No passage mentions the festival or the town: the critic's yes is overruled, the
    // uncovered terms are searched, and after two rewrites the answer is written anyway.
    let q = "In which year did the Zorblatt Quxville festival open?";
    let t = agent.ask(&Ask::new(q, "critic")).await.unwrap();
    assert_eq!(t.stop, StopReason::Done("answered".into()));
    let actions: Vec<&str> = t
        .steps
        .iter()
        .filter(|s| s.kind == StepKind::Action)
        .map(|s| s.text.as_str())
        .collect();
    assert_eq!(actions.len(), 2, "{actions:?}");
    assert!(
        actions[0].starts_with("search (uncovered terms): ") && actions[0].contains("zorblatt"),
        "{actions:?}"
    );
    assert!(
        t.steps
            .iter()
            .any(|s| s.kind == StepKind::Thought && s.text.starts_with("critic: sufficient")),
        "{:?}",
        t.steps
    );
    assert_eq!(llm.hits(&[CRITIC]), 3);
    assert_eq!(nodes_of(&t).last(), Some(&"write"));
}

#[tokio::test]
async fn hyde_searches_a_hypothetical_passage_in_place_of_the_rewritten_query() {
    let tmp = tempfile::tempdir().unwrap();
    let retriever = corpus(tmp.path()).await;
    let passage = "Steven Spielberg is an American film director born in Cincinnati, Ohio.";
    let mut sections = StrategySections::new();
    sections.insert(
        "critic".into(),
        serde_json::json!({"hyde": true, "max_rewrites": 1, "decompose": false}),
    );
    let llm = Arc::new(
        ScriptedLlm::new()
            .on_seq(
                &[CRITIC],
                &[
                    r#"{"is_sufficient": false, "missing_points": ["his country"], "unsupported_claims": [], "next_retrieval_tasks": [{"query": "Spielberg country", "focus": ""}], "confidence": "low"}"#,
                ],
            )
            .on(&[HYDE], passage)
            .on(&[WRITE_NEEDLE], GOOD),
    );
    let dynllm: Arc<dyn DynLlm> = llm.clone();
    let agent = Agent::builder(dynllm)
        .retriever(retriever)
        .registry(Registry::builtin_with(&sections).unwrap())
        .build()
        .unwrap();
    let t = agent.ask(&Ask::new(Q, "critic")).await.unwrap();
    assert_eq!(&nodes_of(&t)[..2], ["plan_query", "retrieve"]);
    assert_eq!(
        llm.hits(&[PLANNER]),
        0,
        "decomposition off: no planner call"
    );
    assert_eq!(t.retrievals[1].query, passage);
    assert_eq!(llm.hits(&[HYDE]), 1);
    assert!(last_prompt(&llm, HYDE).contains("Spielberg country"));
    // One rewrite allowed: the second verdict (the last reply again) ends the loop.
    assert_eq!(llm.hits(&[CRITIC]), 2);
}

#[test]
fn bad_settings_name_the_field() {
    let mut sections = StrategySections::new();
    sections.insert("critic".into(), serde_json::json!({"k_per_subquestion": 0}));
    let e = Registry::builtin_with(&sections).unwrap_err().to_string();
    assert!(
        e.contains("strategies.critic") && e.contains("k_per_subquestion"),
        "{e}"
    );
    sections.insert(
        "critic".into(),
        serde_json::json!({"decompose": true, "max_subquestions": 1}),
    );
    let e = Registry::builtin_with(&sections).unwrap_err().to_string();
    assert!(e.contains("max_subquestions"), "{e}");
    assert_eq!(CriticConfig::default().max_rewrites, 2);
}

#[tokio::test]
async fn an_unparsable_plan_is_one_look_up() {
    let (agent, llm) = with_config(
        ScriptedLlm::new()
            .on(&[PLANNER], "I think it needs two steps.")
            .on(&[WRITE_NEEDLE], GOOD),
        serde_json::json!({}),
    );
    let t = agent
        .ask(&Ask::new(Q, "critic").with_context(context(&[JAWS, SPIELBERG])))
        .await
        .unwrap();
    // Over given context there is nothing more to fetch: the critic is not asked.
    assert_eq!(
        nodes_of(&t),
        ["plan_query", "retrieve", "read", "critic", "write"]
    );
    assert_eq!(llm.hits(&[CRITIC]), 0);
    assert_eq!(t.short_answer, "United States");
}

#[test]
fn critic_prompts_snapshot() {
    let sources =
        metarag_agent::evidence::read(&[Q.to_string()], &context(&[JAWS, SPIELBERG]), 6000);
    insta::assert_snapshot!(
        "prompt_critic_plan",
        render(&critic_prompts::plan_request(Q, 4).messages)
    );
    insta::assert_snapshot!(
        "prompt_critic_gap",
        render(&critic_prompts::critic_request(Q, &sources, 160).messages)
    );
    insta::assert_snapshot!(
        "prompt_critic_rewrite",
        render(&critic_prompts::rewrite_request(Q, &[Q.to_string()]).messages)
    );
    insta::assert_snapshot!(
        "prompt_critic_hyde",
        render(&critic_prompts::hyde_request("Spielberg country").messages)
    );
}
