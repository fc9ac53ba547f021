//! SQLite: the source of truth for documents, chunks and embeddings.

use crate::{Error, Result, graph};
use metarag_core::{
    Chunk, ChunkDraft, ChunkId, CollectionId, DocFormat, DocId, Document, DocumentUpdate, Filter,
    StoreStats,
};
use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, params, params_from_iter};
use std::path::Path;

/// Version 2 added `documents.metadata` (JSON text); version 3 the collections (a
/// `collections` table, `documents.collection` and `events.collection`). An older index
/// gains the columns when it is first opened, every document and event in the default
/// collection.
const SCHEMA_VERSION: &str = "3";

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS documents(
    doc_id TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    source TEXT NOT NULL,
    format TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    date INTEGER,
    ingested_at INTEGER NOT NULL,
    chunk_count INTEGER NOT NULL,
    text TEXT,
    metadata TEXT NOT NULL DEFAULT '{}',
    collection TEXT NOT NULL DEFAULT 'default'
);
-- The collections, so that one without documents yet can be listed and scoped to.
CREATE TABLE IF NOT EXISTS collections(
    name TEXT PRIMARY KEY,
    created_at INTEGER NOT NULL
);
-- AUTOINCREMENT: ids are never reused, so a chunk id held by a caller can't come to mean
-- another text after its document was replaced.
CREATE TABLE IF NOT EXISTS chunks(
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    doc_id TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE,
    ordinal INTEGER NOT NULL,
    section TEXT NOT NULL,
    page_start INTEGER,
    page_end INTEGER,
    byte_start INTEGER NOT NULL,
    byte_end INTEGER NOT NULL,
    token_count INTEGER NOT NULL,
    text TEXT NOT NULL,
    embedding BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_by_doc ON chunks(doc_id, ordinal);
-- The audit memory: one row per document version written or removed, kept after the
-- document is gone (no foreign key), in the same transaction as the change.
CREATE TABLE IF NOT EXISTS events(
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at INTEGER NOT NULL,
    kind TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    title TEXT NOT NULL,
    detail TEXT NOT NULL,
    collection TEXT NOT NULL DEFAULT 'default'
);
CREATE INDEX IF NOT EXISTS events_by_time ON events(at);
-- Chunks handed over ahead of their document's write (`Store::stage`), in the order they
-- came (`seq`). Nothing reads them but the write that claims their stage, which moves them
-- into `chunks`; a writer empties the table when it opens the index, so a stage whose
-- writer died is dropped. Added without a schema version: an older metarag ignores it.
CREATE TABLE IF NOT EXISTS staged_chunks(
    stage INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    ordinal INTEGER NOT NULL,
    section TEXT NOT NULL,
    page_start INTEGER,
    page_end INTEGER,
    byte_start INTEGER NOT NULL,
    byte_end INTEGER NOT NULL,
    token_count INTEGER NOT NULL,
    text TEXT NOT NULL,
    embedding BLOB NOT NULL,
    PRIMARY KEY (stage, seq)
);
CREATE INDEX IF NOT EXISTS events_by_doc ON events(doc_id, at);
";

/// What needs the columns of version 3, run after an older index gained them.
const COLLECTION_INDEXES: &str = "
CREATE INDEX IF NOT EXISTS documents_by_collection ON documents(collection);
CREATE INDEX IF NOT EXISTS events_by_collection ON events(collection, at);
INSERT OR IGNORE INTO collections(name, created_at) VALUES ('default', 0);
";

const CHUNK_COLS: &str = "c.id, c.doc_id, d.title, c.ordinal, c.section, c.page_start, c.page_end, c.byte_start, c.byte_end, c.token_count, c.text";

pub(crate) struct Db {
    conn: Connection,
}

/// Rows a staged document is read back in, per page.
pub(crate) const PAGE: usize = 4096;

/// One chunk of a staged document, read back from SQLite.
pub(crate) struct PagedChunk {
    pub id: ChunkId,
    pub ordinal: u32,
    pub text: String,
    pub vector: Option<Vec<f32>>,
}

pub(crate) struct Tx<'a> {
    tx: rusqlite::Transaction<'a>,
    /// Whether this write keeps the entity graph up to date.
    graph: bool,
    /// Entities whose mentions this write changed (settled at commit).
    touched: std::cell::RefCell<graph::Touched>,
}

