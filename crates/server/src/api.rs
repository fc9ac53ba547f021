//! The REST + SSE API under `/v1`, the OpenAPI document, the docs page and the web page.
//!
//! Every handler answers JSON, errors included ([`crate::ErrorBody`]). Asks are bounded:
//! at most [`Limits::running_asks`] run at once (the local model serves one call at a time,
//! so more would only interleave), at most [`Limits::waiting_asks`] wait for a slot in
//! arrival order, and the rest are turned away at once with 429 and `Retry-After`, so no
//! request hangs. Ingests run one at a time on a blocking thread, so searches and health
//! checks stay responsive while a large upload is embedded.

use crate::auth::{Access, Keys};
use crate::error::{Error, Result};
use crate::metrics::Metrics;
use crate::stream::VisibleText;
use axum::body::Body;
use axum::extract::{
    DefaultBodyLimit, Extension, MatchedPath, Multipart, Path, Query, Request, State,
};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use metarag_agent::strategies::router::ContextCheck;
use metarag_agent::{Agent, Ask, Passage, Progress, Source, StopReason, Trace};
use metarag_core::{
    ChunkId, CollectionId, CollectionInfo, DocId, Document, DynStore, Filter, Hit, SearchMode,
    SearchRequest, StoreRead,
};
use metarag_eval::runs::{
    Pricing, RunDetail, RunLog, RunQuery, RunSummary, StrategyStats, Surface,
};
use metarag_index::AuditEvent;
use metarag_ingest::{
    Chunker, CorpusMode, FileOutcome, IngestEvent, IngestOptions, IngestReport, Ingester, Upload,
};
use metarag_models::SentenceEmbedder;
use metarag_retrieve::{HybridRetriever, Memory, RetrievalConfig, Route};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{Semaphore, mpsc};

/// What the API serves: one index, the models over it, the agent, and the run log.
pub struct Engine {
    /// The store documents are ingested into and searched: the embedded index, or the
    /// Postgres database several servers share.
    pub store: Arc<dyn DynStore>,
    /// The embedder the index was built with.
    pub embedder: SentenceEmbedder,
    /// The chunker for that embedder.
    pub chunker: Arc<Chunker>,
    /// How uploads are ingested (size limit, batch size).
    pub ingest: IngestOptions,
    /// Fusion and candidate settings of `/v1/search`.
    pub retrieval: RetrievalConfig,
    /// The agent asks run on, with a retriever over [`Engine::index`].
    pub agent: Agent,
    /// Where every ask is recorded.
    pub runs: RunLog,
    /// Prices for the cost column of the run log.
    pub pricing: Pricing,
}

/// Bounds on what one client can make the server do.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Largest request body, bytes (an upload of several files counts whole).
    pub max_body_bytes: usize,
    /// Most files in one upload.
    pub max_files: usize,
    /// Time limit of requests other than asks and ingests.
    pub request_timeout: Duration,
    /// Time limit of one ask, queue wait included.
    pub ask_timeout: Duration,
    /// Time limit of one ingest.
    pub ingest_timeout: Duration,
    /// Asks running at once.
    pub running_asks: usize,
    /// Asks waiting for a slot; one more is refused with 429.
    pub waiting_asks: usize,
    /// `Host` headers `/mcp` accepts (its guard against DNS rebinding); `None`: loopback
    /// names only, `Some(empty)`: any (for a server beyond loopback, where every request
    /// needs an API key anyway).
    pub mcp_allowed_hosts: Option<Vec<String>>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body_bytes: 64 << 20,
            max_files: 32,
            request_timeout: Duration::from_secs(60),
            ask_timeout: Duration::from_secs(900),
            ingest_timeout: Duration::from_secs(3600),
            running_asks: 1,
            waiting_asks: 8,
            mcp_allowed_hosts: None,
        }
    }
}

/// The operations behind every surface (REST, SSE, MCP), with their limits and
/// accounting.
pub struct Service {
    engine: Engine,
    limits: Limits,
    keys: Option<Keys>,
    metrics: Metrics,
    asks: Semaphore,
    ingest_lock: tokio::sync::Mutex<()>,
    searcher: HybridRetriever<SentenceEmbedder, Arc<dyn DynStore>>,
    started: Instant,
}

type AppState = Arc<Service>;

impl Service {
    /// The service over `engine`. With `keys`, every `/v1` route but `/v1/health` (and
    /// `/mcp`) needs `Authorization: Bearer KEY` once a key exists.
    pub fn new(engine: Engine, limits: Limits, keys: Option<Keys>) -> Arc<Service> {
        let searcher = HybridRetriever::new(
            engine.embedder.clone(),
            engine.store.clone(),
            engine.retrieval.clone(),
        );
        Arc::new(Service {
            asks: Semaphore::new(limits.running_asks.max(1)),
            engine,
            keys,
            metrics: Metrics::default(),
            ingest_lock: tokio::sync::Mutex::new(()),
            searcher,
            started: Instant::now(),
            limits,
        })
    }

