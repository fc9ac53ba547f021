//! The traits that separate the layers.

use crate::{
    AuditEvent, AuditQuery, Chunk, ChunkDraft, ChunkId, CollectionId, CollectionInfo, DocId,
    Document, DocumentUpdate, Filter, GraphWalk, Hit, Result, ScoredChunk, SearchRequest, StageId,
    StoreStats,
};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// A boxed, sendable future: the return type of the object-safe `Dyn*` twins.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Turns texts into fixed-size vectors.
pub trait Embedder: Send + Sync {
    /// A stable name of the model (recorded in the index; a different one can't open it).
    fn model_id(&self) -> &str;
    /// Length of every returned vector.
    fn dimension(&self) -> usize;
    /// The longest input, in tokens including special tokens, the model reads without
    /// truncating. Chunkers size chunks by it.
    fn max_tokens(&self) -> usize;
    /// Embeds a batch of texts, one vector per text, in order.
    fn embed(&self, texts: &[String]) -> impl Future<Output = Result<Vec<Vec<f32>>>> + Send;
    /// Embeds a search query. Models trained with a query instruction (BGE, E5) override
    /// this to prepend it; the default embeds the query like a passage.
    fn embed_query(&self, query: &str) -> impl Future<Output = Result<Vec<f32>>> + Send {
        let texts = vec![query.to_string()];
        async move {
            self.embed(&texts)
                .await?
                .pop()
                .ok_or_else(|| crate::Error::invalid("query", "the embedder returned no vector"))
        }
    }
}

impl<T: Embedder + ?Sized> Embedder for Arc<T> {
    fn model_id(&self) -> &str {
        (**self).model_id()
    }
    fn dimension(&self) -> usize {
        (**self).dimension()
    }
    fn max_tokens(&self) -> usize {
        (**self).max_tokens()
    }
    fn embed(&self, texts: &[String]) -> impl Future<Output = Result<Vec<Vec<f32>>>> + Send {
        (**self).embed(texts)
    }
    fn embed_query(&self, query: &str) -> impl Future<Output = Result<Vec<f32>>> + Send {
        (**self).embed_query(query)
    }
}

/// Object-safe twin of [`Embedder`], for embedders chosen from configuration at run time.
pub trait DynEmbedder: Send + Sync {
    /// See [`Embedder::model_id`].
    fn model_id(&self) -> &str;
    /// See [`Embedder::dimension`].
    fn dimension(&self) -> usize;
    /// See [`Embedder::max_tokens`].
    fn max_tokens(&self) -> usize;
    /// See [`Embedder::embed`].
    fn embed_dyn<'a>(&'a self, texts: &'a [String]) -> BoxFuture<'a, Result<Vec<Vec<f32>>>>;
    /// See [`Embedder::embed_query`].
    fn embed_query_dyn<'a>(&'a self, query: &'a str) -> BoxFuture<'a, Result<Vec<f32>>>;
}

impl<T: Embedder> DynEmbedder for T {
    fn model_id(&self) -> &str {
        Embedder::model_id(self)
    }
    fn dimension(&self) -> usize {
        Embedder::dimension(self)
    }
    fn max_tokens(&self) -> usize {
        Embedder::max_tokens(self)
    }
    fn embed_dyn<'a>(&'a self, texts: &'a [String]) -> BoxFuture<'a, Result<Vec<Vec<f32>>>> {
        Box::pin(self.embed(texts))
    }
    fn embed_query_dyn<'a>(&'a self, query: &'a str) -> BoxFuture<'a, Result<Vec<f32>>> {
        Box::pin(self.embed_query(query))
    }
}

impl Embedder for dyn DynEmbedder + '_ {
    fn model_id(&self) -> &str {
        DynEmbedder::model_id(self)
    }
    fn dimension(&self) -> usize {
        DynEmbedder::dimension(self)
    }
    fn max_tokens(&self) -> usize {
        DynEmbedder::max_tokens(self)
    }
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        self.embed_dyn(texts).await
    }
    async fn embed_query(&self, query: &str) -> Result<Vec<f32>> {
        self.embed_query_dyn(query).await
    }
}

