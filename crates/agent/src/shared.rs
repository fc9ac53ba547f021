//! What two things share, read in code: "What profession do A and B share?", "A and B
//! are both what type of film?", "In what city can a person find both A and B?".
//!
//! The answer to such a question is something both things' own pages state. So a written
//! answer is checked against them ([`SharedQuestion::confirms`]): the two things are the
//! pages whose titles the question joins with "and" ([`SharedQuestion::things`]), the
//! answer's terms less the question's own ([`crate::attribute::terms`]: stems, countries
//! as demonyms) are what it adds, and when both pages state every one of them the answer
//! is confirmed, with no model call.
//!
//! The check only confirms. A page that words the shared thing otherwise ("author" where
//! the other says "writer", "film-maker" for "director") would make a contradiction wrong,
//! and a contradiction has no answer to put in the written one's place; so anything short
//! of both pages stating the answer leaves it to the monitor. Read on HotpotQA open's
//! tuning half (docs/results/monitor.md), the answers it confirmed were all right (6 of 6
//! on one record, 5 of 5 on the other).

use crate::attribute::{bare, page_of, terms};
use crate::compare::words;
use crate::evidence::Source;
use crate::monitor::AnswerForm;
use std::collections::BTreeSet;

/// The stop reason of a run whose two things' own pages both state the written answer
/// ([`SharedQuestion::confirms`]).
pub const SHARED_CONFIRM: &str = "both pages state the answer";

/// Words that make a question ask what two things have in common.
const SHARING: &[&str] = &["both", "share", "shared", "shares", "common"];

/// Question words of a question that asks for a thing, not a verdict.
const ASKING: &[&str] = &["what", "which", "who", "whom", "where"];

/// A question that asks what two things have in common.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedQuestion {
    /// The question's words, lowercased and space-separated with a space at each end
    /// ([`words`]), where the things' titles are looked for.
    spaced: String,
    /// The question's own terms ([`terms`]): an answer is checked on what it adds to
    /// them ("documentary" to "What type of film are both A and B?"), not on "film".
    own: BTreeSet<String>,
}

/// What confirmed a written answer: the two things, the answer's terms both their pages
/// state, and each thing's first page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shared {
    /// The two things, as their pages' titles read in the question's words.
    pub things: [String; 2],
    /// The answer's terms beyond the question's own, every one stated by both pages.
    pub terms: BTreeSet<String>,
    /// For each thing, the number of its first own page among the sources.
    pub pages: [usize; 2],
}

impl SharedQuestion {
    /// Reads `question` as one that asks what two things share, or `None`: a question for
    /// a name or a phrase (not yes/no, not "A or B", not a date or a number) that asks
    /// with "what", "which", "who", "whom" or "where", says "both", "share" or "in
    /// common", and joins two things with "and".
    pub fn of(question: &str) -> Option<SharedQuestion> {
        if !matches!(
            AnswerForm::of(question),
            AnswerForm::Name | AnswerForm::Free
        ) {
            return None;
        }
        let spaced = words(question);
        let said = |list: &[&str]| list.iter().any(|w| spaced.contains(&format!(" {w} ")));
        (said(SHARING) && said(ASKING) && spaced.contains(" and ")).then(|| SharedQuestion {
            own: terms(question),
            spaced,
        })
    }

    /// The two things the question joins with "and" ("A and B", "A and the B"), as the
    /// titles of pages among `sources`; `None` unless exactly one such pair is found. A
    /// title inside another one the question names ("York" in "New York") is not a thing
    /// of its own.
    pub fn things(&self, sources: &[Source]) -> Option<[String; 2]> {
        let mut titles: Vec<String> = sources
            .iter()
            .map(|s| bare(&s.passage.title))
            .filter(|t| !t.is_empty() && self.spaced.contains(&format!(" {t} ")))
            .collect();
        titles.sort();
        titles.dedup();
        let inside =
            |t: &String, u: &String| t != u && format!(" {u} ").contains(&format!(" {t} "));
        let titles: Vec<&String> = titles
            .iter()
            .filter(|t| !titles.iter().any(|u| inside(t, u)))
            .collect();
        let mut pairs = titles.iter().flat_map(|a| {
            titles.iter().filter_map(move |b| {
                let joined = [format!(" {a} and {b} "), format!(" {a} and the {b} ")];
                (a != b && joined.iter().any(|j| self.spaced.contains(j.as_str())))
                    .then(|| [a.to_string(), b.to_string()])
            })
        });
        let first = pairs.next()?;
        pairs.next().is_none().then_some(first)
    }

