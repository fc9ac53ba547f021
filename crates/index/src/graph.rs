//! The entity graph, kept in SQLite beside the chunks it points at: entities, their aliases
//! and words (for linking), mentions (entity -> chunk, with a confidence) and relations
//! (entity -> entity, with the pattern and chunk that stated them).
//!
//! Because the graph lives in the same database as the chunks, a write changes both in one
//! transaction: the graph is as crash-consistent as SQLite itself. Mentions and relations
//! go with their chunk (`ON DELETE CASCADE`); an entity no chunk mentions any more is
//! removed when the transaction that orphaned it commits.

use crate::Result;
use crate::entities::{self, EntityLabel, Extraction};
use metarag_core::{ChunkId, GraphWalk};
use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;
use std::collections::{BTreeSet, HashMap, HashSet};

/// Bumped whenever extraction changes, so an index built by an older extractor is re-read.
pub const GRAPH_VERSION: &str = "2";

pub(crate) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS entities(
    id INTEGER PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    label TEXT NOT NULL,
    -- chunks mentioning the entity: how specific it is (a hub like a country is not)
    df INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS entity_aliases(
    alias TEXT NOT NULL,
    entity_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    PRIMARY KEY(alias, entity_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS entity_aliases_by_entity ON entity_aliases(entity_id);
CREATE TABLE IF NOT EXISTS entity_words(
    word TEXT NOT NULL,
    entity_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    PRIMARY KEY(word, entity_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS entity_words_by_entity ON entity_words(entity_id);
CREATE TABLE IF NOT EXISTS mentions(
    entity_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    chunk_id INTEGER NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
    confidence REAL NOT NULL,
    PRIMARY KEY(entity_id, chunk_id)
) WITHOUT ROWID;
-- A chunk's mentions with their confidence, read from the index alone: the walk's
-- co-mention step reads ~18 per chunk for 32 chunks of every linked entity, and a lookup
-- of each row's confidence in the table made that step 2.8x slower at a million chunks
-- (docs/results/performance.md). It replaces `mentions_by_chunk(chunk_id)`, which it
-- covers; an index made before is rebuilt once at the first open.
CREATE INDEX IF NOT EXISTS mentions_by_chunk_covering ON mentions(chunk_id, entity_id, confidence);
DROP INDEX IF EXISTS mentions_by_chunk;
-- An entity's most confident mentions read in index order, not sorted from all of them: a
-- hub entity at a million chunks has tens of thousands (docs/results/performance.md).
CREATE INDEX IF NOT EXISTS mentions_by_entity_confidence ON mentions(entity_id, confidence DESC, chunk_id);
CREATE TABLE IF NOT EXISTS relations(
    subject INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    predicate TEXT NOT NULL,
    object INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    pattern TEXT NOT NULL,
    confidence REAL NOT NULL,
    chunk_id INTEGER NOT NULL REFERENCES chunks(id) ON DELETE CASCADE
);
-- An entity's relations either way, most confident first, with their other end, read
-- from the index alone (the walk's relation step); they replace
-- `relations_by_subject(subject)` and `relations_by_object(object)`, which they cover.
CREATE INDEX IF NOT EXISTS relations_by_subject_covering ON relations(subject, confidence DESC, object);
CREATE INDEX IF NOT EXISTS relations_by_object_covering ON relations(object, confidence DESC, subject);
DROP INDEX IF EXISTS relations_by_subject;
DROP INDEX IF EXISTS relations_by_object;
CREATE INDEX IF NOT EXISTS relations_by_chunk ON relations(chunk_id);
";

/// Entity ids whose mention counts a transaction changed; fixed up (or the entity removed)
/// just before it commits.
#[derive(Default)]
pub(crate) struct Touched(BTreeSet<i64>);

/// Records the entities the chunks of `docs` mention, before they are deleted.
pub(crate) fn touch_document(conn: &Connection, doc: &str, touched: &mut Touched) -> Result<()> {
    let mut stmt = conn.prepare_cached(
        "SELECT DISTINCT m.entity_id FROM mentions m JOIN chunks c ON c.id = m.chunk_id WHERE c.doc_id = ?1",
    )?;
    let rows = stmt.query_map([doc], |r| r.get::<_, i64>(0))?;
    for r in rows {
        touched.0.insert(r?);
    }
    Ok(())
}

/// Adds the entities, mentions and relations of one stored chunk.
pub(crate) fn insert_chunk(
    conn: &Connection,
    chunk: ChunkId,
    title: &str,
    text: &str,
    touched: &mut Touched,
) -> Result<()> {
    let Extraction {
        mentions,
        relations,
    } = entities::extract(title, text);
    let mut ids = Vec::with_capacity(mentions.len());
    let mut find = conn.prepare_cached("SELECT id, label FROM entities WHERE key = ?1")?;
    let mut insert =
        conn.prepare_cached("INSERT INTO entities(key, name, label) VALUES (?1, ?2, ?3)")?;
    let mut promote =
        conn.prepare_cached("UPDATE entities SET label = 'title', name = ?2 WHERE id = ?1")?;
    let mut alias = conn
        .prepare_cached("INSERT OR IGNORE INTO entity_aliases(alias, entity_id) VALUES (?1, ?2)")?;
    let mut word =
        conn.prepare_cached("INSERT OR IGNORE INTO entity_words(word, entity_id) VALUES (?1, ?2)")?;
    let mut mention = conn.prepare_cached(
        "INSERT INTO mentions(entity_id, chunk_id, confidence) VALUES (?1, ?2, ?3)
         ON CONFLICT(entity_id, chunk_id) DO UPDATE SET confidence = max(confidence, excluded.confidence)",
    )?;
    for m in &mentions {
        let found: Option<(i64, String)> = find
            .query_row([&m.key], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        let id = match found {
            Some((id, label)) => {
                // A document's title names the entity best: it becomes the display name.
                if m.label == EntityLabel::Title && label != "title" {
                    promote.execute(params![id, m.name])?;
                }
                id
            }
            None => {
                insert.execute(params![m.key, m.name, m.label.as_str()])?;
                let id = conn.last_insert_rowid();
                for a in entities::aliases(&m.name, &m.key) {
                    alias.execute(params![a, id])?;
                }
                for w in m.key.split(' ').filter(|w| w.chars().count() > 1) {
                    word.execute(params![w, id])?;
                }
                id
            }
        };
        mention.execute(params![id, chunk.0 as i64, m.confidence])?;
        touched.0.insert(id);
        ids.push(id);
    }
    let mut relation = conn.prepare_cached(
        "INSERT INTO relations(subject, predicate, object, pattern, confidence, chunk_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    for r in &relations {
        relation.execute(params![
            ids[r.subject],
            r.predicate,
            ids[r.object],
            r.pattern.as_str(),
            r.pattern.confidence(),
            chunk.0 as i64
        ])?;
    }
    Ok(())
}

/// Brings the touched entities' mention counts up to date and removes those no chunk
/// mentions any more.
pub(crate) fn settle(conn: &Connection, touched: Touched) -> Result<()> {
    let mut count = conn.prepare_cached("SELECT count(*) FROM mentions WHERE entity_id = ?1")?;
    let mut update = conn.prepare_cached("UPDATE entities SET df = ?2 WHERE id = ?1")?;
    let mut delete = conn.prepare_cached("DELETE FROM entities WHERE id = ?1")?;
    for id in touched.0 {
        let df: i64 = count.query_row([id], |r| r.get(0))?;
        if df == 0 {
            delete.execute([id])?;
        } else {
            update.execute(params![id, df])?;
        }
    }
    Ok(())
}

/// Re-extracts the whole graph from the stored chunks (an index built before the graph
/// existed, by an older extractor, or written by a binary that did not maintain it).
pub(crate) fn rebuild(conn: &Connection) -> Result<usize> {
    conn.execute_batch(
        "DELETE FROM relations; DELETE FROM mentions; DELETE FROM entity_words;
         DELETE FROM entity_aliases; DELETE FROM entities;",
    )?;
    let mut touched = Touched::default();
    let mut last = 0i64;
    let mut total = 0;
    loop {
        // Batches by id keep memory flat on a large index.
        let batch: Vec<(i64, String, String)> = {
            let mut stmt = conn.prepare_cached(
                "SELECT c.id, d.title, c.text FROM chunks c JOIN documents d ON d.doc_id = c.doc_id
                 WHERE c.id > ?1 ORDER BY c.id LIMIT 4096",
            )?;
            let rows = stmt.query_map([last], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        let Some(&(end, _, _)) = batch.last() else {
            break;
        };
        for (id, title, text) in &batch {
            insert_chunk(conn, ChunkId(*id as u64), title, text, &mut touched)?;
        }
        total += batch.len();
        last = end;
    }
    settle(conn, touched)?;
    Ok(total)
}

/// Counts of the graph's parts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct GraphStats {
    /// Distinct entities.
    pub entities: u64,
    /// Entity -> chunk links.
    pub mentions: u64,
    /// Entity -> entity relations.
    pub relations: u64,
}

pub(crate) fn stats(conn: &Connection) -> Result<GraphStats> {
    let count = |table: &str| -> Result<u64> {
        let n: i64 = conn.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))?;
        Ok(n as u64)
    };
    Ok(GraphStats {
        entities: count("entities")?,
        mentions: count("mentions")?,
        relations: count("relations")?,
    })
}

/// An entity as stored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Entity {
    /// Row id (stable while some chunk mentions the entity).
    pub id: i64,
    /// Display name: the document title that names it, else its first surface form.
    pub name: String,
    /// Normalised key.
    pub key: String,
    /// `title`, `name`, `acronym`, `date` or `concept`.
    pub label: String,
    /// Chunks mentioning it.
    pub mentions: u64,
}

/// How an entity was found for a query's mention.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LinkStage {
    /// Same normalised key.
    Exact,
    /// An alias (acronym) of the entity.
    Alias,
    /// Edit similarity of the keys at or above the threshold.
    Fuzzy,
    /// Cosine similarity of the embedded names at or above the threshold (the cascade's
    /// last stage, for a mention no string stage links).
    Embedding,
}

/// An entity linked to a mention, with the link's similarity.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Link {
    /// The query's surface form.
    pub mention: String,
    /// The entity.
    pub entity: Entity,
    /// 1 for exact, 0.95 for alias, the edit similarity for fuzzy, the cosine of the
    /// names' embeddings for embedding.
    pub similarity: f32,
    /// Which stage of the cascade found it.
    pub stage: LinkStage,
}

/// A relation as stored, with both ends named.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoredRelation {
    /// Subject's display name.
    pub subject: String,
    /// Predicate (`is_a`, `has`, a verb, a preposition).
    pub predicate: String,
    /// Object's display name.
    pub object: String,
    /// `copula`, `svo`, `attribute` or `prepositional`.
    pub pattern: String,
    /// The pattern's confidence.
    pub confidence: f32,
    /// The chunk that states it.
    pub chunk: ChunkId,
}

/// An entity reached from another by the walk, with its weight.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reached {
    /// The entity.
    pub entity: Entity,
    /// Hops from the start.
    pub hop: usize,
    /// Link similarity times the decay per hop.
    pub weight: f32,
}

const ENTITY_COLS: &str = "id, name, key, label, df";

fn row_to_entity(r: &rusqlite::Row<'_>) -> rusqlite::Result<Entity> {
    Ok(Entity {
        id: r.get(0)?,
        name: r.get(1)?,
        key: r.get(2)?,
        label: r.get(3)?,
        mentions: r.get::<_, i64>(4)? as u64,
    })
}

/// The most mentioned entities, optionally of one label.
pub(crate) fn top_entities(
    conn: &Connection,
    label: Option<&str>,
    n: usize,
) -> Result<Vec<Entity>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {ENTITY_COLS} FROM entities WHERE ?1 IS NULL OR label = ?1 ORDER BY df DESC, key LIMIT ?2"
    ))?;
    let rows = stmt.query_map(params![label, n as i64], row_to_entity)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

