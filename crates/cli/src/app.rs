//! What several commands build from the typed configuration: the embedder, the index,
//! the ingester, the retriever and reranker, the chat model behind its call cache, the
//! strategy registry, the run log and the server's engine.

use crate::commands::ingest::{FormatArg, failure_line};
use crate::config::{Config, LlmBackend, RerankBackend, StoreBackend};
use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use metarag_agent::{Agent, AgentBuilder, Registry};
use metarag_core::{
    DocFormat, DynLlm, DynReranker, DynRetriever, DynStore, Embedder, Llm, Store, StoreRead,
};
use metarag_eval::runs::{RunLog, SqliteRunLog};
use metarag_index::EmbeddedIndex;
use metarag_ingest::{ChunkSettings, Chunker, CorpusMode, IngestEvent, IngestOptions, Ingester};
use metarag_models::{
    CachedLlm, CallCache, CrossEncoder, Ledger, LlmReranker, LocalLlm, LocalLlmConfig, MeteredLlm,
    ModelStore, OpenAiLlm, SentenceEmbedder,
};
use metarag_pgstore::{PgConfig, PgDatabase, PgStore, TlsConfig};
use metarag_retrieve::HybridRetriever;
use metarag_server::{Engine, KeyStore};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A mistake in what the user asked for, found by the CLI itself.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UserError(pub String);

/// The configured store, open: the embedded index of the data directory or Postgres.
pub struct OpenStore {
    /// Documents, chunks and vectors, behind the backend-neutral trait.
    pub store: Arc<dyn DynStore>,
    /// The embedded index itself (its graph, audit memory and exports), when that is the
    /// backend.
    pub index: Option<Arc<EmbeddedIndex>>,
    /// The Postgres store itself (its graph's inspection), when that is the backend.
    pub postgres: Option<Arc<PgStore>>,
    /// The Postgres database, when that is the backend (the run log and keys live there
    /// too).
    pub database: Option<PgDatabase>,
    /// Where it is, for messages.
    pub location: String,
}

/// Configuration plus output mode: what every command needs.
#[derive(Clone)]
pub struct App {
    pub config: Config,
    pub json: bool,
    pub models: ModelStore,
}

impl App {
    pub fn new(config: Config, json: bool) -> Self {
        let models = ModelStore::new(config.models_dir(), config.raw.models.python.clone());
        App {
            config,
            json,
            models,
        }
    }

    /// Loads the configured embedder.
    pub fn embedder(&self) -> Result<SentenceEmbedder> {
        let e = &self.config.raw.embedder;
        Ok(self.models.load_embedder_with(&e.model, e.precision)?)
    }

    /// Opens (or creates) the index at `dir` for this embedder.
    pub fn open_index(&self, dir: &Path, embedder: &SentenceEmbedder) -> Result<EmbeddedIndex> {
        let cfg = self.config.index(embedder.model_id(), embedder.dimension());
        let index = EmbeddedIndex::open(dir, cfg)?;
        link_names_with(&index, embedder);
        Ok(index)
    }

    /// Opens the index at `dir` to read it: read-only beside another process that writes
    /// to it (`metarag serve`), so searching and asking work while a server runs.
    pub fn open_index_for_reading(
        &self,
        dir: &Path,
        embedder: &SentenceEmbedder,
    ) -> Result<EmbeddedIndex> {
        let cfg = self.config.index(embedder.model_id(), embedder.dimension());
        let index = EmbeddedIndex::open_for_reading(dir, cfg)?;
        link_names_with(&index, embedder);
        Ok(index)
    }

    /// Opens the default index with whatever embedder it was built with (for commands that
    /// don't embed); `None` if there is no index yet. `write`: for writing (fails while
    /// another process writes), else for reading.
    pub fn open_existing_index(&self, write: bool) -> Result<Option<EmbeddedIndex>> {
        let dir = self.config.index_dir();
        match EmbeddedIndex::recorded_embedder(&dir)? {
            None => Ok(None),
            Some((name, dim)) => {
                let cfg = self.config.index(&name, dim);
                Ok(Some(if write {
                    EmbeddedIndex::open(&dir, cfg)?
                } else {
                    EmbeddedIndex::open_for_reading(&dir, cfg)?
                }))
            }
        }
    }

