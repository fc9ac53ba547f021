//! Thoth's agentic retrieval (seed `003`) on the scripted LLM: every route (direct,
//! standard, multi-hop), grade-too-few -> rewrite, hallucination -> retry -> give up, the
//! metadata filter over an index of dated documents, its progress sentences and prompts.

use crate::branches::{GOOD, JAWS, Q, SPIELBERG, WRITE as WRITE_NEEDLE};
use crate::{index_records, render};
use metarag_agent::strategies::agentic as prompts;
use metarag_agent::{
    Agent, Ask, EvidenceMode, Progress, Registry, StepKind, StopReason, StrategySections, Trace,
};
use metarag_core::{DynLlm, DynRetriever};
use metarag_testkit::ScriptedLlm;
use std::sync::Arc;

const ROUTE: &str = "How should this question be answered?";
const EXPAND: &str = "search queries that ask for the same information";
const GRADE: &str = "Which of the sources above hold information";
const REWRITE: &str = "Write one new search query, more specific";
const CHECK: &str = "Is the answer grounded in the sources above?";
const MULTI: &str = r#"{"route": "multi_hop"}"#;
const EXPANDED: &str =
    r#"{"variations": ["Steven Spielberg nationality"], "subquestions": ["Who directed Jaws?"]}"#;
const GROUNDED: &str = r#"{"grounded": true, "unsupported": []}"#;

fn nodes_of(t: &Trace) -> Vec<&str> {
    t.graph.events.iter().map(|e| e.node.as_str()).collect()
}

async fn corpus(dir: &std::path::Path) -> Arc<dyn DynRetriever> {
    crate::jaws_index(dir, &[]).await
}

fn agent_with(
    llm: ScriptedLlm,
    retriever: Arc<dyn DynRetriever>,
    section: serde_json::Value,
) -> (Agent, Arc<ScriptedLlm>) {
    let mut sections = StrategySections::new();
    sections.insert("agentic".into(), section);
    let llm = Arc::new(llm);
    let dynllm: Arc<dyn DynLlm> = llm.clone();
    let agent = Agent::builder(dynllm)
        .retriever(retriever)
        .registry(Registry::builtin_with(&sections).unwrap())
        .build()
        .unwrap();
    (agent, llm)
}

