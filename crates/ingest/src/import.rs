//! Importing a vector dump: records of `{id, text, embedding, metadata}` (a JSON array or
//! JSONL), as another system's "index in a JSON file" holds them (seed `002`'s starting
//! point). Each record becomes one document of one chunk with its own vector; nothing is
//! re-embedded, so the vectors must come from the index's embedding model. The dimension is
//! checked on every record, and a sample of records is embedded again and compared, so a
//! dump from another model of the same dimension is refused instead of silently
//! poisoning dense search.

use crate::chunk::Chunker;
use crate::pipeline::{Failure, IngestReport};
use crate::{Error, Result};
use metarag_core::{ChunkDraft, DocFormat, DocId, Document, DocumentUpdate, Embedder, Store};
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;
use std::time::Instant;

/// One record of a vector dump.
#[derive(Debug, Clone, PartialEq)]
pub struct DumpRecord {
    /// 1-based line (JSONL) or element (JSON array): where errors point.
    pub line: usize,
    /// The record's id: the document id it is stored under.
    pub id: String,
    /// Its text.
    pub text: String,
    /// Its vector.
    pub embedding: Vec<f32>,
    /// `metadata.title`, else `title`, else the id.
    pub title: String,
    /// `metadata.source`, else `file#id`.
    pub source: String,
    /// `metadata.date` (Unix seconds, or `YYYY-MM-DD`), if any.
    pub date: Option<i64>,
    /// The rest of `metadata` (everything but `title`, `source` and `date`): the
    /// document's metadata, searchable by filters.
    pub metadata: serde_json::Map<String, Value>,
}

/// Settings of an import.
#[derive(Debug, Clone)]
pub struct ImportOptions {
    /// Records re-embedded to check the vectors come from the index's model (0: trust them).
    pub check_sample: usize,
    /// Least mean cosine between a re-embedded record and its dump vector.
    pub min_cosine: f32,
    /// Records written per atomic batch.
    pub batch: usize,
    /// The collection the records go into.
    pub collection: metarag_core::CollectionId,
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            check_sample: 8,
            min_cosine: 0.95,
            batch: 1024,
            collection: metarag_core::CollectionId::default(),
        }
    }
}

/// Reads a dump: the records that parse, and one error per record that does not (naming
/// the file, line and field). `dimension` is the index's.
pub fn read_dump(
    path: &Path,
    bytes: &[u8],
    dimension: usize,
) -> Result<(Vec<DumpRecord>, Vec<Error>)> {
    let text = std::str::from_utf8(bytes).map_err(|e| Error::Parse {
        path: path.to_path_buf(),
        format: "vector dump",
        reason: format!("not UTF-8: {e}"),
    })?;
    let values: Vec<(usize, std::result::Result<Value, String>)> =
        if text.trim_start().starts_with('[') {
            let all: Vec<Value> = serde_json::from_str(text).map_err(|e| Error::Parse {
                path: path.to_path_buf(),
                format: "vector dump",
                reason: e.to_string(),
            })?;
            all.into_iter()
                .enumerate()
                .map(|(i, v)| (i + 1, Ok(v)))
                .collect()
        } else {
            text.lines()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty())
                .map(|(i, l)| (i + 1, serde_json::from_str(l).map_err(|e| e.to_string())))
                .collect()
        };
    let mut records = Vec::new();
    let mut errors = Vec::new();
    for (line, value) in values {
        let bad = |reason: String| Error::Record {
            path: path.to_path_buf(),
            line,
            reason,
        };
        match value
            .map_err(|e| bad(format!("not JSON: {e}")))
            .and_then(|v| record(path, line, &v, dimension).map_err(bad))
        {
            Ok(r) => records.push(r),
            Err(e) => errors.push(e),
        }
    }
    Ok((records, errors))
}

