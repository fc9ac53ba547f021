//! Text measures the agent decides with: content terms, sentences, overlap, refusals.
//!
//! Every verdict the agent reaches in code (is a claim supported, is a fact found, did two
//! answers converge) rests on these few functions, so they are deliberately simple and
//! deterministic: lowercase alphanumeric word tokens, an English stopword list, and set
//! overlap.

use std::collections::HashSet;

/// Words that carry no content for overlap measures.
const STOPWORDS: &[&str] = &[
    "a", "about", "after", "all", "also", "an", "and", "any", "are", "as", "at", "be", "been",
    "before", "being", "between", "both", "but", "by", "can", "could", "did", "do", "does",
    "during", "each", "either", "for", "from", "had", "has", "have", "he", "her", "hers", "him",
    "his", "how", "i", "if", "in", "into", "is", "it", "its", "many", "more", "most", "much",
    "neither", "no", "nor", "not", "of", "on", "one", "or", "other", "our", "same", "she",
    "should", "so", "some", "such", "than", "that", "the", "their", "them", "then", "there",
    "these", "they", "this", "those", "to", "under", "until", "up", "was", "we", "were", "what",
    "when", "where", "whether", "which", "while", "who", "whom", "whose", "why", "will", "with",
    "would", "yes", "you", "your",
];

/// Lowercase word tokens (letters and digits; everything else separates).
pub fn tokens(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Whether a lowercase token is a stopword.
pub fn is_stopword(token: &str) -> bool {
    STOPWORDS.binary_search(&token).is_ok()
}

/// The set of content terms: tokens that are not stopwords.
pub fn content_terms(text: &str) -> HashSet<String> {
    tokens(text)
        .into_iter()
        .filter(|t| !is_stopword(t))
        .collect()
}

/// Jaccard similarity of two token sets (1.0 for two empty sets: nothing changed).
pub fn jaccard(a: &HashSet<String>, b: &HashSet<String>) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let inter = a.intersection(b).count();
    let union = a.len() + b.len() - inter;
    inter as f64 / union as f64
}

/// Share of `part`'s terms that occur in `whole` (0.0 when `part` is empty).
pub fn recall(part: &HashSet<String>, whole: &HashSet<String>) -> f64 {
    if part.is_empty() {
        return 0.0;
    }
    part.iter().filter(|t| whole.contains(*t)).count() as f64 / part.len() as f64
}

/// Token-level F1 of two short answers over all tokens (the SQuAD measure, without the
/// article stripping the benchmark applies).
pub fn answer_f1(a: &str, b: &str) -> f64 {
    let a = tokens(a);
    let b = tokens(b);
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    let mut pool = b.clone();
    let mut common = 0usize;
    for t in &a {
        if let Some(i) = pool.iter().position(|x| x == t) {
            pool.swap_remove(i);
            common += 1;
        }
    }
    if common == 0 {
        return 0.0;
    }
    let p = common as f64 / a.len() as f64;
    let r = common as f64 / b.len() as f64;
    2.0 * p * r / (p + r)
}

/// Splits text into sentences at `.`, `!` or `?` followed by whitespace and an uppercase
/// letter, digit, quote or bracket, and at line breaks; not after initials, dotted
/// abbreviations ("U.S. Army") or common titles ("Dr. Smith").
pub fn sentences(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut start = 0usize;
    let mut i = 0usize;
    while i < bytes.len() {
        let c = bytes[i];
        let boundary = if c == b'\n' {
            Some(i + 1)
        } else if matches!(c, b'.' | b'!' | b'?') {
            // Skip closing quotes/brackets after the mark.
            let mut j = i + 1;
            while j < bytes.len() && matches!(bytes[j], b'"' | b'\'' | b')' | b']') {
                j += 1;
            }
            let ws = j < bytes.len() && (bytes[j] == b' ' || bytes[j] == b'\t');
            let mut k = j;
            while k < bytes.len() && (bytes[k] == b' ' || bytes[k] == b'\t') {
                k += 1;
            }
            let next_ok = k < bytes.len() && {
                let ch = text[k..].chars().next().unwrap_or(' ');
                ch.is_uppercase() || ch.is_ascii_digit() || matches!(ch, '"' | '(' | '[' | '\'')
            };
            (ws && next_ok && !(c == b'.' && abbreviation(&text[start..i]))).then_some(j)
        } else {
            None
        };
        if let Some(end) = boundary {
            push_trimmed(text, start, end, &mut out);
            start = end;
            i = end;
        } else {
            i += 1;
        }
    }
    push_trimmed(text, start, text.len(), &mut out);
    out
}

/// Whether the word ending a piece (before its period) is an initial ("J."), a dotted
/// abbreviation ("U.S.") or a common title or abbreviation ("Dr.", "St.", "Inc.").
fn abbreviation(piece: &str) -> bool {
    const ABBR: &[&str] = &[
        "mr", "mrs", "ms", "dr", "st", "jr", "sr", "vs", "etc", "no", "inc", "ltd", "co", "corp",
        "gen", "col", "lt", "sgt", "capt", "prof", "rev", "mt", "ft", "approx", "ca",
    ];
    let word = piece.rsplit(char::is_whitespace).next().unwrap_or("");
    let word = word.trim_start_matches(|c: char| !c.is_alphanumeric());
    word.chars().count() == 1 && word.chars().all(char::is_uppercase)
        || word.contains('.')
        || ABBR.contains(&word.to_lowercase().as_str())
}

fn push_trimmed(text: &str, start: usize, end: usize, out: &mut Vec<(usize, usize)>) {
    let piece = &text[start..end];
    let lead = piece.len() - piece.trim_start().len();
    let trail = piece.len() - piece.trim_end().len();
    if piece.trim().is_empty() {
        return;
    }
    out.push((start + lead, end - trail));
}

/// Whether an answer declines to answer ("unknown", "cannot be determined", "not
/// mentioned in the sources").
pub fn is_refusal(answer: &str) -> bool {
    let a = answer.trim().to_lowercase();
    let bare = a.trim_end_matches(['.', '!']).trim();
    if bare.is_empty() {
        return true;
    }
    // Single words that decline only when they are the whole answer: "Unknown Pleasures"
    // and "no answer came" are answers.
    const WHOLE: &[&str] = &["unknown", "not known", "n/a", "no answer", "none given"];
    if WHOLE.contains(&bare) {
        return true;
    }
    const PATTERNS: &[&str] = &[
        "i don't know",
        "i do not know",
        "cannot be determined",
        "can't be determined",
        "cannot determine",
        "not enough information",
        "insufficient information",
        "no information",
        "not mentioned",
        "not provided",
        "not specified",
        "not stated",
        "does not say",
        "do not say",
        "doesn't say",
        "don't say",
        "does not state",
        "do not state",
        "does not mention",
        "do not mention",
        "unable to answer",
        "unable to determine",
        "unable to find",
        "cannot answer",
        "can't answer",
    ];
    PATTERNS.iter().any(|p| a.contains(p))
}

