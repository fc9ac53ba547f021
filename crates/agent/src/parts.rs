//! Yes/no questions about two things decided part by part: "Are A and B both ferns?",
//! "Were both A and B ESA astronauts?".
//!
//! A 1.5B writer answers such a question "yes" almost whatever its sources say (HotpotQA
//! gold, tuning half: "yes" to 13 of 13, of which 7 were "no"): the conjunction hides the
//! one part that fails. Asked of one thing at a time, over the same sources, it has one
//! fact to read. So the question is read here ([`BothQuestion::of`]: the two things and
//! the question asked of each), the model answers each part alone
//! ([`crate::prompts::part_verdict`]: the sentence that bears on it copied first), a verdict
//! counts only from a source about that thing that states the quote
//! ([`BothQuestion::belongs`], [`quoted`]), and the answer is made by [`decide`]: "yes" when
//! both parts hold, "no" when a part fails. Anything else (a part without a source about
//! it, an "unknown") decides nothing. Relations between the two ("the same country",
//! "share") are not parts and are left to the writer.
//!
//! Measured, the hypothesis failed for the default 1.5B model: it says "yes" to each part
//! as to the whole (no part answered "no" on the tuning half), so metarag runs this only
//! with `check_parts = true`, for models that can tell a part from the whole.

use crate::compare::{names, shown};
use crate::evidence::Source;
use crate::text::{content_terms, name_like, recall};

/// The stop reason of a run whose parts confirmed the written answer: the trace's record
/// that each part was answered from a source about it and the conjunction agreed (a
/// contradicted answer is recorded as a `Remediation::Parts` instead).
pub const PARTS_CONFIRM: &str = "the parts confirm the answer";

/// A yes/no question asked of two things at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BothQuestion {
    /// The two things, as the question names them.
    pub entities: [String; 2],
    /// What is asked of each ("species of ferns").
    pub predicate: String,
    /// The auxiliary a part starts with ("Is" for "Are").
    single: &'static str,
    /// "AUX both A and B P": where B ends and P begins is a guess from capitals ("Reinhold
    /// Ewald ESA astronauts"), which [`BothQuestion::fit`] settles against the sources.
    open_end: bool,
}

/// Auxiliaries a yes/no question starts with, with the singular a part takes.
const AUX: &[(&str, &str)] = &[
    ("are", "Is"),
    ("were", "Was"),
    ("is", "Is"),
    ("was", "Was"),
    ("do", "Does"),
    ("did", "Did"),
    ("does", "Does"),
    ("have", "Has"),
    ("has", "Has"),
    ("can", "Can"),
    ("could", "Could"),
];

/// Words that make the question a relation between the two, not a property of each.
const RELATIONAL: &[&str] = &[
    "same",
    "share",
    "shared",
    "common",
    "together",
    "related",
    "each other",
    "both of",
    "either",
    "neither",
    "than",
];

/// Lowercase words a name may have inside it ("Battle of the Somme").
const CONNECTORS: &[&str] = &[
    "of", "the", "de", "del", "la", "le", "von", "van", "and", "in",
];

impl BothQuestion {
    /// The two things and what is asked of them, when the question is "AUX A and B both
    /// P?" or "AUX both A and B P?" with one " and " between two names; `None` for
    /// anything else (a relation between the two, an "or", a list of three).
    pub fn of(question: &str) -> Option<BothQuestion> {
        let q = question.trim().trim_end_matches('?').trim();
        let lower = q.to_lowercase();
        if lower.len() != q.len() {
            // Byte offsets must agree between the two spellings.
            return None;
        }
        let padded = format!(" {lower} ");
        if RELATIONAL
            .iter()
            .any(|w| padded.contains(&format!(" {w} ")))
            || padded.contains(" or ")
        {
            return None;
        }
        let (aux, single) = AUX
            .iter()
            .find(|(a, _)| lower.starts_with(&format!("{a} ")))?;
        let rest = &q[aux.len() + 1..];
        let rest_lower = &lower[aux.len() + 1..];
        let (a, b, predicate, open_end) = if let Some(after) = rest_lower.strip_prefix("both ") {
            // "Were both A and B ESA astronauts": B is the name-like run after " and ".
            let body = &rest[5..];
            let and = unique(after, " and ")?;
            let (a, tail) = (&body[..and], &body[and + 5..]);
            let words: Vec<&str> = strip_lowercase(tail).split_whitespace().collect();
            let end = name_run(&words);
            if end == 0 {
                return None;
            }
            (
                a.to_string(),
                words[..end].join(" "),
                words[end..].join(" "),
                true,
            )
        } else {
            // "Are A and B both P".
            let both = unique(rest_lower, " both ")?;
            let pair = &rest[..both];
            let and = unique(&rest_lower[..both], " and ")?;
            (
                pair[..and].to_string(),
                pair[and + 5..].to_string(),
                rest[both + 6..].trim().to_string(),
                false,
            )
        };
        let (a, b) = (strip_lowercase(&a), strip_lowercase(&b));
        if a.is_empty() || b.is_empty() || a.contains(',') || b.contains(',') {
            return None;
        }
        if predicate.is_empty() && !open_end {
            return None;
        }
        Some(BothQuestion {
            entities: [a.to_string(), b.to_string()],
            predicate,
            single,
            open_end,
        })
    }

