//! The question program on the scripted fake LLM: each op, negation, "neither", an
//! unresolved step, an invalid program, and a chain whose second subject is searched for
//! over an index. Every question is worded plainly, with invented things, never a
//! benchmark's template.

use crate::{context, index};
use metarag_agent::program::exec::{Outcome, ProgramRun, StepStatus};
use metarag_agent::strategies::PROGRAM_RESOLVED;
use metarag_agent::trace::RetrievalReason;
use metarag_agent::{
    ABSTAINED_ANSWER, ABSTAINED_SHORT, Abstain, AbstainedBy, Agent, AgentConfig, Ask, Registry,
    StopReason, StrategySections, Trace,
};
use metarag_core::{DynLlm, DynRetriever};
use metarag_testkit::ScriptedLlm;
use std::sync::Arc;

const PLAN: &str = "Plan how to answer the question from documents";
const WRITE: &str = "Answer the question using the sources. After every fact";
const SAMPLE: &str = "with the answer alone";
const CLOSED: &str = "Answer from your own knowledge with only the answer itself";

/// The read prompt for `property` of `subject`.
fn asks(property: &str, subject: &str) -> String {
    format!("what is the {property} of {subject}?")
}

/// The yes/no read prompt.
fn checks(property: &str, subject: &str) -> String {
    format!("is this true of {subject}: {property}?")
}

fn read(quote: &str, value: &str, source: u32) -> String {
    serde_json::json!({"quote": quote, "value": value, "source": source}).to_string()
}

fn agent(llm: ScriptedLlm, retriever: Option<Arc<dyn DynRetriever>>) -> (Agent, Arc<ScriptedLlm>) {
    agent_with(
        llm,
        retriever,
        AgentConfig {
            plan_with_llm: false,
            ..AgentConfig::default()
        },
    )
}

fn agent_with(
    llm: ScriptedLlm,
    retriever: Option<Arc<dyn DynRetriever>>,
    config: AgentConfig,
) -> (Agent, Arc<ScriptedLlm>) {
    agent_with_metarag(llm, retriever, config, serde_json::json!({"samples": 2}))
}

/// [`agent_with`] with metarag's own settings (`[strategies.metarag]`).
fn agent_with_metarag(
    llm: ScriptedLlm,
    retriever: Option<Arc<dyn DynRetriever>>,
    config: AgentConfig,
    metarag: serde_json::Value,
) -> (Agent, Arc<ScriptedLlm>) {
    let llm = Arc::new(llm);
    let dynllm: Arc<dyn DynLlm> = llm.clone();
    let mut sections = StrategySections::new();
    sections.insert("metarag".into(), metarag);
    let mut b = Agent::builder(dynllm)
        .registry(Registry::builtin_with(&sections).unwrap())
        .config(config);
    if let Some(r) = retriever {
        b = b.retriever(r);
    }
    (b.build().unwrap(), llm)
}

/// The scripted model with a written answer and samples for runs the program leaves to
/// the write.
fn writer(short: &str) -> ScriptedLlm {
    ScriptedLlm::new()
        .on(
            &[WRITE],
            serde_json::json!({"answer": format!("{short} [1]."), "short_answer": short})
                .to_string(),
        )
        .on(
            &[SAMPLE],
            serde_json::json!({"short_answer": short}).to_string(),
        )
        .on(&[CLOSED], "unknown")
}

fn program_of(t: &Trace) -> ProgramRun {
    serde_json::from_value(t.records["program"].clone()).unwrap()
}

const FILMS: [(&str, &str); 2] = [
    (
        "Blue Harbour",
        "Blue Harbour is a 1958 drama film. It premiered on 3 May 1958 in Lisbon.",
    ),
    (
        "The Glass Fox",
        "The Glass Fox is a thriller film first shown in March 1957.",
    ),
];

fn films_plan() -> String {
    serde_json::json!({"about": ["Blue Harbour", "The Glass Fox"], "chain": [],
        "combine": "earlier", "options": [], "read": "premiere date", "type": "date"})
    .to_string()
}

/// The scripted reads of both films' premiere dates.
fn premiere_reads(llm: ScriptedLlm) -> ScriptedLlm {
    llm.on(
        &[&asks("premiere date", "Blue Harbour")],
        read("It premiered on 3 May 1958 in Lisbon.", "3 May 1958", 1),
    )
    .on(
        &[&asks("premiere date", "The Glass Fox")],
        read(
            "The Glass Fox is a thriller film first shown in March 1957.",
            "March 1957",
            2,
        ),
    )
}

/// Blue Harbour's premiere read as its source states it, The Glass Fox's "quoted" from a
/// sentence no source holds, so that read does not ground.
fn ungrounded_second_read(llm: ScriptedLlm) -> ScriptedLlm {
    llm.on(
        &[&asks("premiere date", "Blue Harbour")],
        read("It premiered on 3 May 1958 in Lisbon.", "3 May 1958", 1),
    )
    .on(
        &[&asks("premiere date", "The Glass Fox")],
        read("The Glass Fox premiered in 1960.", "1960", 2),
    )
}

#[tokio::test]
async fn a_yes_no_comparison_answers_whether_the_first_named_wins() {
    for (q, plan, want) in [
        (
            "Did Blue Harbour premiere after The Glass Fox?",
            ["Blue Harbour", "The Glass Fox"],
            "yes",
        ),
        (
            "Was Blue Harbour shown before The Glass Fox was?",
            ["Blue Harbour", "The Glass Fox"],
            "no",
        ),
    ] {
        let combine = if want == "yes" { "later" } else { "earlier" };
        let frame = serde_json::json!({"about": plan, "chain": [], "combine": combine,
            "options": [], "read": "premiere date", "type": "date"});
        // The writer would say the opposite: the program decides.
        let wrong = if want == "yes" { "no" } else { "yes" };
        let (agent, _) = agent(
            premiere_reads(writer(wrong).on(&[PLAN], frame.to_string())),
            None,
        );
        let t = agent
            .ask(&Ask::new(q, "metarag").with_context(context(&FILMS)))
            .await
            .unwrap();
        assert_eq!(t.stop, StopReason::Done(PROGRAM_RESOLVED.into()), "{q}");
        assert_eq!(t.short_answer, want, "{q}");
    }
}

