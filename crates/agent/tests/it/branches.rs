//! Every branch of the metacognitive loop, driven by the scripted fake LLM.

use crate::{context, index};
use metarag_agent::metacog::{DIRECTIVE_EXTERNAL, DIRECTIVE_INTERNAL};
use metarag_agent::trace::{Remediation, RetrievalReason};
use metarag_agent::{
    Agent, AgentConfig, Ask, Budget, BudgetKind, BudgetLimit, Category, DiagnosisMethod, ErrorType,
    RouteConfig, StopReason, Trace, prompts,
};
use metarag_core::{DynLlm, Message};
use metarag_testkit::ScriptedLlm;
use std::sync::Arc;

pub(crate) const Q: &str = "Which country is the director of Jaws from?";
pub(crate) const JAWS: (&str, &str) = (
    "Jaws (film)",
    "Jaws is a 1975 thriller film directed by Steven Spielberg. It stars Roy Scheider as a police chief.",
);
pub(crate) const SPIELBERG: (&str, &str) = (
    "Steven Spielberg",
    "Steven Spielberg is an American filmmaker. He was born in Cincinnati, Ohio, in 1946.",
);

// Needles that pick out each prompt.
pub(crate) const WRITE: &str = "Answer the question using the sources";
const FACTS: &str = "List the facts needed";
const JUDGE: &str = "Score the answer from 0 to 1";
const CRITIC: &str = "Assess the answer.";
const CLOSED: &str = "Answer from your own knowledge with only the answer itself";
const PLAN: &str = "Classify this question";

pub(crate) const GOOD: &str = r#"{"answer": "Jaws was directed by Steven Spielberg [1], who is American [2].", "short_answer": "United States"}"#;
/// Claims no source supports (so code cannot attribute them either).
const UNSUPPORTED: &str = r#"{"answer": "Jaws was made in Hollywood by a studio executive.", "short_answer": "United States"}"#;
const HALF: &str = r#"{"answer": "Jaws was directed by Steven Spielberg [1].", "short_answer": "Steven Spielberg"}"#;
const FACTS_BOTH: &str = r#"{"facts": [
  {"need": "director of Jaws", "value": "Steven Spielberg", "source": 1, "quote": "directed by Steven Spielberg"},
  {"need": "country of Steven Spielberg", "value": "American", "source": 2, "quote": "Steven Spielberg is an American filmmaker"}]}"#;
const FACTS_MISSING: &str = r#"{"facts": [
  {"need": "director of Jaws", "value": "Steven Spielberg", "source": 1, "quote": "directed by Steven Spielberg"},
  {"need": "country of Steven Spielberg", "value": "", "source": 0, "quote": ""}]}"#;
const JUDGE_HIGH: &str = r#"{"faithfulness": 0.9, "completeness": 0.9, "confidence": 0.8}"#;
const JUDGE_MID: &str = r#"{"faithfulness": 0.9, "completeness": 0.5, "confidence": 0.8}"#;
const CRITIC_YES: &str = r#"{"internal_sufficient": true, "external_sufficient": true, "error_types": [], "suggested_query": "Steven Spielberg nationality"}"#;

pub(crate) fn agent(llm: ScriptedLlm, config: AgentConfig) -> (Agent, Arc<ScriptedLlm>) {
    let llm = Arc::new(llm);
    let dynllm: Arc<dyn DynLlm> = llm.clone();
    (Agent::builder(dynllm).config(config).build().unwrap(), llm)
}

fn gold(both: bool) -> Ask {
    let ctx = if both {
        context(&[JAWS, SPIELBERG])
    } else {
        context(&[JAWS])
    };
    Ask::new(Q, "metarag").with_context(ctx)
}

fn nodes(t: &Trace) -> Vec<&str> {
    t.graph.events.iter().map(|e| e.node.as_str()).collect()
}

#[tokio::test]
async fn a_good_first_answer_passes_the_gate_without_diagnosis() {
    let (agent, llm) = agent(
        ScriptedLlm::new()
            .on(&[WRITE], GOOD)
            .on(&[FACTS], FACTS_BOTH)
            .on(&[JUDGE], JUDGE_HIGH),
        AgentConfig::default(),
    );
    let t = agent.ask(&gold(true)).await.unwrap();
    assert_eq!(t.stop, StopReason::Done("passed".into()));
    assert_eq!(
        nodes(&t),
        ["plan", "retrieve", "read", "write", "verify", "monitor"]
    );
    assert_eq!(t.rounds.len(), 1);
    assert_eq!(
        t.answer,
        "Jaws was directed by Steven Spielberg [1], who is American [2]."
    );
    assert_eq!(t.sources.len(), 2);
    // Gold context: the plan uses rules (nothing to route) and no search runs.
    assert_eq!(t.plan.as_ref().unwrap().method, "rules");
    assert_eq!(t.retrievals[0].reason, RetrievalReason::Context);
    assert_eq!(llm.call_count(), 3);
    assert_eq!(t.usage.llm_calls, 3);
    let v = t.rounds[0].verification.as_ref().unwrap();
    assert_eq!(v.citation_precision, 1.0);
    assert!(v.faithfulness >= 0.7 && v.completeness >= 0.6);
}