    /// The Postgres database `[store]` names, connected and migrated; `None` for the
    /// embedded backend.
    pub async fn database(&self) -> Result<Option<PgDatabase>> {
        let s = &self.config.raw.store;
        match s.backend {
            StoreBackend::Embedded => Ok(None),
            StoreBackend::Postgres => {
                let url = s.url.as_deref().context("store.url is not set")?;
                Ok(Some(
                    PgDatabase::connect_with(url, s.pool_size, &self.pg_tls()).await?,
                ))
            }
        }
    }

    /// TLS of the Postgres connections (`[store] ca_file`; the URL's `sslmode` turns it on).
    pub fn pg_tls(&self) -> TlsConfig {
        TlsConfig {
            ca_file: self.config.raw.store.ca_file.clone(),
        }
    }

    /// Settings of a Postgres store for an embedder: the pool and the HNSW parameters of
    /// `[store]` and `[index]`.
    pub fn pg_config(&self, url: &str, embedder: &str, dimension: usize) -> PgConfig {
        let mut c = PgConfig::new(url, embedder, dimension);
        c.pool_size = self.config.raw.store.pool_size;
        c.hnsw_m = self.config.raw.index.hnsw_m;
        c.hnsw_ef_construction = self.config.raw.index.hnsw_ef_construction;
        c.hnsw_ef_search = self.config.raw.index.hnsw_ef_search;
        c.bm25_title_boost = self.config.raw.index.bm25_title_boost;
        c.tls = self.pg_tls();
        c
    }

    /// The configured store for `embedder`: the data directory's index (for writing, or
    /// read-only beside another process that writes), or the Postgres database (`db`, or
    /// connected now).
    pub async fn store(
        &self,
        embedder: &SentenceEmbedder,
        write: bool,
        db: Option<PgDatabase>,
    ) -> Result<OpenStore> {
        let opened = self
            .store_for(embedder.model_id(), embedder.dimension(), write, db)
            .await?;
        if let Some(index) = &opened.index {
            link_names_with(index, embedder);
        }
        Ok(opened)
    }

    async fn store_for(
        &self,
        embedder: &str,
        dimension: usize,
        write: bool,
        db: Option<PgDatabase>,
    ) -> Result<OpenStore> {
        let db = match db {
            Some(db) => Some(db),
            None => self.database().await?,
        };
        match db {
            Some(db) => {
                let location = db.url().to_string();
                let config = self.pg_config(
                    self.config.raw.store.url.as_deref().unwrap_or_default(),
                    embedder,
                    dimension,
                );
                let store = Arc::new(PgStore::open(db.clone(), config).await?);
                Ok(OpenStore {
                    store: store.clone(),
                    index: None,
                    postgres: Some(store),
                    database: Some(db),
                    location,
                })
            }
            None => {
                let dir = self.config.index_dir();
                let cfg = self.config.index(embedder, dimension);
                let index = Arc::new(if write {
                    EmbeddedIndex::open(&dir, cfg)?
                } else {
                    EmbeddedIndex::open_for_reading(&dir, cfg)?
                });
                Ok(OpenStore {
                    store: index.clone(),
                    index: Some(index),
                    postgres: None,
                    database: None,
                    location: dir.display().to_string(),
                })
            }
        }
    }

    /// The configured store opened with the embedder recorded in it (for commands that
    /// don't embed); `None` when nothing was ever stored there.
    pub async fn existing_store(&self, write: bool) -> Result<Option<OpenStore>> {
        let db = self.database().await?;
        let recorded = match &db {
            Some(db) => db.recorded_embedder().await?,
            None => EmbeddedIndex::recorded_embedder(self.config.index_dir())?,
        };
        match recorded {
            None => Ok(None),
            Some((name, dim)) => Ok(Some(self.store_for(&name, dim, write, db).await?)),
        }
    }