/// Auxiliary verbs that open a yes/no question.
pub(crate) const AUX: &[&str] = &[
    "is", "are", "was", "were", "do", "does", "did", "can", "could", "has", "have", "had", "will",
    "would", "should", "shall", "may", "might",
];

/// The stems a negative contraction leaves before its "t" ("isn't" -> "isn", "t"): an
/// auxiliary too when a "t" follows ("Doesn't the scheduler retry ...?").
const NEGATED_AUX: &[&str] = &[
    "isn", "aren", "wasn", "weren", "don", "doesn", "didn", "can", "couldn", "hasn", "haven",
    "hadn", "won", "wouldn", "shouldn", "mustn", "needn",
];

/// Whether tokens `t` open with an auxiliary verb, a negative contraction included.
fn opens_with_aux(t: &[String]) -> bool {
    t.first().is_some_and(|w| {
        AUX.contains(&w.as_str())
            || (NEGATED_AUX.contains(&w.as_str()) && t.get(1).is_some_and(|n| n == "t"))
    })
}

/// Whether a question is a statement with a tag that asks to confirm it ("The billing
/// service is deprecated, isn't it?", "..., right?"): after its last comma, only an
/// auxiliary and a pronoun (a "not" allowed), or "right" / "correct" / "true".
fn tag_question(question: &str) -> bool {
    let q = question.trim().trim_end_matches('?');
    let Some(i) = q.rfind(',') else {
        return false;
    };
    let t = tokens(&q[i + 1..]);
    let tag = match t.as_slice() {
        [w] => ["right", "correct", "true"].contains(&w.as_str()),
        [_, ..] if opens_with_aux(&t) => {
            let rest = &t[if t.get(1).is_some_and(|n| n == "t") {
                2
            } else {
                1
            }..];
            match rest {
                [p] | [p, _] => {
                    PRONOUNS.contains(&p.as_str()) && rest.get(1).is_none_or(|n| n == "not")
                }
                [] => false,
                _ => false,
            }
        }
        _ => false,
    };
    tag && i > 0
}

/// Words that open a question's main clause.
const QUESTION_WORDS: &[&str] = &[
    "what", "which", "who", "whom", "whose", "where", "when", "why", "how",
];

/// The main clause of a question that opens with a subordinate one: "If I raise the limit
/// while it runs, do the old windows keep theirs?" -> "do the old windows keep theirs?";
/// "When I run it without -n, how many lines does it print?" -> "how many lines does it
/// print?". A question opens with a subordinate clause when its first word opens a
/// condition, a circumstance or a choice ("if", "when", "with", "by", "of", ...) and
/// neither is an auxiliary nor opens the question itself ("when" does only before an
/// auxiliary: "When did ..." asks for a date, "When I run ..." sets a condition); a
/// question beginning otherwise ("The school in the bazaar, or bazar, is located in which
/// country?") is its own main clause, as is one with no comma before an auxiliary or a
/// question word. Otherwise the main clause starts after the first such comma.
pub fn main_clause(question: &str) -> &str {
    let t = tokens(question);
    let Some(first) = t.first() else {
        return question;
    };
    // Only a word that opens a condition, a circumstance or a choice starts a clause
    // before the question: "The school in the bazaar, or bazar, is located in which
    // country?" is a statement-shaped question, not a condition then "is ...?".
    const OPENERS: &[&str] = &[
        "if",
        "when",
        "whenever",
        "while",
        "once",
        "after",
        "before",
        "with",
        "without",
        "unless",
        "until",
        "since",
        "given",
        "assuming",
        "suppose",
        "supposing",
        "by",
        "out",
        "in",
        "on",
        "at",
        "for",
        "during",
        "between",
        "among",
        "of",
        "from",
        "according",
        "say",
        "now",
        "then",
        "apart",
        "besides",
    ];
    let opens_question = opens_with_aux(&t)
        || (QUESTION_WORDS.contains(&first.as_str())
            && (first != "when" || t.get(1).is_some_and(|w| AUX.contains(&w.as_str()))));
    if opens_question || !OPENERS.contains(&first.as_str()) {
        return question;
    }
    let mut from = 0;
    while let Some(i) = question[from..].find(',') {
        let rest = question[from + i + 1..].trim_start();
        let next = tokens(rest).into_iter().next().unwrap_or_default();
        if opens_with_aux(&tokens(rest)) || QUESTION_WORDS.contains(&next.as_str()) {
            return rest;
        }
        from += i + 1;
    }
    question
}

/// Whether a question asks for yes or no: its main clause ([`main_clause`]) starts with
/// an auxiliary verb ("Isn't ..." included), or it is a statement with a confirming tag
/// ("..., isn't it?").
pub fn is_yes_no_question(question: &str) -> bool {
    opens_with_aux(&tokens(main_clause(question))) || tag_question(question)
}

/// The kind of answer a question asks for, from its wording.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerType {
    /// "When ...", "What year ...": a date or year.
    Date,
    /// "How many ...", "How much ...", "How old ...": a number. "How many" and "how much"
    /// ask for a number wherever they stand ("a retailer that has how many stores?").
    Number,
    /// "Is ...", "Did ...": yes or no.
    YesNo,
    /// Anything else.
    Other,
}

/// What a question asks for, read from its main clause ([`main_clause`]): "When I pass
/// no size, how many lines ...?" asks for a number, not a date.
pub fn answer_type(question: &str) -> AnswerType {
    let q = main_clause(question).trim().to_lowercase();
    let t = tokens(&q);
    let starts = |w: &[&str]| t.len() >= w.len() && t.iter().zip(w).all(|(a, b)| a == b);
    // A question opening with an auxiliary asks yes or no whatever it embeds ("Is there a
    // limit on how many tokens one client may hold?"), and so does a confirming tag.
    if is_yes_no_question(question) && options(question).is_none() {
        return AnswerType::YesNo;
    }
    if starts(&["when"])
        || q.contains("what year")
        || q.contains("which year")
        || q.contains("what date")
    {
        AnswerType::Date
    } else if t
        .windows(2)
        .any(|w| w[0] == "how" && (w[1] == "many" || w[1] == "much"))
        || starts(&["how", "old"])
        || starts(&["how", "long"])
    {
        AnswerType::Number
    } else if is_yes_no_question(&q) && options(question).is_none() {
        AnswerType::YesNo
    } else {
        AnswerType::Other
    }
}

/// The months' names, January first (the core crate's list).
pub use metarag_core::time::MONTHS;

