//! API keys: created by `metarag keys add`, kept as SHA-256 hashes only (the key itself is
//! shown once) in the data directory's `keys.json` or, when the store is Postgres, in the
//! database every server shares; checked on every `/v1` request as `Authorization: Bearer
//! KEY`. The file is re-read when it changes, the table after a second or on an unknown
//! key, so a key added or removed while the server runs takes effect at once (or, for a
//! removal seen by another server, within a second).

use crate::error::{Error, Result};
use metarag_core::{CollectionId, Filter};
use metarag_pgstore::PgDatabase;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

/// One key as stored: never the key itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyRecord {
    /// A short public id (the key's first characters), for listing and removal.
    pub id: String,
    /// What the key is for.
    pub name: String,
    /// SHA-256 of the key, hex.
    pub sha256: String,
    /// When it was created, milliseconds since the Unix epoch.
    pub created_ms: i64,
    /// The collections it is limited to; `None`: an admin key, which reads and writes
    /// every collection and manages keys and collections (keys made before scopes existed
    /// are admin keys).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<KeyScope>,
}

/// A key's collections.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct KeyScope {
    /// Collections it may read: search, ask, list documents, read runs.
    #[serde(default)]
    pub read: Vec<CollectionId>,
    /// Collections it may write (ingest, remove documents); writing one implies reading it.
    #[serde(default)]
    pub write: Vec<CollectionId>,
}

/// What a request may reach, as the key it came with allows: every collection (a server
/// without keys, or an admin key), or a key's collections. Put into each request's
/// extensions by the server's key check; handlers and MCP tools read it from there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    /// Every collection, and managing keys and collections.
    All,
    /// Only these collections.
    Scoped {
        /// The key's id.
        key: String,
        /// Its collections.
        scope: KeyScope,
    },
}

impl Access {
    /// Whether it manages keys and collections.
    pub fn is_admin(&self) -> bool {
        matches!(self, Access::All)
    }

    /// Whether it may read `collection`.
    pub fn can_read(&self, collection: &CollectionId) -> bool {
        match self {
            Access::All => true,
            Access::Scoped { scope, .. } => {
                scope.read.contains(collection) || scope.write.contains(collection)
            }
        }
    }

    /// Whether it may write `collection`.
    pub fn can_write(&self, collection: &CollectionId) -> bool {
        match self {
            Access::All => true,
            Access::Scoped { scope, .. } => scope.write.contains(collection),
        }
    }

    /// The collections it may read; `None`: every one.
    pub fn readable(&self) -> Option<Vec<CollectionId>> {
        match self {
            Access::All => None,
            Access::Scoped { scope, .. } => {
                let mut all: Vec<CollectionId> =
                    scope.read.iter().chain(&scope.write).cloned().collect();
                all.sort();
                all.dedup();
                Some(all)
            }
        }
    }

    /// `filter` held to what this access may read: a collection asked for that it may not
    /// read is refused by name (403), and a filter naming none is limited to the key's
    /// collections, so that "every collection" never means more than the key's.
    pub fn narrow(&self, mut filter: Filter) -> Result<Filter> {
        let Some(readable) = self.readable() else {
            return Ok(filter);
        };
        if let Some(c) = filter.collections.iter().find(|c| !readable.contains(c)) {
            return Err(Error::forbidden(format!(
                "this key may not read collection `{c}`"
            )));
        }
        if filter.collections.is_empty() {
            if readable.is_empty() {
                return Err(Error::forbidden("this key may read no collection"));
            }
            filter.collections = readable;
        }
        Ok(filter)
    }

    /// A 403 unless it may write `collection`.
    pub fn check_write(&self, collection: &CollectionId) -> Result<()> {
        if self.can_write(collection) {
            Ok(())
        } else {
            Err(Error::forbidden(format!(
                "this key may not write collection `{collection}`"
            )))
        }
    }