/// One record, or what is wrong with it (naming the field).
fn record(
    path: &Path,
    line: usize,
    v: &Value,
    dimension: usize,
) -> std::result::Result<DumpRecord, String> {
    let obj = v.as_object().ok_or("a record must be a JSON object")?;
    let id = match obj.get("id") {
        Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => return Err("field `id`: missing or empty (a string or a number)".into()),
    };
    let text = match obj.get("text") {
        Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
        _ => return Err(format!("record `{id}`: field `text`: missing or empty")),
    };
    let embedding: Vec<f32> = match obj.get("embedding") {
        Some(Value::Array(xs)) => xs
            .iter()
            .map(|x| x.as_f64().map(|f| f as f32))
            .collect::<Option<Vec<f32>>>()
            .filter(|v| v.iter().all(|x| x.is_finite()))
            .ok_or_else(|| format!("record `{id}`: field `embedding`: not a list of numbers"))?,
        _ => {
            return Err(format!(
                "record `{id}`: field `embedding`: missing (a list of numbers)"
            ));
        }
    };
    if embedding.len() != dimension {
        return Err(format!(
            "record `{id}`: field `embedding`: {} numbers, the index's embedder makes {dimension}",
            embedding.len()
        ));
    }
    if embedding.iter().all(|x| *x == 0.0) {
        return Err(format!("record `{id}`: field `embedding`: all zeros"));
    }
    let meta = obj.get("metadata").and_then(Value::as_object);
    let field = |k: &str| {
        meta.and_then(|m| m.get(k))
            .or_else(|| obj.get(k))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let date =
        match meta.and_then(|m| m.get("date")).or_else(|| obj.get("date")) {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) => Some(n.as_i64().ok_or_else(|| {
                format!("record `{id}`: field `metadata.date`: not whole seconds")
            })?),
            Some(Value::String(s)) => Some(metarag_core::time::parse_day(s).ok_or_else(|| {
                format!("record `{id}`: field `metadata.date`: `{s}` is not YYYY-MM-DD")
            })?),
            Some(_) => return Err(format!("record `{id}`: field `metadata.date`: not a date")),
        };
    let mut metadata = meta.cloned().unwrap_or_default();
    for k in ["title", "source", "date"] {
        metadata.remove(k);
    }
    Ok(DumpRecord {
        metadata,
        title: field("title").unwrap_or_else(|| id.clone()),
        source: field("source").unwrap_or_else(|| format!("{}#{id}", path.display())),
        id,
        text,
        embedding,
        date,
        line,
    })
}

/// Re-embeds an even sample of the records and returns the mean cosine with their dump
/// vectors (`None` for an empty sample).
pub async fn check_vectors<E: Embedder>(
    embedder: &E,
    records: &[DumpRecord],
    sample: usize,
) -> Result<Option<f32>> {
    if sample == 0 || records.is_empty() {
        return Ok(None);
    }
    let n = sample.min(records.len());
    let picked: Vec<&DumpRecord> = (0..n).map(|i| &records[i * records.len() / n]).collect();
    let texts: Vec<String> = picked.iter().map(|r| r.text.clone()).collect();
    let fresh = embedder.embed(&texts).await?;
    let sum: f32 = picked
        .iter()
        .zip(&fresh)
        .map(|(r, v)| metarag_core::vector::cosine(&r.embedding, v))
        .sum();
    Ok(Some(sum / n as f32))
}

