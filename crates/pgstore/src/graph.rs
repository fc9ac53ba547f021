//! The entity graph in Postgres: the embedded index's tables (entities, their aliases and
//! words, mentions, relations), filled by the same extractor in the write's own
//! transaction, and walked by the same logic ([`metarag_index::walker`]) so both stores
//! rank alike. Where SQLite reads one entity's chunks and neighbours at a time (each an
//! in-process index read), Postgres reads a whole hop's frontier in one query: a round
//! trip costs more than the read.

use crate::error::{Error, Result};
use metarag_core::{ChunkId, GraphWalk};
use metarag_index::entities::{self, EntityLabel};
use metarag_index::walker::{self, QueryLinker, Walked, Walker};
use metarag_index::{Entity, GraphStats, Link, LinkStage, Reached, StoredRelation};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use tokio_postgres::GenericClient;
use tokio_postgres::Row;

/// The extractor's version the stored graph was built by: the embedded index's, so a
/// change to extraction rebuilds both.
pub(crate) fn version() -> &'static str {
    metarag_index::GRAPH_VERSION
}

/// The entities the chunks of `docs` mention: their counts change when the chunks go.
pub(crate) async fn mentioned_by(c: &impl GenericClient, docs: &[String]) -> Result<BTreeSet<i64>> {
    if docs.is_empty() {
        return Ok(BTreeSet::new());
    }
    let rows = c
        .query(
            "SELECT DISTINCT m.entity_id FROM mentions m JOIN chunks c ON c.id = m.chunk_id
             WHERE c.doc_id = ANY($1)",
            &[&docs],
        )
        .await?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// One entity of a batch: its display name and label as the batch first gives them (a
/// title's name and label win), and the name it is created with when new (its first
/// surface form, which its aliases come from, as in the embedded index).
struct NewEntity {
    name: String,
    label: EntityLabel,
    first_name: String,
}

/// Adds the entities, mentions and relations of the chunks `(id, title, text)`, in id
/// order, with one statement per table; returns the entities touched.
pub(crate) async fn insert_chunks(
    c: &impl GenericClient,
    chunks: &[(i64, String, String)],
) -> Result<BTreeSet<i64>> {
    // Keys in a BTreeMap: the upsert locks entity rows in key order, so two servers
    // writing batches that share entities cannot deadlock on them.
    let mut found: BTreeMap<String, NewEntity> = BTreeMap::new();
    let mut mentions: HashMap<(String, i64), f32> = HashMap::new();
    let mut relations: Vec<(String, String, String, &'static str, f32, i64)> = Vec::new();
    for (id, title, text) in chunks {
        let x = entities::extract(title, text);
        for m in &x.mentions {
            let e = found.entry(m.key.clone()).or_insert_with(|| NewEntity {
                name: m.name.clone(),
                label: m.label,
                first_name: m.name.clone(),
            });
            // A document's title names the entity best: it becomes the display name.
            if m.label == EntityLabel::Title && e.label != EntityLabel::Title {
                e.name = m.name.clone();
                e.label = EntityLabel::Title;
            }
            let conf = mentions.entry((m.key.clone(), *id)).or_insert(0.0);
            *conf = conf.max(m.confidence);
        }
        for r in &x.relations {
            relations.push((
                x.mentions[r.subject].key.clone(),
                r.predicate.clone(),
                x.mentions[r.object].key.clone(),
                r.pattern.as_str(),
                r.pattern.confidence(),
                *id,
            ));
        }
    }
    if found.is_empty() {
        return Ok(BTreeSet::new());
    }
    let keys: Vec<&str> = found.keys().map(String::as_str).collect();
    let names: Vec<&str> = found.values().map(|e| e.name.as_str()).collect();
    let labels: Vec<&str> = found.values().map(|e| e.label.as_str()).collect();
    let rows = c
        .query(
            "INSERT INTO entities (key, name, label)
             SELECT * FROM unnest($1::text[], $2::text[], $3::text[])
             ON CONFLICT (key) DO UPDATE SET
                 name = CASE WHEN excluded.label = 'title' AND entities.label <> 'title'
                             THEN excluded.name ELSE entities.name END,
                 label = CASE WHEN excluded.label = 'title' THEN 'title' ELSE entities.label END
             RETURNING id, key, (xmax = 0)",
            &[&keys, &names, &labels],
        )
        .await?;
    let mut ids: HashMap<String, i64> = HashMap::with_capacity(rows.len());
    let (mut alias_rows, mut alias_ids) = (Vec::new(), Vec::new());
    let (mut word_rows, mut word_ids) = (Vec::new(), Vec::new());
    for r in &rows {
        let (id, key, inserted): (i64, String, bool) = (r.get(0), r.get(1), r.get(2));
        if inserted {
            let e = &found[&key];
            for a in entities::aliases(&e.first_name, &key) {
                alias_rows.push(a);
                alias_ids.push(id);
            }
            for w in key.split(' ').filter(|w| w.chars().count() > 1) {
                word_rows.push(w.to_string());
                word_ids.push(id);
            }
        }
        ids.insert(key, id);
    }
    c.execute(
        "INSERT INTO entity_aliases (alias, entity_id)
         SELECT * FROM unnest($1::text[], $2::bigint[]) ON CONFLICT DO NOTHING",
        &[&alias_rows, &alias_ids],
    )
    .await?;
    c.execute(
        "INSERT INTO entity_words (word, entity_id)
         SELECT * FROM unnest($1::text[], $2::bigint[]) ON CONFLICT DO NOTHING",
        &[&word_rows, &word_ids],
    )
    .await?;
    let id_of = |key: &str| -> Result<i64> {
        ids.get(key)
            .copied()
            .ok_or_else(|| Error::Corrupt(format!("entity {key:?} was not stored")))
    };
    let (mut m_entity, mut m_chunk, mut m_conf) = (Vec::new(), Vec::new(), Vec::new());
    for ((key, chunk), conf) in &mentions {
        m_entity.push(id_of(key)?);
        m_chunk.push(*chunk);
        m_conf.push(*conf);
    }
    c.execute(
        "INSERT INTO mentions (entity_id, chunk_id, confidence)
         SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::real[])
         ON CONFLICT (entity_id, chunk_id)
         DO UPDATE SET confidence = greatest(mentions.confidence, excluded.confidence)",
        &[&m_entity, &m_chunk, &m_conf],
    )
    .await?;
    if !relations.is_empty() {
        let (mut subjects, mut objects) = (Vec::new(), Vec::new());
        for (s, _, o, _, _, _) in &relations {
            subjects.push(id_of(s)?);
            objects.push(id_of(o)?);
        }
        let predicates: Vec<&str> = relations.iter().map(|r| r.1.as_str()).collect();
        let patterns: Vec<&str> = relations.iter().map(|r| r.3).collect();
        let confidences: Vec<f32> = relations.iter().map(|r| r.4).collect();
        let chunks: Vec<i64> = relations.iter().map(|r| r.5).collect();
        c.execute(
            "INSERT INTO relations (subject, predicate, object, pattern, confidence, chunk_id)
             SELECT * FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[], $5::real[], $6::bigint[])",
            &[&subjects, &predicates, &objects, &patterns, &confidences, &chunks],
        )
        .await?;
    }
    Ok(ids.into_values().collect())
}

