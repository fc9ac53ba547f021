//! The run log: every answered question (from the CLI, the REST API, MCP or a benchmark)
//! as one row of an SQLite database in the data directory, with the whole [`Trace`] as its
//! provenance snapshot, so runs can be listed, inspected and summarised per strategy.
//!
//! The schema is versioned with SQLite's `user_version`; [`RunLog::open`] applies the
//! migrations a file lacks, in one transaction each, so an old log opens under a new binary
//! and nothing already recorded is lost.

use crate::error::{Error, Result};
use metarag_agent::{StopReason, Trace};
pub use metarag_models::Pricing;
use metarag_pgstore::PgDatabase;
use metarag_pgstore::tokio_postgres::types::ToSql;
use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Schema migrations, in order; migration `i` brings `user_version` from `i` to `i + 1`.
/// Append only: a released migration is never edited.
const MIGRATIONS: &[&str] = &[
    // 1: the runs table.
    "CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        created_ms INTEGER NOT NULL,
        surface TEXT NOT NULL,
        question TEXT NOT NULL,
        strategy TEXT NOT NULL,
        model TEXT NOT NULL,
        answer TEXT NOT NULL,
        short_answer TEXT NOT NULL,
        stop TEXT NOT NULL,
        failed INTEGER NOT NULL,
        rounds INTEGER NOT NULL,
        diagnosis TEXT,
        sources INTEGER NOT NULL,
        wall_ms REAL NOT NULL,
        queue_ms REAL NOT NULL,
        llm_calls INTEGER NOT NULL,
        cached_calls INTEGER NOT NULL,
        prompt_tokens INTEGER NOT NULL,
        completion_tokens INTEGER NOT NULL,
        cost_usd REAL NOT NULL,
        trace TEXT NOT NULL
    );
    CREATE INDEX runs_created ON runs(created_ms);
    CREATE INDEX runs_strategy ON runs(strategy);",
    // 2: whether a run declined to answer (`[agent] abstain`); runs recorded before always
    // answered.
    "ALTER TABLE runs ADD COLUMN abstained INTEGER NOT NULL DEFAULT 0;",
    // 3: the collections a run could read, as a JSON list (NULL: every one, as for every
    // run before), so that a key sees only the runs over collections it can read.
    "ALTER TABLE runs ADD COLUMN collections TEXT;",
];

/// Where a run came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Surface {
    /// `metarag ask`.
    Cli,
    /// The REST API (`/v1/ask`, `/v1/ask/stream`).
    Rest,
    /// An MCP tool call.
    Mcp,
    /// A benchmark run.
    Bench,
}

impl Surface {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Surface::Cli => "cli",
            Surface::Rest => "rest",
            Surface::Mcp => "mcp",
            Surface::Bench => "bench",
        }
    }

    fn parse(s: &str) -> Surface {
        match s {
            "rest" => Surface::Rest,
            "mcp" => Surface::Mcp,
            "bench" => Surface::Bench,
            _ => Surface::Cli,
        }
    }
}

/// One recorded run without its trace: what lists and dashboards show.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunSummary {
    /// The run's id.
    pub id: String,
    /// When it was recorded, milliseconds since the Unix epoch.
    pub created_ms: i64,
    /// Where it came from.
    pub surface: Surface,
    /// The question.
    pub question: String,
    /// The strategy.
    pub strategy: String,
    /// The chat model.
    pub model: String,
    /// The answer.
    pub answer: String,
    /// The short answer.
    pub short_answer: String,
    /// Why the run stopped.
    pub stop: String,
    /// Whether the run failed.
    pub failed: bool,
    /// Whether the run declined to answer (the trace's `abstention` says why).
    #[serde(default)]
    pub abstained: bool,
    /// Writes (answer rounds).
    pub rounds: u32,
    /// The last diagnosis's knowledge category, if the run diagnosed its answer.
    pub diagnosis: Option<String>,
    /// Numbered sources of the answer.
    pub sources: u32,
    /// Wall time of the run, milliseconds (without the queue wait).
    pub wall_ms: f64,
    /// Time spent waiting for a free slot before the run started, milliseconds.
    pub queue_ms: f64,
    /// LLM calls.
    pub llm_calls: u64,
    /// Calls answered from the call cache.
    pub cached_calls: u64,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Cost at the configured prices, US dollars.
    pub cost_usd: f64,
}

