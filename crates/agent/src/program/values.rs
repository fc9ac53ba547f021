//! Typed values a program step reads and the operations run on them in code: dates at the
//! precision written, quantities with their units, yes/no verdicts, names (with countries
//! and their demonyms from the `keshvar` country data), and lists.
//!
//! A value is compared only as far as its text settles it: "1949" and "March 1949" are
//! the same year but not an order, "7,885 m" and "25,869 ft" convert, "American" and
//! "United States" name one country.

use crate::text::{MONTHS, content_terms, tokens};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::collections::{BTreeSet, HashMap};
use std::sync::LazyLock;

/// The kind of value a `find` step reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A name of something that is neither a person nor a place, or a short phrase.
    Text,
    /// A person's name.
    Person,
    /// A place: a city, a country, a nationality.
    Place,
    /// A calendar date or year.
    Date,
    /// A number, with its unit when it has one.
    Quantity,
    /// Whether a statement about the subject holds.
    YesNo,
    /// Several names.
    List,
}

impl Kind {
    /// The name the planner writes.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Text => "text",
            Kind::Person => "person",
            Kind::Place => "place",
            Kind::Date => "date",
            Kind::Quantity => "quantity",
            Kind::YesNo => "yes_no",
            Kind::List => "list",
        }
    }

    /// Whether a value of this kind names something a later step can be asked about.
    pub fn is_entity(self) -> bool {
        matches!(self, Kind::Text | Kind::Person | Kind::Place)
    }

    /// Whether values of this kind have an order (`compare`).
    pub fn is_ordered(self) -> bool {
        matches!(self, Kind::Date | Kind::Quantity)
    }
}

/// A value a step produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", tag = "kind", content = "value")]
pub enum Value {
    /// A name or phrase ([`Kind::Text`], [`Kind::Person`], [`Kind::Place`]).
    Name(String),
    /// A date as precise as written.
    Date(Date),
    /// A number with its unit.
    Quantity(Quantity),
    /// A verdict.
    Bool(bool),
    /// Several names.
    List(Vec<String>),
}

impl Value {
    /// The value as a short answer: a name as written, a date as precise as read, a
    /// quantity as written, "yes" / "no", a list joined with commas.
    pub fn display(&self) -> String {
        match self {
            Value::Name(n) => n.clone(),
            Value::Date(d) => d.to_string(),
            Value::Quantity(q) => q.written.clone(),
            Value::Bool(true) => "yes".into(),
            Value::Bool(false) => "no".into(),
            Value::List(items) => items.join(", "),
        }
    }

    /// Whether two values say the same thing, where their text settles it: dates equal at
    /// the precision both state, quantities equal in one unit, names of one country (by
    /// name, official or not, or demonym), or the same words; `None` when it cannot tell
    /// (one date gives a month the other lacks, units that do not convert).
    pub fn same(&self, other: &Value) -> Option<bool> {
        match (self, other) {
            (Value::Date(a), Value::Date(b)) => a.same(b),
            (Value::Quantity(a), Value::Quantity(b)) => a.same(b),
            (Value::Bool(a), Value::Bool(b)) => Some(a == b),
            (Value::Name(a), Value::Name(b)) => Some(same_name(a, b)),
            (Value::List(a), Value::List(b)) => {
                Some(a.len() == b.len() && a.iter().all(|x| b.iter().any(|y| same_name(x, y))))
            }
            _ => None,
        }
    }
}

/// Whether two names name the same thing: the same country (see [`nation`]) when both
/// name one, else the same content words, a name's trailing disambiguation ("(film)")
/// aside, or one a longer form of the other ("Spielberg" of "Steven Spielberg").
pub fn same_name(a: &str, b: &str) -> bool {
    if let (Some(x), Some(y)) = (nation(a), nation(b)) {
        return x == y;
    }
    let (ta, tb) = (content_terms(bare(a)), content_terms(bare(b)));
    if ta.is_empty() || tb.is_empty() {
        return a.trim().eq_ignore_ascii_case(b.trim());
    }
    ta.is_subset(&tb) || tb.is_subset(&ta)
}

/// A name without a trailing disambiguation in brackets ("Pieris (plant)" -> "Pieris").
pub fn bare(name: &str) -> &str {
    let name = name.trim();
    match name.rfind(" (") {
        Some(i) if name.ends_with(')') => name[..i].trim(),
        _ => name,
    }
}

