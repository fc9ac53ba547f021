//! # metarag-index
//!
//! The embedded hybrid index: one directory holding
//!
//! - `meta.sqlite` (rusqlite): documents, chunks, their text and embeddings — the source of
//!   truth;
//! - `bm25/` (tantivy): an inverted index over chunk titles and text, BM25-ranked;
//! - `dense.usearch` (usearch): an HNSW graph over the chunk embeddings, cosine metric,
//!   with `dense.journal`: the changes since that snapshot, one record per write;
//! - the entity graph (tables in `meta.sqlite`): entities extracted by rules from every
//!   chunk ([`entities`]), the chunks that mention them and the relations between them,
//!   written in the same transaction as the chunks.
//!
//! The two engines are derived from SQLite. Every change ([`EmbeddedIndex::apply`]) bumps a
//! generation number that is written into the tantivy commit payload and into the vector
//! journal's record before the SQLite transaction commits; on open, an engine whose generation differs
//! from SQLite's is rebuilt from SQLite. So a crash at any point leaves the index either
//! before or after the change, never in between.
//!
//! [`EmbeddedIndex`] implements [`metarag_core::Store`]; fusion of the two rankings lives in
//! `metarag-retrieve`. The graph search's logic apart from its storage is [`walker`], which
//! the Postgres store drives with its own queries.

mod bm25;
mod dense;
pub mod entities;
mod error;
mod graph;
mod sql;
pub mod walker;

pub use error::{Error, Result};
pub use graph::{Entity, GRAPH_VERSION, GraphStats, Link, LinkStage, Reached, StoredRelation};

use metarag_core::{
    Chunk, ChunkId, CollectionId, DocId, Document, DocumentUpdate, Filter, GraphWalk, ScoredChunk,
    StageId, Store, StoreRead, StoreStats,
};
use std::borrow::Cow;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

pub use metarag_core::AuditEvent;

/// Settings of an embedded index.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexConfig {
    /// Name of the embedding model; recorded at creation and checked on every open.
    pub embedder: String,
    /// Dimension of its vectors.
    pub dimension: usize,
    /// HNSW graph degree (usearch `connectivity`).
    pub hnsw_m: usize,
    /// Candidate list size while building the graph.
    pub hnsw_ef_construction: usize,
    /// Candidate list size while searching: recall against latency.
    pub hnsw_ef_search: usize,
    /// Memory budget of the tantivy writer, in bytes.
    pub writer_memory: usize,
    /// Weight of a query term matching a chunk's title relative to its text. Titles name
    /// the entity a passage is about, so they are worth more than a body match.
    pub bm25_title_boost: f32,
    /// Most query terms BM25 scores, the rarest by document frequency (0: every term).
    /// Bounds the cost of long questions over large indexes.
    pub bm25_max_terms: usize,
    /// Whether the entity graph is built and kept up to date (a rule-based pass over each
    /// chunk at ingest, no model calls).
    pub graph: bool,
}

impl IndexConfig {
    /// Defaults for an embedder: M=16, ef_construction=128, ef_search=128, 64 MB writer.
    pub fn new(embedder: impl Into<String>, dimension: usize) -> Self {
        IndexConfig {
            embedder: embedder.into(),
            dimension,
            hnsw_m: 16,
            hnsw_ef_construction: 128,
            hnsw_ef_search: 128,
            writer_memory: 64 << 20,
            bm25_title_boost: 1.0,
            bm25_max_terms: 0,
            graph: true,
        }
    }
}

/// What [`EmbeddedIndex::compact`] did.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Compaction {
    /// BM25 segments before.
    pub bm25_segments_before: usize,
    /// BM25 segments after (1, or 0 for an empty index).
    pub bm25_segments_after: usize,
    /// Wall time of the merge.
    pub seconds: f64,
}

/// The embedded index. Cheap to clone; clones share the same engines. Writes are serialised
/// by a lock, reads run concurrently with each other.
#[derive(Clone)]
pub struct EmbeddedIndex {
    inner: Arc<Inner>,
}

struct Inner {
    dir: PathBuf,
    config: IndexConfig,
    db: Mutex<sql::Db>,
    bm25: bm25::Bm25,
    dense: dense::Dense,
    /// Held for the whole of a write so two writers can't interleave generations.
    write_lock: Mutex<()>,
    /// The exclusive lock on `writer.lock` that makes this process the index's only writer
    /// (released by the OS when the process ends, however it ends); `None` read-only.
    _process_lock: Option<std::fs::File>,
    /// Embeds names for the linking cascade's last stage; none: that stage is skipped.
    names: RwLock<Option<Arc<dyn NameEmbedder>>>,
    /// The next stage id ([`EmbeddedIndex::stage`]); staged chunks live only as long as
    /// this writer, so ids restart with each open.
    next_stage: std::sync::atomic::AtomicU64,
}

/// Embeds entity names and query mentions for the last stage of entity linking (seed
/// `001`: exact, alias, fuzzy, then embedding similarity). The index holds no model; the
/// application hands it the embedder it searches with. Called from the blocking thread a
/// graph search runs on.
pub trait NameEmbedder: Send + Sync {
    /// One vector per name, in order, of the index's dimension.
    fn embed_names(&self, names: &[String]) -> metarag_core::Result<Vec<Vec<f32>>>;
}

