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
    /// For a question reworded from another (`*-reworded.jsonl`), the original's id: the
    /// split follows it, so a wording and its original fall in the same half.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original_id: Option<String>,
    /// The corpus does not answer it: its gold is "no answer", and a strategy is right
    /// only if it withholds one ([`crate::truth`]). Set in a file, or by
    /// [`crate::unanswerable::make_unanswerable`], which also removes its supporting
    /// passages.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unanswerable: bool,
}

impl QaRecord {
    /// The id the split is drawn from: the original's for a reworded question.
    pub fn split_id(&self) -> &str {
        self.original_id.as_deref().unwrap_or(&self.id)
    }
}

/// Loads questions from any supported layout: the normalised JSONL, HotpotQA's official
/// JSON (`hotpot_dev_distractor_v1.json`), 2WikiMultiHopQA's `dev.json`, or MuSiQue's
/// `musique_ans_v1.0_dev.jsonl`. The layout is read from the records themselves.
pub fn load_dataset(path: &Path) -> Result<Vec<QaRecord>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::Io {
        path: path.to_path_buf(),
        source: e,
    })?;
    let record_err = |line: usize, reason: String| Error::Record {
        path: path.to_path_buf(),
        line,
        reason,
    };
    if text.trim_start().starts_with('[') {
        let items: Vec<serde_json::Value> =
            serde_json::from_str(&text).map_err(|e| record_err(e.line(), e.to_string()))?;
        return items
            .iter()
            .enumerate()
            .map(|(i, v)| {
                official_hotpot_style(v).ok_or_else(|| {
                    record_err(
                        i + 1,
                        "not a HotpotQA/2Wiki record (needs _id, question, answer, context)".into(),
                    )
                })
            })
            .collect();
    }
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: serde_json::Value =
            serde_json::from_str(line).map_err(|e| record_err(i + 1, e.to_string()))?;
        let rec = if v.get("paragraphs").is_some() {
            musique(&v)
                .map(without_answers_if_unanswerable)
                .ok_or_else(|| {
                    record_err(
                        i + 1,
                        "not a MuSiQue record (needs id, question, answer, paragraphs)".into(),
                    )
                })?
        } else {
            serde_json::from_value(v).map_err(|e| record_err(i + 1, e.to_string()))?
        };
        out.push(without_answers_if_unanswerable(rec));
    }
    Ok(out)
}

/// A question its file flags as unanswerable has no gold answer, whatever answers it
/// lists (MuSiQue's full set keeps the answer of the question it was made from).
fn without_answers_if_unanswerable(mut rec: QaRecord) -> QaRecord {
    if rec.unanswerable {
        rec.answers.clear();
    }
    rec
}

/// HotpotQA and 2WikiMultiHopQA share a layout: `context` is `[[title, [sentences]]]` and
/// `supporting_facts` is `[[title, sentence index]]`; 2Wiki adds `evidences`.
fn official_hotpot_style(v: &serde_json::Value) -> Option<QaRecord> {
    let str_of = |k: &str| {
        v.get(k)
            .and_then(serde_json::Value::as_str)
            .map(str::to_string)
    };
    let mut supporting_titles: Vec<String> = Vec::new();
    for fact in v.get("supporting_facts")?.as_array()? {
        let title = fact.get(0)?.as_str()?.to_string();
        if !supporting_titles.contains(&title) {
            supporting_titles.push(title);
        }
    }
    let mut contexts = Vec::new();
    for c in v.get("context")?.as_array()? {
        let title = c.get(0)?.as_str()?.to_string();
        let sentences: Vec<&str> = c
            .get(1)?
            .as_array()?
            .iter()
            .filter_map(serde_json::Value::as_str)
            .collect();
        contexts.push(QaContext {
            is_supporting: supporting_titles.contains(&title),
            title,
            text: sentences.concat(),
        });
    }
    Some(QaRecord {
        id: str_of("_id")?,
        dataset: if v.get("evidences").is_some() {
            "2wikimultihopqa"
        } else {
            "hotpotqa"
        }
        .into(),
        question: str_of("question")?,
        answers: vec![str_of("answer")?],
        kind: str_of("type"),
        supporting_titles,
        contexts,
        original_id: None,
        unanswerable: false,
    })
}

