//! The store conformance suite, one list of checks run against both stores (the embedded
//! index and Postgres), plus Postgres's own: migrations, the embedder check, a batch cut
//! off mid-write, and hybrid search over both with the real embedder.

use metarag_core::RetrieverKind;
use metarag_core::{
    ChunkDraft, CollectionId, DocFormat, DocId, Document, DocumentUpdate, Embedder, Fault, Filter,
    SearchRequest, Store, StoreRead,
};
use metarag_index::{EmbeddedIndex, IndexConfig};
use metarag_pgstore::{Error, PgConfig, PgStore, SqlFusion};
use metarag_retrieve::{HybridRetriever, RankedList, RetrievalConfig, reciprocal_rank_fusion};
use metarag_testkit::PgServer;

const DIM: usize = 8;

/// A unit vector pointing mostly along axis `axis`.
fn vector(axis: usize) -> Vec<f32> {
    let mut v = [0.05; DIM];
    v[axis % DIM] = 1.0;
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter().map(|x| x / n).collect()
}

fn update(id: &str, title: &str, texts: &[&str], axis: usize, date: Option<i64>) -> DocumentUpdate {
    update_with(id, title, texts, date, |i| vector(axis + i))
}

fn update_with(
    id: &str,
    title: &str,
    texts: &[&str],
    date: Option<i64>,
    vec_of: impl Fn(usize) -> Vec<f32>,
) -> DocumentUpdate {
    let mut offset = 0;
    let chunks = texts
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let draft = ChunkDraft {
                ordinal: i as u32,
                section: vec!["Intro".into()],
                pages: (i == 0).then_some((1, 1)),
                bytes: offset..offset + t.len(),
                token_count: t.split_whitespace().count() as u32 + 2,
                text: t.to_string(),
            };
            offset += t.len() + 1;
            (draft, vec_of(i))
        })
        .collect();
    DocumentUpdate {
        document: Document {
            id: DocId::new(id).unwrap(),
            title: title.into(),
            source: format!("/{id}"),
            format: DocFormat::Text,
            content_hash: format!("hash-{}", texts.join("|").len()),
            bytes: 10,
            date,
            ingested_at: 0,
            chunk_count: texts.len() as u32,
            metadata: Default::default(),
            collection: Default::default(),
            text: Some(texts.join("\n")),
        },
        chunks,
        staged: None,
    }
}

fn corpus() -> Vec<DocumentUpdate> {
    let mut docs = vec![
        update(
            "a",
            "Panama Canal",
            &["The locks were designed by Henry Goldmark."],
            0,
            Some(1_000),
        ),
        update(
            "b",
            "Suez Canal",
            &["A sea-level canal without locks: it has no gates."],
            4,
            Some(2_000),
        ),
        update(
            "c",
            "Hoover Dam",
            &["An arch-gravity dam on the Colorado River."],
            6,
            None,
        ),
    ];
    let metadata = [
        serde_json::json!({"team": "ops", "tags": ["canal", "history"], "year": 1914}),
        serde_json::json!({"team": "docs", "year": 1869.0}),
        serde_json::json!({"team": "ops", "draft": true}),
    ];
    for (d, m) in docs.iter_mut().zip(metadata) {
        d.document.metadata = m.as_object().unwrap().clone();
    }
    docs
}

async fn doc_of<S: StoreRead>(s: &S, id: metarag_core::ChunkId) -> String {
    s.chunks(&[id]).await.unwrap()[0].doc_id.to_string()
}