fn entity_by_id(conn: &Connection, id: i64) -> Result<Option<Entity>> {
    let mut stmt =
        conn.prepare_cached(&format!("SELECT {ENTITY_COLS} FROM entities WHERE id = ?1"))?;
    Ok(stmt.query_row([id], row_to_entity).optional()?)
}

/// The chunks of the documents a query names exactly: their title and the query hold the
/// same words, case and punctuation aside and a parenthetical kept ("OK Go (album)" names
/// the album's page, not the band's "OK Go", though both are the one entity `ok go`). At
/// most `n`, in chunk order.
///
/// A query that is a page's name asks for that page first. The walk cannot give it: it
/// scores the chunks that mention the entities the query links, so the page itself ranks
/// below pages that mention it often ("2011 Pulitzer Prize" links `pulitzer prize`, whose
/// winners' pages fill the list), and in hybrid fusion a page first in BM25 and dense but
/// absent from the graph's list lost to pages in all three (RRF: 2/61 against 3/64).
pub(crate) fn titled_chunks(conn: &Connection, query: &str, n: usize) -> Result<Vec<i64>> {
    let wanted = crate::walker::title_words(query);
    if wanted.is_empty() || n == 0 {
        return Ok(Vec::new());
    }
    let Some(entity): Option<i64> = conn
        .prepare_cached("SELECT id FROM entities WHERE key = ?1 AND label = 'title'")?
        .query_row([entities::normalize(query)], |r| r.get(0))
        .optional()?
    else {
        return Ok(Vec::new());
    };
    // A title mention has confidence 1.0, the most any mention has: the entity's pages
    // are read off the front of `mentions_by_entity_confidence` (with any text mention
    // that also reached 1.0, which the title comparison below drops).
    let mut stmt = conn.prepare_cached(
        "SELECT m.chunk_id, d.title FROM mentions m
         JOIN chunks c ON c.id = m.chunk_id JOIN documents d ON d.doc_id = c.doc_id
         WHERE m.entity_id = ?1 AND m.confidence >= 1.0",
    )?;
    let mut found: Vec<i64> = stmt
        .query_map([entity], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
        })?
        .filter_map(|row| match row {
            Ok((id, title)) => (crate::walker::title_words(&title) == wanted).then_some(Ok(id)),
            Err(e) => Some(Err(e)),
        })
        .collect::<rusqlite::Result<_>>()?;
    found.sort_unstable();
    found.truncate(n);
    Ok(found)
}