impl<F> NameEmbedder for F
where
    F: Fn(&[String]) -> metarag_core::Result<Vec<Vec<f32>>> + Send + Sync,
{
    fn embed_names(&self, names: &[String]) -> metarag_core::Result<Vec<Vec<f32>>> {
        self(names)
    }
}

impl EmbeddedIndex {
    /// Opens the index in `dir` for reading and writing, creating it if absent. Fails with
    /// a user error if the index was built with another embedder or dimension, or if
    /// another process has it open for writing ([`Error::Busy`]: then
    /// [`EmbeddedIndex::open_read_only`] still reads it); rebuilds an engine whose
    /// generation lags SQLite's (an interrupted write).
    pub fn open(dir: impl AsRef<Path>, config: IndexConfig) -> Result<Self> {
        let dir = dir.as_ref().to_path_buf();
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        let lock = writer_lock(&dir)?;
        Self::open_with(dir, config, Some(lock))
    }

    /// Opens an existing index for reading only, beside a process that writes to it (a
    /// `metarag search` while `metarag serve` runs). It sees the index as of now; writes
    /// fail with [`Error::ReadOnly`]. An engine that lags SQLite (a write in progress in
    /// the other process) is read as it is rather than rebuilt.
    pub fn open_read_only(dir: impl AsRef<Path>, config: IndexConfig) -> Result<Self> {
        Self::open_with(dir.as_ref().to_path_buf(), config, None)
    }

    /// Opens the engines; with the writer `lock`, for writing (lagging engines rebuilt),
    /// without it, for reading.
    fn open_with(dir: PathBuf, config: IndexConfig, lock: Option<std::fs::File>) -> Result<Self> {
        let writable = lock.is_some();
        let mut db = sql::Db::open(&dir.join("meta.sqlite"))?;
        db.check_embedder(&config.embedder, config.dimension)?;
        let generation = db.generation()?;
        let bm25 = bm25::Bm25::open(
            &dir.join("bm25"),
            writable.then_some(config.writer_memory),
            config.bm25_title_boost,
            config.bm25_max_terms,
        )?;
        let dense = dense::Dense::open(&dir.join("dense.usearch"), &config, generation, writable)?;
        let bm25_current = bm25.generation()? == generation;
        let dense_current = dense.generation() == Some(generation);
        if !writable {
            if !(bm25_current && dense_current) {
                tracing::info!(dir = %dir.display(), "the index is being written by another process; reading it as it is");
            }
        } else {
            if !bm25_current {
                tracing::warn!(dir = %dir.display(), "BM25 index out of date, rebuilding from SQLite");
                rebuild_bm25(&db, &bm25, generation)?;
            }
            if !dense_current {
                tracing::warn!(dir = %dir.display(), "vector index out of date, rebuilding from SQLite");
                rebuild_dense(&db, &dense, generation)?;
            }
            let dropped = db.clear_staged()?;
            if dropped > 0 {
                tracing::info!(dir = %dir.display(), chunks = dropped, "dropped chunks staged by a write that never finished");
            }
            if config.graph && !db.graph_current(generation)? {
                let started = std::time::Instant::now();
                let chunks = db.rebuild_graph(generation)?;
                tracing::info!(dir = %dir.display(), chunks, seconds = started.elapsed().as_secs_f64(), "entity graph built from the stored chunks");
            }
        }
        Ok(EmbeddedIndex {
            inner: Arc::new(Inner {
                dir,
                config,
                db: Mutex::new(db),
                bm25,
                dense,
                write_lock: Mutex::new(()),
                _process_lock: lock,
                names: RwLock::new(None),
                next_stage: std::sync::atomic::AtomicU64::new(1),
            }),
        })
    }

    /// [`EmbeddedIndex::open`], or, when another process writes to the index,
    /// [`EmbeddedIndex::open_read_only`]: for commands that only read.
    pub fn open_for_reading(dir: impl AsRef<Path>, config: IndexConfig) -> Result<Self> {
        match Self::open(dir.as_ref(), config.clone()) {
            Err(Error::Busy { .. }) => Self::open_read_only(dir, config),
            other => other,
        }
    }

    /// Whether writes are refused (opened read-only).
    pub fn is_read_only(&self) -> bool {
        self.inner._process_lock.is_none()
    }

    /// The directory the index lives in.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// The settings it was opened with.
    pub fn config(&self) -> &IndexConfig {
        &self.inner.config
    }

    /// Reads the embedder name and dimension an existing index was built with, without
    /// opening the engines; `None` if `dir` holds no index yet.
    pub fn recorded_embedder(dir: impl AsRef<Path>) -> Result<Option<(String, usize)>> {
        let path = dir.as_ref().join("meta.sqlite");
        if !path.exists() {
            return Ok(None);
        }
        sql::Db::open(&path)?.embedder()
    }

    /// The stored content hash of a document, to skip unchanged re-ingests cheaply.
    pub fn content_hash(&self, id: &DocId) -> Result<Option<String>> {
        self.db().content_hash(id)
    }

    /// Replaces documents and removes others as one atomic change. See the crate docs for
    /// how atomicity across the three engines is kept.
    pub fn apply(&self, updates: Vec<DocumentUpdate>, removals: Vec<DocId>) -> Result<()> {
        let _span = tracing::info_span!(
            "index.apply",
            updates = updates.len(),
            removals = removals.len()
        )
        .entered();
        self.write(updates, Removal::Documents(removals))
            .map(|_| ())
    }