/// The checks every store passes.
async fn conformance<S: Store>(s: &S, name: &str) {
    s.apply(corpus(), vec![]).await.unwrap();
    let stats = s.stats().await.unwrap();
    assert_eq!((stats.documents, stats.chunks), (3, 3), "{name}");

    // Ranking: stemming and case folding, a title match, and cosine.
    let hits = s
        .lexical("Who was designing the LOCKS?", 3, &Filter::default())
        .await
        .unwrap();
    assert_eq!(doc_of(s, hits[0].id).await, "a", "{name}");
    // Inverse document frequency: "colorado" (one chunk) outweighs "locks" (two).
    let hits = s
        .lexical("locks Colorado", 3, &Filter::default())
        .await
        .unwrap();
    assert_eq!(doc_of(s, hits[0].id).await, "c", "{name}: rare term first");
    assert_eq!(hits.len(), 3, "{name}");
    let hits = s.lexical("hoover", 3, &Filter::default()).await.unwrap();
    assert_eq!(doc_of(s, hits[0].id).await, "c", "{name}: title match");
    assert!(
        s.lexical("title:(\"locks\" OR", 3, &Filter::default())
            .await
            .is_ok(),
        "{name}: query syntax is plain text"
    );
    assert!(
        s.lexical("the of and", 3, &Filter::default())
            .await
            .unwrap()
            .is_empty(),
        "{name}: stop words alone match nothing"
    );
    let near = s.nearest(&vector(6), 2, &Filter::default()).await.unwrap();
    assert_eq!(doc_of(s, near[0].id).await, "c", "{name}");
    assert!(
        (near[0].score - 1.0).abs() < 1e-4,
        "{name}: {}",
        near[0].score
    );
    assert!(near[0].score > near[1].score, "{name}");

    // Filters restrict both rankings.
    let only_b = Filter {
        doc_ids: vec![DocId::new("b").unwrap()],
        ..Default::default()
    };
    let hits = s.lexical("locks", 3, &only_b).await.unwrap();
    assert_eq!(hits.len(), 1, "{name}");
    assert_eq!(doc_of(s, hits[0].id).await, "b", "{name}");
    let near = s.nearest(&vector(0), 3, &only_b).await.unwrap();
    assert_eq!(near.len(), 1, "{name}");
    let title = Filter {
        title_contains: Some("CANAL".into()),
        ..Default::default()
    };
    assert_eq!(
        s.nearest(&vector(6), 3, &title).await.unwrap().len(),
        2,
        "{name}"
    );
    let dated = Filter {
        date_from: Some(1_500),
        date_to: Some(3_000),
        ..Default::default()
    };
    let near = s.nearest(&vector(0), 3, &dated).await.unwrap();
    assert_eq!(near.len(), 1, "{name}");
    assert_eq!(doc_of(s, near[0].id).await, "b", "{name}");

    // Metadata filters: a value, a list holding it, numbers by value, booleans, types
    // kept apart, every condition at once.
    let meta = |pairs: &[(&str, serde_json::Value)]| Filter {
        metadata: pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
        ..Default::default()
    };
    let docs_of = async |f: &Filter| {
        let mut out = Vec::new();
        for h in s.nearest(&vector(0), 3, f).await.unwrap() {
            out.push(doc_of(s, h.id).await);
        }
        out.sort();
        out
    };
    use serde_json::json;
    for (filter, want) in [
        (meta(&[("team", json!("ops"))]), vec!["a", "c"]),
        (meta(&[("tags", json!("canal"))]), vec!["a"]),
        (meta(&[("year", json!(1869))]), vec!["b"]),
        (meta(&[("year", json!(1914.0))]), vec!["a"]),
        (meta(&[("draft", json!(true))]), vec!["c"]),
        (meta(&[("draft", json!(false))]), vec![]),
        (
            meta(&[("team", json!("ops")), ("year", json!(1914))]),
            vec!["a"],
        ),
        (meta(&[("year", json!("1914"))]), vec![]),
        (meta(&[("owner", json!("ops"))]), vec![]),
    ] {
        assert_eq!(
            docs_of(&filter).await,
            want,
            "{name}: {:?}",
            filter.metadata
        );
    }
    let hits = s
        .lexical("canal", 3, &meta(&[("team", json!("docs"))]))
        .await
        .unwrap();
    assert_eq!(hits.len(), 1, "{name}");
    assert_eq!(doc_of(s, hits[0].id).await, "b", "{name}");
    let err = s
        .nearest(&vector(0), 3, &meta(&[("tags", json!(["canal"]))]))
        .await
        .unwrap_err();
    assert_eq!(err.fault(), metarag_core::Fault::User, "{name}: {err}");
    assert!(
        err.to_string().contains("filter.metadata.tags"),
        "{name}: {err}"
    );
    let stored = s
        .document(&DocId::new("a").unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        stored.metadata["tags"],
        json!(["canal", "history"]),
        "{name}"
    );
    let listed = s.documents().await.unwrap();
    assert_eq!(listed[2].metadata["draft"], json!(true), "{name}");

    // Replacing a document replaces all its chunks; the old ones are gone.
    let old: Vec<_> = s
        .lexical("Goldmark", 3, &Filter::default())
        .await
        .unwrap()
        .into_iter()
        .map(|h| h.id)
        .collect();
    s.apply(
        vec![update(
            "a",
            "Panama Canal",
            &[
                "The canal opened in 1914.",
                "Its locks lift ships 26 metres.",
            ],
            1,
            Some(1_000),
        )],
        vec![],
    )
    .await
    .unwrap();
    assert!(s.chunks(&old).await.unwrap().is_empty(), "{name}");
    assert!(
        s.lexical("Goldmark", 3, &Filter::default())
            .await
            .unwrap()
            .is_empty(),
        "{name}"
    );
    let doc = s
        .document(&DocId::new("a").unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(doc.chunk_count, 2, "{name}");
    assert!(
        doc.metadata.is_empty(),
        "{name}: the old metadata went with it"
    );
    assert!(doc.text.unwrap().contains("1914"), "{name}");
    assert!(
        s.contains(&DocId::new("a").unwrap()).await.unwrap(),
        "{name}"
    );
    assert!(
        !s.contains(&DocId::new("nope").unwrap()).await.unwrap(),
        "{name}"
    );
    // A document's chunks, in order; none for an unknown document.
    let chunks = s.document_chunks(&DocId::new("a").unwrap()).await.unwrap();
    let texts: Vec<&str> = chunks.iter().map(|c| c.draft.text.as_str()).collect();
    assert_eq!(
        texts,
        [
            "The canal opened in 1914.",
            "Its locks lift ships 26 metres."
        ],
        "{name}"
    );
    assert!(chunks.iter().all(|c| c.doc_id.as_str() == "a"), "{name}");
    assert!(
        s.document_chunks(&DocId::new("nope").unwrap())
            .await
            .unwrap()
            .is_empty(),
        "{name}"
    );
    let hits = s
        .lexical("ships metres", 3, &Filter::default())
        .await
        .unwrap();
    let chunk = &s.chunks(&[hits[0].id]).await.unwrap()[0];
    assert_eq!(
        (
            chunk.draft.ordinal,
            chunk.draft.section.clone(),
            chunk.title.as_str()
        ),
        (1, vec!["Intro".to_string()], "Panama Canal"),
        "{name}"
    );

    // Removal; unknown ids are ignored.
    s.apply(
        vec![],
        vec![DocId::new("b").unwrap(), DocId::new("zz").unwrap()],
    )
    .await
    .unwrap();
    let ids: Vec<String> = s
        .documents()
        .await
        .unwrap()
        .into_iter()
        .map(|d| d.id.to_string())
        .collect();
    assert_eq!(ids, ["a", "c"], "{name}");
    assert!(
        s.document(&DocId::new("b").unwrap())
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(s.stats().await.unwrap().chunks, 3, "{name}");

    // A vector of the wrong length fails the whole batch; nothing stored changes.
    let bad = update_with("d", "Bad", &["x"], None, |_| vec![0.0; DIM + 1]);
    let err = s
        .apply(vec![update("e", "Good", &["fine"], 2, None), bad], vec![])
        .await
        .unwrap_err();
    assert_eq!(err.fault(), metarag_core::Fault::User, "{name}: {err}");
    assert_eq!(s.stats().await.unwrap().documents, 2, "{name}");
    let err = s
        .nearest(&[1.0; DIM + 2], 3, &Filter::default())
        .await
        .unwrap_err();
    assert_eq!(err.fault(), metarag_core::Fault::User, "{name}: {err}");

    // A staged write: two slices handed over first, invisible until the write that
    // claims them, which appends the chunks in hand after them.
    let large = DocId::new("large").unwrap();
    let slices = update(
        "large",
        "Large",
        &[
            "Ferries leave Pellmoor hourly.",
            "The harbour wall is old.",
            "Quarrying at Dunmere ended.",
        ],
        4,
        None,
    )
    .chunks;
    let stage = s.stage(None, &large, slices[..2].to_vec()).await.unwrap();
    let again = s
        .stage(Some(stage), &large, slices[2..].to_vec())
        .await
        .unwrap();
    assert_eq!(again, stage, "{name}");
    assert!(s.document(&large).await.unwrap().is_none(), "{name}");
    assert!(
        s.lexical("Dunmere", 3, &Filter::default())
            .await
            .unwrap()
            .is_empty(),
        "{name}"
    );
    let mut last = update("large", "Large", &["The lighthouse is white."], 7, None);
    last.chunks[0].0.ordinal = 3;
    last.staged = Some(stage);
    s.apply(vec![last], vec![]).await.unwrap();
    let texts: Vec<String> = s
        .document_chunks(&large)
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.draft.text)
        .collect();
    assert_eq!(
        texts,
        [
            "Ferries leave Pellmoor hourly.",
            "The harbour wall is old.",
            "Quarrying at Dunmere ended.",
            "The lighthouse is white."
        ],
        "{name}"
    );
    assert_eq!(
        s.document(&large).await.unwrap().unwrap().chunk_count,
        4,
        "{name}"
    );
    let hits = s.lexical("Dunmere", 3, &Filter::default()).await.unwrap();
    assert_eq!(hits.len(), 1, "{name}");
    // Its staged vector came through: the chunk is at distance zero from it (other
    // chunks may share the axis).
    let near = s.nearest(&vector(6), 5, &Filter::default()).await.unwrap();
    let own = near.iter().find(|h| h.id == hits[0].id);
    assert!(own.is_some_and(|h| h.score > 0.999), "{name}: {near:?}");
    assert_eq!(s.stats().await.unwrap().chunks, 7, "{name}");
    // A staged vector of the wrong length is refused at once, naming the document.
    let bad = update_with("large", "Large", &["x"], None, |_| vec![0.0; DIM - 1]).chunks;
    let err = s.stage(None, &large, bad).await.unwrap_err();
    assert_eq!(err.fault(), metarag_core::Fault::User, "{name}: {err}");
    assert!(err.to_string().contains("large"), "{name}: {err}");
    s.apply(vec![], vec![large]).await.unwrap();
}

/// Collections on every store: a filter keeps to them, a document id stays in one
/// collection, a rename moves its documents, and a delete takes one collection's documents
/// and nothing of another's.
async fn collections_conformance<S: Store>(s: &S, name: &str) {
    let col = |n: &str| CollectionId::new(n).unwrap();
    let into = |mut u: DocumentUpdate, c: &str| {
        u.document.collection = col(c);
        u
    };
    let only = |cs: &[&str]| Filter {
        collections: cs.iter().map(|c| col(c)).collect(),
        ..Default::default()
    };
    let mut docs = corpus().into_iter();
    let (a, b, c) = (
        docs.next().unwrap(),
        docs.next().unwrap(),
        docs.next().unwrap(),
    );
    let kiel = update(
        "d",
        "Kiel Canal",
        &["The Kiel Canal has locks at both ends."],
        1,
        None,
    );
    s.apply(
        vec![into(a, "hr"), into(b, "hr"), into(c, "ops"), kiel],
        vec![],
    )
    .await
    .unwrap();
    let listed = |cs: Vec<metarag_core::CollectionInfo>| -> Vec<(String, u64)> {
        cs.into_iter()
            .map(|c| (c.name.to_string(), c.documents))
            .collect()
    };
    assert_eq!(
        listed(s.collections().await.unwrap()),
        [("default".into(), 1), ("hr".into(), 2), ("ops".into(), 1)],
        "{name}"
    );
    // Both rankings keep to the collections asked for.
    let ids = |hits: Vec<metarag_core::ScoredChunk>| async move {
        let mut out = Vec::new();
        for h in hits {
            out.push(doc_of(s, h.id).await);
        }
        out.sort();
        out
    };
    let hr_locks = ids(s.lexical("locks canal", 5, &only(&["hr"])).await.unwrap()).await;
    assert_eq!(hr_locks, ["a", "b"], "{name}");
    assert!(
        s.lexical("locks", 5, &only(&["ops"]))
            .await
            .unwrap()
            .is_empty(),
        "{name}"
    );
    let ops_near = ids(s.nearest(&vector(0), 5, &only(&["ops"])).await.unwrap()).await;
    assert_eq!(ops_near, ["c"], "{name}");
    let both = ids(s
        .lexical("locks", 5, &only(&["hr", "default"]))
        .await
        .unwrap())
    .await;
    assert_eq!(both, ["a", "b", "d"], "{name}");
    let hr_before = (
        s.lexical("locks canal", 5, &only(&["hr"])).await.unwrap(),
        s.nearest(&vector(0), 5, &only(&["hr"])).await.unwrap(),
    );
    // A document id is one document: a write from another collection is refused, and the
    // stored one is untouched.
    let stolen = into(update("a", "Taken", &["Other words."], 2, None), "ops");
    let err = s.apply(vec![stolen], vec![]).await.unwrap_err();
    assert_eq!(err.fault(), Fault::User, "{name}: {err}");
    assert!(err.to_string().contains("hr"), "{name}: {err}");
    let a = DocId::new("a").unwrap();
    assert_eq!(s.document(&a).await.unwrap().unwrap().title, "Panama Canal");
    // An empty collection exists once.
    assert!(s.create_collection(&col("empty")).await.unwrap(), "{name}");
    assert!(!s.create_collection(&col("empty")).await.unwrap(), "{name}");
    // Rename: the documents move, the searches follow.
    s.rename_collection(&col("hr"), &col("people"))
        .await
        .unwrap();
    assert_eq!(
        listed(s.collections().await.unwrap()),
        [
            ("default".into(), 1),
            ("empty".into(), 0),
            ("ops".into(), 1),
            ("people".into(), 2)
        ],
        "{name}"
    );
    assert_eq!(
        s.document(&a).await.unwrap().unwrap().collection,
        col("people"),
        "{name}"
    );
    assert!(
        s.lexical("locks", 5, &only(&["hr"]))
            .await
            .unwrap()
            .is_empty()
    );
    for (from, to) in [
        ("people", "ops"),
        ("default", "x"),
        ("ops", "default"),
        ("nope", "y"),
    ] {
        let err = s.rename_collection(&col(from), &col(to)).await.unwrap_err();
        assert_eq!(err.fault(), Fault::User, "{name}: {from} -> {to}: {err}");
    }
    // Delete: one collection's documents go, the others' searches are what they were.
    assert_eq!(s.delete_collection(&col("ops")).await.unwrap(), 1, "{name}");
    assert!(
        s.document(&DocId::new("c").unwrap())
            .await
            .unwrap()
            .is_none(),
        "{name}"
    );
    assert!(
        s.nearest(&vector(6), 5, &only(&["ops"]))
            .await
            .unwrap()
            .is_empty(),
        "{name}"
    );
    let people_after = (
        s.lexical("locks canal", 5, &only(&["people"]))
            .await
            .unwrap(),
        s.nearest(&vector(0), 5, &only(&["people"])).await.unwrap(),
    );
    // The same chunks in the same order. (BM25 scores may move: the corpus statistics
    // are the whole store's, so a delete anywhere changes every term's weight a little.)
    let order = |(l, d): &(
        Vec<metarag_core::ScoredChunk>,
        Vec<metarag_core::ScoredChunk>,
    )| {
        (
            l.iter().map(|h| h.id).collect::<Vec<_>>(),
            d.iter().map(|h| h.id).collect::<Vec<_>>(),
        )
    };
    assert_eq!(
        order(&people_after),
        order(&hr_before),
        "{name}: another collection's delete changed nothing"
    );
    assert_eq!(
        people_after.1, hr_before.1,
        "{name}: dense scores unchanged"
    );
    assert_eq!(s.stats().await.unwrap().documents, 3, "{name}");
    for gone in ["ops", "default", "nope"] {
        let err = s.delete_collection(&col(gone)).await.unwrap_err();
        assert_eq!(err.fault(), Fault::User, "{name}: {gone}: {err}");
    }
    assert_eq!(
        s.delete_collection(&col("empty")).await.unwrap(),
        0,
        "{name}"
    );
    assert_eq!(
        listed(s.collections().await.unwrap()),
        [("default".into(), 1), ("people".into(), 2)],
        "{name}"
    );
}

/// The audit memory on every store: each version written and each removal leaves one
/// event in the same write, with the sections gained and lost; events follow their
/// collection's rename and go with its deletion, and are read by time, title and
/// collection, newest first.
async fn audit_conformance<S: Store>(s: &S, name: &str) {
    use metarag_core::{AuditEvent, AuditQuery};
    let col = |n: &str| CollectionId::new(n).unwrap();
    let into = |mut u: DocumentUpdate, c: &str, sections: &[&str]| {
        for (i, (draft, _)) in u.chunks.iter_mut().enumerate() {
            draft.section = vec![sections[i % sections.len()].to_string()];
        }
        u.document.collection = col(c);
        u
    };
    let read = |q: AuditQuery| async move { s.audit_events(&q).await.unwrap() };
    let all = || AuditQuery {
        limit: 50,
        ..Default::default()
    };
    let texts = ["Locks lift ships.", "Gates hold water."];
    s.apply(
        vec![
            into(
                update("a", "Panama Canal", &texts, 0, None),
                "hr",
                &["Locks"],
            ),
            into(update("b", "Hoover Dam", &texts, 2, None), "ops", &["Dam"]),
        ],
        vec![],
    )
    .await
    .unwrap();
    // An update, its chunks staged ahead of the write.
    let a = DocId::new("a").unwrap();
    let mut again = into(
        update("a", "Panama Canal", &texts, 0, None),
        "hr",
        &["Locks", "Gates"],
    );
    let chunks = std::mem::take(&mut again.chunks);
    again.staged = Some(s.stage(None, &a, chunks).await.unwrap());
    s.apply(vec![again], vec![]).await.unwrap();
    let kinds = |events: &[AuditEvent]| -> Vec<(String, String)> {
        events
            .iter()
            .map(|e| (e.kind.clone(), e.doc_id.clone()))
            .collect()
    };
    let events = read(all()).await;
    assert_eq!(
        kinds(&events),
        [
            ("updated".into(), "a".into()),
            ("added".into(), "b".into()),
            ("added".into(), "a".into())
        ],
        "{name}"
    );
    assert_eq!(events[0].collection, col("hr"), "{name}");
    assert_eq!(
        events[0].detail,
        serde_json::json!({"chunks": 2, "sections_added": ["Gates"], "sections_removed": []}),
        "{name}"
    );
    assert_eq!(
        events[2].detail,
        serde_json::json!({"chunks": 2, "sections": ["Locks"]}),
        "{name}"
    );
    // By title or id (case aside), by collection, by time.
    let titled = read(AuditQuery {
        title: Some("hoover".into()),
        ..all()
    })
    .await;
    assert_eq!(kinds(&titled), [("added".into(), "b".into())], "{name}");
    let ops = read(AuditQuery {
        collections: vec![col("ops")],
        ..all()
    })
    .await;
    assert_eq!(kinds(&ops), [("added".into(), "b".into())], "{name}");
    let at = events[0].at;
    assert!(
        read(AuditQuery {
            to: Some(at - 3600),
            ..all()
        })
        .await
        .is_empty(),
        "{name}"
    );
    assert_eq!(
        read(AuditQuery {
            from: Some(at - 3600),
            limit: 1,
            ..all()
        })
        .await
        .len(),
        1,
        "{name}"
    );
    // A removal, then a rename: the events follow the collection.
    s.apply(vec![], vec![a.clone()]).await.unwrap();
    s.rename_collection(&col("hr"), &col("people"))
        .await
        .unwrap();
    let people = read(AuditQuery {
        collections: vec![col("people")],
        ..all()
    })
    .await;
    assert_eq!(
        kinds(&people),
        [
            ("removed".into(), "a".into()),
            ("updated".into(), "a".into()),
            ("added".into(), "a".into())
        ],
        "{name}"
    );
    assert_eq!(
        people[0].detail,
        serde_json::json!({"sections_removed": ["Locks", "Gates"]}),
        "{name}"
    );
    assert!(
        read(AuditQuery {
            collections: vec![col("hr")],
            ..all()
        })
        .await
        .is_empty(),
        "{name}"
    );
    // A deleted collection's events go with it; the others' stay.
    s.delete_collection(&col("ops")).await.unwrap();
    assert_eq!(kinds(&read(all()).await), kinds(&people), "{name}");
}

/// A small encyclopaedia whose answers are a hop away: films, their stars, places.
fn graph_corpus() -> Vec<DocumentUpdate> {
    let pages: [(&str, &str, &[&str]); 7] = [
        (
            "salt",
            "Salt and Ember",
            &[
                "Salt and Ember is a 1962 drama film starring Orrin Dalby as a lighthouse keeper. It was shot in Kestrel Bay.",
            ],
        ),
        (
            "dalby",
            "Orrin Dalby",
            &[
                "Orrin Dalby was an actor who later served as mayor of Marrowgate.",
                "Dalby was born in Kestrel Bay in 1921.",
            ],
        ),
        (
            "marrowgate",
            "Marrowgate",
            &[
                "Marrowgate is a market town on the River Senn. Its mayor from 1970 was Orrin Dalby.",
            ],
        ),
        (
            "tide",
            "Tide Mill",
            &[
                "The Tide Mill is a drama about a miller and his storm-bound family, filmed in Kestrel Bay.",
            ],
        ),
        (
            "kestrel",
            "Kestrel Bay",
            &[
                "Kestrel Bay is a fishing village. The Kestrel Bay Light was built in 1840 by the Senn Harbour Board.",
            ],
        ),
        (
            "ember",
            "Ember Days",
            &["Ember Days are four separate sets of three days of prayer."],
        ),
        (
            "nasa",
            "National Aeronautics and Space Administration",
            &["The National Aeronautics and Space Administration (NASA) runs the space programme."],
        ),
    ];
    pages
        .iter()
        .enumerate()
        .map(|(i, (id, title, texts))| update(id, title, texts, i, None))
        .collect()
}

/// The entity graph on every store: the same entities, mentions and relations from the
/// same documents, the same links and walk, so the same ranking; kept as documents are
/// replaced and removed, and a filter keeps the ranking inside its collections.
async fn graph_conformance<S: Store>(s: &S, name: &str) -> Vec<(String, Vec<(String, u32)>)> {
    let col = |n: &str| CollectionId::new(n).unwrap();
    let mut docs = graph_corpus();
    // One page in another collection.
    docs[6].document.collection = col("space");
    s.apply(docs, vec![]).await.unwrap();
    let walk = metarag_core::GraphWalk::default();
    let ranked = |query: &str, filter: Filter| {
        let walk = walk.clone();
        let query = query.to_string();
        async move {
            let mut out = Vec::new();
            for h in s.graph(&query, 10, &walk, &filter).await.unwrap() {
                let c = &s.chunks(&[h.id]).await.unwrap()[0];
                out.push((c.doc_id.to_string(), c.draft.ordinal));
            }
            out
        }
    };
    let mut seen = Vec::new();
    for query in [
        "Which town did the star of Salt and Ember govern?",
        "Where was Orin Dalby born?",
        "What did NASA run?",
        "Kestrel Bay",
        "Which films were shot in Kestrel Bay?",
    ] {
        let got = ranked(query, Filter::default()).await;
        assert!(!got.is_empty(), "{name}: {query}: nothing ranked");
        seen.push((query.to_string(), got));
    }
    // The film's page names its star, whose pages say what he governed.
    let star = &seen[0].1;
    assert_eq!(star[0].0, "salt", "{name}: {star:?}");
    assert!(star.iter().any(|(d, _)| d == "dalby"), "{name}: {star:?}");
    // A misspelt name links fuzzily; an acronym by its alias.
    assert!(
        seen[1].1.iter().any(|(d, _)| d == "dalby"),
        "{name}: {:?}",
        seen[1]
    );
    assert_eq!(seen[2].1[0].0, "nasa", "{name}: {:?}", seen[2]);
    // A filter keeps to its collections.
    let only_default = Filter {
        collections: vec![col("default")],
        ..Default::default()
    };
    assert!(
        ranked("What did NASA run?", only_default)
            .await
            .iter()
            .all(|(d, _)| d != "nasa")
    );
    // Replacing and removing documents keeps the counts: the film page rewritten without
    // its star, the star's page removed.
    let mut film = graph_corpus().remove(0);
    film.chunks.truncate(1);
    film.chunks[0].0.text = "Salt and Ember is a 1962 drama film shot in Kestrel Bay.".into();
    s.apply(vec![film], vec![DocId::new("dalby").unwrap()])
        .await
        .unwrap();
    let after = ranked(
        "Which town did the star of Salt and Ember govern?",
        Filter::default(),
    )
    .await;
    assert!(after.iter().all(|(d, _)| d != "dalby"), "{name}: {after:?}");
    seen.push(("after".into(), after));
    s.delete_collection(&col("space")).await.unwrap();
    let nasa = ranked("What did NASA run?", Filter::default()).await;
    assert!(nasa.iter().all(|(d, _)| d != "nasa"), "{name}: {nasa:?}");
    seen
}

#[tokio::test]
async fn both_stores_walk_the_entity_graph_alike() {
    let dir = tempfile::tempdir().unwrap();
    let embedded = EmbeddedIndex::open(dir.path(), IndexConfig::new("test-embedder", DIM)).unwrap();
    let want = graph_conformance(&embedded, "embedded").await;
    let pg = metarag_testkit::postgres();
    let store = PgStore::connect(pg_config(&pg.url())).await.unwrap();
    let got = graph_conformance(&store, "postgres").await;
    assert_eq!(got, want, "the same rankings on both stores");
    // The same graph, part for part.
    let stats = store.graph_stats().await.unwrap();
    assert_eq!(stats, embedded.graph_stats().unwrap());
    let top = |es: Vec<metarag_pgstore::Entity>| -> Vec<(String, String, u64)> {
        es.into_iter()
            .map(|e| (e.key, e.label, e.mentions))
            .collect()
    };
    assert_eq!(
        top(store.top_entities(None, 50).await.unwrap()),
        top(embedded.top_entities(None, 50).unwrap())
    );
    let kestrel = &store.link_entity("Kestrel Bay", 0.8, 1).await.unwrap()[0].entity;
    let kestrel_embedded = &embedded.link_entity("Kestrel Bay", 0.8, 1).unwrap()[0].entity;
    let names = |rs: Vec<metarag_pgstore::StoredRelation>| -> Vec<(String, String, String)> {
        let mut r: Vec<_> = rs
            .into_iter()
            .map(|r| (r.subject, r.predicate, r.object))
            .collect();
        r.sort();
        r
    };
    assert_eq!(
        names(store.entity_relations(kestrel, 20).await.unwrap()),
        names(embedded.entity_relations(kestrel_embedded, 20).unwrap())
    );
    let walk = metarag_core::GraphWalk::default();
    let reached = |rs: Vec<metarag_pgstore::Reached>| -> Vec<(String, usize)> {
        let mut r: Vec<_> = rs.into_iter().map(|r| (r.entity.key, r.hop)).collect();
        r.sort();
        r
    };
    assert_eq!(
        reached(store.entity_neighbours(kestrel, &walk).await.unwrap()),
        reached(embedded.entity_neighbours(kestrel_embedded, &walk).unwrap())
    );
    // A second server opening the database finds the graph built and keeps it.
    let again = PgStore::connect(pg_config(&pg.url())).await.unwrap();
    assert_eq!(again.graph_stats().await.unwrap(), stats);
}

#[tokio::test]
async fn both_stores_keep_the_audit_memory_alike() {
    let dir = tempfile::tempdir().unwrap();
    let embedded = EmbeddedIndex::open(dir.path(), IndexConfig::new("test-embedder", DIM)).unwrap();
    audit_conformance(&embedded, "embedded").await;
    let pg = metarag_testkit::postgres();
    let store = PgStore::connect(pg_config(&pg.url())).await.unwrap();
    audit_conformance(&store, "postgres").await;
}

#[tokio::test]
async fn both_stores_keep_collections_apart() {
    let dir = tempfile::tempdir().unwrap();
    let embedded = EmbeddedIndex::open(dir.path(), IndexConfig::new("test-embedder", DIM)).unwrap();
    collections_conformance(&embedded, "embedded").await;
    let pg = metarag_testkit::postgres();
    let store = PgStore::connect(pg_config(&pg.url())).await.unwrap();
    collections_conformance(&store, "postgres").await;
    assert_corpus_stats_match(&store).await;
}

fn pg_config(url: &str) -> PgConfig {
    PgConfig::new(url, "test-embedder", DIM)
}

#[tokio::test]
async fn both_stores_pass_the_conformance_suite() {
    let dir = tempfile::tempdir().unwrap();
    let embedded = EmbeddedIndex::open(dir.path(), IndexConfig::new("test-embedder", DIM)).unwrap();
    conformance(&embedded, "embedded").await;
    let pg = metarag_testkit::postgres();
    let store = PgStore::connect(pg_config(&pg.url())).await.unwrap();
    conformance(&store, "postgres").await;
    assert_corpus_stats_match(&store).await;
}

/// The BM25 statistics kept by every write equal a recount from the postings.
async fn assert_corpus_stats_match(store: &PgStore) {
    let client = store.database().client().await.unwrap();
    let kept = client
        .query_one(
            "SELECT chunks, lexemes, title_lexemes FROM corpus_stats",
            &[],
        )
        .await
        .unwrap();
    let counted = client
        .query_one(
            "SELECT (SELECT count(*) FROM chunks),
                    (SELECT COALESCE(sum(tf), 0)::bigint FROM postings),
                    (SELECT COALESCE(sum(title_tf), 0)::bigint FROM postings),
                    (SELECT COALESCE(sum(dl), 0)::bigint FROM (SELECT DISTINCT chunk_id, dl FROM postings) p),
                    (SELECT COALESCE(sum(lexemes), 0)::bigint FROM documents),
                    (SELECT COALESCE(sum(title_lexemes), 0)::bigint FROM documents)",
            &[],
        )
        .await
        .unwrap();
    let kept: [i64; 3] = [kept.get(0), kept.get(1), kept.get(2)];
    let counted: [i64; 6] = std::array::from_fn(|i| counted.get(i));
    assert_eq!(kept, [counted[0], counted[1], counted[2]]);
    assert_eq!(
        counted[1], counted[3],
        "chunk lengths add up to the text lexemes"
    );
    assert_eq!(
        [counted[1], counted[2]],
        [counted[4], counted[5]],
        "documents' lexeme counts"
    );
    assert!(kept[1] > 0 && kept[2] > 0);
}

#[tokio::test]
async fn migrations_are_idempotent_and_concurrent_servers_agree() {
    let pg = metarag_testkit::postgres();
    let url = pg.url();
    // Two servers starting at once: the advisory lock applies each migration once.
    let (a, b) = tokio::join!(
        PgStore::connect(pg_config(&url)),
        PgStore::connect(pg_config(&url))
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    let latest = metarag_pgstore::schema::latest();
    assert_eq!(a.schema_version().await.unwrap(), latest);
    // Written through one, read through the other.
    a.apply(corpus(), vec![]).await.unwrap();
    assert_eq!(b.stats().await.unwrap().documents, 3);
    drop((a, b));
    let again = PgStore::connect(pg_config(&url)).await.unwrap();
    assert_eq!(again.schema_version().await.unwrap(), latest);
    assert_eq!(again.stats().await.unwrap().chunks, 3);
    // Another embedder is refused, naming both.
    let err = PgStore::connect(PgConfig::new(&url, "other-model", 16))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::EmbedderMismatch { .. }), "{err}");
    assert!(err.to_string().contains("test-embedder"), "{err}");
    assert_eq!(err.fault(), metarag_core::Fault::User);
    // A database that cannot be reached is the user's to fix, and says where.
    let err = PgStore::connect(pg_config("postgres://postgres@127.0.0.1:1/none"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("127.0.0.1:1"), "{err}");
    assert_eq!(err.fault(), metarag_core::Fault::User);
}

#[tokio::test]
async fn a_database_at_every_earlier_schema_version_migrates_without_loss() {
    let pg = metarag_testkit::postgres();
    let latest = metarag_pgstore::schema::latest();
    for from in 1..latest {
        let url = pg
            .create_database(&format!("from_v{from}"))
            .expect("create a database");
        // The database as a build of schema version `from` left it, with a document in it.
        {
            let (client, conn) = metarag_pgstore::tokio_postgres::connect(
                &url,
                metarag_pgstore::tokio_postgres::NoTls,
            )
            .await
            .unwrap();
            tokio::spawn(conn);
            client
                .batch_execute(
                    "CREATE TABLE metarag_schema (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())",
                )
                .await
                .unwrap();
            // A document the old build stored (its embedder recorded, as a store's first
            // open does), which later versions must still find. It is written at version 2
            // at the latest and the later migrations run over it: from version 3 a write
            // also keeps postings, which migration 3 builds for the chunks it finds.
            let migrate = async |versions: std::ops::Range<usize>| {
                for i in versions {
                    client
                        .batch_execute(metarag_pgstore::schema::MIGRATIONS[i])
                        .await
                        .unwrap();
                    client
                        .execute(
                            "INSERT INTO metarag_schema (version) VALUES ($1)",
                            &[&(i as i32 + 1)],
                        )
                        .await
                        .unwrap();
                }
            };
            let early = (from as usize).min(2);
            migrate(0..early).await;
            client
                .batch_execute(&format!(
                    "INSERT INTO metarag_meta (key, value) VALUES ('embedder', 'test-embedder'), ('dimension', '{DIM}');
                     INSERT INTO documents (id, title, source, format, content_hash, bytes, ingested_at, chunk_count)
                     VALUES ('old', 'Kiel Canal', '/old', 'text', 'h', 10, 0, 1);
                     INSERT INTO chunks (doc_id, ordinal, section, byte_start, byte_end, token_count, title, text, embedding)
                     VALUES ('old', 0, '[]', 0, 30, 8, 'Kiel Canal', 'The busiest artificial waterway.', '{:?}');",
                    vector(3)
                ))
                .await
                .unwrap();
            migrate(early..from as usize).await;
        }
        let old = PgStore::connect(pg_config(&url)).await.unwrap();
        assert_eq!(old.schema_version().await.unwrap(), latest, "from v{from}");
        let hits = old
            .lexical("busiest waterways", 3, &Filter::default())
            .await
            .unwrap();
        assert_eq!(hits.len(), 1, "from v{from}: the old chunk is searchable");
        // The graph was built from the chunks already stored.
        let kiel = old
            .graph("Kiel Canal", 3, &Default::default(), &Filter::default())
            .await
            .unwrap();
        assert_eq!(kiel.len(), 1, "from v{from}: the old chunk is in the graph");
        old.apply(corpus(), vec![]).await.unwrap();
        assert_corpus_stats_match(&old).await;
        drop(old);
        // Reopened: nothing applied twice, nothing lost.
        let store = PgStore::connect(pg_config(&url)).await.unwrap();
        assert_eq!(store.schema_version().await.unwrap(), latest);
        assert_eq!(store.stats().await.unwrap().documents, 4, "from v{from}");
        let client = store.database().client().await.unwrap();
        let runs: i64 = client
            .query_one("SELECT count(*) FROM runs", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(runs, 0, "from v{from}: the run log's table exists");
    }
}

#[tokio::test]
async fn a_batch_cut_off_mid_write_leaves_nothing_of_it() {
    let pg = metarag_testkit::postgres();
    let store = PgStore::connect(pg_config(&pg.url())).await.unwrap();
    store.apply(corpus(), vec![]).await.unwrap();
    let texts: Vec<String> = (0..40)
        .map(|i| format!("passage number {i} about canals"))
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let batch: Vec<DocumentUpdate> = (0..200)
        .map(|d| update(&format!("bulk-{d}"), "Bulk", &refs, d, None))
        .collect();
    // Dropped part-way (the future is cancelled as a killed request would be): the
    // transaction rolls back.
    let cut = tokio::time::timeout(
        std::time::Duration::from_millis(150),
        store.apply(batch, vec![]),
    )
    .await;
    assert!(
        cut.is_err(),
        "the batch finished before it could be cut off"
    );
    // The rollback runs on the connection's task; wait for the pool to see it.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let stats = store.stats().await.unwrap();
    assert_eq!((stats.documents, stats.chunks), (3, 3));
}

#[tokio::test]
async fn hybrid_search_ranks_alike_over_both_stores() {
    // Real passages and the real embedder; the same fusion code over both stores. The
    // rankings differ (both are BM25, but tantivy scores title and text as two fields and
    // tokenizes without Postgres's stemming and stop words), so the check is the stated
    // tolerance: each store finds the passage the query names in its top 5, and 3 of the
    // top 5 are in common.
    let embedder = metarag_testkit::embedder();
    let lines: Vec<serde_json::Value> = metarag_testkit::qa_file("hotpotqa-corpus.jsonl")
        .lines()
        .take(300)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut updates = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let title = l["title"].as_str().unwrap();
        let text = l["text"].as_str().unwrap();
        let v = embedder
            .embed(&[format!("{title}\n{text}")])
            .await
            .unwrap()
            .remove(0);
        updates.push(update_with(
            &format!("p{i}"),
            title,
            &[text],
            None,
            move |_| v.clone(),
        ));
    }
    let dim = embedder.dimension();
    let dir = tempfile::tempdir().unwrap();
    let mut icfg = IndexConfig::new(embedder.model_id(), dim);
    icfg.graph = false;
    let embedded = EmbeddedIndex::open(dir.path(), icfg).unwrap();
    Store::apply(&embedded, updates.clone(), vec![])
        .await
        .unwrap();
    let pg = metarag_testkit::postgres();
    let store = PgStore::connect(PgConfig::new(pg.url(), embedder.model_id(), dim))
        .await
        .unwrap();
    store.apply(updates, vec![]).await.unwrap();
    let a = HybridRetriever::new(embedder.clone(), embedded, RetrievalConfig::default());
    let b = HybridRetriever::new(embedder.clone(), store, RetrievalConfig::default());
    let mut checked = 0;
    for l in lines.iter().step_by(30) {
        let q = l["title"].as_str().unwrap();
        let req = SearchRequest::new(q, 5);
        let (ha, _) = a.search_timed(&req).await.unwrap();
        let (hb, _) = b.search_timed(&req).await.unwrap();
        let ta: Vec<&str> = ha.iter().map(|h| h.chunk.title.as_str()).collect();
        let tb: Vec<&str> = hb.iter().map(|h| h.chunk.title.as_str()).collect();
        assert!(ta.contains(&q) && tb.contains(&q), "{q}: {ta:?} vs {tb:?}");
        let common = ta.iter().filter(|t| tb.contains(t)).count();
        assert!(common >= 3, "{q}: {ta:?} vs {tb:?}");
        // Fused in one SQL statement: the same ranking and scores as the Rust fusion of
        // the store's two lists (unequal weights, so the weighting is checked too).
        let store = b.store();
        let v = embedder.embed_query(q).await.unwrap();
        let fusion = SqlFusion {
            n: 10,
            depth: 20,
            bm25_weight: 1.0,
            dense_weight: 0.6,
            rrf_k: 60.0,
        };
        let none = Filter::default();
        let lists = [
            RankedList {
                retriever: RetrieverKind::Bm25,
                weight: fusion.bm25_weight,
                items: store.lexical(q, fusion.depth, &none).await.unwrap(),
            },
            RankedList {
                retriever: RetrieverKind::Dense,
                weight: fusion.dense_weight,
                items: store.nearest(&v, fusion.depth, &none).await.unwrap(),
            },
        ];
        let in_rust: Vec<_> = reciprocal_rank_fusion(&lists, fusion.rrf_k)
            .into_iter()
            .take(fusion.n)
            .map(|f| (f.id, f.score))
            .collect();
        let in_sql = store.fused(q, &v, &fusion, &none).await.unwrap();
        assert_eq!(in_sql.len(), in_rust.len(), "{q}");
        for (s, (id, score)) in in_sql.iter().zip(&in_rust) {
            assert_eq!(s.id, *id, "{q}: {in_sql:?} vs {in_rust:?}");
            assert!((s.score - score).abs() < 1e-6, "{q}");
        }
        checked += 1;
    }
    assert_eq!(checked, 10);
}

#[test]
fn the_test_server_is_reachable_with_pgvector() {
    let pg: PgServer = metarag_testkit::postgres();
    assert!(pg.url().starts_with("postgres://postgres@127.0.0.1:"));
    let other = pg.create_database("second").unwrap();
    assert!(other.ends_with("/second"));
}

/// `sslmode=require`: encrypted and verified. A server whose certificate a private CA
/// signed (the test server behind a TLS front, its build having no SSL) is reached with
/// that CA in `ca_file` and refused without it (a user error naming the certificate
/// problem); a plain server is refused under `require` and reached without it.
#[tokio::test]
async fn tls_is_verified_against_the_configured_ca() {
    use metarag_pgstore::{PgDatabase, TlsConfig};
    let pg = metarag_testkit::postgres();
    let front = pg
        .tls_front()
        .unwrap_or_else(|e| panic!("TLS front of the test server: {e}"));
    let url = front.url();
    let tls = TlsConfig {
        ca_file: Some(front.ca_file().to_path_buf()),
    };
    let db = PgDatabase::connect_with(&url, 2, &tls).await.unwrap();
    // The store on top works the same through it.
    let mut config = pg_config(&url);
    config.tls = tls.clone();
    let store = PgStore::open(db, config).await.unwrap();
    store.apply(corpus(), vec![]).await.unwrap();
    assert_eq!(store.stats().await.unwrap().documents, 3);

    // Without the CA the certificate is not trusted.
    let err = PgDatabase::connect_with(&url, 2, &TlsConfig::default())
        .await
        .unwrap_err();
    assert_eq!(err.fault(), metarag_core::Fault::User, "{err}");
    assert!(
        err.to_string().to_lowercase().contains("certificate"),
        "{err}"
    );
    // A CA file that is not one is named.
    let bogus = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(bogus.path(), "not a certificate").unwrap();
    let err = PgDatabase::connect_with(
        &url,
        2,
        &TlsConfig {
            ca_file: Some(bogus.path().to_path_buf()),
        },
    )
    .await
    .unwrap_err();
    assert!(matches!(err, Error::Tls(_)), "{err}");
    assert!(
        err.to_string()
            .contains(&bogus.path().display().to_string()),
        "{err}"
    );

    // The plain server: refused under `require`, reached without it.
    let err = PgDatabase::connect_with(&format!("{}?sslmode=require", pg.url()), 2, &tls)
        .await
        .unwrap_err();
    assert_eq!(err.fault(), metarag_core::Fault::User, "{err}");
    PgDatabase::connect_with(&pg.url(), 2, &tls).await.unwrap();
}
