//! Integration tests of the embedded index with synthetic vectors (no model needed).

use metarag_core::{
    ChunkDraft, DocFormat, DocId, Document, DocumentUpdate, Filter, Store, StoreRead,
};
use metarag_index::{EmbeddedIndex, Error, IndexConfig};

const DIM: usize = 8;

fn config() -> IndexConfig {
    IndexConfig::new("test-embedder", DIM)
}

/// A unit vector pointing mostly along axis `axis`.
fn vector(axis: usize) -> Vec<f32> {
    let mut v = [0.05; DIM];
    v[axis % DIM] = 1.0;
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter().map(|x| x / n).collect()
}

fn update(id: &str, title: &str, texts: &[&str], axis: usize, date: Option<i64>) -> DocumentUpdate {
    let mut offset = 0;
    let chunks = texts
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let draft = ChunkDraft {
                ordinal: i as u32,
                section: vec![],
                pages: None,
                bytes: offset..offset + t.len(),
                token_count: t.split_whitespace().count() as u32 + 2,
                text: t.to_string(),
            };
            offset += t.len() + 1;
            (draft, vector(axis + i))
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

fn docs(ids: &[&str]) -> Filter {
    Filter {
        doc_ids: ids.iter().map(|d| DocId::new(*d).unwrap()).collect(),
        ..Default::default()
    }
}

#[test]
fn replace_and_remove_leave_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let index = EmbeddedIndex::open(dir.path(), config()).unwrap();
    index
        .apply(
            vec![
                update(
                    "a",
                    "Alpha",
                    &["the aardvark eats ants", "aardvarks dig burrows"],
                    0,
                    None,
                ),
                update("b", "Beta", &["the badger digs setts"], 3, None),
            ],
            vec![],
        )
        .unwrap();
    assert_eq!(index.stats().unwrap().chunks, 3);
    assert_eq!(index.engine_sizes().unwrap(), (3, 3));
    let old_ids: Vec<_> = index
        .document_chunks(&DocId::new("a").unwrap())
        .unwrap()
        .iter()
        .map(|c| c.id)
        .collect();

    // Replace `a` with a single different chunk: the old text is gone from every engine.
    index
        .apply(
            vec![update("a", "Alpha", &["zebras graze grass"], 5, None)],
            vec![],
        )
        .unwrap();
    assert_eq!(index.stats().unwrap().chunks, 2);
    assert_eq!(index.engine_sizes().unwrap(), (2, 2));
    assert!(
        index
            .lexical("aardvark", 10, &Filter::default())
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        index
            .lexical("zebras", 10, &Filter::default())
            .unwrap()
            .len(),
        1
    );
    assert!(
        index.chunks(&old_ids).unwrap().is_empty(),
        "old chunk ids must not resolve"
    );
    let near = index.nearest(&vector(0), 10, &Filter::default()).unwrap();
    assert!(near.iter().all(|h| !old_ids.contains(&h.id)));

    // Remove `b`: nothing of it remains.
    index.apply(vec![], vec![DocId::new("b").unwrap()]).unwrap();
    assert_eq!(index.engine_sizes().unwrap(), (1, 1));
    assert!(
        index
            .lexical("badger", 10, &Filter::default())
            .unwrap()
            .is_empty()
    );
    assert!(index.document(&DocId::new("b").unwrap()).unwrap().is_none());
    assert_eq!(index.documents().unwrap().len(), 1);
}

#[test]
fn bm25_and_dense_rank_the_matching_chunk_first() {
    let dir = tempfile::tempdir().unwrap();
    let index = EmbeddedIndex::open(dir.path(), config()).unwrap();
    index
        .apply(
            vec![
                update(
                    "a",
                    "Panama Canal",
                    &["The locks were designed by Henry Goldmark."],
                    0,
                    None,
                ),
                update(
                    "b",
                    "Suez Canal",
                    &["A sea-level canal without locks: it has no gates."],
                    4,
                    None,
                ),
                update(
                    "c",
                    "Hoover Dam",
                    &["An arch-gravity dam on the Colorado River."],
                    6,
                    None,
                ),
            ],
            vec![],
        )
        .unwrap();
    // Stemming and case folding: "designing" matches "designed".
    let bm25 = index
        .lexical("Who was designing the LOCKS?", 3, &Filter::default())
        .unwrap();
    let top = index.chunks(&[bm25[0].id]).unwrap();
    assert_eq!(top[0].doc_id.as_str(), "a");
    // Query syntax characters are plain text, not an error.
    assert!(
        index
            .lexical("title:(\"locks\" OR", 3, &Filter::default())
            .is_ok()
    );
    let dense = index.nearest(&vector(6), 1, &Filter::default()).unwrap();
    assert_eq!(
        index.chunks(&[dense[0].id]).unwrap()[0].doc_id.as_str(),
        "c"
    );
    assert!(
        (dense[0].score - 1.0).abs() < 1e-4,
        "cosine of identical vectors is 1"
    );
}