/// MuSiQue: `paragraphs` with `is_supporting`, answer plus `answer_aliases`; the type is the
/// id's prefix (`2hop`, `3hop1`, ...).
fn musique(v: &serde_json::Value) -> Option<QaRecord> {
    let id = v.get("id")?.as_str()?.to_string();
    let mut answers = vec![v.get("answer")?.as_str()?.to_string()];
    if let Some(aliases) = v
        .get("answer_aliases")
        .and_then(serde_json::Value::as_array)
    {
        answers.extend(
            aliases
                .iter()
                .filter_map(serde_json::Value::as_str)
                .map(str::to_string),
        );
    }
    let mut contexts = Vec::new();
    for p in v.get("paragraphs")?.as_array()? {
        contexts.push(QaContext {
            title: p.get("title")?.as_str()?.to_string(),
            text: p.get("paragraph_text")?.as_str()?.to_string(),
            is_supporting: p
                .get("is_supporting")
                .and_then(serde_json::Value::as_bool)
                .unwrap_or(false),
        });
    }
    let supporting_titles = contexts
        .iter()
        .filter(|c| c.is_supporting)
        .map(|c| c.title.clone())
        .collect();
    Some(QaRecord {
        kind: id.split("__").next().map(str::to_string),
        id,
        dataset: "musique".into(),
        question: v.get("question")?.as_str()?.to_string(),
        answers,
        supporting_titles,
        contexts,
        original_id: None,
        // MuSiQue's full set pairs each question with an unanswerable twin.
        unanswerable: v.get("answerable").and_then(serde_json::Value::as_bool) == Some(false),
    })
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
        let err = load_dataset(&p).unwrap_err().to_string();
        assert!(err.contains("q.jsonl:2"), "{err}");
    }

    #[test]
    fn a_question_flagged_unanswerable_has_no_gold_answer() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("q.jsonl");
        std::fs::write(
            &p,
            "{\"id\":\"1\",\"question\":\"Which queue?\",\"answers\":[\"Kafka\"],\"unanswerable\":true}\n\
             {\"id\":\"2\",\"question\":\"Which port?\",\"answers\":[\"5432\"]}\n",
        )
        .unwrap();
        let r = load_dataset(&p).unwrap();
        assert!(r[0].unanswerable && r[0].answers.is_empty());
        assert!(!r[1].unanswerable && r[1].answers == ["5432"]);
    }

    #[test]
    fn official_layouts() {
        let dir = tempfile::tempdir().unwrap();
        let hotpot = dir.path().join("hotpot_dev_distractor_v1.json");
        std::fs::write(
            &hotpot,
            r#"[{"_id":"h1","question":"Q?","answer":"yes","type":"comparison","level":"hard",
            "supporting_facts":[["A",0],["B",1],["A",1]],
            "context":[["A",["A one. ","A two."]],["B",["B one. ","B two."]],["C",["C."]]]}]"#,
        )
        .unwrap();
        let r = load_dataset(&hotpot).unwrap();
        assert_eq!(r[0].dataset, "hotpotqa");
        assert_eq!(r[0].supporting_titles, ["A", "B"]);
        assert_eq!(r[0].contexts[0].text, "A one. A two.");
        assert!(r[0].contexts[1].is_supporting && !r[0].contexts[2].is_supporting);
        assert_eq!(r[0].kind.as_deref(), Some("comparison"));

        let wiki = dir.path().join("dev.json");
        std::fs::write(
            &wiki,
            r#"[{"_id":"w1","type":"compositional","question":"Q?","answer":"X",
            "supporting_facts":[["A",0]],"context":[["A",["a."]]],"evidences":[["s","r","o"]]}]"#,
        )
        .unwrap();
        assert_eq!(load_dataset(&wiki).unwrap()[0].dataset, "2wikimultihopqa");

        let musique_path = dir.path().join("musique_ans_v1.0_dev.jsonl");
        std::fs::write(&musique_path, r#"{"id":"2hop__1_2","question":"Q?","answer":"X","answer_aliases":["Ex"],"answerable":true,"paragraphs":[{"idx":0,"title":"T0","paragraph_text":"p0","is_supporting":true},{"idx":1,"title":"T1","paragraph_text":"p1","is_supporting":false}]}"#).unwrap();
        let m = load_dataset(&musique_path).unwrap();
        assert_eq!(
            (m[0].kind.as_deref(), m[0].answers.len()),
            (Some("2hop"), 2)
        );
        assert_eq!(m[0].supporting_titles, ["T0"]);

        let bad = dir.path().join("bad.json");
        std::fs::write(&bad, r#"[{"_id":"x"}]"#).unwrap();
        assert!(
            load_dataset(&bad)
                .unwrap_err()
                .to_string()
                .contains("bad.json:1")
        );
    }

    #[test]
    fn normalised_samples_load() {
        let qa = metarag_testkit::qa_dir();
        for (file, n) in [
            ("hotpotqa-dev.jsonl", 500),
            ("2wikimultihopqa-dev.jsonl", 500),
            ("musique-dev.jsonl", 200),
        ] {
            let r = load_dataset(&qa.join(file)).unwrap();
            assert_eq!(r.len(), n, "{file}");
            assert!(
                r.iter()
                    .all(|q| !q.answers.is_empty() && !q.contexts.is_empty()),
                "{file}"
            );
        }
    }
}