    /// The limits it enforces.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Ingests uploaded files (or one JSONL of corpus records, with `CorpusMode::Corpus`),
    /// one ingest at a time, on a blocking thread.
    pub async fn ingest(
        self: &Arc<Self>,
        uploads: Vec<Upload>,
        corpus: CorpusMode,
        collection: CollectionId,
        access: &Access,
    ) -> Result<IngestResponse> {
        access.check_write(&collection)?;
        let _one_at_a_time = self.ingest_lock.lock().await;
        let mut options = self.engine.ingest.clone();
        options.corpus = corpus;
        options.collection = collection;
        let shared = self.clone();
        let names: Vec<String> = uploads.iter().map(|u| u.name.clone()).collect();
        // Parsing and embedding are CPU-bound: off the async workers, so searches and health
        // checks stay responsive during a large upload.
        let task = tokio::task::spawn_blocking(move || {
            let handle = tokio::runtime::Handle::current();
            let results: Mutex<HashMap<String, FileResult>> = Mutex::new(HashMap::new());
            let on_event = |e: IngestEvent<'_>| {
                let mut r = results.lock().unwrap_or_else(|p| p.into_inner());
                match e {
                    IngestEvent::File { path, outcome, .. } => {
                        let name = path.display().to_string();
                        let entry = r.entry(name.clone()).or_insert_with(|| empty_result(&name));
                        let FileOutcome {
                            added,
                            updated,
                            unchanged,
                            failed,
                        } = outcome.clone();
                        entry.added = added;
                        entry.updated = updated;
                        entry.unchanged = unchanged;
                        entry.failed = failed;
                    }
                    IngestEvent::Failed(f) => {
                        // A record's failure is `file:line`; the file is what the client sent.
                        let name = match f.source.rsplit_once(':') {
                            Some((file, line)) if line.parse::<usize>().is_ok() => file,
                            _ => f.source.as_str(),
                        }
                        .to_string();
                        r.entry(name.clone())
                            .or_insert_with(|| empty_result(&name))
                            .errors
                            .push(f.error.clone());
                    }
                    _ => {}
                }
            };
            let ingester = Ingester::new(
                &shared.engine.chunker,
                &shared.engine.embedder,
                &shared.engine.store,
                options,
            );
            let report = handle.block_on(ingester.run_uploads(uploads, &on_event));
            (
                report,
                results.into_inner().unwrap_or_else(|p| p.into_inner()),
            )
        });
        let (report, mut results) = tokio::time::timeout(self.limits.ingest_timeout, task)
            .await
            .map_err(|_| Error::timeout("the ingest took longer than the server allows"))?
            .map_err(|e| Error::internal(format!("the ingest task failed: {e}")))?;
        let report = report?;
        let files: Vec<FileResult> = names
            .iter()
            .map(|n| results.remove(n).unwrap_or_else(|| empty_result(n)))
            .collect();
        let stored = report.added + report.updated + report.unchanged;
        if stored == 0 && !report.failures.is_empty() {
            let why: Vec<String> = report.failures.iter().map(|f| f.error.clone()).collect();
            return Err(Error::bad_request(format!(
                "nothing was ingested: {}",
                why.join("; ")
            )));
        }
        Ok(IngestResponse { files, report })
    }

    /// Every document `access` may read, without its text; only those of `collection`
    /// when one is named (403 if the key may not read it).
    pub async fn documents(
        &self,
        collection: Option<CollectionId>,
        access: &Access,
    ) -> Result<Vec<Document>> {
        let only = access
            .narrow(Filter {
                collections: collection.into_iter().collect(),
                ..Default::default()
            })?
            .collections;
        let mut docs = StoreRead::documents(&self.engine.store).await?;
        if !only.is_empty() {
            docs.retain(|d| only.contains(&d.collection));
        }
        Ok(docs)
    }

    /// Every collection `access` may read, with its counts.
    pub async fn collections(&self, access: &Access) -> Result<Vec<CollectionInfo>> {
        let mut all = StoreRead::collections(&self.engine.store).await?;
        all.retain(|c| access.can_read(&c.name));
        Ok(all)
    }

    /// One document with its text, and its chunks if asked; a document of a collection
    /// `access` may not read is not found, as if it did not exist.
    pub async fn document(
        &self,
        id: String,
        chunks: bool,
        access: &Access,
    ) -> Result<DocumentDetail> {
        let id = metarag_core::DocId::new(id)?;
        let document = StoreRead::document(&self.engine.store, &id)
            .await?
            .filter(|d| access.can_read(&d.collection))
            .ok_or_else(|| Error::not_found(format!("no document with id `{id}`")))?;
        let chunks = if chunks {
            StoreRead::document_chunks(&self.engine.store, &id).await?
        } else {
            Vec::new()
        };
        Ok(DocumentDetail { document, chunks })
    }

    /// Searches the collections of the index that `access` may read.
    pub async fn search(&self, body: SearchBody, access: &Access) -> Result<SearchResponse> {
        if body.query.trim().is_empty() {
            return Err(Error::bad_request("`query` is empty"));
        }
        let k = body.k.unwrap_or(10);
        if k == 0 || k > 100 {
            return Err(Error::bad_request("`k` must be between 1 and 100"));
        }
        let request = SearchRequest {
            query: body.query,
            k,
            mode: body.mode,
            filter: access.narrow(body.filter)?,
        };
        let (hits, timings) = self.searcher.search_timed(&request).await?;
        Ok(SearchResponse {
            hits,
            embed_ms: timings.embed.as_secs_f64() * 1e3,
            search_ms: timings.search.as_secs_f64() * 1e3,
        })
    }

    /// The verified context for a question without an answer (seed `002`'s router-only
    /// mode): the `router` strategy run context-only, in an ask slot (its classifier and
    /// reformulation may call the model), recorded in the run log; plus the audit
    /// memory's events when the route calls for it.
    pub async fn context(
        &self,
        body: ContextBody,
        surface: Surface,
        access: &Access,
    ) -> Result<ContextResponse> {
        let ask = prepare(
            self,
            AskBody {
                question: body.question,
                strategy: "router".into(),
                context: None,
                filter: body.filter,
            },
            access,
        )
        .await?
        .context_only();
        let deadline = self.limits.ask_timeout;
        let run = async {
            let (_slot, queue_ms) = acquire(self).await?;
            let mut trace = self.engine.agent.ask(&ask).await?;
            let run_id = finish(self, &mut trace, queue_ms, surface).await?;
            let route: Option<Route> = trace
                .records
                .get("route")
                .and_then(|v| serde_json::from_value(v.clone()).ok());
            let checks: Vec<ContextCheck> = trace
                .records
                .get("context_checks")
                .and_then(|v| serde_json::from_value(v.clone()).ok())
                .unwrap_or_default();
            let audit = match &route {
                Some(r) if r.memories.contains(&Memory::Audit) => {
                    let now = std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map_or(0, |d| d.as_secs() as i64);
                    let (from, to) = metarag_retrieve::router::time_range(&trace.question, now)
                        .unwrap_or((None, None));
                    // The audit memory of the collections the ask could read, no other.
                    let query = metarag_core::AuditQuery {
                        from,
                        to,
                        title: None,
                        collections: trace.scope.collections.clone(),
                        limit: 20,
                    };
                    self.engine.store.audit_events(&query).await?
                }
                _ => Vec::new(),
            };
            Ok::<_, Error>(ContextResponse {
                run_id,
                route,
                checks,
                sources: trace.sources.clone(),
                audit,
                queue_ms,
                trace,
            })
        };
        tokio::time::timeout(deadline, run).await.map_err(|_| {
            Error::timeout(format!(
                "the context took longer than {} s",
                deadline.as_secs()
            ))
        })?
    }

    /// Answers a question: waits for a slot (or is refused when too many wait), runs the
    /// strategy, and records the run.
    pub async fn ask(
        &self,
        body: AskBody,
        surface: Surface,
        access: &Access,
    ) -> Result<AskResponse> {
        let ask = prepare(self, body, access).await?;
        let deadline = self.limits.ask_timeout;
        let run = async {
            let (_slot, queue_ms) = acquire(self).await?;
            let mut trace = self.engine.agent.ask(&ask).await?;
            let run_id = finish(self, &mut trace, queue_ms, surface).await?;
            Ok::<_, Error>(AskResponse {
                run_id,
                answer: trace.answer.clone(),
                short_answer: trace.short_answer.clone(),
                abstained: trace.abstained,
                sources: trace.sources.clone(),
                queue_ms,
                trace,
            })
        };
        tokio::time::timeout(deadline, run).await.map_err(|_| {
            Error::timeout(format!("the ask took longer than {} s", deadline.as_secs()))
        })?
    }
}

/// Corpus records as one JSONL upload (ingested with `CorpusMode::Corpus`).
pub(crate) fn records_upload(records: &IngestRecords) -> Result<Upload> {
    if records.records.is_empty() {
        return Err(Error::bad_request("`records` is empty"));
    }
    let mut jsonl = Vec::new();
    for r in &records.records {
        serde_json::to_writer(&mut jsonl, r).map_err(|e| Error::internal(e.to_string()))?;
        jsonl.push(b'\n');
    }
    Ok(Upload::new("records.jsonl", jsonl)?)
}

/// The API's router over a new [`Service`]: see [`router_for`].
pub fn router(engine: Engine, limits: Limits, keys: Option<Keys>) -> Router {
    router_for(Service::new(engine, limits, keys))
}