/// Whether a question's wording mentions time ("when", "year", "date", "born on",
/// "century", "how old", ...): a question without such words never asks for a date,
/// whatever else it asks.
pub fn asks_about_time(question: &str) -> bool {
    const WORDS: &[&str] = &[
        "when",
        "year",
        "years",
        "date",
        "dates",
        "day",
        "days",
        "month",
        "century",
        "centuries",
        "decade",
        "age",
        "old",
        "long",
        "time",
        "period",
        "era",
        "season",
    ];
    let t = tokens(question);
    t.iter().any(|w| WORDS.contains(&w.as_str()))
        || t.windows(2)
            .any(|w| (w[0] == "born" || w[0] == "died") && w[1] == "on")
}

/// Whether a short answer is a date and nothing else ("16 June 1942", "December 19,
/// 1974", "1872 – 20 July 1928", "c. 1190"): every word a number, a month or a date
/// word, with a month or a year among them. A bare small number ("44") is not a date.
pub fn is_date_phrase(text: &str) -> bool {
    const DATE_WORDS: &[&str] = &[
        "bc", "bce", "ad", "ce", "c", "ca", "circa", "early", "late", "mid", "century",
    ];
    let t = tokens(text);
    let month = |w: &str| {
        MONTHS
            .iter()
            .any(|m| *m == w || (w.len() >= 3 && w.len() <= 4 && m.starts_with(w)))
    };
    let year = |w: &str| (3..=4).contains(&w.len()) && w.chars().all(|c| c.is_ascii_digit());
    let ordinal = |w: &str| {
        let digits = w.trim_end_matches(|c: char| c.is_ascii_alphabetic());
        !digits.is_empty()
            && digits.chars().all(|c| c.is_ascii_digit())
            && ["", "st", "nd", "rd", "th", "s"].contains(&&w[digits.len()..])
    };
    // "8,515" and "1.5" are numbers: a separator between digits is never in a date.
    let separated = text
        .as_bytes()
        .windows(3)
        .any(|w| w[0].is_ascii_digit() && (w[1] == b',' || w[1] == b'.') && w[2].is_ascii_digit());
    !t.is_empty()
        && !separated
        && t.iter().any(|w| month(w) || year(w))
        && t.iter()
            .all(|w| ordinal(w) || month(w) || DATE_WORDS.contains(&w.as_str()))
}

/// Whether text has a number or a date in it (a digit, a month, or a number word).
pub fn has_number_or_date(text: &str) -> bool {
    const WORDS: &[&str] = &[
        "century", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "eleven", "twelve", "hundred", "thousand", "million", "billion", "dozen",
    ];
    text.chars().any(|c| c.is_ascii_digit())
        || tokens(text)
            .iter()
            .any(|t| WORDS.contains(&t.as_str()) || MONTHS.contains(&t.as_str()))
}

/// Whether a word starts like a name: a capital or a digit, after any opening bracket or
/// quote ("(Film)", "\"Jaws\"").
pub(crate) fn name_like(word: &str) -> bool {
    word.trim_start_matches(['(', '"', '\'', '\u{201c}', '\u{2018}'])
        .chars()
        .next()
        .is_some_and(|c| c.is_uppercase() || c.is_ascii_digit())
}

/// Lowercase words that join the parts of one name ("Band of Skulls", "Ivan the
/// Terrible", "Leonardo da Vinci").
pub(crate) const NAME_JOINERS: &[&str] = &[
    "of", "the", "and", "de", "da", "del", "della", "di", "du", "la", "le", "van", "von", "y",
];

/// The two options of an "A or B" question ("Who is older, Alice or Bob?", "Between Alice
/// and Bob, who is older?"), if any. After a comma or colon the left option is the whole
/// rest up to " or " ("Hot toddy", "Sellers v. Grant"), less leading lowercase words ("the
/// film"); without one, the trailing capitalised run before " or ". The right option runs
/// to the question mark, commas included ("Now, Voyager"; for a yes/no question, its
/// capitalised run). Options with no capitalised word are values or phrases ("after 2
/// seconds or after 10", "a minute or an hour"): the left one is the phrase parallel to
/// the right ([`value_left`]). Only the question's last sentence and main clause offer
/// options; a negated fact or a clause after " or " offers none.
pub fn options(question: &str) -> Option<(String, String)> {
    let q = question.trim().trim_end_matches('?');
    if let Some(pair) = between_options(q) {
        return Some(pair);
    }
    // The alternatives are the question's own: in its last sentence ("I have none of A
    // or B set. Which editor ...?") and its main clause ("If I set neither A or B, how
    // long ...?").
    let q = main_clause(last_sentence(q));
    let idx = q.rfind(" or ")?;
    let right = &q[idx + 4..];
    let first_right = right.split_whitespace().next().unwrap_or("");
    // "..., or not?" asks yes or no.
    if first_right.eq_ignore_ascii_case("not") {
        return None;
    }
    // Command-line options are their flags ("--force or -f to overwrite").
    let flag = |w: &str| {
        w.len() > 1
            && w.starts_with('-')
            && w[1..].starts_with(|c: char| c.is_alphanumeric() || c == '-')
    };
    if flag(first_right)
        && let Some(last_left) = q[..idx].split_whitespace().next_back()
        && flag(last_left)
    {
        let trim = |w: &str| w.trim_end_matches([',', '?', '.']).to_string();
        return Some((trim(last_left), trim(first_right)));
    }
    // Options with no capitalised word are values or phrases ("after 2 seconds or after
    // 10", "a minute or an hour", "with gzip or with xz"), not names.
    let right_cut = value_option(right);
    let named = |text: &str| text.split_whitespace().any(|w| w != "I" && starts_upper(w));
    if !right_cut.is_empty() && !named(&right_cut) {
        // "the Nimavar Bazaar, or bazar, is ...": set off by commas on both sides, a
        // lowercase alternative is a gloss of the word before it.
        if q[..idx].trim_end().ends_with(',') && right.contains(',') {
            return None;
        }
        return value_options(&q[..idx], &right_cut);
    }
    // A clause with no name in it ("login or batch workers will the packer start") is
    // no option either.
    if right_cut.is_empty() && !named(right) {
        return None;
    }
    let (a, b) = name_options(q, idx)?;
    // A left option that is missing or a clause ("I get ext4", "metadata get the single
    // profile"): the words parallel to the right option, as for values.
    let words = a.split_whitespace().collect::<Vec<_>>();
    let pronoun = |w: &str| w == "I" || PRONOUNS.contains(&w);
    let clause = words.is_empty()
        || words.first().is_some_and(|w| pronoun(w) || AUX.contains(w))
        || (words.len() > b.split_whitespace().count() + 3
            && !words.iter().any(|w| starts_upper(w) && !pronoun(w)));
    if clause {
        // Only for a right option that follows " or " at once: in "a son or daughter of
        // the director of Love Affair" the name is not the alternative.
        if !right.trim_start().starts_with(&b) {
            return None;
        }
        let left = value_left(&q[..idx], &b)?;
        return Some((left, b));
    }
    Some((a, b))
}

