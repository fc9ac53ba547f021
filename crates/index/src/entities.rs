//! Rule-based entity and relation extraction for the entity graph (seed `001`'s design, no
//! model calls): entities from capitalised spans, acronyms, dates and the noun phrase of a
//! copula, each with a confidence from its length, position, capitalisation and role;
//! relations between neighbouring entities of a sentence from four patterns (copula,
//! subject-verb-object, attribute/possession, prepositional) with the seed's confidences.
//!
//! The same extractor reads queries ([`query_mentions`]), so a question names an entity
//! the way a passage does.

use std::collections::HashMap;
use unicode_segmentation::UnicodeSegmentation;

/// What kind of thing an entity is, as far as surface rules can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntityLabel {
    /// A document's title: the entity its chunks are about.
    Title,
    /// A capitalised span ("Shirley Temple", "University of Cambridge").
    Name,
    /// All capitals ("NASA", "BBC").
    Acronym,
    /// A year, month or day ("1810", "23 July 1810"), normalised to ISO order.
    Date,
    /// The common noun phrase a copula names ("an American actress").
    Concept,
}

impl EntityLabel {
    /// The label's stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            EntityLabel::Title => "title",
            EntityLabel::Name => "name",
            EntityLabel::Acronym => "acronym",
            EntityLabel::Date => "date",
            EntityLabel::Concept => "concept",
        }
    }
}

/// Which pattern produced a relation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Pattern {
    /// "X is a Y".
    Copula,
    /// "X acquired Y".
    Svo,
    /// "X has Y", "X's Y".
    Attribute,
    /// "X in Y".
    Prepositional,
}

impl Pattern {
    /// The seed's confidence for relations of this pattern.
    pub fn confidence(self) -> f32 {
        match self {
            Pattern::Copula => 0.90,
            Pattern::Attribute => 0.85,
            Pattern::Svo => 0.80,
            Pattern::Prepositional => 0.75,
        }
    }

    /// The pattern's stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Pattern::Copula => "copula",
            Pattern::Svo => "svo",
            Pattern::Attribute => "attribute",
            Pattern::Prepositional => "prepositional",
        }
    }
}

/// One entity found in a text.
#[derive(Debug, Clone, PartialEq)]
pub struct Mention {
    /// The normalised form entities are merged by ([`normalize`]).
    pub key: String,
    /// The surface form, as first seen.
    pub name: String,
    /// Its kind.
    pub label: EntityLabel,
    /// How sure the rules are that this is an entity the text is about, 0..=1.
    pub confidence: f32,
}

/// A relation between two mentions of the same extraction, by index.
#[derive(Debug, Clone, PartialEq)]
pub struct Relation {
    /// Index of the subject in [`Extraction::mentions`].
    pub subject: usize,
    /// The verb or preposition, lowercase, words joined by `_` (`is_a`, `has`, `in`).
    pub predicate: String,
    /// Index of the object.
    pub object: usize,
    /// The pattern that matched.
    pub pattern: Pattern,
}

/// The entities of one text, each once (highest confidence kept), and their relations.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Extraction {
    /// Distinct entities.
    pub mentions: Vec<Mention>,
    /// Relations between them, each once.
    pub relations: Vec<Relation>,
}

/// Longest capitalised span taken as one name; longer runs are headlines, not names.
const MAX_NAME_WORDS: usize = 8;
/// Longest title taken as an entity.
const MAX_TITLE_WORDS: usize = 12;
/// Most words between two mentions for a subject-verb-object relation.
const MAX_VERB_WORDS: usize = 4;

/// Extracts the entities and relations of a chunk of a document titled `title`.
pub fn extract(title: &str, text: &str) -> Extraction {
    let mut out = Builder::default();
    let title = title.trim();
    if !title.is_empty() && title.split_whitespace().count() <= MAX_TITLE_WORDS {
        let key = normalize(title);
        if !key.is_empty() {
            out.add(Mention {
                key,
                name: title.to_string(),
                label: EntityLabel::Title,
                confidence: 1.0,
            });
        }
    }
    for (offset, sentence) in text.split_sentence_bound_indices() {
        sentence_entities(sentence, offset, &mut out);
    }
    out.finish()
}