/// The API's router: `/v1/*`, `/mcp` (MCP over streamable HTTP), `/openapi.json`, `/docs`
/// and the web page at `/`.
pub fn router_for(state: Arc<Service>) -> Router {
    let body_limit = state.limits.max_body_bytes;
    let api = Router::new()
        .route(
            "/ingest",
            post(ingest).layer(DefaultBodyLimit::max(body_limit)),
        )
        .route("/documents", get(list_documents))
        .route(
            "/collections",
            get(list_collections).post(create_collection),
        )
        .route(
            "/collections/{name}",
            axum::routing::patch(rename_collection).delete(delete_collection),
        )
        .route(
            "/documents/{*id}",
            get(get_document).delete(delete_document),
        )
        .route("/search", post(search))
        .route("/graph", post(graph))
        .route("/ask", post(ask))
        .route("/context", post(context))
        .route("/ask/stream", post(ask_stream))
        .route("/strategies", get(strategies))
        .route("/runs", get(list_runs))
        .route("/runs/{id}", get(get_run))
        .route("/metrics", get(metrics))
        .route("/keys", get(list_keys).post(add_key))
        .route("/keys/{id}", axum::routing::delete(remove_key))
        .route_layer(middleware::from_fn_with_state(state.clone(), authorize))
        .route("/health", get(health));
    let mcp = Router::new()
        .nest_service("/mcp", crate::mcp::http_service(state.clone()))
        .layer(middleware::from_fn_with_state(state.clone(), authorize));
    Router::new()
        .nest("/v1", api)
        .merge(mcp)
        .route("/", get(web_page))
        .route("/docs", get(docs_page))
        .route("/openapi.json", get(openapi_json))
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(state.clone(), observe))
        .with_state(state)
}

/// Requires a key on every protected route once any key exists.
/// Checks the request's key and puts what it may reach ([`Access`]) into the request's
/// extensions, for the handlers and the MCP tools; a server without keys is open to all.
async fn authorize(State(s): State<AppState>, mut req: Request, next: Next) -> Response {
    let mut access = Access::All;
    if let Some(keys) = &s.keys {
        let header = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        match keys.required(header.is_some()).await {
            Ok(false) => {}
            Ok(true) => match keys.check(header.as_deref()).await {
                Ok(a) => access = a,
                Err(e) => return e.into_response(),
            },
            Err(e) => return e.into_response(),
        }
    }
    req.extensions_mut().insert(access);
    next.run(req).await
}

/// Counts and times every request by its route pattern.
async fn observe(State(s): State<AppState>, req: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = req.method().to_string();
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_string(), |p| p.as_str().to_string());
    let response = next.run(req).await;
    s.metrics.request(
        &method,
        &route,
        response.status().as_u16(),
        started.elapsed().as_secs_f64(),
    );
    response
}

async fn not_found() -> Error {
    Error::not_found("no such endpoint; the API is under /v1 (see /docs)")
}

/// Runs `f` under the general request time limit.
async fn limited<T>(s: &Service, f: impl Future<Output = Result<T>>) -> Result<T> {
    tokio::time::timeout(s.limits.request_timeout, f)
        .await
        .unwrap_or_else(|_| {
            Err(Error::timeout(format!(
                "the request took longer than {} s",
                s.limits.request_timeout.as_secs()
            )))
        })
}

// ---------------------------------------------------------------------------------------
// Health, metrics, strategies

/// `GET /v1/health`.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Health {
    /// Always `ok` when the server answers.
    pub status: String,
    /// metarag's version.
    pub version: String,
    /// The chat model.
    pub model: String,
    /// The embedder.
    pub embedder: String,
    /// Documents in the index.
    pub documents: u64,
    /// Chunks in the index.
    pub chunks: u64,
    /// Whether `/v1` requests need an API key.
    pub auth: bool,
    /// Seconds since the server started.
    pub uptime_s: f64,
}

async fn health(State(s): State<AppState>) -> Result<Json<Health>> {
    limited(&s, async {
        let stats = StoreRead::stats(&s.engine.store).await?;
        Ok(Json(Health {
            status: "ok".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            model: s.engine.agent.model_id().to_string(),
            embedder: metarag_core::Embedder::model_id(&s.engine.embedder).to_string(),
            documents: stats.documents,
            chunks: stats.chunks,
            auth: match &s.keys {
                Some(k) => k.any().await?,
                None => false,
            },
            uptime_s: s.started.elapsed().as_secs_f64(),
        }))
    })
    .await
}

async fn metrics(State(s): State<AppState>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        s.metrics.render(),
    )
}

/// One registered strategy.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StrategyInfo {
    /// The name `/v1/ask` takes.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Whether it reads sources (false: closed-book).
    pub needs_evidence: bool,
}

async fn strategies(State(s): State<AppState>) -> Json<Vec<StrategyInfo>> {
    Json(
        s.engine
            .agent
            .registry()
            .iter()
            .map(|st| StrategyInfo {
                name: st.name().to_string(),
                description: st.description().to_string(),
                needs_evidence: st.needs_evidence(),
            })
            .collect(),
    )
}

// ---------------------------------------------------------------------------------------
// Documents and ingest

/// `POST /v1/ingest` with a JSON body: corpus records.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct IngestRecords {
    /// The records; each becomes one document under its own id.
    pub records: Vec<CorpusRecord>,
}

/// One corpus record.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CorpusRecord {
    /// The document's id (re-sending an id replaces that document).
    pub doc_id: String,
    /// Its title.
    pub title: String,
    /// Its text.
    pub text: String,
    /// Key-value metadata, searchable with a search's `filter.metadata`.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub metadata: serde_json::Map<String, serde_json::Value>,
}

/// What one uploaded file gave.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FileResult {
    /// The file name as sent.
    pub name: String,
    /// New documents.
    pub added: usize,
    /// Replaced documents.
    pub updated: usize,
    /// Unchanged documents.
    pub unchanged: usize,
    /// Failed documents or records.
    pub failed: usize,
    /// Why they failed.
    pub errors: Vec<String>,
}

/// `POST /v1/ingest`'s answer.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct IngestResponse {
    /// Per file, in upload order.
    pub files: Vec<FileResult>,
    /// Totals.
    pub report: IngestReport,
}

/// Query of `POST /v1/ingest` and `GET /v1/documents`.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
pub struct CollectionQuery {
    /// The collection (`default` when absent for an ingest; every one for a listing).
    #[serde(default)]
    pub collection: Option<CollectionId>,
}