/// One recorded run with its provenance snapshot.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunDetail {
    /// The row.
    #[serde(flatten)]
    pub summary: RunSummary,
    /// The whole trace (plan, retrievals, rounds, diagnosis, calls, node timings).
    pub trace: Trace,
}

/// Per-strategy aggregates over recorded runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StrategyStats {
    /// The strategy.
    pub strategy: String,
    /// Runs.
    pub runs: u64,
    /// Failed runs.
    pub failed: u64,
    /// Runs that declined to answer.
    #[serde(default)]
    pub abstained: u64,
    /// Median wall time, milliseconds.
    pub p50_ms: f64,
    /// 95th-percentile wall time, milliseconds.
    pub p95_ms: f64,
    /// Mean LLM calls per run.
    pub mean_calls: f64,
    /// Mean tokens (prompt + completion) per run.
    pub mean_tokens: f64,
    /// Total cost, US dollars.
    pub cost_usd: f64,
}

/// Which runs to list.
#[derive(Debug, Clone, Default)]
pub struct RunQuery {
    /// Only this strategy.
    pub strategy: Option<String>,
    /// Only runs from this surface.
    pub surface: Option<Surface>,
    /// At most this many, newest first (0: 50).
    pub limit: usize,
    /// Skip this many of the newest.
    pub offset: usize,
    /// Only runs that read nothing beyond these collections (a run over every collection
    /// is not among them); `None`: every run.
    pub readable: Option<Vec<metarag_core::CollectionId>>,
}

impl RunQuery {
    /// `readable` as the JSON list the stores compare with.
    fn readable_json(&self) -> Option<String> {
        readable_json(self.readable.as_deref())
    }
}

/// A key's readable collections as the JSON list the stores compare a run's with.
fn readable_json(readable: Option<&[metarag_core::CollectionId]>) -> Option<String> {
    readable.map(|r| {
        serde_json::Value::from(r.iter().map(|c| c.to_string()).collect::<Vec<_>>()).to_string()
    })
}

/// What a run's recorded collections name in place of a deleted collection: not a valid
/// collection name (`:` is not allowed in one), so no key's scope ever reads it, and a
/// collection made again under the old name does not inherit the old one's runs.
fn tombstone(name: &metarag_core::CollectionId) -> String {
    format!("deleted:{name}")
}

/// A run's recorded collections (a JSON list) with `from` renamed to `to`, or replaced by
/// its tombstone when `to` is `None`; `None` when the list does not name `from`.
fn moved_list(
    json: &str,
    from: &metarag_core::CollectionId,
    to: Option<&metarag_core::CollectionId>,
) -> Option<String> {
    let names: Vec<String> = serde_json::from_str(json).ok()?;
    if !names.iter().any(|n| n == from.as_str()) {
        return None;
    }
    let new = to.map_or_else(|| tombstone(from), |t| t.to_string());
    let mut moved: Vec<String> = Vec::with_capacity(names.len());
    for n in names {
        let n = if n == from.as_str() { new.clone() } else { n };
        if !moved.contains(&n) {
            moved.push(n);
        }
    }
    Some(serde_json::Value::from(moved).to_string())
}

/// The run log of one data directory, in SQLite. Cheap to clone; one connection behind a
/// mutex (SQLite serialises writers anyway, and a record is one insert). Synchronous: the
/// benchmark records from its result callback; [`RunLog`] wraps it for async callers.
#[derive(Clone)]
pub struct SqliteRunLog {
    path: PathBuf,
    conn: Arc<Mutex<Connection>>,
}

impl std::fmt::Debug for SqliteRunLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteRunLog")
            .field("path", &self.path)
            .finish()
    }
}

