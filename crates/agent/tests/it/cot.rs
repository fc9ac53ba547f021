//! `cot` (seed 004's linear planner) on the scripted fake LLM: the chain of sub-questions,
//! the facts scored in code, the memory handed to the writer.

use crate::branches::{GOOD, JAWS, Q, SPIELBERG, WRITE, agent};
use crate::context;
use metarag_agent::{Agent, AgentConfig, Ask, Role, RoleModel, StepKind, StopReason};
use metarag_core::DynLlm;
use metarag_testkit::ScriptedLlm;
use std::sync::Arc;

const DECOMPOSE: &str = "what is the next simple question to look up";
const EXTRACT: &str = "Write one sentence that states the answer";

fn gold() -> Ask {
    Ask::new(Q, "cot").with_context(context(&[JAWS, SPIELBERG]))
}

#[tokio::test]
async fn cot_asks_sub_questions_scores_each_fact_and_writes_from_the_memory() {
    let (agent, llm) = agent(
        ScriptedLlm::new()
            .on_seq(
                &[DECOMPOSE],
                &[
                    r#"{"sub_question": "Who directed Jaws?", "final_answer": ""}"#,
                    r#"{"sub_question": "Where was Steven Spielberg born?", "final_answer": ""}"#,
                    r#"{"sub_question": "What role does Roy Scheider play in Jaws?", "final_answer": ""}"#,
                    r#"{"sub_question": "", "final_answer": "United States"}"#,
                ],
            )
            .on_seq(
                &[EXTRACT],
                &[
                    r#"{"statement": "Jaws was directed by Steven Spielberg [1].", "answer": "Steven Spielberg"}"#,
                    // Cites a source that does not say it ([2] is Jaws here): not trusted.
                    r#"{"statement": "He was born in Cincinnati [2].", "answer": "Cincinnati"}"#,
                    // Cites nothing: checked against every passage the extractor saw.
                    r#"{"statement": "Roy Scheider plays a police chief.", "answer": "a police chief"}"#,
                ],
            )
            .on(&[WRITE], GOOD),
        AgentConfig::default(),
    );
    let t = agent.ask(&gold()).await.unwrap();
    assert_eq!(t.strategy, "cot");
    assert_eq!(t.stop, StopReason::Done("answered".into()));
    assert_eq!(t.short_answer, "United States");
    let nodes: Vec<&str> = t.graph.events.iter().map(|e| e.node.as_str()).collect();
    assert_eq!(
        nodes,
        [
            "retrieve",
            // The program's plan: none here (no rule answers it), so the chain starts empty.
            "program",
            "decompose",
            "extract",
            "decompose",
            "extract",
            "decompose",
            "extract",
            "decompose",
            "read",
            "write"
        ]
    );
    use StepKind::*;
    let kinds: Vec<StepKind> = t.steps.iter().map(|s| s.kind).collect();
    assert_eq!(
        kinds,
        [
            SubQuestion,
            Action,
            Observation,
            Answer,
            SubQuestion,
            Action,
            Observation,
            Answer,
            SubQuestion,
            Action,
            Observation,
            Answer,
            Answer
        ]
    );
    // Stated by the cited passage; the scripted model's token probabilities are ~0.98.
    assert!(
        t.steps[3]
            .text
            .starts_with("Steven Spielberg (confidence 0.9"),
        "{}",
        t.steps[3].text
    );
    assert_eq!(t.steps[7].text, "Cincinnati (confidence 0.00)");
    assert_eq!(t.metrics["sub_questions"], 3.0);
    assert_eq!(t.metrics["trusted_facts"], 2.0);
    assert!(
        t.steps[11]
            .text
            .starts_with("a police chief (confidence 0.9")
    );
    // "United States" is not stated by any source or trusted fact ("American" is).
    assert_eq!(t.metrics["candidate_confidence"], 0.0);
    // The writer sees the trusted fact with its source, and what was not found.
    let write = crate::last_prompt(&llm, WRITE);
    assert!(
        write.contains(
            "- Who directed Jaws? Jaws was directed by Steven Spielberg. (from: Jaws (film))\n"
        ),
        "{write}"
    );
    assert!(write.contains("Not found in the sources: Where was Steven Spielberg born?\n"));
    assert!(write.contains("Proposed answer: United States"));
    // The generator saw the memory grow.
    let last = crate::last_prompt(&llm, DECOMPOSE);
    assert!(
        last.contains("Facts found so far:\n- Who directed Jaws?"),
        "{last}"
    );
}

