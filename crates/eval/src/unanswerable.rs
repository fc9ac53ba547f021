//! Unanswerable questions, built from answerable ones (issue 68): a deterministic share of
//! a run's questions lose their supporting passages (from the indexed corpus in the open
//! protocol, from the question's context in the gold one), and their gold answer becomes
//! "no answer". A strategy is then scored on whether it withholds an answer there
//! ([`crate::truth`]) as well as on the questions it can answer.
//!
//! The draw hashes the question's id (FNV-1a 64 of `unanswerable:` + id), so the same
//! questions are drawn in every run and by every strategy. A drawn question whose supporting
//! passages another question of the run also needs is left answerable: removing them would
//! silently take the other question's evidence too, and that question would be scored as
//! answerable without its sources.

use crate::dataset::QaRecord;
use crate::{Error, Result};
use std::collections::{BTreeSet, HashSet};
use std::io::{BufRead, BufWriter, Write};
use std::path::Path;

/// The share of questions the issue asks for.
pub const DEFAULT_SHARE: f64 = 0.3;

/// FNV-1a 64 of `bytes`.
fn fnv(bytes: impl Iterator<Item = u8>) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Whether the question `id` is drawn at `share` (in `[0, 1]`).
pub fn drawn(id: &str, share: f64) -> bool {
    let h = fnv("unanswerable:".bytes().chain(id.bytes()));
    // The high bits: the low ones of FNV-1a vary little between ids that differ only in
    // their last characters.
    ((h >> 40) % 10_000) as f64 / 10_000.0 < share
}

/// A run's questions with a share made unanswerable.
#[derive(Debug, Clone, PartialEq)]
pub struct Unanswerable {
    /// The questions, in their order; the unanswerable ones flagged
    /// ([`QaRecord::unanswerable`]) with no gold answer.
    pub questions: Vec<QaRecord>,
    /// Titles of the passages to remove from the corpus.
    pub removed: BTreeSet<String>,
    /// Questions drawn but left answerable because another question needs one of their
    /// supporting passages, or because they name none.
    pub kept: usize,
}

impl Unanswerable {
    /// A name for the corpus without the removed passages: the same removals, the same
    /// name, so its index is built once and reused by every run that removes them.
    pub fn corpus_tag(&self) -> String {
        let titles = self.removed.iter().flat_map(|t| t.bytes().chain([b'\n']));
        format!("without-{:016x}", fnv(titles))
    }

    /// How many questions are unanswerable.
    pub fn count(&self) -> usize {
        self.questions.iter().filter(|q| q.unanswerable).count()
    }
}

/// Makes the questions drawn at `share` unanswerable (see the module's doc). A question
/// its file already flags is unanswerable as it is: the file says the corpus does not
/// answer it, so nothing is removed for it and it is not drawn.
pub fn make_unanswerable(questions: Vec<QaRecord>, share: f64) -> Unanswerable {
    let draw = |q: &QaRecord| !q.unanswerable && drawn(q.split_id(), share);
    // Every title a question that stays answerable needs.
    let needed: HashSet<&str> = questions
        .iter()
        .filter(|q| !q.unanswerable && !draw(q))
        .flat_map(|q| q.supporting_titles.iter().map(String::as_str))
        .collect();
    let mut removed = BTreeSet::new();
    let mut kept = 0;
    let mut flags = Vec::with_capacity(questions.len());
    for q in &questions {
        let remove = draw(q)
            && !q.supporting_titles.is_empty()
            && q.supporting_titles
                .iter()
                .all(|t| !needed.contains(t.as_str()));
        if draw(q) && !remove {
            kept += 1;
        }
        if remove {
            removed.extend(q.supporting_titles.iter().cloned());
        }
        flags.push(remove);
    }
    let questions = questions
        .into_iter()
        .zip(flags)
        .map(|(mut q, remove)| {
            if remove {
                q.unanswerable = true;
                q.answers.clear();
            }
            q
        })
        .collect();
    Unanswerable {
        questions,
        removed,
        kept,
    }
}