impl SqliteRunLog {
    /// Opens (creating if needed) the log at `path`, applying pending migrations.
    pub fn open(path: &Path) -> Result<SqliteRunLog> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        let db = |e: rusqlite::Error| Error::RunLog {
            at: path.display().to_string(),
            reason: e.to_string(),
        };
        let mut conn = Connection::open(path).map_err(db)?;
        // Several processes (a server and a CLI) may share the file.
        conn.busy_timeout(std::time::Duration::from_secs(10))
            .map_err(db)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(db)?;
        let version: usize = conn
            .pragma_query_value(None, "user_version", |r| r.get::<_, i64>(0))
            .map_err(db)? as usize;
        if version > MIGRATIONS.len() {
            return Err(Error::RunLog {
                at: path.display().to_string(),
                reason: format!(
                    "schema version {version} is newer than this binary knows ({}); upgrade metarag",
                    MIGRATIONS.len()
                ),
            });
        }
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(version) {
            let tx = conn.transaction().map_err(db)?;
            tx.execute_batch(sql).map_err(db)?;
            tx.pragma_update(None, "user_version", (i + 1) as i64)
                .map_err(db)?;
            tx.commit().map_err(db)?;
        }
        Ok(SqliteRunLog {
            path: path.to_path_buf(),
            conn: Arc::new(Mutex::new(conn)),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn err(&self, e: rusqlite::Error) -> Error {
        Error::RunLog {
            at: self.path.display().to_string(),
            reason: e.to_string(),
        }
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        // A panic while holding the lock leaves the connection usable: SQLite rolled back.
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records a finished run; returns its id.
    pub fn record(
        &self,
        trace: &Trace,
        surface: Surface,
        queue_ms: f64,
        pricing: Pricing,
    ) -> Result<String> {
        let row = NewRun::of(
            &self.path.display().to_string(),
            trace,
            surface,
            queue_ms,
            pricing,
        )?;
        self.insert(&row)?;
        Ok(row.summary.id)
    }

    fn insert(&self, row: &NewRun) -> Result<()> {
        let s = &row.summary;
        self.conn()
            .execute(
                "INSERT INTO runs (id, created_ms, surface, question, strategy, model, answer,
                    short_answer, stop, failed, rounds, diagnosis, sources, wall_ms, queue_ms,
                    llm_calls, cached_calls, prompt_tokens, completion_tokens, cost_usd, abstained,
                    trace, collections)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15,
                    ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23)",
                params![
                    s.id,
                    s.created_ms,
                    s.surface.as_str(),
                    s.question,
                    s.strategy,
                    s.model,
                    s.answer,
                    s.short_answer,
                    s.stop,
                    s.failed,
                    s.rounds as i64,
                    s.diagnosis,
                    s.sources as i64,
                    s.wall_ms,
                    s.queue_ms,
                    s.llm_calls as i64,
                    s.cached_calls as i64,
                    s.prompt_tokens as i64,
                    s.completion_tokens as i64,
                    s.cost_usd,
                    s.abstained,
                    row.trace,
                    row.collections,
                ],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Runs, newest first.
    pub fn list(&self, query: &RunQuery) -> Result<Vec<RunSummary>> {
        let limit = if query.limit == 0 { 50 } else { query.limit };
        let conn = self.conn();
        let mut stmt = conn
            .prepare(&format!(
                "SELECT {SUMMARY_COLUMNS} FROM runs
                 WHERE (?1 IS NULL OR strategy = ?1) AND (?2 IS NULL OR surface = ?2)
                   AND (?5 IS NULL OR (collections IS NOT NULL AND NOT EXISTS (
                        SELECT 1 FROM json_each(collections)
                        WHERE value NOT IN (SELECT value FROM json_each(?5)))))
                 ORDER BY created_ms DESC, id DESC LIMIT ?3 OFFSET ?4"
            ))
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(
                params![
                    query.strategy,
                    query.surface.map(Surface::as_str),
                    limit as i64,
                    query.offset as i64,
                    query.readable_json()
                ],
                summary_row,
            )
            .map_err(|e| self.err(e))?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(|e| self.err(e))
    }

    /// One run with its trace, or `None` (also when `readable` is given and the run read
    /// a collection beyond it, or every collection).
    pub fn get(
        &self,
        id: &str,
        readable: Option<&[metarag_core::CollectionId]>,
    ) -> Result<Option<RunDetail>> {
        let conn = self.conn();
        let row = conn
            .query_row(
                &format!(
                    "SELECT {SUMMARY_COLUMNS}, trace FROM runs WHERE id = ?1
                       AND (?2 IS NULL OR (collections IS NOT NULL AND NOT EXISTS (
                            SELECT 1 FROM json_each(collections)
                            WHERE value NOT IN (SELECT value FROM json_each(?2)))))"
                ),
                params![id, readable_json(readable)],
                |r| Ok((summary_row(r)?, r.get::<_, String>(21)?)),
            )
            .optional()
            .map_err(|e| self.err(e))?;
        let Some((summary, json)) = row else {
            return Ok(None);
        };
        let trace = serde_json::from_str(&json).map_err(|e| Error::RunLog {
            at: self.path.display().to_string(),
            reason: format!("run {id}: the stored trace does not parse: {e}"),
        })?;
        Ok(Some(RunDetail { summary, trace }))
    }

    /// Renames collection `from` to `to` in every run's recorded collections, or (`to`
    /// `None`, a deleted collection) replaces it with a name no key can read, so runs
    /// stay with the collection they read and not with its name; returns the runs changed.
    pub fn move_collection(
        &self,
        from: &metarag_core::CollectionId,
        to: Option<&metarag_core::CollectionId>,
    ) -> Result<u64> {
        let mut conn = self.conn();
        let tx = conn.transaction().map_err(|e| self.err(e))?;
        let rows: Vec<(String, String)> = {
            let mut stmt = tx
                .prepare(
                    "SELECT id, collections FROM runs WHERE collections IS NOT NULL
                       AND EXISTS (SELECT 1 FROM json_each(collections) WHERE value = ?1)",
                )
                .map_err(|e| self.err(e))?;
            stmt.query_map(params![from.as_str()], |r| Ok((r.get(0)?, r.get(1)?)))
                .map_err(|e| self.err(e))?
                .collect::<rusqlite::Result<_>>()
                .map_err(|e| self.err(e))?
        };
        let mut changed = 0;
        for (id, json) in rows {
            if let Some(moved) = moved_list(&json, from, to) {
                tx.execute(
                    "UPDATE runs SET collections = ?2 WHERE id = ?1",
                    params![id, moved],
                )
                .map_err(|e| self.err(e))?;
                changed += 1;
            }
        }
        tx.commit().map_err(|e| self.err(e))?;
        Ok(changed)
    }

    /// Per-strategy aggregates over every recorded run.
    pub fn stats(&self) -> Result<Vec<StrategyStats>> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare(
                "SELECT strategy, failed, wall_ms, llm_calls, prompt_tokens + completion_tokens,
                    cost_usd, abstained FROM runs ORDER BY strategy",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, bool>(1)?,
                    r.get::<_, f64>(2)?,
                    r.get::<_, i64>(3)?,
                    r.get::<_, i64>(4)?,
                    r.get::<_, f64>(5)?,
                    r.get::<_, bool>(6)?,
                ))
            })
            .map_err(|e| self.err(e))?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(|e| self.err(e))?;
        Ok(aggregate(rows))
    }
}