    /// A 403 unless it is an admin's.
    pub fn check_admin(&self, what: &str) -> Result<()> {
        if self.is_admin() {
            Ok(())
        } else {
            Err(Error::forbidden(format!(
                "{what} needs an admin key (`metarag keys add NAME` without --read/--write)"
            )))
        }
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct KeyFile {
    keys: Vec<KeyRecord>,
}

/// Where keys are kept: the data directory's key file, or the Postgres database a team's
/// servers share (`store.backend = "postgres"`), so a key made on one machine opens every
/// server.
#[derive(Debug, Clone)]
pub enum KeyStore {
    /// `keys.json` in the data directory (it need not exist yet).
    File(PathBuf),
    /// The `api_keys` table of a shared Postgres database.
    Postgres(PgDatabase),
}

impl KeyStore {
    /// The key file at `path` (it need not exist yet).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        KeyStore::File(path.into())
    }

    /// The keys of a Postgres database (its schema is migrated when `db` connects).
    pub fn postgres(db: PgDatabase) -> Self {
        KeyStore::Postgres(db)
    }

    /// The file or URL, for messages.
    pub fn location(&self) -> String {
        match self {
            KeyStore::File(path) => path.display().to_string(),
            KeyStore::Postgres(db) => db.url().to_string(),
        }
    }

    /// Every stored key (none if the file does not exist), oldest first.
    pub async fn list(&self) -> Result<Vec<KeyRecord>> {
        match self {
            KeyStore::File(path) => Ok(read_file(path)?.keys),
            KeyStore::Postgres(db) => {
                let client = db.client().await.map_err(pg_error)?;
                let rows = client
                    .query(
                        "SELECT id, name, sha256, created_ms, scope FROM api_keys ORDER BY created_ms, id",
                        &[],
                    )
                    .await
                    .map_err(pg_error)?;
                rows.iter()
                    .map(|r| {
                        let scope = r
                            .get::<_, Option<serde_json::Value>>(4)
                            .map(serde_json::from_value)
                            .transpose()
                            .map_err(|e| pg_error(format!("key scope: {e}")))?;
                        Ok(KeyRecord {
                            id: r.get(0),
                            name: r.get(1),
                            sha256: r.get(2),
                            created_ms: r.get(3),
                            scope,
                        })
                    })
                    .collect()
            }
        }
    }

    /// Creates a key named `name`, limited to `scope` (`None`: an admin key); returns its
    /// record and the key, which is not stored and cannot be shown again.
    pub async fn add(&self, name: &str, scope: Option<KeyScope>) -> Result<(KeyRecord, String)> {
        if name.trim().is_empty() {
            return Err(Error::bad_request("a key needs a name"));
        }
        let mut secret = [0u8; 24];
        getrandom::fill(&mut secret)
            .map_err(|e| Error::internal(format!("no randomness for a key: {e}")))?;
        let key = format!("mrk_{}", hex(&secret));
        let record = KeyRecord {
            id: key[4..12].to_string(),
            name: name.trim().to_string(),
            sha256: sha256_hex(&key),
            created_ms: SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as i64),
            scope,
        };
        match self {
            KeyStore::File(path) => {
                let mut file = read_file(path)?;
                file.keys.push(record.clone());
                write_file(path, &file)?;
            }
            KeyStore::Postgres(db) => {
                let client = db.client().await.map_err(pg_error)?;
                client
                    .execute(
                        "INSERT INTO api_keys (id, name, sha256, created_ms, scope) VALUES ($1, $2, $3, $4, $5)",
                        &[
                            &record.id,
                            &record.name,
                            &record.sha256,
                            &record.created_ms,
                            &record
                                .scope
                                .as_ref()
                                .map(|s| serde_json::to_value(s).unwrap_or_default()),
                        ],
                    )
                    .await
                    .map_err(pg_error)?;
            }
        }
        Ok((record, key))
    }