/// The surface forms of the entities a query names, for linking against the graph. Two
/// names joined by "and" are also offered joined ("Kiss and Tell"), before their parts:
/// the linker takes the joined form only where the graph knows it.
pub fn query_mentions(query: &str) -> Vec<String> {
    let mut out = Builder::default();
    for (offset, sentence) in query.split_sentence_bound_indices() {
        let found = sentence_entities(sentence, offset, &mut out);
        let toks = tokens(sentence);
        for pair in found.windows(2) {
            let between: Vec<&str> = toks[pair[0].end..pair[1].start]
                .iter()
                .filter(|t| t.kind != Kind::Space)
                .map(|t| t.text)
                .collect();
            if matches!(between.as_slice(), ["and"] | ["&"]) {
                let joined = format!(
                    "{} {} {}",
                    out.mentions[pair[0].entity].name,
                    between[0],
                    out.mentions[pair[1].entity].name
                );
                out.joined.push(joined);
            }
        }
    }
    let joined = std::mem::take(&mut out.joined);
    // Quoted titles ("the film \"Kiss and Tell\"") are names whatever their case.
    let mut names: Vec<String> = joined;
    names.extend(out.finish().mentions.into_iter().map(|m| m.name));
    for quoted in quoted_spans(query) {
        if !names.contains(&quoted) {
            names.push(quoted);
        }
    }
    names
}

/// The key entities are merged by: lowercase, accents kept, punctuation dropped, a leading
/// article, a trailing parenthetical ("Kiss and Tell (1945 film)") and company suffixes
/// removed, whitespace collapsed.
pub fn normalize(name: &str) -> String {
    let without_paren = match name.find(" (") {
        Some(i) if name.trim_end().ends_with(')') && i > 0 => &name[..i],
        _ => name,
    };
    let mut words: Vec<String> = without_paren
        .split(|c: char| c.is_whitespace() || c == '-' || c == '/')
        .map(|w| {
            w.chars()
                .filter(|c| c.is_alphanumeric() || *c == '&')
                .flat_map(char::to_lowercase)
                .collect::<String>()
        })
        .filter(|w| !w.is_empty())
        .collect();
    if words.len() > 1 && matches!(words[0].as_str(), "the" | "a" | "an") {
        words.remove(0);
    }
    while words.len() > 1
        && matches!(
            words.last().map(String::as_str),
            Some(
                "inc"
                    | "ltd"
                    | "llc"
                    | "corp"
                    | "corporation"
                    | "co"
                    | "plc"
                    | "gmbh"
                    | "sa"
                    | "ag"
                    | "jr"
                    | "sr"
            )
        )
    {
        words.pop();
    }
    words.join(" ")
}

/// Other keys an entity is found by: its acronym ("British Broadcasting Corporation" ->
/// "bbc") when it has three or more capitalised words.
pub fn aliases(name: &str, key: &str) -> Vec<String> {
    let caps: Vec<char> = name
        .split_whitespace()
        .filter_map(|w| w.chars().next())
        .filter(|c| c.is_uppercase())
        .collect();
    let mut out = Vec::new();
    if caps.len() >= 3 {
        let acronym: String = caps.iter().flat_map(|c| c.to_lowercase()).collect();
        if acronym != key {
            out.push(acronym);
        }
    }
    out
}

#[derive(Default)]
struct Builder {
    mentions: Vec<Mention>,
    by_key: HashMap<String, usize>,
    relations: Vec<Relation>,
    /// Names joined by "and" (queries only).
    joined: Vec<String>,
}

impl Builder {
    fn add(&mut self, m: Mention) -> usize {
        if let Some(&i) = self.by_key.get(&m.key) {
            let e = &mut self.mentions[i];
            e.confidence = e.confidence.max(m.confidence);
            return i;
        }
        self.by_key.insert(m.key.clone(), self.mentions.len());
        self.mentions.push(m);
        self.mentions.len() - 1
    }

    fn relate(&mut self, subject: usize, predicate: String, object: usize, pattern: Pattern) {
        if subject == object {
            return;
        }
        let r = Relation {
            subject,
            predicate,
            object,
            pattern,
        };
        if !self.relations.contains(&r) {
            self.relations.push(r);
        }
    }