impl Db {
    pub fn open(path: &Path) -> Result<Self> {
        let conn = Connection::open(path)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        conn.execute_batch(SCHEMA)?;
        conn.execute_batch(graph::SCHEMA)?;
        let db = Db { conn };
        match db.meta("schema_version")? {
            None => db.set_meta("schema_version", SCHEMA_VERSION)?,
            Some(v) if v == SCHEMA_VERSION => {}
            Some(v) if v == "1" || v == "2" => {
                // One transaction: an index is at one version or the next, never between.
                let tx = db.conn.unchecked_transaction()?;
                if v == "1" {
                    tx.execute_batch(
                        "ALTER TABLE documents ADD COLUMN metadata TEXT NOT NULL DEFAULT '{}'",
                    )?;
                }
                tx.execute_batch(
                    "ALTER TABLE documents ADD COLUMN collection TEXT NOT NULL DEFAULT 'default';
                     ALTER TABLE events ADD COLUMN collection TEXT NOT NULL DEFAULT 'default';",
                )?;
                tx.execute(
                    "UPDATE meta SET value = ?1 WHERE key = 'schema_version'",
                    [SCHEMA_VERSION],
                )?;
                tx.commit()?;
            }
            Some(v) => {
                return Err(Error::Corrupt(format!(
                    "{}: schema version {v}, this metarag reads version {SCHEMA_VERSION}",
                    path.display()
                )));
            }
        }
        db.conn.execute_batch(COLLECTION_INDEXES)?;
        Ok(db)
    }

    fn meta(&self, key: &str) -> Result<Option<String>> {
        Ok(self
            .conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()?)
    }

    fn set_meta(&self, key: &str, value: &str) -> Result<()> {
        self.conn.execute(
            "INSERT INTO meta(key, value) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            params![key, value],
        )?;
        Ok(())
    }

    pub fn embedder(&self) -> Result<Option<(String, usize)>> {
        let (Some(name), Some(dim)) = (self.meta("embedder")?, self.meta("dimension")?) else {
            return Ok(None);
        };
        let dim = dim
            .parse()
            .map_err(|_| Error::Corrupt(format!("dimension `{dim}` is not a number")))?;
        Ok(Some((name, dim)))
    }

    /// Records the embedder on first use; afterwards insists on the same one.
    pub fn check_embedder(&self, name: &str, dim: usize) -> Result<()> {
        match self.embedder()? {
            None => {
                self.set_meta("embedder", name)?;
                self.set_meta("dimension", &dim.to_string())
            }
            Some((recorded, recorded_dim)) if recorded == name && recorded_dim == dim => Ok(()),
            Some((recorded, recorded_dim)) => Err(Error::EmbedderMismatch {
                recorded,
                recorded_dim,
                requested: name.to_string(),
                requested_dim: dim,
            }),
        }
    }

    pub fn generation(&self) -> Result<u64> {
        generation(&self.conn)
    }