    /// Every collection with its counts, by name.
    pub fn collections(&self) -> Result<Vec<metarag_core::CollectionInfo>> {
        self.db().collections()
    }

    /// Makes an empty collection; false when it existed.
    pub fn create_collection(&self, collection: &CollectionId) -> Result<bool> {
        if self.is_read_only() {
            return Err(Error::ReadOnly(self.inner.dir.clone()));
        }
        let _guard = self.inner.write_lock.lock().map_err(|_| Error::Poisoned)?;
        let mut db = self.db();
        let tx = db.begin(false)?;
        let created = tx.create_collection(collection, unix_now())?;
        tx.commit()?;
        Ok(created)
    }

    /// Renames a collection with its documents and events, in one transaction. Only
    /// SQLite knows collections (the engines search by document), so nothing else moves.
    pub fn rename_collection(&self, from: &CollectionId, to: &CollectionId) -> Result<()> {
        if self.is_read_only() {
            return Err(Error::ReadOnly(self.inner.dir.clone()));
        }
        if from.is_default() || to.is_default() {
            return Err(Error::Collection(
                "the default collection cannot be renamed, nor another renamed to it".into(),
            ));
        }
        let _guard = self.inner.write_lock.lock().map_err(|_| Error::Poisoned)?;
        let mut db = self.db();
        let tx = db.begin(false)?;
        if !tx.has_collection(from)? {
            return Err(Error::Collection(format!("no collection named {from:?}")));
        }
        if tx.has_collection(to)? {
            return Err(Error::Collection(format!(
                "a collection named {to:?} exists already"
            )));
        }
        tx.rename_collection(from, to)?;
        tx.commit()?;
        Ok(())
    }

    /// Deletes a collection: its documents from all three engines and the graph, its audit
    /// events and its entry, as one atomic change (the same write as a removal, without
    /// the `removed` events, which would outlive it). Returns the documents removed.
    pub fn delete_collection(&self, collection: &CollectionId) -> Result<u64> {
        let _span = tracing::info_span!("index.delete_collection", %collection).entered();
        if collection.is_default() {
            return Err(Error::Collection(
                "the default collection cannot be deleted; remove its documents instead".into(),
            ));
        }
        self.write(Vec::new(), Removal::Collection(collection))
    }

    /// One atomic change: `updates`, then the removal. Returns the documents removed.
    fn write(&self, updates: Vec<DocumentUpdate>, removal: Removal<'_>) -> Result<u64> {
        if self.is_read_only() {
            return Err(Error::ReadOnly(self.inner.dir.clone()));
        }
        let _guard = self.inner.write_lock.lock().map_err(|_| Error::Poisoned)?;
        let stages: Vec<StageId> = updates.iter().filter_map(|u| u.staged).collect();
        let mut db = self.db();
        let tx = db.begin(self.inner.config.graph)?;
        let removals = match &removal {
            Removal::Documents(ids) => ids.clone(),
            Removal::Collection(c) => {
                if !tx.has_collection(c)? {
                    return Err(Error::Collection(format!("no collection named {c:?}")));
                }
                tx.documents_of(c)?
            }
        };
        let updates = effective_updates(updates, &removals);
        for u in &updates {
            check_dimension(&u.document.id, &u.chunks, self.inner.config.dimension)?;
            // A document id is one document, in one collection: a write from another
            // collection never replaces it.
            if let Some(held) = tx.collection_of(&u.document.id)?
                && held != u.document.collection
            {
                return Err(Error::Collection(format!(
                    "document {} belongs to collection {held:?}, not {:?}; remove it there first",
                    u.document.id, u.document.collection
                )));
            }
        }
        // Stages of updates this batch superseded are dropped with it.
        for stage in stages {
            if !updates.iter().any(|u| u.staged == Some(stage)) {
                tx.drop_stage(stage.0)?;
            }
        }
        let generation = tx.generation()? + 1;
        let touched: Vec<&DocId> = updates
            .iter()
            .map(|u| &u.document.id)
            .chain(removals.iter())
            .collect();
        let old_ids = tx.chunk_ids_of(&touched)?;
        let now = unix_now();
        let mut new_rows = Vec::new();
        // Documents whose chunks were staged: the engines read them back from SQLite a
        // page at a time rather than from `new_rows`.
        let mut paged: Vec<&Document> = Vec::new();
        for u in &updates {
            let before = tx.outline(&u.document.id)?;
            tx.delete_document(&u.document.id)?;
            let ids = tx.insert_document(u)?;
            if u.staged.is_some() {
                let (_, sections) = tx.outline(&u.document.id)?.unwrap_or_default();
                let count = tx.chunk_ids_of(&[&u.document.id])?.len();
                tx.record_event(&AuditEvent::version(
                    &u.document,
                    sections,
                    count,
                    before.map(|(_, s)| s),
                    now,
                ))?;
                paged.push(&u.document);
            } else {
                let sections =
                    AuditEvent::section_names(u.chunks.iter().map(|(c, _)| c.section.as_slice()));
                tx.record_event(&AuditEvent::version(
                    &u.document,
                    sections,
                    u.chunks.len(),
                    before.map(|(_, s)| s),
                    now,
                ))?;
                for (id, (draft, vector)) in ids.into_iter().zip(&u.chunks) {
                    new_rows.push((id, &u.document.id, &u.document.title, draft, vector));
                }
            }
        }
        for id in &removals {
            if let Removal::Documents(_) = removal
                && let Some((title, sections)) = tx.outline(id)?
            {
                tx.record_event(&AuditEvent::removed(
                    id,
                    title,
                    sections,
                    tx.collection_of(id)?.unwrap_or_default(),
                    now,
                ))?;
            }
            tx.delete_document(id)?;
        }
        if let Removal::Collection(c) = removal {
            tx.forget_collection(c)?;
        }
        tx.set_generation(generation)?;
        // Engines first, SQLite last: if we die before the SQLite commit, the engines are
        // ahead of SQLite and get rebuilt from it on the next open.
        // A failed page read ends its iterator early and is kept here: the engines then
        // hold part of the change, and the failure path below resynchronises them.
        let read_error = std::cell::RefCell::new(None);
        let engines =
            self.inner
                .bm25
                .apply(
                    touched.iter().map(|d| d.as_str()),
                    new_rows
                        .iter()
                        .map(|(id, doc, title, draft, _)| {
                            (
                                *id,
                                doc.as_str(),
                                title.as_str(),
                                Cow::Borrowed(draft.text.as_str()),
                            )
                        })
                        .chain(Paged::new(&tx, &paged, false, &read_error).map(|(d, c)| {
                            (c.id, d.id.as_str(), d.title.as_str(), Cow::Owned(c.text))
                        })),
                    generation,
                )
                .and_then(|()| {
                    self.inner.dense.apply(
                        &old_ids,
                        new_rows
                            .iter()
                            .map(|(id, _, _, _, v)| (*id, Cow::Borrowed(v.as_slice())))
                            .chain(
                                Paged::new(&tx, &paged, true, &read_error)
                                    .map(|(_, c)| (c.id, Cow::Owned(c.vector.unwrap_or_default()))),
                            ),
                        generation,
                    )
                })
                .and_then(|()| read_error.take().map_or(Ok(()), Err));
        let result = engines.and_then(|()| tx.commit());
        if let Err(e) = result {
            // The engines may hold part of a change SQLite rolled back: bring them back to
            // SQLite's state before reporting the failure.
            tracing::error!(error = %e, "index write failed, resynchronising engines from SQLite");
            let generation = db.generation()?;
            rebuild_bm25(&db, &self.inner.bm25, generation)?;
            rebuild_dense(&db, &self.inner.dense, generation)?;
            return Err(e);
        }
        Ok(removals.len() as u64)
    }