/// The graph of the documents `docs` just written, from their stored chunks; returns
/// the entities touched.
pub(crate) async fn insert_documents(
    c: &impl GenericClient,
    docs: &[String],
) -> Result<BTreeSet<i64>> {
    let rows = c
        .query(
            "SELECT id, title, text FROM chunks WHERE doc_id = ANY($1) ORDER BY id",
            &[&docs],
        )
        .await?;
    let chunks: Vec<(i64, String, String)> = rows
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    insert_chunks(c, &chunks).await
}

/// Brings the touched entities' mention counts up to date and removes those no chunk
/// mentions any more.
pub(crate) async fn settle(c: &impl GenericClient, touched: &BTreeSet<i64>) -> Result<()> {
    if touched.is_empty() {
        return Ok(());
    }
    let ids: Vec<i64> = touched.iter().copied().collect();
    c.execute(
        "UPDATE entities e SET df = (SELECT count(*) FROM mentions m WHERE m.entity_id = e.id)
         WHERE e.id = ANY($1)",
        &[&ids],
    )
    .await?;
    c.execute(
        "DELETE FROM entities WHERE id = ANY($1) AND df = 0",
        &[&ids],
    )
    .await?;
    Ok(())
}

/// Re-extracts the whole graph from the stored chunks, a batch of chunks at a time (a
/// database from before the graph, or built by an older extractor). Returns the chunks
/// read.
pub(crate) async fn rebuild(c: &impl GenericClient) -> Result<usize> {
    c.batch_execute(
        "DELETE FROM relations; DELETE FROM mentions; DELETE FROM entity_words;
         DELETE FROM entity_aliases; DELETE FROM entities;",
    )
    .await?;
    let mut touched = BTreeSet::new();
    let (mut last, mut total) = (0i64, 0usize);
    loop {
        let rows = c
            .query(
                "SELECT id, title, text FROM chunks WHERE id > $1 ORDER BY id LIMIT 4096",
                &[&last],
            )
            .await?;
        let batch: Vec<(i64, String, String)> = rows
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect();
        let Some(end) = batch.last().map(|(id, _, _)| *id) else {
            break;
        };
        touched.extend(insert_chunks(c, &batch).await?);
        total += batch.len();
        last = end;
    }
    settle(c, &touched).await?;
    Ok(total)
}

