//! Declining to answer (`[agent] abstain`): standard RAG only through its writer, metarag
//! also from its monitor; and nothing declines when it is off. The program's decline is in
//! `program.rs`, beside its other unresolved runs.

use crate::context;
use metarag_agent::{
    ABSTAINED_ANSWER, ABSTAINED_SHORT, Abstain, AbstainedBy, Agent, AgentConfig, Ask, Registry,
    StrategySections,
};
use metarag_core::DynLlm;
use metarag_testkit::ScriptedLlm;
use std::sync::Arc;

const WRITE: &str = "Answer the question using the sources. After every fact";
const SAMPLE: &str = "with the answer alone";
const CLOSED: &str = "Answer from your own knowledge with only the answer itself";
const DECLINE: &str = "If the sources do not state the answer, say so";

const TEAM_DOCS: [(&str, &str); 2] = [
    (
        "Billing service",
        "The billing service publishes invoices to the ledger topic. Its on-call rotation lasts one week.",
    ),
    (
        "Search service",
        "The search service indexes product pages every ten minutes.",
    ),
];

fn agent(llm: ScriptedLlm, abstain: Abstain) -> (Agent, Arc<ScriptedLlm>) {
    let llm = Arc::new(llm);
    let dynllm: Arc<dyn DynLlm> = llm.clone();
    let mut sections = StrategySections::new();
    // No program: these runs are about the writer and the monitor.
    sections.insert(
        "metarag".into(),
        serde_json::json!({"samples": 2, "program": false}),
    );
    let agent = Agent::builder(dynllm)
        .registry(Registry::builtin_with(&sections).unwrap())
        .config(AgentConfig {
            plan_with_llm: false,
            max_rounds: 0,
            abstain,
            ..AgentConfig::default()
        })
        .build()
        .unwrap();
    (agent, llm)
}

const QUESTION: &str = "Which message queue does the billing service publish refunds to?";

#[tokio::test]
async fn standard_declines_only_when_its_writer_says_the_sources_do_not_answer() {
    let refusal = r#"{"answer": "The sources do not say where refunds go; billing publishes invoices to the ledger topic [1].", "short_answer": "unknown"}"#;
    let (a, llm) = agent(ScriptedLlm::new().on(&[WRITE], refusal), Abstain::default());
    let t = a
        .ask(&Ask::new(QUESTION, "standard").with_context(context(&TEAM_DOCS)))
        .await
        .unwrap();
    assert!(crate::last_prompt(&llm, WRITE).contains(DECLINE));
    assert!(t.abstained);
    let why = t.abstention.unwrap();
    assert_eq!(why.by, AbstainedBy::Writer);
    assert_eq!(why.withheld, None);
    // The writer's own words stay: they say what the sources do state.
    assert!(
        t.answer
            .starts_with("The sources do not say where refunds go")
    );

    // An answer that answers beside an "unknown" short answer is not a decline: the
    // decline is the answer's to make.
    for (swapped, short) in [
        (
            r#"{"answer": "Refunds go to the ledger topic [1].", "short_answer": "unknown"}"#,
            "Refunds go to the ledger topic.",
        ),
        (r#"{"answer": "Yes", "short_answer": "unknown"}"#, "Yes"),
    ] {
        let (a, _) = agent(ScriptedLlm::new().on(&[WRITE], swapped), Abstain::default());
        let t = a
            .ask(&Ask::new(QUESTION, "standard").with_context(context(&TEAM_DOCS)))
            .await
            .unwrap();
        assert!(!t.abstained, "{swapped}");
        assert_eq!(t.short_answer, short);
    }

    // A writer that answers is not overruled: standard has no monitor.
    let guess = r#"{"answer": "Refunds go to Kafka [1].", "short_answer": "Kafka"}"#;
    let (a, _) = agent(ScriptedLlm::new().on(&[WRITE], guess), Abstain::Below(1.0));
    let t = a
        .ask(&Ask::new(QUESTION, "standard").with_context(context(&TEAM_DOCS)))
        .await
        .unwrap();
    assert!(!t.abstained);
    assert_eq!(t.short_answer, "Kafka");

    // Off, the writer is not offered the choice, and an "unknown" is just an answer.
    let (a, llm) = agent(ScriptedLlm::new().on(&[WRITE], refusal), Abstain::Off);
    let t = a
        .ask(&Ask::new(QUESTION, "standard").with_context(context(&TEAM_DOCS)))
        .await
        .unwrap();
    assert!(!crate::last_prompt(&llm, WRITE).contains(DECLINE));
    assert!(!t.abstained && t.abstention.is_none());
}

#[tokio::test]
async fn metarag_declines_an_answer_its_monitor_trusts_less_than_the_abstain_threshold() {
    let script = || {
        ScriptedLlm::new()
            .on(
                &[WRITE],
                r#"{"answer": "Billing publishes refunds to Kafka [1].", "short_answer": "Kafka"}"#,
            )
            .on_seq(
                &[SAMPLE],
                &[
                    r#"{"short_answer": "the ledger topic"}"#,
                    r#"{"short_answer": "RabbitMQ"}"#,
                ],
            )
            .on(&[CLOSED], "unknown")
    };
    let ask = Ask::new(QUESTION, "metarag").with_context(context(&TEAM_DOCS));
    let (a, _) = agent(script(), Abstain::Below(1.0));
    let t = a.ask(&ask).await.unwrap();
    let confidence = t.rounds[0].assessment.as_ref().unwrap().confidence;
    assert!(t.abstained, "confidence {confidence}");
    let why = t.abstention.clone().unwrap();
    assert_eq!(why.by, AbstainedBy::Monitor);
    assert!(why.reason.contains("under abstain 1.00"), "{}", why.reason);
    assert_eq!(
        why.withheld.as_deref(),
        Some("Billing publishes refunds to Kafka [1].")
    );
    assert_eq!(t.answer, ABSTAINED_ANSWER);
    assert_eq!(t.short_answer, ABSTAINED_SHORT);
    // The held-back round is still the trace's record of what was written.
    assert_eq!(t.rounds[0].short_answer, "Kafka");

    // Under a threshold of 0 only the program's and the writer's declines remain.
    let (a, _) = agent(script(), Abstain::Below(0.0));
    let t = a.ask(&ask).await.unwrap();
    assert!(!t.abstained);
    assert_eq!(t.short_answer, "Kafka");
    let (a, _) = agent(script(), Abstain::Off);
    assert!(!a.ask(&ask).await.unwrap().abstained);
}

#[test]
fn the_setting_reads_off_on_or_a_confidence_and_names_a_bad_value() {
    let read = |v: &str| toml::from_str::<AgentConfig>(&format!("abstain = {v}\n"));
    assert_eq!(read("\"off\"").unwrap().abstain, Abstain::Off);
    assert_eq!(
        read("\"on\"").unwrap().abstain.threshold(),
        Some(Abstain::DEFAULT)
    );
    assert_eq!(read("0.4").unwrap().abstain, Abstain::Below(0.4));
    // As an environment variable writes it.
    assert_eq!(read("\"0.4\"").unwrap().abstain, Abstain::Below(0.4));
    let e = read("\"sometimes\"").unwrap_err().to_string();
    assert!(e.contains("sometimes"), "{e}");
    let e = read("1.5").unwrap().validate().unwrap_err().to_string();
    assert!(e.contains("`abstain`"), "{e}");
    // The default written out reads back equal (records resume).
    let json = serde_json::to_string(&AgentConfig::default()).unwrap();
    let back: AgentConfig = serde_json::from_str(&json).unwrap();
    assert_eq!(back, AgentConfig::default());
}