    /// Starts a write; with `graph`, the write keeps the entity graph up to date.
    pub fn begin(&mut self, graph: bool) -> Result<Tx<'_>> {
        Ok(Tx {
            tx: self.conn.transaction()?,
            graph,
            touched: Default::default(),
        })
    }

    /// The connection, for the graph's queries.
    pub fn conn(&self) -> &Connection {
        &self.conn
    }

    /// Whether the entity graph matches the chunks at `generation`, built by this
    /// extractor.
    pub fn graph_current(&self, generation: u64) -> Result<bool> {
        Ok(
            self.meta("graph_version")?.as_deref() == Some(graph::GRAPH_VERSION)
                && self.meta("graph_generation")? == Some(generation.to_string()),
        )
    }

    /// Re-extracts the entity graph from every chunk, in one transaction.
    pub fn rebuild_graph(&mut self, generation: u64) -> Result<usize> {
        let tx = self.conn.transaction()?;
        let n = graph::rebuild(&tx)?;
        set_graph_meta(&tx, generation)?;
        tx.commit()?;
        Ok(n)
    }

    /// Chunks in the staging table.
    pub fn staged_count(&self) -> Result<usize> {
        let n: i64 = self
            .conn
            .query_row("SELECT count(*) FROM staged_chunks", [], |r| r.get(0))?;
        Ok(n as usize)
    }

    /// Drops every staged chunk (stages left by a writer that died); returns how many.
    pub fn clear_staged(&self) -> Result<usize> {
        Ok(self.conn.execute("DELETE FROM staged_chunks", [])?)
    }

    /// Appends chunks to `stage`, after those already staged there, in one transaction.
    pub fn stage(&mut self, stage: u64, chunks: &[(ChunkDraft, Vec<f32>)]) -> Result<()> {
        let tx = self.conn.transaction()?;
        {
            let next: i64 = tx.query_row(
                "SELECT coalesce(max(seq) + 1, 0) FROM staged_chunks WHERE stage = ?1",
                [stage as i64],
                |r| r.get(0),
            )?;
            let mut stmt = tx.prepare_cached(
                "INSERT INTO staged_chunks(stage, seq, ordinal, section, page_start, page_end, byte_start, byte_end, token_count, text, embedding)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            )?;
            for (i, (c, v)) in chunks.iter().enumerate() {
                let key = [Value::from(stage as i64), Value::from(next + i as i64)];
                stmt.execute(params_from_iter(key.into_iter().chain(draft_columns(c, v))))?;
            }
        }
        Ok(tx.commit()?)
    }

    pub fn content_hash(&self, id: &DocId) -> Result<Option<String>> {
        Ok(self
            .conn
            .query_row(
                "SELECT content_hash FROM documents WHERE doc_id = ?1",
                [id.as_str()],
                |r| r.get(0),
            )
            .optional()?)
    }

    pub fn chunk_ids_of(&self, docs: &[&DocId]) -> Result<Vec<ChunkId>> {
        chunk_ids_of(&self.conn, docs)
    }

    pub fn chunks(&self, ids: &[ChunkId]) -> Result<Vec<Chunk>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {CHUNK_COLS} FROM chunks c JOIN documents d ON d.doc_id = c.doc_id WHERE c.id = ?1"
        ))?;
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(c) = stmt.query_row([id.0 as i64], row_to_chunk).optional()? {
                out.push(c?);
            }
        }
        Ok(out)
    }

    /// The chunks of one document in order, each with its embedding.
    pub fn chunks_with_vectors(&self, id: &DocId) -> Result<Vec<(Chunk, Vec<f32>)>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {CHUNK_COLS}, c.embedding FROM chunks c JOIN documents d ON d.doc_id = c.doc_id WHERE c.doc_id = ?1 ORDER BY c.ordinal"
        ))?;
        let mut rows = stmt.query([id.as_str()])?;
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            let chunk = row_to_chunk(row)??;
            out.push((chunk, blob_to_vector(&row.get::<_, Vec<u8>>(11)?)?));
        }
        Ok(out)
    }

    /// Visits every chunk in id order, with its embedding when `with_vectors`.
    pub fn for_each_chunk(
        &self,
        with_vectors: bool,
        mut f: impl FnMut(Chunk, Option<Vec<f32>>) -> Result<()>,
    ) -> Result<()> {
        let mut stmt = self.conn.prepare(&format!(
            "SELECT {CHUNK_COLS}, c.embedding FROM chunks c JOIN documents d ON d.doc_id = c.doc_id ORDER BY c.id"
        ))?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            let chunk = row_to_chunk(row)??;
            let vector = if with_vectors {
                Some(blob_to_vector(&row.get::<_, Vec<u8>>(11)?)?)
            } else {
                None
            };
            f(chunk, vector)?;
        }
        Ok(())
    }

    pub fn document(&self, id: &DocId) -> Result<Option<Document>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT doc_id, title, source, format, content_hash, bytes, date, ingested_at, chunk_count, text, metadata, collection FROM documents WHERE doc_id = ?1",
        )?;
        match stmt
            .query_row([id.as_str()], |r| row_to_document(r, true))
            .optional()?
        {
            Some(d) => Ok(Some(d?)),
            None => Ok(None),
        }
    }

    pub fn documents(&self) -> Result<Vec<Document>> {
        let mut stmt = self.conn.prepare(
            "SELECT doc_id, title, source, format, content_hash, bytes, date, ingested_at, chunk_count, NULL, metadata, collection FROM documents ORDER BY doc_id",
        )?;
        let rows = stmt.query_map([], |r| row_to_document(r, false))?;
        let mut out = Vec::new();
        for r in rows {
            out.push(r??);
        }
        Ok(out)
    }

    pub fn filter_documents(&self, filter: &Filter) -> Result<Vec<DocId>> {
        let mut sql = String::from("SELECT doc_id FROM documents WHERE 1=1");
        let mut args: Vec<rusqlite::types::Value> = Vec::new();
        if !filter.collections.is_empty() {
            sql.push_str(" AND collection IN (");
            for (i, c) in filter.collections.iter().enumerate() {
                sql.push_str(if i == 0 { "?" } else { ",?" });
                args.push(c.as_str().to_string().into());
            }
            sql.push(')');
        }
        if !filter.doc_ids.is_empty() {
            sql.push_str(" AND doc_id IN (");
            for (i, id) in filter.doc_ids.iter().enumerate() {
                sql.push_str(if i == 0 { "?" } else { ",?" });
                args.push(id.as_str().to_string().into());
            }
            sql.push(')');
        }
        if let Some(t) = &filter.title_contains {
            // instr on lower() rather than LIKE: no wildcard characters to escape in `t`.
            sql.push_str(" AND instr(lower(title), lower(?)) > 0");
            args.push(t.clone().into());
        }
        if let Some(from) = filter.date_from {
            sql.push_str(" AND date >= ?");
            args.push(from.into());
        }
        if let Some(to) = filter.date_to {
            sql.push_str(" AND date < ?");
            args.push(to.into());
        }
        filter
            .validate()
            .map_err(|e| Error::Filter(e.to_string()))?;
        for (key, value) in &filter.metadata {
            // The key's value, or an element of its list, of the same JSON type and equal:
            // `json_each` gives scalars as SQL values (numbers compare by value) and booleans
            // as 1/0, so the type is compared too.
            let (types, v): (&str, rusqlite::types::Value) = match value {
                serde_json::Value::String(s) => ("'text'", s.clone().into()),
                serde_json::Value::Bool(b) => (if *b { "'true'" } else { "'false'" }, 1.into()),
                serde_json::Value::Number(n) => match n.as_i64() {
                    Some(i) => ("'integer', 'real'", i.into()),
                    None => ("'integer', 'real'", n.as_f64().unwrap_or(f64::NAN).into()),
                },
                // `validate` refused the rest.
                _ => continue,
            };
            let matches = |alias: &str| {
                if value.is_boolean() {
                    format!("{alias}.type IN ({types})")
                } else {
                    format!("{alias}.type IN ({types}) AND {alias}.value = ?")
                }
            };
            sql.push_str(&format!(
                " AND EXISTS (SELECT 1 FROM json_each(documents.metadata) AS m WHERE m.key = ? AND \
                 (({m}) OR (m.type = 'array' AND EXISTS (SELECT 1 FROM json_each(m.value) AS e WHERE {e}))))",
                m = matches("m"),
                e = matches("e"),
            ));
            args.push(key.clone().into());
            if !value.is_boolean() {
                args.push(v.clone());
                args.push(v);
            }
        }
        let mut stmt = self.conn.prepare(&sql)?;
        let rows = stmt.query_map(params_from_iter(args), |r| r.get::<_, String>(0))?;
        let mut out = Vec::new();
        for r in rows {
            out.push(DocId::new(r?).map_err(|e| Error::Corrupt(e.to_string()))?);
        }
        Ok(out)
    }

    /// Every collection with its document and chunk counts, by name.
    pub fn collections(&self) -> Result<Vec<metarag_core::CollectionInfo>> {
        let mut stmt = self.conn.prepare(
            "SELECT c.name, c.created_at, count(d.doc_id), coalesce(sum(d.chunk_count), 0)
             FROM collections c LEFT JOIN documents d ON d.collection = c.name
             GROUP BY c.name ORDER BY c.name",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, i64>(3)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (name, created_at, documents, chunks) = row?;
            out.push(metarag_core::CollectionInfo {
                name: CollectionId::new(name).map_err(|e| Error::Corrupt(e.to_string()))?,
                created_at,
                documents: documents as u64,
                chunks: chunks as u64,
            });
        }
        Ok(out)
    }

    /// Audit events at or after `from` and before `to`, for documents whose title contains
    /// `title` (case-insensitive), of the `collections` named (every one when empty),
    /// newest first.
    pub fn events(
        &self,
        from: Option<i64>,
        to: Option<i64>,
        title: Option<&str>,
        collections: &[CollectionId],
        limit: usize,
    ) -> Result<Vec<crate::AuditEvent>> {
        // The collections as a JSON list: one statement, cached, whatever their number.
        let scope = (!collections.is_empty()).then(|| {
            serde_json::Value::from(
                collections
                    .iter()
                    .map(|c| c.as_str().to_string())
                    .collect::<Vec<_>>(),
            )
            .to_string()
        });
        let mut stmt = self.conn.prepare_cached(
            "SELECT at, kind, doc_id, title, detail, collection FROM events
             WHERE (?1 IS NULL OR at >= ?1) AND (?2 IS NULL OR at < ?2)
               AND (?3 IS NULL OR instr(lower(title), lower(?3)) > 0 OR instr(lower(doc_id), lower(?3)) > 0)
               AND (?5 IS NULL OR collection IN (SELECT value FROM json_each(?5)))
             ORDER BY at DESC, id DESC LIMIT ?4",
        )?;
        let rows = stmt.query_map(params![from, to, title, limit as i64, scope], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, String>(4)?,
                r.get::<_, String>(5)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (at, kind, doc_id, title, detail, collection) = row?;
            out.push(crate::AuditEvent {
                at,
                kind,
                doc_id,
                title,
                collection: CollectionId::new(collection)
                    .map_err(|e| Error::Corrupt(format!("event collection: {e}")))?,
                detail: serde_json::from_str(&detail)
                    .map_err(|e| Error::Corrupt(format!("event detail: {e}")))?,
            });
        }
        Ok(out)
    }

    pub fn stats(&self) -> Result<StoreStats> {
        let documents: i64 = self
            .conn
            .query_row("SELECT count(*) FROM documents", [], |r| r.get(0))?;
        let (chunks, tokens): (i64, i64) = self.conn.query_row(
            "SELECT count(*), coalesce(sum(token_count), 0) FROM chunks",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        Ok(StoreStats {
            documents: documents as u64,
            chunks: chunks as u64,
            tokens: tokens as u64,
            embedder: None,
            dimension: None,
            entities: None,
            relations: None,
        })
    }
}