    /// Removes the key with this id; false if there is none.
    pub async fn remove(&self, id: &str) -> Result<bool> {
        match self {
            KeyStore::File(path) => {
                let mut file = read_file(path)?;
                let before = file.keys.len();
                file.keys.retain(|k| k.id != id);
                if file.keys.len() == before {
                    return Ok(false);
                }
                write_file(path, &file)?;
                Ok(true)
            }
            KeyStore::Postgres(db) => {
                let client = db.client().await.map_err(pg_error)?;
                let n = client
                    .execute("DELETE FROM api_keys WHERE id = $1", &[&id])
                    .await
                    .map_err(pg_error)?;
                Ok(n > 0)
            }
        }
    }
}

impl KeyScope {
    /// Renames `from` to `to` in both lists (once, where `to` is there already), or drops it
    /// (`to: None`); whether anything changed.
    fn move_collection(&mut self, from: &CollectionId, to: Option<&CollectionId>) -> bool {
        let mut changed = false;
        for list in [&mut self.read, &mut self.write] {
            let Some(at) = list.iter().position(|c| c == from) else {
                continue;
            };
            list.remove(at);
            if let Some(to) = to
                && !list.contains(to)
            {
                list.insert(at, to.clone());
            }
            changed = true;
        }
        changed
    }
}

impl KeyStore {
    /// Follows a collection's rename (`to`: its new name) or deletion (`None`) in every
    /// key's scope, so a key keeps reaching the collection it was given under its new name,
    /// and a deleted collection's name, if made again later, is not reachable by the keys
    /// that read the old one. Returns how many keys changed.
    pub async fn move_collection(
        &self,
        from: &CollectionId,
        to: Option<&CollectionId>,
    ) -> Result<usize> {
        let moved = |keys: &mut [KeyRecord]| -> Vec<KeyRecord> {
            keys.iter_mut()
                .filter_map(|k| {
                    let changed = k.scope.as_mut()?.move_collection(from, to);
                    changed.then(|| k.clone())
                })
                .collect()
        };
        match self {
            KeyStore::File(path) => {
                let mut file = read_file(path)?;
                let changed = moved(&mut file.keys).len();
                if changed > 0 {
                    write_file(path, &file)?;
                }
                Ok(changed)
            }
            KeyStore::Postgres(db) => {
                let changed = moved(&mut self.list().await?);
                if changed.is_empty() {
                    return Ok(0);
                }
                let mut client = db.client().await.map_err(pg_error)?;
                let tx = client.transaction().await.map_err(pg_error)?;
                for key in &changed {
                    let scope = key
                        .scope
                        .as_ref()
                        .map(|s| serde_json::to_value(s).unwrap_or_default());
                    tx.execute(
                        "UPDATE api_keys SET scope = $2 WHERE id = $1",
                        &[&key.id, &scope],
                    )
                    .await
                    .map_err(pg_error)?;
                }
                tx.commit().await.map_err(pg_error)?;
                Ok(changed.len())
            }
        }
    }
}

fn pg_error(e: impl std::fmt::Display) -> Error {
    Error::internal(format!("API keys in Postgres: {e}"))
}

fn read_file(path: &Path) -> Result<KeyFile> {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text).map_err(|e| {
            Error::internal(format!(
                "{}: not a key file ({e}); fix or remove it",
                path.display()
            ))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(KeyFile::default()),
        Err(e) => Err(Error::internal(format!("{}: {e}", path.display()))),
    }
}

/// Writes through a temporary file and a rename, so a crash never leaves half a file,
/// readable by the owner only.
fn write_file(path: &Path, file: &KeyFile) -> Result<()> {
    let io = |e: std::io::Error| Error::internal(format!("{}: {e}", path.display()));
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let tmp = path.with_extension("json.tmp");
    let text = serde_json::to_string_pretty(file).map_err(|e| Error::internal(e.to_string()))?;
    std::fs::write(&tmp, text).map_err(io)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600)).map_err(io)?;
    }
    std::fs::rename(&tmp, path).map_err(io)
}

