//! Questions about a person the question names only through a relation: "Where was the
//! director of film X born?", "When did X's father die?", "What nationality is the
//! performer of song X?".
//!
//! Such a question is two lookups: the bridge (who directed X, as X's page states it), then
//! the attribute asked of that person (where they were born, as their own page states it).
//! Given both pages at once, a 1.5B writer often answers from the wrong page: the film's
//! release date for "where", the person the question names instead of their father, the
//! bridge person's name instead of their birthplace. Each lookup alone is within its
//! reach. So the question is read here ([`LinkedQuestion::of`]), the bridge is asked alone
//! and kept only if a source about X names it, the question is asked again about the bridge
//! person by name ([`LinkedQuestion::about`]), and that answer is kept only if a source
//! about that person states it ([`crate::kin::stated`]). Anything unsure decides nothing.

use crate::compare::words;
use crate::kin::{KinshipChain, Relation};
use crate::text::{NAME_JOINERS, name_like};

/// The stop reason of a run whose linked question confirmed the written answer (a
/// contradicted answer is recorded as a `Remediation::Link` instead).
pub const LINK_CONFIRM: &str = "the linked question confirms the answer";

/// Relations a question names a person through, as "the R of X" writes them, with the
/// relation as asked of X and, for a relative, its kinship link. A film or song word after
/// the relation belongs to it ("the director of film X": X is the film's title).
const RELATIONS: &[(&str, &str, Option<Relation>)] = &[
    ("director of film ", "director", None),
    ("director of the film ", "director", None),
    ("performer of song ", "performer", None),
    ("performer of the song ", "performer", None),
    ("composer of film ", "composer", None),
    ("composer of song ", "composer", None),
    ("producer of film ", "producer", None),
    ("father of ", "father", Some(Relation::Father)),
    ("mother of ", "mother", Some(Relation::Mother)),
    ("husband of ", "husband", Some(Relation::Spouse)),
    ("wife of ", "wife", Some(Relation::Spouse)),
    ("spouse of ", "spouse", Some(Relation::Spouse)),
];

/// Relatives as "X's R" writes them.
const POSSESSED: &[(&str, Relation)] = &[
    ("father", Relation::Father),
    ("mother", Relation::Mother),
    ("husband", Relation::Spouse),
    ("wife", Relation::Spouse),
    ("spouse", Relation::Spouse),
];

/// The words a question about a linked person may start with: a yes/no question or a
/// comparison is some other check's.
const ASKING: &[&str] = &[
    "where", "when", "what", "which", "who", "whom", "why", "how", "in",
];

/// A bridge found in a question: its byte range, what it names, the relation.
struct Bridge {
    start: usize,
    end: usize,
    entity: (usize, usize),
    relation: &'static str,
    kin: Option<Relation>,
}

/// A question that asks something of a person it names only through a relation to a named
/// thing or person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkedQuestion {
    /// What the question names ("Hellcats Of The Navy", "Kirsten Flagstad").
    pub entity: String,
    /// The relation asked of it ("director", "father").
    pub relation: &'static str,
    /// The relation as a kinship link, where it is one (asked with the kin node's prompts).
    pub kin: Option<Relation>,
    /// A relative of the bridge person, where that is what the question asks ("Who is the
    /// father of the director of film X?").
    pub asks: Option<Relation>,
    prefix: String,
    suffix: String,
}