/// Personal pronouns, which start a clause, never an option ("do I get ext4 or XFS").
const PRONOUNS: &[&str] = &["i", "it", "we", "you", "they", "he", "she"];

/// Whether a word starts with an uppercase letter (a digit does not count, unlike
/// [`name_like`]).
fn starts_upper(word: &str) -> bool {
    word.trim_start_matches(['(', '"', '\'', '\u{201c}', '\u{2018}'])
        .chars()
        .next()
        .is_some_and(char::is_uppercase)
}

/// The last sentence of a text: after the last ". " (or "? ", "! ") followed by a capital
/// that ends a word of three or more lowercase letters, or any word of two or more
/// letters before a question's first word ("... or PELT. Which ...?"), so that
/// abbreviations ("Sellers v. Grant", "Dr. Holm") do not end one.
pub fn last_sentence(text: &str) -> &str {
    let b = text.as_bytes();
    let mut start = 0;
    for (i, _) in text.match_indices(['.', '?', '!']) {
        let next_upper = text[i + 1..]
            .strip_prefix(' ')
            .and_then(|r| r.chars().next())
            .is_some_and(char::is_uppercase);
        let word = text[..i]
            .rsplit(|c: char| !c.is_alphanumeric())
            .next()
            .unwrap_or("");
        let lower_word = word.len() >= 3 && word.chars().all(|c| c.is_ascii_lowercase());
        // "... or PELT. Which folder ...?": a question's first word opens a sentence
        // after any word.
        let asks = tokens(&text[i + 1..])
            .first()
            .is_some_and(|w| QUESTION_WORDS.contains(&w.as_str()) || AUX.contains(&w.as_str()));
        if next_upper && (lower_word || (asks && word.len() >= 2)) && b.get(i + 1) == Some(&b' ') {
            start = i + 2;
        }
    }
    &text[start..]
}

/// Words after which a value option ends: what follows qualifies the question, not the
/// option ("at 80 unless I say otherwise", "RAID1 by default", "printf on the input").
const OPTION_ENDS: &[&str] = &[
    "unless", "if", "when", "whenever", "while", "by", "without", "on", "out", "before", "after",
    "because", "assuming", "so", "in", "for", "that", "which",
];

/// Words that narrow the phrase after them ("only when you call sync", "just before it
/// exits"): an option may open with one, and its next word is then where it starts.
const FOCUS: &[&str] = &["only", "just", "even", "also", "still", "right"];

/// Words that open a phrase parallel to another of the same kind ("before the transfer
/// starts or after it finishes", "at night or during the day"): prepositions and
/// subordinating conjunctions.
const LEADS: &[&str] = &[
    "unless", "if", "when", "whenever", "while", "by", "without", "with", "on", "before", "after",
    "in", "for", "at", "from", "to", "until", "once", "since", "during", "within", "under", "over",
    "per", "via", "through", "into",
];

/// Prepositions and conjunctions an article may follow inside one noun phrase ("the
/// filmmaker behind the film", "the size of the file"), beside [`LEADS`].
const JOINS_ARTICLE: &[&str] = &[
    "of",
    "and",
    "or",
    "than",
    "nor",
    "about",
    "above",
    "below",
    "behind",
    "between",
    "among",
    "against",
    "across",
    "along",
    "around",
    "beyond",
    "near",
    "beside",
    "toward",
    "towards",
    "upon",
    "onto",
    "off",
    "out",
    "up",
    "down",
    "like",
    "inside",
    "outside",
    "throughout",
    "despite",
    "except",
    "past",
    "beneath",
    "underneath",
    "amid",
];

/// The index of a phrase's first word past a focusing adverb ([`FOCUS`]).
fn past_focus(words: &[&str]) -> usize {
    usize::from(words.len() > 1 && FOCUS.contains(&words[0].to_lowercase().as_str()))
}

/// The right option of a value alternative: up to a comma, a bracket, a word that starts
/// a qualifier ([`OPTION_ENDS`], never its first word nor the one after a focusing
/// adverb), or an article that opens a second noun phrase ("the search service the one
/// that ...", not after a preposition or an auxiliary); empty when what is left is a clause rather than an option (more than six
/// words).
fn value_option(right: &str) -> String {
    let right = right.split([',', '(', ';']).next().unwrap_or("");
    let words: Vec<&str> = right.split_whitespace().collect();
    let lower = |w: &str| w.to_lowercase();
    let article = |w: &str| matches!(lower(w).as_str(), "a" | "an" | "the");
    let end = words
        .iter()
        .enumerate()
        .skip(1 + past_focus(&words))
        .find(|&(i, w)| {
            OPTION_ENDS.contains(&lower(w).as_str())
                // An article right after a word that cannot lead into it (not a
                // preposition, a conjunction or the option's verb) opens the predicate.
                || (i >= 2
                    && article(w)
                    && !LEADS.contains(&lower(words[i - 1]).as_str())
                    && !JOINS_ARTICLE.contains(&lower(words[i - 1]).as_str())
                    // After an auxiliary, the article opens a clause's subject ("admin
                    // tokens will the gateway issue"): no option, whatever its length.
                    && !AUX.contains(&lower(words[i - 1]).as_str()))
        })
        .map_or(words.len(), |(i, _)| i);
    // "batch workers will the packer start": an auxiliary with words after it is a
    // clause ("as many as it can" ends with one and is an option).
    let clause = words[..end]
        .iter()
        .enumerate()
        .skip(1)
        .any(|(i, w)| i + 1 < end && AUX.contains(&w.to_lowercase().as_str()));
    if end > 6 || clause {
        return String::new();
    }
    words[..end].join(" ")
}

/// Whether a word is a number: digits ("32,000", "4096-bit") or a number word.
fn number_word(word: &str) -> bool {
    const WORDS: &[&str] = &[
        "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "twelve",
        "twenty", "thirty", "hundred", "thousand", "million", "billion", "single", "once", "twice",
        "half",
    ];
    word.chars().next().is_some_and(|c| c.is_ascii_digit())
        || WORDS.contains(
            &word
                .to_lowercase()
                .trim_matches(|c: char| !c.is_alphanumeric()),
        )
}

