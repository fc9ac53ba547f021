//! Quantity comparisons decided in code: "Which genus has more species, A or B?", "Which
//! mountain is taller, A or B?", "Which has the larger population, A or B?".
//!
//! The same division of labour as the date comparisons of [`crate::compare`]: a 1.5B
//! writer picks an option of such a question about as well as it guesses, but reading one
//! number from one passage is within its reach. The question is read here
//! ([`QuantityComparison::of`]: the options, whether the larger or the smaller quantity
//! wins, what to read), the model reads each option's quantity alone (the prompt is
//! [`crate::prompts::option_quantity`]), each is checked against the sources
//! ([`verified_quantity`]) and must come from a page about its option, and [`decide`]
//! compares them. Anything unsure decides nothing: a number no source states, two
//! quantities in units that do not convert ("900 species" against "12 genera"), equal
//! values, or a question whose comparison is not a stated number ("more acclaimed", "lasted
//! longer").

use crate::compare::{linked_from, names, shown};
use crate::evidence::Source;
use std::cmp::Ordering;

/// The stop reason of a run whose quantities confirmed the written answer (a contradicted
/// answer is recorded as a `Remediation::Measure` instead).
pub const QUANTITIES_CONFIRM: &str = "the quantities confirm the answer";

/// Which quantity wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extreme {
    /// "more", "taller", "larger".
    Most,
    /// "fewer", "shorter", "smaller".
    Least,
}

/// An "A or B" question that compares two stated quantities.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuantityComparison {
    /// The two options, as the question names them.
    pub options: [String; 2],
    /// Which quantity wins.
    pub extreme: Extreme,
    /// What to read for an option, with `{}` where the option goes ("the number of
    /// species of \"{}\"").
    pub asked: String,
}

/// Comparatives that ask for a count of the noun that follows ("more species").
const COUNT: &[(&str, Extreme)] = &[
    ("more", Extreme::Most),
    ("most", Extreme::Most),
    ("fewer", Extreme::Least),
    ("fewest", Extreme::Least),
];

/// Comparatives that name a measure of their own ("taller": height), or of the noun that
/// follows them ("the larger population").
const MEASURES: &[(&str, Extreme, &str)] = &[
    ("taller", Extreme::Most, "height"),
    ("tallest", Extreme::Most, "height"),
    ("higher", Extreme::Most, "height"),
    ("highest", Extreme::Most, "height"),
    ("shorter", Extreme::Least, "length"),
    ("shortest", Extreme::Least, "length"),
    ("longer", Extreme::Most, "length"),
    ("longest", Extreme::Most, "length"),
    ("larger", Extreme::Most, "area"),
    ("largest", Extreme::Most, "area"),
    ("bigger", Extreme::Most, "area"),
    ("biggest", Extreme::Most, "area"),
    ("smaller", Extreme::Least, "area"),
    ("smallest", Extreme::Least, "area"),
];

/// Nouns a measure word may take from the words after it ("the larger population").
const MEASURED_NOUNS: &[&str] = &[
    "population",
    "area",
    "height",
    "elevation",
    "length",
    "capacity",
    "enrollment",
    "enrolment",
    "circulation",
    "budget",
    "revenue",
];

/// Words after which a length is a time ("lasted longer", "operational for longer"): not a
/// stated number, so not read.
const DURATION: &[&str] = &[
    "lasted",
    "last",
    "served",
    "serve",
    "run",
    "ran",
    "operational",
    "active",
    "lived",
    "reigned",
    "for",
];

impl QuantityComparison {
    /// Reads `question` as a quantity comparison: an "A or B" question (its form is a
    /// choice) whose words before the options hold a comparative of a stated quantity.
    /// `None` for anything else ("Who was a more acclaimed guitarist, A or B?", "Which
    /// battle lasted longer, A or B?", a date comparison).
    pub fn of(question: &str) -> Option<QuantityComparison> {
        if crate::compare::DateComparison::of(question).is_some() {
            return None;
        }
        let (options, clause) = crate::compare::choice_clause(question)?;
        let clause: Vec<&str> = clause.iter().map(String::as_str).collect();
        for (i, w) in clause.iter().enumerate() {
            let after = &clause[i + 1..];
            if let Some(&(_, extreme)) = COUNT.iter().find(|(c, _)| c == w) {
                // "more species", "the most Grand Slam doubles titles": a plural noun ends
                // the phrase that follows; an adjective ("more acclaimed") is no count.
                let phrase: Vec<&str> = after
                    .iter()
                    .copied()
                    .take_while(|x| !crate::text::is_stopword(x) || *x == "s")
                    .collect();
                let noun = phrase.iter().rposition(|x| {
                    x.len() > 3 && x.ends_with('s') && !x.ends_with("ss") && !x.ends_with("ous")
                })?;
                let counted = phrase[..=noun].join(" ").replace(" s ", "'s ");
                return Some(QuantityComparison {
                    options: options.clone(),
                    extreme,
                    asked: format!("the number of {counted} of \"{{}}\""),
                });
            }
            if let Some(&(_, extreme, measure)) = MEASURES.iter().find(|(m, ..)| m == w) {
                if clause[..i].iter().any(|x| DURATION.contains(x))
                    || after.first().is_some_and(|x| DURATION.contains(x))
                {
                    return None;
                }
                let noun = after.first().filter(|x| MEASURED_NOUNS.contains(x));
                let measure = noun.copied().unwrap_or(measure);
                return Some(QuantityComparison {
                    options: options.clone(),
                    extreme,
                    asked: format!("the {measure} of \"{{}}\""),
                });
            }
        }
        None
    }