/// A budget of four calls: the program's plan and the chain's first step (decompose,
/// extract) leave room for the write but not for another step and the write, so it writes
/// now; asking another
/// sub-question would have had the budget refuse a call and end the run with no answer.
#[tokio::test]
async fn cot_writes_before_the_budget_runs_out() {
    let config = AgentConfig {
        budget: metarag_agent::Budget {
            max_llm_calls: 4,
            ..Default::default()
        },
        ..AgentConfig::default()
    };
    let (chain, llm) = agent(
        ScriptedLlm::new()
            .on(
                &[DECOMPOSE],
                r#"{"sub_question": "Who directed Jaws?", "final_answer": ""}"#,
            )
            .on(
                &[EXTRACT],
                r#"{"statement": "Jaws was directed by Steven Spielberg [1].", "answer": "Steven Spielberg"}"#,
            )
            .on(&[WRITE], GOOD),
        config,
    );
    let t = chain.ask(&gold()).await.unwrap();
    assert_eq!(t.stop, StopReason::Done("answered".into()));
    assert_eq!(t.short_answer, "United States");
    assert_eq!(t.usage.llm_calls, 4);
    assert_eq!(t.metrics["stopped_short_of_budget"], 1.0);
    let extract = t.graph.events.iter().find(|e| e.node == "extract").unwrap();
    assert!(
        extract
            .note
            .as_deref()
            .unwrap()
            .ends_with("budget nearly spent: 1 sub-questions, 1 facts trusted"),
        "{:?}",
        extract.note
    );
    assert!(crate::last_prompt(&llm, WRITE).contains("- Who directed Jaws?"));
    // With room, the same chain asks again.
    let (chain, _) = agent(
        ScriptedLlm::new()
            .on_seq(
                &[DECOMPOSE],
                &[
                    r#"{"sub_question": "Who directed Jaws?", "final_answer": ""}"#,
                    r#"{"sub_question": "", "final_answer": "American"}"#,
                ],
            )
            .on(
                &[EXTRACT],
                r#"{"statement": "Jaws was directed by Steven Spielberg [1].", "answer": "Steven Spielberg"}"#,
            )
            .on(&[WRITE], GOOD),
        AgentConfig::default(),
    );
    let t = chain.ask(&gold()).await.unwrap();
    assert_eq!(t.usage.llm_calls, 5);
    assert_eq!(t.metrics["stopped_short_of_budget"], 0.0);
}

#[tokio::test]
async fn cot_stops_at_a_repeated_sub_question_and_at_max_steps() {
    let (agent, _) = agent(
        ScriptedLlm::new()
            .on_seq(
                &[DECOMPOSE],
                &[
                    r#"{"sub_question": "Who directed Jaws?", "final_answer": ""}"#,
                    r#"{"sub_question": "who directed jaws", "final_answer": ""}"#,
                ],
            )
            .on(
                &[EXTRACT],
                r#"{"statement": "Jaws was directed by Steven Spielberg [1].", "answer": "Steven Spielberg"}"#,
            )
            .on(&[WRITE], GOOD),
        AgentConfig::default(),
    );
    let t = agent.ask(&gold()).await.unwrap();
    assert_eq!(t.metrics["sub_questions"], 1.0);
    let finish = t
        .graph
        .events
        .iter()
        .rfind(|e| e.node == "decompose")
        .and_then(|e| e.note.clone())
        .unwrap();
    assert!(finish.starts_with("repeated sub-question"), "{finish}");

    // One sub-question at most: the chain ends without asking the generator again.
    let sections = metarag_agent::StrategySections::from([(
        "cot".to_string(),
        serde_json::json!({"max_steps": 1}),
    )]);
    let llm = std::sync::Arc::new(
        ScriptedLlm::new()
            .on(
                &[DECOMPOSE],
                r#"{"sub_question": "Who directed Jaws?", "final_answer": ""}"#,
            )
            .on(
                &[EXTRACT],
                r#"{"statement": "Jaws was directed by Steven Spielberg [1].", "answer": "Steven Spielberg"}"#,
            )
            .on(&[WRITE], GOOD),
    );
    let agent = with_sections(llm.clone(), &sections);
    let t = agent.ask(&gold()).await.unwrap();
    assert_eq!(t.metrics["sub_questions"], 1.0);
    let finish = t.graph.events.iter().rfind(|e| e.node == "decompose");
    assert!(
        finish
            .and_then(|e| e.note.as_deref())
            .unwrap()
            .starts_with("steps spent")
    );
}