/// "... X or Y?" with values for options: the left option is the phrase parallel to the
/// right one. `None` when the clause before " or " negates ("doesn't keep the name or
/// the attributes" is one fact, not a choice).
fn value_options(left: &str, right: &str) -> Option<(String, String)> {
    // "Is TLS required, or optional?": a comma before " or " closes the left option,
    // which then runs back to the comma or colon before it, if any ("... faster: ping
    // sending echo requests, or watch rerunning its command?").
    let serial = left.trim_end().ends_with(',');
    let left = left.trim_end().trim_end_matches(',');
    if negates(delimited(left).1) {
        return None;
    }
    let (closed, part) = delimited(left);
    let a = match part.split_whitespace().count() {
        1..=6 if serial && closed => part.trim().to_string(),
        _ => value_left(left, right)?,
    };
    // "is it 2 or is it 12": the words both options open with ask; they are not options.
    let (wa, wb): (Vec<&str>, Vec<&str>) = (
        a.split_whitespace().collect(),
        right.split_whitespace().collect(),
    );
    let shared = wa
        .iter()
        .zip(&wb)
        .take_while(|(x, y)| x.eq_ignore_ascii_case(y))
        .count();
    let asks = |w: &[&str]| {
        w.first()
            .is_some_and(|f| AUX.contains(&f.to_lowercase().as_str()))
            && w[1..]
                .iter()
                .all(|x| x == &"I" || PRONOUNS.contains(&x.to_lowercase().as_str()))
    };
    if shared >= 2 && shared < wa.len().min(wb.len()) && asks(&wa[..shared]) {
        return Some((wa[shared..].join(" "), wb[shared..].join(" ")));
    }
    // "..., or do I need -L?": a second question, not an option.
    if wb.len() > 2 && asks(&wb[..2]) {
        return None;
    }
    // "are they retried or dropped?": the inverted question's opening is not the option.
    if wa.len() > 2 && asks(&wa[..2]) {
        return Some((wa[2..].join(" "), right.to_string()));
    }
    let mut pair = [a, right.to_string()];
    share_unit(&mut pair);
    let [a, b] = pair;
    Some((a, b))
}

/// "two or three days", "1, 5 or 10 seconds", "before or after it encrypts": a bare number
/// (or preposition, or conjunction) before the last option takes the words that follow
/// the last option's first word, when that is of the same kind.
fn share_unit(items: &mut [String]) {
    let lead = |w: &str| LEADS.contains(&w.to_lowercase().as_str());
    let Some(last) = items.last() else {
        return;
    };
    let words: Vec<&str> = last.split_whitespace().collect();
    if words.len() < 2 || !(number_word(words[0]) || lead(words[0])) {
        return;
    }
    let (number, unit) = (words[0].to_string(), words[1..].join(" "));
    let n = items.len();
    for item in &mut items[..n - 1] {
        // "once or once per consumer" is no shared unit; "before or after it encrypts"
        // shares its clause.
        if item.split_whitespace().count() == 1
            && ((number_word(item) && number_word(&number)) || (lead(item) && lead(&number)))
            && !item.eq_ignore_ascii_case(&number)
        {
            *item = format!("{item} {unit}");
        }
    }
}

/// The left option of "... X or Y" given the right one `right`: after a comma or colon,
/// the rest when it is about as long as `right`; else from the last word that mirrors
/// the right option's first ("after 2 seconds or after 10", "the last 20 entries or the
/// last 50"; past a focusing adverb: "when ... or only when ..."), else from the last
/// preposition or conjunction when the right option opens with one ("before the transfer
/// starts or after it finishes"), else from the last number near the end ("32,000 or a million", "one process
/// per CPU or as many as it can"), else from the last article near the end ("the single
/// profile or RAID1"), else as many words as `right` has ("zstd or lzo").
fn value_left(left: &str, right: &str) -> Option<String> {
    let n = right.split_whitespace().count();
    let (delimited, part) = delimited(left);
    let words: Vec<&str> = part.split_whitespace().collect();
    if words.is_empty() {
        return None;
    }
    if delimited && words.len() <= n + 2 {
        return Some(words.join(" "));
    }
    // The left option is about as long as the right one: each rule looks only at the
    // last words ("a file on ext4 32,000 or a million" is "32,000", not from "a").
    let within = |extra: usize| words.len().saturating_sub(n + extra)..words.len();
    let lower = |w: &str| w.to_lowercase();
    let article = |w: &str| matches!(lower(w).as_str(), "a" | "an" | "the");
    let right_words: Vec<&str> = right.split_whitespace().collect();
    let first = right_words
        .get(past_focus(&right_words))
        .map(|w| lower(w))
        .unwrap_or_default();
    // A mirrored word may sit a little further back than the right option is long ("by
    // size and time or by checksum").
    let mirrored = (!number_word(&first))
        .then(|| {
            // An article opens most noun phrases: only the nearest words are mirrored.
            let reach = if article(&first) {
                within(1)
            } else {
                within(3)
            };
            reach
                .rev()
                .find(|&i| lower(words[i]) == first || (article(&first) && article(words[i])))
        })
        .flatten();
    // Else a phrase of the same kind: "before the transfer starts or after it finishes".
    let lead = |w: &str| LEADS.contains(&lower(w).as_str());
    let parallel = lead(&first)
        .then(|| within(3).rev().find(|&i| lead(words[i])))
        .flatten();
    let start = mirrored
        .or(parallel)
        .or_else(|| within(1).rev().find(|&i| number_word(words[i])))
        .or_else(|| within(2).rev().find(|&i| article(words[i])))
        .unwrap_or(words.len().saturating_sub(n));
    Some(words[start..].join(" "))
}

/// The part of `left` after its last comma or colon (a comma between digits groups
/// thousands, "32,000", and does not count), and whether there was one.
fn delimited(left: &str) -> (bool, &str) {
    last_delimiter(left).map_or((false, left), |i| (true, &left[i + 1..]))
}