async fn ingest(
    State(s): State<AppState>,
    Extension(access): Extension<Access>,
    q: Result<Query<CollectionQuery>, axum::extract::rejection::QueryRejection>,
    headers: HeaderMap,
    req: Request,
) -> Result<Json<IngestResponse>> {
    let Query(q) = q.map_err(query_error)?;
    // Refused before the body is read.
    let collection = q.collection.unwrap_or_default();
    access.check_write(&collection)?;
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let (uploads, corpus) = if content_type.starts_with("multipart/form-data") {
        let multipart = <Multipart as axum::extract::FromRequest<AppState>>::from_request(req, &s)
            .await
            .map_err(|e| Error::bad_request(format!("not a multipart body: {e}")))?;
        (
            read_uploads(multipart, s.limits.max_files).await?,
            CorpusMode::Auto,
        )
    } else if content_type.starts_with("application/json") {
        let bytes = axum::body::to_bytes(req.into_body(), s.limits.max_body_bytes)
            .await
            .map_err(|e| body_error(&e.to_string(), s.limits.max_body_bytes))?;
        let records: IngestRecords = serde_json::from_slice(&bytes).map_err(|e| {
            Error::bad_request(format!(
                "the JSON body is not `{{\"records\": [{{doc_id, title, text}}]}}`: {e}"
            ))
        })?;
        (vec![records_upload(&records)?], CorpusMode::Corpus)
    } else {
        return Err(Error::bad_request(
            "send files as multipart/form-data (field `file`) or records as application/json",
        ));
    };
    Ok(Json(s.ingest(uploads, corpus, collection, &access).await?))
}

fn empty_result(name: &str) -> FileResult {
    FileResult {
        name: name.to_string(),
        added: 0,
        updated: 0,
        unchanged: 0,
        failed: 0,
        errors: Vec::new(),
    }
}

fn body_error(reason: &str, limit: usize) -> Error {
    if reason.contains("length limit") || reason.contains("too large") {
        Error::too_large(format!(
            "the request body exceeds the server's limit of {limit} bytes"
        ))
    } else {
        Error::bad_request(format!("reading the request body failed: {reason}"))
    }
}

async fn read_uploads(mut multipart: Multipart, max_files: usize) -> Result<Vec<Upload>> {
    let mut uploads = Vec::new();
    loop {
        let field = match multipart.next_field().await {
            Ok(Some(f)) => f,
            Ok(None) => break,
            Err(e) => return Err(multipart_error(e)),
        };
        let Some(name) = field.file_name().map(str::to_string) else {
            // Form fields without a file (a client's extras) are not documents.
            continue;
        };
        if uploads.len() == max_files {
            return Err(Error::too_large(format!(
                "at most {max_files} files per upload; send the rest in another request"
            )));
        }
        let bytes = field.bytes().await.map_err(multipart_error)?;
        uploads.push(Upload::new(&name, bytes.to_vec())?);
    }
    if uploads.is_empty() {
        return Err(Error::bad_request(
            "no file in the upload: send each as a multipart field with a file name",
        ));
    }
    Ok(uploads)
}

fn multipart_error(e: axum::extract::multipart::MultipartError) -> Error {
    if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
        Error::too_large(format!("the upload is too large: {}", e.body_text()))
    } else {
        Error::bad_request(format!(
            "the multipart body is malformed: {}",
            e.body_text()
        ))
    }
}

async fn list_documents(
    State(s): State<AppState>,
    Extension(access): Extension<Access>,
    q: Result<Query<CollectionQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Vec<Document>>> {
    let Query(q) = q.map_err(query_error)?;
    limited(&s, s.documents(q.collection, &access))
        .await
        .map(Json)
}

/// `POST /v1/collections`'s body, and `PATCH /v1/collections/{name}`'s (the new name).
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CollectionBody {
    /// The name: lower-case letters, digits, `-` and `_`.
    pub name: CollectionId,
}

/// `POST /v1/collections`'s answer.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CollectionCreated {
    /// The collection.
    pub name: CollectionId,
    /// False when it existed already.
    pub created: bool,
}

/// `DELETE /v1/collections/{name}`'s answer.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CollectionDeleted {
    /// The collection.
    pub name: CollectionId,
    /// The documents deleted with it.
    pub documents: u64,
}

/// A key as `/v1/keys` lists it: never the key or its hash.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct KeyInfo {
    /// Its public id (the key's first characters), for removal.
    pub id: String,
    /// What it is for.
    pub name: String,
    /// When it was made, milliseconds since the Unix epoch.
    pub created_ms: i64,
    /// The collections it is held to; absent for an admin key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<crate::KeyScope>,
}

impl From<crate::KeyRecord> for KeyInfo {
    fn from(k: crate::KeyRecord) -> Self {
        KeyInfo {
            id: k.id,
            name: k.name,
            created_ms: k.created_ms,
            scope: k.scope,
        }
    }
}

/// `POST /v1/keys`: a new key, held to collections unless `admin`.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NewKeyBody {
    /// What it is for.
    pub name: String,
    /// Collections it may read.
    #[serde(default)]
    pub read: Vec<CollectionId>,
    /// Collections it may write (and so read).
    #[serde(default)]
    pub write: Vec<CollectionId>,
    /// An admin key: every collection, and keys and collections to manage. Said
    /// outright: a body with no collections is refused rather than made an admin key.
    #[serde(default)]
    pub admin: bool,
}

/// `POST /v1/keys`' answer.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NewKey {
    /// The key itself: shown this once, stored only as a hash.
    pub key: String,
    /// The key as listed.
    pub record: KeyInfo,
}

/// `DELETE /v1/keys/{id}`'s answer.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct KeyRemoved {
    /// The removed key's id.
    pub removed: String,
}

/// The key store, or a 409 on a server started without one.
fn key_admin<'a>(s: &'a AppState, access: &Access, what: &str) -> Result<&'a Keys> {
    access.check_admin(what)?;
    s.keys
        .as_ref()
        .ok_or_else(|| Error::conflict("this server was started without a key store"))
}

async fn list_keys(
    State(s): State<AppState>,
    Extension(access): Extension<Access>,
) -> Result<Json<Vec<KeyInfo>>> {
    let keys = key_admin(&s, &access, "listing keys")?;
    Ok(Json(
        keys.list().await?.into_iter().map(KeyInfo::from).collect(),
    ))
}

async fn add_key(
    State(s): State<AppState>,
    Extension(access): Extension<Access>,
    body: Result<Json<NewKeyBody>, axum::extract::rejection::JsonRejection>,
) -> Result<(StatusCode, Json<NewKey>)> {
    let keys = key_admin(&s, &access, "making keys")?;
    let Json(body) = body.map_err(json_error)?;
    let scoped = !body.read.is_empty() || !body.write.is_empty();
    let scope = match (body.admin, scoped) {
        (true, true) => {
            return Err(Error::bad_request(
                "an admin key reaches every collection: give `admin` or `read`/`write`, not both",
            ));
        }
        (true, false) => None,
        (false, true) => Some(crate::KeyScope {
            read: body.read,
            write: body.write,
        }),
        (false, false) => {
            return Err(Error::bad_request(
                "a key needs collections to `read` or `write`, or `admin: true`",
            ));
        }
    };
    // The first key of an open server decides who manages it: a key held to collections
    // would leave no one able to manage keys over HTTP.
    if scope.is_some() && keys.list().await?.is_empty() {
        return Err(Error::bad_request(
            "the first key must be an admin key (`admin: true`): a key held to collections cannot manage keys",
        ));
    }
    let (record, key) = keys.add(&body.name, scope).await?;
    Ok((
        StatusCode::CREATED,
        Json(NewKey {
            key,
            record: record.into(),
        }),
    ))
}