/// How long a server trusts its copy of the keys in Postgres before reading them again: a
/// key removed on another server stops working within this time. A key it does not know
/// makes it read them at once, so a key just added anywhere works on its first request.
const SHARED_KEYS_TTL: Duration = Duration::from_secs(1);

/// What the server last read of the keys, and when.
#[derive(Debug, Default)]
struct Cached {
    /// The key file's modification time (file store).
    modified: Option<SystemTime>,
    /// When they were read (Postgres store).
    read_at: Option<Instant>,
    keys: Vec<KeyRecord>,
}

/// The server's view of the keys: the hashes, re-read when the file changes (or, in
/// Postgres, after [`SHARED_KEYS_TTL`] and whenever an unknown key arrives).
#[derive(Debug)]
pub struct Keys {
    store: KeyStore,
    cached: Mutex<Cached>,
}

impl Keys {
    /// Keys from `store`, read now.
    pub async fn new(store: KeyStore) -> Result<Self> {
        let keys = Keys {
            store,
            cached: Mutex::new(Cached::default()),
        };
        keys.current(true).await?;
        Ok(keys)
    }

    /// The stored keys, re-read if they may have changed since the last look (or always,
    /// with `fresh`).
    async fn current(&self, fresh: bool) -> Result<Vec<KeyRecord>> {
        match &self.store {
            KeyStore::File(path) => {
                let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok();
                let mut cached = self.cached.lock().unwrap_or_else(|p| p.into_inner());
                if fresh || cached.modified != modified || modified.is_none() {
                    cached.keys = read_file(path)?.keys;
                    cached.modified = modified;
                }
                Ok(cached.keys.clone())
            }
            KeyStore::Postgres(_) => {
                {
                    let cached = self.cached.lock().unwrap_or_else(|p| p.into_inner());
                    if !fresh
                        && cached
                            .read_at
                            .is_some_and(|t| t.elapsed() < SHARED_KEYS_TTL)
                    {
                        return Ok(cached.keys.clone());
                    }
                }
                // Read without holding the lock across the query.
                let keys = self.store.list().await?;
                let mut cached = self.cached.lock().unwrap_or_else(|p| p.into_inner());
                cached.keys = keys.clone();
                cached.read_at = Some(Instant::now());
                Ok(keys)
            }
        }
    }

    /// Follows a collection's rename or deletion in the keys' scopes (see
    /// [`KeyStore::move_collection`]) and reads the keys again at once.
    pub async fn move_collection(
        &self,
        from: &CollectionId,
        to: Option<&CollectionId>,
    ) -> Result<usize> {
        let changed = self.store.move_collection(from, to).await?;
        self.current(true).await?;
        Ok(changed)
    }

    /// Every key, oldest first, read afresh.
    pub async fn list(&self) -> Result<Vec<KeyRecord>> {
        self.current(true).await
    }

    /// Creates a key (see [`KeyStore::add`]); the server knows it at once.
    pub async fn add(&self, name: &str, scope: Option<KeyScope>) -> Result<(KeyRecord, String)> {
        let added = self.store.add(name, scope).await?;
        self.current(true).await?;
        Ok(added)
    }

    /// Removes a key by id (see [`KeyStore::remove`]); it stops working at once here.
    pub async fn remove(&self, id: &str) -> Result<bool> {
        let removed = self.store.remove(id).await?;
        self.current(true).await?;
        Ok(removed)
    }

    /// Whether any key exists (then every `/v1` request needs one).
    pub async fn any(&self) -> Result<bool> {
        Ok(!self.current(false).await?.is_empty())
    }