#[tokio::test]
async fn a_reworded_comparison_is_decided_by_the_dates_each_source_states() {
    let q = "Of Blue Harbour and The Glass Fox, which film premiered before the other?";
    let (agent, llm) = agent(
        premiere_reads(writer("Blue Harbour").on(&[PLAN], films_plan())),
        None,
    );
    let t = agent
        .ask(&Ask::new(q, "metarag").with_context(context(&FILMS)))
        .await
        .unwrap();
    assert_eq!(t.stop, StopReason::Done(PROGRAM_RESOLVED.into()));
    assert_eq!(t.short_answer, "The Glass Fox");
    // No write: the program's answer, citing both dates.
    assert_eq!(llm.hits(&[WRITE]), 0);
    assert!(
        t.answer.contains("[1]") && t.answer.contains("[2]"),
        "{}",
        t.answer
    );
    let run = program_of(&t);
    assert_eq!(run.steps.len(), 3);
    assert!(
        run.steps[..2]
            .iter()
            .all(|s| s.status == StepStatus::Grounded)
    );
    assert_eq!(run.steps[2].status, StepStatus::Computed);
    assert_eq!(run.steps[1].value.as_ref().unwrap().display(), "March 1957");
    assert_eq!(t.metrics.get("program_resolved"), Some(&1.0));
}

const DECOMPOSE: &str = "what is the next simple question to look up";
const EXTRACT: &str = "Write one sentence that states the answer";

/// `cot` and `mcts` reason from the same program as `metarag`: resolved, its answer ends
/// the run before any sub-question or write.
#[tokio::test]
async fn cot_and_mcts_answer_with_a_resolved_program_before_any_sub_question() {
    let q = "Of Blue Harbour and The Glass Fox, which film premiered before the other?";
    for strategy in ["cot", "mcts"] {
        let (agent, llm) = agent(
            premiere_reads(writer("Blue Harbour").on(&[PLAN], films_plan())),
            None,
        );
        let t = agent
            .ask(&Ask::new(q, strategy).with_context(context(&FILMS)))
            .await
            .unwrap();
        assert_eq!(
            t.stop,
            StopReason::Done(PROGRAM_RESOLVED.into()),
            "{strategy}"
        );
        assert_eq!(t.short_answer, "The Glass Fox", "{strategy}");
        assert_eq!(llm.hits(&[DECOMPOSE]) + llm.hits(&[WRITE]), 0, "{strategy}");
        assert_eq!(program_of(&t).steps.len(), 3, "{strategy}");
        assert_eq!(t.metrics.get("program_resolved"), Some(&1.0), "{strategy}");
    }
    // The tree's root holds the program's facts, so `tree show` shows the reasoning.
    let (agent, _) = agent(
        premiere_reads(writer("Blue Harbour").on(&[PLAN], films_plan())),
        None,
    );
    let t = agent
        .ask(&Ask::new(q, "mcts").with_context(context(&FILMS)))
        .await
        .unwrap();
    let facts = &t.records["tree"][0]["memory"]["facts"];
    assert_eq!(facts.as_array().map(Vec::len), Some(2));
    assert_eq!(
        facts[1]["sub_question"],
        "What is the premiere date of The Glass Fox?"
    );
    assert_eq!(facts[1]["answer"], "March 1957");
}

/// Unresolved, the program's grounded reads are `cot`'s first facts and the read no
/// source grounds is its first sub-question, searched and extracted as any other.
#[tokio::test]
async fn cot_goes_on_from_an_unresolved_program_with_the_read_it_could_not_ground() {
    let q = "Which film was shown to audiences first: Blue Harbour or The Glass Fox?";
    let (agent, llm) = agent(
        ungrounded_second_read(writer("The Glass Fox").on(&[PLAN], films_plan()))
            .on(
                &[EXTRACT],
                r#"{"statement": "The Glass Fox was first shown in March 1957 [2].", "answer": "March 1957"}"#,
            )
            .on(
                &[DECOMPOSE],
                r#"{"sub_question": "", "final_answer": "The Glass Fox"}"#,
            ),
        None,
    );
    let t = agent
        .ask(&Ask::new(q, "cot").with_context(context(&FILMS)))
        .await
        .unwrap();
    assert_eq!(t.stop, StopReason::Done("answered".into()));
    assert_eq!(t.short_answer, "The Glass Fox");
    let nodes: Vec<&str> = t.graph.events.iter().map(|e| e.node.as_str()).collect();
    assert_eq!(
        nodes,
        [
            "retrieve",
            "program",
            "extract",
            "decompose",
            "read",
            "write"
        ]
    );
    let extract = crate::last_prompt(&llm, EXTRACT);
    assert!(
        extract.contains("Question: What is the premiere date of The Glass Fox?"),
        "{extract}"
    );
    let decompose = crate::last_prompt(&llm, DECOMPOSE);
    assert!(
        decompose.contains(
            "- What is the premiere date of Blue Harbour? It premiered on 3 May 1958 in Lisbon. (from: Blue Harbour)"
        ),
        "{decompose}"
    );
    // Only the chain's own step counts against `max_steps`; both facts reach the write.
    assert_eq!(t.metrics["sub_questions"], 2.0);
    assert!(
        crate::last_prompt(&llm, WRITE).contains("What is the premiere date of The Glass Fox?")
    );
}