    /// What to read for option `i` ("the number of species of \"Apium\"").
    pub fn asked_for(&self, i: usize) -> String {
        self.asked.replace("{}", &self.options[i])
    }

    /// Whether `source` can state option `i`'s quantity: it names the option, or it is a
    /// page the option's own sources name (a mountain's range, a band's page linked from
    /// its album's).
    pub fn belongs(&self, i: usize, source: &Source, sources: &[Source]) -> bool {
        let option = &self.options[i];
        names(&shown(source), option) || linked_from(option, source, sources)
    }
}

/// A number with its unit as the text gives it ("7,885 m", "about 900 species", "1.2
/// million").
#[derive(Debug, Clone, PartialEq)]
pub struct Quantity {
    /// The value, in the unit below.
    pub value: f64,
    /// The unit, normalised ("m", "km", "km2", "species"); `None` for a bare number.
    pub unit: Option<String>,
}

/// Units that convert, to a base unit and a factor.
const CONVERSIONS: &[(&str, &str, f64)] = &[
    ("m", "m", 1.0),
    ("metre", "m", 1.0),
    ("meter", "m", 1.0),
    ("ft", "m", 0.3048),
    ("foot", "m", 0.3048),
    ("feet", "m", 0.3048),
    ("km", "km", 1.0),
    ("kilometre", "km", 1.0),
    ("kilometer", "km", 1.0),
    ("mi", "km", 1.609_344),
    ("mile", "km", 1.609_344),
    ("km2", "km2", 1.0),
    ("sq km", "km2", 1.0),
    ("square kilometre", "km2", 1.0),
    ("square kilometer", "km2", 1.0),
    ("sq mi", "km2", 2.589_988),
    ("square mile", "km2", 2.589_988),
    ("ha", "km2", 0.01),
    ("hectare", "km2", 0.01),
    ("acre", "km2", 0.004_046_856),
];

const SCALES: &[(&str, f64)] = &[("thousand", 1e3), ("million", 1e6), ("billion", 1e9)];

impl Quantity {
    /// The first number in `text` with the word after it as its unit: "7,885 metres
    /// (25,869 ft)" is 7885 m, "about 900 species" 900 species, "1.2 million" 1,200,000.
    /// Years are numbers like any other, so the caller asks for a quantity, not a date.
    pub fn parse(text: &str) -> Option<Quantity> {
        let lower = text.to_lowercase();
        let (value, rest) = match lower.bytes().position(|b| b.is_ascii_digit()) {
            Some(start) => scaled_number_at(&lower, start)?,
            // "three species": a number in words.
            None => number_words(&lower)
                .next()
                .map(|(v, end)| (v, &lower[end..]))?,
        };
        let mut words = rest
            .split(|c: char| !(c.is_alphanumeric() || c == '²'))
            .filter(|w| !w.is_empty());
        let unit = words.next().map(|w| {
            let w = w.replace('²', "2");
            let single = w.strip_suffix('s').filter(|s| s.len() > 1).unwrap_or(&w);
            // Two-word units: "square miles", "sq km".
            let two = format!("{single} {}", words.next().unwrap_or(""));
            let two = two.trim_end_matches('s');
            if CONVERSIONS.iter().any(|(u, ..)| *u == two) {
                two.to_string()
            } else if w == "species" || w == "series" {
                w
            } else {
                single.to_string()
            }
        });
        Some(Quantity { value, unit })
    }

    /// This quantity in its base unit ("ft" as "m"), or as it is when the unit does not
    /// convert.
    fn base(&self) -> (f64, Option<&str>) {
        match &self.unit {
            Some(u) => match CONVERSIONS.iter().find(|(name, ..)| name == u) {
                Some((_, base, factor)) => (self.value * factor, Some(base)),
                None => (self.value, Some(u.as_str())),
            },
            None => (self.value, None),
        }
    }