/// The options of an "A or B" question whose right option names something: the name
/// rules described at [`options`]; `idx` is where " or " starts in `q`.
fn name_options(q: &str, idx: usize) -> Option<(String, String)> {
    // "..., A, or B?": a serial comma before " or " closes the left option, it does not
    // open it.
    let serial_comma = q[..idx].ends_with(',');
    let (left, right) = (q[..idx].trim_end_matches(','), &q[idx + 4..]);
    // "... the Nimavar Bazaar, or bazar, is ...": a lowercase word after ", or" is a
    // gloss, not a second option.
    if serial_comma && !right.split_whitespace().next().is_some_and(name_like) {
        return None;
    }
    let delimited = left.rfind([',', ':']).map(|i| &left[i + 1..]);
    let left = delimited
        .unwrap_or(left)
        .split_whitespace()
        .collect::<Vec<_>>();
    let start = match delimited {
        // "Which drink, the Hot toddy or ...": from the first name-like word on.
        Some(_) => left.iter().position(|w| name_like(w)).unwrap_or(0),
        // Keep the trailing capitalised run of the left part ("the film Jaws" -> "Jaws"),
        // lowercase joining words inside a name included ("members Band of Skulls").
        None => {
            let joiner = |w: &&str| NAME_JOINERS.contains(w);
            // The nearest word on each side that is not a joining word starts like a name.
            let inside_name = |i: usize| {
                joiner(&left[i])
                    && left[..i]
                        .iter()
                        .rev()
                        .find(|w| !joiner(w))
                        .is_some_and(|w| name_like(w))
                    && left[i + 1..]
                        .iter()
                        .find(|w| !joiner(w))
                        .is_some_and(|w| name_like(w))
            };
            (0..left.len())
                .rev()
                .find(|&i| !name_like(left[i]) && !inside_name(i))
                .map_or(0, |i| i + 1)
        }
    };
    // A question's own first word ("Is X or Y?") is not part of the option.
    let start = if start == 0
        && left.len() > 1
        // "Don'T Take Me Home" is a title-cased name, "Don't" an auxiliary.
        && ((is_yes_no_question(left[0]) && !left[0].ends_with('T'))
            || ["which", "who", "what"].contains(&left[0].to_lowercase().as_str()))
    {
        1
    } else {
        start
    };
    // A joining word does not begin a name ("Is the Marsilea or ...").
    let start = start
        + left[start..]
            .iter()
            .take_while(|w| NAME_JOINERS.contains(w))
            .count();
    let a = left[start..].join(" ");
    // "Is A or B public?": the predicate follows the second option, so it ends with its
    // capitalised run. In "Which ..., A or B?" it runs to the question mark: titles have
    // lowercase words ("Lanterns and Ladders") and commas ("Now, Voyager").
    let right: Vec<&str> = right.split_whitespace().collect();
    // "..., the album Blue Sky or the film Red Sea?": "Red Sea", as on the left.
    let begin = right.iter().position(|w| name_like(w)).unwrap_or(0);
    let end = if is_yes_no_question(q) {
        right[begin..]
            .iter()
            .position(|w| !name_like(w))
            .filter(|&i| i > 0)
            .map_or(right.len(), |i| begin + i)
    } else {
        right.len()
    };
    let b = right[begin..end].join(" ");
    // An empty left option is the caller's to find (the words parallel to the right one).
    (!b.is_empty()).then_some((a, b))
}

/// Every option a question offers, a list of three or more included ("Which team owns
/// it: platform, data, or billing?", "Does the relay log to syslog, to a file, or to
/// stdout?"): the two [`options`] reads, preceded by each comma-bounded item before them
/// that is parallel to the first ([`parallel_item`]), and by the parallel tail of the
/// question's stem before the first comma ("... log to syslog, to a file, or ..."). A list
/// read as two options would answer "neither" where its first item is right.
pub fn option_list(question: &str) -> Option<Vec<String>> {
    let (a, b) = options(question)?;
    let pair = vec![a.clone(), b];
    let q = question.trim().trim_end_matches('?');
    // "Between A and B, ...": two options, no list.
    let Some(or_at) = q.rfind(" or ") else {
        return Some(pair);
    };
    let q = q[..or_at].trim_end();
    let serial = q.ends_with(',');
    let q = q.trim_end_matches(',');
    // The left option as written: without a unit it shares with the right one.
    let Some(at) = q
        .rfind(a.as_str())
        .or_else(|| q.rfind(a.split_whitespace().next()?))
    else {
        return Some(pair);
    };
    let mut before_items: Vec<String> = Vec::new();
    let mut colon = false;
    let mut before = q[..at].trim_end();
    while let Some(rest) = before.strip_suffix(',') {
        let rest = rest.trim_end();
        let Some(cut) = last_delimiter(rest) else {
            // The stem: only a tail that mirrors the items' opening preposition, or a
            // number among numbers, after an item or not; a name among names only after
            // an item ("Who was born first, Ada Lind, Bo Strand or Cy Holm" has none, "...
            // advised Pellham Studios, Ada Lind or Bo Strand" is no list).
            let named = starts_upper(a.split_whitespace().next().unwrap_or(""));
            if (!named || !before_items.is_empty())
                && let Some(tail) = stem_item(rest, &a)
            {
                before_items.insert(0, tail);
            }
            break;
        };
        let item = rest[cut + 1..].trim();
        if !parallel_item(item, &a) {
            break;
        }
        before_items.insert(0, item.to_string());
        if rest[cut..].starts_with(':') {
            colon = true;
            break;
        }
        before = &rest[..=cut];
    }
    // Titles hold commas ("Salt, Ash And Dusk or Blue Harbour"): names make a list
    // only where a serial comma, a colon or two items before the pair say so.
    let named = a.split_whitespace().any(|w| w != "I" && starts_upper(w));
    if named && !(serial || colon || before_items.len() >= 2) {
        return Some(pair);
    }
    let mut items: Vec<String> = before_items.into_iter().chain(pair.clone()).collect();
    share_unit(&mut items);
    // A list never names one thing twice ("Yes, Yes, Marlow" is a title).
    let distinct: HashSet<String> = items.iter().map(|i| i.to_lowercase()).collect();
    Some(if distinct.len() == items.len() {
        items
    } else {
        pair
    })
}

/// Where the last comma or colon of `text` is, a comma between digits ("32,000") aside.
fn last_delimiter(text: &str) -> Option<usize> {
    let b = text.as_bytes();
    text.char_indices()
        .rev()
        .find(|&(i, c)| {
            (c == ',' || c == ':')
                && !(i > 0
                    && b[i - 1].is_ascii_digit()
                    && b.get(i + 1).is_some_and(u8::is_ascii_digit))
        })
        .map(|(i, _)| i)
}

/// Whether `item` is an option of the same kind as `option`: at most five words and at
/// most two more than `option`, no question word first; a number where it has one; the same opening preposition, conjunction or article (or one
/// of the same kind); otherwise not opened by one; named where it is named.
fn parallel_item(item: &str, option: &str) -> bool {
    let words: Vec<&str> = item.split_whitespace().collect();
    let theirs: Vec<&str> = option.split_whitespace().collect();
    if words.is_empty() || words.len() > 5 || theirs.is_empty() {
        return false;
    }
    let lower = |w: &str| w.to_lowercase();
    let lead = |w: &str| LEADS.contains(&lower(w).as_str());
    let article = |w: &str| matches!(lower(w).as_str(), "a" | "an" | "the");
    let named = |w: &[&str]| w.iter().any(|x| *x != "I" && starts_upper(x));
    let number = |w: &[&str]| w.iter().any(|x| number_word(x));
    let (first, own) = (words[0], theirs[0]);
    // No longer than the option by more than two words, and no question of its own
    // ("which redraws more often, top or watch").
    if words.len() > theirs.len() + 2 || QUESTION_WORDS.contains(&lower(first).as_str()) {
        return false;
    }
    if number(&theirs) != number(&words) && !(number(&theirs) && lead(own)) {
        return false;
    }
    let opens_alike = if lead(own) {
        lead(first)
    } else if article(own) {
        article(first) || named(&words)
    } else {
        !lead(first) && !AUX.contains(&lower(first).as_str())
    };
    opens_alike && named(&theirs) == named(&words)
}