/// The run log in the Postgres database that several `metarag serve` processes share
/// (tables kept by `metarag-pgstore`'s migrations), so a run recorded by one server is
/// listed by every other.
#[derive(Clone, Debug)]
pub struct PgRunLog {
    db: PgDatabase,
}

impl PgRunLog {
    /// The run log of `db`.
    pub fn new(db: PgDatabase) -> Self {
        PgRunLog { db }
    }

    fn err(&self, e: impl std::fmt::Display) -> Error {
        Error::RunLog {
            at: self.db.url().to_string(),
            reason: e.to_string(),
        }
    }

    async fn insert(&self, row: &NewRun) -> Result<()> {
        let s = &row.summary;
        let client = self.db.client().await.map_err(|e| self.err(e))?;
        client
            .execute(
                "INSERT INTO runs (id, created_ms, surface, question, strategy, model, answer,
                    short_answer, stop, failed, rounds, diagnosis, sources, wall_ms, queue_ms,
                    llm_calls, cached_calls, prompt_tokens, completion_tokens, cost_usd, abstained,
                    trace, collections)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15,
                    $16, $17, $18, $19, $20, $21, $22, $23::text::jsonb)",
                &[
                    &s.id as &(dyn ToSql + Sync),
                    &s.created_ms,
                    &s.surface.as_str(),
                    &s.question,
                    &s.strategy,
                    &s.model,
                    &s.answer,
                    &s.short_answer,
                    &s.stop,
                    &s.failed,
                    &(s.rounds as i32),
                    &s.diagnosis,
                    &(s.sources as i32),
                    &s.wall_ms,
                    &s.queue_ms,
                    &(s.llm_calls as i64),
                    &(s.cached_calls as i64),
                    &(s.prompt_tokens as i64),
                    &(s.completion_tokens as i64),
                    &s.cost_usd,
                    &s.abstained,
                    &row.trace,
                    &row.collections,
                ],
            )
            .await
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    async fn list(&self, query: &RunQuery) -> Result<Vec<RunSummary>> {
        let limit = if query.limit == 0 { 50 } else { query.limit };
        let client = self.db.client().await.map_err(|e| self.err(e))?;
        let rows = client
            .query(
                &format!(
                    "SELECT {SUMMARY_COLUMNS} FROM runs
                     WHERE ($1::text IS NULL OR strategy = $1) AND ($2::text IS NULL OR surface = $2)
                       AND ($5::text IS NULL OR (collections IS NOT NULL AND $5::text::jsonb @> collections))
                     ORDER BY created_ms DESC, id DESC LIMIT $3 OFFSET $4"
                ),
                &[
                    &query.strategy as &(dyn ToSql + Sync),
                    &query.surface.map(Surface::as_str),
                    &(limit as i64),
                    &(query.offset as i64),
                    &query.readable_json(),
                ],
            )
            .await
            .map_err(|e| self.err(e))?;
        Ok(rows.iter().map(pg_summary_row).collect())
    }

    async fn get(
        &self,
        id: &str,
        readable: Option<&[metarag_core::CollectionId]>,
    ) -> Result<Option<RunDetail>> {
        let client = self.db.client().await.map_err(|e| self.err(e))?;
        let row = client
            .query_opt(
                &format!(
                    "SELECT {SUMMARY_COLUMNS}, trace FROM runs WHERE id = $1
                       AND ($2::text IS NULL
                            OR (collections IS NOT NULL AND $2::text::jsonb @> collections))"
                ),
                &[&id as &(dyn ToSql + Sync), &readable_json(readable)],
            )
            .await
            .map_err(|e| self.err(e))?;
        let Some(row) = row else {
            return Ok(None);
        };
        let trace = serde_json::from_str(row.get::<_, &str>(21))
            .map_err(|e| self.err(format!("run {id}: the stored trace does not parse: {e}")))?;
        Ok(Some(RunDetail {
            summary: pg_summary_row(&row),
            trace,
        }))
    }

    async fn move_collection(
        &self,
        from: &metarag_core::CollectionId,
        to: Option<&metarag_core::CollectionId>,
    ) -> Result<u64> {
        let mut client = self.db.client().await.map_err(|e| self.err(e))?;
        let tx = client.transaction().await.map_err(|e| self.err(e))?;
        let rows = tx
            .query(
                "SELECT id, collections::text FROM runs
                 WHERE collections @> jsonb_build_array($1::text) FOR UPDATE",
                &[&from.as_str()],
            )
            .await
            .map_err(|e| self.err(e))?;
        let mut changed = 0;
        for row in rows {
            let (id, json): (String, String) = (row.get(0), row.get(1));
            if let Some(moved) = moved_list(&json, from, to) {
                tx.execute(
                    "UPDATE runs SET collections = $2::text::jsonb WHERE id = $1",
                    &[&id, &moved],
                )
                .await
                .map_err(|e| self.err(e))?;
                changed += 1;
            }
        }
        tx.commit().await.map_err(|e| self.err(e))?;
        Ok(changed)
    }

    async fn stats(&self) -> Result<Vec<StrategyStats>> {
        let client = self.db.client().await.map_err(|e| self.err(e))?;
        let rows = client
            .query(
                "SELECT strategy, failed, wall_ms, llm_calls, prompt_tokens + completion_tokens,
                    cost_usd, abstained FROM runs ORDER BY strategy",
                &[],
            )
            .await
            .map_err(|e| self.err(e))?;
        Ok(aggregate(
            rows.iter()
                .map(|r| {
                    (
                        r.get(0),
                        r.get(1),
                        r.get(2),
                        r.get(3),
                        r.get(4),
                        r.get(5),
                        r.get(6),
                    )
                })
                .collect(),
        ))
    }
}