    /// The order of two quantities in the same (or a convertible) unit; `None` when the
    /// units differ and both name something, or the values are equal.
    pub fn order(&self, other: &Quantity) -> Option<Ordering> {
        let ((a, ua), (b, ub)) = (self.base(), other.base());
        // A bare number against a counted one ("900" and "900 species") is the same count;
        // two named units must be the same unit.
        if let (Some(x), Some(y)) = (ua, ub)
            && x != y
        {
            return None;
        }
        match a.partial_cmp(&b)? {
            Ordering::Equal => None,
            o => Some(o),
        }
    }
}

/// The number written at byte `start` of `text` (digits with thousands separators, a
/// decimal point) and where it ends.
fn number_at(text: &str, start: usize) -> Option<(f64, usize)> {
    let b = text.as_bytes();
    let mut end = start;
    while end < b.len()
        && (b[end].is_ascii_digit()
            || (matches!(b[end], b',' | b'.') && b.get(end + 1).is_some_and(u8::is_ascii_digit)))
    {
        end += 1;
    }
    let written = &text[start..end];
    // One "." is a decimal point ("1.2", "1,234.5"); commas, or several dots, group thousands.
    let digits = if written.matches('.').count() == 1 {
        written.replace(',', "")
    } else {
        written.replace([',', '.'], "")
    };
    Some((digits.parse().ok()?, end))
}

/// [`number_at`] times a scale word after it ("1.2 million"), and the text after both.
fn scaled_number_at(text: &str, start: usize) -> Option<(f64, &str)> {
    let (value, end) = number_at(text, start)?;
    let rest = &text[end..];
    let next = rest.split_whitespace().next().unwrap_or("");
    match SCALES
        .iter()
        .find(|(s, _)| next.trim_end_matches([',', '.', ')']) == *s)
    {
        Some(&(_, scale)) => {
            let after = rest.find(next).map_or(rest, |i| &rest[i + next.len()..]);
            Some((value * scale, after))
        }
        None => Some((value, rest)),
    }
}

/// The quantity a reply states and the source stating it: the source it cites (numbered
/// as in the prompt) when that states the same number, else the first source that does.
/// A number no source states decides nothing.
pub fn verified_quantity(
    value: &str,
    source: usize,
    sources: &[Source],
) -> Option<(Quantity, usize)> {
    let parsed = Quantity::parse(value)?;
    let states = |src: &Source| {
        let text = format!("{} {}", src.passage.title, src.text()).to_lowercase();
        numbers(&text).any(|n| (n - parsed.value).abs() <= 1e-9 * n.abs().max(1.0))
    };
    if let Some(src) = sources.iter().find(|s| s.n == source && states(s)) {
        return Some((parsed, src.n));
    }
    sources.iter().find(|s| states(s)).map(|s| (parsed, s.n))
}

/// Numbers up to twenty as words, which sources write where a small model writes digits
/// ("contains three species").
const NUMBER_WORDS: [&str; 20] = [
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
];

/// The numbers `text` (lower-cased) writes in words, with the byte where each word ends.
fn number_words(text: &str) -> impl Iterator<Item = (f64, usize)> + '_ {
    let mut words = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices().chain([(text.len(), ' ')]) {
        match (c.is_alphanumeric(), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                words.push((s, i));
                start = None;
            }
            _ => {}
        }
    }
    words.into_iter().filter_map(move |(s, e)| {
        let n = NUMBER_WORDS.iter().position(|x| *x == &text[s..e])?;
        Some((n as f64 + 1.0, e))
    })
}

/// Every number (lower-cased) `text` writes, scale words included, as
/// [`Quantity::parse`] reads one; numbers up to twenty in words too.
fn numbers(text: &str) -> impl Iterator<Item = f64> + '_ {
    let b = text.as_bytes();
    // A number starts at a digit that does not continue a word or another number.
    (0..b.len())
        .filter(move |&i| {
            b[i].is_ascii_digit()
                && (i == 0
                    || !(b[i - 1].is_ascii_alphanumeric()
                        || (matches!(b[i - 1], b',' | b'.')
                            && i >= 2
                            && b[i - 2].is_ascii_digit())))
        })
        .filter_map(move |i| scaled_number_at(text, i).map(|(v, _)| v))
        .chain(number_words(text).map(|(v, _)| v))
}