    /// Whether a request must carry a key, given whether it `presented` one. A request
    /// that presents a key to a server that knew of none makes a shared store be read
    /// afresh: the key may have been made on another server a moment ago, and must be
    /// held to its collections from its first use, not treated as the open server's
    /// anyone.
    pub async fn required(&self, presented: bool) -> Result<bool> {
        if self.any().await? {
            return Ok(true);
        }
        Ok(presented
            && matches!(self.store, KeyStore::Postgres(_))
            && !self.current(true).await?.is_empty())
    }

    /// Checks an `Authorization` header value; `Ok` with what the key may reach.
    pub async fn check(&self, header: Option<&str>) -> Result<Access> {
        let Some(value) = header else {
            return Err(Error::unauthorized(
                "this server requires an API key: send `Authorization: Bearer KEY` (create one with `metarag keys add NAME`)",
            ));
        };
        let key = value
            .strip_prefix("Bearer ")
            .or_else(|| value.strip_prefix("bearer "))
            .ok_or_else(|| Error::unauthorized("the Authorization header must be `Bearer KEY`"))?
            .trim();
        let hash = sha256_hex(key);
        let find = |keys: &[KeyRecord]| {
            keys.iter()
                .find(|k| constant_time_eq(k.sha256.as_bytes(), hash.as_bytes()))
                .map(|k| match &k.scope {
                    None => Access::All,
                    Some(scope) => Access::Scoped {
                        key: k.id.clone(),
                        scope: scope.clone(),
                    },
                })
        };
        if let Some(id) = find(&self.current(false).await?) {
            return Ok(id);
        }
        // Added on another server since the last read?
        if matches!(self.store, KeyStore::Postgres(_))
            && let Some(id) = find(&self.current(true).await?)
        {
            return Ok(id);
        }
        Err(Error::unauthorized("the API key is not valid"))
    }
}

