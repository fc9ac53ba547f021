//! Staged writes ([`EmbeddedIndex::stage`]): a document's chunks handed to the index a
//! slice at a time before its write, invisible until the write that claims them, and
//! dropped when no write does.

use super::{config, snapshot_dir, update, vector};
use metarag_core::{DocId, Filter, StageId};
use metarag_index::{EmbeddedIndex, Error};

/// The chunks of `update(id, ...)` for these texts, ordinals from `first`.
fn slice(
    id: &str,
    texts: &[&str],
    first: u32,
    axis: usize,
) -> Vec<(metarag_core::ChunkDraft, Vec<f32>)> {
    update(id, "Large", texts, axis, None)
        .chunks
        .into_iter()
        .map(|(mut c, v)| {
            c.ordinal += first;
            (c, v)
        })
        .collect()
}

fn texts_of(index: &EmbeddedIndex, id: &str) -> Vec<String> {
    index
        .document_chunks(&DocId::new(id).unwrap())
        .unwrap()
        .into_iter()
        .map(|c| c.draft.text)
        .collect()
}

#[test]
fn a_staged_document_is_invisible_until_its_write_then_whole_in_every_engine() {
    let dir = tempfile::tempdir().unwrap();
    let killed = tempfile::tempdir().unwrap();
    let large = DocId::new("large").unwrap();
    {
        let index = EmbeddedIndex::open(dir.path(), config()).unwrap();
        index
            .apply(
                vec![update("small", "Small", &["a small note"], 7, None)],
                vec![],
            )
            .unwrap();
        let stage = index
            .stage(
                None,
                &large,
                slice("large", &["ferries of Pellmoor", "the harbour wall"], 0, 0),
            )
            .unwrap();
        let again = index
            .stage(
                Some(stage),
                &large,
                slice("large", &["quarry at Dunmere"], 2, 2),
            )
            .unwrap();
        assert_eq!(again, stage);
        // Nothing staged is visible to any read.
        assert_eq!(index.staged_chunks().unwrap(), 3);
        assert_eq!(index.stats().unwrap().chunks, 1);
        assert_eq!(index.engine_sizes().unwrap(), (1, 1));
        assert!(
            index
                .lexical("Pellmoor", 5, &Filter::default())
                .unwrap()
                .is_empty()
        );
        assert!(index.document(&large).unwrap().is_none());

        // The write: the staged chunks first, then the ones in hand.
        let mut u = update("large", "Large", &["the lighthouse keeper"], 3, None);
        u.chunks[0].0.ordinal = 3;
        u.staged = Some(stage);
        index.apply(vec![u], vec![]).unwrap();
        assert_eq!(index.staged_chunks().unwrap(), 0);
        assert_eq!(
            texts_of(&index, "large"),
            [
                "ferries of Pellmoor",
                "the harbour wall",
                "quarry at Dunmere",
                "the lighthouse keeper"
            ]
        );
        assert_eq!(index.document(&large).unwrap().unwrap().chunk_count, 4);
        assert_eq!(index.stats().unwrap().chunks, 5);
        assert_eq!(index.engine_sizes().unwrap(), (5, 5));
        let hit = index.lexical("Dunmere", 5, &Filter::default()).unwrap();
        assert_eq!(hit.len(), 1);
        // Each staged vector is found as its own nearest chunk.
        let near = index.nearest(&vector(2), 1, &Filter::default()).unwrap();
        assert_eq!(near[0].id, hit[0].id);
        let event = &index
            .audit_events(None, None, Some("large"), &[], 10)
            .unwrap()[0];
        assert_eq!(event.detail["chunks"], 4);
        // Killed rather than closed: the vectors come back from the journal record, which
        // was written from the graph's copy of the staged vectors.
        snapshot_dir(dir.path(), killed.path());
    }
    assert!(!killed.path().join("dense.usearch").exists());
    let index = EmbeddedIndex::open(killed.path(), config()).unwrap();
    assert_eq!(index.engine_sizes().unwrap(), (5, 5));
    let hit = index.lexical("Pellmoor", 5, &Filter::default()).unwrap();
    let near = index.nearest(&vector(0), 1, &Filter::default()).unwrap();
    assert_eq!(near[0].id, hit[0].id);
    assert!(near[0].score > 0.999, "{}", near[0].score);
}

