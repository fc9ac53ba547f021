//! The normalised multi-hop QA record (one JSON object per line).

use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One context paragraph of a question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QaContext {
    /// Paragraph title (a Wikipedia article title).
    pub title: String,
    /// Paragraph text.
    pub text: String,
    /// Whether it is one of the gold supporting paragraphs.
    #[serde(default)]
    pub is_supporting: bool,
}

/// A question with its answers and gold evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QaRecord {
    /// The data set's own id.
    pub id: String,
    /// `hotpotqa`, `2wikimultihopqa` or `musique`.
    #[serde(default)]
    pub dataset: String,
    /// The question.
    pub question: String,
    /// Canonical answer first, then aliases.
    #[serde(default)]
    pub answers: Vec<String>,
    /// Question type (bridge, comparison, 2hop...).
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
    /// Titles of the gold paragraphs.
    #[serde(default)]
    pub supporting_titles: Vec<String>,
    /// The context paragraphs in the data set's order.
    #[serde(default)]
    pub contexts: Vec<QaContext>,
}

/// Loads every record of a JSONL file; the first bad line is an error naming it.
pub fn load_jsonl(path: &Path) -> Result<Vec<QaRecord>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::Io {
        path: path.to_path_buf(),
        source: e,
    })?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let rec: QaRecord = serde_json::from_str(line).map_err(|e| Error::Record {
            path: path.to_path_buf(),
            line: i + 1,
            reason: e.to_string(),
        })?;
        out.push(rec);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_line_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("q.jsonl");
        std::fs::write(
            &p,
            "{\"id\":\"1\",\"question\":\"q?\",\"type\":\"bridge\"}\n{\"id\":2}\n",
        )
        .unwrap();
        let err = load_jsonl(&p).unwrap_err().to_string();
        assert!(err.contains("q.jsonl:2"), "{err}");
    }
}