async fn remove_key(
    State(s): State<AppState>,
    Extension(access): Extension<Access>,
    Path(id): Path<String>,
) -> Result<Json<KeyRemoved>> {
    let keys = key_admin(&s, &access, "removing keys")?;
    if keys.remove(&id).await? {
        Ok(Json(KeyRemoved { removed: id }))
    } else {
        Err(Error::not_found(format!("no key with id `{id}`")))
    }
}

async fn list_collections(
    State(s): State<AppState>,
    Extension(access): Extension<Access>,
) -> Result<Json<Vec<CollectionInfo>>> {
    limited(&s, s.collections(&access)).await.map(Json)
}

async fn create_collection(
    State(s): State<AppState>,
    Extension(access): Extension<Access>,
    body: Result<Json<CollectionBody>, axum::extract::rejection::JsonRejection>,
) -> Result<(StatusCode, Json<CollectionCreated>)> {
    access.check_admin("making a collection")?;
    let Json(body) = body.map_err(json_error)?;
    let _one_at_a_time = s.ingest_lock.lock().await;
    limited(&s, async {
        let created = metarag_core::Store::create_collection(&s.engine.store, &body.name).await?;
        let status = if created {
            StatusCode::CREATED
        } else {
            StatusCode::OK
        };
        Ok((
            status,
            Json(CollectionCreated {
                name: body.name,
                created,
            }),
        ))
    })
    .await
}

/// The collection named in a path, or a 400 naming it.
fn collection_in_path(name: &str) -> Result<CollectionId> {
    Ok(CollectionId::new(name)?)
}

/// A 404 for a collection the store does not hold.
async fn known_collection(s: &Service, name: &CollectionId) -> Result<()> {
    if s.collections(&Access::All)
        .await?
        .iter()
        .any(|c| &c.name == name)
    {
        Ok(())
    } else {
        Err(Error::not_found(format!("no collection named `{name}`")))
    }
}

async fn rename_collection(
    State(s): State<AppState>,
    Extension(access): Extension<Access>,
    Path(name): Path<String>,
    body: Result<Json<CollectionBody>, axum::extract::rejection::JsonRejection>,
) -> Result<Json<CollectionInfo>> {
    access.check_admin("renaming a collection")?;
    let Json(body) = body.map_err(json_error)?;
    let _one_at_a_time = s.ingest_lock.lock().await;
    limited(&s, async {
        let from = collection_in_path(&name)?;
        known_collection(&s, &from).await?;
        metarag_core::Store::rename_collection(&s.engine.store, &from, &body.name).await?;
        // The keys that reached it keep reaching it under its new name.
        if let Some(keys) = &s.keys {
            keys.move_collection(&from, Some(&body.name)).await?;
        }
        // So do the keys that could read its runs.
        s.engine
            .runs
            .move_collection(&from, Some(&body.name))
            .await?;
        s.collections(&access)
            .await?
            .into_iter()
            .find(|c| c.name == body.name)
            .map(Json)
            .ok_or_else(|| Error::internal("the renamed collection is not listed"))
    })
    .await
}

async fn delete_collection(
    State(s): State<AppState>,
    Extension(access): Extension<Access>,
    Path(name): Path<String>,
) -> Result<Json<CollectionDeleted>> {
    access.check_admin("deleting a collection")?;
    let _one_at_a_time = s.ingest_lock.lock().await;
    limited(&s, async {
        let name = collection_in_path(&name)?;
        known_collection(&s, &name).await?;
        let documents = metarag_core::Store::delete_collection(&s.engine.store, &name).await?;
        // A collection made later under this name is not reachable by the old one's keys.
        if let Some(keys) = &s.keys {
            keys.move_collection(&name, None).await?;
        }
        // Nor are its runs: they stay with the deleted collection, for admin keys only.
        s.engine.runs.move_collection(&name, None).await?;
        Ok(Json(CollectionDeleted { name, documents }))
    })
    .await
}

/// `GET /v1/documents/{id}`'s answer.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DocumentDetail {
    /// The document with its text.
    pub document: Document,
    /// Its chunks in order (with `?chunks=true`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chunks: Vec<metarag_core::Chunk>,
}

/// Query of `GET /v1/documents/{id}`.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
pub struct DocumentQuery {
    /// Include the chunks.
    #[serde(default)]
    pub chunks: bool,
}

async fn get_document(
    State(s): State<AppState>,
    Extension(access): Extension<Access>,
    Path(id): Path<String>,
    Query(q): Query<DocumentQuery>,
) -> Result<Json<DocumentDetail>> {
    limited(&s, s.document(id, q.chunks, &access))
        .await
        .map(Json)
}

/// `DELETE /v1/documents/{id}`'s answer.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Removed {
    /// The removed document ids.
    pub removed: Vec<String>,
}

async fn delete_document(
    State(s): State<AppState>,
    Extension(access): Extension<Access>,
    Path(id): Path<String>,
) -> Result<Json<Removed>> {
    let _one_at_a_time = s.ingest_lock.lock().await;
    limited(&s, async {
        let id = metarag_core::DocId::new(id)?;
        // Not found unless the key can read it (no existence leak); refused unless it
        // can write it.
        let Some(doc) = StoreRead::document(&s.engine.store, &id)
            .await?
            .filter(|d| access.can_read(&d.collection))
        else {
            return Err(Error::not_found(format!("no document with id `{id}`")));
        };
        access.check_write(&doc.collection)?;
        metarag_core::Store::apply(&s.engine.store, Vec::new(), vec![id.clone()]).await?;
        Ok(Json(Removed {
            removed: vec![id.to_string()],
        }))
    })
    .await
}

// ---------------------------------------------------------------------------------------
// Search

/// `POST /v1/search`.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SearchBody {
    /// The query.
    pub query: String,
    /// Hits to return (default 10, at most 100).
    #[serde(default)]
    pub k: Option<usize>,
    /// `hybrid` (default), `bm25` or `dense`.
    #[serde(default)]
    pub mode: SearchMode,
    /// Restrictions: document ids, title text, date range.
    #[serde(default)]
    pub filter: Filter,
}

/// `POST /v1/search`'s answer.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SearchResponse {
    /// Hits, best first.
    pub hits: Vec<Hit>,
    /// Milliseconds embedding the query.
    pub embed_ms: f64,
    /// Milliseconds searching and fusing.
    pub search_ms: f64,
}

async fn search(
    State(s): State<AppState>,
    Extension(access): Extension<Access>,
    body: Result<Json<SearchBody>, axum::extract::rejection::JsonRejection>,
) -> Result<Json<SearchResponse>> {
    let Json(body) = body.map_err(json_error)?;
    limited(&s, s.search(body, &access)).await.map(Json)
}

async fn graph(
    State(s): State<AppState>,
    Extension(access): Extension<Access>,
    body: Result<Json<GraphBody>, axum::extract::rejection::JsonRejection>,
) -> Result<Json<GraphResponse>> {
    let Json(body) = body.map_err(json_error)?;
    limited(&s, s.graph(body, &access)).await.map(Json)
}

fn query_error(e: axum::extract::rejection::QueryRejection) -> Error {
    Error::bad_request(format!("the query string is invalid: {}", e.body_text()))
}

fn json_error(e: axum::extract::rejection::JsonRejection) -> Error {
    if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
        Error::too_large(e.body_text())
    } else {
        Error::bad_request(format!("the JSON body is invalid: {}", e.body_text()))
    }
}