    /// Stores a slice of `doc`'s chunks ahead of its write (see [`Store::stage`]): in a
    /// staging table of SQLite that no read looks at, emptied when a writer opens the
    /// index. `None` starts a new stage.
    pub fn stage(
        &self,
        stage: Option<StageId>,
        doc: &DocId,
        chunks: Vec<(metarag_core::ChunkDraft, Vec<f32>)>,
    ) -> Result<StageId> {
        let _span = tracing::info_span!("index.stage", chunks = chunks.len()).entered();
        if self.is_read_only() {
            return Err(Error::ReadOnly(self.inner.dir.clone()));
        }
        check_dimension(doc, &chunks, self.inner.config.dimension)?;
        let stage = stage.unwrap_or_else(|| {
            StageId(
                self.inner
                    .next_stage
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            )
        });
        self.db().stage(stage.0, &chunks)?;
        Ok(stage)
    }

    /// Documents matching `filter`, resolved to the set of allowed document ids; `None`
    /// when the filter is empty (everything allowed).
    fn allowed_docs(&self, filter: &Filter) -> Result<Option<Vec<DocId>>> {
        if filter.is_empty() {
            return Ok(None);
        }
        self.db().filter_documents(filter).map(Some)
    }

    /// The chunks of the documents matching `filter`; `None` when the filter is empty.
    fn allowed_chunks(&self, filter: &Filter) -> Result<Option<HashSet<u64>>> {
        let Some(docs) = self.allowed_docs(filter)? else {
            return Ok(None);
        };
        let ids = self.db().chunk_ids_of(&docs.iter().collect::<Vec<_>>())?;
        Ok(Some(ids.into_iter().map(|c| c.0).collect()))
    }

    /// BM25 ranking of chunks for `query`.
    pub fn lexical(&self, query: &str, n: usize, filter: &Filter) -> Result<Vec<ScoredChunk>> {
        let allowed = self.allowed_docs(filter)?;
        if allowed.as_ref().is_some_and(|d| d.is_empty()) {
            return Ok(Vec::new());
        }
        Ok(scored(self.inner.bm25.search(
            query,
            n,
            allowed.as_deref(),
        )?))
    }

    /// Nearest chunks to `vector` by cosine similarity.
    pub fn nearest(&self, vector: &[f32], n: usize, filter: &Filter) -> Result<Vec<ScoredChunk>> {
        if vector.len() != self.inner.config.dimension {
            return Err(Error::QueryDimension {
                expected: self.inner.config.dimension,
                got: vector.len(),
            });
        }
        let allowed = self.allowed_chunks(filter)?;
        if allowed.as_ref().is_some_and(|a| a.is_empty()) {
            return Ok(Vec::new());
        }
        Ok(scored(self.inner.dense.search(
            vector,
            n,
            allowed.as_ref(),
        )?))
    }

