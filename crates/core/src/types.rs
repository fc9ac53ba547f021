//! Documents and chunks as every layer sees them.

use crate::{ChunkId, CollectionId, DocId, StageId};
use serde::{Deserialize, Serialize};
use std::ops::Range;

/// The format a document was parsed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DocFormat {
    /// Portable Document Format; text is extracted per page.
    Pdf,
    /// Office Open XML word-processing document.
    Docx,
    /// HTML page; scripts, styles and navigation are dropped.
    Html,
    /// Markdown (CommonMark).
    Markdown,
    /// Plain text.
    Text,
    /// One JSON document, rendered as `key: value` lines.
    Json,
    /// One `{doc_id, title, text}` line of a corpus file.
    CorpusLine,
}

impl DocFormat {
    /// The lowercase name used in config, CLI flags and the index.
    pub fn as_str(self) -> &'static str {
        match self {
            DocFormat::Pdf => "pdf",
            DocFormat::Docx => "docx",
            DocFormat::Html => "html",
            DocFormat::Markdown => "markdown",
            DocFormat::Text => "text",
            DocFormat::Json => "json",
            DocFormat::CorpusLine => "corpusline",
        }
    }

    /// Parses the name written by [`DocFormat::as_str`].
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "pdf" => DocFormat::Pdf,
            "docx" => DocFormat::Docx,
            "html" => DocFormat::Html,
            "markdown" => DocFormat::Markdown,
            "text" => DocFormat::Text,
            "json" => DocFormat::Json,
            "corpusline" => DocFormat::CorpusLine,
            _ => return None,
        })
    }
}

/// A stored document: what `docs list` and `docs show` print.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Document {
    /// Stable id (canonical path or given id).
    pub id: DocId,
    /// Title: the document's own (PDF/HTML/DOCX metadata, first heading, corpus title) or the
    /// file name.
    pub title: String,
    /// Where it came from: a file path, or `file.jsonl:LINE` for corpus lines.
    pub source: String,
    /// The parser that read it.
    pub format: DocFormat,
    /// Hash of the raw content and the pipeline settings; unchanged hash means re-ingest is a
    /// no-op.
    pub content_hash: String,
    /// Size of the raw content in bytes.
    pub bytes: u64,
    /// Optional date of the document (Unix seconds), used by date-range filters.
    pub date: Option<i64>,
    /// When it was (last) ingested, Unix seconds.
    pub ingested_at: i64,
    /// Number of chunks stored for it.
    pub chunk_count: u32,
    /// The collection it belongs to ([`CollectionId::DEFAULT`] unless ingested into
    /// another); searches and keys are scoped by it.
    #[serde(default)]
    pub collection: crate::CollectionId,
    /// Key-value metadata, from the source (a corpus record's `metadata` object, Markdown
    /// front matter) and from the ingest (`--meta`); searchable with
    /// [`Filter::metadata`](crate::Filter::metadata).
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub metadata: serde_json::Map<String, serde_json::Value>,
    /// The extracted text that chunk byte offsets point into.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// A chunk as produced by the chunker, before the store assigns it an id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ChunkDraft {
    /// Position of the chunk inside its document, from 0.
    pub ordinal: u32,
    /// Heading path from the document root to this chunk's section.
    pub section: Vec<String>,
    /// First and last page (1-based, inclusive) for paged formats.
    pub pages: Option<(u32, u32)>,
    /// Byte range of the chunk inside the document's extracted text.
    pub bytes: Range<usize>,
    /// Tokens of the embedder's tokenizer for [`ChunkDraft::embedding_input`], special tokens
    /// included. Never above the embedder's maximum sequence length.
    pub token_count: u32,
    /// The chunk text.
    pub text: String,
}

impl ChunkDraft {
    /// The text the embedder sees: a contextual header (title and section path) followed by
    /// the chunk text. The header lets a passage about "the director" be found by the name
    /// in its title, which matters for entity-centric multi-hop corpora.
    pub fn embedding_input(&self, title: &str) -> String {
        embedding_input(title, &self.section, &self.text)
    }
}

/// Builds the embedder input for a chunk; shared by the chunker (to count tokens) and the
/// indexer (to embed), so the count always matches what is embedded.
pub fn embedding_input(title: &str, section: &[String], text: &str) -> String {
    let mut out = String::with_capacity(title.len() + text.len() + 16);
    out.push_str(title);
    for s in section {
        if s != title {
            out.push_str(" > ");
            out.push_str(s);
        }
    }
    out.push('\n');
    out.push_str(text);
    out
}

/// A stored chunk, with its id and the fields of its document that search results show.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Chunk {
    /// Store-assigned id.
    pub id: ChunkId,
    /// The document it belongs to.
    pub doc_id: DocId,
    /// The document's title.
    pub title: String,
    /// The chunk's fields as chunked.
    #[serde(flatten)]
    pub draft: ChunkDraft,
}