// ---------------------------------------------------------------------------------------
// Graph view

/// `POST /v1/graph`: an entity's neighbourhood.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GraphBody {
    /// The entity's name, linked as a search links the names a query states.
    pub entity: String,
    /// Only these collections (each one the key may read); every one it may read when
    /// empty.
    #[serde(default)]
    pub collections: Vec<CollectionId>,
    /// At most this many of the chunks that mention it are read (default 20, at most 100).
    pub chunks: Option<usize>,
}

/// A chunk that mentions the entity.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GraphChunk {
    /// The chunk.
    pub id: ChunkId,
    /// Its document.
    pub doc_id: DocId,
    /// The document's title.
    pub title: String,
}

/// An entity named beside it in those chunks.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GraphNeighbour {
    /// Its display name (a document title where one names it).
    pub name: String,
    /// `title`, `name`, `acronym`, `date` or `concept`.
    pub label: String,
    /// Summed mention confidence over the chunks it shares with the entity.
    pub weight: f32,
    /// How many of those chunks name it.
    pub chunks: usize,
}

/// A relation those chunks state between the entity and another.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GraphRelation {
    /// The subject's name.
    pub subject: String,
    /// The predicate (`is_a`, `has`, a verb, a preposition).
    pub predicate: String,
    /// The object's name.
    pub object: String,
    /// The chunk that states it.
    pub chunk: ChunkId,
}

/// `POST /v1/graph`'s answer: the entity, the chunks that mention it, the entities named
/// beside it and the relations stated, all read from chunks of collections the key may
/// read (the graph's shared entities are never listed from another collection's text).
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GraphResponse {
    /// The entity's display name.
    pub entity: String,
    /// The chunks that mention it, most confident first.
    pub chunks: Vec<GraphChunk>,
    /// The entities named beside it, heaviest first (at most 25).
    pub neighbours: Vec<GraphNeighbour>,
    /// The relations stated between it and another (at most 50).
    pub relations: Vec<GraphRelation>,
}

impl Service {
    /// An entity's neighbourhood as the chunks the key may read state it: the store's
    /// graph finds the chunks that mention the entity (a walk of no hops, inside the
    /// collections), and the entities and relations are read off those chunks alone.
    pub async fn graph(&self, body: GraphBody, access: &Access) -> Result<GraphResponse> {
        use metarag_index::entities;
        let name = body.entity.trim();
        if name.is_empty() {
            return Err(Error::bad_request("`entity` is empty"));
        }
        let n = body.chunks.unwrap_or(20);
        if n == 0 || n > 100 {
            return Err(Error::bad_request("`chunks` must be between 1 and 100"));
        }
        let filter = access.narrow(Filter {
            collections: body.collections,
            ..Filter::default()
        })?;
        let mut walk = self.engine.retrieval.graph.clone();
        walk.max_hops = 0;
        walk.chunks_per_entity = n;
        let hits = self.engine.store.graph(name, n, &walk, &filter).await?;
        let ids: Vec<ChunkId> = hits.iter().map(|h| h.id).collect();
        let chunks = self.engine.store.chunks(&ids).await?;
        // The entity is the one every chunk found names: the most often extracted key,
        // the name's own key first among equals.
        let own = entities::normalize(name);
        let extracted: Vec<entities::Extraction> = chunks
            .iter()
            .map(|c| entities::extract(&c.title, &c.draft.text))
            .collect();
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for x in &extracted {
            let mut keys: Vec<&str> = x.mentions.iter().map(|m| m.key.as_str()).collect();
            keys.sort_unstable();
            keys.dedup();
            for k in keys {
                *counts.entry(k).or_default() += 1;
            }
        }
        let Some(center) = counts
            .iter()
            .max_by(|a, b| {
                a.1.cmp(b.1)
                    .then((*a.0 == own).cmp(&(*b.0 == own)))
                    .then(b.0.cmp(a.0))
            })
            .map(|(k, _)| k.to_string())
        else {
            // Not found, or only in collections the key cannot read: the same answer.
            return Err(Error::not_found(format!(
                "no entity named `{name}` in the documents this key may read"
            )));
        };
        let mut display = name.to_string();
        let mut neighbours: HashMap<String, GraphNeighbour> = HashMap::new();
        let mut relations: Vec<GraphRelation> = Vec::new();
        for (x, c) in extracted.iter().zip(&chunks) {
            if !x.mentions.iter().any(|m| m.key == center) {
                continue;
            }
            for m in &x.mentions {
                if m.key == center {
                    if m.label == entities::EntityLabel::Title {
                        display = m.name.clone();
                    }
                    continue;
                }
                let e = neighbours
                    .entry(m.key.clone())
                    .or_insert_with(|| GraphNeighbour {
                        name: m.name.clone(),
                        label: m.label.as_str().to_string(),
                        weight: 0.0,
                        chunks: 0,
                    });
                if m.label == entities::EntityLabel::Title {
                    e.name = m.name.clone();
                    e.label = m.label.as_str().to_string();
                }
                e.weight += m.confidence;
                e.chunks += 1;
            }
            for r in &x.relations {
                let (s, o) = (&x.mentions[r.subject], &x.mentions[r.object]);
                if s.key != center && o.key != center {
                    continue;
                }
                let rel = GraphRelation {
                    subject: s.name.clone(),
                    predicate: r.predicate.clone(),
                    object: o.name.clone(),
                    chunk: c.id,
                };
                if !relations.iter().any(|x| {
                    (&x.subject, &x.predicate, &x.object)
                        == (&rel.subject, &rel.predicate, &rel.object)
                }) {
                    relations.push(rel);
                }
            }
        }
        let mut neighbours: Vec<GraphNeighbour> = neighbours.into_values().collect();
        neighbours.sort_by(|a, b| b.weight.total_cmp(&a.weight).then(a.name.cmp(&b.name)));
        neighbours.truncate(25);
        relations.truncate(50);
        Ok(GraphResponse {
            entity: display,
            chunks: chunks
                .iter()
                .map(|c| GraphChunk {
                    id: c.id,
                    doc_id: c.doc_id.clone(),
                    title: c.title.clone(),
                })
                .collect(),
            neighbours,
            relations,
        })
    }
}

// ---------------------------------------------------------------------------------------
// Context

/// `POST /v1/context`.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ContextBody {
    /// The question.
    pub question: String,
    /// The documents the context may come from (a search's `filter`).
    #[serde(default, skip_serializing_if = "Filter::is_empty")]
    pub filter: Filter,
}

/// `POST /v1/context`'s answer: what a larger generator needs to answer, without an
/// answer.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ContextResponse {
    /// The run's id in the run log.
    pub run_id: String,
    /// The question's intents and the memories searched.
    pub route: Option<Route>,
    /// Each relevance check of the context (a second one after the reformulation).
    pub checks: Vec<ContextCheck>,
    /// The numbered sources.
    pub sources: Vec<Source>,
    /// The audit memory's document events in the question's time range (temporal
    /// questions only).
    pub audit: Vec<AuditEvent>,
    /// Milliseconds the request waited for a free slot.
    pub queue_ms: f64,
    /// The whole trace.
    pub trace: Trace,
}