/// The read side of a store: documents, chunks and their vectors, with the two primitive
/// rankings (lexical and nearest-neighbour) that retrievers combine. A read-only replica
/// or a second backend implements this alone.
pub trait StoreRead: Send + Sync {
    /// One document with its extracted text, or `None`.
    fn document(&self, id: &DocId) -> impl Future<Output = Result<Option<Document>>> + Send;
    /// Whether a document with this id is stored (without reading its text: a removal
    /// checks this first, and a document's text can be large).
    fn contains(&self, id: &DocId) -> impl Future<Output = Result<bool>> + Send;
    /// All documents (without their text), ordered by id.
    fn documents(&self) -> impl Future<Output = Result<Vec<Document>>> + Send;
    /// The chunks with these ids, in the same order; ids not present are skipped.
    fn chunks(&self, ids: &[ChunkId]) -> impl Future<Output = Result<Vec<Chunk>>> + Send;
    /// The chunks of one document, in order (empty for an unknown document).
    fn document_chunks(&self, id: &DocId) -> impl Future<Output = Result<Vec<Chunk>>> + Send;
    /// Counts and the embedder the index was built with.
    fn stats(&self) -> impl Future<Output = Result<StoreStats>> + Send;
    /// Every collection, with its document and chunk counts, by name (the default one
    /// always among them).
    fn collections(&self) -> impl Future<Output = Result<Vec<CollectionInfo>>> + Send;
    /// The audit memory's events that `query` selects, newest first.
    fn audit_events(
        &self,
        query: &AuditQuery,
    ) -> impl Future<Output = Result<Vec<AuditEvent>>> + Send;
    /// Up to `n` chunks ranked by BM25 for `query`, best first.
    fn lexical(
        &self,
        query: &str,
        n: usize,
        filter: &Filter,
    ) -> impl Future<Output = Result<Vec<ScoredChunk>>> + Send;
    /// Up to `n` chunks nearest to `vector` (cosine similarity), best first.
    fn nearest(
        &self,
        vector: &[f32],
        n: usize,
        filter: &Filter,
    ) -> impl Future<Output = Result<Vec<ScoredChunk>>> + Send;
    /// Up to `n` chunks ranked by a walk of the entity graph from the entities `query`
    /// names, best first; empty for a store without a graph (the default).
    fn graph(
        &self,
        query: &str,
        n: usize,
        walk: &GraphWalk,
        filter: &Filter,
    ) -> impl Future<Output = Result<Vec<ScoredChunk>>> + Send {
        let _ = (query, n, walk, filter);
        std::future::ready(Ok(Vec::new()))
    }
}

/// A store that can also be written: the read side plus one atomic write.
pub trait Store: StoreRead {
    /// Replaces each updated document with all of its chunks and removes the given
    /// documents, as one atomic change: after a crash either all of it is visible or none.
    fn apply(
        &self,
        updates: Vec<DocumentUpdate>,
        removals: Vec<DocId>,
    ) -> impl Future<Output = Result<()>> + Send;

    /// Hands the store a slice of one document's chunks ahead of the document's write, so
    /// a writer need not hold a large document's chunks and vectors until then (memory
    /// stays at one slice, whatever the document's size). `stage: None` starts a staged
    /// write and returns its id; later slices pass it back and are appended in order.
    /// Staged chunks are invisible to every read until an [`Store::apply`] whose update
    /// names the id in [`DocumentUpdate::staged`] writes them, atomically with the rest of
    /// that change. A staged write no update claims (the writer failed or was killed) is
    /// dropped by the store later, never made visible. Vectors of the wrong dimension are
    /// refused here, naming `doc`.
    fn stage(
        &self,
        stage: Option<StageId>,
        doc: &DocId,
        chunks: Vec<(ChunkDraft, Vec<f32>)>,
    ) -> impl Future<Output = Result<StageId>> + Send;