    /// Chunks ranked by a walk of the entity graph from the entities `query` names (see
    /// [`GraphWalk`]); empty when the index keeps no graph or the query names no entity
    /// the graph knows.
    pub fn graph_search(
        &self,
        query: &str,
        n: usize,
        walk: &GraphWalk,
        filter: &Filter,
    ) -> Result<Vec<ScoredChunk>> {
        Ok(self.search_graph(query, n, walk, filter, false)?.2)
    }

    /// [`EmbeddedIndex::graph_search`] with its workings: the links of the query's
    /// mentions, the entities the walk reached, and the ranked chunks.
    pub fn graph_search_explained(
        &self,
        query: &str,
        n: usize,
        walk: &GraphWalk,
        filter: &Filter,
    ) -> Result<(Vec<Link>, Vec<Reached>, Vec<ScoredChunk>)> {
        self.search_graph(query, n, walk, filter, true)
    }

    /// The graph search, with the reached entities looked up when `explain` (else none).
    fn search_graph(
        &self,
        query: &str,
        n: usize,
        walk: &GraphWalk,
        filter: &Filter,
        explain: bool,
    ) -> Result<(Vec<Link>, Vec<Reached>, Vec<ScoredChunk>)> {
        if !self.inner.config.graph || n == 0 {
            return Ok(Default::default());
        }
        let allowed = self.allowed_chunks(filter)?;
        let total = self.inner.dense.len() as u64;
        let (mut links, unlinked) = {
            let db = self.db();
            let mut linker = walker::QueryLinker::new(query);
            while let Some(mention) = linker.next_mention() {
                let found = graph::link(db.conn(), &mention, walk.link_threshold, walk.max_links)?;
                linker.found(mention, found);
            }
            linker.finish()
        };
        if walk.embedding_link && !unlinked.is_empty() {
            links.extend(self.link_by_embedding(&unlinked, walk)?);
        }
        let db = self.db();
        let (walked, scores) = graph::walk(db.conn(), &links, walk, total)?;
        let reached = if explain {
            graph::reached(db.conn(), walked)?
        } else {
            Vec::new()
        };
        let titled = graph::titled_chunks(db.conn(), query, n)?;
        let ranked = walker::rank_chunks(
            scores,
            &titled,
            |id| allowed.as_ref().is_none_or(|a| a.contains(&(id as u64))),
            n,
        );
        Ok((links, reached, ranked))
    }

    /// Gives the index the embedder of the linking cascade's last stage (see
    /// [`NameEmbedder`]); without one, a mention no string stage links is left unlinked.
    pub fn set_name_embedder(&self, embedder: Arc<dyn NameEmbedder>) {
        *self.inner.names.write().unwrap_or_else(|p| p.into_inner()) = Some(embedder);
    }