impl Tx<'_> {
    pub fn generation(&self) -> Result<u64> {
        generation(&self.tx)
    }

    pub fn set_generation(&self, generation: u64) -> Result<()> {
        self.tx.execute(
            "INSERT INTO meta(key, value) VALUES ('generation', ?1) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            [generation.to_string()],
        )?;
        if self.graph {
            set_graph_meta(&self.tx, generation)?;
        }
        Ok(())
    }

    pub fn chunk_ids_of(&self, docs: &[&DocId]) -> Result<Vec<ChunkId>> {
        chunk_ids_of(&self.tx, docs)
    }

    /// Drops the chunks staged under `stage` (an update that was superseded).
    pub fn drop_stage(&self, stage: u64) -> Result<()> {
        self.tx
            .execute("DELETE FROM staged_chunks WHERE stage = ?1", [stage as i64])?;
        Ok(())
    }

    pub fn delete_document(&self, id: &DocId) -> Result<()> {
        if self.graph {
            graph::touch_document(&self.tx, id.as_str(), &mut self.touched.borrow_mut())?;
        }
        // Chunks go with it through ON DELETE CASCADE, and their mentions and relations
        // with them.
        self.tx
            .execute("DELETE FROM documents WHERE doc_id = ?1", [id.as_str()])?;
        Ok(())
    }

    /// Inserts the document and its chunks (its staged chunks first, moved out of the
    /// staging table); returns the ids of the chunks in `u.chunks`, in order. A staged
    /// document's chunks, staged or not, are read back with [`Tx::chunk_page`], and its
    /// mentions are extracted from them here.
    pub fn insert_document(&self, u: &DocumentUpdate) -> Result<Vec<ChunkId>> {
        let d = &u.document;
        let staged: i64 = match u.staged {
            None => 0,
            Some(stage) => self.tx.query_row(
                "SELECT count(*) FROM staged_chunks WHERE stage = ?1",
                [stage.0 as i64],
                |r| r.get(0),
            )?,
        };
        self.tx.execute(
            "INSERT INTO documents(doc_id, title, source, format, content_hash, bytes, date, ingested_at, chunk_count, text, metadata, collection)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            params![
                d.id.as_str(),
                d.title,
                d.source,
                d.format.as_str(),
                d.content_hash,
                d.bytes as i64,
                d.date,
                d.ingested_at,
                staged + u.chunks.len() as i64,
                d.text,
                serde_json::Value::Object(d.metadata.clone()).to_string(),
                d.collection.as_str(),
            ],
        )?;
        // A document written into a collection makes it exist.
        self.tx.execute(
            "INSERT OR IGNORE INTO collections(name, created_at) VALUES (?1, ?2)",
            params![d.collection.as_str(), d.ingested_at],
        )?;
        if let Some(stage) = u.staged {
            // In SQL, a row at a time: the staged chunks never come back into memory whole.
            self.tx.execute(
                "INSERT INTO chunks(doc_id, ordinal, section, page_start, page_end, byte_start, byte_end, token_count, text, embedding)
                 SELECT ?1, ordinal, section, page_start, page_end, byte_start, byte_end, token_count, text, embedding
                 FROM staged_chunks WHERE stage = ?2 ORDER BY seq",
                params![d.id.as_str(), stage.0 as i64],
            )?;
            self.tx.execute(
                "DELETE FROM staged_chunks WHERE stage = ?1",
                [stage.0 as i64],
            )?;
        }
        let mut stmt = self.tx.prepare_cached(
            "INSERT INTO chunks(doc_id, ordinal, section, page_start, page_end, byte_start, byte_end, token_count, text, embedding)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        )?;
        let mut ids = Vec::with_capacity(u.chunks.len());
        for (c, v) in &u.chunks {
            let key = Value::from(d.id.as_str().to_string());
            stmt.execute(params_from_iter(
                std::iter::once(key).chain(draft_columns(c, v)),
            ))?;
            ids.push(ChunkId(self.tx.last_insert_rowid() as u64));
        }
        if self.graph {
            let mut touched = self.touched.borrow_mut();
            if u.staged.is_some() {
                let mut after = None;
                loop {
                    let page = self.chunk_page(&d.id, after, PAGE, false)?;
                    for row in &page {
                        graph::insert_chunk(&self.tx, row.id, &d.title, &row.text, &mut touched)?;
                    }
                    match page.last() {
                        Some(last) if page.len() == PAGE => after = Some((last.ordinal, last.id)),
                        _ => break,
                    }
                }
            } else {
                for (id, (c, _)) in ids.iter().zip(&u.chunks) {
                    graph::insert_chunk(&self.tx, *id, &d.title, &c.text, &mut touched)?;
                }
            }
        }
        Ok(ids)
    }

    /// Up to `n` of a document's chunks in (ordinal, id) order after `after`, with their
    /// vectors when `vectors`: how a staged document is read back a page at a time.
    pub fn chunk_page(
        &self,
        doc: &DocId,
        after: Option<(u32, ChunkId)>,
        n: usize,
        vectors: bool,
    ) -> Result<Vec<PagedChunk>> {
        let (ordinal, id) = after.map_or((-1, -1), |(o, id)| (i64::from(o), id.0 as i64));
        let mut stmt = self.tx.prepare_cached(
            "SELECT id, ordinal, text, CASE WHEN ?5 THEN embedding END FROM chunks
             WHERE doc_id = ?1 AND (ordinal, id) > (?2, ?3) ORDER BY ordinal, id LIMIT ?4",
        )?;
        let rows = stmt.query_map(params![doc.as_str(), ordinal, id, n as i64, vectors], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, Option<Vec<u8>>>(3)?,
            ))
        })?;
        let mut out = Vec::with_capacity(n);
        for row in rows {
            let (id, ordinal, text, blob) = row?;
            out.push(PagedChunk {
                id: ChunkId(id as u64),
                ordinal: ordinal as u32,
                text,
                vector: blob.map(|b| blob_to_vector(&b)).transpose()?,
            });
        }
        Ok(out)
    }

    /// The document's title and the sections of its chunks, if it is stored.
    pub fn outline(&self, id: &DocId) -> Result<Option<(String, Vec<String>)>> {
        let title: Option<String> = self
            .tx
            .query_row(
                "SELECT title FROM documents WHERE doc_id = ?1",
                [id.as_str()],
                |r| r.get(0),
            )
            .optional()?;
        let Some(title) = title else {
            return Ok(None);
        };
        let mut stmt = self
            .tx
            .prepare_cached("SELECT section FROM chunks WHERE doc_id = ?1 ORDER BY ordinal")?;
        let rows = stmt.query_map([id.as_str()], |r| r.get::<_, String>(0))?;
        let paths: Vec<Vec<String>> = rows
            .map(|r| Ok(serde_json::from_str(&r?).unwrap_or_default()))
            .collect::<Result<_>>()?;
        Ok(Some((
            title,
            crate::AuditEvent::section_names(paths.iter().map(Vec::as_slice)),
        )))
    }

    /// The collection a stored document belongs to.
    pub fn collection_of(&self, id: &DocId) -> Result<Option<CollectionId>> {
        let name: Option<String> = self
            .tx
            .query_row(
                "SELECT collection FROM documents WHERE doc_id = ?1",
                [id.as_str()],
                |r| r.get(0),
            )
            .optional()?;
        name.map(|n| CollectionId::new(n).map_err(|e| Error::Corrupt(e.to_string())))
            .transpose()
    }

    /// The documents of a collection.
    pub fn documents_of(&self, collection: &CollectionId) -> Result<Vec<DocId>> {
        let mut stmt = self
            .tx
            .prepare("SELECT doc_id FROM documents WHERE collection = ?1 ORDER BY doc_id")?;
        let rows = stmt.query_map([collection.as_str()], |r| r.get::<_, String>(0))?;
        let mut out = Vec::new();
        for r in rows {
            out.push(DocId::new(r?).map_err(|e| Error::Corrupt(e.to_string()))?);
        }
        Ok(out)
    }

    /// Drops a collection's audit events and its entry (its documents are removed by the
    /// caller, in the same transaction).
    pub fn forget_collection(&self, collection: &CollectionId) -> Result<()> {
        self.tx.execute(
            "DELETE FROM events WHERE collection = ?1",
            [collection.as_str()],
        )?;
        self.tx.execute(
            "DELETE FROM collections WHERE name = ?1",
            [collection.as_str()],
        )?;
        Ok(())
    }

    /// Renames a collection: its entry, its documents and its events.
    pub fn rename_collection(&self, from: &CollectionId, to: &CollectionId) -> Result<()> {
        for sql in [
            "UPDATE collections SET name = ?2 WHERE name = ?1",
            "UPDATE documents SET collection = ?2 WHERE collection = ?1",
            "UPDATE events SET collection = ?2 WHERE collection = ?1",
        ] {
            self.tx.execute(sql, [from.as_str(), to.as_str()])?;
        }
        Ok(())
    }

    /// Whether a collection exists.
    pub fn has_collection(&self, collection: &CollectionId) -> Result<bool> {
        Ok(self
            .tx
            .query_row(
                "SELECT 1 FROM collections WHERE name = ?1",
                [collection.as_str()],
                |_| Ok(()),
            )
            .optional()?
            .is_some())
    }

    /// Adds a collection; false when it existed.
    pub fn create_collection(&self, collection: &CollectionId, at: i64) -> Result<bool> {
        Ok(self.tx.execute(
            "INSERT OR IGNORE INTO collections(name, created_at) VALUES (?1, ?2)",
            params![collection.as_str(), at],
        )? == 1)
    }

    /// Appends an event to the audit memory.
    pub fn record_event(&self, e: &crate::AuditEvent) -> Result<()> {
        self.tx.execute(
            "INSERT INTO events(at, kind, doc_id, title, detail, collection) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                e.at,
                e.kind,
                e.doc_id,
                e.title,
                serde_json::to_string(&e.detail).expect("values serialize"),
                e.collection.as_str(),
            ],
        )?;
        Ok(())
    }

    pub fn commit(self) -> Result<()> {
        if self.graph {
            graph::settle(&self.tx, self.touched.take())?;
        }
        Ok(self.tx.commit()?)
    }
}