#[test]
fn a_term_cap_keeps_the_rarest_query_terms() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config();
    cfg.bm25_max_terms = 1;
    let index = EmbeddedIndex::open(dir.path(), cfg).unwrap();
    index
        .apply(
            vec![
                update("a", "One", &["The canal has locks and a quay."], 0, None),
                update("b", "Two", &["The canal has a dam."], 1, None),
                update("c", "Three", &["The canal has a bridge."], 2, None),
            ],
            vec![],
        )
        .unwrap();
    // "canal" is in every chunk, "quay" in one: with one term allowed, only "quay" is
    // scored, so only its chunk matches.
    let hits = index.lexical("canal quay", 3, &Filter::default()).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(index.chunks(&[hits[0].id]).unwrap()[0].doc_id.as_str(), "a");
    // A term no chunk contains is dropped before the cap, not kept as the rarest.
    let hits = index
        .lexical("zeppelin canal", 3, &Filter::default())
        .unwrap();
    assert_eq!(hits.len(), 3);
    drop(index);
    // Without the cap every term is scored.
    let index = EmbeddedIndex::open(dir.path(), config()).unwrap();
    assert_eq!(
        index
            .lexical("canal quay", 3, &Filter::default())
            .unwrap()
            .len(),
        3
    );
}

#[test]
fn filters_restrict_both_rankings() {
    let dir = tempfile::tempdir().unwrap();
    let index = EmbeddedIndex::open(dir.path(), config()).unwrap();
    index
        .apply(
            vec![
                update(
                    "a",
                    "Canal report 2001",
                    &["canal locks and gates"],
                    0,
                    Some(1_000_000_000),
                ),
                update(
                    "b",
                    "Canal report 2011",
                    &["canal locks and dredging"],
                    0,
                    Some(1_300_000_000),
                ),
            ],
            vec![],
        )
        .unwrap();
    let only_b = docs(&["b"]);
    let r = index.lexical("canal locks", 10, &only_b).unwrap();
    assert_eq!(r.len(), 1);
    assert_eq!(index.chunks(&[r[0].id]).unwrap()[0].doc_id.as_str(), "b");
    let r = index.nearest(&vector(0), 10, &only_b).unwrap();
    assert_eq!(r.len(), 1);
    let by_title = Filter {
        title_contains: Some("2001".into()),
        ..Default::default()
    };
    assert_eq!(index.nearest(&vector(0), 10, &by_title).unwrap().len(), 1);
    let by_date = Filter {
        date_from: Some(1_200_000_000),
        ..Default::default()
    };
    let r = index.lexical("canal", 10, &by_date).unwrap();
    assert_eq!(r.len(), 1);
    assert_eq!(index.chunks(&[r[0].id]).unwrap()[0].doc_id.as_str(), "b");
    assert!(
        index
            .lexical("canal", 10, &docs(&["missing"]))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn reopening_with_another_embedder_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    drop(EmbeddedIndex::open(dir.path(), config()).unwrap());
    let err = EmbeddedIndex::open(dir.path(), IndexConfig::new("other-model", DIM))
        .err()
        .unwrap();
    assert!(matches!(err, Error::EmbedderMismatch { .. }));
    assert_eq!(err.fault(), metarag_core::Fault::User);
    assert!(err.to_string().contains("test-embedder"), "{err}");
    let err = EmbeddedIndex::open(dir.path(), IndexConfig::new("test-embedder", DIM + 1))
        .err()
        .unwrap();
    assert!(matches!(err, Error::EmbedderMismatch { .. }));
}

#[test]
fn wrong_dimension_is_rejected_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let index = EmbeddedIndex::open(dir.path(), config()).unwrap();
    index
        .apply(vec![update("a", "A", &["kept text"], 0, None)], vec![])
        .unwrap();
    let mut bad = update("b", "B", &["bad vector"], 0, None);
    bad.chunks[0].1.pop();
    let err = index
        .apply(
            vec![bad, update("a", "A", &["replacement"], 0, None)],
            vec![],
        )
        .unwrap_err();
    assert!(matches!(err, Error::Dimension { .. }), "{err}");
    // The batch is all or nothing: `a` keeps its old text.
    assert_eq!(
        index.lexical("kept", 5, &Filter::default()).unwrap().len(),
        1
    );
    assert!(
        index
            .lexical("replacement", 5, &Filter::default())
            .unwrap()
            .is_empty()
    );
}

