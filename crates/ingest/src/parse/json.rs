//! JSON and JSONL: `{doc_id, title, text, date, metadata}` corpus records, or arbitrary
//! JSON documents rendered as `key: value` lines.

use super::{ParsedDocument, decode, file_title, whole};
use crate::{Error, Result};
use metarag_core::{DocFormat, DocId};
use serde_json::Value;
use std::path::Path;

/// How JSON records are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum CorpusMode {
    /// A record with a string `text` field is a corpus document; anything else is an
    /// arbitrary JSON document.
    #[default]
    Auto,
    /// Every record must be a corpus document (`text` required); others are errors.
    Corpus,
}

pub fn parse(
    path: &Path,
    id: &DocId,
    bytes: &[u8],
    mode: CorpusMode,
) -> Result<(Vec<ParsedDocument>, Vec<Error>)> {
    let text = decode(path, bytes, "json")?;
    let lines_format = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("jsonl") || e.eq_ignore_ascii_case("ndjson"));
    let mut docs = Vec::new();
    let mut errors = Vec::new();
    if lines_format || (mode == CorpusMode::Corpus && !text.trim_start().starts_with('[')) {
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let record = serde_json::from_str::<Value>(line).map_err(|e| Error::Record {
                path: path.to_path_buf(),
                line: i + 1,
                reason: format!("invalid JSON: {e}"),
            });
            match record.and_then(|v| record_doc(path, id, i + 1, v, line.as_bytes(), mode)) {
                Ok(d) => docs.push(d),
                Err(e) => errors.push(e),
            }
        }
        return Ok((docs, errors));
    }
    let value: Value = serde_json::from_str(&text).map_err(|e| Error::Parse {
        path: path.to_path_buf(),
        format: "json",
        reason: e.to_string(),
    })?;
    match value {
        Value::Array(items) if mode == CorpusMode::Corpus || items.iter().all(is_corpus_record) => {
            for (i, v) in items.into_iter().enumerate() {
                let raw = v.to_string();
                match record_doc(path, id, i + 1, v, raw.as_bytes(), mode) {
                    Ok(d) => docs.push(d),
                    Err(e) => errors.push(e),
                }
            }
        }
        v => {
            let title = title_of(&v).unwrap_or_else(|| file_title(path));
            let mut d = whole(path, id, title, DocFormat::Json, render(&v), bytes);
            d.date = date_of(&v);
            docs.push(d);
        }
    }
    Ok((docs, errors))
}

fn is_corpus_record(v: &Value) -> bool {
    v.get("text").is_some_and(Value::is_string)
}

fn title_of(v: &Value) -> Option<String> {
    ["title", "name"]
        .iter()
        .find_map(|k| v.get(k).and_then(Value::as_str))
        .map(str::to_string)
        .filter(|t| !t.trim().is_empty())
}

fn date_of(v: &Value) -> Option<i64> {
    v.get("date").and_then(Value::as_i64)
}

fn record_doc(
    path: &Path,
    file_id: &DocId,
    line: usize,
    v: Value,
    raw: &[u8],
    mode: CorpusMode,
) -> Result<ParsedDocument> {
    let rec_err = |reason: &str| Error::Record {
        path: path.to_path_buf(),
        line,
        reason: reason.to_string(),
    };
    let given_id = ["doc_id", "id", "_id"].iter().find_map(|k| match v.get(k) {
        Some(Value::String(s)) if !s.trim().is_empty() => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    });
    let id = match given_id {
        Some(s) => DocId::new(s).map_err(|e| rec_err(&e.to_string()))?,
        None => DocId::new(format!("{file_id}#{line}")).map_err(|e| rec_err(&e.to_string()))?,
    };
    let source = format!("{}:{line}", path.display());
    if let Some(text) = v.get("text").and_then(Value::as_str) {
        if text.trim().is_empty() {
            return Err(rec_err("`text` is empty"));
        }
        let title = title_of(&v).unwrap_or_else(|| id.to_string());
        let mut d = whole(
            Path::new(&source),
            &id,
            title,
            DocFormat::CorpusLine,
            text.to_string(),
            raw,
        );
        d.date = date_of(&v);
        d.metadata = match v.get("metadata") {
            None | Some(Value::Null) => serde_json::Map::new(),
            Some(Value::Object(m)) => m.clone(),
            Some(_) => return Err(rec_err("`metadata` must be an object")),
        };
        return Ok(d);
    }
    if mode == CorpusMode::Corpus {
        return Err(rec_err("a corpus record needs a string `text` field"));
    }
    let title = title_of(&v).unwrap_or_else(|| id.to_string());
    let mut d = whole(
        Path::new(&source),
        &id,
        title,
        DocFormat::Json,
        render(&v),
        raw,
    );
    d.date = date_of(&v);
    Ok(d)
}

/// Renders JSON as `path: value` lines, so keys are searchable beside their values.
fn render(v: &Value) -> String {
    fn go(v: &Value, prefix: &str, out: &mut String) {
        match v {
            Value::Object(map) => {
                for (k, v) in map {
                    let p = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    go(v, &p, out);
                }
            }
            Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    go(v, &format!("{prefix}[{i}]"), out);
                }
            }
            Value::Null => {}
            Value::String(s) => line(prefix, s, out),
            other => line(prefix, &other.to_string(), out),
        }
    }
    fn line(prefix: &str, value: &str, out: &mut String) {
        if !prefix.is_empty() {
            out.push_str(prefix);
            out.push_str(": ");
        }
        out.push_str(value);
        out.push('\n');
    }
    let mut out = String::new();
    go(v, "", &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonl_corpus_lines_and_bad_lines() {
        let data =
            b"{\"doc_id\":\"a\",\"title\":\"A\",\"text\":\"alpha\"}\nnot json\n{\"title\":\"B\"}\n";
        let id = DocId::new("/c.jsonl").unwrap();
        let (docs, errs) = parse(Path::new("/c.jsonl"), &id, data, CorpusMode::Corpus).unwrap();
        assert_eq!(docs.len(), 1);
        assert_eq!(docs[0].id.as_str(), "a");
        assert_eq!(docs[0].format, DocFormat::CorpusLine);
        assert_eq!(errs.len(), 2);
        assert!(errs[0].to_string().contains("/c.jsonl:2"), "{}", errs[0]);
        assert!(errs[1].to_string().contains("needs a string `text`"));
    }

    #[test]
    fn arbitrary_json_is_rendered() {
        let data = br#"{"name":"Widget","specs":{"weight":3,"tags":["x","y"]}}"#;
        let id = DocId::new("/w.json").unwrap();
        let (docs, errs) = parse(Path::new("/w.json"), &id, data, CorpusMode::Auto).unwrap();
        assert!(errs.is_empty());
        assert_eq!(docs[0].title, "Widget");
        assert!(docs[0].text.contains("specs.weight: 3\n"));
        assert!(docs[0].text.contains("specs.tags[1]: y\n"));
    }
}