const ENTITY_COLS: &str = "id, name, key, label, df";

fn entity(r: &Row) -> Entity {
    Entity {
        id: r.get(0),
        name: r.get(1),
        key: r.get(2),
        label: r.get(3),
        mentions: r.get::<_, i64>(4) as u64,
    }
}

/// Counts of the graph's parts.
pub(crate) async fn stats(c: &impl GenericClient) -> Result<GraphStats> {
    let r = c
        .query_one(
            "SELECT (SELECT count(*) FROM entities), (SELECT count(*) FROM mentions),
                    (SELECT count(*) FROM relations)",
            &[],
        )
        .await?;
    Ok(GraphStats {
        entities: r.get::<_, i64>(0) as u64,
        mentions: r.get::<_, i64>(1) as u64,
        relations: r.get::<_, i64>(2) as u64,
    })
}

/// The most mentioned entities, optionally of one label.
pub(crate) async fn top_entities(
    c: &impl GenericClient,
    label: Option<&str>,
    n: usize,
) -> Result<Vec<Entity>> {
    let rows = c
        .query(
            &format!(
                "SELECT {ENTITY_COLS} FROM entities WHERE $1::text IS NULL OR label = $1
                 ORDER BY df DESC, key LIMIT $2"
            ),
            &[&label, &(n as i64)],
        )
        .await?;
    Ok(rows.iter().map(entity).collect())
}

async fn entities_by_id(c: &impl GenericClient, ids: &[i64]) -> Result<HashMap<i64, Entity>> {
    let rows = c
        .query(
            &format!("SELECT {ENTITY_COLS} FROM entities WHERE id = ANY($1)"),
            &[&ids],
        )
        .await?;
    Ok(rows.iter().map(|r| (r.get(0), entity(r))).collect())
}