/// A chunk's columns after its key (the document, or the stage and its sequence number),
/// in the order `chunks` and `staged_chunks` share: ordinal, section, pages, bytes, token
/// count, text, embedding.
fn draft_columns(c: &ChunkDraft, v: &[f32]) -> [Value; 9] {
    [
        Value::from(i64::from(c.ordinal)),
        Value::from(serde_json::to_string(&c.section).expect("strings serialize")),
        c.pages.map_or(Value::Null, |p| Value::from(i64::from(p.0))),
        c.pages.map_or(Value::Null, |p| Value::from(i64::from(p.1))),
        Value::from(c.bytes.start as i64),
        Value::from(c.bytes.end as i64),
        Value::from(i64::from(c.token_count)),
        Value::from(c.text.clone()),
        Value::from(vector_to_blob(v)),
    ]
}

fn set_graph_meta(conn: &Connection, generation: u64) -> Result<()> {
    for (k, v) in [
        ("graph_version", graph::GRAPH_VERSION.to_string()),
        ("graph_generation", generation.to_string()),
    ] {
        conn.execute(
            "INSERT INTO meta(key, value) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            params![k, v],
        )?;
    }
    Ok(())
}

fn generation(conn: &Connection) -> Result<u64> {
    let v: Option<String> = conn
        .query_row("SELECT value FROM meta WHERE key = 'generation'", [], |r| {
            r.get(0)
        })
        .optional()?;
    match v {
        None => Ok(0),
        Some(v) => v
            .parse()
            .map_err(|_| Error::Corrupt(format!("generation `{v}` is not a number"))),
    }
}