/// Links a surface form to up to `max` entities: exact key, then alias, then fuzzy
/// (normalised Levenshtein similarity of the keys >= `threshold`, candidates sharing a
/// word or a word's first three letters); the first stage with a match answers.
pub(crate) fn link(
    conn: &Connection,
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
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {ENTITY_COLS} FROM entities WHERE key = ?1"
    ))?;
    if let Some(e) = stmt.query_row([&key], row_to_entity).optional()? {
        return Ok(vec![make(e, 1.0, LinkStage::Exact)]);
    }
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {ENTITY_COLS} FROM entities WHERE id IN (SELECT entity_id FROM entity_aliases WHERE alias = ?1) ORDER BY df DESC LIMIT ?2"
    ))?;
    let aliased: Vec<Entity> = stmt
        .query_map(params![key, max as i64], row_to_entity)?
        .collect::<rusqlite::Result<_>>()?;
    if !aliased.is_empty() {
        return Ok(aliased
            .into_iter()
            .map(|e| make(e, 0.95, LinkStage::Alias))
            .collect());
    }
    // Fuzzy: candidates share a word of two or more letters with the mention; the rarest
    // words first, so a common word ("john") cannot crowd out the telling one.
    let mut words: Vec<(&str, i64)> = Vec::new();
    let mut count = conn.prepare_cached("SELECT count(*) FROM entity_words WHERE word = ?1")?;
    for w in key.split(' ').filter(|w| w.chars().count() > 1) {
        let n: i64 = count.query_row([w], |r| r.get(0))?;
        if n > 0 {
            words.push((w, n));
        }
    }
    words.sort_by_key(|&(_, n)| n);
    let mut candidates: HashSet<i64> = HashSet::new();
    let mut by_word =
        conn.prepare_cached("SELECT entity_id FROM entity_words WHERE word = ?1 LIMIT 512")?;
    for (w, _) in words.iter().take(3) {
        for id in by_word.query_map([w], |r| r.get::<_, i64>(0))? {
            candidates.insert(id?);
        }
    }
    // A misspelt word shares no word, but most often its first three letters: a range
    // scan of the word index ("orin" finds "orrin").
    let mut by_prefix = conn.prepare_cached(
        "SELECT entity_id FROM entity_words WHERE word >= ?1 AND word < ?1 || char(1114111) LIMIT 256",
    )?;
    for w in key.split(' ') {
        let prefix: String = w.chars().take(3).collect();
        if prefix.chars().count() < 3 {
            continue;
        }
        for id in by_prefix.query_map([&prefix], |r| r.get::<_, i64>(0))? {
            candidates.insert(id?);
        }
    }
    let mut found = Vec::with_capacity(candidates.len());
    for id in candidates {
        found.extend(entity_by_id(conn, id)?);
    }
    Ok(crate::walker::rank_fuzzy(&key, found, threshold, max)
        .into_iter()
        .map(|(sim, e)| make(e, sim, LinkStage::Fuzzy))
        .collect())
}