fn pg_summary_row(r: &metarag_pgstore::tokio_postgres::Row) -> RunSummary {
    RunSummary {
        id: r.get(0),
        created_ms: r.get(1),
        surface: Surface::parse(r.get(2)),
        question: r.get(3),
        strategy: r.get(4),
        model: r.get(5),
        answer: r.get(6),
        short_answer: r.get(7),
        stop: r.get(8),
        failed: r.get(9),
        rounds: r.get::<_, i32>(10) as u32,
        diagnosis: r.get(11),
        sources: r.get::<_, i32>(12) as u32,
        wall_ms: r.get(13),
        queue_ms: r.get(14),
        llm_calls: r.get::<_, i64>(15) as u64,
        cached_calls: r.get::<_, i64>(16) as u64,
        prompt_tokens: r.get::<_, i64>(17) as u64,
        completion_tokens: r.get::<_, i64>(18) as u64,
        cost_usd: r.get(19),
        abstained: r.get(20),
    }
}

/// Where runs are recorded: the data directory's SQLite file, or the Postgres database a
/// team's servers share (`store.backend = "postgres"`). Cheap to clone.
#[derive(Clone, Debug)]
pub enum RunLog {
    /// `runs.sqlite` in the data directory.
    Sqlite(SqliteRunLog),
    /// The `runs` table of a shared Postgres database.
    Postgres(PgRunLog),
}