#[tokio::test]
async fn a_negated_fact_is_read_as_false_even_when_the_model_says_yes() {
    let q = "Are the billing service and the search service both deprecated?";
    let docs = [
        (
            "Billing service",
            "The billing service handles invoices. The billing service is not deprecated.",
        ),
        (
            "Search service",
            "The search service indexes documents. The search service is not deprecated either.",
        ),
    ];
    let plan = serde_json::json!({"about": ["billing service", "search service"],
        "chain": [], "combine": "all", "options": [], "read": "deprecated", "type": "yes_no"});
    let (agent, _) = agent(
        writer("yes")
            .on(&[PLAN], plan.to_string())
            .on(
                &[&checks("deprecated", "billing service")],
                read("The billing service is not deprecated.", "yes", 1),
            )
            .on(
                &[&checks("deprecated", "search service")],
                // The model's quote drops the source's "not": the check reads the
                // source's sentence.
                read("The search service is deprecated.", "yes", 2),
            ),
        None,
    );
    let t = agent
        .ask(&Ask::new(q, "metarag").with_context(context(&docs)))
        .await
        .unwrap();
    assert_eq!(t.stop, StopReason::Done(PROGRAM_RESOLVED.into()));
    assert_eq!(t.short_answer, "no");
    let run = program_of(&t);
    assert!(
        run.steps[..2]
            .iter()
            .all(|s| s.value.as_ref().unwrap().display() == "no")
    );
    assert_eq!(
        run.steps[1].quote.as_deref(),
        Some("The search service is not deprecated either.")
    );
}

/// A question that negates its own predicate ("... won't overwrite ...?"), planned as the
/// positive read: the plan's repair moves the negation into the read, and the source's
/// "does not overwrite" answers yes, whatever the model's verdict.
#[tokio::test]
async fn a_question_negating_its_own_predicate_is_answered_on_the_negation() {
    let q = "Is it right that the packer, left alone, won't overwrite an existing archive?";
    let doc = "The packer does not overwrite an existing archive unless --force is given.";
    let docs = [("Packer", doc)];
    let plan = serde_json::json!({"about": ["packer"], "chain": [], "combine": "none",
        "options": [], "read": "overwrite an existing archive", "type": "yes_no"});
    let (agent, _) = agent(
        writer("no").on(&[PLAN], plan.to_string()).on(
            &[&checks("not overwrite an existing archive", "packer")],
            read(doc, "no", 1),
        ),
        None,
    );
    let t = agent
        .ask(&Ask::new(q, "metarag").with_context(context(&docs)))
        .await
        .unwrap();
    let run = program_of(&t);
    assert!(
        run.program.contains("not overwrite an existing archive"),
        "{}",
        run.program
    );
    assert_eq!(t.stop, StopReason::Done(PROGRAM_RESOLVED.into()));
    assert_eq!(t.short_answer, "yes");
}

#[tokio::test]
async fn an_either_or_question_both_of_whose_options_are_wrong_is_answered_neither() {
    let q = "Which database does the analytics team use, Postgres or MySQL?";
    let docs = [(
        "Analytics platform",
        "In 2023 the analytics team moved to ClickHouse, which replaced both Postgres and MySQL.",
    )];
    let plan = serde_json::json!({"about": ["analytics team"], "chain": [],
        "combine": "pick", "options": ["Postgres", "MySQL"], "read": "database it uses",
        "type": "text"});
    let (agent, _) = agent(
        writer("MySQL").on(&[PLAN], plan.to_string()).on(
            &[&asks("database it uses", "analytics team")],
            read(
                "In 2023 the analytics team moved to ClickHouse, which replaced both Postgres and MySQL.",
                "ClickHouse",
                1,
            ),
        ),
        None,
    );
    let t = agent
        .ask(&Ask::new(q, "metarag").with_context(context(&docs)))
        .await
        .unwrap();
    assert_eq!(t.short_answer, "ClickHouse");
    assert!(t.answer.starts_with("Neither: ClickHouse"), "{}", t.answer);
    assert!(matches!(
        program_of(&t).outcome,
        Outcome::Resolved { neither: true, .. }
    ));
}