    fn finish(self) -> Extraction {
        Extraction {
            mentions: self.mentions,
            relations: self.relations,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Word,
    Space,
    Punct,
}

#[derive(Debug, Clone, Copy)]
struct Token<'a> {
    text: &'a str,
    kind: Kind,
}

fn tokens(sentence: &str) -> Vec<Token<'_>> {
    sentence
        .split_word_bounds()
        .map(|t| {
            let kind = if t.chars().any(char::is_alphanumeric) {
                Kind::Word
            } else if t.chars().all(char::is_whitespace) {
                Kind::Space
            } else {
                Kind::Punct
            };
            Token { text: t, kind }
        })
        .collect()
}

/// A mention found in a sentence: which tokens it covers and the entity it became.
struct Found {
    start: usize,
    end: usize,
    entity: usize,
    possessive: bool,
}

fn sentence_entities(sentence: &str, offset: usize, out: &mut Builder) -> Vec<Found> {
    let toks = tokens(sentence);
    let mut found: Vec<Found> = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        if toks[i].kind != Kind::Word {
            i += 1;
            continue;
        }
        if let Some((end, key, name)) = date_at(&toks, i) {
            let entity = out.add(Mention {
                key,
                name,
                label: EntityLabel::Date,
                confidence: 0.7,
            });
            found.push(Found {
                start: i,
                end,
                entity,
                possessive: false,
            });
            i = end;
            continue;
        }
        if is_capitalised(toks[i].text) {
            let (end, words) = name_span(&toks, i);
            if let Some(m) = name_mention(&words, offset, found.is_empty()) {
                let possessive = words.last().is_some_and(|w| possessive_of(w).is_some());
                let entity = out.add(m);
                found.push(Found {
                    start: i,
                    end,
                    entity,
                    possessive,
                });
            }
            i = end.max(i + 1);
            continue;
        }
        i += 1;
    }
    copula_concept(&toks, &found, out);
    for pair in found.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        let between = &toks[a.end..b.start];
        if let Some((predicate, pattern)) = relation_between(between, a.possessive) {
            out.relate(a.entity, predicate, b.entity, pattern);
        }
    }
    found
}