fn chunk_ids_of(conn: &Connection, docs: &[&DocId]) -> Result<Vec<ChunkId>> {
    let mut stmt =
        conn.prepare_cached("SELECT id FROM chunks WHERE doc_id = ?1 ORDER BY ordinal")?;
    let mut out = Vec::new();
    for d in docs {
        let rows = stmt.query_map([d.as_str()], |r| r.get::<_, i64>(0))?;
        for r in rows {
            out.push(ChunkId(r? as u64));
        }
    }
    Ok(out)
}

type Parsed<T> = std::result::Result<T, Error>;

/// Reads a chunk row. The outer `Result` is SQLite's, the inner one says whether the
/// stored values make sense (query_map callbacks can only return SQLite errors).
fn row_to_chunk(r: &rusqlite::Row<'_>) -> rusqlite::Result<Parsed<Chunk>> {
    let id: i64 = r.get(0)?;
    let doc_id: String = r.get(1)?;
    let section: String = r.get(4)?;
    let pages = match (r.get::<_, Option<u32>>(5)?, r.get::<_, Option<u32>>(6)?) {
        (Some(a), Some(b)) => Some((a, b)),
        _ => None,
    };
    let draft = ChunkDraft {
        ordinal: r.get(3)?,
        section: Vec::new(),
        pages,
        bytes: r.get::<_, i64>(7)? as usize..r.get::<_, i64>(8)? as usize,
        token_count: r.get(9)?,
        text: r.get(10)?,
    };
    let title: String = r.get(2)?;
    Ok((|| {
        let section = serde_json::from_str(&section)
            .map_err(|e| Error::Corrupt(format!("chunk {id}: section: {e}")))?;
        let doc_id = DocId::new(doc_id).map_err(|e| Error::Corrupt(e.to_string()))?;
        Ok(Chunk {
            id: ChunkId(id as u64),
            doc_id,
            title,
            draft: ChunkDraft { section, ..draft },
        })
    })())
}