/// Every way the country data writes each country (short and long ISO names, unofficial
/// names, the demonym), lower-cased, to its ISO 3166 alpha-2 code.
static NATIONS: LazyLock<HashMap<String, String>> = LazyLock::new(|| {
    let mut m = HashMap::new();
    // Official names and demonyms first: an unofficial name of a territory ("United
    // States" for the Northern Mariana Islands) must not take a country's own name.
    // A demonym several share ("American": the US and its territories) goes to the most
    // populous.
    let mut countries: Vec<keshvar::Country> = keshvar::CountryIterator::new().collect();
    countries.sort_by_key(|c| std::cmp::Reverse(c.maybe_population().unwrap_or(0)));
    let latin = |name: &str| {
        name.chars()
            .all(|ch| ch.is_ascii() || (ch.is_alphabetic() && (ch as u32) < 0x250))
    };
    for c in &countries {
        let code = c.alpha2().to_string();
        for name in [c.iso_short_name(), c.iso_long_name()]
            .into_iter()
            .chain(c.maybe_nationality())
        {
            m.entry(name.to_lowercase()).or_insert_with(|| code.clone());
        }
    }
    for c in &countries {
        let code = c.alpha2().to_string();
        // Only names written in Latin letters: the list also holds translations.
        for name in c.unofficial_name_list().iter().filter(|n| latin(n)) {
            m.entry(name.to_lowercase()).or_insert_with(|| code.clone());
        }
    }
    m
});

/// The country `text` names (its ISO alpha-2 code): the whole text, or the last of its
/// comma-separated parts ("Cincinnati, Ohio, United States"), or its longest run of words
/// that is a country's name or demonym ("American film director" -> US).
pub fn nation(text: &str) -> Option<&'static str> {
    let lower = text.trim().trim_end_matches('.').to_lowercase();
    if let Some(code) = NATIONS.get(lower.as_str()) {
        return Some(code.as_str());
    }
    if let Some(last) = lower.rsplit(',').next()
        && let Some(code) = NATIONS.get(last.trim())
    {
        return Some(code.as_str());
    }
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_alphanumeric() || c == '-' || c == '\''))
        .filter(|w| !w.is_empty())
        .collect();
    for len in (1..=words.len().min(6)).rev() {
        for window in words.windows(len) {
            let name = window.join(" ");
            // One short word is too easily an ordinary word ("chad", "guinea" aside, "us").
            if len == 1 && name.len() < 4 {
                continue;
            }
            if let Some(code) = NATIONS.get(name.as_str()) {
                return Some(code.as_str());
            }
        }
    }
    None
}

/// A calendar date as precise as its text: a year, perhaps a month, perhaps a day.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Date {
    /// The year.
    pub year: i32,
    /// 1-12, when stated.
    pub month: Option<u8>,
    /// 1-31, when stated with a month.
    pub day: Option<u8>,
}

impl Date {
    /// The first date in `text`: its first year (a number from 100 to 2999 standing
    /// alone), with a month named next to it and a day next to the month ("12 March 1949",
    /// "March 12, 1949", "1949"). Numeric forms ("12/03/1949") are read as a year only,
    /// since their day-month order is ambiguous.
    pub fn parse(text: &str) -> Option<Date> {
        Date::all(text).into_iter().next()
    }

    /// Every date in `text`, in order, each read as [`Date::parse`] reads one.
    pub fn all(text: &str) -> Vec<Date> {
        let lower = text.to_lowercase();
        let tokens: Vec<&str> = lower
            .split(|c: char| !c.is_alphanumeric())
            .filter(|t| !t.is_empty())
            .collect();
        let number = |t: &str| t.parse::<i32>().ok().filter(|_| t.len() <= 4);
        let month_at = |i: usize| -> Option<u8> {
            let t = tokens.get(i)?;
            MONTHS
                .iter()
                .position(|m| t.len() >= 3 && m.starts_with(t))
                .map(|m| m as u8 + 1)
        };
        let day_at = |i: usize| -> Option<u8> {
            let t = tokens.get(i)?;
            let t = t.trim_end_matches(|c: char| c.is_alphabetic()); // 12th
            number(t).filter(|d| (1..=31).contains(d)).map(|d| d as u8)
        };
        tokens
            .iter()
            .enumerate()
            .filter_map(|(at, t)| {
                let year = number(t).filter(|y| (100..3000).contains(y) && t.len() >= 3)?;
                // "12 March 1949" / "March 12, 1949" / "March 1949".
                let (month, day) = match at.checked_sub(1).and_then(month_at) {
                    Some(m) => (Some(m), at.checked_sub(2).and_then(day_at)),
                    None => match at.checked_sub(2).and_then(month_at) {
                        Some(m) => (Some(m), at.checked_sub(1).and_then(day_at)),
                        None => (None, None),
                    },
                };
                Some(Date { year, month, day })
            })
            .collect()
    }