/// Named entities (titles, names, acronyms; not dates or noun phrases) mentioned in
/// `chunks`, most confidently mentioned first, at most `n`: the candidates a mention is
/// compared with by embedding.
pub(crate) fn named_entities_in(
    conn: &Connection,
    chunks: &[i64],
    n: usize,
) -> Result<Vec<Entity>> {
    let mut best: HashMap<i64, f32> = HashMap::new();
    let mut stmt = conn.prepare_cached(
        "SELECT m.entity_id, m.confidence FROM mentions m JOIN entities e ON e.id = m.entity_id
         WHERE m.chunk_id = ?1 AND e.label IN ('title', 'name', 'acronym')",
    )?;
    for &chunk in chunks {
        for row in stmt.query_map([chunk], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, f32>(1)?)))? {
            let (id, c) = row?;
            let b = best.entry(id).or_default();
            *b = b.max(c);
        }
    }
    let mut ranked: Vec<(i64, f32)> = best.into_iter().collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut out = Vec::with_capacity(n.min(ranked.len()));
    for (id, _) in ranked.into_iter().take(n) {
        if let Some(e) = entity_by_id(conn, id)? {
            out.push(e);
        }
    }
    Ok(out)
}

/// The chunks mentioning an entity, most confident first.
fn chunks_of(conn: &Connection, entity: i64, n: usize) -> Result<Vec<(i64, f32)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT chunk_id, confidence FROM mentions WHERE entity_id = ?1 ORDER BY confidence DESC, chunk_id LIMIT ?2",
    )?;
    let rows = stmt.query_map(params![entity, n as i64], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The entities mentioned in an entity's `?2` most confident chunks, with their best
/// confidence there and their mention count. Grouped before the join, so each one's count
/// is looked up once, not once per chunk that mentions it; the chunks' mentions come from
/// `mentions_by_chunk_covering` alone.
const CO_MENTIONS: &str = "SELECT x.entity_id, x.confidence, e.df FROM
   (SELECT m2.entity_id, max(m2.confidence) AS confidence FROM
      (SELECT chunk_id FROM mentions WHERE entity_id = ?1 ORDER BY confidence DESC LIMIT ?2) m1
    JOIN mentions m2 ON m2.chunk_id = m1.chunk_id
    WHERE m2.entity_id != ?1 GROUP BY m2.entity_id) x
 JOIN entities e ON e.id = x.entity_id";

/// The entities an entity `?1` has relations with, either way, with the relation's best
/// confidence and their mention count. At most the 512 most confident relations each way:
/// a hub's relations are bounded like its mentions, so one walk step costs the same at any
/// index size (a million chunks of encyclopaedic text hold ~600 entities with more). Only
/// the columns the covering indexes hold are read, in their order.
const RELATED: &str = "SELECT r.object, max(r.confidence), e.df FROM
   (SELECT object, confidence FROM relations WHERE subject = ?1 ORDER BY confidence DESC LIMIT 512) r
 JOIN entities e ON e.id = r.object GROUP BY r.object
 UNION ALL
 SELECT r.subject, max(r.confidence), e.df FROM
   (SELECT subject, confidence FROM relations WHERE object = ?1 ORDER BY confidence DESC LIMIT 512) r
 JOIN entities e ON e.id = r.subject GROUP BY r.subject";

/// An entity's neighbours with the strength of the edge: relations either way (their
/// pattern's confidence) and, when `co_mentions`, entities mentioned in the same chunks
/// (half their mention confidence); the strongest `n`, weighed by how specific each is.
/// Each comes with its mention count, so that the walk needs no lookup of its own.
fn neighbours(
    conn: &Connection,
    entity: i64,
    walk: &GraphWalk,
    total: u64,
) -> Result<Vec<(i64, f32, u64)>> {
    let mut rel = conn.prepare_cached(RELATED)?;
    let related = rel
        .query_map([entity], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, f32>(1)?,
                r.get::<_, i64>(2)? as u64,
            ))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let co_mentioned = if walk.co_mentions {
        let mut co = conn.prepare_cached(CO_MENTIONS)?;
        co.query_map(params![entity, walk.chunks_per_entity as i64], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, f32>(1)?,
                r.get::<_, i64>(2)? as u64,
            ))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?
    } else {
        Vec::new()
    };
    Ok(crate::walker::rank_neighbours(
        related,
        co_mentioned,
        walk,
        total,
    ))
}

