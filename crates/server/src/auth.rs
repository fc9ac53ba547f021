//! API keys: created by `metarag keys add`, kept in the data directory as SHA-256 hashes
//! only (the key itself is shown once), checked on every `/v1` request as
//! `Authorization: Bearer KEY`. The file is re-read when it changes, so a key added or
//! removed while the server runs takes effect on the next request.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

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
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct KeyFile {
    keys: Vec<KeyRecord>,
}

/// The key file of a data directory.
#[derive(Debug, Clone)]
pub struct KeyStore {
    path: PathBuf,
}

impl KeyStore {
    /// The key file at `path` (it need not exist yet).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        KeyStore { path: path.into() }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every stored key (none if the file does not exist).
    pub fn list(&self) -> Result<Vec<KeyRecord>> {
        Ok(self.read()?.keys)
    }

    fn read(&self) -> Result<KeyFile> {
        match std::fs::read_to_string(&self.path) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| {
                Error::internal(format!(
                    "{}: not a key file ({e}); fix or remove it",
                    self.path.display()
                ))
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(KeyFile::default()),
            Err(e) => Err(Error::internal(format!("{}: {e}", self.path.display()))),
        }
    }

    /// Writes through a temporary file and a rename, so a crash never leaves half a file,
    /// readable by the owner only.
    fn write(&self, file: &KeyFile) -> Result<()> {
        let io = |e: std::io::Error| Error::internal(format!("{}: {e}", self.path.display()));
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let tmp = self.path.with_extension("json.tmp");
        let text =
            serde_json::to_string_pretty(file).map_err(|e| Error::internal(e.to_string()))?;
        std::fs::write(&tmp, text).map_err(io)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600)).map_err(io)?;
        }
        std::fs::rename(&tmp, &self.path).map_err(io)
    }

    /// Creates a key named `name`; returns its record and the key, which is not stored and
    /// cannot be shown again.
    pub fn add(&self, name: &str) -> Result<(KeyRecord, String)> {
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
        };
        let mut file = self.read()?;
        file.keys.push(record.clone());
        self.write(&file)?;
        Ok((record, key))
    }

    /// Removes the key with this id; false if there is none.
    pub fn remove(&self, id: &str) -> Result<bool> {
        let mut file = self.read()?;
        let before = file.keys.len();
        file.keys.retain(|k| k.id != id);
        if file.keys.len() == before {
            return Ok(false);
        }
        self.write(&file)?;
        Ok(true)
    }
}

/// The server's view of the key file: the hashes, re-read when the file changes.
#[derive(Debug)]
pub struct Keys {
    store: KeyStore,
    cached: Mutex<(Option<SystemTime>, Vec<KeyRecord>)>,
}

impl Keys {
    /// Keys from `store`, read now.
    pub fn new(store: KeyStore) -> Result<Self> {
        let keys = Keys {
            store,
            cached: Mutex::new((None, Vec::new())),
        };
        keys.current()?;
        Ok(keys)
    }

    /// The stored keys, re-read if the file changed since the last look.
    fn current(&self) -> Result<Vec<KeyRecord>> {
        let modified = std::fs::metadata(self.store.path())
            .and_then(|m| m.modified())
            .ok();
        let mut cached = self.cached.lock().unwrap_or_else(|p| p.into_inner());
        if cached.0 != modified || modified.is_none() {
            *cached = (modified, self.store.list()?);
        }
        Ok(cached.1.clone())
    }

    /// Whether any key exists (then every `/v1` request needs one).
    pub fn any(&self) -> Result<bool> {
        Ok(!self.current()?.is_empty())
    }

    /// Checks an `Authorization` header value; `Ok` with the key's id.
    pub fn check(&self, header: Option<&str>) -> Result<String> {
        let keys = self.current()?;
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
        keys.iter()
            .find(|k| constant_time_eq(k.sha256.as_bytes(), hash.as_bytes()))
            .map(|k| k.id.clone())
            .ok_or_else(|| Error::unauthorized("the API key is not valid"))
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

    #[test]
    fn keys_are_stored_hashed_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let store = KeyStore::new(dir.path().join("keys.json"));
        let keys = Keys::new(store.clone()).unwrap();
        assert!(!keys.any().unwrap());
        let (record, key) = store.add("ci").unwrap();
        let text = std::fs::read_to_string(store.path()).unwrap();
        assert!(!text.contains(&key), "the key itself must not be stored");
        assert!(keys.any().unwrap());
        assert_eq!(
            keys.check(Some(&format!("Bearer {key}"))).unwrap(),
            record.id
        );
        assert_eq!(
            keys.check(Some("Bearer mrk_wrong")).unwrap_err().status,
            401
        );
        assert_eq!(keys.check(Some(&key)).unwrap_err().status, 401);
        assert_eq!(keys.check(None).unwrap_err().status, 401);
        assert!(store.remove(&record.id).unwrap());
        assert!(!store.remove(&record.id).unwrap());
        assert!(keys.check(Some(&format!("Bearer {key}"))).is_err());
    }
}