#[test]
fn cot_prompts_snapshot() {
    use metarag_agent::reasoning::{Fact, ReasoningMemory};
    use metarag_agent::strategies::cot::{decompose_prompt, extract_prompt};
    let sources =
        metarag_agent::evidence::read(&[Q.to_string()], &context(&[JAWS, SPIELBERG]), 6000);
    let memory = ReasoningMemory {
        facts: vec![Fact {
            sub_question: "Who directed Jaws?".into(),
            answer: "Steven Spielberg".into(),
            statement: "Jaws was directed by Steven Spielberg.".into(),
            sources: vec!["Jaws (film)".into()],
            confidence: 0.98,
        }],
        ..ReasoningMemory::default()
    };
    insta::assert_snapshot!(
        "prompt_cot_decompose",
        crate::render(&decompose_prompt(Q, &sources, &memory, 0.5).messages)
    );
    insta::assert_snapshot!(
        "prompt_cot_extract",
        crate::render(&extract_prompt("Who directed Jaws?", &sources[..1]).messages)
    );
}

/// `mcts` on the scripted LLM: the root expands into a sub-question and a final answer,
/// the sub-question is evaluated by extraction, the unvisited final answer is visited, the
/// better branch is expanded again; the best-rewarded final answer's memory reaches the
/// writer, and the tree is in the trace.
#[tokio::test]
async fn mcts_expands_evaluates_and_writes_from_the_best_path() {
    let sections = metarag_agent::StrategySections::from([(
        "mcts".to_string(),
        serde_json::json!({"rollouts": 3, "branching": 2}),
    )]);
    let llm = std::sync::Arc::new(
        ScriptedLlm::new()
            .on_seq(
                &[DECOMPOSE],
                &[
                    // The root's two samples.
                    r#"{"sub_question": "Who directed Jaws?", "final_answer": ""}"#,
                    r#"{"sub_question": "", "final_answer": "United States"}"#,
                    // The sub-question node's two samples.
                    r#"{"sub_question": "", "final_answer": "American"}"#,
                    r#"{"sub_question": "Where is Steven Spielberg from?", "final_answer": ""}"#,
                ],
            )
            .on(
                &[EXTRACT],
                r#"{"statement": "Jaws was directed by Steven Spielberg [1].", "answer": "Steven Spielberg"}"#,
            )
            .on(&[WRITE], GOOD),
    );
    let agent = with_sections(llm.clone(), &sections);
    let t = agent
        .ask(&Ask::new(Q, "mcts").with_context(context(&[JAWS, SPIELBERG])))
        .await
        .unwrap();
    assert_eq!(t.stop, StopReason::Done("answered".into()));
    let nodes: Vec<&str> = t.graph.events.iter().map(|e| e.node.as_str()).collect();
    assert_eq!(
        nodes,
        ["retrieve", "search", "search", "search", "read", "write"]
    );
    let tree: Vec<metarag_agent::strategies::TreeNode> =
        serde_json::from_value(t.records["tree"].clone()).unwrap();
    use metarag_agent::strategies::NodeKind::*;
    let kinds: Vec<_> = tree.iter().map(|n| n.kind).collect();
    assert_eq!(
        kinds,
        [UserQuestion, SubQa, FinalAnswer, FinalAnswer, SubQa]
    );
    // Three rollouts through the root; the sub-question's fact is trusted.
    assert_eq!(tree[0].visits, 3);
    assert!(tree[1].reward.unwrap() > 0.9);
    // "United States" is stated nowhere (the sources say "American"): reward 0; "American"
    // after the trusted fact: the fact's confidence.
    assert_eq!(tree[2].reward, Some(0.0));
    assert!(tree[3].reward.unwrap() > 0.9);
    assert_eq!(tree[3].parent, Some(1));
    // The unevaluated sub-question waits for a later rollout.
    assert_eq!((tree[4].visits, tree[4].reward), (0, None));
    assert_eq!(t.metrics["final_answers"], 2.0);
    let write = crate::last_prompt(&llm, WRITE);
    assert!(write.contains("- Who directed Jaws? Jaws was directed by Steven Spielberg."));
    assert!(write.contains("Proposed answer: American"), "{write}");
    // The root proposed from the sources; the sub-question's node from its facts alone
    // (two prompts each: the scripted model draws one sample a call).
    let expansions = decompose_prompts(&llm);
    assert_eq!(expansions.len(), 4);
    assert!(
        expansions[..2]
            .iter()
            .all(|p| p.contains("Sources:\n[1] Jaws (film)"))
    );
    assert!(!expansions[2].contains("Sources:"), "{}", expansions[2]);
    assert!(expansions[2].contains("Jaws was directed by Steven Spielberg. (from: Jaws (film))"));
}