    /// Whether both things' own pages state `short_answer`: every term it adds to the
    /// question's own, each stated by some page of each thing. `None` when they do not,
    /// when the two things are not found ([`SharedQuestion::things`]), or when the answer
    /// adds nothing (a verdict, a restatement of the question).
    pub fn confirms(&self, short_answer: &str, sources: &[Source]) -> Option<Shared> {
        let added: BTreeSet<String> = terms(short_answer)
            .into_iter()
            .filter(|t| !self.own.contains(t) && t != "yes" && t != "no")
            .collect();
        if added.is_empty() {
            return None;
        }
        let things = self.things(sources)?;
        let mut pages = [0; 2];
        for (i, thing) in things.iter().enumerate() {
            let own: Vec<&Source> = sources.iter().filter(|s| page_of(s, thing)).collect();
            let stated: BTreeSet<String> = own
                .iter()
                .flat_map(|s| terms(&format!("{} {}", s.passage.title, s.passage.text)))
                .collect();
            if !added.is_subset(&stated) {
                return None;
            }
            pages[i] = own.first()?.n;
        }
        Some(Shared {
            things,
            terms: added,
            pages,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::test_source as source;

    fn pages() -> Vec<Source> {
        vec![
            source(1, "Orla Venn", "Orla Venn is an Irish novelist and poet."),
            source(
                2,
                "Tamsin Quell (writer)",
                "Tamsin Quell was a Welsh novelist.",
            ),
            source(3, "Dublin", "Dublin is the capital of Ireland."),
        ]
    }

    #[test]
    fn questions_about_what_two_things_share_are_read() {
        for q in [
            "What profession do Orla Venn and Tamsin Quell share?",
            "Orla Venn and Tamsin Quell were both part of what shared profession?",
            "What occupation did Orla Venn and Tamsin Quell have in common?",
            "In what city can a person find both the Zorb Tower and the Quen Mosque?",
        ] {
            assert!(SharedQuestion::of(q).is_some(), "{q}");
        }
        for q in [
            "Are Orla Venn and Tamsin Quell both novelists?",
            "Who was born first, Orla Venn or Tamsin Quell?",
            "When did Orla Venn and Tamsin Quell both publish?",
            "What did Orla Venn write?",
            "How many novels do Orla Venn and Tamsin Quell share?",
        ] {
            assert_eq!(SharedQuestion::of(q), None, "{q}");
        }
    }

    #[test]
    fn the_things_are_the_pages_the_question_joins_with_and() {
        let q = SharedQuestion::of("What profession do Orla Venn and Tamsin Quell share?").unwrap();
        assert_eq!(
            q.things(&pages()),
            Some(["orla venn".to_string(), "tamsin quell".to_string()])
        );
        // One thing without a page: no pair.
        assert_eq!(q.things(&pages()[..1]), None);
        // A title of its own inside the pair ("Andrew and Jeremy Wed" holds "Andrew").
        let q = SharedQuestion::of(
            "Both Andrew and Jeremy Wed and The Lost Lions are what type of films?",
        )
        .unwrap();
        let films = [
            source(1, "Andrew", "Andrew is a given name."),
            source(
                2,
                "Andrew and Jeremy Wed",
                "Andrew and Jeremy Wed is a documentary film.",
            ),
            source(
                3,
                "The Lost Lions",
                "The Lost Lions is a 2011 documentary film.",
            ),
        ];
        assert_eq!(
            q.things(&films),
            Some([
                "andrew and jeremy wed".to_string(),
                "lost lions".to_string()
            ])
        );
        let c = q.confirms("documentary", &films).unwrap();
        assert_eq!(c.pages, [2, 3]);
        assert_eq!(c.terms, terms("documentary"));
    }

    #[test]
    fn an_answer_both_pages_state_is_confirmed_and_nothing_else_is_judged() {
        let q = SharedQuestion::of("What profession do Orla Venn and Tamsin Quell share?").unwrap();
        let c = q.confirms("novelist", &pages()).unwrap();
        assert_eq!(
            c.things,
            ["orla venn".to_string(), "tamsin quell".to_string()]
        );
        assert_eq!(c.pages, [1, 2]);
        // One page does not state it: undecided, not contradicted.
        assert_eq!(q.confirms("poet", &pages()), None);
        // Every term must be on both pages.
        assert_eq!(q.confirms("novelist and poet", &pages()), None);
        // An answer that adds nothing to the question is no answer to check.
        assert_eq!(q.confirms("profession", &pages()), None);
        assert_eq!(q.confirms("yes", &pages()), None);
        // Countries are read as demonyms, as the attribute check reads them.
        let q =
            SharedQuestion::of("Orla Venn and Tamsin Quell are both from which country?").unwrap();
        let irish = [
            source(1, "Orla Venn", "Orla Venn is an Irish novelist."),
            source(2, "Tamsin Quell", "Tamsin Quell is an Irish poet."),
        ];
        assert!(q.confirms("Ireland", &irish).is_some());
        assert_eq!(q.confirms("Wales", &irish), None);
    }
}