    /// The question asked of entity `i` alone ("Is Zorblatt Tide species of ferns?": the
    /// predicate keeps its number, which a reader copes with); `None` while nothing is
    /// known to be asked.
    pub fn part(&self, i: usize) -> Option<String> {
        (!self.predicate.is_empty())
            .then(|| format!("{} {} {}?", self.single, self.entities[i], self.predicate))
    }

    /// The question with its second name settled against the sources: when no source
    /// names the whole capitalised run after " and " but one names a shorter start of
    /// it, the rest of the run is the predicate's ("Reinhold Ewald" and "ESA
    /// astronauts"; "George Archainbaud" and "American").
    pub fn fit(mut self, sources: &[Source]) -> BothQuestion {
        if !self.open_end || sources.iter().any(|s| self.belongs(1, s)) {
            return self;
        }
        let words: Vec<String> = self.entities[1]
            .split_whitespace()
            .map(str::to_string)
            .collect();
        for n in (1..words.len()).rev() {
            let name = words[..n].join(" ");
            if sources.iter().any(|s| names(&shown(s), &name)) {
                let moved = words[n..].join(" ");
                self.predicate = format!("{moved} {}", self.predicate).trim().to_string();
                self.entities[1] = name;
                break;
            }
        }
        self
    }

    /// Whether `source` is about entity `i`: its title or text names it whole-word.
    pub fn belongs(&self, i: usize, source: &Source) -> bool {
        names(&shown(source), &self.entities[i])
    }
}

/// Whether `source` states `quote`: at least 80% of the quote's content terms are the
/// source's, the rule the facts check applies to its quotes ([`crate::verify`]; a small
/// model's copy drops or changes a word now and then). An empty quote is stated nowhere.
pub fn quoted(quote: &str, source: &Source) -> bool {
    let own = content_terms(&format!("{} {}", source.passage.title, source.text()));
    recall(&content_terms(quote), &own) >= 0.8
}

/// The answer the parts make: "yes" when both hold, "no" when either fails, `None`
/// unless each part has a verdict.
pub fn decide(verdicts: [Option<bool>; 2]) -> Option<&'static str> {
    match verdicts {
        [Some(false), _] | [_, Some(false)] => Some("no"),
        [Some(true), Some(true)] => Some("yes"),
        _ => None,
    }
}

/// The byte offset of the only occurrence of `needle` in `hay`.
fn unique(hay: &str, needle: &str) -> Option<usize> {
    let mut found = hay.match_indices(needle).map(|(i, _)| i);
    let first = found.next()?;
    found.next().is_none().then_some(first)
}

/// `text` from its first name-like word on ("the drinks Gibson" -> "Gibson"); all of it
/// when none is.
fn strip_lowercase(text: &str) -> &str {
    let text = text.trim();
    let mut at = 0;
    for word in text.split(' ') {
        if name_like(word) {
            return &text[at..];
        }
        at += word.len() + 1;
    }
    text
}