/// `unverified_confidence` below a fact's confidence: the root's own proposal (stated by
/// the sources, so grounding 1.0) no longer outranks the branch that looked a fact up, the
/// search expands that branch and chooses the answer found under the fact. At the default
/// (1.0) the same script keeps re-visiting the root's proposal and chooses it.
#[tokio::test]
async fn mcts_prefers_an_answer_under_a_fact_when_unverified_ones_count_less() {
    let run = |unverified: f64| async move {
        let sections = metarag_agent::StrategySections::from([(
            "mcts".to_string(),
            serde_json::json!({"rollouts": 3, "branching": 2, "unverified_confidence": unverified}),
        )]);
        let llm = mcts_llm(&[
            r#"{"sub_question": "Who directed Jaws?", "final_answer": ""}"#,
            r#"{"sub_question": "", "final_answer": "American"}"#,
            r#"{"sub_question": "", "final_answer": "American"}"#,
            r#"{"sub_question": "Where is Steven Spielberg from?", "final_answer": ""}"#,
        ]);
        let agent = with_sections(llm, &sections);
        let t = agent
            .ask(&Ask::new(Q, "mcts").with_context(context(&[JAWS, SPIELBERG])))
            .await
            .unwrap();
        let tree: Vec<metarag_agent::strategies::TreeNode> =
            serde_json::from_value(t.records["tree"].clone()).unwrap();
        (t, tree)
    };
    let (t, tree) = run(1.0).await;
    assert_eq!(tree[2].reward, Some(1.0));
    assert_eq!(tree.len(), 3, "the sub-question branch is never expanded");
    assert_eq!(t.metrics["chosen_depth"], 0.0);
    let (t, tree) = run(0.5).await;
    assert_eq!(tree[2].reward, Some(0.5));
    assert_eq!(tree.len(), 5);
    assert!(tree[3].reward.unwrap() > 0.9 && tree[3].parent == Some(1));
    assert_eq!(t.metrics["chosen_depth"], 1.0);
    assert!(t.metrics["chosen_reward"] > 0.9);
}

/// Every generator prompt of a run, in order.
fn decompose_prompts(llm: &ScriptedLlm) -> Vec<String> {
    llm.calls()
        .iter()
        .map(|r| crate::render(&r.messages))
        .filter(|p| p.contains(DECOMPOSE))
        .collect()
}