/// A list of three options ("gzip, xz, or zstd"): the planner writes none, the plan's
/// repair takes all three from the question, and the first item, read from the sources,
/// is the answer (read as two options, it would have been "neither: gzip").
#[tokio::test]
async fn the_first_item_of_a_three_option_list_is_an_option() {
    let q = "Which compressor does the packer use by default: gzip, xz, or zstd?";
    let doc = "The packer compresses archives with gzip unless another compressor is named.";
    let docs = [("Packer", doc)];
    let plan = serde_json::json!({"about": ["packer"], "chain": [],
        "combine": "none", "options": [], "read": "default compressor", "type": "text"});
    let (agent, _) = agent(
        writer("xz").on(&[PLAN], plan.to_string()).on(
            &[&asks("default compressor", "packer")],
            read(doc, "gzip", 1),
        ),
        None,
    );
    let t = agent
        .ask(&Ask::new(q, "metarag").with_context(context(&docs)))
        .await
        .unwrap();
    let run = program_of(&t);
    assert!(
        run.program.contains(r#"pick(["gzip", "xz", "zstd"], #1)"#),
        "{}",
        run.program
    );
    assert_eq!(t.short_answer, "gzip");
    assert!(matches!(
        run.outcome,
        Outcome::Resolved { neither: false, .. }
    ));
}

/// A question offering two values, read once and picked among by number: the planner
/// (like the 1.5B model) writes no options, the plan's repair takes them from the
/// question.
async fn wait_question(q: &str, doc: &str, value: &str, short: &str) -> Trace {
    let docs = [("Kestrel client", doc)];
    let plan = serde_json::json!({"about": ["Kestrel client"], "chain": [],
        "combine": "none", "options": [], "read": "time before giving up",
        "type": "quantity"});
    let (agent, _) = agent(
        writer(short).on(&[PLAN], plan.to_string()).on(
            &[&asks("time before giving up", "Kestrel client")],
            read(doc, value, 1),
        ),
        None,
    );
    agent
        .ask(&Ask::new(q, "metarag").with_context(context(&docs)))
        .await
        .unwrap()
}

#[tokio::test]
async fn a_value_offered_in_the_question_is_picked_by_number_and_neither_when_none_is_it() {
    // "5 seconds" shares half its words with "2 seconds": only the numbers tell.
    let doc =
        "Without --timeout, the Kestrel client waits 5 seconds for a reply before it gives up.";
    let q = "Does the Kestrel client give up on a request after 2 seconds or after 10?";
    let t = wait_question(q, doc, "5 seconds", "yes").await;
    let run = program_of(&t);
    assert!(run.program.contains("pick"), "{}", run.program);
    assert!(
        matches!(run.outcome, Outcome::Resolved { neither: true, .. }),
        "{:?}",
        run.outcome
    );
    assert_eq!(t.short_answer, "5 seconds");
    assert!(t.answer.starts_with("Neither: 5 seconds"), "{}", t.answer);
    // Reworded, with the value in another unit: the option of the same value.
    let doc = "Without --timeout, the Kestrel client waits 10 s for a reply before it gives up.";
    let q = "Without a timeout set, is it after 2 seconds or after 10 that the Kestrel client gives up?";
    let t = wait_question(q, doc, "10 s", "yes").await;
    assert_eq!(t.short_answer, "after 10");
    assert!(matches!(
        program_of(&t).outcome,
        Outcome::Resolved { neither: false, .. }
    ));
}

#[tokio::test]
async fn an_option_the_sources_name_is_picked_and_a_shared_country_is_told_by_its_demonym() {
    let docs = [
        (
            "Marek Dunn",
            "Marek Dunn is an American sculptor born in Ohio.",
        ),
        (
            "Sofia Ehle",
            "Sofia Ehle is a painter from the United States.",
        ),
    ];
    let plan = serde_json::json!({"about": ["Marek Dunn", "Sofia Ehle"], "chain": [],
        "combine": "same", "options": [], "read": "nationality", "type": "place"});
    let (agent, _) = agent(
        writer("no")
            .on(&[PLAN], plan.to_string())
            .on(
                &[&asks("nationality", "Marek Dunn")],
                read(
                    "Marek Dunn is an American sculptor born in Ohio.",
                    "American",
                    1,
                ),
            )
            .on(
                &[&asks("nationality", "Sofia Ehle")],
                read(
                    "Sofia Ehle is a painter from the United States.",
                    "United States",
                    2,
                ),
            ),
        None,
    );
    let t = agent
        .ask(
            &Ask::new(
                "Did Marek Dunn and Sofia Ehle hold the same citizenship?",
                "metarag",
            )
            .with_context(context(&docs)),
        )
        .await
        .unwrap();
    assert_eq!(t.short_answer, "yes");
}

#[tokio::test]
async fn what_two_lists_share_and_how_many_items_one_holds_are_computed() {
    let docs = [
        (
            "Pell Arno",
            "Pell Arno plays the cello, the piano and the organ.",
        ),
        ("Mira Sand", "Mira Sand plays the violin and the piano."),
    ];
    let shared = serde_json::json!({"about": ["Pell Arno", "Mira Sand"], "chain": [],
        "combine": "intersect", "options": [], "read": "instruments played", "type": "list"});
    let reads = |llm: ScriptedLlm| {
        llm.on(
            &[&asks("instruments played", "Pell Arno")],
            read(
                "Pell Arno plays the cello, the piano and the organ.",
                "cello, piano, organ",
                1,
            ),
        )
        .on(
            &[&asks("instruments played", "Mira Sand")],
            read(
                "Mira Sand plays the violin and the piano.",
                "violin, piano",
                2,
            ),
        )
    };
    let (a, _) = agent(reads(writer("cello").on(&[PLAN], shared.to_string())), None);
    let t = a
        .ask(
            &Ask::new(
                "Which instrument is played by both Pell Arno and Mira Sand?",
                "metarag",
            )
            .with_context(context(&docs)),
        )
        .await
        .unwrap();
    assert_eq!(t.short_answer, "piano");
    let count = serde_json::json!({"about": ["Pell Arno"], "chain": [], "combine": "count",
        "options": [], "read": "instruments played", "type": "list"});
    let (a, _) = agent(reads(writer("2").on(&[PLAN], count.to_string())), None);
    let t = a
        .ask(
            &Ask::new("How many instruments does Pell Arno play?", "metarag")
                .with_context(context(&docs)),
        )
        .await
        .unwrap();
    assert_eq!(t.short_answer, "3");
}

#[tokio::test]
async fn a_step_no_source_grounds_leaves_the_answer_to_the_write_and_says_which_step() {
    let q = "Which film was shown to audiences first: Blue Harbour or The Glass Fox?";
    let (agent, llm) = agent(
        ungrounded_second_read(writer("Blue Harbour").on(&[PLAN], films_plan())),
        None,
    );
    let t = agent
        .ask(&Ask::new(q, "metarag").with_context(context(&FILMS)))
        .await
        .unwrap();
    assert_ne!(t.stop, StopReason::Done(PROGRAM_RESOLVED.into()));
    assert_eq!(llm.hits(&[WRITE]), 1);
    assert_eq!(t.short_answer, "Blue Harbour");
    match program_of(&t).outcome {
        Outcome::Unresolved {
            step, op, reason, ..
        } => {
            assert_eq!((step, op.as_str()), (2, "find"));
            assert!(reason.contains("no source holds"), "{reason}");
        }
        other => panic!("expected unresolved, got {other:?}"),
    }
    let note = t
        .graph
        .events
        .iter()
        .find(|e| e.node == "program")
        .and_then(|e| e.note.clone())
        .unwrap();
    assert!(note.starts_with("step 2 unresolved"), "{note}");
}

#[tokio::test]
async fn a_program_that_does_not_type_is_recorded_and_the_write_answers() {
    // A compare of two names: not dates or quantities.
    let plan = serde_json::json!({"about": ["Blue Harbour", "The Glass Fox"],
        "chain": ["director"], "combine": "earlier", "options": [], "read": "", "type": "date"});
    let (agent, llm) = agent(writer("Blue Harbour").on(&[PLAN], plan.to_string()), None);
    let t = agent
        .ask(
            &Ask::new(
                "Whose director was born first, Blue Harbour's or The Glass Fox's?",
                "metarag",
            )
            .with_context(context(&FILMS)),
        )
        .await
        .unwrap();
    assert_eq!(llm.hits(&[WRITE]), 1);
    match program_of(&t).outcome {
        Outcome::Invalid { reason } => assert!(reason.starts_with("step 3"), "{reason}"),
        other => panic!("expected invalid, got {other:?}"),
    }
}

const SCORED: [(&str, &str); 3] = [
    (
        "Orla Vey",
        "Orla Vey is a 1962 film directed by Tam Reed, with music by Ines Gale.",
    ),
    (
        "Tam Reed",
        "Tam Reed (born 2 March 1925) was a film director.",
    ),
    ("Ines Gale", "Ines Gale (born 4 June 1930) was a composer."),
];

const RELATION: &str = "According to this sentence alone";

/// A follow that names the wrong person of a sentence naming two (the director where the
/// composer was asked) is caught by the relation check, which reads the composer off the
/// sentence alone: the program stops at that step and the write answers; the right
/// person, confirmed, leads on to the birth date.
#[tokio::test]
async fn a_follow_that_names_another_role_is_caught_by_the_relation_check() {
    let q = "When was the person who wrote the music for Orla Vey born?";
    let plan = serde_json::json!({"about": ["Orla Vey"], "chain": ["composer"],
        "combine": "none", "options": [], "read": "date of birth", "type": "date"});
    let quote = "Orla Vey is a 1962 film directed by Tam Reed, with music by Ines Gale.";
    let checked = "what is the composer of Orla Vey?";
    for (value, right) in [("Tam Reed", false), ("Ines Gale", true)] {
        let llm = writer("2 March 1925")
            .on(&[PLAN], plan.to_string())
            // Before the read's rule: the check asks the read's question of one sentence.
            .on(&[RELATION, checked], r#"{"answer": "Ines Gale"}"#)
            .on(&[&asks("composer", "Orla Vey")], read(quote, value, 1))
            .on(
                &[&asks("date of birth", "Ines Gale")],
                read(
                    "Ines Gale (born 4 June 1930) was a composer.",
                    "4 June 1930",
                    3,
                ),
            );
        let (agent, llm) = agent(llm, None);
        let t = agent
            .ask(&Ask::new(q, "metarag").with_context(context(&SCORED)))
            .await
            .unwrap();
        let run = program_of(&t);
        assert_eq!(llm.hits(&[RELATION, checked]), 1, "{value}: {run:?}");
        if !right {
            match &run.outcome {
                Outcome::Unresolved { step, reason, .. } => {
                    assert_eq!(*step, 1);
                    assert!(
                        reason.contains("not as the composer of Orla Vey"),
                        "{reason}"
                    );
                }
                other => panic!("expected unresolved, got {other:?}"),
            }
            // The write answers, as standard RAG does.
            assert_eq!(llm.hits(&[WRITE]), 1);
        } else {
            assert!(run.resolved(), "{run:?}");
            assert_eq!(t.short_answer, "4 June 1930");
            assert_eq!(run.steps[1].subject.as_deref(), Some("Ines Gale"));
        }
    }
}

#[tokio::test]
async fn a_chain_searches_for_the_page_of_the_entity_its_first_step_found() {
    let dir = tempfile::tempdir().unwrap();
    let passages: Vec<(String, String)> = [
        (
            "Quarry Bells",
            "Quarry Bells is a 1971 film directed by Ivo Marsh.",
        ),
        (
            "Ivo Marsh",
            "Ivo Marsh (1921-1990) was a film director born in Dundee.",
        ),
        ("Dundee", "Dundee is a city on the east coast of Scotland."),
        ("Harbour lights", "Harbour lights guide ships at night."),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    let retriever = index(dir.path(), &passages).await;
    let plan = serde_json::json!({"about": ["Quarry Bells"], "chain": ["director"],
        "combine": "none", "options": [], "read": "birthplace", "type": "place"});
    let mut config = AgentConfig {
        plan_with_llm: false,
        bridge_hop: false,
        follow_entities: false,
        ..AgentConfig::default()
    };
    for route in [
        &mut config.simple,
        &mut config.complex,
        &mut config.multi_hop,
    ] {
        route.top_k = 1;
        route.hops = 1;
    }
    let (agent, llm) = agent_with(
        writer("1971")
            .on(&[PLAN], plan.to_string())
            .on(
                &[RELATION, "what is the director of Quarry Bells?"],
                r#"{"answer": "Ivo Marsh"}"#,
            )
            .on(
                &[&asks("director", "Quarry Bells")],
                read(
                    "Quarry Bells is a 1971 film directed by Ivo Marsh.",
                    "Ivo Marsh",
                    1,
                ),
            )
            .on(
                &[&asks("birthplace", "Ivo Marsh")],
                read(
                    "Ivo Marsh (1921-1990) was a film director born in Dundee.",
                    "Dundee",
                    2,
                ),
            ),
        Some(retriever),
        config,
    );
    let t = agent
        .ask(&Ask::new(
            "In which city was the man who directed Quarry Bells born?",
            "metarag",
        ))
        .await
        .unwrap();
    let run = program_of(&t);
    assert_eq!(t.short_answer, "Dundee", "{run:?}");
    assert_eq!(run.steps[1].subject.as_deref(), Some("Ivo Marsh"));
    assert!(
        t.sources.iter().any(|s| s.passage.title == "Ivo Marsh"),
        "{:?}",
        t.sources
            .iter()
            .map(|s| &s.passage.title)
            .collect::<Vec<_>>()
    );
    assert_eq!(llm.hits(&[WRITE]), 0);
}

/// A read no source grounds, and a written answer the samples do not back: metarag
/// declines, says which step failed and what the sources do state, and keeps the answer
/// it held back. With `abstain = "off"` the same run answers.
#[tokio::test]
async fn a_read_no_source_grounds_and_a_weak_answer_make_metarag_decline() {
    let q = "Which film was shown to audiences first: Blue Harbour or The Glass Fox?";
    let script = || {
        ungrounded_second_read(
            ScriptedLlm::new()
                .on(&[PLAN], films_plan())
                .on(
                    &[WRITE],
                    r#"{"answer": "Blue Harbour [1].", "short_answer": "Blue Harbour"}"#,
                )
                .on_seq(
                    &[SAMPLE],
                    &[
                        r#"{"short_answer": "The Glass Fox"}"#.to_string(),
                        r#"{"short_answer": "Lisbon"}"#.to_string(),
                    ],
                )
                .on(&[CLOSED], "unknown"),
        )
    };
    let config = |abstain| AgentConfig {
        plan_with_llm: false,
        max_rounds: 0,
        abstain,
        ..AgentConfig::default()
    };
    let ask = Ask::new(q, "metarag").with_context(context(&FILMS));
    let (declining, _) = agent_with(script(), None, config(Abstain::Below(0.0)));
    let t = declining.ask(&ask).await.unwrap();
    assert!(!t.rounds[0].assessment.as_ref().unwrap().passed);
    assert!(t.abstained, "{:?}", t.stop);
    let a = t.abstention.clone().unwrap();
    assert_eq!(a.by, AbstainedBy::Program);
    assert!(
        a.reason.contains("no source states step 2's fact"),
        "{}",
        a.reason
    );
    assert!(
        a.reason
            .contains("What is the premiere date of The Glass Fox?")
    );
    assert_eq!(a.sources_say, ["It premiered on 3 May 1958 in Lisbon. [1]"]);
    assert_eq!(a.withheld.as_deref(), Some("Blue Harbour [1]."));
    assert_eq!(t.short_answer, ABSTAINED_SHORT);
    assert_eq!(
        t.answer,
        format!("{ABSTAINED_ANSWER} What they do state: It premiered on 3 May 1958 in Lisbon. [1]")
    );
    assert!(matches!(&t.stop, StopReason::Done(m) if m.starts_with("abstained (program)")));
    assert_eq!(t.graph.events.last().unwrap().node, "decide");

    let (answering, _) = agent_with(script(), None, config(Abstain::Off));
    let t = answering.ask(&ask).await.unwrap();
    assert!(!t.abstained && t.abstention.is_none());
    assert_eq!(t.short_answer, "Blue Harbour");
}

/// A yes/no the program could not settle: team documents that never say whether either
/// service is deprecated, a read "quoted" from a sentence no document holds, and a
/// writer and samples that all say "Yes", so the monitor passes the answer. metarag
/// declines anyway (the program was the check a bare "yes" could get), and says which
/// step did not resolve; with `abstain = "off"` the same run answers "Yes".
#[tokio::test]
async fn a_yes_no_the_program_did_not_settle_is_declined_even_when_the_monitor_passes_it() {
    let docs = [
        (
            "billing service",
            "The billing service retries a failed refund five times before it gives up.",
        ),
        (
            "search service",
            "The search service daemon reloads its index every ten minutes.",
        ),
    ];
    let q = "Has the billing service been deprecated, and the search service as well?";
    let plan = serde_json::json!({"about": ["billing service", "search service"],
        "chain": [], "combine": "all", "options": [], "read": "deprecated", "type": "yes_no"});
    let script = || {
        writer("Yes")
            .on(&[PLAN], plan.to_string())
            .on(
                &[&checks("deprecated", "billing service")],
                read("The billing service is deprecated.", "yes", 1),
            )
            .on(
                &[&checks("deprecated", "search service")],
                read("The search service is deprecated.", "yes", 2),
            )
            .on(&[CLOSED], "Yes")
    };
    let config = |abstain| AgentConfig {
        plan_with_llm: false,
        max_rounds: 0,
        abstain,
        ..AgentConfig::default()
    };
    let ask = Ask::new(q, "metarag").with_context(context(&docs));
    let (declining, _) = agent_with(script(), None, config(Abstain::Below(0.0)));
    let t = declining.ask(&ask).await.unwrap();
    let run = program_of(&t);
    assert!(
        matches!(run.outcome, Outcome::Unresolved { step: 1, .. }),
        "{run:?}"
    );
    assert!(
        t.rounds[0].assessment.as_ref().unwrap().passed,
        "{:?}",
        t.rounds[0]
    );
    assert!(t.abstained, "{:?}", t.stop);
    let a = t.abstention.clone().unwrap();
    assert_eq!(a.by, AbstainedBy::Program);
    assert!(
        a.reason
            .starts_with("the answer is a bare yes/no, and step 1 of the program"),
        "{}",
        a.reason
    );
    assert_eq!(t.short_answer, ABSTAINED_SHORT);
    assert_eq!(t.graph.events.last().unwrap().node, "decide");

    let (answering, _) = agent_with(script(), None, config(Abstain::Off));
    let t = answering.ask(&ask).await.unwrap();
    assert!(!t.abstained && t.abstention.is_none());
    assert_eq!(t.short_answer, "Yes");
}

/// Over an index, an answer the monitor passes by less than `unsettled_margin` while the
/// program stopped at a step: metarag declines (the step is the sign the answer was
/// written without its fact). The monitor here weighs nothing, so its confidence is 0.5
/// whatever the run: with the gate at 0.45 the pass is thin and the run declines; at 0.35
/// the pass is clear and the same run answers, as it does with the margin set to 0 or
/// declining off.
#[tokio::test]
async fn a_thin_pass_over_an_unresolved_program_is_declined_over_an_index() {
    let dir = tempfile::tempdir().unwrap();
    let retriever = index(dir.path(), &team_docs()).await;
    let q = "How long is the on-call rotation of the team that runs the search service?";
    let plan = serde_json::json!({"about": ["search service"], "chain": ["team"],
        "combine": "none", "options": [], "read": "on-call rotation length", "type": "quantity"});
    let run = |gate: f64, margin: f64, abstain: Abstain| {
        let retriever = retriever.clone();
        let plan = plan.to_string();
        async move {
            let llm = writer("one week").on(&[PLAN], plan).on(
                &[&asks("team", "search service")],
                read("The search team runs the search service.", "search team", 1),
            );
            let monitor = serde_json::json!({"bias": 0.0, "threshold": gate, "weights": {}});
            let (agent, _) = agent_with_metarag(
                llm,
                Some(retriever),
                AgentConfig {
                    plan_with_llm: false,
                    max_rounds: 0,
                    abstain,
                    ..AgentConfig::default()
                },
                serde_json::json!({"samples": 2, "monitor": monitor, "monitor_open": monitor,
                    "unsettled_margin": margin}),
            );
            agent.ask(&Ask::new(q, "metarag")).await.unwrap()
        }
    };
    let t = run(0.45, 0.1, Abstain::Below(0.0)).await;
    // The quote is no document's sentence: step 1 does not ground.
    assert!(
        matches!(program_of(&t).outcome, Outcome::Unresolved { step: 1, .. }),
        "{:?}",
        program_of(&t)
    );
    let a = t.rounds[0].assessment.as_ref().unwrap();
    assert!(a.passed && (a.confidence - 0.5).abs() < 1e-9, "{a:?}");
    assert!(t.abstained, "{:?}", t.stop);
    let why = t.abstention.clone().unwrap();
    assert_eq!(why.by, AbstainedBy::Program);
    assert!(
        why.reason
            .starts_with("step 1 of the program did not resolve")
            && why.reason.contains("confidence 0.50 < 0.55"),
        "{}",
        why.reason
    );
    assert_eq!(t.short_answer, ABSTAINED_SHORT);

    let t = run(0.35, 0.1, Abstain::Below(0.0)).await;
    assert!(!t.abstained, "{:?}", t.abstention);
    assert_eq!(t.short_answer, "one week");
    // The margin is a setting: at 0 the check is off.
    let t = run(0.45, 0.0, Abstain::Below(0.0)).await;
    assert!(!t.abstained, "{:?}", t.abstention);
    let t = run(0.45, 0.1, Abstain::Off).await;
    assert!(!t.abstained && t.abstention.is_none());
    assert_eq!(t.short_answer, "one week");
}

/// Team documents, not Wikipedia: a tool the question names that no document mentions.
fn team_docs() -> Vec<(String, String)> {
    [
        (
            "billing service",
            "The billing service retries a failed refund five times before it gives up.",
        ),
        (
            "search service",
            "The search service daemon reloads its index every ten minutes.",
        ),
        (
            "on-call",
            "The billing team's on-call rotation lasts one week.",
        ),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect()
}

/// A question about something no document names ("the frobnik daemon"): metarag declines
/// before it writes, whatever the model would have said, and the trace names the
/// subject. With declining off, the same run answers (the writer's answer), the subject
/// still recorded as unmentioned. A subject the documents do name is answered.
#[tokio::test]
async fn a_subject_no_document_mentions_makes_metarag_decline_before_writing() {
    let dir = tempfile::tempdir().unwrap();
    let retriever = index(dir.path(), &team_docs()).await;
    let q = "How many times does the frobnik daemon retry a failed refund?";
    let plan = serde_json::json!({"about": ["frobnik daemon"], "chain": [], "combine": "none",
        "options": [], "read": "retry count", "type": "quantity"});
    let config = |abstain| AgentConfig {
        plan_with_llm: false,
        max_rounds: 0,
        abstain,
        ..AgentConfig::default()
    };
    let (agent, llm) = agent_with(
        writer("5").on(&[PLAN], plan.to_string()),
        Some(retriever.clone()),
        config(Abstain::Below(0.0)),
    );
    let t = agent.ask(&Ask::new(q, "metarag")).await.unwrap();
    assert!(t.abstained, "{:?}", t.stop);
    let a = t.abstention.clone().unwrap();
    assert_eq!(a.by, AbstainedBy::Unmentioned);
    assert!(a.reason.contains("\"frobnik daemon\""), "{}", a.reason);
    // The word search that found no document naming it is in the trace, adding nothing.
    let mention = t
        .retrievals
        .iter()
        .find(|r| r.reason == RetrievalReason::Mention)
        .expect("the mention search is recorded");
    assert_eq!(
        (mention.query.as_str(), mention.added),
        ("frobnik daemon", 0)
    );
    assert!(
        mention.rerank.contains("no hit writes it"),
        "{}",
        mention.rerank
    );
    assert_eq!(t.short_answer, ABSTAINED_SHORT);
    assert!(t.answer.starts_with(ABSTAINED_ANSWER), "{}", t.answer);
    assert_eq!(llm.hits(&[WRITE]), 0);
    assert_eq!(
        program_of(&t).unmentioned.as_deref(),
        Some("frobnik daemon")
    );

    let (answering, _) = agent_with(
        writer("5").on(&[PLAN], plan.to_string()),
        Some(retriever.clone()),
        config(Abstain::Off),
    );
    let t = answering.ask(&Ask::new(q, "metarag")).await.unwrap();
    assert!(!t.abstained);
    assert_eq!(t.short_answer, "5");
    assert_eq!(
        program_of(&t).unmentioned.as_deref(),
        Some("frobnik daemon")
    );

    // The billing service is named by a document: no decline on that ground.
    let plan = serde_json::json!({"about": ["billing service"], "chain": [], "combine": "none",
        "options": [], "read": "retry count", "type": "quantity"});
    let (known, _) = agent_with(
        writer("5").on(&[PLAN], plan.to_string()),
        Some(retriever),
        config(Abstain::Below(0.0)),
    );
    let t = known
        .ask(&Ask::new(
            "How many times does the billing service retry a failed refund?",
            "metarag",
        ))
        .await
        .unwrap();
    assert_eq!(program_of(&t).unmentioned, None);
    assert_ne!(t.abstention.map(|a| a.by), Some(AbstainedBy::Unmentioned));
}

/// A writer that cites whichever source is titled `title`, by its number, with samples
/// that disagree (so the monitor does not pass the answer).
fn citing(title: &str, short: &str) -> ScriptedLlm {
    let mut llm = ScriptedLlm::new();
    for n in 1..=6 {
        llm = llm.on(
            &[WRITE, &format!("[{n}] {title}\n")],
            serde_json::json!({"answer": format!("{short} [{n}]."), "short_answer": short})
                .to_string(),
        );
    }
    llm.on_seq(
        &[SAMPLE],
        &[
            r#"{"short_answer": "every hour"}"#.to_string(),
            r#"{"short_answer": "never"}"#.to_string(),
        ],
    )
    .on(&[CLOSED], "unknown")
}

/// An answer about the one thing the question asks of, cited only to a page about
/// something else (a team's log-rotation page answering for the search service), that
/// the monitor does not pass: metarag declines and names the subject. The same run cited
/// to the subject's own page answers, and so does the first with declining off.
#[tokio::test]
async fn an_answer_cited_only_to_pages_about_something_else_makes_metarag_decline() {
    let dir = tempfile::tempdir().unwrap();
    let docs: Vec<(String, String)> = [
        (
            "log rotation",
            "Application logs are rotated every Sunday night and kept for four weeks.",
        ),
        (
            "search service",
            "The search service daemon reloads its index every ten minutes.",
        ),
        (
            "billing service",
            "The billing service retries a failed refund five times before it gives up.",
        ),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    let retriever = index(dir.path(), &docs).await;
    let plan = |read: &str| {
        serde_json::json!({"about": ["search service"], "chain": [], "combine": "none",
            "options": [], "read": read, "type": "text"})
        .to_string()
    };
    let config = |abstain| AgentConfig {
        plan_with_llm: false,
        max_rounds: 0,
        abstain,
        ..AgentConfig::default()
    };
    let q = "How often does the search service rotate its logs?";
    let (agent, _) = agent_with(
        citing("log rotation", "every Sunday night").on(&[PLAN], plan("log rotation")),
        Some(retriever.clone()),
        config(Abstain::Below(0.0)),
    );
    let t = agent.ask(&Ask::new(q, "metarag")).await.unwrap();
    assert_eq!(
        program_of(&t).subject.as_deref(),
        Some("search service"),
        "{:?}",
        t.records
    );
    assert!(!t.rounds[0].assessment.as_ref().unwrap().passed);
    assert!(t.abstained, "{:?}", t.stop);
    let a = t.abstention.clone().unwrap();
    assert_eq!(a.by, AbstainedBy::OffSubject);
    assert!(a.reason.contains("\"search service\""), "{}", a.reason);
    assert!(
        a.withheld
            .as_deref()
            .is_some_and(|w| w.starts_with("every Sunday night [")),
        "{a:?}"
    );
    assert!(matches!(&t.stop, StopReason::Done(m) if m.starts_with("abstained (off_subject)")));

    let (answering, _) = agent_with(
        citing("log rotation", "every Sunday night").on(&[PLAN], plan("log rotation")),
        Some(retriever.clone()),
        config(Abstain::Off),
    );
    let t = answering.ask(&Ask::new(q, "metarag")).await.unwrap();
    assert!(!t.abstained);
    assert_eq!(t.short_answer, "every Sunday night");

    // Cited to the search service's own page: about its subject, so no decline on that
    // ground (the monitor's confidence is over the threshold of 0).
    let (own, _) = agent_with(
        citing("search service", "every ten minutes").on(&[PLAN], plan("index reload interval")),
        Some(retriever),
        config(Abstain::Below(0.0)),
    );
    let t = own
        .ask(&Ask::new(
            "How often does the search service reload its index?",
            "metarag",
        ))
        .await
        .unwrap();
    assert!(!t.abstained, "{:?}", t.abstention);
    assert_eq!(t.short_answer, "every ten minutes");
}

/// An answer that cites no source and that no source supports (nothing to attribute in
/// code), which the monitor does not pass: metarag declines; a cited answer in the same
/// run does not decline on that ground, nor does a bare "yes".
#[tokio::test]
async fn an_answer_no_source_supports_makes_metarag_decline() {
    let dir = tempfile::tempdir().unwrap();
    let retriever = index(dir.path(), &team_docs()).await;
    let plan = serde_json::json!({"about": ["billing service"], "chain": [],
        "combine": "none", "options": [], "read": "cache lifetime", "type": "quantity"});
    let config = AgentConfig {
        plan_with_llm: false,
        max_rounds: 0,
        abstain: Abstain::Below(0.0),
        ..AgentConfig::default()
    };
    let script = |answer: &str, short: &str| {
        ScriptedLlm::new()
            .on(&[PLAN], plan.to_string())
            .on(
                &[WRITE],
                serde_json::json!({"answer": answer, "short_answer": short}).to_string(),
            )
            .on_seq(
                &[SAMPLE],
                &[
                    r#"{"short_answer": "an hour"}"#.to_string(),
                    r#"{"short_answer": "never"}"#.to_string(),
                ],
            )
            .on(&[CLOSED], "unknown")
    };
    let q = "How long does the billing service keep a cached invoice?";
    let (agent, _) = agent_with(
        script(
            "The billing service keeps a cached invoice for 30 seconds.",
            "30 seconds",
        ),
        Some(retriever.clone()),
        config.clone(),
    );
    let t = agent.ask(&Ask::new(q, "metarag")).await.unwrap();
    assert!(!t.rounds[0].assessment.as_ref().unwrap().passed);
    assert_eq!(
        t.abstention.as_ref().map(|a| a.by),
        Some(AbstainedBy::Uncited),
        "{:?} / {:?}",
        t.stop,
        t.rounds[0].answer
    );
    // Cited (to whichever source is first), it is not declined on that ground.
    let (cited, _) = agent_with(
        script("30 seconds [1].", "30 seconds"),
        Some(retriever),
        config,
    );
    let t = cited.ask(&Ask::new(q, "metarag")).await.unwrap();
    assert_ne!(t.abstention.map(|a| a.by), Some(AbstainedBy::Uncited));
}