/// "X is a/an/the <lowercase noun phrase>": the phrase becomes a concept entity related to
/// X by `is_a`, when X is the sentence's first mention (its likely subject) and the
/// sentence has no other mention in between.
fn copula_concept(toks: &[Token<'_>], found: &[Found], out: &mut Builder) {
    let Some(subject) = found.first() else {
        return;
    };
    let mut words = toks[subject.end..]
        .iter()
        .enumerate()
        .filter(|(_, t)| t.kind != Kind::Space);
    let Some((_, verb)) = words.next() else {
        return;
    };
    if !matches!(verb.text, "is" | "was" | "are" | "were") {
        return;
    }
    let Some((_, det)) = words.next() else {
        return;
    };
    if !matches!(det.text, "a" | "an" | "the") {
        return;
    }
    let mut phrase: Vec<&str> = Vec::new();
    for (j, t) in words {
        let next_mention = found.get(1).is_some_and(|m| subject.end + j >= m.start);
        let stop = t.kind != Kind::Word
            || next_mention
            || STOP_AFTER_NP.contains(&t.text)
            || t.text.chars().any(|c| c.is_ascii_digit());
        if stop {
            // Numbers and capitalised adjectives ("1945 American comedy film") open the
            // phrase; anything else ends it.
            if phrase.is_empty() && (t.kind == Kind::Word) && !STOP_AFTER_NP.contains(&t.text) {
                continue;
            }
            break;
        }
        if t.text.chars().next().is_some_and(char::is_uppercase) {
            if phrase.is_empty() {
                continue;
            }
            break;
        }
        phrase.push(t.text);
        if phrase.len() == 3 {
            break;
        }
    }
    if phrase.is_empty() {
        return;
    }
    let name = phrase.join(" ");
    let key = normalize(&name);
    if key.len() < 3 {
        return;
    }
    let concept = out.add(Mention {
        key,
        name,
        label: EntityLabel::Concept,
        confidence: 0.5,
    });
    out.relate(subject.entity, "is_a".into(), concept, Pattern::Copula);
}

/// Words that end a copula's noun phrase.
const STOP_AFTER_NP: &[&str] = &[
    "of", "in", "at", "on", "from", "for", "by", "with", "who", "that", "which", "and", "or", "to",
    "as", "based", "known", "located", "directed", "written", "starring", "founded", "born",
    "whose", "where", "when", "but", "than", "since", "during",
];

/// Prepositions that make a prepositional relation when they alone stand between two
/// mentions.
const PREPOSITIONS: &[&str] = &[
    "in", "at", "on", "of", "from", "for", "by", "with", "near", "to", "into", "during", "under",
    "within", "outside", "across", "against", "between", "over",
];

/// Verbs of possession and inclusion.
const HAVE: &[&str] = &[
    "has",
    "had",
    "have",
    "owns",
    "owned",
    "includes",
    "included",
    "contains",
    "contained",
];

/// Common irregular or non -ed verbs that link a subject to an object.
const VERBS: &[&str] = &[
    "wrote",
    "won",
    "led",
    "made",
    "became",
    "married",
    "joined",
    "left",
    "took",
    "gave",
    "built",
    "began",
    "beat",
    "defeated",
    "plays",
    "leads",
    "runs",
    "won",
    "became",
    "met",
    "succeeded",
    "sang",
    "fought",
    "founded",
    "starring",
    "stars",
    "directs",
    "produces",
    "replaced",
    "hosts",
    "hosted",
    "features",
    "featuring",
    "became",
];

/// The relation the tokens between two neighbouring mentions express, if any.
fn relation_between(between: &[Token<'_>], possessive: bool) -> Option<(String, Pattern)> {
    let words: Vec<&str> = between
        .iter()
        .filter(|t| t.kind != Kind::Space)
        .map(|t| t.text)
        .collect();
    if words.is_empty() {
        return possessive.then(|| ("has".to_string(), Pattern::Attribute));
    }
    // Punctuation (a comma, a bracket) separates clauses: no relation across it.
    if words
        .iter()
        .any(|w| !w.chars().all(|c| c.is_alphabetic() || c == '\''))
    {
        return None;
    }
    let lower: Vec<String> = words.iter().map(|w| w.to_lowercase()).collect();
    let first = lower[0].as_str();
    let rest: Vec<&str> = lower[1..].iter().map(String::as_str).collect();
    let only_article =
        |r: &[&str]| r.is_empty() || (r.len() == 1 && matches!(r[0], "a" | "an" | "the"));
    if matches!(first, "is" | "was" | "are" | "were") && only_article(&rest) {
        return Some(("is_a".into(), Pattern::Copula));
    }
    if HAVE.contains(&first) && only_article(&rest) {
        return Some(("has".into(), Pattern::Attribute));
    }
    if PREPOSITIONS.contains(&first) && only_article(&rest) {
        return Some((first.to_string(), Pattern::Prepositional));
    }
    // A verb, or a word before a closing preposition ("lives in", "moved to").
    let verb_phrase = lower.iter().any(|w| is_verb(w))
        || (lower.len() >= 2 && PREPOSITIONS.contains(&lower[lower.len() - 1].as_str()));
    if lower.len() <= MAX_VERB_WORDS && verb_phrase {
        let predicate: Vec<&str> = lower
            .iter()
            .map(String::as_str)
            .filter(|w| !matches!(*w, "a" | "an" | "the"))
            .collect();
        return Some((predicate.join("_"), Pattern::Svo));
    }
    None
}

fn is_verb(w: &str) -> bool {
    (w.len() > 4 && (w.ends_with("ed") || w.ends_with("ing"))) || VERBS.contains(&w)
}

/// Function words that are capitalised only because they open a sentence or a question;
/// they never start a name.
const STOPWORDS: &[&str] = &[
    "the",
    "a",
    "an",
    "in",
    "on",
    "at",
    "of",
    "for",
    "from",
    "with",
    "by",
    "as",
    "to",
    "and",
    "or",
    "but",
    "if",
    "he",
    "she",
    "it",
    "they",
    "we",
    "i",
    "you",
    "his",
    "her",
    "its",
    "their",
    "our",
    "my",
    "your",
    "this",
    "that",
    "these",
    "those",
    "there",
    "here",
    "who",
    "whom",
    "whose",
    "what",
    "which",
    "when",
    "where",
    "why",
    "how",
    "is",
    "are",
    "was",
    "were",
    "be",
    "been",
    "do",
    "does",
    "did",
    "has",
    "have",
    "had",
    "can",
    "could",
    "will",
    "would",
    "should",
    "may",
    "might",
    "after",
    "before",
    "during",
    "since",
    "while",
    "although",
    "though",
    "however",
    "also",
    "both",
    "each",
    "many",
    "some",
    "most",
    "other",
    "such",
    "because",
    "so",
    "then",
    "than",
    "not",
    "no",
    "yes",
    "all",
    "any",
    "one",
    "two",
    "between",
    "about",
    "into",
    "over",
    "under",
    "according",
    "despite",
    "unlike",
    "like",
    "until",
    "upon",
    "whether",
    "either",
    "neither",
    "name",
    "which",
    "following",
];

/// Lowercase words allowed inside a name ("University of Cambridge", "Ludwig van
/// Beethoven"), never at its ends.
const CONNECTORS: &[&str] = &[
    "of", "the", "de", "la", "le", "von", "van", "der", "den", "du", "del", "da", "di", "y", "al",
    "bin", "upon", "for",
];

fn is_capitalised(word: &str) -> bool {
    let mut chars = word.chars();
    chars.next().is_some_and(char::is_uppercase)
}

/// `word` without a possessive `'s`, if it has one.
fn possessive_of(word: &str) -> Option<&str> {
    word.strip_suffix("'s").or_else(|| word.strip_suffix("’s"))
}

/// The capitalised span starting at token `i`: its end (exclusive) and its words, the
/// connectors inside it included.
fn name_span<'a>(toks: &[Token<'a>], i: usize) -> (usize, Vec<&'a str>) {
    let mut words: Vec<&'a str> = Vec::new();
    let mut end = i;
    let mut j = i;
    while j < toks.len() && words.len() < MAX_NAME_WORDS {
        let t = toks[j];
        match t.kind {
            Kind::Word if is_capitalised(t.text) => {
                words.push(t.text);
                end = j + 1;
                if possessive_of(t.text).is_some() {
                    break;
                }
            }
            Kind::Word if CONNECTORS.contains(&t.text) && !words.is_empty() => {
                words.push(t.text);
            }
            // Spaces and a single line break (text wrapped inside a paragraph).
            Kind::Space if t.text.matches('\n').count() <= 1 => {}
            // An initial ("J. R. R. Tolkien") or a hyphenated name ("Jean-Luc").
            Kind::Punct
                if (t.text == "." && words.last().is_some_and(|w| w.chars().count() == 1))
                    || (t.text == "-"
                        && toks.get(j + 1).is_some_and(|n| is_capitalised(n.text))) =>
            {
                if t.text == "-" {
                    // Glue the hyphen to the previous word's next part by pushing it as a
                    // word of its own; `name_mention` joins hyphens without spaces.
                    words.push("-");
                }
            }
            _ => break,
        }
        j += 1;
    }
    // Connectors and hyphens taken at the end were not followed by a name word.
    while words
        .last()
        .is_some_and(|w| CONNECTORS.contains(w) || *w == "-")
    {
        words.pop();
    }
    (end.max(i + 1), words)
}