#[tokio::test]
async fn external_knowledge_only_leads_to_the_sources_only_directive() {
    let (agent, llm) = agent(
        ScriptedLlm::new()
            .on(&[WRITE, "Instruction for this attempt: Answer ONLY"], GOOD)
            .on(&[WRITE], UNSUPPORTED)
            .on(&[FACTS], FACTS_BOTH)
            .on(&[JUDGE], JUDGE_HIGH)
            .on(&[CLOSED], "unknown")
            .on(&[CRITIC], CRITIC_YES),
        AgentConfig::default(),
    );
    let mut t = agent.ask(&gold(true)).await.unwrap();
    assert_eq!(t.stop, StopReason::Done("passed".into()));
    let d = t.rounds[0].diagnosis.as_ref().unwrap();
    assert_eq!(d.category, Category::ExternalKnowledgeOnly);
    assert_eq!(d.method, DiagnosisMethod::Rules);
    assert_eq!(
        t.rounds[0].remediation,
        Some(Remediation::Directive {
            category: Category::ExternalKnowledgeOnly,
            text: DIRECTIVE_EXTERNAL.into()
        })
    );
    assert_eq!(t.rounds[1].directive.as_deref(), Some(DIRECTIVE_EXTERNAL));
    assert_eq!(t.final_round, Some(1));
    // The facts depend only on the evidence: asked once for two rounds.
    assert_eq!(llm.hits(&[FACTS]), 1);
    assert_eq!(
        nodes(&t),
        [
            "plan",
            "retrieve",
            "read",
            "write",
            "verify",
            "monitor",
            "converge",
            "diagnose",
            "remediate",
            "write",
            "verify",
            "monitor"
        ]
    );
    t.zero_timings();
    insta::assert_json_snapshot!("trace_external_knowledge_only", t);
}

#[tokio::test]
async fn internal_knowledge_only_gets_its_directive_and_converges_early() {
    let (agent, _) = agent(
        ScriptedLlm::new()
            .on(&[WRITE], UNSUPPORTED)
            .on(&[FACTS], FACTS_MISSING)
            .on(&[JUDGE], JUDGE_HIGH)
            .on(&[CLOSED], "the United States")
            .on(&[CRITIC], CRITIC_YES),
        AgentConfig::default(),
    );
    let t = agent.ask(&gold(false)).await.unwrap();
    let d = t.rounds[0].diagnosis.as_ref().unwrap();
    assert_eq!(
        d.category,
        Category::InternalKnowledgeOnly,
        "{:?}",
        d.reasons
    );
    assert_eq!(t.rounds[1].directive.as_deref(), Some(DIRECTIVE_INTERNAL));
    // The rewrite is the same answer: converged after one remediation, not three.
    assert!(
        matches!(&t.stop, StopReason::Done(m) if m.starts_with("converged")),
        "{:?}",
        t.stop
    );
    assert_eq!(t.rounds.len(), 2);
    assert_eq!(t.rounds[1].similarity_to_previous, Some(1.0));
}

#[tokio::test]
async fn a_reasoning_error_gets_error_specific_guidance() {
    let (agent, _) = agent(
        ScriptedLlm::new()
            .on(&[WRITE, "Do not skip steps"], GOOD)
            .on(&[WRITE], HALF)
            .on(&[FACTS], FACTS_BOTH)
            .on(&[JUDGE], JUDGE_MID)
            .on(&[CLOSED], "American")
            .on(&[CRITIC], CRITIC_YES),
        AgentConfig::default(),
    );
    let t = agent.ask(&gold(true)).await.unwrap();
    let d = t.rounds[0].diagnosis.as_ref().unwrap();
    assert_eq!(d.category, Category::ReasoningError, "{:?}", d.reasons);
    assert_eq!(d.error_types, [ErrorType::IncompleteReasoning]);
    assert!(
        t.rounds[1]
            .directive
            .as_deref()
            .unwrap()
            .starts_with("Do not skip steps")
    );
    assert_eq!(t.stop, StopReason::Done("passed".into()));
    assert_eq!(t.short_answer, "United States");
}