    /// Makes an empty collection; false when it existed already.
    fn create_collection(
        &self,
        collection: &CollectionId,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// Renames a collection and moves its documents (and their history) with it; the
    /// default collection cannot be renamed, nor a collection onto one that exists.
    fn rename_collection(
        &self,
        from: &CollectionId,
        to: &CollectionId,
    ) -> impl Future<Output = Result<()>> + Send;

    /// Deletes a collection with everything of it (documents, chunks, vectors, postings,
    /// graph entries, audit events) as one atomic change, and nothing else; returns the
    /// number of documents removed. The default collection cannot be deleted.
    fn delete_collection(
        &self,
        collection: &CollectionId,
    ) -> impl Future<Output = Result<u64>> + Send;
}

impl<T: StoreRead + ?Sized> StoreRead for Arc<T> {
    fn document(&self, id: &DocId) -> impl Future<Output = Result<Option<Document>>> + Send {
        (**self).document(id)
    }
    fn contains(&self, id: &DocId) -> impl Future<Output = Result<bool>> + Send {
        (**self).contains(id)
    }
    fn documents(&self) -> impl Future<Output = Result<Vec<Document>>> + Send {
        (**self).documents()
    }
    fn chunks(&self, ids: &[ChunkId]) -> impl Future<Output = Result<Vec<Chunk>>> + Send {
        (**self).chunks(ids)
    }
    fn document_chunks(&self, id: &DocId) -> impl Future<Output = Result<Vec<Chunk>>> + Send {
        (**self).document_chunks(id)
    }
    fn stats(&self) -> impl Future<Output = Result<StoreStats>> + Send {
        (**self).stats()
    }
    fn collections(&self) -> impl Future<Output = Result<Vec<CollectionInfo>>> + Send {
        (**self).collections()
    }
    fn audit_events(
        &self,
        query: &AuditQuery,
    ) -> impl Future<Output = Result<Vec<AuditEvent>>> + Send {
        (**self).audit_events(query)
    }
    fn lexical(
        &self,
        query: &str,
        n: usize,
        filter: &Filter,
    ) -> impl Future<Output = Result<Vec<ScoredChunk>>> + Send {
        (**self).lexical(query, n, filter)
    }
    fn nearest(
        &self,
        vector: &[f32],
        n: usize,
        filter: &Filter,
    ) -> impl Future<Output = Result<Vec<ScoredChunk>>> + Send {
        (**self).nearest(vector, n, filter)
    }
    fn graph(
        &self,
        query: &str,
        n: usize,
        walk: &GraphWalk,
        filter: &Filter,
    ) -> impl Future<Output = Result<Vec<ScoredChunk>>> + Send {
        (**self).graph(query, n, walk, filter)
    }
}

impl<T: Store + ?Sized> Store for Arc<T> {
    fn apply(
        &self,
        updates: Vec<DocumentUpdate>,
        removals: Vec<DocId>,
    ) -> impl Future<Output = Result<()>> + Send {
        (**self).apply(updates, removals)
    }
    fn stage(
        &self,
        stage: Option<StageId>,
        doc: &DocId,
        chunks: Vec<(ChunkDraft, Vec<f32>)>,
    ) -> impl Future<Output = Result<StageId>> + Send {
        (**self).stage(stage, doc, chunks)
    }
    fn create_collection(
        &self,
        collection: &CollectionId,
    ) -> impl Future<Output = Result<bool>> + Send {
        (**self).create_collection(collection)
    }
    fn rename_collection(
        &self,
        from: &CollectionId,
        to: &CollectionId,
    ) -> impl Future<Output = Result<()>> + Send {
        (**self).rename_collection(from, to)
    }
    fn delete_collection(
        &self,
        collection: &CollectionId,
    ) -> impl Future<Output = Result<u64>> + Send {
        (**self).delete_collection(collection)
    }
}

/// Object-safe twin of [`Store`] (its read side included), for a backend picked from
/// configuration at run time: `Arc<dyn DynStore>` is a [`Store`] again, so the ingester,
/// the retrievers and the server take either the embedded index or Postgres.
pub trait DynStore: Send + Sync {
    /// See [`StoreRead::document`].
    fn document_dyn<'a>(&'a self, id: &'a DocId) -> BoxFuture<'a, Result<Option<Document>>>;
    /// See [`StoreRead::contains`].
    fn contains_dyn<'a>(&'a self, id: &'a DocId) -> BoxFuture<'a, Result<bool>>;
    /// See [`StoreRead::documents`].
    fn documents_dyn(&self) -> BoxFuture<'_, Result<Vec<Document>>>;
    /// See [`StoreRead::chunks`].
    fn chunks_dyn<'a>(&'a self, ids: &'a [ChunkId]) -> BoxFuture<'a, Result<Vec<Chunk>>>;
    /// See [`StoreRead::document_chunks`].
    fn document_chunks_dyn<'a>(&'a self, id: &'a DocId) -> BoxFuture<'a, Result<Vec<Chunk>>>;
    /// See [`StoreRead::stats`].
    fn stats_dyn(&self) -> BoxFuture<'_, Result<StoreStats>>;
    /// See [`StoreRead::collections`].
    fn collections_dyn(&self) -> BoxFuture<'_, Result<Vec<CollectionInfo>>>;
    /// [`StoreRead::audit_events`].
    fn audit_events_dyn<'a>(
        &'a self,
        query: &'a AuditQuery,
    ) -> BoxFuture<'a, Result<Vec<AuditEvent>>>;
    /// See [`StoreRead::lexical`].
    fn lexical_dyn<'a>(
        &'a self,
        query: &'a str,
        n: usize,
        filter: &'a Filter,
    ) -> BoxFuture<'a, Result<Vec<ScoredChunk>>>;
    /// See [`StoreRead::nearest`].
    fn nearest_dyn<'a>(
        &'a self,
        vector: &'a [f32],
        n: usize,
        filter: &'a Filter,
    ) -> BoxFuture<'a, Result<Vec<ScoredChunk>>>;
    /// See [`StoreRead::graph`].
    fn graph_dyn<'a>(
        &'a self,
        query: &'a str,
        n: usize,
        walk: &'a GraphWalk,
        filter: &'a Filter,
    ) -> BoxFuture<'a, Result<Vec<ScoredChunk>>>;
    /// See [`Store::apply`].
    fn apply_dyn(
        &self,
        updates: Vec<DocumentUpdate>,
        removals: Vec<DocId>,
    ) -> BoxFuture<'_, Result<()>>;
    /// See [`Store::stage`].
    fn stage_dyn<'a>(
        &'a self,
        stage: Option<StageId>,
        doc: &'a DocId,
        chunks: Vec<(ChunkDraft, Vec<f32>)>,
    ) -> BoxFuture<'a, Result<StageId>>;
    /// See [`Store::create_collection`].
    fn create_collection_dyn<'a>(
        &'a self,
        collection: &'a CollectionId,
    ) -> BoxFuture<'a, Result<bool>>;
    /// See [`Store::rename_collection`].
    fn rename_collection_dyn<'a>(
        &'a self,
        from: &'a CollectionId,
        to: &'a CollectionId,
    ) -> BoxFuture<'a, Result<()>>;
    /// See [`Store::delete_collection`].
    fn delete_collection_dyn<'a>(
        &'a self,
        collection: &'a CollectionId,
    ) -> BoxFuture<'a, Result<u64>>;
}