/// `sources_in_every_expansion` shows the question's sources below the root too, as the
/// prompt shared with `cot` does.
#[tokio::test]
async fn mcts_can_show_the_sources_to_every_expansion() {
    let sections = metarag_agent::StrategySections::from([(
        "mcts".to_string(),
        serde_json::json!({"rollouts": 3, "branching": 2, "sources_in_every_expansion": true}),
    )]);
    let llm = mcts_llm(&[
        r#"{"sub_question": "Who directed Jaws?", "final_answer": ""}"#,
        r#"{"sub_question": "", "final_answer": "United States"}"#,
        r#"{"sub_question": "", "final_answer": "American"}"#,
        r#"{"sub_question": "Where is Steven Spielberg from?", "final_answer": ""}"#,
    ]);
    let agent = with_sections(llm.clone(), &sections);
    agent
        .ask(&Ask::new(Q, "mcts").with_context(context(&[JAWS, SPIELBERG])))
        .await
        .unwrap();
    let expansions = decompose_prompts(&llm);
    assert_eq!(expansions.len(), 4);
    assert!(
        expansions
            .iter()
            .all(|p| p.contains("Sources:\n[1] Jaws (film)"))
    );
    assert!(expansions[2].contains("Jaws was directed by Steven Spielberg. (from: Jaws (film))"));
}

/// Six rollouts asked for under a budget of six calls: the first rollout (two samples
/// drawn one a call, one evaluation) leaves room for the write but not for another
/// rollout and the write, so the search stops there and writes.
#[tokio::test]
async fn mcts_stops_its_search_while_the_write_still_fits_the_budget() {
    let sections = metarag_agent::StrategySections::from([(
        "mcts".to_string(),
        serde_json::json!({"rollouts": 6, "branching": 2}),
    )]);
    let dynllm: std::sync::Arc<dyn metarag_core::DynLlm> = mcts_llm(&[
        r#"{"sub_question": "Who directed Jaws?", "final_answer": ""}"#,
        r#"{"sub_question": "", "final_answer": "American"}"#,
    ]);
    let agent = metarag_agent::Agent::builder(dynllm)
        .registry(metarag_agent::Registry::builtin_with(&sections).unwrap())
        .config(AgentConfig {
            budget: metarag_agent::Budget {
                max_llm_calls: 6,
                ..Default::default()
            },
            ..AgentConfig::default()
        })
        .build()
        .unwrap();
    let t = agent
        .ask(&Ask::new(Q, "mcts").with_context(context(&[JAWS, SPIELBERG])))
        .await
        .unwrap();
    assert_eq!(t.stop, StopReason::Done("answered".into()));
    // The program's plan, the rollout's three calls, the write.
    assert_eq!(t.usage.llm_calls, 5);
    assert_eq!(t.metrics["rollouts"], 1.0);
    assert_eq!(t.metrics["stopped_short_of_budget"], 1.0);
    let search = t.graph.events.iter().rfind(|e| e.node == "search").unwrap();
    assert!(
        search
            .note
            .as_deref()
            .unwrap()
            .ends_with("(budget nearly spent)"),
        "{:?}",
        search.note
    );
    // The tree is kept, so the search can be resumed with a larger budget.
    assert!(t.records["tree"].as_array().is_some_and(|a| a.len() == 3));
}

fn mcts_llm(replies: &[&str]) -> std::sync::Arc<ScriptedLlm> {
    std::sync::Arc::new(
        ScriptedLlm::new()
            .on_seq(&[DECOMPOSE], replies)
            .on(
                &[EXTRACT],
                r#"{"statement": "Jaws was directed by Steven Spielberg [1].", "answer": "Steven Spielberg"}"#,
            )
            .on(&[WRITE], GOOD),
    )
}

async fn mcts_run(
    llm: std::sync::Arc<ScriptedLlm>,
    rollouts: usize,
    resume: Option<serde_json::Value>,
) -> metarag_agent::Trace {
    let sections = metarag_agent::StrategySections::from([(
        "mcts".to_string(),
        serde_json::json!({"rollouts": rollouts, "branching": 2}),
    )]);
    let agent = with_sections(llm, &sections);
    let mut ask = Ask::new(Q, "mcts").with_context(context(&[JAWS, SPIELBERG]));
    if let Some(r) = resume {
        ask = ask.with_resume(r);
    }
    agent.ask(&ask).await.unwrap()
}