#[tokio::test(flavor = "multi_thread")]
async fn insufficient_knowledge_retrieves_with_the_suggested_query() {
    let tmp = tempfile::tempdir().unwrap();
    let mut passages: Vec<(String, String)> = [JAWS, SPIELBERG]
        .iter()
        .map(|(t, x)| (t.to_string(), x.to_string()))
        .collect();
    for (t, x) in [
        (
            "Ohio",
            "Ohio is a state in the Midwestern region of the United States.",
        ),
        (
            "Duel (1971 film)",
            "Duel is a 1971 television film about a truck driver on a desert highway.",
        ),
        (
            "Great white shark",
            "The great white shark is a large shark found in coastal waters of all major oceans.",
        ),
        (
            "Martha's Vineyard",
            "Martha's Vineyard is an island south of Cape Cod in Massachusetts, known as a summer colony.",
        ),
    ] {
        passages.push((t.to_string(), x.to_string()));
    }
    let retriever = index(tmp.path(), &passages).await;
    // One chunk per search and one hop, whatever the plan says.
    let config = AgentConfig {
        routes: [RouteConfig {
            top_k: 1,
            rerank: false,
            hops: 1,
        }; 3],
        ..AgentConfig::default()
    };
    let llm = Arc::new(
        ScriptedLlm::new()
            .on(&[PLAN], r#"{"complexity": "simple"}"#)
            .on(&[WRITE, "is an American filmmaker"], GOOD)
            .on(&[WRITE], HALF)
            .on(&[FACTS, "is an American filmmaker"], FACTS_BOTH)
            .on(&[FACTS], FACTS_MISSING)
            .on(&[JUDGE], JUDGE_MID)
            .on(&[CLOSED], "unknown")
            .on(&[CRITIC], CRITIC_YES),
    );
    let dynllm: Arc<dyn DynLlm> = llm.clone();
    let agent = Agent::builder(dynllm)
        .retriever(retriever)
        .config(config)
        .build()
        .unwrap();
    let t = agent.ask(&Ask::new(Q, "metarag")).await.unwrap();
    // The model said simple; the rules see "the director of Jaws" as a chain.
    assert_eq!(t.plan.as_ref().unwrap().method, "llm+rules");
    assert_eq!(t.retrievals[0].k, 1);
    assert_eq!(t.retrievals[0].reason, RetrievalReason::Initial);
    let json = serde_json::to_string_pretty(&t).unwrap();
    let d = t.rounds[0].diagnosis.as_ref().expect(&json);
    assert_eq!(
        d.category,
        Category::InsufficientKnowledge,
        "{:?}",
        d.reasons
    );
    assert_eq!(
        t.rounds[0].remediation,
        Some(Remediation::Retrieve {
            category: Category::InsufficientKnowledge,
            query: "Steven Spielberg nationality".into()
        })
    );
    assert_eq!(t.retrievals[1].reason, RetrievalReason::Remediation);
    assert_eq!(t.retrievals[1].added, 1);
    let titles: Vec<_> = t.sources.iter().map(|s| s.passage.title.as_str()).collect();
    assert_eq!(titles, ["Jaws (film)", "Steven Spielberg"]);
    // New evidence, so the facts were asked again.
    assert_eq!(llm.hits(&[FACTS, "is an American filmmaker"]), 1);
    assert_eq!(t.stop, StopReason::Done("passed".into()));
    assert_eq!(
        nodes(&t)[8..],
        [
            "remediate",
            "retrieve",
            "read",
            "write",
            "verify",
            "monitor"
        ]
    );
}

#[tokio::test]
async fn a_critic_with_broken_json_falls_back_to_the_heuristic() {
    let (agent, _) = agent(
        ScriptedLlm::new()
            .on(&[WRITE], UNSUPPORTED)
            .on(&[FACTS], "the facts are: Spielberg, American")
            .on(&[JUDGE], JUDGE_HIGH)
            .on(&[CLOSED], "unknown")
            .on(&[CRITIC], "I think the answer is fine {"),
        AgentConfig {
            max_rounds: 1,
            ..AgentConfig::default()
        },
    );
    let t = agent.ask(&gold(true)).await.unwrap();
    let d = t.rounds[0].diagnosis.as_ref().unwrap();
    assert_eq!(d.method, DiagnosisMethod::Heuristic);
    assert!(d.critic_error.is_some());
    assert!(
        d.reasons.iter().any(|r| r.starts_with("heuristic")),
        "{:?}",
        d.reasons
    );
    let v = t.rounds[0].verification.as_ref().unwrap();
    assert!(v.facts_error.is_some());
    assert_eq!(t.stop, StopReason::Done("max_rounds 1".into()));
}

#[tokio::test]
async fn the_budget_guard_stops_a_runaway_loop_and_invalid_citations_are_stripped() {
    let writes: Vec<String> = (0..40)
        .map(|i| {
            format!(
                r#"{{"answer": "Variant {i} says word{i} about Jaws [7].", "short_answer": "v{i}"}}"#
            )
        })
        .collect();
    let (agent, _) = agent(
        ScriptedLlm::new()
            .on_seq(&[WRITE], &writes)
            .on(&[FACTS], FACTS_BOTH)
            .on(&[JUDGE], JUDGE_HIGH)
            .on(&[CLOSED], "unknown")
            .on(&[CRITIC], CRITIC_YES),
        AgentConfig {
            max_rounds: 100,
            convergence_threshold: 1.0,
            budget: Budget {
                max_llm_calls: 12,
                ..Budget::default()
            },
            ..AgentConfig::default()
        },
    );
    let t = agent.ask(&gold(true)).await.unwrap();
    assert_eq!(
        t.stop,
        StopReason::Budget(BudgetLimit {
            kind: BudgetKind::MaxLlmCalls,
            limit: 12
        })
    );
    // Checked at every call in the gateway: a call that would go over is never made (a
    // pair of concurrent calls is refused when only one is left).
    assert!(
        (11..=12).contains(&t.usage.llm_calls),
        "{}",
        t.usage.llm_calls
    );
    assert!(t.rounds.iter().all(|r| r.stripped_citations == 1));
    assert!(t.rounds.iter().all(|r| !r.answer.contains("[7]")));
    assert!(t.rounds[0].answer.ends_with("about Jaws."));
}

#[tokio::test]
async fn standard_and_direct_share_the_trace_format() {
    let (agent, llm) = agent(
        ScriptedLlm::new().on(&[WRITE], GOOD).on(
            &["Answer from your own knowledge in one or two sentences"],
            r#"{"answer": "Spielberg is American [1].", "short_answer": "USA"}"#,
        ),
        AgentConfig::default(),
    );
    let t = agent
        .ask(&Ask::new(Q, "standard").with_context(context(&[JAWS, SPIELBERG])))
        .await
        .unwrap();
    assert_eq!(nodes(&t), ["retrieve", "read", "write"]);
    assert_eq!(t.stop, StopReason::Done("answered".into()));
    assert!(t.rounds[0].verification.is_none());
    let t = agent.ask(&Ask::new(Q, "direct")).await.unwrap();
    assert_eq!(nodes(&t), ["write"]);
    assert!(t.sources.is_empty());
    // No sources: every citation is invalid and stripped.
    assert_eq!(t.answer, "Spielberg is American.");
    assert_eq!(t.rounds[0].stripped_citations, 1);
    assert!(!llm.calls()[1].messages[1].content.contains("Sources:"));
    // Retrieval strategies refuse to run with nothing to search.
    let err = agent.ask(&Ask::new(Q, "standard")).await.unwrap_err();
    assert!(err.to_string().contains("needs an index"), "{err}");
}

fn render(messages: &[Message]) -> String {
    messages
        .iter()
        .map(|m| format!("--- {} ---\n{}", m.role.as_str(), m.content))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn prompts_snapshot() {
    let sources =
        metarag_agent::evidence::read(&[Q.to_string()], &context(&[JAWS, SPIELBERG]), 6000);
    insta::assert_snapshot!("prompt_plan", render(&prompts::plan(Q).messages));
    insta::assert_snapshot!(
        "prompt_write",
        render(&prompts::write(Q, &sources, None, Some(DIRECTIVE_EXTERNAL), 256).messages)
    );
    insta::assert_snapshot!(
        "prompt_write_closed_book",
        render(&prompts::write(Q, &[], None, None, 256).messages)
    );
    insta::assert_snapshot!(
        "prompt_facts",
        render(&prompts::facts(Q, &sources).messages)
    );
    insta::assert_snapshot!(
        "prompt_judge",
        render(&prompts::judge(Q, &sources, "Jaws was directed by Steven Spielberg [1].").messages)
    );
    insta::assert_snapshot!(
        "prompt_critic",
        render(
            &prompts::critic(
                Q,
                &sources,
                "Jaws was directed by Steven Spielberg [1].",
                &["needed fact not found in the sources: country of Steven Spielberg".into()]
            )
            .messages
        )
    );
    insta::assert_snapshot!(
        "prompt_closed_book",
        render(&prompts::closed_book(Q).messages)
    );
    // Every evidence prompt starts with the same prefix, so a local model reuses it.
    let prefix = render(&prompts::facts(Q, &sources).messages[..1]);
    for req in [
        prompts::write(Q, &sources, None, None, 256),
        prompts::judge(Q, &sources, "x"),
        prompts::critic(Q, &sources, "x", &[]),
    ] {
        assert_eq!(render(&req.messages[..1]), prefix);
        assert!(
            req.messages[1]
                .content
                .starts_with("Sources:\n[1] Jaws (film)\n")
        );
    }
}