/// The mention a capitalised span makes, after dropping function words that open it; its
/// confidence from the seed's signals: length, position in the text, capitalisation, and
/// role (the first mention of a sentence is its likely subject).
fn name_mention(words: &[&str], offset: usize, first_in_sentence: bool) -> Option<Mention> {
    let mut start = 0;
    while start < words.len() && STOPWORDS.contains(&words[start].to_lowercase().as_str()) {
        start += 1;
    }
    let words = &words[start..];
    if words.is_empty() {
        return None;
    }
    let mut name = String::new();
    for (k, w) in words.iter().enumerate() {
        let w = if k + 1 == words.len() {
            possessive_of(w).unwrap_or(w)
        } else {
            w
        };
        if k > 0 && w != "-" && words[k - 1] != "-" {
            name.push(' ');
        }
        name.push_str(w);
    }
    let key = normalize(&name);
    if key.chars().count() < 2 {
        return None;
    }
    let name_words = words.iter().filter(|w| is_capitalised(w)).count();
    let acronym = words.len() == 1
        && name.chars().count() >= 2
        && name.chars().all(|c| c.is_uppercase() || c.is_ascii_digit());
    let mut confidence: f32 = match name_words {
        1 if acronym => 0.7,
        1 => 0.5,
        2..=4 => 0.8,
        _ => 0.6,
    };
    if offset < 200 {
        confidence += 0.1;
    }
    if words.iter().all(|w| is_capitalised(w) || *w == "-") {
        confidence += 0.05;
    }
    if first_in_sentence {
        confidence += 0.05;
    }
    Some(Mention {
        key,
        name,
        label: if acronym {
            EntityLabel::Acronym
        } else {
            EntityLabel::Name
        },
        confidence: confidence.min(0.95),
    })
}

