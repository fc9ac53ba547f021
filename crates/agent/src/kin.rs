//! Kinship questions followed one relation at a time: "Who is the paternal grandfather of
//! X?", "Who is X's mother-in-law?".
//!
//! Such a question is two lookups chained through a person the question does not name (X's
//! father, then his father). A 1.5B writer given the family's pages answers it in one step
//! and often names the wrong generation or the wrong side: X's father, a great-uncle, the
//! maternal grandfather. Each single relation ("Who is the father of X?") is stated by one
//! sentence of one page, which is within the model's reach. So the chain is read here
//! ([`KinshipChain::of`]), each link is asked alone over the same sources (a parent with
//! both parents' slots, [`crate::prompts::parents`]; a spouse by
//! [`crate::prompts::relative`]), each answer counts only if a source about the person
//! asked of names it ([`stated`]), and the last link's answer is the chain's. Anything
//! unsure decides nothing: a name no such source states, the person asked of named back,
//! or a link whose person has no page among the sources.

use crate::compare::{names, shown, within, words};
use crate::evidence::Source;

/// The stop reason of a run whose relation chain confirmed the written answer (a
/// contradicted answer is recorded as a `Remediation::Kin` instead).
pub const KIN_CONFIRM: &str = "the relation chain confirms the answer";

/// One link of a kinship chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relation {
    /// The person's father.
    Father,
    /// The person's mother.
    Mother,
    /// The person's husband or wife.
    Spouse,
}

impl Relation {
    /// The relation as a question names it ("father", "spouse").
    pub fn as_str(self) -> &'static str {
        match self {
            Relation::Father => "father",
            Relation::Mother => "mother",
            Relation::Spouse => "spouse",
        }
    }
}

/// Relations that are two links, in the order they are followed from the person asked
/// about. Longer names first, so that "paternal grandfather" is not read as "grandfather".
const CHAINS: &[(&str, [Relation; 2])] = &[
    ("paternal grandfather", [Relation::Father, Relation::Father]),
    ("paternal grandmother", [Relation::Father, Relation::Mother]),
    ("maternal grandfather", [Relation::Mother, Relation::Father]),
    ("maternal grandmother", [Relation::Mother, Relation::Mother]),
    ("father-in-law", [Relation::Spouse, Relation::Father]),
    ("mother-in-law", [Relation::Spouse, Relation::Mother]),
];

/// A question that asks for a relative two links away from a named person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KinshipChain {
    /// The person the question names.
    pub person: String,
    /// The relation as the question names it ("paternal grandfather").
    pub relation: &'static str,
    /// The links, in the order they are followed from `person`.
    pub links: [Relation; 2],
}

impl KinshipChain {
    /// Reads "Who is the R of X?", "Who was X's R?" (R a two-link relation: a paternal or
    /// maternal grandparent, a parent-in-law). `None` for any other question, and for a
    /// grandparent whose side is not said ("Who is X's grandfather?": two chains, and the
    /// sources rarely say which the question means).
    pub fn of(question: &str) -> Option<KinshipChain> {
        let q = question.trim().trim_end_matches('?').trim();
        let lower = q.to_lowercase();
        // Byte offsets are shared with `q` only where lower-casing kept every length.
        if lower.len() != q.len() {
            return None;
        }
        let rest = ["who is ", "who was "]
            .iter()
            .find_map(|p| lower.strip_prefix(p).map(|_| p.len()))?;
        let (relation, links) = CHAINS
            .iter()
            .find(|(name, _)| lower[rest..].contains(name))
            .copied()?;
        let at = rest + lower[rest..].find(relation)?;
        let after = at + relation.len();
        let person = if lower[rest..at].trim().is_empty() || lower[rest..at].trim() == "the" {
            // "the R of X"
            q[after..].trim().strip_prefix("of ")?.trim()
        } else if lower[after..].trim().is_empty() {
            // "X's R": the possessive ends the name ("Tiberius (Son Of Justinian II)'s").
            let name = q[rest..at].trim_end();
            name.strip_suffix("'s")
                .or_else(|| name.strip_suffix("\u{2019}s"))
                .or_else(|| name.strip_suffix('\''))?
                .trim()
        } else {
            return None;
        };
        let person = person.strip_prefix("the ").unwrap_or(person).trim();
        // A name's words start with a capital, a digit or a bracket, or join its parts
        // ("of"); "the director of Quarry Bells" is a further hop, not a name.
        let name_word = |w: &str| {
            crate::text::name_like(w)
                || crate::text::NAME_JOINERS.contains(&w.to_lowercase().as_str())
        };
        if !person.split_whitespace().all(name_word) {
            return None;
        }
        (!person.is_empty()).then(|| KinshipChain {
            person: person.to_string(),
            relation,
            links,
        })
    }
}