/// Which option (0 or 1) the quantities make the answer, when their order is settled.
pub fn decide(extreme: Extreme, quantities: [&Quantity; 2]) -> Option<usize> {
    let order = quantities[0].order(quantities[1])?;
    Some(match (extreme, order) {
        (Extreme::Most, Ordering::Greater) | (Extreme::Least, Ordering::Less) => 0,
        _ => 1,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::evidence::test_source as source;

    #[test]
    fn comparatives_of_stated_quantities_are_read() {
        let c =
            QuantityComparison::of("Which genus has more species, Quillwort or Tessaria?").unwrap();
        assert_eq!(c.options, ["Quillwort".to_string(), "Tessaria".into()]);
        assert_eq!(c.extreme, Extreme::Most);
        assert_eq!(c.asked_for(1), "the number of species of \"Tessaria\"");

        let c =
            QuantityComparison::of("Which mountain is taller, Mount Orlen or Vask Peak?").unwrap();
        assert_eq!(c.asked_for(0), "the height of \"Mount Orlen\"");

        let c = QuantityComparison::of("Which has the larger population, Tolvane or Upper Fenn?")
            .unwrap();
        assert_eq!(c.asked_for(0), "the population of \"Tolvane\"");

        let c = QuantityComparison::of(
            "Who has won more Grand Slam doubles titles, Mira Tolvane or Anna Veltz?",
        )
        .unwrap();
        assert_eq!(
            c.asked_for(1),
            "the number of grand slam doubles titles of \"Anna Veltz\""
        );
        let c = QuantityComparison::of("Which river is shorter, the Ostra or the Velm?").unwrap();
        assert_eq!(c.extreme, Extreme::Least);
        assert_eq!(c.asked_for(0), "the length of \"Ostra\"");
    }

    #[test]
    fn other_comparisons_are_not_quantities() {
        for q in [
            "Who was a more acclaimed guitarist, Piet Ormund or Oskar Fenn?",
            "Which battle lasted longer, Battle of Ostra or Battle of Velm?",
            "Which satellite was operational for longer, Quill-1 or Tessa?",
            "Which film came out first, Blue Harbour or The Glass Fox?",
            "Which genus is native to Chile, Quillwort or Tessaria?",
            "Who is older, Mira Tolvane or Oskar Fenn?",
            "Which city is more famous, Tolvane or Upper Fenn?",
        ] {
            assert_eq!(QuantityComparison::of(q), None, "{q}");
        }
    }

    #[test]
    fn quantities_are_read_with_their_units() {
        let q = |v: f64, u: Option<&str>| Quantity {
            value: v,
            unit: u.map(str::to_string),
        };
        assert_eq!(
            Quantity::parse("7,885 metres (25,869 ft)"),
            Some(q(7885.0, Some("metre")))
        );
        assert_eq!(
            Quantity::parse("about 900 species"),
            Some(q(900.0, Some("species")))
        );
        assert_eq!(Quantity::parse("1.2 million"), Some(q(1_200_000.0, None)));
        assert_eq!(Quantity::parse("559 km²"), Some(q(559.0, Some("km2"))));
        assert_eq!(
            Quantity::parse("40 square miles"),
            Some(q(40.0, Some("square mile")))
        );
        assert_eq!(Quantity::parse("unknown"), None);

        // Feet against metres convert; species against genera do not; equal decides nothing.
        let (m, ft) = (q(7885.0, Some("m")), q(25_000.0, Some("ft")));
        assert_eq!(m.order(&ft), Some(Ordering::Greater));
        assert_eq!(
            q(900.0, Some("species")).order(&q(12.0, Some("genera"))),
            None
        );
        assert_eq!(
            q(900.0, Some("species")).order(&q(40.0, None)),
            Some(Ordering::Greater)
        );
        assert_eq!(q(3.0, None).order(&q(3.0, None)), None);
        assert_eq!(decide(Extreme::Most, [&m, &ft]), Some(0));
        assert_eq!(decide(Extreme::Least, [&m, &ft]), Some(1));
    }

    #[test]
    fn a_quantity_counts_only_where_a_source_states_it() {
        let sources = [
            source(
                1,
                "Quillwort",
                "Quillwort is a genus of about 1,200 species of ferns.",
            ),
            source(2, "Tessaria", "Tessaria is a genus of 12 species."),
        ];
        assert_eq!(
            verified_quantity("1,200 species", 1, &sources).map(|(q, n)| (q.value, n)),
            Some((1200.0, 1))
        );
        // Numbers in words count both ways.
        let words = [source(
            1,
            "Crowea",
            "The genus Crowea contains three species.",
        )];
        assert_eq!(
            verified_quantity("3 species", 1, &words).map(|(q, n)| (q.value, n)),
            Some((3.0, 1))
        );
        assert_eq!(
            Quantity::parse("three species").map(|q| (q.value, q.unit)),
            Some((3.0, Some("species".into())))
        );
        // A wrong citation is corrected to the source that states the number.
        assert_eq!(
            verified_quantity("12", 1, &sources).map(|(_, n)| n),
            Some(2)
        );
        assert_eq!(verified_quantity("1,300 species", 1, &sources), None);
        assert_eq!(verified_quantity("", 1, &sources), None);
    }
}
