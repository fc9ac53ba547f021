//! # metarag-ingest
//!
//! Turns files into chunks ready for the index.
//!
//! - [`parse`]: PDF (text per page), DOCX, HTML (scripts, styles and navigation dropped,
//!   headings kept), Markdown, plain text, and JSON/JSONL (`{doc_id, title, text}` corpus
//!   records or arbitrary JSON). Every parser yields the document's text plus its sections
//!   (heading path or page) as byte ranges into that text.
//! - [`Chunker`]: structure-aware, token-bounded chunks measured with the embedder's own
//!   tokenizer, never longer than the embedder reads.
//! - [`Ingester`]: the run itself: discover files, skip unchanged ones by content hash,
//!   chunk, embed in batches, and replace each document's chunks atomically in a
//!   [`metarag_core::Store`]. One bad file is reported; the others go in.
//! - [`import`]: a vector dump (`{id, text, embedding, metadata}` records) written as it is,
//!   its vectors checked against the embedder instead of recomputed.

pub mod chunk;
mod error;
pub mod import;
pub mod parse;
mod pipeline;

pub use chunk::{ChunkSettings, Chunker};
pub use error::{Error, Result};
pub use parse::{CorpusMode, ParsedDocument, Section};
pub use pipeline::{
    Failure, FileOutcome, IngestEvent, IngestOptions, IngestReport, Ingester, MAX_TEXT_BYTES,
    MAX_TITLE_CHARS, Upload, cap_title, discover,
};
