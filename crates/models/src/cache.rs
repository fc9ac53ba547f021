//! The LLM call cache: every call keyed by a hash of what determines its result (model id,
//! messages, sampling parameters, output schema), its completion stored in SQLite.
//!
//! A benchmark rerun, or the replay of a trace, then costs nothing and gives the same
//! answers offline. Only deterministic calls are worth caching, but the key includes the
//! temperature and seed, so a sampled call is cached as the draw it was.

use crate::{Error, Result};
use metarag_core::{ChatRequest, Completion, Llm, TokenSink};
use rusqlite::{OptionalExtension, params};
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Bumped when the key layout changes, so old entries are never mistaken for new ones.
const KEY_VERSION: u32 = 1;

/// The cache key of a call.
pub fn cache_key(model_id: &str, request: &ChatRequest) -> String {
    #[derive(Serialize)]
    struct Key<'a> {
        v: u32,
        model: &'a str,
        request: &'a ChatRequest,
    }
    let json = serde_json::to_vec(&Key {
        v: KEY_VERSION,
        model: model_id,
        request,
    })
    .expect("requests serialize");
    let digest = Sha256::digest(&json);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// What the cache holds.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CacheStats {
    /// The database file.
    pub path: PathBuf,
    /// Stored completions.
    pub entries: u64,
    /// Times a stored completion was served.
    pub hits: u64,
    /// Size of the database file in bytes.
    pub bytes: u64,
    /// Entries per model id.
    pub by_model: Vec<(String, u64)>,
}

/// The on-disk store of completions (one SQLite file, safe to share between threads and
/// between processes).
#[derive(Debug)]
pub struct CallCache {
    path: PathBuf,
    conn: Mutex<rusqlite::Connection>,
}

impl CallCache {
    /// Opens (creating if needed) the cache at `path`.
    pub fn open(path: impl Into<PathBuf>) -> Result<Self> {
        let path = path.into();
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
        }
        let db = |e: rusqlite::Error| Error::Cache {
            path: path.clone(),
            reason: e.to_string(),
        };
        let conn = rusqlite::Connection::open(&path).map_err(db)?;
        conn.busy_timeout(std::time::Duration::from_secs(10))
            .map_err(db)?;
        conn.execute_batch(
            "PRAGMA journal_mode=WAL;
             PRAGMA synchronous=NORMAL;
             CREATE TABLE IF NOT EXISTS calls (
                 key TEXT PRIMARY KEY,
                 model TEXT NOT NULL,
                 request TEXT NOT NULL,
                 completion TEXT NOT NULL,
                 created_at INTEGER NOT NULL,
                 hits INTEGER NOT NULL DEFAULT 0
             );",
        )
        .map_err(db)?;
        Ok(CallCache {
            path,
            conn: Mutex::new(conn),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn err(&self, e: rusqlite::Error) -> Error {
        Error::Cache {
            path: self.path.clone(),
            reason: e.to_string(),
        }
    }

    /// The stored completion for `key`, counting the hit.
    pub fn get(&self, key: &str) -> Result<Option<Completion>> {
        let conn = self.conn.lock().expect("cache lock");
        let row: Option<String> = conn
            .query_row(
                "SELECT completion FROM calls WHERE key = ?1",
                params![key],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.err(e))?;
        let Some(json) = row else {
            return Ok(None);
        };
        conn.execute(
            "UPDATE calls SET hits = hits + 1 WHERE key = ?1",
            params![key],
        )
        .map_err(|e| self.err(e))?;
        match serde_json::from_str(&json) {
            Ok(c) => Ok(Some(c)),
            Err(e) => {
                // An entry written by an incompatible version: treat as a miss.
                tracing::warn!(key, error = %e, "unreadable cache entry ignored");
                Ok(None)
            }
        }
    }

    /// Stores a completion.
    pub fn put(
        &self,
        key: &str,
        model_id: &str,
        request: &ChatRequest,
        completion: &Completion,
    ) -> Result<()> {
        let request = serde_json::to_string(request).expect("requests serialize");
        let completion = serde_json::to_string(completion).expect("completions serialize");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        let conn = self.conn.lock().expect("cache lock");
        conn.execute(
            "INSERT OR REPLACE INTO calls (key, model, request, completion, created_at, hits)
             VALUES (?1, ?2, ?3, ?4, ?5, 0)",
            params![key, model_id, request, completion, now],
        )
        .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Entry counts and size.
    pub fn stats(&self) -> Result<CacheStats> {
        let conn = self.conn.lock().expect("cache lock");
        let (entries, hits): (i64, i64) = conn
            .query_row(
                "SELECT COUNT(*), COALESCE(SUM(hits), 0) FROM calls",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(|e| self.err(e))?;
        let mut stmt = conn
            .prepare("SELECT model, COUNT(*) FROM calls GROUP BY model ORDER BY model")
            .map_err(|e| self.err(e))?;
        let by_model = stmt
            .query_map([], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as u64))
            })
            .map_err(|e| self.err(e))?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(|e| self.err(e))?;
        let bytes = std::fs::metadata(&self.path).map_or(0, |m| m.len());
        Ok(CacheStats {
            path: self.path.clone(),
            entries: entries as u64,
            hits: hits as u64,
            bytes,
            by_model,
        })
    }

    /// Removes every entry (or those of one model); returns how many were removed.
    pub fn clear(&self, model: Option<&str>) -> Result<u64> {
        let conn = self.conn.lock().expect("cache lock");
        let n = match model {
            Some(m) => conn.execute("DELETE FROM calls WHERE model = ?1", params![m]),
            None => conn.execute("DELETE FROM calls", []),
        }
        .map_err(|e| self.err(e))?;
        conn.execute_batch("VACUUM").map_err(|e| self.err(e))?;
        Ok(n as u64)
    }
}

/// An [`Llm`] that answers from the [`CallCache`] when it can and stores what the wrapped
/// model produces. Failed calls are never stored.
#[derive(Debug, Clone)]
pub struct CachedLlm<L> {
    inner: L,
    cache: Arc<CallCache>,
}

impl<L: Llm> CachedLlm<L> {
    /// Wraps `inner`.
    pub fn new(inner: L, cache: Arc<CallCache>) -> Self {
        CachedLlm { inner, cache }
    }