fn row_to_document(r: &rusqlite::Row<'_>, with_text: bool) -> rusqlite::Result<Parsed<Document>> {
    let id: String = r.get(0)?;
    let format: String = r.get(3)?;
    let Some(format) = DocFormat::parse(&format) else {
        return Ok(Err(Error::Corrupt(format!(
            "document {id}: unknown format `{format}`"
        ))));
    };
    let doc = Document {
        id: match DocId::new(id.as_str()) {
            Ok(id) => id,
            Err(e) => return Ok(Err(Error::Corrupt(e.to_string()))),
        },
        title: r.get(1)?,
        source: r.get(2)?,
        format,
        content_hash: r.get(4)?,
        bytes: r.get::<_, i64>(5)? as u64,
        date: r.get(6)?,
        ingested_at: r.get(7)?,
        chunk_count: r.get(8)?,
        text: if with_text { r.get(9)? } else { None },
        metadata: match serde_json::from_str(&r.get::<_, String>(10)?) {
            Ok(serde_json::Value::Object(m)) => m,
            Ok(other) => {
                return Ok(Err(Error::Corrupt(format!(
                    "document {id}: metadata {other}"
                ))));
            }
            Err(e) => {
                return Ok(Err(Error::Corrupt(format!("document {id}: metadata: {e}"))));
            }
        },
        collection: match CollectionId::new(r.get::<_, String>(11)?) {
            Ok(c) => c,
            Err(e) => return Ok(Err(Error::Corrupt(format!("document {id}: {e}")))),
        },
    };
    Ok(Ok(doc))
}