/// A search stopped after 2 rollouts and resumed to 3 builds the same tree as 3 in one
/// go, and the resumed run asks the model only for what the first did not expand.
#[tokio::test]
async fn mcts_resumes_a_saved_tree_without_asking_again() {
    const ROOT: [&str; 2] = [
        r#"{"sub_question": "Who directed Jaws?", "final_answer": ""}"#,
        r#"{"sub_question": "", "final_answer": "United States"}"#,
    ];
    const CHILD: [&str; 2] = [
        r#"{"sub_question": "", "final_answer": "American"}"#,
        r#"{"sub_question": "Where is Steven Spielberg from?", "final_answer": ""}"#,
    ];
    let whole = mcts_run(mcts_llm(&[ROOT[0], ROOT[1], CHILD[0], CHILD[1]]), 3, None).await;
    let first = mcts_run(mcts_llm(&ROOT), 2, None).await;
    let rest = mcts_llm(&CHILD);
    let resumed = mcts_run(rest.clone(), 3, Some(serde_json::json!(first.records))).await;
    assert_eq!(resumed.records["tree"], whole.records["tree"]);
    // The resumed run: the child's two samples and the write, no extraction again.
    assert_eq!(rest.hits(&[DECOMPOSE]), 2);
    assert_eq!(rest.hits(&[EXTRACT]), 0);
    assert_eq!(resumed.short_answer, whole.short_answer);

    // A tree that is not one is refused, naming what is wrong.
    let mut broken = serde_json::json!(first.records);
    broken["tree"][1]["parent"] = serde_json::json!(5);
    let sections = metarag_agent::StrategySections::new();
    let agent = with_sections(mcts_llm(&ROOT), &sections);
    let e = agent
        .ask(
            &Ask::new(Q, "mcts")
                .with_context(context(&[JAWS, SPIELBERG]))
                .with_resume(broken),
        )
        .await
        .unwrap_err();
    assert!(
        e.to_string().contains("node 0: child 1 is not its child"),
        "{e}"
    );
    // Other strategies keep nothing to resume.
    let e = agent
        .ask(
            &Ask::new(Q, "cot")
                .with_context(context(&[JAWS, SPIELBERG]))
                .with_resume(serde_json::json!(first.records)),
        )
        .await
        .unwrap_err();
    assert!(e.to_string().contains("cannot resume"), "{e}");
}

/// An agent over the scripted model with these strategy sections.
fn with_sections(
    llm: std::sync::Arc<ScriptedLlm>,
    sections: &metarag_agent::StrategySections,
) -> metarag_agent::Agent {
    let dynllm: std::sync::Arc<dyn metarag_core::DynLlm> = llm;
    metarag_agent::Agent::builder(dynllm)
        .registry(metarag_agent::Registry::builtin_with(sections).unwrap())
        .build()
        .unwrap()
}

#[tokio::test]
async fn forgetting_the_context_reaches_every_role_model_once() {
    let default = Arc::new(ScriptedLlm::new());
    let shared = Arc::new(ScriptedLlm::new().named("role-fake"));
    let d: Arc<dyn DynLlm> = default.clone();
    let r: Arc<dyn DynLlm> = shared.clone();
    let agent = Agent::builder(d)
        .role(Role::Extractor, RoleModel::new().llm(r.clone()))
        .role(Role::Evaluator, RoleModel::new().llm(r))
        .build()
        .unwrap();
    agent.forget_context().await;
    // The bench clears each model's prefix cache before a question: a role's own local model
    // must be cleared too, or the second strategy is timed with a warm cache.
    assert_eq!(default.forgotten(), 1);
    assert_eq!(shared.forgotten(), 1, "two roles, one model: told once");
}

