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
}