fn vector_to_blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn blob_to_vector(b: &[u8]) -> Result<Vec<f32>> {
    if !b.len().is_multiple_of(4) {
        return Err(Error::Corrupt(format!(
            "embedding blob of {} bytes",
            b.len()
        )));
    }
    Ok(b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vector_blob_round_trips() {
        let v = vec![0.0, -1.5, f32::MIN_POSITIVE, 3.25];
        assert_eq!(blob_to_vector(&vector_to_blob(&v)).unwrap(), v);
        assert!(blob_to_vector(&[0, 1, 2]).is_err());
    }

    #[test]
    fn an_older_database_gains_metadata_and_the_default_collection() {
        for version in ["1", "2"] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("index.sqlite");
            {
                // The tables as that version wrote them, with a document and an event.
                let mut schema =
                    SCHEMA.replace(",\n    collection TEXT NOT NULL DEFAULT 'default'", "");
                if version == "1" {
                    schema = schema.replace(",\n    metadata TEXT NOT NULL DEFAULT '{}'", "");
                }
                let conn = Connection::open(&path).unwrap();
                conn.execute_batch(&schema).unwrap();
                conn.execute_batch(&format!(
                    "INSERT INTO meta(key, value) VALUES ('schema_version', '{version}');
                     INSERT INTO documents(doc_id, title, source, format, content_hash, bytes, ingested_at, chunk_count)
                     VALUES ('old', 'Old', '/old', 'text', 'h', 3, 0, 0);
                     INSERT INTO events(at, kind, doc_id, title, detail) VALUES (5, 'added', 'old', 'Old', '{{}}');"
                ))
                .unwrap();
                let columns = |name: &str| -> i64 {
                    conn.query_row(
                        "SELECT count(*) FROM pragma_table_info('documents') WHERE name = ?1",
                        [name],
                        |r| r.get(0),
                    )
                    .unwrap()
                };
                assert_eq!(columns("collection"), 0, "v{version} has no collections");
                assert_eq!(columns("metadata"), i64::from(version == "2"));
            }
            let db = Db::open(&path).unwrap();
            assert_eq!(
                db.meta("schema_version").unwrap().as_deref(),
                Some(SCHEMA_VERSION)
            );
            let doc = db.document(&DocId::new("old").unwrap()).unwrap().unwrap();
            assert!(doc.metadata.is_empty());
            assert!(doc.collection.is_default(), "v{version}");
            assert_eq!(db.documents().unwrap().len(), 1);
            let listed = db.collections().unwrap();
            assert_eq!(listed.len(), 1);
            assert_eq!(
                (listed[0].name.as_str(), listed[0].documents),
                ("default", 1)
            );
            let events = db
                .events(None, None, None, &[CollectionId::default()], 10)
                .unwrap();
            assert_eq!(
                events.len(),
                1,
                "v{version}: the old event is the default's"
            );
            drop(db);
            // Opened again: nothing to migrate.
            Db::open(&path).unwrap();
        }
    }
}
