//! The LLM intent classifier's branches and the `router` strategy's (seed `002`) on the
//! scripted model.

use crate::branches::{GOOD, Q, WRITE as WRITE_NEEDLE};
use metarag_agent::trace::RetrievalReason;
use metarag_agent::{Agent, Ask, Registry, StopReason, StrategySections, Trace};
use metarag_core::{DynEmbedder, DynLlm};
use std::sync::Arc;

use metarag_agent::router::classify_with_llm;
use metarag_retrieve::{Intent, Memory, RouteSource};
use metarag_testkit::ScriptedLlm;

#[tokio::test]
async fn the_models_intents_route_unless_a_cue_word_says_otherwise() {
    let llm = ScriptedLlm::new()
        .on(&["Who kept the lighthouse"], r#"{"intents": ["factual"]}"#)
        .on(
            &["Which river"],
            r#"{"intents": ["comparative", "factual"]}"#,
        )
        .on(&["How do I"], r#"{"intents": ["factual"]}"#)
        .otherwise("not json at all");
    let r = classify_with_llm(&llm, "Who kept the lighthouse at Brannock?")
        .await
        .unwrap();
    assert_eq!(
        (r.intents.as_slice(), r.source),
        ([Intent::Factual].as_slice(), RouteSource::Llm)
    );
    assert_eq!(r.memories, [Memory::Text, Memory::Graph]);
    let r = classify_with_llm(
        &llm,
        "Which river flows past Ostwick, the Vell or the Dorn?",
    )
    .await
    .unwrap();
    assert_eq!(r.intents, [Intent::Comparative, Intent::Factual]);
    // A stated "how do I" beats the model's "factual".
    let r = classify_with_llm(&llm, "How do I file a claim?")
        .await
        .unwrap();
    assert_eq!(
        (r.intents.as_slice(), r.source),
        ([Intent::Procedural].as_slice(), RouteSource::Rules)
    );
    // A reply that breaks the schema is no opinion: the factual default.
    let r = classify_with_llm(&llm, "Tell me about the mill.")
        .await
        .unwrap();
    assert_eq!(r.intents, [Intent::Factual]);
    assert_eq!(llm.call_count(), 4);
}

// ---------------------------------------------------------------------------------------
// The `router` strategy (seed 002): route -> retrieve -> verify_context -> (reformulate ->
// retrieve -> verify_context) -> read -> write, or stop with the context.

const INTENT: &str = "You route a user's question";
const REFORMULATE: &str = "You rewrite search queries";

async fn router_agent(
    llm: ScriptedLlm,
    config: serde_json::Value,
    embedder: bool,
) -> (Agent, Arc<ScriptedLlm>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let retriever = crate::jaws_index(dir.path(), &[]).await;
    let mut sections = StrategySections::new();
    sections.insert("router".into(), config);
    let llm = Arc::new(llm);
    let dynllm: Arc<dyn DynLlm> = llm.clone();
    let mut builder = Agent::builder(dynllm)
        .registry(Registry::builtin_with(&sections).unwrap())
        .retriever(retriever);
    if embedder {
        let e: Arc<dyn DynEmbedder> = Arc::new(metarag_testkit::embedder());
        builder = builder.embedder(e);
    }
    (builder.build().unwrap(), llm, dir)
}

fn nodes(t: &Trace) -> Vec<&str> {
    t.graph.events.iter().map(|e| e.node.as_str()).collect()
}

fn note<'a>(t: &'a Trace, node: &str) -> &'a str {
    t.graph
        .events
        .iter()
        .find(|e| e.node == node)
        .and_then(|e| e.note.as_deref())
        .unwrap_or("")
}

#[tokio::test]
async fn a_relevant_context_is_written_from_without_reformulating() {
    let (agent, llm, _dir) = router_agent(
        ScriptedLlm::new().on(&[WRITE_NEEDLE], GOOD),
        serde_json::json!({}),
        true,
    )
    .await;
    // Every term of the question is in the corpus ("country" of [`Q`] is not).
    let t = agent
        .ask(&Ask::new("Who directed the thriller film Jaws?", "router"))
        .await
        .unwrap();
    assert_eq!(
        nodes(&t),
        ["route", "retrieve", "verify_context", "read", "write"]
    );
    // The embedding classifier: no model call to route.
    assert_eq!(llm.call_count(), 1);
    let route = &t.records["route"];
    assert_eq!(route["intents"][0], "factual", "{route}");
    assert_eq!(route["memories"], serde_json::json!(["text", "graph"]));
    assert!(
        note(&t, "route").contains("Hybrid"),
        "{}",
        note(&t, "route")
    );
    let checks = t.records["context_checks"].as_array().unwrap();
    assert_eq!(checks.len(), 1);
    assert_eq!(checks[0]["relevant"], true, "{checks:?}");
    assert_eq!(t.short_answer, "United States");
    assert_eq!(t.metrics["context_relevant"], 1.0);
}