    /// The order of two dates where their text settles it: different years, or the same
    /// year with both months stated (and days, if the months are equal). `None` when the
    /// text cannot tell.
    pub fn order(&self, other: &Date) -> Option<Ordering> {
        let pairs = [
            (Some(self.year), Some(other.year)),
            (self.month.map(i32::from), other.month.map(i32::from)),
            (self.day.map(i32::from), other.day.map(i32::from)),
        ];
        for pair in pairs {
            match pair {
                (Some(a), Some(b)) if a != b => return Some(a.cmp(&b)),
                (Some(_), Some(_)) => continue,
                _ => return None,
            }
        }
        Some(Ordering::Equal)
    }

    /// Whether two dates are the same: equal in every part both state and stating the
    /// same parts; `None` when one states a part the other lacks and they agree so far.
    pub fn same(&self, other: &Date) -> Option<bool> {
        match self.order(other) {
            Some(Ordering::Equal) => Some(true),
            Some(_) => Some(false),
            None => None,
        }
    }

    /// Whether `other` states this date: the same year, and the month and day wherever
    /// both give them.
    pub fn agrees_with(&self, other: &Date) -> bool {
        self.year == other.year
            && self.month.zip(other.month).is_none_or(|(a, b)| a == b)
            && self.day.zip(other.day).is_none_or(|(a, b)| a == b)
    }
}

/// "25 April 1925", "February 1568", "669": as precise as the date is.
impl std::fmt::Display for Date {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let month = self
            .month
            .and_then(|m| MONTHS.get(usize::from(m).checked_sub(1)?));
        let capital = |m: &str| {
            let mut c = m.chars();
            c.next()
                .map(|first| first.to_uppercase().chain(c).collect::<String>())
                .unwrap_or_default()
        };
        match (self.day, month) {
            (Some(d), Some(m)) => write!(f, "{d} {} {}", capital(m), self.year),
            (None, Some(m)) => write!(f, "{} {}", capital(m), self.year),
            _ => write!(f, "{}", self.year),
        }
    }
}

/// A number with its unit as the text gives it ("7,885 m", "about 900 species", "1.2
/// million", "level 3").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Quantity {
    /// The value, in the unit below.
    pub value: f64,
    /// The unit, normalised ("m", "km", "km2", "species"); `None` for a bare number.
    pub unit: Option<String>,
    /// The value as written.
    pub written: String,
}

/// Units that convert, to a base unit and a factor.
const CONVERSIONS: &[(&str, &str, f64)] = &[
    ("m", "m", 1.0),
    ("metre", "m", 1.0),
    ("meter", "m", 1.0),
    ("cm", "m", 0.01),
    ("mm", "m", 0.001),
    ("ft", "m", 0.3048),
    ("foot", "m", 0.3048),
    ("feet", "m", 0.3048),
    ("inch", "m", 0.0254),
    ("km", "m", 1000.0),
    ("kilometre", "m", 1000.0),
    ("kilometer", "m", 1000.0),
    ("mi", "m", 1_609.344),
    ("mile", "m", 1_609.344),
    ("km2", "km2", 1.0),
    ("sq km", "km2", 1.0),
    ("square kilometre", "km2", 1.0),
    ("square kilometer", "km2", 1.0),
    ("sq mi", "km2", 2.589_988),
    ("square mile", "km2", 2.589_988),
    ("ha", "km2", 0.01),
    ("hectare", "km2", 0.01),
    ("acre", "km2", 0.004_046_856),
    ("kg", "kg", 1.0),
    ("kilogram", "kg", 1.0),
    ("g", "kg", 0.001),
    ("gram", "kg", 0.001),
    ("lb", "kg", 0.453_592_37),
    ("pound", "kg", 0.453_592_37),
    ("second", "s", 1.0),
    ("sec", "s", 1.0),
    ("s", "s", 1.0),
    ("ms", "s", 0.001),
    ("millisecond", "s", 0.001),
    ("minute", "s", 60.0),
    ("min", "s", 60.0),
    ("hour", "s", 3600.0),
    ("day", "s", 86_400.0),
    ("week", "s", 604_800.0),
    ("year", "s", 31_557_600.0),
    ("b", "b", 1.0),
    ("byte", "b", 1.0),
    ("kb", "b", 1e3),
    ("kib", "b", 1024.0),
    ("k", "b", 1024.0),
    ("mb", "b", 1e6),
    ("mib", "b", 1_048_576.0),
    ("m", "m", 1.0),
    ("gb", "b", 1e9),
    ("gib", "b", 1_073_741_824.0),
];