/// How many leading words form a name: name-like words, and connectors between them
/// ("Battle of the Somme").
fn name_run(words: &[&str]) -> usize {
    let mut end = 0;
    let mut i = 0;
    while i < words.len() {
        if name_like(words[i]) {
            i += 1;
            end = i;
        } else if end > 0 && CONNECTORS.contains(&words[i]) {
            i += 1;
        } else {
            break;
        }
    }
    end
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::evidence::test_source as source;

    fn parts(q: &str) -> Option<([String; 2], [String; 2])> {
        BothQuestion::of(q).map(|b| (b.entities.clone(), [b.part(0).unwrap(), b.part(1).unwrap()]))
    }

    #[test]
    fn both_questions_give_two_parts() {
        assert_eq!(
            parts("Are Zorblatt Tide and Quenmoor both species of ferns?"),
            Some((
                ["Zorblatt Tide".into(), "Quenmoor".into()],
                [
                    "Is Zorblatt Tide species of ferns?".into(),
                    "Is Quenmoor species of ferns?".into()
                ]
            ))
        );
        assert_eq!(
            parts("Were both Anna Veltz and Piet Ormund film directors?"),
            Some((
                ["Anna Veltz".into(), "Piet Ormund".into()],
                [
                    "Was Anna Veltz film directors?".into(),
                    "Was Piet Ormund film directors?".into()
                ]
            ))
        );
        let b =
            BothQuestion::of("Do the drinks Velt Ale and Ormund Stout both contain gin?").unwrap();
        assert_eq!(b.entities, ["Velt Ale".to_string(), "Ormund Stout".into()]);
        assert_eq!(b.part(1).unwrap(), "Does Ormund Stout contain gin?");
        let b = BothQuestion::of(
            "Were both the Battle of Quen Ford and the Siege of the Velt fought in May?",
        )
        .unwrap();
        assert_eq!(
            b.entities,
            [
                "Battle of Quen Ford".to_string(),
                "Siege of the Velt".into()
            ]
        );
    }

    #[test]
    fn the_second_name_is_settled_by_the_sources() {
        let q = "Were both Anna Veltz and Piet Ormund ESA astronauts?";
        let b = BothQuestion::of(q).unwrap();
        assert_eq!(b.entities[1], "Piet Ormund ESA");
        let pages = [
            source(1, "Anna Veltz", "Anna Veltz is a German astronaut."),
            source(2, "Piet Ormund", "Piet Ormund flew with ESA in 1999."),
        ];
        let b = b.fit(&pages);
        assert_eq!(b.entities[1], "Piet Ormund");
        assert_eq!(b.part(0).unwrap(), "Was Anna Veltz ESA astronauts?");
        assert!(b.belongs(1, &pages[1]) && !b.belongs(1, &pages[0]));
        // A predicate that is all capitals: nothing is asked until the sources settle it.
        let b = BothQuestion::of("Are both Anna Veltz and Piet Ormund American?").unwrap();
        assert_eq!(b.part(0), None);
        assert_eq!(b.fit(&pages).part(1).unwrap(), "Is Piet Ormund American?");
    }

    #[test]
    fn relations_lists_and_choices_are_not_parts() {
        for q in [
            "Are Zorblatt Tide and Quenmoor published in the same country?",
            "Do Zorblatt Tide and Quenmoor share a director?",
            "Is Zorblatt Tide or Quenmoor a fern?",
            "Are Zorblatt, Tide and Quenmoor both ferns?",
            "Are Salt and Pepper and Oil both spices?",
            "Who directed Zorblatt Tide and Quenmoor?",
            "Are both films directed by Anna Veltz?",
            "Are Zorblatt Tide and Quenmoor ferns?",
        ] {
            assert_eq!(BothQuestion::of(q), None, "{q}");
        }
    }

    #[test]
    fn a_quote_counts_when_its_words_are_the_sources() {
        let page = source(
            1,
            "Quenmoor",
            "Quenmoor is a genus of flowering shrubs in the heath family.",
        );
        assert!(quoted("Quenmoor is a genus of flowering shrubs", &page));
        assert!(quoted(
            "Quenmoor is a genus of flowering shrub in the heath family",
            &page
        ));
        assert!(!quoted("Quenmoor is a species of ferns", &page));
        assert!(!quoted("", &page));
    }

    #[test]
    fn a_failed_part_makes_no_and_a_missing_one_nothing() {
        assert_eq!(decide([Some(true), Some(true)]), Some("yes"));
        assert_eq!(decide([Some(true), Some(false)]), Some("no"));
        assert_eq!(decide([None, Some(false)]), Some("no"));
        assert_eq!(decide([Some(true), None]), None);
        assert_eq!(decide([None, None]), None);
    }
}