impl LinkedQuestion {
    /// Reads "Where was the director of film X born?", "What is the place of birth of X's
    /// husband?", "Who is the spouse of the performer of song X?". `None` for a question
    /// that names no such bridge or more than one, a yes/no question, an "A or B" question,
    /// a kinship chain ([`KinshipChain`]), and one whose answer is the bridge itself ("Who
    /// is the director of film X?").
    pub fn of(question: &str) -> Option<LinkedQuestion> {
        let q = question.trim().trim_end_matches('?').trim_end();
        let lower = q.to_lowercase();
        // Byte offsets are shared with `q` only where lower-casing kept every length.
        if lower.len() != q.len()
            || KinshipChain::of(question).is_some()
            || crate::text::options(question).is_some()
        {
            return None;
        }
        let first = lower.split_whitespace().next()?;
        if !ASKING.contains(&first) {
            return None;
        }
        // Each bridge found: its byte range in the question, what it names, the relation.
        let mut found: Vec<Bridge> = Vec::new();
        // "the R of X": X runs over the name-like words after the relation.
        for (phrase, relation, kin) in RELATIONS {
            for (at, _) in lower.match_indices(phrase) {
                let after = at + phrase.len();
                if at > 0 && !lower[..at].ends_with(' ') {
                    continue; // "grandfather of"
                }
                // "director of film" is read once, not again as "director of".
                if found.iter().any(|f| at >= f.start && at < f.end) {
                    continue;
                }
                let end = after + name_span(&q[after..]);
                // "the father of Nim's actress" asks of the actress, not Nim; "the director
                // of film X 's birthday" is the director's.
                let possessive = ["'s", "\u{2019}s"]
                    .iter()
                    .any(|m| q[end..].trim_start().starts_with(m));
                if possessive && kin.is_some() {
                    continue;
                }
                if end > after {
                    let start = if lower[..at].ends_with("the ") {
                        at - 4
                    } else {
                        at
                    };
                    found.push(Bridge {
                        start,
                        end,
                        entity: (after, end),
                        relation,
                        kin: *kin,
                    });
                }
            }
        }
        // "X's R": X runs back over the name-like words before the possessive.
        for (word, kin) in POSSESSED {
            for mark in ["'s ", "\u{2019}s "] {
                let pat = format!("{mark}{word}");
                for (at, _) in lower.match_indices(&pat) {
                    let after = at + pat.len();
                    // "'s fathers", "'s father-in-law" are not this relation.
                    if !matches!(
                        lower[after..].chars().next(),
                        None | Some(' ' | '\'' | '\u{2019}')
                    ) {
                        continue;
                    }
                    let start = at - name_span_back(&q[..at]);
                    if start < at {
                        found.push(Bridge {
                            start,
                            end: after,
                            entity: (start, at),
                            relation: word,
                            kin: Some(*kin),
                        });
                    }
                }
            }
        }
        let [ref bridge] = found[..] else {
            return None;
        };
        let entity = q[bridge.entity.0..bridge.entity.1].trim();
        let prefix = q[..bridge.start].to_string();
        let suffix = format!("{}?", &q[bridge.end..]);
        // The bridge itself as the answer is the write's plain job.
        let rest = words(&format!("{prefix} {suffix}"));
        if ["who is", "who was", "who is the", "who was the"].contains(&rest.trim()) {
            return None;
        }
        let lower_prefix = prefix.to_lowercase();
        let asks = ["who is the ", "who was the "]
            .iter()
            .find_map(|p| lower_prefix.strip_prefix(p))
            .filter(|_| suffix.trim() == "?")
            .and_then(|r| {
                POSSESSED
                    .iter()
                    .find(|(w, _)| r == format!("{w} of "))
                    .map(|p| p.1)
            });
        // "Where was the father of [the director of film X] born?" is a third hop.
        let nested = RELATIONS
            .iter()
            .any(|(p, _, _)| lower_prefix.ends_with(p) && lower_prefix.len() > p.len());
        if asks.is_none() && nested {
            return None;
        }
        (entity.split_whitespace().any(name_like)).then(|| LinkedQuestion {
            entity: entity.to_string(),
            relation: bridge.relation,
            kin: bridge.kin,
            asks,
            prefix,
            suffix,
        })
    }

    /// The question asked again of the bridge person by name ("Where was Nathan Juran
    /// born?").
    pub fn about(&self, person: &str) -> String {
        format!("{}{}{}", self.prefix, person.trim(), self.suffix)
    }
}

/// The byte length of the name at the start of `text`: its words name-like or joining a
/// name ("Band of Skulls"), a trailing joiner given back, a possessive ending it.
fn name_span(text: &str) -> usize {
    let mut end = 0;
    let mut last_name = 0;
    let mut at = 0;
    for w in text.split_inclusive(' ') {
        let word = w.trim_end();
        let start = at;
        at += w.len();
        if word.is_empty() {
            continue;
        }
        for mark in ["'s", "\u{2019}s"] {
            if let Some(stem) = word.strip_suffix(mark)
                && name_like(stem)
            {
                return start + stem.len();
            }
        }
        if name_like(word) {
            last_name = start + word.len();
            end = last_name;
        } else if NAME_JOINERS.contains(&word.to_lowercase().as_str()) && last_name > 0 {
            end = start + word.len();
        } else {
            break;
        }
    }
    end.min(last_name)
}

/// The byte length of the name that ends `text` (before a possessive): name-like words and
/// joiners read backwards, a leading joiner given back.
fn name_span_back(text: &str) -> usize {
    let mut words = Vec::new();
    let mut pos = 0;
    for w in text.split(' ') {
        words.push((pos, w));
        pos += w.len() + 1;
    }
    let mut first = text.len();
    for (start, w) in words.into_iter().rev() {
        if name_like(w) {
            first = start;
        } else if w.is_empty() || !NAME_JOINERS.contains(&w.to_lowercase().as_str()) {
            break;
        }
    }
    text.len() - first
}

/// Whether `answer` is the kind of answer `question` asks for, as far as its words show: a
/// date alone answers only a question that asks about time ("Where did he die?" is not
/// answered by "November 7, 2009"), and a "when" question needs a year, a month or a
/// number. A lookup answered with the wrong kind decides nothing: it read the wrong
/// sentence.
pub fn fits(question: &str, answer: &str) -> bool {
    use crate::text::{AnswerType, MONTHS, answer_type, asks_about_time, is_date_phrase};
    if is_date_phrase(answer) && !asks_about_time(question) {
        return false;
    }
    if answer_type(question) == AnswerType::Date {
        let lower = answer.to_lowercase();
        return answer.chars().any(|c| c.is_ascii_digit())
            || MONTHS.iter().any(|m| lower.contains(m));
    }
    true
}