async fn context(
    State(s): State<AppState>,
    Extension(access): Extension<Access>,
    body: Result<Json<ContextBody>, axum::extract::rejection::JsonRejection>,
) -> Result<Json<ContextResponse>> {
    let Json(body) = body.map_err(json_error)?;
    Ok(Json(s.context(body, Surface::Rest, &access).await?))
}

// ---------------------------------------------------------------------------------------
// Ask

/// `POST /v1/ask` and `POST /v1/ask/stream`.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AskBody {
    /// The question.
    pub question: String,
    /// A registered strategy (`GET /v1/strategies`; default `metarag`).
    #[serde(default = "default_strategy")]
    pub strategy: String,
    /// Gold-context mode: these paragraphs are the only sources; nothing is retrieved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<Vec<ContextParagraph>>,
    /// The documents the answer may draw on (a search's `filter`: ids, title, dates,
    /// metadata): every search the strategy makes is narrowed by it.
    #[serde(default, skip_serializing_if = "Filter::is_empty")]
    pub filter: Filter,
}

fn default_strategy() -> String {
    "metarag".into()
}

/// A paragraph given as a source.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ContextParagraph {
    /// Its title.
    pub title: String,
    /// Its text.
    pub text: String,
}

/// `POST /v1/ask`'s answer.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AskResponse {
    /// The run's id in the run log (`GET /v1/runs/{id}`).
    pub run_id: String,
    /// The answer, citing its sources as `[n]`.
    pub answer: String,
    /// The short answer.
    pub short_answer: String,
    /// Whether the run declined to answer: the sources, as far as its checks tell, do not
    /// settle the question (`trace.abstention` says why and holds any answer held back).
    pub abstained: bool,
    /// The numbered sources.
    pub sources: Vec<Source>,
    /// Milliseconds the ask waited for a free slot.
    pub queue_ms: f64,
    /// The whole trace: plan, retrievals, rounds, verification, diagnosis, remediation,
    /// calls and node timings.
    pub trace: Trace,
}

/// Validates an ask: the question, the strategy, the context or a non-empty index.
/// The ask of `body`, its every search held to the collections `access` may read.
async fn prepare(s: &Service, body: AskBody, access: &Access) -> Result<Ask> {
    if body.question.trim().is_empty() {
        return Err(Error::bad_request("`question` is empty"));
    }
    let registry = s.engine.agent.registry();
    let strategy = registry.get(&body.strategy).map_err(|_| {
        Error::bad_request(format!(
            "unknown strategy `{}`; registered: {}",
            body.strategy,
            registry.names().join(", ")
        ))
    })?;
    let scope = access.narrow(body.filter)?;
    let mut ask = Ask::new(body.question, body.strategy.as_str()).with_scope(scope);
    match body.context {
        Some(paragraphs) => {
            if paragraphs.is_empty() {
                return Err(Error::bad_request("`context` has no paragraphs"));
            }
            ask = ask.with_context(
                paragraphs
                    .into_iter()
                    .map(|p| Passage {
                        doc: p.title.clone(),
                        title: p.title,
                        section: Vec::new(),
                        pages: None,
                        chunk_id: None,
                        text: p.text,
                    })
                    .collect(),
            );
        }
        None => {
            let empty = strategy.needs_evidence()
                && StoreRead::stats(&s.engine.store).await?.documents == 0;
            if empty {
                return Err(Error::conflict(
                    "the index is empty: upload documents first (POST /v1/ingest) or send `context` paragraphs",
                ));
            }
        }
    }
    Ok(ask)
}

/// Holds a running-ask slot and keeps the gauges right however the ask ends.
struct Slot<'a> {
    s: &'a Service,
    _permit: tokio::sync::SemaphorePermit<'a>,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.s.metrics.running(-1);
    }
}

/// Waits for a slot in arrival order, or refuses at once when too many already wait.
async fn acquire(s: &Service) -> Result<(Slot<'_>, f64)> {
    let started = Instant::now();
    let queued = s.asks.available_permits() == 0;
    if queued {
        let waiting = s.metrics.waiting(1);
        if waiting > s.limits.waiting_asks as i64 {
            s.metrics.waiting(-1);
            s.metrics.rejected();
            // Every ask ahead, shared among the running slots, at the mean ask time so far
            // (30 s before the first has finished).
            let per_ask = s.metrics.mean_ask_ms().unwrap_or(30_000.0) / 1e3;
            let seconds = (per_ask * waiting as f64 / s.limits.running_asks.max(1) as f64).ceil();
            return Err(Error::busy(
                format!("{} asks are already waiting; retry later", waiting - 1),
                seconds as u64,
            ));
        }
    }
    let permit = s.asks.acquire().await;
    if queued {
        s.metrics.waiting(-1);
    }
    let permit = permit.map_err(|_| Error::internal("the ask queue is closed"))?;
    s.metrics.running(1);
    let queue_ms = started.elapsed().as_secs_f64() * 1e3;
    s.metrics.queue_wait(queue_ms / 1e3);
    Ok((Slot { s, _permit: permit }, queue_ms))
}

/// Records a finished run in the log and the metrics; returns its id.
async fn finish(s: &Service, trace: &mut Trace, queue_ms: f64, surface: Surface) -> Result<String> {
    trace.queue_ms = queue_ms;
    s.metrics.ask(
        &trace.strategy,
        matches!(trace.stop, StopReason::Failed(_)),
        trace.abstained,
        trace.graph.wall_ms,
        &trace.usage,
    );
    Ok(s.engine
        .runs
        .record(trace, surface, queue_ms, s.engine.pricing)
        .await?)
}

async fn ask(
    State(s): State<AppState>,
    Extension(access): Extension<Access>,
    body: Result<Json<AskBody>, axum::extract::rejection::JsonRejection>,
) -> Result<Json<AskResponse>> {
    let Json(body) = body.map_err(json_error)?;
    Ok(Json(s.ask(body, Surface::Rest, &access).await?))
}

/// One event of `POST /v1/ask/stream` (the SSE `event:` field is `kind`).
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum StreamEvent {
    /// The ask is waiting for a slot.
    Queued {
        /// Asks ahead of it, itself included.
        waiting: i64,
    },
    /// The run started.
    Started {
        /// Milliseconds it waited.
        queue_ms: f64,
        /// The strategy.
        strategy: String,
    },
    /// A node started.
    NodeStart {
        /// The node.
        node: String,
    },
    /// What the node that started is doing, in a sentence for the person waiting
    /// ("Grading 10 passages..."), from strategies whose nodes say.
    Doing {
        /// The sentence.
        text: String,
    },
    /// A node finished.
    NodeEnd {
        /// The node.
        node: String,
        /// Its wall time, milliseconds.
        elapsed_ms: f64,
        /// What it did, in one line.
        note: Option<String>,
        /// The next node, if any.
        next: Option<String>,
        /// Why the run stopped here, if it did.
        stop: Option<String>,
    },
    /// Generated text: the readable part of a model call as it is written (a structured
    /// call's `answer` field, or a plain call's text).
    Token {
        /// What the call is for (`write` is the answer).
        purpose: String,
        /// The call's number in the run.
        call: u64,
        /// The new text.
        text: String,
    },
    /// The run finished.
    Done {
        /// The run's id in the run log.
        run_id: String,
        /// The whole trace.
        trace: Box<Trace>,
    },
    /// The run could not finish.
    Error {
        /// The error.
        error: crate::error::ErrorDetail,
    },
}

