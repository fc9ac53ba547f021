//! # metarag-core
//!
//! The vocabulary every metarag layer shares: typed ids ([`DocId`], [`ChunkId`]), the
//! [`Chunk`] and [`Document`] records, search requests and [`Hit`]s, and the traits that
//! separate the layers ([`Embedder`], [`StoreRead`] / [`Store`], [`Retriever`], [`Llm`], [`Reranker`]). This crate performs no I/O,
//! so it can be depended on by every other crate without pulling in engines or runtimes.
//!
//! Traits are native `async fn` traits with few required methods. Each has a blanket impl
//! for `Arc<T>` and, where a backend is picked from configuration at run time, an
//! object-safe `Dyn*` twin with a blanket impl for every implementor.

mod error;
mod ids;
mod llm;
mod search;
pub mod time;
mod traits;
mod types;
pub mod vector;

pub use error::{Error, Fault, HasFault, Result};
pub use ids::{ChunkId, CollectionId, DocId, StageId};
pub use llm::{
    Capabilities, ChatRequest, Completion, DynLlm, DynReranker, FinishReason, GenParams, Llm,
    LogprobSummary, MAX_SAMPLES, Message, OutputSchema, Reranker, Role, Sample, Structured,
    TokenLogprob, TokenSink, Usage, chat_json, logprob_summary, parse_json,
};
pub use search::{
    Filter, GraphWalk, Hit, RetrieverKind, ScoredChunk, SearchMode, SearchRequest, SourceRank,
};
pub use traits::{
    BoxFuture, DynEmbedder, DynRetriever, DynStore, Embedder, Retriever, Store, StoreRead,
};
pub use types::{
    AuditEvent, AuditQuery, Chunk, ChunkDraft, CollectionInfo, DocFormat, Document, DocumentUpdate,
    StoreStats, embedding_input,
};