#[test]
fn engines_lagging_sqlite_are_rebuilt_on_open() {
    let dir = tempfile::tempdir().unwrap();
    {
        let index = EmbeddedIndex::open(dir.path(), config()).unwrap();
        index
            .apply(vec![update("a", "Alpha", &["aardvark"], 0, None)], vec![])
            .unwrap();
        index
            .apply(vec![update("b", "Beta", &["badger"], 2, None)], vec![])
            .unwrap();
    }
    // Simulate a crash in the middle of a vector save: the generation file is missing.
    std::fs::remove_file(dir.path().join("dense.usearch.generation")).unwrap();
    // And a BM25 index from an older state: wipe it entirely.
    std::fs::remove_dir_all(dir.path().join("bm25")).unwrap();
    let index = EmbeddedIndex::open(dir.path(), config()).unwrap();
    assert_eq!(index.engine_sizes().unwrap(), (2, 2));
    assert_eq!(
        index
            .lexical("badger", 5, &Filter::default())
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        index
            .nearest(&vector(2), 1, &Filter::default())
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn duplicate_ids_in_one_batch_leave_no_orphans() {
    let dir = tempfile::tempdir().unwrap();
    let index = EmbeddedIndex::open(dir.path(), config()).unwrap();
    index
        .apply(
            vec![
                update("a", "A", &["first version"], 0, None),
                update("a", "A", &["second version"], 1, None),
                update("b", "B", &["doomed"], 2, None),
            ],
            vec![DocId::new("b").unwrap()],
        )
        .unwrap();
    // The later update wins, the removal wins over the update, and the engines hold exactly
    // what SQLite holds.
    assert_eq!(index.stats().unwrap().chunks, 1);
    assert_eq!(index.engine_sizes().unwrap(), (1, 1));
    assert!(
        index
            .lexical("first", 5, &Filter::default())
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        index
            .lexical("second", 5, &Filter::default())
            .unwrap()
            .len(),
        1
    );
    assert!(index.document(&DocId::new("b").unwrap()).unwrap().is_none());
}

#[test]
fn a_lost_vector_file_is_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    {
        let index = EmbeddedIndex::open(dir.path(), config()).unwrap();
        index
            .apply(vec![update("a", "Alpha", &["aardvark"], 0, None)], vec![])
            .unwrap();
    }
    std::fs::remove_file(dir.path().join("dense.usearch")).unwrap();
    let index = EmbeddedIndex::open(dir.path(), config()).unwrap();
    assert_eq!(index.engine_sizes().unwrap(), (1, 1));
}

#[test]
fn data_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let index = EmbeddedIndex::open(dir.path(), config()).unwrap();
        index
            .apply(
                vec![update("a", "Alpha", &["persistent aardvark"], 1, None)],
                vec![],
            )
            .unwrap();
    }
    let index = EmbeddedIndex::open(dir.path(), config()).unwrap();
    let doc = index.document(&DocId::new("a").unwrap()).unwrap().unwrap();
    assert_eq!(doc.text.as_deref(), Some("persistent aardvark"));
    assert_eq!(doc.chunk_count, 1);
    assert_eq!(
        index
            .lexical("aardvark", 1, &Filter::default())
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        index
            .nearest(&vector(1), 1, &Filter::default())
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn one_writer_at_a_time_and_readers_beside_it() {
    let dir = tempfile::tempdir().unwrap();
    let writer = EmbeddedIndex::open(dir.path(), config()).unwrap();
    writer
        .apply(
            vec![update("a", "Alpha", &["shared aardvark"], 1, None)],
            vec![],
        )
        .unwrap();
    // A second writer (another `metarag` process, or `serve` already running) is told who
    // holds the index, and what to do instead.
    match EmbeddedIndex::open(dir.path(), config()) {
        Err(e @ Error::Busy { .. }) => {
            let msg = e.to_string();
            assert!(
                msg.contains(&format!("pid {}", std::process::id())),
                "{msg}"
            );
            assert!(msg.contains("POST /v1/ingest"), "{msg}");
            assert_eq!(e.fault(), metarag_core::Fault::User);
        }
        other => panic!("expected Busy, got {:?}", other.map(|_| ())),
    }
    // Readers still read, and cannot write.
    let reader = EmbeddedIndex::open_for_reading(dir.path(), config()).unwrap();
    assert!(reader.is_read_only());
    assert_eq!(
        reader
            .lexical("aardvark", 1, &Filter::default())
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        reader
            .nearest(&vector(1), 1, &Filter::default())
            .unwrap()
            .len(),
        1
    );
    let err = reader
        .apply(vec![], vec![DocId::new("a").unwrap()])
        .unwrap_err();
    assert!(matches!(err, Error::ReadOnly(_)), "{err}");
    // The writer's data is untouched; once it is gone, the next open writes.
    assert!(
        writer
            .document(&DocId::new("a").unwrap())
            .unwrap()
            .is_some()
    );
    drop(writer);
    let next = EmbeddedIndex::open_for_reading(dir.path(), config()).unwrap();
    assert!(!next.is_read_only());
}

#[tokio::test]
async fn store_trait_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let index = EmbeddedIndex::open(dir.path(), config()).unwrap();
    Store::apply(
        &index,
        vec![update("a", "Alpha", &["via the trait"], 0, None)],
        vec![],
    )
    .await
    .unwrap();
    let stats = StoreRead::stats(&index).await.unwrap();
    assert_eq!((stats.documents, stats.chunks), (1, 1));
    assert_eq!(stats.embedder.as_deref(), Some("test-embedder"));
    let hits = StoreRead::lexical(&index, "trait", 5, &Filter::default())
        .await
        .unwrap();
    assert_eq!(
        StoreRead::chunks(&index, &[hits[0].id]).await.unwrap()[0]
            .draft
            .text,
        "via the trait"
    );
}