    /// The embedded index for a command that needs its own features (the entity graph,
    /// the audit memory, vector imports): a clear error over Postgres, which has none.
    pub fn require_embedded(&self, what: &str) -> Result<()> {
        if self.config.raw.store.backend == StoreBackend::Postgres {
            return Err(UserError(format!(
                "{what} needs the embedded index; this configuration stores documents in Postgres (store.backend = \"postgres\")"
            ))
            .into());
        }
        Ok(())
    }

    /// The chunker for an embedder, sized by its max sequence length unless configured.
    pub fn chunker(&self, embedder: &SentenceEmbedder) -> Result<Chunker> {
        let settings = ChunkSettings {
            max_tokens: self
                .config
                .raw
                .embedder
                .chunk_tokens
                .unwrap_or(embedder.max_tokens())
                .min(embedder.max_tokens()),
            overlap: self.config.raw.embedder.chunk_overlap,
        };
        Ok(Chunker::new(embedder.tokenizer().clone(), settings)?)
    }

    pub fn ingest_options(
        &self,
        format: Option<FormatArg>,
        include: Vec<String>,
        exclude: Vec<String>,
    ) -> IngestOptions {
        let raw = &self.config.raw.ingest;
        let (format, corpus) = match format {
            None => (None, CorpusMode::Auto),
            Some(FormatArg::CorpusJsonl) => (Some(DocFormat::Json), CorpusMode::Corpus),
            Some(FormatArg::Pdf) => (Some(DocFormat::Pdf), CorpusMode::Auto),
            Some(FormatArg::Docx) => (Some(DocFormat::Docx), CorpusMode::Auto),
            Some(FormatArg::Html) => (Some(DocFormat::Html), CorpusMode::Auto),
            Some(FormatArg::Markdown) => (Some(DocFormat::Markdown), CorpusMode::Auto),
            Some(FormatArg::Text) => (Some(DocFormat::Text), CorpusMode::Auto),
            Some(FormatArg::Json) => (Some(DocFormat::Json), CorpusMode::Auto),
        };
        IngestOptions {
            include: if include.is_empty() {
                raw.include.clone()
            } else {
                include
            },
            exclude: if exclude.is_empty() {
                raw.exclude.clone()
            } else {
                exclude
            },
            max_file_bytes: raw.max_file_bytes,
            format,
            corpus,
            batch_chunks: raw.batch_chunks,
            metadata: serde_json::Map::new(),
            collection: metarag_core::CollectionId::default(),
            isolation: parser_isolation(raw),
        }
    }

    /// Ingests `paths` into the index at `dir` with a progress bar; returns the report.
    pub async fn ingest_into(
        &self,
        dir: &Path,
        paths: &[PathBuf],
        options: IngestOptions,
        embedder: &SentenceEmbedder,
    ) -> Result<metarag_ingest::IngestReport> {
        let index = self.open_index(dir, embedder)?;
        self.ingest_into_store(&index, paths, options, embedder)
            .await
    }