impl<T: Store> DynStore for T {
    fn document_dyn<'a>(&'a self, id: &'a DocId) -> BoxFuture<'a, Result<Option<Document>>> {
        Box::pin(self.document(id))
    }
    fn contains_dyn<'a>(&'a self, id: &'a DocId) -> BoxFuture<'a, Result<bool>> {
        Box::pin(self.contains(id))
    }
    fn documents_dyn(&self) -> BoxFuture<'_, Result<Vec<Document>>> {
        Box::pin(self.documents())
    }
    fn chunks_dyn<'a>(&'a self, ids: &'a [ChunkId]) -> BoxFuture<'a, Result<Vec<Chunk>>> {
        Box::pin(self.chunks(ids))
    }
    fn document_chunks_dyn<'a>(&'a self, id: &'a DocId) -> BoxFuture<'a, Result<Vec<Chunk>>> {
        Box::pin(self.document_chunks(id))
    }
    fn stats_dyn(&self) -> BoxFuture<'_, Result<StoreStats>> {
        Box::pin(self.stats())
    }
    fn collections_dyn(&self) -> BoxFuture<'_, Result<Vec<CollectionInfo>>> {
        Box::pin(self.collections())
    }
    fn audit_events_dyn<'a>(
        &'a self,
        query: &'a AuditQuery,
    ) -> BoxFuture<'a, Result<Vec<AuditEvent>>> {
        Box::pin(self.audit_events(query))
    }
    fn lexical_dyn<'a>(
        &'a self,
        query: &'a str,
        n: usize,
        filter: &'a Filter,
    ) -> BoxFuture<'a, Result<Vec<ScoredChunk>>> {
        Box::pin(self.lexical(query, n, filter))
    }
    fn nearest_dyn<'a>(
        &'a self,
        vector: &'a [f32],
        n: usize,
        filter: &'a Filter,
    ) -> BoxFuture<'a, Result<Vec<ScoredChunk>>> {
        Box::pin(self.nearest(vector, n, filter))
    }
    fn graph_dyn<'a>(
        &'a self,
        query: &'a str,
        n: usize,
        walk: &'a GraphWalk,
        filter: &'a Filter,
    ) -> BoxFuture<'a, Result<Vec<ScoredChunk>>> {
        Box::pin(self.graph(query, n, walk, filter))
    }
    fn apply_dyn(
        &self,
        updates: Vec<DocumentUpdate>,
        removals: Vec<DocId>,
    ) -> BoxFuture<'_, Result<()>> {
        Box::pin(self.apply(updates, removals))
    }
    fn stage_dyn<'a>(
        &'a self,
        stage: Option<StageId>,
        doc: &'a DocId,
        chunks: Vec<(ChunkDraft, Vec<f32>)>,
    ) -> BoxFuture<'a, Result<StageId>> {
        Box::pin(self.stage(stage, doc, chunks))
    }
    fn create_collection_dyn<'a>(
        &'a self,
        collection: &'a CollectionId,
    ) -> BoxFuture<'a, Result<bool>> {
        Box::pin(self.create_collection(collection))
    }
    fn rename_collection_dyn<'a>(
        &'a self,
        from: &'a CollectionId,
        to: &'a CollectionId,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.rename_collection(from, to))
    }
    fn delete_collection_dyn<'a>(
        &'a self,
        collection: &'a CollectionId,
    ) -> BoxFuture<'a, Result<u64>> {
        Box::pin(self.delete_collection(collection))
    }
}

