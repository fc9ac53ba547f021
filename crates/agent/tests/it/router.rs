//! The LLM intent classifier's branches on the scripted model.

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