#[tokio::test]
async fn the_extractor_role_answers_extract_calls_with_its_own_model_and_settings() {
    let default = Arc::new(
        ScriptedLlm::new()
            .on_seq(
                &[DECOMPOSE],
                &[
                    r#"{"sub_question": "Who directed Jaws?", "final_answer": ""}"#,
                    r#"{"sub_question": "", "final_answer": "United States"}"#,
                ],
            )
            .on(&[WRITE], GOOD),
    );
    // The default model has no rule for the extract prompt: a call routed to it fails.
    let extractor = Arc::new(ScriptedLlm::new().named("extractor-fake").on(
        &[EXTRACT],
        r#"{"statement": "Jaws was directed by Steven Spielberg [1].", "answer": "Steven Spielberg"}"#,
    ));
    let d: Arc<dyn DynLlm> = default.clone();
    let e: Arc<dyn DynLlm> = extractor.clone();
    let chain = Agent::builder(d)
        .role(
            Role::Extractor,
            RoleModel::new().llm(e).temperature(0.0).max_tokens(77),
        )
        // A role with settings only keeps the default model.
        .role(Role::Generator, RoleModel::new().max_tokens(300))
        .build()
        .unwrap();
    let t = chain.ask(&gold()).await.unwrap();
    assert_eq!(t.short_answer, "United States");
    assert_eq!(extractor.call_count(), 1);
    assert_eq!(default.hits(&[EXTRACT]), 0);
    assert_eq!(extractor.calls()[0].params.max_tokens, 77);
    assert_eq!(extractor.calls()[0].params.temperature, 0.0);
    assert!(default.calls().iter().all(|c| c.params.max_tokens == 300));
    let by_purpose: Vec<(&str, Option<&str>)> = t
        .calls
        .iter()
        .map(|c| (c.purpose.as_str(), c.model.as_deref()))
        .collect();
    assert_eq!(
        by_purpose,
        [
            ("program_plan", None),
            ("decompose", None),
            ("extract", Some("extractor-fake")),
            ("decompose", None),
            ("write", None)
        ]
    );
    // A bad setting names the role.
    let d: Arc<dyn DynLlm> = default.clone();
    let e = Agent::builder(d)
        .role(Role::Evaluator, RoleModel::new().concurrency(0))
        .build()
        .unwrap_err();
    assert!(e.to_string().contains("roles.evaluator"), "{e}");
}

/// With the generator's concurrency at 2, rollouts run two at a time (leaves chosen with
/// a virtual loss, expansions sent together, extractions together). Where the second
/// rollout's choice does not depend on the first's reward, the tree is the one a search
/// of one rollout at a time builds, in fewer search steps.
#[tokio::test]
async fn mcts_runs_rollouts_together_up_to_the_generators_concurrency() {
    const REPLIES: [&str; 4] = [
        r#"{"sub_question": "Who directed Jaws?", "final_answer": ""}"#,
        r#"{"sub_question": "", "final_answer": "United States"}"#,
        r#"{"sub_question": "", "final_answer": "American"}"#,
        r#"{"sub_question": "Where is Steven Spielberg from?", "final_answer": ""}"#,
    ];
    let one_at_a_time = mcts_run(mcts_llm(&REPLIES), 3, None).await;
    let sections = metarag_agent::StrategySections::from([(
        "mcts".to_string(),
        serde_json::json!({"rollouts": 3, "branching": 2}),
    )]);
    let llm = mcts_llm(&REPLIES);
    let dynllm: Arc<dyn DynLlm> = llm.clone();
    let agent = Agent::builder(dynllm)
        .registry(metarag_agent::Registry::builtin_with(&sections).unwrap())
        .role(Role::Generator, RoleModel::new().concurrency(2))
        .role(Role::Extractor, RoleModel::new().concurrency(2))
        .build()
        .unwrap();
    let t = agent
        .ask(&Ask::new(Q, "mcts").with_context(context(&[JAWS, SPIELBERG])))
        .await
        .unwrap();
    assert_eq!(t.records["tree"], one_at_a_time.records["tree"]);
    assert_eq!(t.short_answer, one_at_a_time.short_answer);
    assert_eq!(t.metrics["rollouts"], 3.0);
    // The root alone (nothing to spread over yet), then two rollouts at once.
    assert_eq!(t.metrics["batched_rollouts"], 3.0);
    let searches = t.graph.events.iter().filter(|e| e.node == "search").count();
    assert_eq!(searches, 2);
    assert_eq!(llm.hits(&[DECOMPOSE]), 4);
    assert_eq!(llm.hits(&[EXTRACT]), 1);
}