/// Links a surface form to up to `max` entities: exact key, then alias, then fuzzy
/// (the embedded index's cascade; the first stage with a match answers).
pub(crate) async fn link(
    c: &impl GenericClient,
    mention: &str,
    threshold: f32,
    max: usize,
) -> Result<Vec<Link>> {
    let key = entities::normalize(mention);
    if key.is_empty() || max == 0 {
        return Ok(Vec::new());
    }
    let make = |entity: Entity, similarity: f32, stage: LinkStage| Link {
        mention: mention.to_string(),
        entity,
        similarity,
        stage,
    };
    if let Some(r) = c
        .query_opt(
            &format!("SELECT {ENTITY_COLS} FROM entities WHERE key = $1"),
            &[&key],
        )
        .await?
    {
        return Ok(vec![make(entity(&r), 1.0, LinkStage::Exact)]);
    }
    let aliased = c
        .query(
            &format!(
                "SELECT {ENTITY_COLS} FROM entities
                 WHERE id IN (SELECT entity_id FROM entity_aliases WHERE alias = $1)
                 ORDER BY df DESC, id LIMIT $2"
            ),
            &[&key, &(max as i64)],
        )
        .await?;
    if !aliased.is_empty() {
        return Ok(aliased
            .iter()
            .map(|r| make(entity(r), 0.95, LinkStage::Alias))
            .collect());
    }
    // Fuzzy: candidates share one of the three rarest words of two or more letters with
    // the mention, or a word's first three letters (a misspelt word: "orin" finds
    // "orrin", a range of the C-collated word index).
    let words: Vec<&str> = key.split(' ').filter(|w| w.chars().count() > 1).collect();
    let prefixes: Vec<String> = key
        .split(' ')
        .map(|w| w.chars().take(3).collect::<String>())
        .filter(|p| p.chars().count() == 3)
        .collect();
    let rows = c
        .query(
            "WITH counted AS (
                 SELECT q.word, q.pos,
                        (SELECT count(*) FROM entity_words w WHERE w.word = q.word) AS n
                 FROM unnest($1::text[]) WITH ORDINALITY AS q(word, pos)
             ),
             rarest AS (SELECT word FROM counted WHERE n > 0 ORDER BY n, pos LIMIT 3)
             SELECT w.entity_id FROM rarest,
                 LATERAL (SELECT entity_id FROM entity_words WHERE word = rarest.word
                          ORDER BY entity_id LIMIT 512) w
             UNION
             SELECT w.entity_id FROM unnest($2::text[]) AS p(prefix),
                 LATERAL (SELECT entity_id FROM entity_words
                          WHERE word >= p.prefix AND word < p.prefix || chr(1114111)
                          ORDER BY word, entity_id LIMIT 256) w",
            &[&words, &prefixes],
        )
        .await?;
    let candidates: Vec<i64> = rows
        .iter()
        .map(|r| r.get(0))
        .collect::<HashSet<i64>>()
        .into_iter()
        .collect();
    let found = entities_by_id(c, &candidates)
        .await?
        .into_values()
        .collect();
    Ok(walker::rank_fuzzy(&key, found, threshold, max)
        .into_iter()
        .map(|(sim, e)| make(e, sim, LinkStage::Fuzzy))
        .collect())
}

/// The links of a query's mentions (string stages only).
pub(crate) async fn link_query(
    c: &impl GenericClient,
    query: &str,
    walk: &GraphWalk,
) -> Result<Vec<Link>> {
    let mut linker = QueryLinker::new(query);
    while let Some(mention) = linker.next_mention() {
        let found = link(c, &mention, walk.link_threshold, walk.max_links).await?;
        linker.found(mention, found);
    }
    Ok(linker.finish().0)
}

/// The walk ([`Walker`]), a hop's whole frontier per query: its chunks, and while it
/// expands, its relations and co-mentions.
pub(crate) async fn walk(
    c: &impl GenericClient,
    links: &[Link],
    walk: &GraphWalk,
    total: u64,
) -> Result<(Vec<Walked>, HashMap<i64, f32>)> {
    let mut walker = Walker::new(links, walk, total);
    loop {
        let ids = walker.frontier_ids();
        let mut chunks: HashMap<i64, Vec<(i64, f32)>> = HashMap::new();
        for r in c
            .query(
                "SELECT f.id, m.chunk_id, m.confidence FROM unnest($1::bigint[]) AS f(id),
                     LATERAL (SELECT chunk_id, confidence FROM mentions WHERE entity_id = f.id
                              ORDER BY confidence DESC, chunk_id LIMIT $2) m",
                &[&ids, &(walk.chunks_per_entity as i64)],
            )
            .await?
        {
            chunks
                .entry(r.get(0))
                .or_default()
                .push((r.get(1), r.get(2)));
        }
        let mut next: HashMap<i64, Vec<(i64, f32, u64)>> = HashMap::new();
        if walker.expands() {
            let mut related: HashMap<i64, Vec<(i64, f32, u64)>> = HashMap::new();
            // At most the 512 most confident relations each way, as the embedded index.
            for r in c
                .query(
                    "SELECT f.id, r.other, max(r.confidence), e.df FROM unnest($1::bigint[]) AS f(id),
                         LATERAL ((SELECT object AS other, confidence FROM relations
                                   WHERE subject = f.id ORDER BY confidence DESC LIMIT 512)
                                  UNION ALL
                                  (SELECT subject, confidence FROM relations
                                   WHERE object = f.id ORDER BY confidence DESC LIMIT 512)) r
                         JOIN entities e ON e.id = r.other
                     GROUP BY f.id, r.other, e.df",
                    &[&ids],
                )
                .await?
            {
                related.entry(r.get(0)).or_default().push((
                    r.get(1),
                    r.get(2),
                    r.get::<_, i64>(3) as u64,
                ));
            }
            let mut co: HashMap<i64, Vec<(i64, f32, u64)>> = HashMap::new();
            if walk.co_mentions {
                for r in c
                    .query(
                        "SELECT f.id, m2.entity_id, max(m2.confidence), e.df
                         FROM unnest($1::bigint[]) AS f(id),
                             LATERAL (SELECT chunk_id FROM mentions WHERE entity_id = f.id
                                      ORDER BY confidence DESC, chunk_id LIMIT $2) m1
                             JOIN mentions m2 ON m2.chunk_id = m1.chunk_id
                             JOIN entities e ON e.id = m2.entity_id
                         WHERE m2.entity_id <> f.id
                         GROUP BY f.id, m2.entity_id, e.df",
                        &[&ids, &(walk.chunks_per_entity as i64)],
                    )
                    .await?
                {
                    co.entry(r.get(0)).or_default().push((
                        r.get(1),
                        r.get(2),
                        r.get::<_, i64>(3) as u64,
                    ));
                }
            }
            for id in &ids {
                next.insert(
                    *id,
                    walker::rank_neighbours(
                        related.remove(id).unwrap_or_default(),
                        co.remove(id).unwrap_or_default(),
                        walk,
                        total,
                    ),
                );
            }
        }
        if !walker.step(&chunks, &next) {
            break;
        }
    }
    Ok(walker.finish())
}

