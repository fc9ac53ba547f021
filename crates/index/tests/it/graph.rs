//! The entity graph: built with the chunks, updated with them, linked and walked.

use super::{config, update};
use metarag_core::{Filter, GraphWalk, StoreRead};
use metarag_index::{EmbeddedIndex, LinkStage, NameEmbedder};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A small corpus of invented entities: a bridge from a film to its star, and a star's
/// own page.
fn corpus(index: &EmbeddedIndex) {
    index
        .apply(
            vec![
                update(
                    "film",
                    "Salt and Ember (1962 film)",
                    &["Salt and Ember is a 1962 drama film starring Orrin Dalby as Captain Vell."],
                    0,
                    None,
                ),
                update(
                    "dalby",
                    "Orrin Dalby",
                    &["Orrin Dalby was an actor who later served as mayor of Marrowgate."],
                    1,
                    None,
                ),
                update(
                    "harbour",
                    "Marrowgate",
                    &["Marrowgate is a harbour town. The Northern Orchard Board sits in Marrowgate."],
                    2,
                    None,
                ),
            ],
            vec![],
        )
        .unwrap();
}

fn entity_names(index: &EmbeddedIndex) -> Vec<String> {
    index
        .top_entities(None, 1000)
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect()
}

#[test]
fn the_graph_follows_adds_changes_and_removals() {
    let dir = tempfile::tempdir().unwrap();
    let index = EmbeddedIndex::open(dir.path(), config()).unwrap();
    corpus(&index);
    let names = entity_names(&index);
    for want in [
        "Salt and Ember (1962 film)",
        "Orrin Dalby",
        "Marrowgate",
        "Captain Vell",
        "1962",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} not in {names:?}");
    }
    let dalby = &index.link_entity("Orrin Dalby", 0.7, 1).unwrap()[0].entity;
    assert_eq!(dalby.mentions, 2, "the film's chunk and his own");
    let stats = index.graph_stats().unwrap();
    assert!(stats.relations > 0);

    // A changed document: its old entities go unless another chunk mentions them.
    index
        .apply(
            vec![update(
                "film",
                "Salt and Ember (1962 film)",
                &["Salt and Ember is a 1962 drama film starring Pell Quinary."],
                0,
                None,
            )],
            vec![],
        )
        .unwrap();
    let names = entity_names(&index);
    assert!(!names.iter().any(|n| n == "Captain Vell"), "{names:?}");
    assert!(names.iter().any(|n| n == "Pell Quinary"), "{names:?}");
    let dalby = &index.link_entity("Orrin Dalby", 0.7, 1).unwrap()[0].entity;
    assert_eq!(dalby.mentions, 1);

    // A removal takes its title entity and its mentions with it.
    index
        .apply(vec![], vec![metarag_core::DocId::new("dalby").unwrap()])
        .unwrap();
    assert!(
        index
            .link_entity("Orrin Dalby", 0.95, 1)
            .unwrap()
            .is_empty()
    );
    let names = entity_names(&index);
    assert!(
        names.iter().any(|n| n == "Marrowgate"),
        "still on its own page: {names:?}"
    );

    // Reopened, the graph is current and not rebuilt; its counts are the same.
    let before = index.graph_stats().unwrap();
    drop(index);
    let index = EmbeddedIndex::open(dir.path(), config()).unwrap();
    assert_eq!(index.graph_stats().unwrap(), before);
}

#[test]
fn an_index_without_its_graph_gets_one_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let mut no_graph = config();
    no_graph.graph = false;
    let index = EmbeddedIndex::open(dir.path(), no_graph).unwrap();
    corpus(&index);
    assert_eq!(index.graph_stats().unwrap().entities, 0);
    drop(index);
    let index = EmbeddedIndex::open(dir.path(), config()).unwrap();
    assert!(index.graph_stats().unwrap().entities > 5);
    assert!(!index.link_entity("Marrowgate", 0.7, 1).unwrap().is_empty());
}