fn month(word: &str) -> Option<usize> {
    let w = word.to_lowercase();
    metarag_core::time::month_number(&w).map(|m| m as usize)
}

fn year(word: &str) -> Option<u32> {
    let y: u32 = word.parse().ok().filter(|_| word.len() == 4)?;
    (1000..=2100).contains(&y).then_some(y)
}

fn day(word: &str) -> Option<u32> {
    let d: u32 = word.parse().ok().filter(|_| word.len() <= 2)?;
    (1..=31).contains(&d).then_some(d)
}

/// The words from token `i` on (skipping spaces and punctuation), with their token indices.
fn words_from<'a>(toks: &[Token<'a>], i: usize, n: usize) -> Vec<(usize, &'a str)> {
    toks[i..]
        .iter()
        .enumerate()
        .filter(|(_, t)| t.kind == Kind::Word)
        .take(n)
        .map(|(k, t)| (i + k, t.text))
        .collect()
}

/// A date starting at token `i`: "23 July 1810", "July 23, 1810", "July 1810", "1810",
/// "1990s". Returns the end token, the ISO key and the surface form.
fn date_at(toks: &[Token<'_>], i: usize) -> Option<(usize, String, String)> {
    let w = words_from(toks, i, 3);
    let surface = |end: usize| -> String { toks[i..end].iter().map(|t| t.text).collect() };
    match w.as_slice() {
        [(_, d), (_, m), (k, y), ..]
            if day(d).is_some() && month(m).is_some() && year(y).is_some() =>
        {
            let key = format!("{}-{:02}-{:02}", y, month(m)?, day(d)?);
            Some((k + 1, key, surface(k + 1)))
        }
        [(_, m), (_, d), (k, y), ..]
            if month(m).is_some() && day(d).is_some() && year(y).is_some() =>
        {
            let key = format!("{}-{:02}-{:02}", y, month(m)?, day(d)?);
            Some((k + 1, key, surface(k + 1)))
        }
        [(_, m), (k, y), ..] if month(m).is_some() && year(y).is_some() => {
            let key = format!("{}-{:02}", y, month(m)?);
            Some((k + 1, key, surface(k + 1)))
        }
        [(k, y), ..] if year(y).is_some() => Some((k + 1, y.to_string(), y.to_string())),
        [(k, dec), ..] if dec.len() == 5 && dec.ends_with('s') && year(&dec[..4]).is_some() => {
            Some((k + 1, dec.to_string(), dec.to_string()))
        }
        _ => None,
    }
}

/// Text between straight or curly double quotes, 2 to 80 characters.
fn quoted_spans(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut open: Option<usize> = None;
    for (i, c) in text.char_indices() {
        match (c, open) {
            ('"' | '“', None) => open = Some(i + c.len_utf8()),
            ('"' | '”', Some(s)) => {
                let inner = text[s..i].trim();
                if (2..=80).contains(&inner.chars().count()) {
                    out.push(inner.to_string());
                }
                open = None;
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(e: &Extraction) -> Vec<(&str, EntityLabel)> {
        e.mentions
            .iter()
            .map(|m| (m.name.as_str(), m.label))
            .collect()
    }

    fn relations(e: &Extraction) -> Vec<(String, String, String)> {
        e.relations
            .iter()
            .map(|r| {
                (
                    e.mentions[r.subject].key.clone(),
                    r.predicate.clone(),
                    e.mentions[r.object].key.clone(),
                )
            })
            .collect()
    }

    #[test]
    fn capitalised_spans_dates_and_the_title() {
        let e = extract(
            "Brindlewick Abbey (novel)",
            "Brindlewick Abbey is a 1931 novel by Harriet Ostrova-Lindqvist. It was published in London on 4 March 1931 by the Quillon Press.",
        );
        let n = names(&e);
        assert!(
            n.contains(&("Brindlewick Abbey (novel)", EntityLabel::Title)),
            "{n:?}"
        );
        assert!(
            n.contains(&("Harriet Ostrova-Lindqvist", EntityLabel::Name)),
            "{n:?}"
        );
        assert!(n.contains(&("London", EntityLabel::Name)), "{n:?}");
        assert!(n.contains(&("4 March 1931", EntityLabel::Date)), "{n:?}");
        assert!(n.contains(&("Quillon Press", EntityLabel::Name)), "{n:?}");
        // "It" opens a sentence and is no name; the title's key drops its parenthetical.
        assert!(!n.iter().any(|(name, _)| *name == "It"));
        assert_eq!(e.mentions[0].key, "brindlewick abbey");
        let dates: Vec<&str> = e
            .mentions
            .iter()
            .filter(|m| m.label == EntityLabel::Date)
            .map(|m| m.key.as_str())
            .collect();
        assert_eq!(dates, ["1931", "1931-03-04"]);
    }

    #[test]
    fn the_four_relation_patterns() {
        let e = extract(
            "",
            "Varnholt Labs is a subsidiary of Quenby Group. Quenby Group acquired Tessaly Works. Tessaly Works has Orrin Dalby. Orrin Dalby lives in Marrowgate.",
        );
        let r = relations(&e);
        for want in [
            ("varnholt labs", "is_a", "subsidiary"),
            ("quenby group", "acquired", "tessaly works"),
            ("tessaly works", "has", "orrin dalby"),
            ("orrin dalby", "lives_in", "marrowgate"),
        ] {
            assert!(
                r.contains(&(want.0.into(), want.1.into(), want.2.into())),
                "{want:?} not in {r:?}"
            );
        }
        let patterns: Vec<Pattern> = e.relations.iter().map(|r| r.pattern).collect();
        assert!(patterns.contains(&Pattern::Copula));
        assert!(patterns.contains(&Pattern::Svo));
        assert!(patterns.contains(&Pattern::Attribute));
    }

    #[test]
    fn prepositional_and_possessive_relations() {
        let e = extract(
            "",
            "The office of Pellam Freight in Ostwick closed. Marta Quill's Dovecote Trust grew.",
        );
        let r = relations(&e);
        assert!(
            r.contains(&("pellam freight".into(), "in".into(), "ostwick".into())),
            "{r:?}"
        );
        assert!(
            r.contains(&("marta quill".into(), "has".into(), "dovecote trust".into())),
            "{r:?}"
        );
    }

    #[test]
    fn no_relation_across_a_comma() {
        let e = extract("", "Pellam Freight, Ostwick and Dovecote Trust.");
        assert!(e.relations.is_empty(), "{:?}", e.relations);
    }

    #[test]
    fn normalisation_merges_variants() {
        assert_eq!(normalize("The Quenby Group, Inc."), "quenby group");
        assert_eq!(normalize("Kiss and Tell (1945 film)"), "kiss and tell");
        assert_eq!(normalize("  Jean-Luc   Marden "), "jean luc marden");
        assert_eq!(
            aliases("British Orchard Council", "british orchard council"),
            ["boc"]
        );
        assert!(aliases("Quenby Group", "quenby group").is_empty());
    }

    #[test]
    fn query_mentions_skip_question_words_and_take_quotes() {
        let q = query_mentions(
            "Which film starring Orrin Dalby was released after \"the long harvest\" in 1998?",
        );
        assert!(q.contains(&"Orrin Dalby".to_string()), "{q:?}");
        assert!(q.contains(&"the long harvest".to_string()), "{q:?}");
        assert!(q.contains(&"1998".to_string()), "{q:?}");
        let q = query_mentions("Who directed Salt and Ember, a film about Orrin Dalby?");
        assert_eq!(q[0], "Salt and Ember", "{q:?}");
        assert!(q.contains(&"Salt".to_string()) && q.contains(&"Ember".to_string()));
        assert!(!q.iter().any(|m| m == "Which"), "{q:?}");
    }

    #[test]
    fn confidence_rewards_multiword_early_names() {
        let e = extract("", "Orrin Dalby met Quill.");
        let conf = |k: &str| e.mentions.iter().find(|m| m.key == k).unwrap().confidence;
        assert!(conf("orrin dalby") > conf("quill"));
    }
}