    /// The cascade's last stage: each mention is embedded, the chunks nearest it give the
    /// candidates (their named entities: the graph holds no entity vectors, so the
    /// neighbourhood of the mention in the chunk index stands in for a search over every
    /// name), and the candidates whose names' embeddings are within `link_threshold`
    /// cosine of the mention's are linked, at most `max_links` each. The index lock is not
    /// held while embedding.
    fn link_by_embedding(&self, mentions: &[String], walk: &GraphWalk) -> Result<Vec<Link>> {
        let Some(embedder) = self
            .inner
            .names
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
        else {
            return Ok(Vec::new());
        };
        let _span = tracing::debug_span!("link_by_embedding", mentions = mentions.len()).entered();
        let dimension = self.inner.config.dimension;
        let embed = |names: &[String]| -> Result<Vec<Vec<f32>>> {
            let vectors = embedder
                .embed_names(names)
                .map_err(|e| Error::NameEmbedding(e.to_string()))?;
            if vectors.len() != names.len() || vectors.iter().any(|v| v.len() != dimension) {
                return Err(Error::NameEmbedding(format!(
                    "expected {} vectors of {dimension} dimensions",
                    names.len()
                )));
            }
            Ok(vectors)
        };
        let vectors = embed(mentions)?;
        let mut candidates: Vec<Vec<Entity>> = Vec::with_capacity(mentions.len());
        for v in &vectors {
            let near: Vec<i64> = self
                .inner
                .dense
                .search(v, walk.embedding_candidates, None)?
                .into_iter()
                .map(|(id, _)| id.0 as i64)
                .collect();
            let db = self.db();
            // Four names a chunk, at most: a few dozen names to embed per mention.
            candidates.push(graph::named_entities_in(
                db.conn(),
                &near,
                walk.embedding_candidates * 4,
            )?);
        }
        let mut names: Vec<String> = candidates
            .iter()
            .flatten()
            .map(|e| e.name.clone())
            .collect();
        names.sort();
        names.dedup();
        if names.is_empty() {
            return Ok(Vec::new());
        }
        let name_vectors = embed(&names)?;
        let by_name: std::collections::HashMap<&str, &[f32]> = names
            .iter()
            .map(String::as_str)
            .zip(name_vectors.iter().map(Vec::as_slice))
            .collect();
        let mut links = Vec::new();
        for ((mention, v), found) in mentions.iter().zip(&vectors).zip(candidates) {
            let mut scored: Vec<(f32, Entity)> = found
                .into_iter()
                .filter_map(|e| {
                    let sim = metarag_core::vector::cosine(v, by_name.get(e.name.as_str())?);
                    (sim >= walk.link_threshold).then_some((sim, e))
                })
                .collect();
            scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.mentions.cmp(&a.1.mentions)));
            links.extend(
                scored
                    .into_iter()
                    .take(walk.max_links)
                    .map(|(sim, e)| Link {
                        mention: mention.clone(),
                        entity: e,
                        similarity: sim,
                        stage: LinkStage::Embedding,
                    }),
            );
        }
        Ok(links)
    }

    /// Links a name to the graph's entities (exact, alias, then fuzzy at `threshold`).
    pub fn link_entity(&self, name: &str, threshold: f32, max: usize) -> Result<Vec<Link>> {
        graph::link(self.db().conn(), name, threshold, max)
    }

    /// The most mentioned entities, optionally of one label (`title`, `name`, `acronym`,
    /// `date`, `concept`).
    pub fn top_entities(&self, label: Option<&str>, n: usize) -> Result<Vec<Entity>> {
        graph::top_entities(self.db().conn(), label, n)
    }

    /// The relations an entity takes part in, strongest first.
    pub fn entity_relations(&self, entity: &Entity, n: usize) -> Result<Vec<StoredRelation>> {
        graph::relations_of(self.db().conn(), entity.id, n)
    }

    /// The chunks that mention an entity, most confident first.
    pub fn entity_mentions(&self, entity: &Entity, n: usize) -> Result<Vec<(ChunkId, f32)>> {
        graph::mentions_of(self.db().conn(), entity.id, n)
    }

    /// The entities a walk from `entity` reaches, with their hop and weight.
    pub fn entity_neighbours(&self, entity: &Entity, walk: &GraphWalk) -> Result<Vec<Reached>> {
        let link = Link {
            mention: entity.name.clone(),
            entity: entity.clone(),
            similarity: 1.0,
            stage: LinkStage::Exact,
        };
        let total = self.inner.dense.len() as u64;
        let db = self.db();
        let walked = graph::walk(db.conn(), &[link], walk, total)?.0;
        graph::reached(db.conn(), walked)
    }

    /// The audit memory: documents added, updated and removed at or after `from` and
    /// before `to` (Unix seconds), optionally only those whose title or id contains
    /// `title`; newest first.
    pub fn audit_events(
        &self,
        from: Option<i64>,
        to: Option<i64>,
        title: Option<&str>,
        collections: &[CollectionId],
        limit: usize,
    ) -> Result<Vec<AuditEvent>> {
        self.db().events(from, to, title, collections, limit)
    }

    /// Counts of entities, mentions and relations.
    pub fn graph_stats(&self) -> Result<GraphStats> {
        graph::stats(self.db().conn())
    }

    /// Chunks by id, in the order asked; unknown ids are skipped.
    pub fn chunks(&self, ids: &[ChunkId]) -> Result<Vec<Chunk>> {
        self.db().chunks(ids)
    }

    /// One document with its text.
    pub fn document(&self, id: &DocId) -> Result<Option<Document>> {
        self.db().document(id)
    }

    /// All documents without text, by id.
    pub fn documents(&self) -> Result<Vec<Document>> {
        self.db().documents()
    }

    /// The chunks of one document, in order.
    pub fn document_chunks(&self, id: &DocId) -> Result<Vec<Chunk>> {
        let db = self.db();
        let ids = db.chunk_ids_of(&[id])?;
        db.chunks(&ids)
    }

    /// One document as the update that would store it again: its record with its text, and
    /// its chunks with their embeddings (copying an index to another store without
    /// embedding again). `None` when there is no such document.
    pub fn export_document(&self, id: &DocId) -> Result<Option<DocumentUpdate>> {
        let db = self.db();
        let Some(document) = db.document(id)? else {
            return Ok(None);
        };
        let chunks = db
            .chunks_with_vectors(id)?
            .into_iter()
            .map(|(c, v)| (c.draft, v))
            .collect();
        Ok(Some(DocumentUpdate::new(document, chunks)))
    }

    /// Counts of documents, chunks and tokens.
    pub fn stats(&self) -> Result<StoreStats> {
        let mut s = self.db().stats()?;
        s.embedder = Some(self.inner.config.embedder.clone());
        s.dimension = Some(self.inner.config.dimension);
        if self.inner.config.graph {
            let g = self.graph_stats()?;
            s.entities = Some(g.entities);
            s.relations = Some(g.relations);
        }
        Ok(s)
    }

    /// Number of vectors in the HNSW graph and BM25 documents; equal to the chunk count
    /// whenever the index is consistent (used by tests and `doctor`-style checks).
    pub fn engine_sizes(&self) -> Result<(usize, usize)> {
        Ok((self.inner.bm25.num_docs()?, self.inner.dense.len()))
    }

    /// The BM25 index's searchable segments (a search reads each one).
    pub fn bm25_segments(&self) -> Result<usize> {
        self.inner.bm25.segments()
    }

    /// Merges the BM25 index into one segment (see [`Compaction`]): worth running after a
    /// large ingest, since each search looks every query term up in every segment. Holds
    /// the write lock for its duration (searches go on; writes wait); a read-only index
    /// refuses with [`Error::ReadOnly`]. Nothing stored changes: the same chunks, the same
    /// generation.
    pub fn compact(&self) -> Result<Compaction> {
        if self.is_read_only() {
            return Err(Error::ReadOnly(self.inner.dir.clone()));
        }
        let _write = self.inner.write_lock.lock().map_err(|_| Error::Poisoned)?;
        let before = self.inner.bm25.segments()?;
        let started = std::time::Instant::now();
        self.inner.bm25.merge_all()?;
        Ok(Compaction {
            bm25_segments_before: before,
            bm25_segments_after: self.inner.bm25.segments()?,
            seconds: started.elapsed().as_secs_f64(),
        })
    }

    /// Chunks staged ([`EmbeddedIndex::stage`]) and not yet written: zero between writes
    /// once every staged write was claimed (what the crash checks expect after a reopen).
    pub fn staged_chunks(&self) -> Result<usize> {
        self.db().staged_count()
    }

    fn db(&self) -> std::sync::MutexGuard<'_, sql::Db> {
        // A panic while holding the connection can't leave SQLite inconsistent (transactions
        // roll back on drop), so a poisoned lock is safe to reuse.
        self.inner.db.lock().unwrap_or_else(|p| p.into_inner())
    }

    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&EmbeddedIndex) -> Result<T> + Send + 'static,
    ) -> metarag_core::Result<T> {
        let this = self.clone();
        tokio::task::spawn_blocking(move || f(&this))
            .await
            .map_err(|e| {
                metarag_core::Error::backend("index task", metarag_core::Fault::Internal, e)
            })?
            .map_err(Into::into)
    }
}