/// One document and all its chunks with their embeddings: the unit a store replaces
/// atomically.
#[derive(Debug, Clone)]
pub struct DocumentUpdate {
    /// The document record (its `chunk_count` is set by the store).
    pub document: Document,
    /// Chunks in order, each with its embedding (after the staged ones, if any).
    pub chunks: Vec<(ChunkDraft, Vec<f32>)>,
    /// Chunks handed to the store ahead of this write ([`crate::Store::stage`]): they are
    /// the document's first chunks, in the order they were staged, and `chunks` follow
    /// them. `None`: every chunk is in `chunks`.
    pub staged: Option<StageId>,
}

impl DocumentUpdate {
    /// A document with all its chunks in hand (nothing staged).
    pub fn new(document: Document, chunks: Vec<(ChunkDraft, Vec<f32>)>) -> Self {
        DocumentUpdate {
            document,
            chunks,
            staged: None,
        }
    }
}

/// One entry of the audit memory: a document version written, or a document removed.
/// Every store keeps them in the transaction of the change itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AuditEvent {
    /// When (Unix seconds): the write's time.
    pub at: i64,
    /// `added`, `updated` or `removed`.
    pub kind: String,
    /// The document.
    pub doc_id: String,
    /// Its title at the time.
    pub title: String,
    /// What changed: chunk count, sections added and removed.
    pub detail: serde_json::Value,
    /// The collection the document belongs to.
    #[serde(default)]
    pub collection: CollectionId,
}

impl AuditEvent {
    /// The event of writing `doc` as `chunks` chunks in `sections` (see
    /// [`AuditEvent::section_names`]) at `at`: `added`, or `updated` with the sections
    /// gained and lost when `before` (the stored version's sections) is given.
    pub fn version(
        doc: &Document,
        sections: Vec<String>,
        chunks: usize,
        before: Option<Vec<String>>,
        at: i64,
    ) -> AuditEvent {
        let (kind, detail) = match before {
            None => (
                "added",
                serde_json::json!({ "chunks": chunks, "sections": sections }),
            ),
            Some(old) => {
                let added: Vec<&String> = sections.iter().filter(|s| !old.contains(s)).collect();
                let removed: Vec<&String> = old.iter().filter(|s| !sections.contains(s)).collect();
                (
                    "updated",
                    serde_json::json!({
                        "chunks": chunks, "sections_added": added, "sections_removed": removed
                    }),
                )
            }
        };
        AuditEvent {
            at,
            kind: kind.into(),
            doc_id: doc.id.to_string(),
            title: doc.title.clone(),
            detail,
            collection: doc.collection.clone(),
        }
    }

    /// The event of removing a document that had `title` and `sections`.
    pub fn removed(
        doc: &DocId,
        title: String,
        sections: Vec<String>,
        collection: CollectionId,
        at: i64,
    ) -> AuditEvent {
        AuditEvent {
            at,
            kind: "removed".into(),
            doc_id: doc.to_string(),
            title,
            detail: serde_json::json!({ "sections_removed": sections }),
            collection,
        }
    }

    /// A document's section names from its chunks' section paths in order: each path
    /// joined with ` > `, once, the unnamed one left out.
    pub fn section_names<'a>(paths: impl IntoIterator<Item = &'a [String]>) -> Vec<String> {
        let mut sections: Vec<String> = Vec::new();
        for p in paths {
            let name = p.join(" > ");
            if !name.is_empty() && !sections.contains(&name) {
                sections.push(name);
            }
        }
        sections
    }
}

/// Which audit events to read: newest first, at most `limit`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AuditQuery {
    /// At or after this time (Unix seconds).
    pub from: Option<i64>,
    /// Before this time (Unix seconds).
    pub to: Option<i64>,
    /// Only documents whose title or id contains this text, case aside.
    pub title: Option<String>,
    /// Only these collections; every one when empty.
    pub collections: Vec<CollectionId>,
    /// At most this many.
    pub limit: usize,
}

/// A collection as a store lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CollectionInfo {
    /// Its name.
    pub name: crate::CollectionId,
    /// When it was made (Unix seconds; 0 for the default collection of an older index).
    pub created_at: i64,
    /// Documents in it.
    pub documents: u64,
    /// Chunks of those documents.
    pub chunks: u64,
}

/// Counts a store reports.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StoreStats {
    /// Documents stored.
    pub documents: u64,
    /// Chunks stored.
    pub chunks: u64,
    /// Sum of the chunks' token counts.
    pub tokens: u64,
    /// The embedding model the index was built with.
    pub embedder: Option<String>,
    /// Its dimension.
    pub dimension: Option<usize>,
    /// Entities in the entity graph (`None`: the store keeps no graph).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entities: Option<u64>,
    /// Relations between them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relations: Option<u64>,
}