fn sha256_hex(key: &str) -> String {
    hex(&Sha256::digest(key.as_bytes()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Compares without an early exit, so timing does not tell how much of a hash matched.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn keys_are_stored_hashed_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys.json");
        let store = KeyStore::new(&path);
        let keys = Keys::new(store.clone()).await.unwrap();
        assert!(!keys.any().await.unwrap());
        let (record, key) = store.add("ci", None).await.unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains(&key), "the key itself must not be stored");
        assert!(keys.any().await.unwrap());
        assert_eq!(
            keys.check(Some(&format!("Bearer {key}"))).await.unwrap(),
            Access::All
        );
        // A scoped key comes back with its collections.
        let hr = CollectionId::new("hr").unwrap();
        let scope = KeyScope {
            read: vec![hr.clone()],
            write: Vec::new(),
        };
        let (scoped, reader) = store.add("reader", Some(scope.clone())).await.unwrap();
        let access = keys.check(Some(&format!("Bearer {reader}"))).await.unwrap();
        assert_eq!(
            access,
            Access::Scoped {
                key: scoped.id.clone(),
                scope
            }
        );
        assert!(access.can_read(&hr) && !access.can_write(&hr) && !access.is_admin());
        assert_eq!(
            keys.check(Some("Bearer mrk_wrong"))
                .await
                .unwrap_err()
                .status,
            401
        );
        assert_eq!(keys.check(Some(&key)).await.unwrap_err().status, 401);
        assert_eq!(keys.check(None).await.unwrap_err().status, 401);
        assert!(store.remove(&record.id).await.unwrap());
        assert!(!store.remove(&record.id).await.unwrap());
        assert!(keys.check(Some(&format!("Bearer {key}"))).await.is_err());
    }

    #[test]
    fn a_scoped_key_reads_its_collections_and_no_others() {
        let c = |n: &str| CollectionId::new(n).unwrap();
        let access = Access::Scoped {
            key: "k".into(),
            scope: KeyScope {
                read: vec![c("hr")],
                write: vec![c("ops")],
            },
        };
        // Nothing named: the key's collections, never every one.
        let f = access.narrow(Filter::default()).unwrap();
        assert_eq!(f.collections, [c("hr"), c("ops")]);
        // Writing implies reading.
        let only_ops = Filter {
            collections: vec![c("ops")],
            ..Default::default()
        };
        assert_eq!(access.narrow(only_ops.clone()).unwrap(), only_ops);
        // Another collection is refused by name.
        let err = access
            .narrow(Filter {
                collections: vec![c("hr"), c("legal")],
                ..Default::default()
            })
            .unwrap_err();
        assert_eq!(err.status, 403);
        assert!(err.to_string().contains("legal"), "{err}");
        assert!(access.check_write(&c("hr")).is_err());
        assert!(access.check_write(&c("ops")).is_ok());
        assert_eq!(access.check_admin("managing keys").unwrap_err().status, 403);
        // A key with no collection reads nothing.
        let none = Access::Scoped {
            key: "n".into(),
            scope: KeyScope::default(),
        };
        assert_eq!(none.narrow(Filter::default()).unwrap_err().status, 403);
        assert_eq!(
            Access::All.narrow(Filter::default()).unwrap(),
            Filter::default()
        );
    }

    #[tokio::test]
    async fn scopes_follow_a_renamed_or_deleted_collection_in_the_key_file() {
        let dir = tempfile::tempdir().unwrap();
        scopes_follow_moves(KeyStore::new(dir.path().join("keys.json"))).await;
    }

    #[tokio::test]
    async fn scopes_follow_a_renamed_or_deleted_collection_in_postgres() {
        let pg = metarag_testkit::postgres();
        let db = PgDatabase::connect(&pg.url(), 2).await.unwrap();
        scopes_follow_moves(KeyStore::postgres(db)).await;
    }

    /// A rename moves the name in every scope that holds it (once, where the new name was
    /// there already); a deletion drops it; admin keys and other names are untouched.
    async fn scopes_follow_moves(store: KeyStore) {
        let c = |n: &str| CollectionId::new(n).unwrap();
        let keys = Keys::new(store.clone()).await.unwrap();
        store.add("admin", None).await.unwrap();
        let scoped = |read: &[&str], write: &[&str]| {
            Some(KeyScope {
                read: read.iter().map(|n| c(n)).collect(),
                write: write.iter().map(|n| c(n)).collect(),
            })
        };
        let (_, reader) = store.add("r", scoped(&["hr", "ops"], &[])).await.unwrap();
        let (_, both) = store.add("w", scoped(&["people"], &["hr"])).await.unwrap();
        let (_, other) = store.add("o", scoped(&["legal"], &[])).await.unwrap();
        assert_eq!(
            keys.move_collection(&c("hr"), Some(&c("people")))
                .await
                .unwrap(),
            2
        );
        let scope_of = |key: &str| {
            let keys = &keys;
            let key = key.to_string();
            async move {
                match keys.check(Some(&format!("Bearer {key}"))).await.unwrap() {
                    Access::Scoped { scope, .. } => scope,
                    Access::All => panic!("a scoped key came back as an admin key"),
                }
            }
        };
        assert_eq!(
            scope_of(&reader).await,
            scoped(&["people", "ops"], &[]).unwrap()
        );
        assert_eq!(
            scope_of(&both).await,
            scoped(&["people"], &["people"]).unwrap()
        );
        assert_eq!(keys.move_collection(&c("ops"), None).await.unwrap(), 1);
        assert_eq!(scope_of(&reader).await, scoped(&["people"], &[]).unwrap());
        assert_eq!(scope_of(&other).await, scoped(&["legal"], &[]).unwrap());
        assert_eq!(keys.move_collection(&c("nowhere"), None).await.unwrap(), 0);
        // Listing order is by creation time, which may tie: find the admin key by name.
        let listed = store.list().await.unwrap();
        let admin = listed.iter().find(|k| k.name == "admin").unwrap();
        assert_eq!(admin.scope, None);
    }
}