const SCALES: &[(&str, f64)] = &[("thousand", 1e3), ("million", 1e6), ("billion", 1e9)];

impl Quantity {
    /// The first number in `text` with the word after it as its unit: "7,885 metres
    /// (25,869 ft)" is 7885 m, "about 900 species" 900 species, "1.2 million" 1,200,000,
    /// "three species" 3 species.
    pub fn parse(text: &str) -> Option<Quantity> {
        let lower = text.to_lowercase();
        let (value, rest) = match lower.bytes().position(|b| b.is_ascii_digit()) {
            Some(start) => scaled_number_at(&lower, start)?,
            None => number_words(&lower)
                .next()
                .map(|(v, end)| (v, &lower[end..]))?,
        };
        // A unit follows its number directly ("16 km", "16km", "4096-bit"): after a comma,
        // an equals sign or a bracket the next word is something else ("b=512, kB=1000"
        // is 512 with no unit, not 512 kB).
        let adjacent = rest.trim_start_matches([' ', '-']);
        let rest = if adjacent.starts_with(|c: char| c.is_alphanumeric() || c == '²') {
            adjacent
        } else {
            ""
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
            } else if w == "species" || w == "series" || w == "ms" {
                w
            } else {
                single.to_string()
            }
        });
        Some(Quantity {
            value,
            unit,
            written: text.trim().to_string(),
        })
    }

    /// How `quote` writes the number `value` ("9,984", "1.2 million", "16 km"), for the
    /// answer to read as the source does rather than as the model typed it (which may be
    /// anything, a JSON object included).
    pub fn written_in(quote: &str, value: f64) -> Option<String> {
        let bytes = quote.as_bytes();
        let close = |x: f64| (x - value).abs() <= 1e-9 * value.abs().max(1.0);
        for (i, c) in quote.char_indices() {
            let follows_number =
                i > 0 && (bytes[i - 1].is_ascii_digit() || matches!(bytes[i - 1], b'.' | b','));
            if !c.is_ascii_digit() || follows_number {
                continue;
            }
            let Some(q) = Quantity::parse(&quote[i..]) else {
                continue;
            };
            if !close(q.value) {
                continue;
            }
            let end = quote[i..]
                .find(|c: char| !(c.is_ascii_digit() || c == ',' || c == '.'))
                .map_or(quote.len(), |e| i + e);
            let number = quote[i..end].trim_end_matches(['.', ',']);
            let plain = number.replace(',', "").parse::<f64>().ok();
            let unit = q
                .unit
                .as_deref()
                .is_some_and(|u| CONVERSIONS.iter().any(|(c, ..)| *c == u));
            // The word after the number belongs to it when it scales it ("million") or is
            // a unit that converts.
            return Some(if unit || plain.is_some_and(|p| !close(p)) {
                let next = quote[end..]
                    .split_whitespace()
                    .next()
                    .unwrap_or("")
                    .trim_end_matches(|c: char| !c.is_alphanumeric());
                format!("{number} {next}").trim().to_string()
            } else {
                number.to_string()
            });
        }
        None
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
    /// units differ and both name something that does not convert.
    pub fn order(&self, other: &Quantity) -> Option<Ordering> {
        let ((a, ua), (b, ub)) = (self.base(), other.base());
        // A bare number against a counted one ("900" and "900 species") is the same
        // count; two named units must be the same unit.
        if let (Some(x), Some(y)) = (ua, ub)
            && x != y
        {
            return None;
        }
        a.partial_cmp(&b)
    }

    /// Whether two quantities are equal (in one unit).
    pub fn same(&self, other: &Quantity) -> Option<bool> {
        self.order(other).map(|o| o == Ordering::Equal)
    }
}

