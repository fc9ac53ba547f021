//! A scoped ask: every search of the run is limited to the documents the scope matches.

use crate::branches::{GOOD, JAWS, Q, SPIELBERG, WRITE};
use metarag_agent::{Agent, Ask};
use metarag_core::{DynLlm, Filter};
use metarag_testkit::ScriptedLlm;
use std::sync::Arc;

#[tokio::test(flavor = "multi_thread")]
async fn every_search_of_a_scoped_ask_stays_in_its_scope() {
    let dir = tempfile::tempdir().unwrap();
    let records = [
        serde_json::json!({"doc_id": "jaws", "title": JAWS.0, "text": JAWS.1, "metadata": {"shelf": "films"}}),
        serde_json::json!({"doc_id": "spielberg", "title": SPIELBERG.0, "text": SPIELBERG.1, "metadata": {"shelf": "people"}}),
    ];
    let retriever = crate::index_records(dir.path(), &records).await;
    let llm: Arc<dyn DynLlm> = Arc::new(ScriptedLlm::new().on(&[WRITE], GOOD));
    let agent = Agent::builder(llm).retriever(retriever).build().unwrap();
    let docs = |t: &metarag_agent::Trace| {
        let mut d: Vec<String> = t.sources.iter().map(|s| s.passage.doc.clone()).collect();
        d.sort();
        d.dedup();
        d
    };

    // Unscoped, both documents are sources.
    let t = agent.ask(&Ask::new(Q, "standard")).await.unwrap();
    assert_eq!(docs(&t), ["jaws", "spielberg"]);
    assert!(t.scope.is_empty());

    // Scoped to one shelf: only its document, and the trace says what the scope was.
    let films = Filter {
        metadata: [("shelf".to_string(), serde_json::json!("films"))].into(),
        ..Default::default()
    };
    let t = agent
        .ask(&Ask::new(Q, "standard").with_scope(films.clone()))
        .await
        .unwrap();
    assert_eq!(docs(&t), ["jaws"]);
    assert_eq!(t.scope, films);
    let json = serde_json::to_value(&t).unwrap();
    assert_eq!(json["scope"]["metadata"]["shelf"], "films");

    // A scope nothing matches: no search finds anything, the run still ends cleanly.
    let nowhere = Filter {
        doc_ids: vec![metarag_core::DocId::new("no-such-doc").unwrap()],
        ..Default::default()
    };
    let t = agent
        .ask(&Ask::new(Q, "standard").with_scope(nowhere))
        .await
        .unwrap();
    assert!(t.sources.is_empty(), "{:?}", t.sources);

    // A scope that is not a valid filter is the caller's error.
    let bad = Filter {
        metadata: [("shelf".to_string(), serde_json::json!(["films"]))].into(),
        ..Default::default()
    };
    let err = agent
        .ask(&Ask::new(Q, "standard").with_scope(bad))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("filter.metadata.shelf"), "{err}");
}

/// A run held to collections searches only them, and every model call of the run carries
/// them, so that the call cache keys each collection's completions apart.
#[tokio::test(flavor = "multi_thread")]
async fn a_run_held_to_collections_searches_them_and_keys_its_calls_by_them() {
    let dir = tempfile::tempdir().unwrap();
    let records = [
        serde_json::json!({"doc_id": "jaws", "title": JAWS.0, "text": JAWS.1}),
        serde_json::json!({"doc_id": "spielberg", "title": SPIELBERG.0, "text": SPIELBERG.1}),
    ];
    let retriever = crate::index_records(dir.path(), &records).await;
    let scripted = Arc::new(ScriptedLlm::new().on(&[WRITE], GOOD));
    let llm: Arc<dyn DynLlm> = scripted.clone();
    let agent = Agent::builder(llm).retriever(retriever).build().unwrap();
    let held = |c: &str| Filter {
        collections: vec![metarag_core::CollectionId::new(c).unwrap()],
        ..Default::default()
    };
    // The records are in the default collection.
    let t = agent
        .ask(&Ask::new(Q, "standard").with_scope(held("default")))
        .await
        .unwrap();
    assert!(!t.sources.is_empty());
    let calls = scripted.calls();
    assert!(!calls.is_empty());
    assert!(
        calls
            .iter()
            .all(|c| c.collections == held("default").collections),
        "{:?}",
        calls.iter().map(|c| &c.collections).collect::<Vec<_>>()
    );
    // Another collection holds nothing of them.
    let t = agent
        .ask(&Ask::new(Q, "standard").with_scope(held("legal")))
        .await
        .unwrap();
    assert!(t.sources.is_empty(), "{:?}", t.sources);
}