#[test]
fn linking_cascades_exact_alias_fuzzy() {
    let dir = tempfile::tempdir().unwrap();
    let index = EmbeddedIndex::open(dir.path(), config()).unwrap();
    corpus(&index);
    let exact = index.link_entity("orrin  dalby", 0.7, 3).unwrap();
    assert_eq!(exact[0].stage, LinkStage::Exact);
    assert_eq!(exact[0].similarity, 1.0);
    let alias = index.link_entity("NOB", 0.7, 3).unwrap();
    assert_eq!(alias[0].stage, LinkStage::Alias, "{alias:?}");
    assert_eq!(alias[0].entity.name, "Northern Orchard Board");
    let fuzzy = index.link_entity("Orin Dalbey", 0.7, 3).unwrap();
    assert_eq!(fuzzy[0].stage, LinkStage::Fuzzy, "{fuzzy:?}");
    assert_eq!(fuzzy[0].entity.name, "Orrin Dalby");
    assert!(fuzzy[0].similarity >= 0.7 && fuzzy[0].similarity < 1.0);
    assert!(
        index
            .link_entity("Quillon Press", 0.7, 3)
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn a_walk_reaches_the_bridge_page_with_decayed_weight() {
    let dir = tempfile::tempdir().unwrap();
    let index = EmbeddedIndex::open(dir.path(), config()).unwrap();
    corpus(&index);
    // The question names the film only; the star's own page is one hop away.
    let walk = GraphWalk::default();
    let (links, reached, ranked) = index
        .graph_search_explained(
            "Which town did the star of Salt and Ember govern?",
            10,
            &walk,
            &Filter::default(),
        )
        .unwrap();
    assert_eq!(links.len(), 1, "the joined name, not its parts: {links:?}");
    assert_eq!(links[0].entity.name, "Salt and Ember (1962 film)");
    let dalby = reached
        .iter()
        .find(|r| r.entity.name == "Orrin Dalby")
        .expect("the star is reached");
    assert_eq!(dalby.hop, 1);
    assert!((dalby.weight - walk.decay).abs() < 1e-6);
    let chunks = index
        .chunks(&ranked.iter().map(|r| r.id).collect::<Vec<_>>())
        .unwrap();
    let titles: Vec<&str> = chunks.iter().map(|c| c.title.as_str()).collect();
    assert_eq!(titles[0], "Salt and Ember (1962 film)", "{titles:?}");
    assert!(titles.contains(&"Orrin Dalby"), "{titles:?}");
    // Zero hops: only the chunk that mentions the film.
    let zero = GraphWalk {
        max_hops: 0,
        ..GraphWalk::default()
    };
    let only = index
        .graph_search("Salt and Ember", 10, &zero, &Filter::default())
        .unwrap();
    assert_eq!(only.len(), 1);
    // The store trait's graph ranking is the same, and a filter restricts it.
    let via_trait = StoreRead::graph(&index, "Salt and Ember", 10, &walk, &Filter::default())
        .await
        .unwrap();
    assert_eq!(via_trait.len(), ranked.len().min(10).max(via_trait.len()));
    let filtered = StoreRead::graph(
        &index,
        "Salt and Ember",
        10,
        &walk,
        &super::docs(&["dalby"]),
    )
    .await
    .unwrap();
    assert!(!filtered.is_empty());
    let ids: Vec<_> = filtered.iter().map(|r| r.id).collect();
    assert!(
        index
            .chunks(&ids)
            .unwrap()
            .iter()
            .all(|c| c.doc_id.as_str() == "dalby")
    );
}

/// A name embedder for the tests: names about the film point along the film chunk's axis,
/// names about the actor along his; anything else elsewhere. Counts its calls.
fn name_embedder(calls: Arc<AtomicUsize>) -> Arc<dyn NameEmbedder> {
    Arc::new(move |names: &[String]| {
        calls.fetch_add(1, Ordering::SeqCst);
        Ok(names
            .iter()
            .map(|n| {
                if n.contains("Ember") {
                    super::vector(0)
                } else if n.contains("Dalby") {
                    super::vector(1)
                } else if n.contains("Quillon") {
                    super::vector(7)
                } else {
                    super::vector(4)
                }
            })
            .collect())
    })
}

#[test]
fn a_mention_no_string_stage_links_is_linked_by_embedding() {
    let dir = tempfile::tempdir().unwrap();
    let index = EmbeddedIndex::open(dir.path(), config()).unwrap();
    corpus(&index);
    // "Ember Picture" shares a word with the film's title but is too far from it by edit
    // similarity: the string stages find nothing.
    let question = "Who starred in the Ember Picture?";
    let walk = GraphWalk {
        embedding_link: true,
        ..GraphWalk::default()
    };
    let (links, _, ranked) = index
        .graph_search_explained(question, 10, &walk, &Filter::default())
        .unwrap();
    assert!(links.is_empty(), "no embedder yet: {links:?}");
    assert!(ranked.is_empty());

    let calls = Arc::new(AtomicUsize::new(0));
    index.set_name_embedder(name_embedder(calls.clone()));
    let (links, reached, ranked) = index
        .graph_search_explained(question, 10, &walk, &Filter::default())
        .unwrap();
    assert!(
        !links.is_empty() && links.len() <= walk.max_links,
        "{links:?}"
    );
    assert!(links.iter().all(|l| l.stage == LinkStage::Embedding
        && l.mention == "Ember Picture"
        && l.similarity >= walk.link_threshold));
    assert_eq!(
        links[0].entity.name, "Salt and Ember (1962 film)",
        "the title, most mentioned first among equals"
    );
    assert_eq!(
        calls.load(Ordering::SeqCst),
        2,
        "the mentions, then the candidates"
    );
    // From there the walk is the usual one: the star is one hop away.
    assert!(reached.iter().any(|r| r.entity.name == "Orrin Dalby"));
    assert!(!ranked.is_empty());

    // A mention a string stage links never reaches the embedder.
    calls.store(0, Ordering::SeqCst);
    let (links, _, _) = index
        .graph_search_explained("Who is Orrin Dalby?", 10, &walk, &Filter::default())
        .unwrap();
    assert_eq!(links[0].stage, LinkStage::Exact);
    assert_eq!(calls.load(Ordering::SeqCst), 0);

    // The stage is a setting, and the threshold holds for it: a name embedded far from
    // every candidate links nothing.
    let off = GraphWalk::default();
    assert!(!off.embedding_link, "off unless asked for");
    let (links, _, _) = index
        .graph_search_explained(question, 10, &off, &Filter::default())
        .unwrap();
    assert!(links.is_empty(), "{links:?}");
    let (links, _, _) = index
        .graph_search_explained("Who founded Quillon Press?", 10, &walk, &Filter::default())
        .unwrap();
    assert!(links.is_empty(), "{links:?}");
}

#[test]
fn a_name_embedder_of_the_wrong_dimension_is_an_error_not_a_wrong_link() {
    let dir = tempfile::tempdir().unwrap();
    let index = EmbeddedIndex::open(dir.path(), config()).unwrap();
    corpus(&index);
    index.set_name_embedder(Arc::new(|names: &[String]| {
        Ok(names.iter().map(|_| vec![1.0; 3]).collect())
    }));
    let err = index
        .graph_search(
            "Who starred in the Ember Picture?",
            10,
            &GraphWalk {
                embedding_link: true,
                ..GraphWalk::default()
            },
            &Filter::default(),
        )
        .unwrap_err();
    assert!(err.to_string().contains("8 dimensions"), "{err}");
}

/// A query that is a page's exact name puts that page first in the graph's list, before
/// the pages that mention its entity more often; a parenthetical tells apart the pages of
/// one entity ("Velmora (album)" is not the band's page), and a query with more words
/// than the title is walked as before.
#[test]
fn a_query_naming_a_page_puts_that_page_first_in_the_graph_list() {
    let dir = tempfile::tempdir().unwrap();
    let index = EmbeddedIndex::open(dir.path(), config()).unwrap();
    let band = "Velmora is a rock band from Quillport. Velmora toured with Velmora's friends.";
    let album = "The debut album by the rock band Velmora, released in 2002.";
    let fan = "Velmora fans met Velmora in Quillport; Velmora signed records for Velmora fans.";
    let prize = "The 2014 Harlan Prize went to Osric Vane for a novel.";
    let winner = "Osric Vane won the Harlan Prize twice; the Harlan Prize jury praised him.";
    index
        .apply(
            vec![
                update("band", "Velmora", &[band], 0, None),
                update("album", "Velmora (album)", &[album], 1, None),
                update("fan", "Velmora fan club", &[fan], 2, None),
                update("prize", "2014 Harlan Prize", &[prize], 3, None),
                update("winner", "Osric Vane", &[winner], 4, None),
            ],
            vec![],
        )
        .unwrap();
    let walk = GraphWalk::default();
    let titles = |query: &str| {
        let ranked = index
            .graph_search(query, 10, &walk, &Filter::default())
            .unwrap();
        let chunks = index
            .chunks(&ranked.iter().map(|r| r.id).collect::<Vec<_>>())
            .unwrap();
        let by_id: std::collections::HashMap<_, _> =
            chunks.iter().map(|c| (c.id, c.title.clone())).collect();
        ranked
            .iter()
            .map(|r| by_id[&r.id].clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(titles("Velmora (album)")[0], "Velmora (album)");
    assert_eq!(titles("velmora  (ALBUM)")[0], "Velmora (album)");
    assert_eq!(titles("Velmora")[0], "Velmora");
    assert_eq!(titles("2014 Harlan Prize")[0], "2014 Harlan Prize");
    // Not a page's name: no page is put first by its title.
    let walked = titles("Who praised the winner of the Harlan Prize?");
    assert!(walked.contains(&"Osric Vane".to_string()), "{walked:?}");
    // A filter that excludes the named page keeps it out.
    let only_winner = index
        .graph_search("2014 Harlan Prize", 10, &walk, &super::docs(&["winner"]))
        .unwrap();
    let kept = index
        .chunks(&only_winner.iter().map(|r| r.id).collect::<Vec<_>>())
        .unwrap();
    assert!(kept.iter().all(|c| c.title == "Osric Vane"), "{kept:?}");
}