impl RunLog {
    /// The SQLite log at `path` (created if needed, migrations applied).
    pub fn open(path: &Path) -> Result<RunLog> {
        Ok(RunLog::Sqlite(SqliteRunLog::open(path)?))
    }

    /// The log in a Postgres database (its schema is migrated when `db` connects).
    pub fn postgres(db: PgDatabase) -> RunLog {
        RunLog::Postgres(PgRunLog::new(db))
    }

    /// The file or URL it writes to, for messages.
    pub fn location(&self) -> String {
        match self {
            RunLog::Sqlite(l) => l.path().display().to_string(),
            RunLog::Postgres(l) => l.db.url().to_string(),
        }
    }

    /// Records a finished run; returns its id.
    pub async fn record(
        &self,
        trace: &Trace,
        surface: Surface,
        queue_ms: f64,
        pricing: Pricing,
    ) -> Result<String> {
        let row = NewRun::of(&self.location(), trace, surface, queue_ms, pricing)?;
        match self {
            RunLog::Sqlite(l) => {
                let l = l.clone();
                // SQLite may wait on another process's write lock: off the async workers.
                blocking(move || l.insert(&row).map(|()| row.summary.id)).await
            }
            RunLog::Postgres(l) => {
                l.insert(&row).await?;
                Ok(row.summary.id)
            }
        }
    }

    /// Runs, newest first.
    pub async fn list(&self, query: &RunQuery) -> Result<Vec<RunSummary>> {
        match self {
            RunLog::Sqlite(l) => {
                let (l, query) = (l.clone(), query.clone());
                blocking(move || l.list(&query)).await
            }
            RunLog::Postgres(l) => l.list(query).await,
        }
    }