/// Copies the corpus (`{doc_id, title, text}` lines) to `out` without the passages titled
/// in `removed`; returns how many lines were left out. A line that is not JSON with a
/// `title` is an error naming the file and line.
pub fn filter_corpus(corpus: &Path, removed: &BTreeSet<String>, out: &Path) -> Result<usize> {
    let input = std::fs::File::open(corpus).map_err(|e| Error::io(corpus, e))?;
    let tmp = out.with_extension("jsonl.partial");
    let file = std::fs::File::create(&tmp).map_err(|e| Error::io(&tmp, e))?;
    let mut w = BufWriter::new(file);
    let mut dropped = 0;
    for (i, line) in std::io::BufReader::new(input).lines().enumerate() {
        let line = line.map_err(|e| Error::io(corpus, e))?;
        if line.trim().is_empty() {
            continue;
        }
        let bad = |reason: String| Error::Record {
            path: corpus.to_path_buf(),
            line: i + 1,
            reason,
        };
        let value: serde_json::Value =
            serde_json::from_str(&line).map_err(|e| bad(e.to_string()))?;
        let Some(title) = value.get("title").and_then(|t| t.as_str()) else {
            return Err(bad("no \"title\"".into()));
        };
        if removed.contains(title) {
            dropped += 1;
            continue;
        }
        writeln!(w, "{line}").map_err(|e| Error::io(&tmp, e))?;
    }
    w.flush().map_err(|e| Error::io(&tmp, e))?;
    drop(w);
    // Renamed into place whole, so an interrupted copy is never read as the corpus.
    std::fs::rename(&tmp, out).map_err(|e| Error::io(out, e))?;
    Ok(dropped)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(id: &str, titles: &[&str]) -> QaRecord {
        QaRecord {
            id: id.into(),
            dataset: "test".into(),
            question: format!("question {id}"),
            answers: vec![format!("answer {id}")],
            kind: None,
            supporting_titles: titles.iter().map(|t| t.to_string()).collect(),
            contexts: Vec::new(),
            original_id: None,
            unanswerable: false,
        }
    }

    #[test]
    fn the_draw_is_deterministic_and_near_its_share() {
        let ids: Vec<String> = (0..2000).map(|i| format!("{i:05x}ab")).collect();
        let n = ids.iter().filter(|id| drawn(id, 0.3)).count();
        assert!((500..700).contains(&n), "{n}");
        assert!(ids.iter().all(|id| drawn(id, 0.3) == drawn(id, 0.3)));
        assert!(ids.iter().all(|id| !drawn(id, 0.0) && drawn(id, 1.0)));
    }

    #[test]
    fn drawn_questions_lose_their_passages_unless_another_question_needs_them() {
        let all = make_unanswerable(
            vec![q("a", &["A1", "A2"]), q("b", &["B1"]), q("c", &[])],
            1.0,
        );
        assert_eq!(
            all.removed,
            ["A1", "A2", "B1"].map(String::from).into_iter().collect()
        );
        assert!(
            all.questions[..2]
                .iter()
                .all(|q| q.unanswerable && q.answers.is_empty())
        );
        // No supporting titles: nothing to remove, so it stays answerable.
        assert!(!all.questions[2].unanswerable);
        assert_eq!(all.kept, 1);

        // Find a drawn id and an undrawn one at 0.3, then make them share a passage.
        let ids: Vec<String> = (0..100).map(|i| format!("q{i}x")).collect();
        let yes = ids.iter().find(|id| drawn(id, 0.3)).unwrap();
        let no = ids.iter().find(|id| !drawn(id, 0.3)).unwrap();
        let shared = make_unanswerable(vec![q(yes, &["S", "Y1"]), q(no, &["S"])], 0.3);
        assert!(shared.removed.is_empty());
        assert!(shared.questions.iter().all(|q| !q.unanswerable));
        assert_eq!(shared.kept, 1);
        let apart = make_unanswerable(vec![q(yes, &["Y1"]), q(no, &["S"])], 0.3);
        assert_eq!(apart.removed, ["Y1".to_string()].into());
        assert!(apart.questions[0].unanswerable && !apart.questions[1].unanswerable);

        // A question its file flags stays as it is: nothing removed for it.
        let mut flagged = q("d", &["D1"]);
        flagged.unanswerable = true;
        let file = make_unanswerable(vec![flagged.clone()], 1.0);
        assert!(file.removed.is_empty());
        assert_eq!(file.questions, [flagged]);
        assert_eq!(file.kept, 0);
    }

    #[test]
    fn the_filtered_corpus_has_no_removed_passage_and_every_other_one() {
        let dir = tempfile::tempdir().unwrap();
        let corpus = dir.path().join("c.jsonl");
        std::fs::write(
            &corpus,
            "{\"doc_id\":\"1\",\"title\":\"A1\",\"text\":\"x\"}\n\n{\"doc_id\":\"2\",\"title\":\"B1\",\"text\":\"y\"}\n{\"doc_id\":\"3\",\"title\":\"A1\",\"text\":\"z\"}\n",
        )
        .unwrap();
        let out = dir.path().join("out.jsonl");
        let removed: BTreeSet<String> = ["A1".to_string()].into();
        assert_eq!(filter_corpus(&corpus, &removed, &out).unwrap(), 2);
        let kept = std::fs::read_to_string(&out).unwrap();
        assert_eq!(kept, "{\"doc_id\":\"2\",\"title\":\"B1\",\"text\":\"y\"}\n");
        // A line without a title is named.
        std::fs::write(&corpus, "{\"doc_id\":\"1\"}\n").unwrap();
        let e = filter_corpus(&corpus, &removed, &out).unwrap_err();
        assert!(e.to_string().contains("c.jsonl:1: no \"title\""), "{e}");
    }
}