/// The item at the end of a question's stem ("Does the relay log to syslog" before ", to a
/// file, or to stdout"): from the last word that mirrors `option`'s first word when that
/// is a preposition or conjunction, the last number when `option` is a number, the
/// trailing capitalised run when `option` is a name; `None` otherwise.
fn stem_item(stem: &str, option: &str) -> Option<String> {
    let words: Vec<&str> = stem.split_whitespace().collect();
    let theirs: Vec<&str> = option.split_whitespace().collect();
    let own = theirs.first()?.to_lowercase();
    let n = theirs.len();
    let near = words.len().saturating_sub(n + 2)..words.len();
    let start = if LEADS.contains(&own.as_str()) {
        near.rev().find(|&i| words[i].to_lowercase() == own)?
    } else if number_word(&own) {
        let last = words.len().checked_sub(1)?;
        number_word(words[last]).then_some(last)?
    } else if starts_upper(theirs[0]) {
        let run = words.iter().rev().take_while(|w| name_like(w)).count();
        (run > 0 && run < words.len()).then(|| words.len() - run)?
    } else {
        return None;
    };
    // The stem's own opening word is never an option ("Is 1, 5 or 10 ...").
    (start > 0).then(|| words[start..].join(" "))
}

/// "Between A and B, which ...?": the two options, when exactly one " and " splits the
/// part before the comma into two name-like halves.
fn between_options(q: &str) -> Option<(String, String)> {
    let rest = q
        .get(..8)
        .filter(|p| p.eq_ignore_ascii_case("between "))
        .map(|_| &q[8..])?;
    let pair = &rest[..rest.find(',')?];
    let mut splits = pair.match_indices(" and ").filter(|(i, _)| {
        let (a, b) = (&pair[..*i], &pair[i + 5..]);
        a.split_whitespace().next().is_some_and(name_like)
            && b.split_whitespace().next().is_some_and(name_like)
    });
    let (i, _) = splits.next()?;
    if splits.next().is_some() {
        return None;
    }
    let (a, b) = (pair[..i].trim(), pair[i + 5..].trim());
    Some((a.to_string(), b.to_string()))
}

/// Why [`reconcile_short_answer`] replaced a short answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShortAnswerFix {
    /// An "A or B?" question whose short answer named neither option (a date, a count)
    /// while the answer named exactly one: that option is the answer.
    OptionFromAnswer,
    /// A yes/no question answered with a sentence: the verdict of the answer (its leading
    /// yes/no, else whether it negates).
    YesNoVerdict,
    /// An open question whose short answer was a bare yes/no while the answer itself was a
    /// short phrase: the phrase is the answer.
    PhraseFromAnswer,
    /// An "A or B?" question whose short answer was a sentence naming both options, one as
    /// the subject of the question's own comparative ("A is younger than B" for "Who is
    /// younger, A or B?"): the subject is the answer.
    ComparisonSubject,
}

impl ShortAnswerFix {
    /// A stable name for traces.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OptionFromAnswer => "option named in the answer",
            Self::YesNoVerdict => "yes/no verdict of the answer",
            Self::PhraseFromAnswer => "phrase of the answer",
            Self::ComparisonSubject => "subject of the comparison",
        }
    }
}

/// Makes the short answer answer the question's form when the model filled the two JSON
/// fields the other way round.
///
/// Small models often put the answer in `answer` ("Piet Ormund [2]", "No") and the
/// supporting detail in `short_answer` ("1881", "The two were not from the same country."),
/// which scores zero although the model was right. Only three unambiguous shapes are fixed
/// (see [`ShortAnswerFix`]); `answer` must be citation-free. Returns the replacement and why,
/// or `None` to keep the short answer.
pub fn reconcile_short_answer(
    question: &str,
    answer: &str,
    short: &str,
) -> Option<(String, ShortAnswerFix)> {
    let short_verdict = yes_no_word(short);
    let answer_tokens = tokens(answer);
    let answer_lead = answer_tokens
        .first()
        .filter(|t| *t == "yes" || *t == "no")
        .map(String::as_str);
    let answer_phrase = || {
        let phrase = answer.trim().trim_end_matches('.').trim();
        (!phrase.is_empty() && phrase.split_whitespace().count() <= 8 && !is_refusal(phrase))
            .then(|| phrase.to_string())
    };
    if is_refusal(short) && short_verdict.is_none() {
        return None;
    }
    if let Some(offered) = option_list(question) {
        let telling = telling_terms(&offered);
        // "Both", "neither", "the same", "it depends" answer an "A or B" question too.
        const NEITHER_OPTION: &[&str] = &[
            "both", "neither", "either", "same", "equal", "equally", "depends", "tie",
        ];
        let short_names = named_options(short, &telling);
        if let [da, db] = telling.as_slice()
            && short_names.len() == 2
        {
            return compared_subject(question, short, da, db)
                .map(|s| (s, ShortAnswerFix::ComparisonSubject));
        }
        if !short_names.is_empty()
            || tokens(short)
                .iter()
                .any(|t| NEITHER_OPTION.contains(&t.as_str()))
        {
            return None;
        }
        let chosen = match named_options(answer, &telling).as_slice() {
            &[one] => offered[one].clone(),
            _ => return None,
        };
        // The answer's own words when it is little more than the option (the option parse
        // can cut a name short: "Bell of Crows" -> "Crows"), up to its verb ("Harlow
        // University is public" -> "Harlow University").
        let chosen = answer_phrase()
            .map(|p| subject(&p))
            .filter(|p| p.split_whitespace().count() <= chosen.split_whitespace().count() + 3)
            .unwrap_or(chosen);
        return Some((chosen, ShortAnswerFix::OptionFromAnswer));
    }
    match answer_type(question) {
        // The answer's own verdict, or "no" from a negation; nothing is guessed (a
        // default "yes" would be the data sets' prior, not the model's answer).
        AnswerType::YesNo if short_verdict.is_none() => answer_lead
            .or_else(|| (negates(short) || negates(answer)).then_some("no"))
            .map(|v| (v.to_string(), ShortAnswerFix::YesNoVerdict)),
        AnswerType::YesNo => None,
        _ if short_verdict.is_some() && answer_lead.is_none() => {
            answer_phrase().map(|p| (p, ShortAnswerFix::PhraseFromAnswer))
        }
        _ => None,
    }
}