impl StoreRead for dyn DynStore + '_ {
    async fn document(&self, id: &DocId) -> Result<Option<Document>> {
        self.document_dyn(id).await
    }
    async fn contains(&self, id: &DocId) -> Result<bool> {
        self.contains_dyn(id).await
    }
    async fn documents(&self) -> Result<Vec<Document>> {
        self.documents_dyn().await
    }
    async fn chunks(&self, ids: &[ChunkId]) -> Result<Vec<Chunk>> {
        self.chunks_dyn(ids).await
    }
    async fn document_chunks(&self, id: &DocId) -> Result<Vec<Chunk>> {
        self.document_chunks_dyn(id).await
    }
    async fn stats(&self) -> Result<StoreStats> {
        self.stats_dyn().await
    }
    async fn collections(&self) -> Result<Vec<CollectionInfo>> {
        self.collections_dyn().await
    }
    async fn audit_events(&self, query: &AuditQuery) -> Result<Vec<AuditEvent>> {
        self.audit_events_dyn(query).await
    }
    async fn lexical(&self, query: &str, n: usize, filter: &Filter) -> Result<Vec<ScoredChunk>> {
        self.lexical_dyn(query, n, filter).await
    }
    async fn nearest(&self, vector: &[f32], n: usize, filter: &Filter) -> Result<Vec<ScoredChunk>> {
        self.nearest_dyn(vector, n, filter).await
    }
    async fn graph(
        &self,
        query: &str,
        n: usize,
        walk: &GraphWalk,
        filter: &Filter,
    ) -> Result<Vec<ScoredChunk>> {
        self.graph_dyn(query, n, walk, filter).await
    }
}

impl Store for dyn DynStore + '_ {
    async fn apply(&self, updates: Vec<DocumentUpdate>, removals: Vec<DocId>) -> Result<()> {
        self.apply_dyn(updates, removals).await
    }
    async fn stage(
        &self,
        stage: Option<StageId>,
        doc: &DocId,
        chunks: Vec<(ChunkDraft, Vec<f32>)>,
    ) -> Result<StageId> {
        self.stage_dyn(stage, doc, chunks).await
    }
    async fn create_collection(&self, collection: &CollectionId) -> Result<bool> {
        self.create_collection_dyn(collection).await
    }
    async fn rename_collection(&self, from: &CollectionId, to: &CollectionId) -> Result<()> {
        self.rename_collection_dyn(from, to).await
    }
    async fn delete_collection(&self, collection: &CollectionId) -> Result<u64> {
        self.delete_collection_dyn(collection).await
    }
}

/// Answers a search request with ranked hits carrying their text.
pub trait Retriever: Send + Sync {
    /// Runs the search.
    fn search(&self, request: &SearchRequest) -> impl Future<Output = Result<Vec<Hit>>> + Send;
}

impl<T: Retriever + ?Sized> Retriever for Arc<T> {
    fn search(&self, request: &SearchRequest) -> impl Future<Output = Result<Vec<Hit>>> + Send {
        (**self).search(request)
    }
}

/// Object-safe twin of [`Retriever`].
pub trait DynRetriever: Send + Sync {
    /// See [`Retriever::search`].
    fn search_dyn<'a>(&'a self, request: &'a SearchRequest) -> BoxFuture<'a, Result<Vec<Hit>>>;
}

impl<T: Retriever> DynRetriever for T {
    fn search_dyn<'a>(&'a self, request: &'a SearchRequest) -> BoxFuture<'a, Result<Vec<Hit>>> {
        Box::pin(self.search(request))
    }
}