/// Whether two answers say the same: the words of the shorter all within the longer
/// ("Los Angeles" and "Los Angeles, California"; "1972" and "5 March 1972").
pub fn same_answer(a: &str, b: &str) -> bool {
    crate::compare::within(a, b).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_relation_and_what_it_names_are_read() {
        let l = LinkedQuestion::of("Where was the director of film Quarry Bells Of Tarn born?")
            .unwrap();
        assert_eq!(l.entity, "Quarry Bells Of Tarn");
        assert_eq!(l.relation, "director");
        assert_eq!(l.kin, None);
        assert_eq!(l.about("Ivo Marsh"), "Where was Ivo Marsh born?");

        let l = LinkedQuestion::of("What is the place of birth of the performer of song Low Tide?")
            .unwrap();
        assert_eq!(l.entity, "Low Tide");
        assert_eq!(
            l.about("Dara Quill"),
            "What is the place of birth of Dara Quill?"
        );

        let l = LinkedQuestion::of("When did Aldric Venn's father die?").unwrap();
        assert_eq!(l.entity, "Aldric Venn");
        assert_eq!(l.kin, Some(Relation::Father));
        assert_eq!(l.about("Harl Venn"), "When did Harl Venn die?");

        let l =
            LinkedQuestion::of("What is the place of birth of Mira Stoll of Fenwick's husband?")
                .unwrap();
        assert_eq!(l.entity, "Mira Stoll of Fenwick");
        assert_eq!(l.kin, Some(Relation::Spouse));
        assert_eq!(
            l.about("Tomas Reyl"),
            "What is the place of birth of Tomas Reyl?"
        );

        let l = LinkedQuestion::of("When is the director of film Cass (2008 Film) 's birthday?")
            .unwrap();
        assert_eq!(l.entity, "Cass (2008 Film)");
        assert_eq!(l.about("Ivo Marsh"), "When is Ivo Marsh 's birthday?");

        let l =
            LinkedQuestion::of("What was the father of Kasper Venn voted to be in 1992?").unwrap();
        assert_eq!(
            l.about("Harl Venn"),
            "What was Harl Venn voted to be in 1992?"
        );

        let l = LinkedQuestion::of("Where was the father of Tiberius Venn born?").unwrap();
        assert_eq!((l.entity.as_str(), l.relation), ("Tiberius Venn", "father"));

        let l = LinkedQuestion::of("What is the cause of death of director of film Grey Harbour?")
            .unwrap();
        assert_eq!(l.entity, "Grey Harbour");
        assert_eq!(
            l.about("Ivo Marsh"),
            "What is the cause of death of Ivo Marsh?"
        );
    }

    #[test]
    fn a_relative_of_the_bridge_is_asked_as_a_relative() {
        let l =
            LinkedQuestion::of("Who is the father of the director of film Quarry Bells?").unwrap();
        assert_eq!(l.entity, "Quarry Bells");
        assert_eq!(l.asks, Some(Relation::Father));
        let l = LinkedQuestion::of("Who is the spouse of the performer of song Low Tide?").unwrap();
        assert_eq!(l.asks, Some(Relation::Spouse));
        let l =
            LinkedQuestion::of("Where did the director of film Low Tide graduate from?").unwrap();
        assert_eq!(l.asks, None);
    }

    #[test]
    fn other_questions_are_not_linked() {
        for q in [
            "Who is the director of film Quarry Bells?",
            "Who was Aldric Venn's father?",
            "Who is the paternal grandfather of Aldric Venn?",
            "Where was the paternal grandfather of Aldric Venn born?",
            "Which film has the director born later, Quarry Bells or Low Tide?",
            "Are the director of film Quarry Bells and the director of film Low Tide from the same country?",
            "Did the director of film Quarry Bells die before 1990?",
            "Where was the director of the same film born?",
            "Where was the father of the director of film Quarry Bells born?",
            "Who is the father of Nim's actress in Return to Nim's Island?",
        ] {
            assert_eq!(LinkedQuestion::of(q), None, "{q}");
        }
    }

    #[test]
    fn a_date_answers_only_a_question_about_time() {
        assert!(!fits("Where did Ivo Marsh die?", "November 7, 2009"));
        assert!(!fits(
            "What is the place of birth of Ivo Marsh?",
            "14 March 1958"
        ));
        assert!(fits("Where did Ivo Marsh die?", "Vell"));
        assert!(fits("When did Ivo Marsh die?", "November 7, 2009"));
        assert!(fits("What is the date of death of Ivo Marsh?", "1979"));
        assert!(!fits("When did Ivo Marsh die?", "Vell"));
        assert!(fits("What nationality is Ivo Marsh?", "American"));
    }

    #[test]
    fn answers_are_the_same_when_one_is_within_the_other() {
        assert!(same_answer("Los Angeles", "Los Angeles, California"));
        assert!(same_answer("1972", "5 March 1972"));
        assert!(!same_answer("Moscow", "Odessa"));
        assert!(!same_answer("", "Odessa"));
        assert!(!same_answer("1019", "Korea"));
    }
}