/// Copies the files of an index directory as they are now: what a process killed at this
/// moment would leave behind (no close, so no snapshot of the vector journal).
fn snapshot_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            snapshot_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[test]
fn a_killed_writer_is_recovered_from_the_vector_journal() {
    let dir = tempfile::tempdir().unwrap();
    let killed = tempfile::tempdir().unwrap();
    let index = EmbeddedIndex::open(dir.path(), config()).unwrap();
    index
        .apply(vec![update("a", "Alpha", &["aardvark"], 0, None)], vec![])
        .unwrap();
    index
        .apply(
            vec![update("b", "Beta", &["badger", "bison"], 2, None)],
            vec![],
        )
        .unwrap();
    index.apply(vec![], vec![DocId::new("a").unwrap()]).unwrap();
    snapshot_dir(dir.path(), killed.path());
    drop(index);
    // The small index was never snapshotted: its vectors live in the journal alone.
    assert!(!killed.path().join("dense.usearch").exists());
    let index = EmbeddedIndex::open(killed.path(), config()).unwrap();
    assert_eq!(index.engine_sizes().unwrap(), (2, 2));
    let hits = index.nearest(&vector(3), 1, &Filter::default()).unwrap();
    assert_eq!(index.chunks(&[hits[0].id]).unwrap()[0].draft.text, "bison");
    drop(index);
    // Closing the writer folded the journal into a snapshot.
    assert!(killed.path().join("dense.usearch").exists());
    assert_eq!(
        std::fs::metadata(killed.path().join("dense.journal"))
            .unwrap()
            .len(),
        0
    );
    let index = EmbeddedIndex::open(killed.path(), config()).unwrap();
    assert_eq!(index.engine_sizes().unwrap(), (2, 2));
}