    /// One run with its trace, or `None`. With `readable` (a scoped key's collections)
    /// only a run that read nothing beyond them is found, by the collections the log
    /// records for it now (renames and deletes move them), not the trace's own.
    pub async fn get(
        &self,
        id: &str,
        readable: Option<&[metarag_core::CollectionId]>,
    ) -> Result<Option<RunDetail>> {
        match self {
            RunLog::Sqlite(l) => {
                let (l, id) = (l.clone(), id.to_string());
                let readable = readable.map(<[_]>::to_vec);
                blocking(move || l.get(&id, readable.as_deref())).await
            }
            RunLog::Postgres(l) => l.get(id, readable).await,
        }
    }

    /// Renames collection `from` to `to` in the collections every run is recorded with,
    /// or with `to` `None` (the collection was deleted) replaces it with a name no key
    /// can read: a run's readers follow the collection, not its name. Returns how many
    /// runs changed.
    pub async fn move_collection(
        &self,
        from: &metarag_core::CollectionId,
        to: Option<&metarag_core::CollectionId>,
    ) -> Result<u64> {
        match self {
            RunLog::Sqlite(l) => {
                let (l, from, to) = (l.clone(), from.clone(), to.cloned());
                blocking(move || l.move_collection(&from, to.as_ref())).await
            }
            RunLog::Postgres(l) => l.move_collection(from, to).await,
        }
    }

    /// Per-strategy aggregates over every recorded run.
    pub async fn stats(&self) -> Result<Vec<StrategyStats>> {
        match self {
            RunLog::Sqlite(l) => {
                let l = l.clone();
                blocking(move || l.stats()).await
            }
            RunLog::Postgres(l) => l.stats().await,
        }
    }
}

/// Runs a SQLite call on the blocking pool.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::RunLog {
            at: "run log".into(),
            reason: format!("the run log task failed: {e}"),
        })?
}

/// One run's row, computed once for either backend.
struct NewRun {
    summary: RunSummary,
    trace: String,
    /// The collections the run could read, as a JSON list; `None`: every one.
    collections: Option<String>,
}

impl NewRun {
    /// The row of `trace` for the log at `at` (named in the error).
    fn of(
        at: &str,
        trace: &Trace,
        surface: Surface,
        queue_ms: f64,
        pricing: Pricing,
    ) -> Result<NewRun> {
        let created_ms = now_ms();
        let json = serde_json::to_string(trace).map_err(|e| Error::RunLog {
            at: at.to_string(),
            reason: format!("serialising the trace: {e}"),
        })?;
        let u = &trace.usage;
        let diagnosis = trace
            .rounds
            .iter()
            .rev()
            .find_map(|r| r.diagnosis.as_ref())
            .map(|d| format!("{:?}", d.category));
        Ok(NewRun {
            summary: RunSummary {
                id: run_id(created_ms, &trace.question, &trace.strategy),
                created_ms,
                surface,
                question: trace.question.clone(),
                strategy: trace.strategy.clone(),
                model: trace.model.clone(),
                answer: trace.answer.clone(),
                short_answer: trace.short_answer.clone(),
                stop: trace.stop.to_string(),
                failed: matches!(trace.stop, StopReason::Failed(_)),
                abstained: trace.abstained,
                rounds: trace.rounds.len() as u32,
                diagnosis,
                sources: trace.sources.len() as u32,
                wall_ms: trace.graph.wall_ms,
                queue_ms,
                llm_calls: u.llm_calls,
                cached_calls: u.cached_calls,
                prompt_tokens: u.prompt_tokens,
                completion_tokens: u.completion_tokens,
                cost_usd: pricing.cost(u.prompt_tokens, u.completion_tokens),
            },
            trace: json,
            collections: (!trace.scope.collections.is_empty()).then(|| {
                serde_json::Value::from(
                    trace
                        .scope
                        .collections
                        .iter()
                        .map(|c| c.to_string())
                        .collect::<Vec<_>>(),
                )
                .to_string()
            }),
        })
    }
}