/// Whether `source` is `person`'s own page: its title and the name are one person's,
/// written longer or shorter ("Somerset Butler" or "Somerset Hamilton Butler, 1st Earl of
/// Carrick" for "Somerset Butler, 1St Earl Of Carrick").
pub fn page_of(source: &Source, person: &str) -> bool {
    let (t, p) = (words(&source.passage.title), words(person));
    let (t, p): (Vec<&str>, Vec<&str>) = (
        t.split_whitespace().collect(),
        p.split_whitespace().collect(),
    );
    let within = |a: &[&str], b: &[&str]| a.len() >= 2 && a.iter().all(|w| b.contains(w));
    !t.is_empty() && (t == p || within(&t, &p) || within(&p, &t))
}

/// Whether `source` is about `person`: it is their page ([`page_of`]) or names them.
pub fn about(source: &Source, person: &str) -> bool {
    page_of(source, person) || names(&shown(source), person)
}

/// The number of a source about `person` that names `name` (the cited one first), or
/// `None`. Where the person has a page among the sources only that page counts: a child's
/// page names its father beside his wife, and would confirm either as his parent. A name
/// that is the person's own, or part of it, is no relative of theirs.
pub fn stated(name: &str, cited: usize, person: &str, sources: &[Source]) -> Option<usize> {
    let name = name.trim().trim_end_matches('.').trim();
    if name.len() < 2 || names(&words(person), name) {
        return None;
    }
    let own = sources.iter().any(|s| page_of(s, person));
    let states = |s: &&Source| {
        (if own {
            page_of(s, person)
        } else {
            about(s, person)
        }) && names(&shown(s), name)
    };
    sources
        .iter()
        .filter(|s| s.n == cited)
        .chain(sources.iter().filter(|s| s.n != cited))
        .find(states)
        .map(|s| s.n)
}

/// `name` as `text` writes it: the span from the first to the last of its words, found
/// whole-word and in order ignoring case and punctuation ("Schleswig-Holstein" for a
/// model's "Schleswig- Holstein"). `None` if the text does not name it.
pub fn as_written<'t>(text: &'t str, name: &str) -> Option<&'t str> {
    let want = words(name);
    let want: Vec<&str> = want.split_whitespace().collect();
    if want.is_empty() {
        return None;
    }
    // Each word of the text with its byte range.
    let mut found: Vec<(usize, usize, String)> = Vec::new();
    let mut start = None;
    for (i, c) in text
        .char_indices()
        .chain(std::iter::once((text.len(), ' ')))
    {
        match (c.is_alphanumeric(), start) {
            (true, None) => start = Some(i),
            (false, Some(b)) => {
                found.push((b, i, text[b..i].to_lowercase()));
                start = None;
            }
            _ => {}
        }
    }
    found
        .windows(want.len())
        .find(|w| w.iter().zip(&want).all(|(f, x)| f.2 == *x))
        .map(|w| &text[w[0].0..w[want.len() - 1].1])
}

/// A name without the description a model copies after it ("Lady Margaret Montgomerie,
/// daughter of Hugh" -> "Lady Margaret Montgomerie"): cut at a comma or bracket followed
/// by a lowercase word, or at "who" / "whose". A name's own parts after a comma start with
/// a capital or a digit ("Henry FitzRoy, 5th Duke of Grafton").
pub fn bare_name(name: &str) -> &str {
    let name = name.trim().trim_end_matches('.').trim();
    let mut end = name.len();
    for (i, c) in name.char_indices() {
        if c == ',' || c == '(' || c == ' ' {
            let rest = name[i + c.len_utf8()..].trim_start();
            let next = rest.split_whitespace().next().unwrap_or("");
            let lower = next.chars().next().is_some_and(char::is_lowercase);
            let cut = match c {
                ' ' => ["who", "whose", "who,"].contains(&next),
                _ => lower,
            };
            if cut {
                end = i;
                break;
            }
        }
    }
    name[..end].trim_end_matches([',', ' '])
}