#[test]
fn a_stage_no_write_claims_is_dropped_when_a_writer_opens() {
    let dir = tempfile::tempdir().unwrap();
    let killed = tempfile::tempdir().unwrap();
    let large = DocId::new("large").unwrap();
    {
        let index = EmbeddedIndex::open(dir.path(), config()).unwrap();
        index
            .stage(None, &large, slice("large", &["ferries", "harbour"], 0, 0))
            .unwrap();
        assert_eq!(index.staged_chunks().unwrap(), 2);
        // A reader beside the writer leaves the stage alone.
        let reader = EmbeddedIndex::open_read_only(dir.path(), config()).unwrap();
        assert_eq!(reader.staged_chunks().unwrap(), 2);
        assert!(matches!(
            reader.stage(None, &large, slice("large", &["x"], 0, 0)),
            Err(Error::ReadOnly(_))
        ));
        // The writer dies before the write.
        snapshot_dir(dir.path(), killed.path());
    }
    let index = EmbeddedIndex::open(killed.path(), config()).unwrap();
    assert_eq!(index.staged_chunks().unwrap(), 0);
    assert_eq!(index.stats().unwrap().chunks, 0);
    assert_eq!(index.engine_sizes().unwrap(), (0, 0));
}

#[test]
fn a_superseded_or_removed_staged_update_leaves_nothing_staged() {
    let dir = tempfile::tempdir().unwrap();
    let index = EmbeddedIndex::open(dir.path(), config()).unwrap();
    let a = DocId::new("a").unwrap();
    let stage = index
        .stage(None, &a, slice("a", &["old staged text"], 0, 0))
        .unwrap();
    let mut first = update("a", "A", &[], 0, None);
    first.staged = Some(stage);
    let second = update("a", "A", &["the newer text"], 1, None);
    index.apply(vec![first, second], vec![]).unwrap();
    assert_eq!(index.staged_chunks().unwrap(), 0);
    assert_eq!(texts_of(&index, "a"), ["the newer text"]);

    let b = DocId::new("b").unwrap();
    let stage = index
        .stage(None, &b, slice("b", &["doomed"], 0, 0))
        .unwrap();
    let mut u = update("b", "B", &[], 0, None);
    u.staged = Some(stage);
    index.apply(vec![u], vec![b.clone()]).unwrap();
    assert_eq!(index.staged_chunks().unwrap(), 0);
    assert!(index.document(&b).unwrap().is_none());
    assert_eq!(index.engine_sizes().unwrap(), (1, 1));
}

#[test]
fn a_staged_vector_of_the_wrong_dimension_is_refused_naming_the_document() {
    let dir = tempfile::tempdir().unwrap();
    let index = EmbeddedIndex::open(dir.path(), config()).unwrap();
    let a = DocId::new("notes/a.md").unwrap();
    let mut chunks = slice("notes/a.md", &["one", "two"], 0, 0);
    chunks[1].1.pop();
    let err = index.stage(None, &a, chunks).unwrap_err();
    assert!(matches!(err, Error::Dimension { chunk: 1, .. }), "{err}");
    assert!(err.to_string().contains("notes/a.md"), "{err}");
    assert_eq!(index.staged_chunks().unwrap(), 0);
    // A stage id no write made is simply empty.
    let mut u = update("notes/a.md", "A", &["in hand"], 0, None);
    u.staged = Some(StageId(999));
    index.apply(vec![u], vec![]).unwrap();
    assert_eq!(texts_of(&index, "notes/a.md"), ["in hand"]);
}