    /// Ingests `paths` into `store` with a progress bar; returns the report.
    pub async fn ingest_into_store<S: Store>(
        &self,
        store: &S,
        paths: &[PathBuf],
        options: IngestOptions,
        embedder: &SentenceEmbedder,
    ) -> Result<metarag_ingest::IngestReport> {
        let chunker = self.chunker(embedder)?;
        let (files, mut missing) = metarag_ingest::discover(paths, &options)?;
        // Progress is counted in input bytes (the `Started`, `File` and `Batch` events'
        // bytes add up to the whole), so the ETA means something for one large JSONL file
        // as much as for a folder of small ones.
        let bar = ProgressBar::new(0);
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} ingest [{bar:30}] {bytes}/{total_bytes} {msg} ({elapsed}, ETA {eta})",
            )
            .expect("static template")
            .progress_chars("=> "),
        );
        // Files read, chunks and tokens written so far; tokens/s is the embedder's pace,
        // the figure that says how long a large corpus will take.
        #[derive(Default)]
        struct Tally {
            files: usize,
            chunks: usize,
            tokens: usize,
        }
        let done = std::sync::Mutex::new(Tally::default());
        let started = std::time::Instant::now();
        let files_total = files.len();
        let message = |d: &Tally| {
            let rate = d.tokens as f64 / started.elapsed().as_secs_f64().max(1e-3);
            format!(
                "{}/{files_total} files, {} chunks indexed, {rate:.0} tokens/s",
                d.files, d.chunks
            )
        };
        let on_event = |e: IngestEvent<'_>| match e {
            IngestEvent::Started { bytes, .. } => bar.set_length(bytes),
            IngestEvent::File { bytes, .. } => {
                let mut d = done.lock().unwrap_or_else(|p| p.into_inner());
                d.files += 1;
                bar.inc(bytes);
                bar.set_message(message(&d));
            }
            IngestEvent::Batch {
                chunks,
                tokens,
                bytes,
            } => {
                let mut d = done.lock().unwrap_or_else(|p| p.into_inner());
                d.chunks += chunks;
                d.tokens += tokens;
                bar.inc(bytes);
                bar.set_message(message(&d));
            }
            IngestEvent::Embedded { done: embedded, of } => {
                let d = done.lock().unwrap_or_else(|p| p.into_inner());
                bar.set_message(format!(
                    "{} chunks indexed; embedding a large batch: {embedded}/{of}",
                    d.chunks
                ));
            }
            IngestEvent::Failed(f) => bar.suspend(|| eprintln!("warning: {}", failure_line(f))),
        };
        let ingester = Ingester::new(&chunker, embedder, store, options);
        let mut report = ingester.run(&files, &on_event).await?;
        bar.finish_and_clear();
        for f in &missing {
            eprintln!("warning: {}", failure_line(f));
        }
        report.failures.append(&mut missing);
        Ok(report)
    }

    /// The registered strategies, configured from the `[strategies.*]` sections.
    pub fn registry(&self) -> Result<Registry> {
        Ok(Registry::builtin_with(&self.config.raw.strategies)?)
    }

    /// The reranker `[rerank]` configures, if any.
    pub fn reranker(
        &self,
        local: Option<&Arc<metarag_models::LocalLlm>>,
    ) -> Result<Option<Arc<dyn DynReranker>>> {
        let r = &self.config.raw.rerank;
        Ok(match r.backend {
            RerankBackend::None => None,
            RerankBackend::CrossEncoder => {
                let dir = r.path.as_deref().context("rerank.path is not set")?;
                let name = dir.file_name().map_or_else(
                    || "cross-encoder".into(),
                    |n| n.to_string_lossy().into_owned(),
                );
                Some(Arc::new(CrossEncoder::load(dir, &name)?))
            }
            RerankBackend::Llm => {
                let local = local.ok_or_else(|| {
                    UserError("rerank.backend = \"llm\" needs the local LLM backend".into())
                })?;
                Some(Arc::new(LlmReranker::new(
                    local.clone(),
                    r.max_chars.unwrap_or(600),
                )))
            }
        })
    }

    /// The retriever over the default index; an error naming the fix when it is empty.
    /// Returns its embedder too (for the router's embedding classifier).
    pub async fn retriever(
        &self,
    ) -> Result<(Arc<dyn DynRetriever>, Arc<dyn metarag_core::DynEmbedder>)> {
        let embedder = self.embedder()?;
        let opened = self.store(&embedder, false, None).await?;
        if StoreRead::stats(&opened.store).await?.documents == 0 {
            return Err(UserError(format!(
                "the index at {} is empty: ingest documents first (`metarag ingest PATH`) or pass --context FILE",
                opened.location
            ))
            .into());
        }
        let dynamic: Arc<dyn metarag_core::DynEmbedder> = Arc::new(embedder.clone());
        Ok((
            Arc::new(HybridRetriever::new(
                embedder,
                opened.store,
                self.config.retrieval(),
            )),
            dynamic,
        ))
    }

    /// Loads the configured local model (installed name or `llm.path`).
    pub fn local_llm(&self, model: Option<&str>) -> Result<Arc<LocalLlm>> {
        let l = &self.config.raw.llm;
        let (id, path) = match (model, &l.path) {
            // `--model ./file.gguf`: any GGUF file, without installing it.
            (Some(file), _) if file.ends_with(".gguf") => {
                let path = std::path::PathBuf::from(file);
                if !path.is_file() {
                    return Err(UserError(format!("{file}: no such GGUF file")).into());
                }
                (
                    path.file_stem()
                        .map_or_else(|| "local".into(), |s| s.to_string_lossy().into_owned()),
                    path,
                )
            }
            (Some(name), _) => (name.to_string(), self.models.gguf_path(name)?),
            (None, Some(path)) => (
                path.file_stem()
                    .map_or_else(|| "local".into(), |s| s.to_string_lossy().into_owned()),
                path.clone(),
            ),
            (None, None) => (l.model.clone(), self.models.gguf_path(&l.model)?),
        };
        let config = LocalLlmConfig::new(id, path)
            .threads(l.threads)
            .context_size(l.context_size)
            .prefix_reuse(l.prefix_reuse)
            .park_prompts(l.park_prompts)
            .lookup_draft(l.lookup_draft)
            .grammar_first(l.grammar_first);
        let llm = LocalLlm::load(config)?;
        tracing::info!(info = ?llm.info(), "local model loaded");
        Ok(Arc::new(llm))
    }

    /// Builds the configured backend; with `cache`, behind the call cache.
    pub async fn llm(&self, cache: bool, model: Option<&str>) -> Result<LlmHandle> {
        let mut local_model = None;
        let base: Arc<dyn DynLlm> = match self.config.raw.llm.backend {
            LlmBackend::Local => {
                let model = model.map(str::to_string);
                let this = self.clone();
                let local: Arc<LocalLlm> =
                    tokio::task::spawn_blocking(move || this.local_llm(model.as_deref()))
                        .await
                        .context("model loading task")??;
                local_model = Some(local.clone());
                local
            }
            LlmBackend::Openai => {
                let mut c = self.config.openai();
                if let Some(m) = model {
                    c.model = m.to_string();
                }
                Arc::new(OpenAiLlm::new(c)?)
            }
        };
        // Role models, each loaded once: a role naming the default model shares it, and
        // roles naming the same model share one copy (a local model is gigabytes).
        let mut own: Vec<(
            metarag_agent::Role,
            Arc<dyn DynLlm>,
            metarag_models::Pricing,
        )> = Vec::new();
        let mut loaded: Vec<(RoleModelKey, Arc<dyn DynLlm>)> = Vec::new();
        for (role, raw) in self.config.raw.roles.iter().filter(|(_, r)| r.own_model()) {
            let key = (
                raw.backend.unwrap_or(self.config.raw.llm.backend),
                raw.model.clone(),
                raw.base_url.clone(),
                raw.api_key_env.clone(),
            );
            let model = match loaded.iter().find(|(k, _)| *k == key) {
                Some((_, model)) => model.clone(),
                None => {
                    let model = self
                        .role_llm(raw, &base)
                        .await
                        .with_context(|| format!("[roles.{role}]: loading its model"))?;
                    loaded.push((key, model.clone()));
                    model
                }
            };
            let price = metarag_models::Pricing {
                prompt_per_million: raw.price_prompt_per_million,
                completion_per_million: raw.price_completion_per_million,
            };
            own.push((role, model, price));
        }
        let mut pricing = self.config.pricing(Llm::model_id(&base));
        for (_, model, price) in &own {
            if !Arc::ptr_eq(model, &base) {
                pricing.insert(Llm::model_id(model).to_string(), *price);
            }
        }
        let ledger = Arc::new(Ledger::new(pricing));
        let cache = if cache {
            Some(Arc::new(CallCache::open(self.config.cache_path())?))
        } else {
            None
        };
        let wrap = |model: Arc<dyn DynLlm>| -> Arc<dyn DynLlm> {
            match &cache {
                Some(c) => Arc::new(MeteredLlm::new(
                    CachedLlm::new(model, c.clone()),
                    ledger.clone(),
                )),
                None => Arc::new(MeteredLlm::new(model, ledger.clone())),
            }
        };
        let llm = wrap(base.clone());
        let mut roles = Vec::new();
        for (role, raw) in self.config.raw.roles.iter() {
            let mut m = metarag_agent::RoleModel::new().concurrency(raw.concurrency.unwrap_or(1));
            if let Some((_, model, _)) = own.iter().find(|(r, _, _)| *r == role) {
                // The default model itself stays behind the one wrapper, so its calls are
                // not told apart from the default's in the trace.
                if !Arc::ptr_eq(model, &base) {
                    m = m.llm(wrap(model.clone()));
                }
            }
            if let Some(t) = raw.temperature {
                m = m.temperature(t);
            }
            if let Some(n) = raw.max_tokens {
                m = m.max_tokens(n);
            }
            roles.push((role, m));
        }
        Ok(LlmHandle {
            llm,
            ledger,
            local: local_model,
            roles,
        })
    }

    /// A role's own model: the default model itself when the role names it, else the
    /// local GGUF or the endpoint it names.
    async fn role_llm(
        &self,
        raw: &crate::config::RawRole,
        default: &Arc<dyn DynLlm>,
    ) -> Result<Arc<dyn DynLlm>> {
        let l = &self.config.raw.llm;
        let backend = raw.backend.unwrap_or(l.backend);
        Ok(match backend {
            LlmBackend::Local => {
                let same = raw
                    .model
                    .as_deref()
                    .is_none_or(|m| m == Llm::model_id(default));
                if same && l.backend == LlmBackend::Local {
                    return Ok(default.clone());
                }
                let this = self.clone();
                let model = raw.model.clone();
                let local: Arc<LocalLlm> =
                    tokio::task::spawn_blocking(move || this.local_llm(model.as_deref()))
                        .await
                        .context("model loading task")??;
                local
            }
            LlmBackend::Openai => Arc::new(OpenAiLlm::new(self.config.role_openai(raw))?),
        })
    }

    /// The run log: in the Postgres database `db` when that is the store (so every
    /// server lists every run), else the data directory's SQLite file.
    pub fn run_log(&self, db: Option<&PgDatabase>) -> Result<RunLog> {
        Ok(match db {
            Some(db) => RunLog::postgres(db.clone()),
            None => RunLog::open(&self.config.runs_path())?,
        })
    }

    /// The run log of the configured store, connecting to Postgres if that is it.
    pub async fn configured_run_log(&self) -> Result<RunLog> {
        let db = self.database().await?;
        self.run_log(db.as_ref())
    }

    /// The data directory's own SQLite run log (benchmarks record there, synchronously,
    /// whatever the store: they are one machine's experiments).
    pub fn local_run_log(&self) -> Result<SqliteRunLog> {
        Ok(SqliteRunLog::open(&self.config.runs_path())?)
    }

    /// The API keys: in the Postgres database `db` when that is the store, else the data
    /// directory's key file.
    pub fn key_store(&self, db: Option<&PgDatabase>) -> KeyStore {
        match db {
            Some(db) => KeyStore::postgres(db.clone()),
            None => KeyStore::new(self.config.keys_path()),
        }
    }

    /// What `serve` and `mcp` serve: the store, its embedder and chunker, the agent over
    /// the configured chat model, and the run log (`db`: the Postgres database when that
    /// is the store, already connected).
    pub async fn engine(
        &self,
        model: Option<&str>,
        cache: bool,
        db: Option<PgDatabase>,
    ) -> Result<Engine> {
        let embedder = self.embedder()?;
        let opened = self.store(&embedder, true, db).await?;
        let chunker = Arc::new(self.chunker(&embedder)?);
        let handle = self.llm(cache, model).await?;
        let retriever = Arc::new(HybridRetriever::new(
            embedder.clone(),
            opened.store.clone(),
            self.config.retrieval(),
        ));
        let mut builder = handle
            .with_roles(Agent::builder(handle.llm.clone()))
            .config(self.config.raw.agent.clone())
            .registry(self.registry()?)
            .embedder(Arc::new(embedder.clone()))
            .retriever(retriever);
        if let Some(r) = self.reranker(handle.local.as_ref())? {
            builder = builder.reranker(r);
        }
        Ok(Engine {
            store: opened.store,
            embedder,
            chunker,
            ingest: self.ingest_options(None, Vec::new(), Vec::new()),
            retrieval: self.config.retrieval(),
            agent: builder.build()?,
            runs: self.run_log(opened.database.as_ref())?,
            pricing: self.config.price(),
        })
    }
}