/// Whether two names are one person's: the words of one are all in the other, and the
/// shorter has two words or more ("Harl Venn" and "Harl Venn, Lord of Tessa"). Token F1
/// ([`crate::monitor::agree`]) is no test here: a family's names share a surname, and
/// "Tomas Venn" against "Harl Venn" scores 0.5.
pub fn same_person(a: &str, b: &str) -> bool {
    within(a, b).is_some_and(|(short, long)| short >= 2 || short == long)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::test_source;

    #[test]
    fn two_link_relations_are_read_in_both_word_orders() {
        let c = KinshipChain::of("Who is the paternal grandfather of Aldric Venn?").unwrap();
        assert_eq!(c.person, "Aldric Venn");
        assert_eq!(c.links, [Relation::Father, Relation::Father]);
        let c =
            KinshipChain::of("Who is Mira Stoll, 2Nd Countess Of Fenwick's maternal grandmother?")
                .unwrap();
        assert_eq!(c.person, "Mira Stoll, 2Nd Countess Of Fenwick");
        assert_eq!(c.links, [Relation::Mother, Relation::Mother]);
        let c = KinshipChain::of("Who was Lady Orla (Poet)'s father-in-law?").unwrap();
        assert_eq!(c.person, "Lady Orla (Poet)");
        assert_eq!(c.links, [Relation::Spouse, Relation::Father]);
        assert_eq!(c.relation, "father-in-law");
    }

    #[test]
    fn other_questions_are_no_chain() {
        for q in [
            "Who is the father of Aldric Venn?",
            "Who is Aldric Venn's grandfather?",
            "Where was the paternal grandfather of Aldric Venn born?",
            "Who is the paternal grandfather?",
            "Who is the paternal grandfather of the director of Quarry Bells, and when did he die?",
        ] {
            assert_eq!(KinshipChain::of(q), None, "{q}");
        }
    }

    #[test]
    fn a_name_is_taken_as_the_source_writes_it() {
        let text = "He was the son of Harl Venn-Roe, Lord of Tessa, and Edda.";
        assert_eq!(as_written(text, "harl venn- roe"), Some("Harl Venn-Roe"));
        assert_eq!(
            as_written(text, "Harl Venn-Roe, Lord of Tessa"),
            Some("Harl Venn-Roe, Lord of Tessa")
        );
        assert_eq!(as_written(text, "Edd"), None);
        assert_eq!(as_written(text, "."), None);
    }

    #[test]
    fn a_copied_description_is_cut_from_the_name() {
        assert_eq!(
            bare_name("Lady Edda Roe, daughter of Harl Venn"),
            "Lady Edda Roe"
        );
        assert_eq!(bare_name("Harl Venn (died 1702)"), "Harl Venn");
        assert_eq!(bare_name("Harl Venn, who built ships."), "Harl Venn");
        assert_eq!(
            bare_name("Harl Venn, 5th Lord of Tessa"),
            "Harl Venn, 5th Lord of Tessa"
        );
        assert_eq!(bare_name("Odo (II) Venn"), "Odo (II) Venn");
        assert_eq!(bare_name("Ivan the Terrible"), "Ivan the Terrible");
    }

    #[test]
    fn one_person_is_the_same_name_or_a_longer_form_of_it() {
        assert!(same_person("Harl Venn", "Harl Venn, Lord of Tessa"));
        assert!(same_person("harl  venn", "Harl Venn"));
        assert!(!same_person("Tomas Venn", "Harl Venn"));
        assert!(!same_person("Odo II", "Odo III"));
        assert!(!same_person("Venn", "Harl Venn"));
        assert!(!same_person("", "Harl Venn"));
    }

    #[test]
    fn a_relative_counts_only_from_a_page_about_the_person_asked_of() {
        let sources = vec![
            test_source(
                1,
                "Aldric Venn",
                "Aldric Venn was the son of Tomas Venn and Ilse Marr.",
            ),
            test_source(
                2,
                "Tomas Venn",
                "Tomas Venn was a merchant, son of Harl Venn.",
            ),
            test_source(3, "Quarry Bells", "Quarry Bells stars Harl Venn."),
        ];
        assert_eq!(stated("Tomas Venn", 1, "Aldric Venn", &sources), Some(1));
        // Cited wrongly: the page that states it is found.
        assert_eq!(stated("Harl Venn", 1, "Tomas Venn", &sources), Some(2));
        // A title that writes the name longer is about the person.
        let longer = [test_source(
            4,
            "Tomas Orrin Venn, Lord of Tessa",
            "He married Edda Roe.",
        )];
        assert!(about(&longer[0], "Tomas Venn, Lord Of Tessa"));
        assert!(!about(&longer[0], "Harl Venn"));
        // With Tomas Venn's page among the sources, Aldric's page naming Tomas beside Ilse
        // Marr does not make Ilse his parent.
        assert_eq!(stated("Ilse Marr", 1, "Tomas Venn", &sources), None);
        // Named only on a page about someone else.
        assert_eq!(stated("Harl Venn", 3, "Aldric Venn", &sources), None);
        // The person asked of, or part of their name, is not their relative.
        assert_eq!(stated("Aldric Venn", 1, "Aldric Venn", &sources), None);
        assert_eq!(stated("Venn", 1, "Aldric Venn", &sources), None);
        assert_eq!(stated("", 1, "Aldric Venn", &sources), None);
    }
}