/// The entities a walk reached, looked up, in its order.
pub(crate) async fn reached(c: &impl GenericClient, walked: Vec<Walked>) -> Result<Vec<Reached>> {
    let ids: Vec<i64> = walked.iter().map(|w| w.0).collect();
    let mut found = entities_by_id(c, &ids).await?;
    Ok(walked
        .into_iter()
        .filter_map(|(id, hop, weight)| {
            found.remove(&id).map(|entity| Reached {
                entity,
                hop,
                weight,
            })
        })
        .collect())
}

/// The chunks of the documents a query names exactly (see the embedded index's
/// `titled_chunks`), at most `n`, in chunk order.
pub(crate) async fn titled_chunks(
    c: &impl GenericClient,
    query: &str,
    n: usize,
) -> Result<Vec<i64>> {
    let wanted = walker::title_words(query);
    if wanted.is_empty() || n == 0 {
        return Ok(Vec::new());
    }
    let rows = c
        .query(
            "SELECT m.chunk_id, d.title FROM entities e
             JOIN mentions m ON m.entity_id = e.id AND m.confidence >= 1.0
             JOIN chunks c ON c.id = m.chunk_id JOIN documents d ON d.id = c.doc_id
             WHERE e.key = $1 AND e.label = 'title'",
            &[&entities::normalize(query)],
        )
        .await?;
    let mut found: Vec<i64> = rows
        .iter()
        .filter(|r| walker::title_words(r.get::<_, &str>(1)) == wanted)
        .map(|r| r.get(0))
        .collect();
    found.sort_unstable();
    found.truncate(n);
    Ok(found)
}

/// Relations an entity takes part in, either side, strongest first.
pub(crate) async fn relations_of(
    c: &impl GenericClient,
    entity: i64,
    n: usize,
) -> Result<Vec<StoredRelation>> {
    let rows = c
        .query(
            "SELECT s.name, r.predicate, o.name, r.pattern, r.confidence, r.chunk_id FROM relations r
             JOIN entities s ON s.id = r.subject JOIN entities o ON o.id = r.object
             WHERE r.subject = $1 OR r.object = $1 ORDER BY r.confidence DESC, r.chunk_id LIMIT $2",
            &[&entity, &(n as i64)],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| StoredRelation {
            subject: r.get(0),
            predicate: r.get(1),
            object: r.get(2),
            pattern: r.get(3),
            confidence: r.get(4),
            chunk: ChunkId(r.get::<_, i64>(5) as u64),
        })
        .collect())
}

/// The chunks mentioning an entity, most confident first.
pub(crate) async fn mentions_of(
    c: &impl GenericClient,
    entity: i64,
    n: usize,
) -> Result<Vec<(ChunkId, f32)>> {
    let rows = c
        .query(
            "SELECT chunk_id, confidence FROM mentions WHERE entity_id = $1
             ORDER BY confidence DESC, chunk_id LIMIT $2",
            &[&entity, &(n as i64)],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| (ChunkId(r.get::<_, i64>(0) as u64), r.get(1)))
        .collect())
}