    /// The wrapped model.
    pub fn inner(&self) -> &L {
        &self.inner
    }

    fn lookup(&self, key: &str) -> Option<Completion> {
        let started = Instant::now();
        match self.cache.get(key) {
            Ok(Some(mut c)) => {
                c.cached = true;
                c.usage.original_ms = Some(c.usage.original_ms.unwrap_or(c.usage.compute_ms()));
                c.usage.wall_ms = started.elapsed().as_secs_f64() * 1e3;
                Some(c)
            }
            Ok(None) => None,
            Err(e) => {
                // A broken cache must not stop the run: call the model instead.
                tracing::warn!(error = %e, "call cache read failed");
                None
            }
        }
    }

    fn store(&self, key: &str, request: &ChatRequest, completion: &Completion) {
        if let Err(e) = self
            .cache
            .put(key, self.inner.model_id(), request, completion)
        {
            tracing::warn!(error = %e, "call cache write failed");
        }
    }
}

impl<L: Llm> Llm for CachedLlm<L> {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }

    fn capabilities(&self) -> metarag_core::Capabilities {
        self.inner.capabilities()
    }

    async fn chat(&self, request: &ChatRequest) -> metarag_core::Result<Completion> {
        let key = cache_key(self.inner.model_id(), request);
        if let Some(hit) = self.lookup(&key) {
            return Ok(hit);
        }
        let completion = self.inner.chat(request).await?;
        self.store(&key, request, &completion);
        Ok(completion)
    }

    async fn chat_stream(
        &self,
        request: &ChatRequest,
        sink: TokenSink<'_>,
    ) -> metarag_core::Result<Completion> {
        let key = cache_key(self.inner.model_id(), request);
        if let Some(hit) = self.lookup(&key) {
            sink(&hit.text);
            return Ok(hit);
        }
        let completion = self.inner.chat_stream(request, sink).await?;
        self.store(&key, request, &completion);
        Ok(completion)
    }

    fn forget_context(&self) -> impl std::future::Future<Output = ()> + Send {
        self.inner.forget_context()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use metarag_core::Message;

    #[test]
    fn key_depends_on_everything_that_changes_the_answer() {
        let base = ChatRequest::new(vec![Message::user("Who?")]);
        let k = cache_key("m", &base);
        assert_eq!(k, cache_key("m", &base.clone()));
        assert_ne!(k, cache_key("other", &base));
        assert_ne!(k, cache_key("m", &base.clone().temperature(0.5)));
        assert_ne!(k, cache_key("m", &base.clone().max_tokens(7)));
        assert_ne!(
            k,
            cache_key("m", &ChatRequest::new(vec![Message::user("Who!")]))
        );
        #[derive(schemars::JsonSchema)]
        #[allow(dead_code)]
        struct S {
            x: u8,
        }
        assert_ne!(k, cache_key("m", &base.clone().json_schema::<S>()));
        // The collections a request is held to key it too; none leaves the key as it was
        // before collections existed.
        let json = serde_json::to_string(&base).unwrap();
        assert!(!json.contains("collections"), "{json}");
        let mut hr = base.clone();
        hr.collections = vec![metarag_core::CollectionId::new("hr").unwrap()];
        assert_ne!(k, cache_key("m", &hr));
    }

    /// A completion made for a request held to one collection (its prompt holds that
    /// collection's passages) is never served to the same prompt held to another: the
    /// model is asked again.
    #[tokio::test]
    async fn a_completion_is_never_served_across_collections() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Arc::new(CallCache::open(dir.path().join("calls.sqlite")).unwrap());
        let inner = Arc::new(metarag_testkit::ScriptedLlm::new().on(&["salaries"], "42"));
        let llm = CachedLlm::new(inner.clone(), cache);
        let held = |c: &str| {
            let mut r = ChatRequest::new(vec![Message::user("[1] HR: salaries are 42. Q?")]);
            r.collections = vec![metarag_core::CollectionId::new(c).unwrap()];
            r
        };
        assert!(!llm.chat(&held("hr")).await.unwrap().cached);
        assert!(llm.chat(&held("hr")).await.unwrap().cached);
        assert!(!llm.chat(&held("ops")).await.unwrap().cached);
        assert_eq!(inner.calls().len(), 2);
    }
}