/// The terms that tell options apart: each option's content words less every other's
/// ("El Paso" of "El Paso International Airport" against "Grand Forks International
/// Airport"). A disambiguator ("(Film)", "(1952 Film)") and a lone letter ("Heron'S") do
/// not count. Values are told apart by their numbers when every option has one: the unit
/// of "after 2 seconds" is the unit of "after 10" too, and "5 seconds" names neither.
fn telling_terms(options: &[String]) -> Vec<HashSet<String>> {
    let numbers = |o: &str| -> HashSet<String> {
        tokens(&without_brackets(o))
            .into_iter()
            .filter(|t| number_word(t))
            .collect()
    };
    let terms = |o: &str| -> HashSet<String> {
        content_terms(&without_brackets(o))
            .into_iter()
            .filter(|t| t.chars().count() > 1)
            .collect()
    };
    let by_number: Vec<HashSet<String>> = options.iter().map(|o| numbers(o)).collect();
    let sets = if by_number.iter().all(|n| !n.is_empty()) {
        by_number
    } else {
        options.iter().map(|o| terms(o)).collect()
    };
    (0..sets.len())
        .map(|i| {
            let others: HashSet<&String> = sets
                .iter()
                .enumerate()
                .filter(|&(j, _)| j != i)
                .flat_map(|(_, s)| s)
                .collect();
            sets[i]
                .iter()
                .filter(|t| !others.contains(t))
                .cloned()
                .collect()
        })
        .collect()
}

/// Which of `options` `text` names by their telling terms ([`telling_terms`]).
fn named_options(text: &str, telling: &[HashSet<String>]) -> Vec<usize> {
    let terms = content_terms(text);
    telling
        .iter()
        .enumerate()
        .filter(|(_, d)| !d.is_disjoint(&terms))
        .map(|(i, _)| i)
        .collect()
}

/// The option an "A or B?" answer names when its short answer names the other one ("Die
/// Pratermizzi [1]" with short answer "The King Of Masks"), as the question writes it;
/// `None` when the two agree, when either names both options or neither, or when the
/// question has no options. `answer` must be citation-free.
///
/// The two fields of one reply contradict each other, so one is wrong. The answer is the
/// one kept: it is written first, in the model's own words beside its citation, while the
/// short answer constrained to the two titles is a forced choice whose first token the
/// 1.5B model picks at even odds and mostly as the first option. On the committed records
/// (all but one of them reporting-half questions) the answer was right in 20 of 21 such
/// replies; the tuning half's count is in `docs/results/monitor.md`.
pub fn contradicted_option(question: &str, answer: &str, short: &str) -> Option<String> {
    let offered = option_list(question)?;
    let telling = telling_terms(&offered);
    match (
        named_options(answer, &telling).as_slice(),
        named_options(short, &telling).as_slice(),
    ) {
        (&[said], &[picked]) if said != picked => Some(offered[said].clone()),
        _ => None,
    }
}

/// The subject of a sentence that compares the two options in the question's own words
/// ("Mart Van Duren is younger than Madeleine Simms." for "Who is younger, Mart Van Duren or
/// Madeleine Simms?"), when the subject names exactly one option (`da`, `db`: the terms that
/// tell the options apart). The comparative before "than" must be the question's, so "A is
/// older than B" is not read as an answer to "who is younger"; a negated sentence is left
/// alone.
fn compared_subject(
    question: &str,
    short: &str,
    da: &HashSet<String>,
    db: &HashSet<String>,
) -> Option<String> {
    if negates(short) {
        return None;
    }
    let words = tokens(short);
    let than = words.iter().position(|w| w == "than")?;
    let comparative = words[..than].last()?;
    if !tokens(question).contains(comparative) {
        return None;
    }
    let phrase = short.trim().trim_end_matches('.').trim();
    let subject = subject(phrase);
    if subject.split_whitespace().count() == phrase.split_whitespace().count() {
        return None;
    }
    let terms = content_terms(&subject);
    (da.is_disjoint(&terms) != db.is_disjoint(&terms)).then_some(subject)
}

/// The words of a phrase before its first copula ("X is public" -> "X"), or all of it.
fn subject(phrase: &str) -> String {
    const VERBS: &[&str] = &["is", "was", "are", "were", "has", "had"];
    let words: Vec<&str> = phrase.split_whitespace().collect();
    let end = words
        .iter()
        .position(|w| VERBS.contains(&w.to_lowercase().as_str()))
        .filter(|&i| i > 0)
        .unwrap_or(words.len());
    words[..end].join(" ")
}

/// The text without its bracketed parts.
fn without_brackets(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

/// `Some("yes")`/`Some("no")` when the text is that word alone (any case or punctuation).
fn yes_no_word(text: &str) -> Option<&'static str> {
    match tokens(text).as_slice() {
        [w] if w == "yes" => Some("yes"),
        [w] if w == "no" => Some("no"),
        _ => None,
    }
}

/// Whether a sentence says no: a negation word or an "n't" ("different" is not one: two
/// things can differ and the answer still be yes).
fn negates(text: &str) -> bool {
    const NEGATIONS: &[&str] = &["not", "no", "never", "neither", "nor", "none"];
    let lower = text.to_lowercase();
    lower.contains("n't")
        || lower.contains("n\u{2019}t")
        || tokens(&lower)
            .iter()
            .any(|t| NEGATIONS.contains(&t.as_str()))
}

/// The value of string field `field` in a JSON object cut off before its end (a reply that
/// ran out of tokens: `{"short_answer": "Opry Mills is a super-regional shop`): the text
/// after the field's opening quote up to its closing quote or the end, escapes decoded.
/// `None` when the field's string never starts.
pub fn truncated_string_field(reply: &str, field: &str) -> Option<String> {
    let key = format!("\"{field}\"");
    let after_key = &reply[reply.find(&key)? + key.len()..];
    let after_colon = after_key.trim_start().strip_prefix(':')?.trim_start();
    let body = after_colon.strip_prefix('"')?;
    let mut raw = String::new();
    let mut escaped = false;
    for c in body.chars() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == '"' {
            break;
        }
        raw.push(c);
    }
    if escaped {
        // A cut inside an escape ("...\\"): drop its backslash.
        raw.pop();
    }
    // Cut inside a "\\uXXXX" escape: drop the partial escape rather than fail.
    let decoded = serde_json::from_str::<String>(&format!("\"{raw}\""))
        .ok()
        .or_else(|| {
            let cut = raw.rfind("\\u")?;
            serde_json::from_str::<String>(&format!("\"{}\"", &raw[..cut])).ok()
        })?;
    Some(decoded)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stopwords_are_sorted_for_binary_search() {
        let mut sorted = STOPWORDS.to_vec();
        sorted.sort_unstable();
        assert_eq!(sorted, STOPWORDS);
    }
}