/// The audit event of a document version: added, or updated with the sections it gained
/// and lost against the stored version.
/// Refuses vectors of another dimension than the index's, naming the document and chunk.
fn check_dimension(
    doc: &DocId,
    chunks: &[(metarag_core::ChunkDraft, Vec<f32>)],
    dim: usize,
) -> Result<()> {
    match chunks.iter().position(|(_, v)| v.len() != dim) {
        None => Ok(()),
        Some(i) => Err(Error::Dimension {
            doc: doc.to_string(),
            chunk: i,
            expected: dim,
            got: chunks[i].1.len(),
        }),
    }
}

/// The chunks of staged documents, read back from SQLite inside the write's transaction a
/// page at a time ([`sql::PAGE`] rows), each with its document; vectors when asked. A read
/// that fails ends the iteration and leaves its error in `error`.
struct Paged<'t, 'd, 'a> {
    tx: &'t sql::Tx<'d>,
    docs: std::slice::Iter<'a, &'a Document>,
    current: Option<&'a Document>,
    /// The current document has no rows after this page.
    last_page: bool,
    after: Option<(u32, ChunkId)>,
    page: std::vec::IntoIter<sql::PagedChunk>,
    vectors: bool,
    error: &'t std::cell::RefCell<Option<Error>>,
}

impl<'t, 'd, 'a> Paged<'t, 'd, 'a> {
    fn new(
        tx: &'t sql::Tx<'d>,
        docs: &'a [&'a Document],
        vectors: bool,
        error: &'t std::cell::RefCell<Option<Error>>,
    ) -> Self {
        Paged {
            tx,
            docs: docs.iter(),
            current: None,
            last_page: true,
            after: None,
            page: Vec::new().into_iter(),
            vectors,
            error,
        }
    }
}

impl<'a> Iterator for Paged<'_, '_, 'a> {
    type Item = (&'a Document, sql::PagedChunk);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(chunk) = self.page.next() {
                return Some((self.current?, chunk));
            }
            if self.last_page {
                self.current = Some(self.docs.next()?);
                self.after = None;
            }
            let doc = self.current?;
            match self
                .tx
                .chunk_page(&doc.id, self.after, sql::PAGE, self.vectors)
            {
                Ok(page) => {
                    self.last_page = page.len() < sql::PAGE;
                    self.after = page.last().map(|c| (c.ordinal, c.id));
                    self.page = page.into_iter();
                }
                Err(e) => {
                    *self.error.borrow_mut() = Some(e);
                    return None;
                }
            }
        }
    }
}

/// What a write removes.
enum Removal<'a> {
    /// These documents, each leaving a `removed` event.
    Documents(Vec<DocId>),
    /// Every document of a collection, its events and its entry.
    Collection(&'a CollectionId),
}

/// Now, in Unix seconds.
fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// The updates that survive in a batch: for a document updated twice the later update wins,
/// and a removal in the same batch wins over any update (removals apply last). Without this
/// the engines would index chunks SQLite no longer holds.
fn effective_updates(updates: Vec<DocumentUpdate>, removals: &[DocId]) -> Vec<DocumentUpdate> {
    let removed: HashSet<&DocId> = removals.iter().collect();
    let mut seen = HashSet::new();
    let mut kept: Vec<DocumentUpdate> = updates
        .into_iter()
        .rev()
        .filter(|u| !removed.contains(&u.document.id) && seen.insert(u.document.id.clone()))
        .collect();
    kept.reverse();
    kept
}

/// Takes the exclusive writer lock of the index in `dir` for this process, recording its
/// pid beside it so a second writer can say who holds it.
fn writer_lock(dir: &Path) -> Result<std::fs::File> {
    let path = dir.join("writer.lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)
        .map_err(|e| Error::io(&path, e))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            let pid = std::fs::read_to_string(dir.join("writer.pid"))
                .ok()
                .and_then(|s| s.trim().parse().ok());
            return Err(Error::Busy {
                dir: dir.to_path_buf(),
                pid,
            });
        }
        Err(std::fs::TryLockError::Error(e)) => return Err(Error::io(&path, e)),
    }
    let pid_path = dir.join("writer.pid");
    std::fs::write(&pid_path, std::process::id().to_string())
        .map_err(|e| Error::io(&pid_path, e))?;
    Ok(file)
}

