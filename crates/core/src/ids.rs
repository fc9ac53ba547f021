//! Typed identifiers. Newtypes, never aliases, so a chunk id can't be passed where a
//! document id is expected.

use std::fmt;

/// The stable identifier of a document: the canonical path of an ingested file, or the id a
/// corpus line gave. Re-ingesting the same source yields the same id.
#[derive(
    Debug,
    Clone,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(transparent)]
pub struct DocId(String);

impl DocId {
    /// Wraps an id; empty ids are rejected because they can't be addressed from the CLI.
    pub fn new(id: impl Into<String>) -> crate::Result<Self> {
        let id = id.into();
        if id.trim().is_empty() {
            return Err(crate::Error::invalid("doc_id", "must not be empty"));
        }
        Ok(DocId(id))
    }

    /// The id as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for DocId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The name of a collection: the body of documents a document belongs to (a team's
/// runbooks, a customer's contracts), which searches, asks and API keys are scoped to.
/// Lower-case letters, digits, `-` and `_`, starting with a letter or digit, at most 64
/// characters, so that it reads the same in a URL, a flag and a SQL value. A document
/// ingested without one belongs to [`CollectionId::DEFAULT`].
#[derive(
    Debug,
    Clone,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(try_from = "String", into = "String")]
pub struct CollectionId(String);

impl CollectionId {
    /// The collection of documents ingested without one; it always exists and cannot be
    /// deleted or renamed, so indexes made before collections open unchanged.
    pub const DEFAULT: &'static str = "default";

    /// Checks and wraps a collection name.
    pub fn new(name: impl Into<String>) -> crate::Result<Self> {
        let name = name.into();
        let ok_start = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
        let ok_rest = name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
        if !ok_start || !ok_rest || name.len() > 64 {
            return Err(crate::Error::invalid(
                "collection",
                format!(
                    "{name:?} is not a collection name: use 1 to 64 lower-case letters, digits, \
                     '-' or '_', starting with a letter or digit"
                ),
            ));
        }
        Ok(CollectionId(name))
    }

    /// The default collection.
    pub fn default_collection() -> Self {
        CollectionId(Self::DEFAULT.to_string())
    }

    /// Whether this is the default collection.
    pub fn is_default(&self) -> bool {
        self.0 == Self::DEFAULT
    }

    /// The name as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for CollectionId {
    fn default() -> Self {
        Self::default_collection()
    }
}

impl TryFrom<String> for CollectionId {
    type Error = crate::Error;
    fn try_from(name: String) -> crate::Result<Self> {
        CollectionId::new(name)
    }
}

impl From<CollectionId> for String {
    fn from(c: CollectionId) -> String {
        c.0
    }
}

impl std::str::FromStr for CollectionId {
    type Err = crate::Error;
    fn from_str(name: &str) -> crate::Result<Self> {
        CollectionId::new(name)
    }
}

impl fmt::Display for CollectionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The identifier of one chunk inside an index. Assigned by the store; a replaced document's
/// chunks get new ids, so a stale id never silently points at different text.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(transparent)]
pub struct ChunkId(pub u64);

impl fmt::Display for ChunkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A staged write: the chunks of one document handed to a store ahead of the document's
/// write ([`crate::Store::stage`]). Assigned by the store on the first slice; the update
/// that names it in [`crate::DocumentUpdate::staged`] writes them.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(transparent)]
pub struct StageId(pub u64);

impl fmt::Display for StageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_doc_id_is_rejected() {
        assert!(DocId::new("  ").is_err());
        assert_eq!(DocId::new("a.md").unwrap().as_str(), "a.md");
    }

    #[test]
    fn a_collection_name_reads_the_same_in_a_url_a_flag_and_sql() {
        for ok in ["default", "hr", "runbooks-2026", "team_a", "0ops"] {
            assert_eq!(CollectionId::new(ok).unwrap().as_str(), ok);
        }
        for bad in ["", "HR", "-x", "_x", "a b", "a/b", "é", &"x".repeat(65)] {
            let e = CollectionId::new(bad).unwrap_err().to_string();
            assert!(e.contains("collection"), "{bad:?}: {e}");
        }
        // Serde checks too: a request naming a bad collection is refused at parsing.
        assert!(serde_json::from_str::<CollectionId>("\"Bad Name\"").is_err());
        let c: CollectionId = serde_json::from_str("\"hr\"").unwrap();
        assert_eq!(serde_json::to_string(&c).unwrap(), "\"hr\"");
        assert!(CollectionId::default().is_default());
    }
}