pub(crate) use crate::walker::Walked;

/// The seed's traversal ([`crate::walker::Walker`]) over SQLite, one entity's chunks and
/// neighbours at a time (each is an index range read in-process). Returns the reached
/// entities (id, hop, weight: [`reached`] looks them up) and the chunks' summed scores.
pub(crate) fn walk(
    conn: &Connection,
    links: &[Link],
    walk: &GraphWalk,
    total: u64,
) -> Result<(Vec<Walked>, HashMap<i64, f32>)> {
    let mut walker = crate::walker::Walker::new(links, walk, total);
    loop {
        let mut chunks = HashMap::new();
        let mut next = HashMap::new();
        for id in walker.frontier_ids() {
            chunks.insert(id, chunks_of(conn, id, walk.chunks_per_entity)?);
            if walker.expands() {
                next.insert(id, neighbours(conn, id, walk, total)?);
            }
        }
        if !walker.step(&chunks, &next) {
            break;
        }
    }
    Ok(walker.finish())
}

/// The entities a [`walk`] reached, looked up, in its order. Only an explanation needs
/// them: a search skips this, which at a million chunks was a lookup for every neighbour
/// of every expanded entity (up to `frontier x fanout` per hop).
pub(crate) fn reached(conn: &Connection, walked: Vec<Walked>) -> Result<Vec<Reached>> {
    let mut out = Vec::with_capacity(walked.len());
    for (id, hop, weight) in walked {
        if let Some(entity) = entity_by_id(conn, id)? {
            out.push(Reached {
                entity,
                hop,
                weight,
            });
        }
    }
    Ok(out)
}

