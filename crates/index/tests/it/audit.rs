//! The audit memory: every version written and every removal, queryable by time and
//! document, kept after the document is gone.

use super::{config, update};
use metarag_core::DocId;
use metarag_index::EmbeddedIndex;

#[test]
fn versions_and_removals_are_recorded_with_their_sections() {
    let dir = tempfile::tempdir().unwrap();
    let index = EmbeddedIndex::open(dir.path(), config()).unwrap();
    let mut v1 = update(
        "pay",
        "Payment guide",
        &["refunds take a week", "cards"],
        0,
        None,
    );
    v1.chunks[0].0.section = vec!["Refunds".into()];
    v1.chunks[1].0.section = vec!["Cards".into()];
    index
        .apply(
            vec![v1, update("ops", "Ops notes", &["pager"], 2, None)],
            vec![],
        )
        .unwrap();
    let mut v2 = update(
        "pay",
        "Payment guide",
        &["refunds take two days", "wallets"],
        0,
        None,
    );
    v2.chunks[0].0.section = vec!["Refunds".into()];
    v2.chunks[1].0.section = vec!["Wallets".into()];
    index
        .apply(vec![v2], vec![DocId::new("ops").unwrap()])
        .unwrap();

    let all = index.audit_events(None, None, None, &[], 10).unwrap();
    let kinds: Vec<(&str, &str)> = all
        .iter()
        .map(|e| (e.kind.as_str(), e.doc_id.as_str()))
        .collect();
    assert_eq!(kinds.len(), 4, "{kinds:?}");
    assert!(kinds.contains(&("added", "pay")) && kinds.contains(&("added", "ops")));
    assert!(kinds.contains(&("updated", "pay")) && kinds.contains(&("removed", "ops")));
    let updated = all.iter().find(|e| e.kind == "updated").unwrap();
    assert_eq!(
        updated.detail["sections_added"],
        serde_json::json!(["Wallets"])
    );
    assert_eq!(
        updated.detail["sections_removed"],
        serde_json::json!(["Cards"])
    );

    // By document (title or id), and by time: nothing before the first write, all of it
    // from an hour ago on.
    let pay = index
        .audit_events(None, None, Some("payment"), &[], 10)
        .unwrap();
    assert_eq!(pay.len(), 2);
    let at = all[0].at;
    assert!(
        index
            .audit_events(None, Some(at - 3600), None, &[], 10)
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        index
            .audit_events(Some(at - 3600), None, None, &[], 10)
            .unwrap()
            .len(),
        4
    );
    // The removed document's history outlives it.
    assert_eq!(
        index
            .audit_events(None, None, Some("ops"), &[], 10)
            .unwrap()
            .len(),
        2
    );
}

/// Each collection's history is its own: listed by collection, and deleted with it (while
/// a removal inside a collection that stays is remembered).
#[test]
fn a_collection_s_events_are_scoped_to_it_and_go_with_it() {
    use metarag_core::CollectionId;
    let dir = tempfile::tempdir().unwrap();
    let index = EmbeddedIndex::open(dir.path(), config()).unwrap();
    let hr = CollectionId::new("hr").unwrap();
    let ops = CollectionId::new("ops").unwrap();
    let mut leave = update("leave", "Leave policy", &["twenty days a year"], 0, None);
    leave.document.collection = hr.clone();
    let mut pager = update("pager", "Pager duty", &["one week rotations"], 2, None);
    pager.document.collection = ops.clone();
    let mut runbook = update("runbook", "Runbook", &["restart the queue"], 3, None);
    runbook.document.collection = ops.clone();
    index.apply(vec![leave, pager, runbook], vec![]).unwrap();
    index
        .apply(vec![], vec![DocId::new("runbook").unwrap()])
        .unwrap();
    let of = |c: &[CollectionId]| -> Vec<(String, String)> {
        index
            .audit_events(None, None, None, c, 10)
            .unwrap()
            .into_iter()
            .map(|e| (e.doc_id, e.kind))
            .collect()
    };
    assert_eq!(
        of(std::slice::from_ref(&hr)),
        [("leave".into(), "added".into())]
    );
    let mut ops_events = of(std::slice::from_ref(&ops));
    ops_events.sort();
    assert_eq!(
        ops_events,
        [
            ("pager".to_string(), "added".to_string()),
            ("runbook".into(), "added".into()),
            ("runbook".into(), "removed".into())
        ]
    );
    assert_eq!(index.delete_collection(&ops).unwrap(), 1);
    // Gone with it, without a `removed` event of its own; the other's history stays.
    assert!(of(std::slice::from_ref(&ops)).is_empty());
    assert_eq!(of(&[]), [("leave".into(), "added".into())]);
    // The default collection is never deleted.
    assert!(index.delete_collection(&CollectionId::default()).is_err());
}
