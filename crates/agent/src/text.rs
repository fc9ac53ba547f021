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
    if a.is_empty() {
        return true;
    }
    const PATTERNS: &[&str] = &[
        "unknown",
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
        "does not mention",
        "do not mention",
        "unable to",
        "cannot answer",
        "can't answer",
        "no answer",
        "n/a",
    ];
    PATTERNS.iter().any(|p| a.contains(p))
}

/// Whether a question asks for yes or no (starts with an auxiliary verb).
pub fn is_yes_no_question(question: &str) -> bool {
    const AUX: &[&str] = &[
        "is", "are", "was", "were", "do", "does", "did", "can", "could", "has", "have", "had",
        "will", "would", "should", "shall", "may", "might",
    ];
    tokens(question)
        .first()
        .is_some_and(|first| AUX.contains(&first.as_str()))
}

/// The kind of answer a question asks for, from its wording.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerType {
    /// "When ...", "What year ...": a date or year.
    Date,
    /// "How many ...", "How much ...", "How old ...": a number.
    Number,
    /// "Is ...", "Did ...": yes or no.
    YesNo,
    /// Anything else.
    Other,
}

/// What a question asks for.
pub fn answer_type(question: &str) -> AnswerType {
    let q = question.trim().to_lowercase();
    let t = tokens(&q);
    let starts = |w: &[&str]| t.len() >= w.len() && t.iter().zip(w).all(|(a, b)| a == b);
    if starts(&["when"])
        || q.contains("what year")
        || q.contains("which year")
        || q.contains("what date")
    {
        AnswerType::Date
    } else if starts(&["how", "many"])
        || starts(&["how", "much"])
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

/// Whether text has a number or a date in it (a digit, a month, or a number word).
pub fn has_number_or_date(text: &str) -> bool {
    const WORDS: &[&str] = &[
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
        "century",
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
        "hundred",
        "thousand",
        "million",
        "billion",
        "dozen",
    ];
    text.chars().any(|c| c.is_ascii_digit())
        || tokens(text).iter().any(|t| WORDS.contains(&t.as_str()))
}

/// The two options of an "A or B" question ("Who is older, Alice or Bob?"), if any: the
/// text before " or " back to the last comma/colon or question word, and after it up to
/// the question mark.
pub fn options(question: &str) -> Option<(String, String)> {
    let q = question.trim().trim_end_matches('?');
    let idx = q.rfind(" or ")?;
    let (left, right) = (&q[..idx], &q[idx + 4..]);
    let left = left
        .rsplit([',', ':'])
        .next()
        .unwrap_or(left)
        .split_whitespace()
        .collect::<Vec<_>>();
    // Keep the trailing capitalised run of the left part ("the film Jaws" -> "Jaws").
    let start = left
        .iter()
        .rposition(|w| {
            !w.chars()
                .next()
                .is_some_and(|c| c.is_uppercase() || c.is_ascii_digit())
        })
        .map_or(0, |i| i + 1);
    // A question's own first word ("Is X or Y?") is not part of the option.
    let start = if start == 0
        && left.len() > 1
        && (is_yes_no_question(left[0])
            || ["which", "who", "what"].contains(&left[0].to_lowercase().as_str()))
    {
        1
    } else {
        start
    };
    let a = left[start..].join(" ");
    let b = right.trim().to_string();
    (!a.is_empty() && !b.is_empty()).then_some((a, b))
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

    #[test]
    fn content_terms_drop_stopwords_and_case() {
        let t = content_terms("Who directed the film Jaws, in 1975?");
        let mut v: Vec<_> = t.into_iter().collect();
        v.sort();
        assert_eq!(v, ["1975", "directed", "film", "jaws"]);
    }

    #[test]
    fn sentences_split_at_marks_followed_by_capitals() {
        let text = "Jaws is a 1975 film. It was directed by Steven Spielberg! The U.S. Army was not involved.\nNew line";
        assert_eq!(sentences("Dr. Smith met J. R. Tolkien. Then.").len(), 2);
        let s: Vec<_> = sentences(text)
            .into_iter()
            .map(|(a, b)| &text[a..b])
            .collect();
        assert_eq!(
            s,
            [
                "Jaws is a 1975 film.",
                "It was directed by Steven Spielberg!",
                "The U.S. Army was not involved.",
                "New line"
            ]
        );
        assert!(sentences("  ").is_empty());
        assert_eq!(sentences("3.5 percent rose. Then.").len(), 2);
    }

    #[test]
    fn overlap_measures() {
        let a = content_terms("Steven Spielberg directed Jaws");
        let b = content_terms("Jaws was directed by Steven Spielberg in 1975");
        assert_eq!(recall(&a, &b), 1.0);
        assert!((jaccard(&a, &b) - 0.8).abs() < 1e-9);
        assert_eq!(jaccard(&HashSet::new(), &HashSet::new()), 1.0);
        assert!((answer_f1("Steven Spielberg", "Spielberg") - 2.0 / 3.0).abs() < 1e-9);
        assert_eq!(answer_f1("", "x"), 0.0);
    }

    #[test]
    fn refusals_and_question_shapes() {
        assert!(is_refusal("The sources do not mention it."));
        assert!(is_refusal(""));
        assert!(!is_refusal("American"));
        assert!(is_yes_no_question(
            "Are Ed Wood and Scott Derrickson of the same nationality?"
        ));
        assert!(!is_yes_no_question(
            "Which country is the director of Jaws from?"
        ));
        assert_eq!(
            options("Who was born first, Alice Smith or Bob Jones?"),
            Some(("Alice Smith".into(), "Bob Jones".into()))
        );
        assert_eq!(
            options("Is Gasherbrum II or Nuptse closest to the tallest mountain?").map(|o| o.0),
            Some("Gasherbrum II".into())
        );
        assert_eq!(options("Which film came out first?"), None);
        assert_eq!(
            answer_type("When was the palace founded?"),
            AnswerType::Date
        );
        assert_eq!(
            answer_type("How many members did it have?"),
            AnswerType::Number
        );
        assert_eq!(answer_type("Are both ferns?"), AnswerType::YesNo);
        assert_eq!(answer_type("Who is older, A or B?"), AnswerType::Other);
        assert!(
            has_number_or_date("the late 12th century") && !has_number_or_date("Spynie Palace")
        );
    }
}