#[test]
fn a_journal_record_sqlite_never_committed_is_cut_off() {
    let dir = tempfile::tempdir().unwrap();
    let killed = tempfile::tempdir().unwrap();
    let index = EmbeddedIndex::open(dir.path(), config()).unwrap();
    index
        .apply(vec![update("a", "Alpha", &["aardvark"], 0, None)], vec![])
        .unwrap();
    snapshot_dir(dir.path(), killed.path());
    let committed_len = std::fs::metadata(killed.path().join("dense.journal"))
        .unwrap()
        .len();
    index
        .apply(vec![update("b", "Beta", &["badger"], 2, None)], vec![])
        .unwrap();
    // Killed after the journal append but before SQLite's commit: the copy has the old
    // SQLite and the journal with the newer record.
    std::fs::copy(
        dir.path().join("dense.journal"),
        killed.path().join("dense.journal"),
    )
    .unwrap();
    drop(index);
    let index = EmbeddedIndex::open(killed.path(), config()).unwrap();
    assert_eq!(index.stats().unwrap().chunks, 1);
    assert_eq!(index.engine_sizes().unwrap(), (1, 1));
    assert_eq!(
        std::fs::metadata(killed.path().join("dense.journal"))
            .unwrap()
            .len(),
        committed_len
    );
    // The next write takes the cut-off generation's place.
    index
        .apply(vec![update("c", "Gamma", &["cat"], 4, None)], vec![])
        .unwrap();
    drop(index);
    let index = EmbeddedIndex::open(killed.path(), config()).unwrap();
    assert_eq!(index.engine_sizes().unwrap(), (2, 2));
}

#[test]
fn a_torn_journal_tail_makes_the_vectors_rebuild_from_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let killed = tempfile::tempdir().unwrap();
    let index = EmbeddedIndex::open(dir.path(), config()).unwrap();
    index
        .apply(vec![update("a", "Alpha", &["aardvark"], 0, None)], vec![])
        .unwrap();
    index
        .apply(vec![update("b", "Beta", &["badger"], 2, None)], vec![])
        .unwrap();
    snapshot_dir(dir.path(), killed.path());
    drop(index);
    // Damage the last record's checksum: replay stops before it, the graph lags SQLite and
    // is rebuilt from it.
    let journal = killed.path().join("dense.journal");
    let mut bytes = std::fs::read(&journal).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&journal, bytes).unwrap();
    let index = EmbeddedIndex::open(killed.path(), config()).unwrap();
    assert_eq!(index.engine_sizes().unwrap(), (2, 2));
    assert_eq!(
        index
            .nearest(&vector(2), 1, &Filter::default())
            .unwrap()
            .len(),
        1
    );
}

mod graph;

mod audit;

/// Staged writes: a large document handed over a slice at a time.
mod staged;

/// The generation tantivy's last commit carries (the payload in `bm25/meta.json`).
fn bm25_payload(dir: &std::path::Path) -> String {
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("bm25/meta.json")).unwrap()).unwrap();
    meta["payload"].as_str().unwrap().to_string()
}

#[test]
fn compaction_merges_bm25_into_one_segment_and_changes_no_result() {
    let dir = tempfile::tempdir().unwrap();
    let index = EmbeddedIndex::open(dir.path(), config()).unwrap();
    // One commit per write: a segment each.
    let words = ["aardvark", "badger", "cheetah", "dingo", "emu", "ferret"];
    for (i, w) in words.iter().enumerate() {
        let text = format!("the {w} and the common animal {i}");
        index
            .apply(
                vec![update(&format!("d{i}"), w, &[text.as_str()], i, None)],
                vec![],
            )
            .unwrap();
    }
    index
        .apply(vec![], vec![DocId::new("d2").unwrap()])
        .unwrap();
    let search = |index: &EmbeddedIndex| {
        let mut out = Vec::new();
        for q in ["common animal", "badger", "cheetah", "emu ferret"] {
            let hits = index.lexical(q, 10, &Filter::default()).unwrap();
            out.push(hits.into_iter().map(|h| h.id).collect::<Vec<_>>());
        }
        out
    };
    let before = search(&index);
    let payload = bm25_payload(dir.path());

    let done = index.compact().unwrap();
    assert!(done.bm25_segments_before > 1, "{done:?}");
    assert_eq!(done.bm25_segments_after, 1);
    // The same hits in the same order (scores move a little: the merge drops the deleted
    // chunk from the term statistics too), the same generation: the next open finds BM25
    // current and rebuilds nothing.
    assert_eq!(search(&index), before);
    assert!(before[2].is_empty());
    assert_eq!(bm25_payload(dir.path()), payload);
    assert_eq!(index.compact().unwrap().bm25_segments_before, 1);

    drop(index);
    let reopened = EmbeddedIndex::open(dir.path(), config()).unwrap();
    assert_eq!(search(&reopened), before);
    assert_eq!(reopened.engine_sizes().unwrap(), (5, 5));

    // A reader beside the writer cannot compact.
    let reader = EmbeddedIndex::open_for_reading(dir.path(), config()).unwrap();
    assert!(reader.is_read_only());
    assert!(matches!(reader.compact().unwrap_err(), Error::ReadOnly(_)));
}