/// What tells two roles' models apart: backend, model, endpoint and key variable.
type RoleModelKey = (LlmBackend, Option<String>, Option<String>, Option<String>);

/// The configured chat model, ready for calls, and the ledger its calls are recorded in.
pub struct LlmHandle {
    /// The model behind its cache (if on) and meter.
    pub llm: Arc<dyn DynLlm>,
    /// Usage of this run.
    pub ledger: Arc<Ledger>,
    /// The local model itself, when the backend is local (for the LLM reranker).
    pub local: Option<Arc<LocalLlm>>,
    /// The configured role models (`[roles]`), behind the same cache and ledger.
    pub roles: Vec<(metarag_agent::Role, metarag_agent::RoleModel)>,
}

impl LlmHandle {
    /// `builder` with the configured role models.
    pub fn with_roles(&self, mut builder: AgentBuilder) -> AgentBuilder {
        for (role, model) in &self.roles {
            builder = builder.role(*role, model.clone());
        }
        builder
    }
}

/// Gives an embedded index the embedder it is searched with for the last stage of entity
/// linking (a query's name no string stage finds, compared by embedding).
fn link_names_with(index: &EmbeddedIndex, embedder: &SentenceEmbedder) {
    let embedder = embedder.clone();
    index.set_name_embedder(Arc::new(move |names: &[String]| {
        embedder.embed_blocking(names).map_err(Into::into)
    }));
}