impl StreamEvent {
    fn name(&self) -> &'static str {
        match self {
            StreamEvent::Queued { .. } => "queued",
            StreamEvent::Started { .. } => "started",
            StreamEvent::NodeStart { .. } => "node_start",
            StreamEvent::Doing { .. } => "doing",
            StreamEvent::NodeEnd { .. } => "node_end",
            StreamEvent::Token { .. } => "token",
            StreamEvent::Done { .. } => "done",
            StreamEvent::Error { .. } => "error",
        }
    }

    fn into_sse(self) -> Event {
        let name = self.name();
        Event::default()
            .event(name)
            .json_data(&self)
            .unwrap_or_else(|_| Event::default().event("error").data("{}"))
    }
}

/// Aborts the run when the client goes away (the stream is dropped), so a closed tab does
/// not keep the model busy.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn ask_stream(
    State(s): State<AppState>,
    Extension(access): Extension<Access>,
    body: Result<Json<AskBody>, axum::extract::rejection::JsonRejection>,
) -> Result<Response> {
    let Json(body) = body.map_err(json_error)?;
    // Bad input is refused with a status before the stream starts.
    let ask = prepare(&s, body, &access).await?;
    let (tx, rx) = mpsc::unbounded_channel::<StreamEvent>();
    let shared = s.clone();
    let task = tokio::spawn(async move {
        let s = shared;
        let send = |e: StreamEvent| {
            let _ = tx.send(e);
        };
        let deadline = s.limits.ask_timeout;
        let result = tokio::time::timeout(deadline, async {
            if s.asks.available_permits() == 0 {
                send(StreamEvent::Queued {
                    waiting: s.metrics.waiting(0) + 1,
                });
            }
            let (_slot, queue_ms) = acquire(&s).await?;
            send(StreamEvent::Started {
                queue_ms,
                strategy: ask.strategy.as_str().to_string(),
            });
            let calls: Mutex<HashMap<u64, VisibleText>> = Mutex::new(HashMap::new());
            let token_tx = tx.clone();
            let calls = Arc::new(calls);
            let tap_calls = calls.clone();
            let tapped = ask
                .clone()
                .with_tap(Arc::new(move |g: metarag_agent::Generated<'_>| {
                    let mut calls = tap_calls.lock().unwrap_or_else(|p| p.into_inner());
                    if let Some(text) = calls.entry(g.call).or_default().push(g.text) {
                        let _ = token_tx.send(StreamEvent::Token {
                            purpose: g.purpose.to_string(),
                            call: g.call,
                            text,
                        });
                    }
                }));
            let observer = |p: Progress<'_>| match p {
                Progress::NodeStarted(node) => send(StreamEvent::NodeStart {
                    node: node.to_string(),
                }),
                Progress::Doing(sentence) => send(StreamEvent::Doing {
                    text: sentence.to_string(),
                }),
                Progress::NodeFinished(e) => send(StreamEvent::NodeEnd {
                    node: e.node.clone(),
                    elapsed_ms: e.elapsed_ms,
                    note: e.note.clone(),
                    next: e.next.clone(),
                    stop: e.stop.as_ref().map(ToString::to_string),
                }),
            };
            let mut trace = s.engine.agent.ask_observed(&tapped, &observer).await?;
            let run_id = finish(&s, &mut trace, queue_ms, Surface::Rest).await?;
            Ok::<_, Error>((run_id, trace))
        })
        .await
        .unwrap_or_else(|_| {
            Err(Error::timeout(format!(
                "the ask took longer than {} s",
                deadline.as_secs()
            )))
        });
        match result {
            Ok((run_id, trace)) => send(StreamEvent::Done {
                run_id,
                trace: Box::new(trace),
            }),
            Err(e) => send(StreamEvent::Error {
                error: e.body().error,
            }),
        }
    });
    let guard = AbortOnDrop(task);
    let stream = futures_stream(rx, guard);
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response())
}

/// The events as an SSE stream that ends after `done` or `error` and owns the run's guard.
fn futures_stream(
    rx: mpsc::UnboundedReceiver<StreamEvent>,
    guard: AbortOnDrop,
) -> impl tokio_stream::Stream<Item = std::result::Result<Event, Infallible>> {
    let rx = tokio_stream::wrappers::UnboundedReceiverStream::new(rx);
    let guard = Arc::new(guard);
    tokio_stream::StreamExt::map(rx, move |e| {
        let _keep = &guard;
        Ok(e.into_sse())
    })
}

// ---------------------------------------------------------------------------------------
// Runs

/// Query of `GET /v1/runs`.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
pub struct RunsQuery {
    /// Only this strategy.
    pub strategy: Option<String>,
    /// Only runs from `cli`, `rest`, `mcp` or `bench`.
    pub surface: Option<Surface>,
    /// At most this many, newest first (default 50, at most 500).
    pub limit: Option<usize>,
    /// Skip this many of the newest.
    pub offset: Option<usize>,
}

/// `GET /v1/runs`'s answer.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunsResponse {
    /// The runs, newest first.
    pub runs: Vec<RunSummary>,
    /// Per-strategy aggregates over every recorded run.
    pub strategies: Vec<StrategyStats>,
}

async fn list_runs(
    State(s): State<AppState>,
    Extension(access): Extension<Access>,
    q: Result<Query<RunsQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<RunsResponse>> {
    let Query(q) = q.map_err(|e| Error::bad_request(e.body_text()))?;
    let limit = q.limit.unwrap_or(50);
    if limit > 500 {
        return Err(Error::bad_request("`limit` is at most 500"));
    }
    let query = RunQuery {
        strategy: q.strategy,
        surface: q.surface,
        limit,
        offset: q.offset.unwrap_or(0),
        readable: access.readable(),
    };
    let runs = s.engine.runs.list(&query).await?;
    let strategies = s.engine.runs.stats().await?;
    Ok(Json(RunsResponse { runs, strategies }))
}

async fn get_run(
    State(s): State<AppState>,
    Extension(access): Extension<Access>,
    Path(id): Path<String>,
) -> Result<Json<RunDetail>> {
    // A run is shown to a key only when it read nothing beyond the key's collections (a
    // run over every collection only to an admin key); otherwise it is not found. The log
    // judges by the collections it records for the run now, which follow renames and
    // deletes, not by the names in the trace.
    match s.engine.runs.get(&id, access.readable().as_deref()).await? {
        Some(run) => Ok(Json(run)),
        None => Err(Error::not_found(format!("no run with id `{id}`"))),
    }
}

// ---------------------------------------------------------------------------------------
// Pages and the OpenAPI document

async fn web_page() -> Html<&'static str> {
    Html(include_str!("web/index.html"))
}

async fn docs_page() -> Html<&'static str> {
    Html(include_str!("web/docs.html"))
}

async fn openapi_json() -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        Body::from(crate::openapi::document().to_string()),
    )
        .into_response()
}