#[tokio::test]
async fn a_failed_check_reformulates_once_with_the_models_query() {
    // One passage per search and every term required: the first context fails.
    let (agent, llm, _dir) = router_agent(
        ScriptedLlm::new()
            .on(
                &[REFORMULATE],
                r#"{"query": "Steven Spielberg birthplace"}"#,
            )
            .on(&[WRITE_NEEDLE], GOOD),
        serde_json::json!({"top_k": 1, "min_term_coverage": 1.0, "rerank": false}),
        true,
    )
    .await;
    let t = agent.ask(&Ask::new(Q, "router")).await.unwrap();
    assert_eq!(
        nodes(&t),
        [
            "route",
            "retrieve",
            "verify_context",
            "reformulate",
            "retrieve",
            "verify_context",
            "read",
            "write"
        ]
    );
    let reasons: Vec<RetrievalReason> = t.retrievals.iter().map(|r| r.reason).collect();
    assert_eq!(
        reasons,
        [RetrievalReason::Initial, RetrievalReason::Reformulation]
    );
    assert_eq!(t.retrievals[1].query, "Steven Spielberg birthplace");
    // The prompt told the model what the first search found.
    let prompt = crate::last_prompt(&llm, REFORMULATE);
    assert!(prompt.contains("Found passages about:"), "{prompt}");
    assert_eq!(t.records["context_checks"].as_array().unwrap().len(), 2);
    assert!(
        t.sources
            .iter()
            .any(|s| s.passage.title == "Steven Spielberg"),
        "{:?}",
        t.sources
    );
    assert_eq!(t.metrics["reformulations"], 1.0);
    assert_eq!(llm.hits(&[REFORMULATE]), 1);
}

#[tokio::test]
async fn an_unusable_reformulation_falls_back_to_the_rules() {
    let (agent, llm, _dir) = router_agent(
        ScriptedLlm::new()
            .on(&[REFORMULATE], "no json here")
            .on(&[WRITE_NEEDLE], GOOD),
        serde_json::json!({"top_k": 1, "min_term_coverage": 1.0, "rerank": false}),
        true,
    )
    .await;
    let t = agent.ask(&Ask::new(Q, "router")).await.unwrap();
    assert_eq!(t.retrievals.len(), 2);
    assert_eq!(t.retrievals[1].reason, RetrievalReason::Reformulation);
    assert_ne!(t.retrievals[1].query, Q);
    assert!(
        note(&t, "reformulate").contains("(rules)"),
        "{}",
        note(&t, "reformulate")
    );
    assert_eq!(llm.hits(&[REFORMULATE]), 1);
}

#[tokio::test]
async fn the_llm_classifier_narrows_a_conceptual_question_to_the_text_memory() {
    let (agent, llm, _dir) = router_agent(
        ScriptedLlm::new()
            .on(&[INTENT], r#"{"intents": ["conceptual"]}"#)
            .on(&[WRITE_NEEDLE], GOOD),
        serde_json::json!({"classifier": "llm"}),
        false,
    )
    .await;
    let t = agent
        .ask(&Ask::new("The shark film and its lasting appeal", "router"))
        .await
        .unwrap();
    assert_eq!(t.records["route"]["memories"], serde_json::json!(["text"]));
    assert_eq!(t.records["route"]["source"], "llm");
    assert!(note(&t, "route").contains("Text"), "{}", note(&t, "route"));
    assert_eq!(t.calls[0].purpose, "route");
    assert_eq!(llm.hits(&[INTENT]), 1);
}

#[tokio::test]
async fn a_context_only_run_stops_with_the_sources_and_no_answer() {
    // Cue words and rule reformulation: no model call at all.
    let (agent, llm, _dir) = router_agent(
        ScriptedLlm::new(),
        serde_json::json!({"reformulate_with": "rules"}),
        false,
    )
    .await;
    let t = agent
        .ask(&Ask::new(Q, "router").context_only())
        .await
        .unwrap();
    assert_eq!(t.stop, StopReason::Done("context only".into()));
    assert!(t.rounds.is_empty() && t.answer.is_empty());
    assert!(!t.sources.is_empty());
    assert_eq!(llm.call_count(), 0);
    // The default classifier needs an embedder; without one the cue words decide.
    assert!(
        note(&t, "route").contains("no embedder configured"),
        "{}",
        note(&t, "route")
    );
    // A strategy that always writes refuses a context-only run, naming the one that can.
    let err = agent
        .ask(&Ask::new(Q, "standard").context_only())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("always writes") && err.contains("router"),
        "{err}"
    );
}

#[test]
fn the_router_prompts() {
    use metarag_agent::strategies::router::reformulate_prompt;
    let p = reformulate_prompt(
        "Which country is the director of Jaws from?",
        &["Jaws (film)".into(), "Amity Island".into()],
        &["Steven Spielberg".into()],
    );
    insta::assert_snapshot!("router_reformulate", crate::render(&p.messages));
    let p = metarag_agent::router::intent_prompt("What changed in the guide since March?");
    insta::assert_snapshot!("router_intents", crate::render(&p.messages));
}