#[tokio::test]
async fn a_simple_question_the_model_calls_direct_is_answered_without_retrieval() {
    let tmp = tempfile::tempdir().unwrap();
    let (agent, llm) = agent_with(
        ScriptedLlm::new()
            .on(&[ROUTE], r#"{"route": "direct"}"#)
            .on(
                &["Answer from your own knowledge in one or two sentences"],
                r#"{"answer": "William Shakespeare wrote Hamlet.", "short_answer": "William Shakespeare"}"#,
            ),
        corpus(tmp.path()).await,
        serde_json::json!({}),
    );
    let t = agent
        .ask(&Ask::new("Who wrote Hamlet?", "agentic"))
        .await
        .unwrap();
    assert_eq!(nodes_of(&t), ["classify", "answer_direct"]);
    assert_eq!(t.mode, EvidenceMode::ClosedBook);
    assert!(t.retrievals.is_empty());
    assert_eq!(t.stop, StopReason::Done("answered directly".into()));
    assert_eq!(t.short_answer, "William Shakespeare");
    // "direct" for a chain question is overruled by the rules: the loop starts (and
    // stops there, the scripted model having no expansion to give).
    let t = agent.ask(&Ask::new(Q, "agentic")).await.unwrap();
    assert_eq!(nodes_of(&t)[..2], ["classify", "expand"]);
    assert_eq!(
        t.steps[0].text,
        "route: MultiHop (model Some(Direct), rules MultiHop)"
    );
    assert_eq!(llm.hits(&[ROUTE]), 2);
}

#[tokio::test]
async fn a_standard_question_is_one_search_and_one_write() {
    let tmp = tempfile::tempdir().unwrap();
    let (agent, llm) = agent_with(
        ScriptedLlm::new()
            .on(&[ROUTE], r#"{"route": "standard"}"#)
            .on(&[WRITE_NEEDLE], GOOD),
        corpus(tmp.path()).await,
        serde_json::json!({}),
    );
    let t = agent
        .ask(&Ask::new("Who played the police chief in Jaws?", "agentic"))
        .await
        .unwrap();
    assert_eq!(
        nodes_of(&t),
        ["classify", "retrieve", "read", "write", "check"]
    );
    assert_eq!(t.retrievals.len(), 1);
    assert_eq!(llm.hits(&[CHECK]), 0, "the standard route is not checked");
    assert_eq!(t.metrics["route_multi_hop"], 0.0);
}

#[tokio::test]
async fn too_few_relevant_passages_rewrite_the_query_then_a_grounded_answer_ends_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    let (agent, llm) = agent_with(
        ScriptedLlm::new()
            .on(&[ROUTE], MULTI)
            .on(&[EXPAND], EXPANDED)
            // First grade: one relevant (under min_relevant 2); second: two more.
            .on_seq(
                &[GRADE],
                &[r#"{"relevant": [1]}"#, r#"{"relevant": [1, 2]}"#],
            )
            .on(&[REWRITE], "Spielberg birthplace Cincinnati")
            .on(&[CHECK], GROUNDED)
            .on(&[WRITE_NEEDLE], GOOD),
        corpus(tmp.path()).await,
        serde_json::json!({"k": 2}),
    );
    let sentences = std::sync::Mutex::new(Vec::new());
    let t = agent
        .ask_observed(&Ask::new(Q, "agentic"), &|p| {
            if let Progress::Doing(s) = p {
                sentences.lock().unwrap().push(s.to_string());
            }
        })
        .await
        .unwrap();
    assert_eq!(
        nodes_of(&t),
        [
            "classify", "expand", "search", "grade", "rewrite", "search", "grade", "read", "write",
            "check"
        ]
    );
    assert_eq!(t.stop, StopReason::Done("answered".into()));
    // The question, its phrasing and its sub-question were searched and fused.
    assert_eq!(
        t.retrievals[0].query,
        format!("{Q} | Steven Spielberg nationality | Who directed Jaws?")
    );
    assert!(t.retrievals[0].rerank.contains("3 lists fused by RRF"));
    assert_eq!(t.retrievals[1].query, "Spielberg birthplace Cincinnati");
    use StepKind::*;
    assert_eq!(
        t.steps.iter().map(|s| s.kind).collect::<Vec<_>>()[..4],
        [Thought, Action, SubQuestion, Observation]
    );
    assert_eq!(t.metrics["expanded"], 1.0);
    assert_eq!(t.metrics["rewrites"], 1.0);
    assert_eq!(t.metrics["retries"], 0.0);
    assert_eq!(t.metrics["retrieval_rounds"], 2.0);
    assert_eq!(t.metrics["relevant_ratio"], 3.0 / 4.0);
    let sentences = sentences.lock().unwrap();
    assert!(
        sentences.contains(&"Grading 2 passages...".to_string()),
        "{sentences:?}"
    );
    assert!(sentences.contains(&"Expanding the search terms...".to_string()));
    assert_eq!(llm.hits(&[CHECK]), 1);
}

#[tokio::test]
async fn an_ungrounded_answer_is_retried_then_given_up_with_its_best_round() {
    let tmp = tempfile::tempdir().unwrap();
    let (agent, llm) = agent_with(
        ScriptedLlm::new()
            .on(&[ROUTE], MULTI)
            .on(&[EXPAND], r#"{"variations": [], "subquestions": []}"#)
            .on(&[GRADE], r#"{"relevant": [1, 2]}"#)
            .on(&[REWRITE], "Spielberg nationality")
            .on(
                &[CHECK],
                r#"{"grounded": false, "unsupported": ["He is American"]}"#,
            )
            .on(&[WRITE_NEEDLE], GOOD),
        corpus(tmp.path()).await,
        serde_json::json!({"max_retries": 1, "query_expansion": false, "query_decomposition": false}),
    );
    let t = agent.ask(&Ask::new(Q, "agentic")).await.unwrap();
    assert_eq!(
        t.stop,
        StopReason::Done("answered (not grounded; retries spent)".into())
    );
    assert_eq!(llm.hits(&[CHECK]), 2);
    assert_eq!(llm.hits(&[EXPAND]), 0, "expansion and decomposition off");
    assert_eq!(t.rounds.len(), 2);
    assert_eq!(t.metrics["hallucination_flagged"], 2.0);
    assert_eq!(t.metrics["retries"], 1.0);
    assert_eq!(
        t.metrics["rewrites"], 0.0,
        "a retry is not a grading rewrite"
    );
    // The rewrite was told what lacked support.
    let rewrite = llm
        .calls()
        .iter()
        .map(|r| render(&r.messages))
        .find(|p| p.contains(REWRITE))
        .unwrap();
    assert!(rewrite.contains("These statements still need evidence: He is American"));
}

#[tokio::test]
async fn a_year_the_question_puts_on_its_documents_filters_the_search() {
    let tmp = tempfile::tempdir().unwrap();
    // 2019-06-01 and 2023-05-01.
    let records = [
        serde_json::json!({"doc_id": "flood-2019", "title": "Flood defence report", "date": 1_559_347_200_i64,
            "text": "The flood defence report recommends raising the river walls by one metre."}),
        serde_json::json!({"doc_id": "flood-2023", "title": "Flood defence review", "date": 1_682_899_200_i64,
            "text": "The flood defence review recommends restoring the wetlands upstream instead of raising walls."}),
        serde_json::json!({"doc_id": "bridges", "title": "Bridge survey",
            "text": "The bridge survey lists three bridges in need of repair."}),
    ];
    let retriever = index_records(tmp.path(), &records).await;
    let (agent, _) = agent_with(
        ScriptedLlm::new()
            .on(&[ROUTE], MULTI)
            .on(&[GRADE], r#"{"relevant": [1, 2]}"#)
            .on(&[CHECK], GROUNDED)
            .on(&[WRITE_NEEDLE], GOOD),
        retriever,
        serde_json::json!({"k": 2, "query_expansion": false, "query_decomposition": false}),
    );
    let t = agent
        .ask(&Ask::new(
            "What do the reports published after 2020 recommend on flood defence?",
            "agentic",
        ))
        .await
        .unwrap();
    assert!(
        t.steps
            .iter()
            .any(|s| s.kind == StepKind::Thought && s.text == "filter: dated after 2020"),
        "{:?}",
        t.steps
    );
    // Only the 2023 review passes the filter; it leads, the rest follow unfiltered.
    let found = &t
        .steps
        .iter()
        .find(|s| s.kind == StepKind::Observation)
        .unwrap()
        .text;
    assert!(found.starts_with("Flood defence review"), "{found}");
    assert!(
        t.retrievals[0]
            .rerank
            .contains("the filter left 1 hits, unfiltered added"),
        "{}",
        t.retrievals[0].rerank
    );
}

#[test]
fn agentic_prompts_snapshot() {
    let sources =
        metarag_agent::evidence::read(&[Q.to_string()], &crate::context(&[JAWS, SPIELBERG]), 6000);
    insta::assert_snapshot!(
        "prompt_agentic_route",
        render(&prompts::route_request(Q).messages)
    );
    insta::assert_snapshot!(
        "prompt_agentic_expand",
        render(&prompts::expand_request(Q, 2, true).messages)
    );
    insta::assert_snapshot!(
        "prompt_agentic_grade",
        render(&prompts::grade_request(Q, &sources).messages)
    );
    insta::assert_snapshot!(
        "prompt_agentic_rewrite",
        render(
            &prompts::rewrite_request(Q, &["Jaws (film)".into()], &["He is American".into()])
                .messages
        )
    );
    insta::assert_snapshot!(
        "prompt_agentic_check",
        render(&prompts::check_request(Q, "He is American [2].", &sources, false).messages)
    );
}