/// Writes the records of `path` into `store` as one-chunk documents with their own
/// vectors, skipping records whose content is unchanged. Fails before writing anything if
/// the sampled vectors do not match `embedder` (a dump from another model).
pub async fn import_dump<E: Embedder, S: Store>(
    path: &Path,
    chunker: &Chunker,
    embedder: &E,
    store: &S,
    options: &ImportOptions,
) -> Result<IngestReport> {
    let started = Instant::now();
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let (records, errors) = read_dump(path, &bytes, embedder.dimension())?;
    let mut report = IngestReport {
        files: 1,
        failures: errors
            .iter()
            .map(|e| Failure {
                source: path.display().to_string(),
                error: e.to_string(),
            })
            .collect(),
        ..Default::default()
    };
    let t = Instant::now();
    if let Some(mean) = check_vectors(embedder, &records, options.check_sample).await? {
        report.embed_seconds = t.elapsed().as_secs_f64();
        if mean < options.min_cosine {
            return Err(Error::VectorsMismatch {
                path: path.to_path_buf(),
                embedder: embedder.model_id().to_string(),
                cosine: mean,
                min: options.min_cosine,
            });
        }
    }
    let existing: HashMap<DocId, String> = store
        .documents()
        .await?
        .into_iter()
        .map(|d| (d.id, d.content_hash))
        .collect();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let mut batch: Vec<DocumentUpdate> = Vec::new();
    for r in records {
        let id = match DocId::new(r.id.clone()) {
            Ok(id) => id,
            Err(e) => {
                report.failures.push(Failure {
                    source: format!("{}:{}", path.display(), r.line),
                    error: format!("field `id`: {e}"),
                });
                continue;
            }
        };
        let mut hasher = blake3::Hasher::new();
        hasher.update(r.title.as_bytes());
        hasher.update(&[0]);
        hasher.update(r.text.as_bytes());
        for x in &r.embedding {
            hasher.update(&x.to_le_bytes());
        }
        if !r.metadata.is_empty() {
            hasher.update(Value::Object(r.metadata.clone()).to_string().as_bytes());
        }
        let content_hash = format!("import:{}", hasher.finalize().to_hex());
        match existing.get(&id) {
            Some(h) if *h == content_hash => {
                report.unchanged += 1;
                continue;
            }
            Some(_) => report.updated += 1,
            None => report.added += 1,
        }
        let token_count = chunker.count(&r.text)? as u32;
        report.tokens += token_count as usize;
        let draft = ChunkDraft {
            ordinal: 0,
            section: Vec::new(),
            pages: None,
            bytes: 0..r.text.len(),
            token_count,
            text: r.text.clone(),
        };
        batch.push(DocumentUpdate {
            document: Document {
                id,
                title: r.title,
                source: r.source,
                format: DocFormat::CorpusLine,
                content_hash,
                bytes: r.text.len() as u64,
                date: r.date,
                ingested_at: now,
                chunk_count: 1,
                metadata: r.metadata,
                collection: options.collection.clone(),
                text: Some(r.text),
            },
            chunks: vec![(draft, r.embedding)],
            staged: None,
        });
        if batch.len() >= options.batch.max(1) {
            report.chunks += batch.len();
            store.apply(std::mem::take(&mut batch), Vec::new()).await?;
        }
    }
    report.chunks += batch.len();
    if !batch.is_empty() {
        store.apply(batch, Vec::new()).await?;
    }
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_parse_and_bad_ones_name_their_field() {
        let dump = br#"{"id": "a", "text": "Alpha text", "embedding": [0.1, 0.2, 0.3], "metadata": {"title": "Alpha", "date": "2019-03-01"}}
{"id": "b", "text": "Beta", "embedding": [0.1, 0.2]}
{"id": "c", "embedding": [0.1, 0.2, 0.3]}
not json
{"id": 7, "text": "Seven", "embedding": [1, 0, 0], "source": "s3://bucket/seven"}
"#;
        let (records, errors) = read_dump(Path::new("dump.jsonl"), dump, 3).unwrap();
        assert_eq!(records.len(), 2);
        assert_eq!(records[0].title, "Alpha");
        assert_eq!(records[0].date, Some(1_551_398_400));
        assert_eq!(records[1].id, "7");
        assert_eq!(records[1].source, "s3://bucket/seven");
        let errors: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert!(
            errors[0].contains("dump.jsonl:2") && errors[0].contains("`embedding`: 2 numbers"),
            "{errors:?}"
        );
        assert!(
            errors[1].contains("dump.jsonl:3") && errors[1].contains("`text`"),
            "{errors:?}"
        );
        assert!(
            errors[2].contains("dump.jsonl:4") && errors[2].contains("not JSON"),
            "{errors:?}"
        );
    }

    #[test]
    fn a_json_array_is_read_too() {
        let dump = br#"[{"id": "x", "text": "X", "embedding": [0, 1]}]"#;
        let (records, errors) = read_dump(Path::new("d.json"), dump, 2).unwrap();
        assert_eq!((records.len(), errors.len()), (1, 0));
        assert_eq!(records[0].line, 1);
    }
}