/// Relations an entity takes part in, either side.
pub(crate) fn relations_of(
    conn: &Connection,
    entity: i64,
    n: usize,
) -> Result<Vec<StoredRelation>> {
    let mut stmt = conn.prepare_cached(
        "SELECT s.name, r.predicate, o.name, r.pattern, r.confidence, r.chunk_id FROM relations r
         JOIN entities s ON s.id = r.subject JOIN entities o ON o.id = r.object
         WHERE r.subject = ?1 OR r.object = ?1 ORDER BY r.confidence DESC, r.chunk_id LIMIT ?2",
    )?;
    let rows = stmt.query_map(params![entity, n as i64], |r| {
        Ok(StoredRelation {
            subject: r.get(0)?,
            predicate: r.get(1)?,
            object: r.get(2)?,
            pattern: r.get(3)?,
            confidence: r.get(4)?,
            chunk: ChunkId(r.get::<_, i64>(5)? as u64),
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The chunks mentioning an entity, most confident first (for `graph show`).
pub(crate) fn mentions_of(conn: &Connection, entity: i64, n: usize) -> Result<Vec<(ChunkId, f32)>> {
    Ok(chunks_of(conn, entity, n)?
        .into_iter()
        .map(|(c, conf)| (ChunkId(c as u64), conf))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lines of SQLite's plan for `sql`.
    fn plan(conn: &Connection, sql: &str) -> Vec<String> {
        let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        // An entity id, then a limit.
        let values: Vec<i64> = (0..stmt.parameter_count())
            .map(|i| if i == 0 { 1 } else { 32 })
            .collect();
        stmt.query_map(rusqlite::params_from_iter(values), |r| {
            r.get::<_, String>(3)
        })
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
    }

    #[test]
    fn the_walk_reads_mentions_from_indexes_alone() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(SCHEMA).unwrap();
        // Both reads of `table` in the query's plan come from an index alone.
        let covered = |sql: &str, table: &str| {
            let lines = plan(&conn, sql);
            let reads: Vec<&String> = lines.iter().filter(|l| l.contains(table)).collect();
            assert_eq!(reads.len(), 2, "{lines:?}");
            assert!(
                reads.iter().all(|l| l.contains("COVERING INDEX")),
                "a {table} row looked up in the table: {lines:?}"
            );
            lines
        };
        covered(CO_MENTIONS, "mentions");
        let lines = covered(RELATED, "relations");
        // A hub's most confident relations come in index order, not sorted from all.
        assert!(
            !lines.iter().any(|l| l.contains("FOR ORDER BY")),
            "{lines:?}"
        );
        let lines = plan(
            &conn,
            "SELECT chunk_id, confidence FROM mentions WHERE entity_id = ?1 ORDER BY confidence DESC, chunk_id LIMIT ?2",
        );
        assert!(
            lines
                .iter()
                .any(|l| l.contains("COVERING INDEX mentions_by_entity_confidence"))
                && !lines.iter().any(|l| l.contains("TEMP B-TREE")),
            "{lines:?}"
        );
    }

    #[test]
    fn an_index_made_before_gains_the_covering_indexes() {
        let conn = Connection::open_in_memory().unwrap();
        // The mentions table and its chunk index as they were made before.
        conn.execute_batch(
            "CREATE TABLE mentions(entity_id INTEGER NOT NULL, chunk_id INTEGER NOT NULL,
               confidence REAL NOT NULL, PRIMARY KEY(entity_id, chunk_id)) WITHOUT ROWID;
             CREATE INDEX mentions_by_chunk ON mentions(chunk_id);
             INSERT INTO mentions VALUES (1, 7, 0.9), (2, 7, 0.4);
             CREATE TABLE relations(subject INTEGER NOT NULL, predicate TEXT NOT NULL,
               object INTEGER NOT NULL, pattern TEXT NOT NULL, confidence REAL NOT NULL,
               chunk_id INTEGER NOT NULL);
             CREATE INDEX relations_by_subject ON relations(subject);
             CREATE INDEX relations_by_object ON relations(object);",
        )
        .unwrap();
        conn.execute_batch(SCHEMA).unwrap();
        let indexes: Vec<String> = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name IN ('mentions', 'relations')")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert!(
            indexes.contains(&"mentions_by_chunk_covering".to_string()),
            "{indexes:?}"
        );
        for gone in [
            "mentions_by_chunk",
            "relations_by_subject",
            "relations_by_object",
        ] {
            assert!(!indexes.contains(&gone.to_string()), "{indexes:?}");
        }
        for made in [
            "relations_by_subject_covering",
            "relations_by_object_covering",
        ] {
            assert!(indexes.contains(&made.to_string()), "{indexes:?}");
        }
        let n: i64 = conn
            .query_row(
                "SELECT count(*) FROM mentions WHERE chunk_id = 7",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(n, 2);
        // Run again (every open does): nothing changes.
        conn.execute_batch(SCHEMA).unwrap();
    }
}