/// An option as a quantity: its number ("after 10", "32,000", "1 MiB blocks"), or one of
/// a unit written with an article ("a minute", "an hour").
pub fn option_quantity(option: &str) -> Option<Quantity> {
    let lower = option.trim().to_lowercase();
    let counted = ["a ", "an "]
        .iter()
        .find_map(|a| lower.strip_prefix(a))
        .map(|unit| format!("1 {unit}"));
    Quantity::parse(counted.as_deref().unwrap_or(&lower))
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
    // One "." is a decimal point ("1.2", "1,234.5"); commas, or several dots, group
    // thousands.
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

/// Numbers up to twenty as words, which sources write where a model writes digits.
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

/// Every number `text` writes, scale words included, as [`Quantity::parse`] reads one;
/// numbers up to twenty in words too.
pub fn numbers(text: &str) -> Vec<f64> {
    let text = text.to_lowercase();
    let b = text.as_bytes();
    // A number starts at a digit that does not continue a word or another number.
    let mut out: Vec<f64> = (0..b.len())
        .filter(|&i| {
            b[i].is_ascii_digit()
                && (i == 0
                    || !(b[i - 1].is_ascii_alphanumeric()
                        || (matches!(b[i - 1], b',' | b'.')
                            && i >= 2
                            && b[i - 2].is_ascii_digit())))
        })
        .filter_map(|i| scaled_number_at(&text, i).map(|(v, _)| v))
        .collect();
    out.extend(number_words(&text).map(|(v, _)| v));
    out
}

static STEMMER: LazyLock<frostem::Stemmer> =
    LazyLock::new(|| frostem::Stemmer::new(frostem::Algorithm::English));

/// The content words of `text`, each stemmed (Snowball English: "formed" meets "form",
/// "ferns" meets "fern"), countries as their ISO codes so that "England" meets "English"
/// where the country data knows both.
pub fn stems(text: &str) -> BTreeSet<String> {
    tokens(text)
        .into_iter()
        .filter(|t| !crate::text::is_stopword(t))
        .map(|t| match NATIONS.get(t.as_str()).filter(|_| t.len() >= 4) {
            Some(code) => format!("@{code}"),
            None => STEMMER.stem(&t).into_owned(),
        })
        .collect()
}

/// The words a predicate is matched by: its [`stems`] without the words that negate it
/// ("won't overwrite an existing archive" is matched by "overwrite", "exist", "archive";
/// its "won" and "t" are the negation [`negated`] reads, not words to find).
pub fn predicate_stems(text: &str) -> BTreeSet<String> {
    let mut out = stems(text);
    out.retain(|w| w != "t" && !NEGATORS.contains(&w.as_str()));
    out
}

/// Words that negate the clause they stand in.
const NEGATORS: &[&str] = &[
    "not", "never", "no", "neither", "nor", "without", "cannot", "none", "nobody", "nothing",
    "isn", "aren", "wasn", "weren", "doesn", "don", "didn", "hasn", "haven", "hadn", "won",
    "wouldn", "shouldn", "couldn", "unable", "lacks", "lack",
];

/// Whether the clause of `quote` that states the most of `predicate`'s words negates it:
/// a negating word ("not", "never", "no longer", "isn't", "without") in that clause
/// before the first of those words, "not only" aside. The clause is the stretch between
/// sentence and clause marks (".", ";", ",", "but", "although", "whereas", "while").
pub fn negated(quote: &str, predicate: &BTreeSet<String>) -> bool {
    let lower = quote.to_lowercase();
    let mut clauses: Vec<String> = Vec::new();
    for part in lower.split(['.', ';', ',', ':', '(', ')']) {
        let mut current = String::new();
        for word in part.split_whitespace() {
            if matches!(word, "but" | "although" | "whereas" | "while" | "however") {
                clauses.push(std::mem::take(&mut current));
            }
            current.push_str(word);
            current.push(' ');
        }
        clauses.push(current);
    }
    let best = clauses
        .iter()
        .max_by_key(|c| stems(c).intersection(predicate).count())
        .cloned()
        .unwrap_or_default();
    if stems(&best).intersection(predicate).count() == 0 {
        return false;
    }
    let words: Vec<String> = best
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect();
    let first = words
        .iter()
        .position(|w| {
            predicate.contains(&STEMMER.stem(w).into_owned())
                || NATIONS
                    .get(w.as_str())
                    .is_some_and(|code| predicate.contains(&format!("@{code}")))
        })
        .unwrap_or(words.len());
    words[..first].iter().enumerate().any(|(i, w)| {
        (NEGATORS.contains(&w.as_str())
            && !(w == "not" && words.get(i + 1).is_some_and(|n| n == "only")))
            // "can't" splits into "can" and "t"; a lone "t" elsewhere is a name ("T
            // seconds").
            || (w == "can" && words.get(i + 1).is_some_and(|n| n == "t"))
    })
}