fn rebuild_bm25(db: &sql::Db, bm25: &bm25::Bm25, generation: u64) -> Result<()> {
    let mut rows = Vec::new();
    db.for_each_chunk(false, |c, _| {
        rows.push(c);
        Ok(())
    })?;
    bm25.rebuild(
        rows.iter().map(|c| {
            (
                c.id,
                c.doc_id.as_str(),
                c.title.as_str(),
                c.draft.text.as_str(),
            )
        }),
        generation,
    )
}

fn rebuild_dense(db: &sql::Db, dense: &dense::Dense, generation: u64) -> Result<()> {
    let mut vectors = Vec::new();
    db.for_each_chunk(true, |c, v| {
        vectors.push((c.id, v.unwrap_or_default()));
        Ok(())
    })?;
    dense.rebuild(&vectors, generation)
}

impl Store for EmbeddedIndex {
    async fn apply(
        &self,
        updates: Vec<DocumentUpdate>,
        removals: Vec<DocId>,
    ) -> metarag_core::Result<()> {
        self.blocking(move |i| i.apply(updates, removals)).await
    }

    async fn stage(
        &self,
        stage: Option<StageId>,
        doc: &DocId,
        chunks: Vec<(metarag_core::ChunkDraft, Vec<f32>)>,
    ) -> metarag_core::Result<StageId> {
        let doc = doc.clone();
        self.blocking(move |i| i.stage(stage, &doc, chunks)).await
    }

    async fn create_collection(&self, collection: &CollectionId) -> metarag_core::Result<bool> {
        let c = collection.clone();
        self.blocking(move |i| i.create_collection(&c)).await
    }

    async fn rename_collection(
        &self,
        from: &CollectionId,
        to: &CollectionId,
    ) -> metarag_core::Result<()> {
        let (from, to) = (from.clone(), to.clone());
        self.blocking(move |i| i.rename_collection(&from, &to))
            .await
    }

    async fn delete_collection(&self, collection: &CollectionId) -> metarag_core::Result<u64> {
        let c = collection.clone();
        self.blocking(move |i| i.delete_collection(&c)).await
    }
}

impl StoreRead for EmbeddedIndex {
    async fn document(&self, id: &DocId) -> metarag_core::Result<Option<Document>> {
        let id = id.clone();
        self.blocking(move |i| EmbeddedIndex::document(i, &id))
            .await
    }

    async fn contains(&self, id: &DocId) -> metarag_core::Result<bool> {
        let id = id.clone();
        self.blocking(move |i| Ok(i.content_hash(&id)?.is_some()))
            .await
    }

    async fn documents(&self) -> metarag_core::Result<Vec<Document>> {
        self.blocking(EmbeddedIndex::documents).await
    }

    async fn collections(&self) -> metarag_core::Result<Vec<metarag_core::CollectionInfo>> {
        self.blocking(EmbeddedIndex::collections).await
    }

    async fn audit_events(
        &self,
        query: &metarag_core::AuditQuery,
    ) -> metarag_core::Result<Vec<AuditEvent>> {
        let q = query.clone();
        self.blocking(move |i| {
            i.audit_events(q.from, q.to, q.title.as_deref(), &q.collections, q.limit)
        })
        .await
    }

    async fn chunks(&self, ids: &[ChunkId]) -> metarag_core::Result<Vec<Chunk>> {
        let ids = ids.to_vec();
        self.blocking(move |i| EmbeddedIndex::chunks(i, &ids)).await
    }

    async fn document_chunks(&self, id: &DocId) -> metarag_core::Result<Vec<Chunk>> {
        let id = id.clone();
        self.blocking(move |i| EmbeddedIndex::document_chunks(i, &id))
            .await
    }

    async fn stats(&self) -> metarag_core::Result<StoreStats> {
        self.blocking(EmbeddedIndex::stats).await
    }

    async fn lexical(
        &self,
        query: &str,
        n: usize,
        filter: &Filter,
    ) -> metarag_core::Result<Vec<ScoredChunk>> {
        // BM25 over an in-memory-mapped index takes well under a millisecond: running it
        // inline is cheaper than a thread hop.
        EmbeddedIndex::lexical(self, query, n, filter).map_err(Into::into)
    }

    async fn nearest(
        &self,
        vector: &[f32],
        n: usize,
        filter: &Filter,
    ) -> metarag_core::Result<Vec<ScoredChunk>> {
        EmbeddedIndex::nearest(self, vector, n, filter).map_err(Into::into)
    }

    async fn graph(
        &self,
        query: &str,
        n: usize,
        walk: &GraphWalk,
        filter: &Filter,
    ) -> metarag_core::Result<Vec<ScoredChunk>> {
        let (query, walk, filter) = (query.to_string(), walk.clone(), filter.clone());
        self.blocking(move |i| i.graph_search(&query, n, &walk, &filter))
            .await
    }
}

/// The engines' `(id, score)` pairs as the store's ranked entries.
fn scored(pairs: Vec<(ChunkId, f32)>) -> Vec<ScoredChunk> {
    pairs
        .into_iter()
        .map(|(id, score)| ScoredChunk::new(id, score))
        .collect()
}