/// One run as the statistics read it: strategy, failed, wall ms, calls, tokens, cost,
/// abstained.
type StatsRow = (String, bool, f64, i64, i64, f64, bool);

/// Per-strategy aggregates from rows ordered by strategy.
fn aggregate(rows: Vec<StatsRow>) -> Vec<StrategyStats> {
    let mut out: Vec<StrategyStats> = Vec::new();
    let mut times: Vec<f64> = Vec::new();
    for (strategy, failed, ms, calls, tokens, cost, abstained) in rows {
        if out.last().is_none_or(|s| s.strategy != strategy) {
            finish(out.last_mut(), &mut times);
            out.push(StrategyStats {
                strategy,
                runs: 0,
                failed: 0,
                abstained: 0,
                p50_ms: 0.0,
                p95_ms: 0.0,
                mean_calls: 0.0,
                mean_tokens: 0.0,
                cost_usd: 0.0,
            });
        }
        let s = out.last_mut().expect("pushed above");
        s.runs += 1;
        s.failed += u64::from(failed);
        s.abstained += u64::from(abstained);
        s.mean_calls += calls as f64;
        s.mean_tokens += tokens as f64;
        s.cost_usd += cost;
        times.push(ms);
    }
    finish(out.last_mut(), &mut times);
    out
}

/// Turns a strategy's sums into means and its collected times into percentiles.
fn finish(s: Option<&mut StrategyStats>, times: &mut Vec<f64>) {
    if let Some(s) = s {
        let n = s.runs.max(1) as f64;
        s.mean_calls /= n;
        s.mean_tokens /= n;
        s.p50_ms = crate::percentile(times, 50.0);
        s.p95_ms = crate::percentile(times, 95.0);
    }
    times.clear();
}

const SUMMARY_COLUMNS: &str = "id, created_ms, surface, question, strategy, model, answer, \
    short_answer, stop, failed, rounds, diagnosis, sources, wall_ms, queue_ms, llm_calls, \
    cached_calls, prompt_tokens, completion_tokens, cost_usd, abstained";

fn summary_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RunSummary> {
    Ok(RunSummary {
        id: r.get(0)?,
        created_ms: r.get(1)?,
        surface: Surface::parse(&r.get::<_, String>(2)?),
        question: r.get(3)?,
        strategy: r.get(4)?,
        model: r.get(5)?,
        answer: r.get(6)?,
        short_answer: r.get(7)?,
        stop: r.get(8)?,
        failed: r.get(9)?,
        rounds: r.get(10)?,
        diagnosis: r.get(11)?,
        sources: r.get(12)?,
        wall_ms: r.get(13)?,
        queue_ms: r.get(14)?,
        llm_calls: r.get::<_, i64>(15)? as u64,
        cached_calls: r.get::<_, i64>(16)? as u64,
        prompt_tokens: r.get::<_, i64>(17)? as u64,
        completion_tokens: r.get::<_, i64>(18)? as u64,
        cost_usd: r.get(19)?,
        abstained: r.get(20)?,
    })
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// A short unique id: time, question and strategy hashed with a process-wide counter (two
/// identical asks in the same millisecond still differ).
fn run_id(created_ms: i64, question: &str, strategy: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut h = blake3::Hasher::new();
    h.update(&created_ms.to_le_bytes());
    h.update(&n.to_le_bytes());
    h.update(&std::process::id().to_le_bytes());
    h.update(question.as_bytes());
    h.update(strategy.as_bytes());
    h.finalize().to_hex()[..16].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_apply_once_and_a_newer_schema_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runs.db");
        SqliteRunLog::open(&path).unwrap();
        // Reopening applies nothing and keeps the version.
        let log = SqliteRunLog::open(&path).unwrap();
        assert_eq!(log.list(&RunQuery::default()).unwrap().len(), 0);
        let conn = Connection::open(&path).unwrap();
        conn.pragma_update(None, "user_version", 99).unwrap();
        drop(conn);
        let err = SqliteRunLog::open(&path).unwrap_err().to_string();
        assert!(err.contains("newer than this binary"), "{err}");
    }
}