/// PDF, DOCX and HTML parsed by this very binary's `parse-worker` command, unless the config turns
/// it off or the binary cannot name its own path (then on a thread, said in the log).
fn parser_isolation(raw: &crate::config::RawIngest) -> metarag_ingest::parse::Isolation {
    use metarag_ingest::parse::{Isolation, Worker};
    if !raw.isolate_parsers {
        return Isolation::Thread;
    }
    // On Linux the running image itself: it can still be started after an upgrade has
    // replaced or removed the file it was started from (a long-lived `serve`).
    let this = Path::new("/proc/self/exe");
    let exe = if this.exists() {
        Ok(this.to_path_buf())
    } else {
        std::env::current_exe()
    };
    match exe {
        Ok(exe) => Isolation::Process(
            Worker::new(exe, ["parse-worker"])
                // mimalloc reserves address space 1 GiB at a time, which an address-space
                // limit counts as used: the idle child measured 1.1 GB, and rayon could not
                // start its threads under a 1 GiB limit. 32 MiB at a time: 0.15 GB idle.
                .env("MIMALLOC_ARENA_RESERVE", "32MiB")
                .memory_limit((raw.parser_memory_mb > 0).then_some(raw.parser_memory_mb << 20)),
        ),
        Err(e) => {
            tracing::warn!(error = %e, "cannot find this program's path: PDF, DOCX and HTML are parsed in-process");
            Isolation::Thread
        }
    }
}