/// A retriever that records the documents of every hit it returns and the filter of
/// every search, over the real one.
struct Spy {
    inner: Arc<dyn metarag_core::DynRetriever>,
    seen: std::sync::Mutex<Vec<(Filter, Vec<String>)>>,
}

impl metarag_core::Retriever for Spy {
    async fn search(
        &self,
        request: &metarag_core::SearchRequest,
    ) -> metarag_core::Result<Vec<metarag_core::Hit>> {
        let hits = self.inner.search_dyn(request).await?;
        let docs = hits.iter().map(|h| h.chunk.doc_id.to_string()).collect();
        self.seen
            .lock()
            .unwrap()
            .push((request.filter.clone(), docs));
        Ok(hits)
    }
}

/// Every strategy, with every search it makes (first reads, retries, follow-up hops,
/// remediation, planners' branches), stays inside the ask's scope: the scope is applied
/// where the agent searches, not by each strategy.
#[tokio::test(flavor = "multi_thread")]
async fn every_strategy_searches_only_inside_the_scope() {
    let dir = tempfile::tempdir().unwrap();
    let records = [
        serde_json::json!({"doc_id": "jaws", "title": JAWS.0, "text": JAWS.1, "metadata": {"shelf": "films"}}),
        serde_json::json!({"doc_id": "spielberg", "title": SPIELBERG.0, "text": SPIELBERG.1, "metadata": {"shelf": "people"}}),
    ];
    let spy = Arc::new(Spy {
        inner: crate::index_records(dir.path(), &records).await,
        seen: Default::default(),
    });
    // The writer's good answer, and whatever else each strategy asks for answered by it
    // too: judges and planners that cannot parse it take their fallbacks, which is
    // where the extra searches (retries, remediation) come from.
    let llm: Arc<dyn DynLlm> = Arc::new(ScriptedLlm::new().otherwise(GOOD));
    let agent = Agent::builder(llm)
        .retriever(spy.clone() as Arc<dyn metarag_core::DynRetriever>)
        .build()
        .unwrap();
    let films = Filter {
        metadata: [("shelf".to_string(), serde_json::json!("films"))].into(),
        ..Default::default()
    };
    let names: Vec<&str> = agent.registry().names();
    assert!(names.len() >= 10, "{names:?}");
    for name in names {
        spy.seen.lock().unwrap().clear();
        let t = agent
            .ask(&Ask::new(Q, name).with_scope(films.clone()))
            .await;
        let t = t.unwrap_or_else(|e| panic!("{name}: {e}"));
        let seen = std::mem::take(&mut *spy.seen.lock().unwrap());
        for (filter, docs) in &seen {
            // A strategy may narrow a search further (to one document, say), never widen it.
            assert_eq!(
                filter.metadata, films.metadata,
                "{name}: a search left the scope"
            );
            assert!(docs.iter().all(|d| d == "jaws"), "{name}: {docs:?}");
        }
        assert!(
            t.sources.iter().all(|s| s.passage.doc == "jaws"),
            "{name}: {:?}",
            t.sources
        );
        assert_eq!(t.scope, films, "{name}");
    }
}
