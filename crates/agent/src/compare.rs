//! Date comparisons decided in code: "Which film came out first, A or B?", "Who was born
//! later, A or B?", "Which film has the director who died first, A or B?".
//!
//! A 1.5B writer picks the wrong option of such a question about as often as a coin would
//! even with both facts in its sources (2WikiMultiHopQA open: ~58 F1 on them). Reading one
//! date is within its reach; comparing two is where it slips. So the question is read here
//! ([`DateComparison::of`]: the two options, which end of time wins, which date is asked
//! for), the model is asked for each option's date alone (the prompt is
//! [`crate::prompts::option_date`]), each date is checked against the sources
//! ([`verified_date`]), and the comparison is made by [`decide`]. Anything ambiguous (a
//! date without a year, the same year without months, a date no source states) decides nothing.

use crate::evidence::Source;
use crate::monitor::AnswerForm;
use std::cmp::Ordering;

/// The stop reason of a run whose dates confirmed the written answer: the trace's record
/// that the compare node checked the first answer against two verified facts and found it
/// right (a contradicted answer is recorded as a `Remediation::Compare` instead).
pub const DATES_CONFIRM: &str = "the dates confirm the answer";

/// Which end of time the question asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// "first", "earlier", "older".
    Earliest,
    /// "later", "last", "more recently", "younger".
    Latest,
}

/// An "A or B" question that compares two dates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DateComparison {
    /// The two options, as the question names them.
    pub options: [String; 2],
    /// Which date wins.
    pub direction: Direction,
    /// The date to read for an option, with `{}` where the option goes ("the date of
    /// birth of the director of \"{}\"").
    pub asked: String,
    /// The person whose date is asked, when it is not the option itself ("director" in
    /// "the film whose director was born first"): that person's page is linked from the
    /// option's, not named after it.
    pub role: Option<String>,
}

const EARLIEST: &[&str] = &["first", "earlier", "earliest", "older", "oldest", "sooner"];
const LATEST: &[&str] = &[
    "later", "last", "latest", "recently", "younger", "youngest", "newer", "newest",
];
/// Whose date a bridge comparison reads ("the director of" the film named).
const ROLES: &[&str] = &[
    "director",
    "composer",
    "performer",
    "author",
    "creator",
    "producer",
    "screenwriter",
    "writer",
    "founder",
    "editor",
    "cinematographer",
];

impl DateComparison {
    /// Reads `question` as a date comparison: an "A or B" question (its form is a choice)
    /// whose comparison word ends the clause before the options ("came out first, A or
    /// B?", "born earlier: A or B?", "older between A and B?"). `None` for anything else,
    /// so "Which was the first film to ..., A or B?" is not read as one.
    pub fn of(question: &str) -> Option<DateComparison> {
        let AnswerForm::Choice(allowed) = AnswerForm::of(question) else {
            return None;
        };
        let [a, b, ..] = allowed.as_slice() else {
            return None;
        };
        let lower = question.to_lowercase();
        let words: Vec<&str> = lower
            .split(|c: char| !(c.is_alphanumeric() || matches!(c, ',' | ':' | '?')))
            .filter(|w| !w.is_empty())
            .collect();
        // "Who was born first Doug Liman or Saul Metzstein?", "... first Mahbub ul Haq or
        // Ibn Arabi?": with no comma, the clause ends where a name begins whose words run
        // unbroken by a comma or colon to " or " and end with the first option's.
        let split = |t: &str| -> Vec<String> {
            t.split(|c: char| !(c.is_alphanumeric() || matches!(c, ',' | ':' | '?')))
                .filter(|w| !w.is_empty())
                .map(str::to_string)
                .collect()
        };
        let cased = split(question);
        let first_option = split(&a.to_lowercase());
        let last_or = words.iter().rposition(|w| *w == "or");
        let option_starts = |i: usize| {
            let Some(or) = last_or.filter(|&or| or > i) else {
                return false;
            };
            let run = &words[i..or];
            cased.len() == words.len()
                && crate::text::name_like(&cased[i])
                && !first_option.is_empty()
                && run.len() >= first_option.len()
                && !run.iter().any(|w| w.ends_with([',', ':']))
                && run[run.len() - first_option.len()..] == first_option[..]
        };
        let mut direction = None;
        let mut clause_end: Option<String> = None;
        let mut clause_len = words.len();
        for (i, w) in words.iter().enumerate() {
            let bare = w.trim_end_matches([',', ':', '?']);
            let punctuated = bare.len() < w.len();
            let unpunctuated_end = !punctuated && option_starts(i + 1);
            let ends_clause = punctuated
                || words
                    .get(i + 1)
                    .is_some_and(|n| matches!(*n, "between" | "or" | "than"))
                || unpunctuated_end;
            if !ends_clause {
                continue;
            }
            if EARLIEST.contains(&bare) {
                direction = Some(Direction::Earliest);
            } else if LATEST.contains(&bare) {
                direction = Some(Direction::Latest);
            }
            if direction.is_some() {
                clause_end = if punctuated {
                    Some(w.to_string())
                } else if unpunctuated_end {
                    Some(format!("{bare} "))
                } else {
                    None
                };
                clause_len = i + 1;
                break;
            }
        }
        let direction = direction?;
        let options = clause_end
            .and_then(|end| options_after(question, &lower, &end, [a, b]))
            .unwrap_or_else(|| [a.clone(), b.clone()]);
        // The event and the person asked about are read from the clause before the
        // options: a title's words ("There's One Born Every Minute", "The Story of Father
        // Damien") say nothing about what is compared.
        let words = &words[..clause_len];
        let has = |stems: &[&str]| {
            words.iter().any(|w| {
                let w = w.trim_end_matches([',', ':', '?']);
                stems.iter().any(|s| w.starts_with(s))
            })
        };
        let role = words
            .iter()
            .map(|w| w.trim_end_matches([',', ':', '?']))
            .find(|w| ROLES.contains(w));
        let event = if has(&["born", "birth"]) {
            "date of birth"
        } else if has(&["died", "death", "dead"]) {
            "date of death"
        } else if has(&["releas", "premier"]) || words.join(" ").contains("came out") {
            "release date"
        } else if has(&["found", "formed", "establish", "started", "creat"]) {
            "founding date"
        } else if has(&["publish"]) {
            "publication date"
        } else if has(&["open"]) {
            "opening date"
        } else if has(&["older", "oldest", "younger", "youngest"])
            && (role.is_some() || lower.starts_with("who"))
        {
            "date of birth"
        } else {
            "date"
        };
        let asked = match role {
            Some(role) => format!("the {event} of the {role} of \"{{}}\""),
            None => format!("the {event} of \"{{}}\""),
        };
        Some(DateComparison {
            options,
            direction,
            asked,
            role: role.map(str::to_string),
        })
    }

    /// What to read for option `i` ("the release date of \"Jaws\"").
    pub fn asked_for(&self, i: usize) -> String {
        self.asked.replace("{}", &self.options[i])
    }

    /// Whether `source` can state option `i`'s date: it names the option (in its title or
    /// the spans shown), or, when a person of the option is asked about (its director),
    /// it is a page the option's own sources name by its title. A date read from another
    /// page (a namesake's, "God Created Them" for "...And God Created Them"; a saint's
    /// canonisation for the film about him; another film's director) is not the option's.
    pub fn belongs(&self, i: usize, source: &Source, sources: &[Source]) -> bool {
        let option = &self.options[i];
        names(&shown(source), option)
            || (self.role.is_some() && linked_from(option, source, sources))
    }
}

/// A calendar date as precise as its text: a year, perhaps a month, perhaps a day.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Date {
    /// The year.
    pub year: i32,
    /// 1-12, when stated.
    pub month: Option<u8>,
    /// 1-31, when stated with a month.
    pub day: Option<u8>,
}

use crate::text::MONTHS;

impl Date {
    /// The first date in `text`: its first year (a number from 100 to 2999 standing
    /// alone), with a month named next to it and a day next to the month ("12 March 1949",
    /// "March 12, 1949", "1949"). Numeric forms ("12/03/1949") are read as a year only,
    /// since their day-month order is ambiguous.
    pub fn parse(text: &str) -> Option<Date> {
        let lower = text.to_lowercase();
        let tokens: Vec<&str> = lower
            .split(|c: char| !c.is_alphanumeric())
            .filter(|t| !t.is_empty())
            .collect();
        let number = |t: &str| t.parse::<i32>().ok().filter(|_| t.len() <= 4);
        let (at, year) = tokens.iter().enumerate().find_map(|(i, t)| {
            number(t)
                .filter(|y| (100..3000).contains(y) && t.len() >= 3)
                .map(|y| (i, y))
        })?;
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
        // "12 March 1949" / "March 12, 1949" / "March 1949".
        let (month, day) = match at.checked_sub(1).and_then(month_at) {
            Some(m) => (Some(m), at.checked_sub(2).and_then(day_at)),
            None => match at.checked_sub(2).and_then(month_at) {
                Some(m) => (Some(m), at.checked_sub(1).and_then(day_at)),
                None => (None, None),
            },
        };
        Some(Date { year, month, day })
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
        None
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

/// The date a reply states and the source stating it: the source it cites (numbered as
/// in the prompt) when that states the same year, else the first source that states the
/// date word for word (a small model often cites the wrong number). A date no source
/// states decides nothing.
pub fn verified_date(date: &str, source: usize, sources: &[Source]) -> Option<(Date, usize)> {
    let parsed = Date::parse(date)?;
    // What the model was shown of a source: its title and picked spans.
    let shown = |src: &Source| format!("{} {}", src.passage.title, src.text()).to_lowercase();
    let year = parsed.year.to_string();
    let cited_states_year = sources.iter().find(|s| s.n == source).is_some_and(|src| {
        shown(src)
            .split(|c: char| !c.is_alphanumeric())
            .any(|t| t == year)
    });
    if cited_states_year {
        return Some((parsed, source));
    }
    let words = |t: &str| {
        t.to_lowercase()
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect::<Vec<_>>()
            .join(" ")
    };
    let wanted = words(date);
    sources
        .iter()
        .find(|src| format!(" {} ", words(&shown(src))).contains(&format!(" {wanted} ")))
        .map(|src| (parsed, src.n))
}

/// When both options' dates were read from one source, the option that source is about.
/// A small model asked for the second option's date often copies the first option's from
/// the same passage; the other option's date is then read again without that source.
///
/// The owner is the only option the shared source names (in its title or the spans
/// shown). A source that names neither is a linked page, as a director's is for "which
/// film has the director born first": it belongs to the only option whose own sources (those
/// naming it) name the shared source's title. `None` when that leaves both or neither,
/// since then nothing says whose date it states.
pub fn owner_of_shared(
    options: &[String; 2],
    shared: &Source,
    sources: &[Source],
) -> Option<usize> {
    let only = |named: [bool; 2]| match named {
        [true, false] => Some(0),
        [false, true] => Some(1),
        _ => None,
    };
    let text = shown(shared);
    let direct = [names(&text, &options[0]), names(&text, &options[1])];
    if direct.iter().any(|&d| d) {
        return only(direct);
    }
    only([
        linked_from(&options[0], shared, sources),
        linked_from(&options[1], shared, sources),
    ])
}

/// Whether a source other than `page` names both `option` and `page`'s title: the
/// option's own page links to it (a film's page names its director).
pub(crate) fn linked_from(option: &str, page: &Source, sources: &[Source]) -> bool {
    let title = &page.passage.title;
    sources.iter().filter(|s| s.n != page.n).any(|s| {
        let text = shown(s);
        names(&text, option) && names(&text, title)
    })
}

/// A source's title and shown spans as [`words`].
pub(crate) fn shown(source: &Source) -> String {
    words(&format!("{} {}", source.passage.title, source.text()))
}

/// Whether `text` (as [`words`]) names `name` whole-word.
pub(crate) fn names(text: &str, name: &str) -> bool {
    let name = words(name);
    name.trim().len() > 1 && text.contains(&name)
}

/// The word counts of the shorter and the longer of `a` and `b` ([`words`]) when every
/// word of the shorter is in the longer, else `None`; `None` too when either has no words.
pub(crate) fn within(a: &str, b: &str) -> Option<(usize, usize)> {
    let (a, b) = (words(a), words(b));
    let (a, b): (Vec<&str>, Vec<&str>) = (
        a.split_whitespace().collect(),
        b.split_whitespace().collect(),
    );
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    (!short.is_empty() && short.iter().all(|w| long.contains(w)))
        .then_some((short.len(), long.len()))
}

/// `text` lower-cased as its alphanumeric words, accents dropped ("Companéez" and
/// "Companeez" are one name, as pages and questions spell it either way), one space
/// between and around them, so that a name is found whole-word by `contains`.
pub(crate) fn words(text: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    let folded: String = text
        .nfd()
        .filter(|c| !unicode_normalization::char::is_combining_mark(*c))
        .collect();
    let joined = folded
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    format!(" {joined} ")
}

/// The options as written after the clause that `end` (the comparison word with its comma
/// or colon, lower-cased) closes: the left one is everything up to the last " or ", less
/// leading lowercase words ("the film"). [`crate::text::options`] cuts the left option at
/// its last comma or colon, which splits titles that have one ("Home, James",
/// "Molokai: The Story of Father Damien") and drops a leading "..."; a date read for the
/// cut name can be another page's. `None` unless the result extends `parsed` (the left
/// option ends with the parsed one, the right is the same), so an odd question keeps the
/// parser's reading.
fn options_after(
    question: &str,
    lower: &str,
    end: &str,
    parsed: [&String; 2],
) -> Option<[String; 2]> {
    // Byte offsets agree between `question` and `lower` only where lower-casing kept every
    // character's length; otherwise keep the parser's options.
    if lower.len() != question.len() {
        return None;
    }
    let at = lower.match_indices(end).map(|(i, _)| i).find(|&i| {
        lower[..i]
            .chars()
            .next_back()
            .is_none_or(|c| !c.is_alphanumeric())
    })?;
    let rest = question.get(at + end.len()..)?.trim().trim_end_matches('?');
    let split = rest.rfind(" or ")?;
    let left: Vec<&str> = rest[..split].split_whitespace().collect();
    let start = left
        .iter()
        .position(|w| !w.chars().all(|c| c.is_lowercase()))
        .unwrap_or(0);
    let a = left[start..].join(" ");
    let b = rest[split + 4..].trim().to_string();
    (a.ends_with(parsed[0].as_str()) && b == *parsed[1]).then_some([a, b])
}

/// The two options of an "A or B" question and the words before them ([`crate::text::tokens`]):
/// what a comparison compares is said there, and an option's own words ("More Than
/// Words", "Lived Longer") say nothing about it. `None` for a question of another form.
pub(crate) fn choice_clause(question: &str) -> Option<([String; 2], Vec<String>)> {
    let AnswerForm::Choice(allowed) = AnswerForm::of(question) else {
        return None;
    };
    let [a, b, ..] = allowed.as_slice() else {
        return None;
    };
    let q = question.trim();
    let or = q.rfind(" or ")?;
    let start = q[..or].rfind(a.as_str())?;
    Some(([a.clone(), b.clone()], crate::text::tokens(&q[..start])))
}

/// An "A or B" question that compares two spans of time: two lifetimes ("Who lived longer,
/// A or B?") or how long two things lasted ("Which battle lasted longer, A or B?", "Which
/// satellite was operational for longer, A or B?"). Each option's two dates are read as a
/// date comparison's are, and the lengths are compared in code ([`decide_spans`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpanComparison {
    /// The two options, as the question names them.
    pub options: [String; 2],
    /// The longer span wins ("lived longer"), or the shorter ("lasted shorter").
    pub longer: bool,
    /// A life or a duration: which two dates are read.
    pub kind: SpanKind,
}

/// What a [`SpanComparison`] measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanKind {
    /// A person's life, from birth to death.
    Life,
    /// An event's or a thing's run, from its start to its end.
    Duration,
}

impl SpanKind {
    /// The two dates read for an option, first the start.
    pub fn events(self) -> [&'static str; 2] {
        match self {
            SpanKind::Life => ["date of birth", "date of death"],
            SpanKind::Duration => ["start date", "end date"],
        }
    }

    /// The word for the two dates in a note ("born 1901, died 1990").
    pub fn verbs(self) -> [&'static str; 2] {
        match self {
            SpanKind::Life => ["born", "died"],
            SpanKind::Duration => ["from", "to"],
        }
    }

    /// What is compared, in a note ("the lifespans").
    pub fn label(self) -> &'static str {
        match self {
            SpanKind::Life => "lifespans",
            SpanKind::Duration => "durations",
        }
    }
}

/// Words that say a span is measured: "lived" for a life; "lasted", "operational",
/// "active", "existed" for a duration.
const SPAN_VERBS: &[(&str, SpanKind)] = &[
    ("lived", SpanKind::Life),
    ("lasted", SpanKind::Duration),
    ("operational", SpanKind::Duration),
    ("active", SpanKind::Duration),
    ("existed", SpanKind::Duration),
];

impl SpanComparison {
    /// Reads `question` as a span comparison: an "A or B" question whose words before the
    /// options hold a span word ([`SPAN_VERBS`]) followed, within two words, by "longer"
    /// or "shorter" (or "-est"): "lived the longest", "operational for longer". `None` for
    /// anything else ("Who lived in Tinmouth longer, A or B?" may ask about a stay, not a
    /// life).
    pub fn of(question: &str) -> Option<SpanComparison> {
        let ([a, b], clause) = choice_clause(question)?;
        let (at, kind) = clause.iter().enumerate().find_map(|(i, w)| {
            SPAN_VERBS
                .iter()
                .find(|(verb, _)| verb == w)
                .map(|&(_, kind)| (i, kind))
        })?;
        let next: Vec<&str> = clause[at + 1..]
            .iter()
            .take(2)
            .map(String::as_str)
            .collect();
        let longer = if next.iter().any(|w| matches!(*w, "longer" | "longest")) {
            true
        } else if next.iter().any(|w| matches!(*w, "shorter" | "shortest")) {
            false
        } else {
            return None;
        };
        Some(SpanComparison {
            options: [a, b],
            longer,
            kind,
        })
    }

    /// What to read for option `i` and event `e` (an index of [`SpanKind::events`]): "the
    /// date of death of \"Mira Tolvane\"", "the start date of \"Battle of Velm\"".
    pub fn asked_for(&self, i: usize, e: usize) -> String {
        format!("the {} of \"{}\"", self.kind.events()[e], self.options[i])
    }

    /// Whether `source` can state option `i`'s dates: it names the option (a person's
    /// dates are on their own page).
    pub fn belongs(&self, i: usize, source: &Source) -> bool {
        names(&shown(source), &self.options[i])
    }
}

/// The dates of a life as a page about a person opens with them, in parentheses after the
/// name: "Sammy Drechsel( 25 April 1925, in Berlin – 19 January 1986, in Munich)",
/// "Giuseppe Cesari ( February 1568 – 3 July 1640)". `None` unless the page's first
/// parenthesis (after at most eight words) holds two dates split by a dash that
/// [`two_dates`] reads; a parenthesis with no dash ("(born 1950)") is left to the model.
pub fn span_dates(text: &str) -> Option<[Date; 2]> {
    // Right after the name: a parenthesis later in the page dates something else.
    let open = text
        .find('(')
        .filter(|&i| text[..i].split_whitespace().count() <= 8)?;
    let close = open + text[open..].find(')')?;
    let inner = &text[open + 1..close];
    let (start, end) = inner
        .split_once(['\u{2013}', '\u{2014}'])
        .or_else(|| inner.split_once(" - "))?;
    two_dates(start, end)
}

/// Two dates that start and end a span, as written on either side of a dash or of "to":
/// `None` when either is no date, is uncertain ("c.", "fl.", "?", "or") or before the common
/// era ("BC"), or the end comes first.
fn two_dates(start: &str, end: &str) -> Option<[Date; 2]> {
    let uncertain = |side: &str| {
        crate::text::tokens(side).iter().any(|t| {
            matches!(
                t.as_str(),
                "c" | "ca" | "circa" | "fl" | "or" | "bc" | "bce"
            )
        }) || side.contains('?')
    };
    let read = |side: &str| (!uncertain(side)).then(|| Date::parse(side)).flatten();
    // "19 September – 16 December 1944": the start takes the end's year, or the year
    // before when that would put it after the end ("12 November – 3 January 1945").
    let end = read(end)?;
    let start = read(start).or_else(|| {
        let mut date = read(&format!("{start} {}", end.year)).filter(|d| d.month.is_some())?;
        if date.order(&end) == Some(Ordering::Greater) {
            date.year -= 1;
        }
        Some(date)
    })?;
    span_days(start, end)?;
    Some([start, end])
}

/// A thing's span as the first sentence of its own page states it: its opening
/// parenthesis ([`span_dates`]), or "from X to Y" ("fought from 19 September to 16
/// December 1944", "operational from May 1983 until April 1986"). A life is read only off
/// the parenthesis: "from 1950 to 1960" on a person's page is a post, not a life.
pub fn stated_span(text: &str, kind: SpanKind) -> Option<[Date; 2]> {
    if let Some(span) = span_dates(text) {
        return Some(span);
    }
    if kind != SpanKind::Duration {
        return None;
    }
    static FROM_TO: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"\bfrom\s+([^,;()]{3,40}?)\s+(?:to|until|till|through)\s+([^;()]{3,40}?\d{3,4})\b",
        )
        .expect("a valid pattern")
    });
    let first = crate::text::sentences(text)
        .first()
        .map_or(text, |&(a, b)| &text[a..b]);
    let c = FROM_TO.captures(first)?;
    two_dates(&c[1], &c[2])
}

impl Date {
    /// The first and last day the date can mean, as day numbers: its day, or its month's
    /// first and last, or its year's.
    fn day_range(&self) -> (i64, i64) {
        use metarag_core::time::days_from_civil;
        let day = |y: i32, m: u8, d: u8| days_from_civil(i64::from(y), i64::from(m), i64::from(d));
        let (y, next_year) = (self.year, self.year + 1);
        match (self.month, self.day) {
            (Some(m), Some(d)) => (day(y, m, d), day(y, m, d)),
            (Some(12), None) => (day(y, 12, 1), day(next_year, 1, 1) - 1),
            (Some(m), None) => (day(y, m, 1), day(y, m + 1, 1) - 1),
            _ => (day(y, 1, 1), day(next_year, 1, 1) - 1),
        }
    }
}

/// The shortest and longest a span from `start` to `end` (a life: birth to death)
/// can have lasted, in days, as precisely as the dates are written; `None` when the end
/// cannot come after the start.
pub fn span_days(start: Date, end: Date) -> Option<(i64, i64)> {
    let (s0, s1) = start.day_range();
    let (e0, e1) = end.day_range();
    let (lo, hi) = ((e0 - s1).max(0), e1 - s0);
    (hi > 0).then_some((lo, hi))
}

/// Which option (0 or 1) has the longer span (`longer`) or the shorter, from each option's
/// start and end (birth and death): decided only when the two spans cannot overlap at the
/// precision written (two lives given by years alone that differ by a year are undecided).
pub fn decide_spans(longer: bool, spans: [[Date; 2]; 2]) -> Option<usize> {
    let a = span_days(spans[0][0], spans[0][1])?;
    let b = span_days(spans[1][0], spans[1][1])?;
    let (first_longer, second_longer) = (a.0 > b.1, b.0 > a.1);
    match (first_longer, second_longer) {
        (true, _) => Some(if longer { 0 } else { 1 }),
        (_, true) => Some(if longer { 1 } else { 0 }),
        _ => None,
    }
}

/// Which option (0 or 1) the dates make the answer, when their order is settled.
pub fn decide(direction: Direction, dates: [Date; 2]) -> Option<usize> {
    let order = dates[0].order(&dates[1])?;
    Some(match (direction, order) {
        (Direction::Earliest, Ordering::Less) | (Direction::Latest, Ordering::Greater) => 0,
        _ => 1,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::evidence::test_source as source;

    #[test]
    fn comparison_words_that_end_the_clause_make_a_date_comparison() {
        let c = DateComparison::of("Which film came out first, Blue Harbour or The Glass Fox?")
            .unwrap();
        assert_eq!(
            c.options,
            ["Blue Harbour".to_string(), "The Glass Fox".into()]
        );
        assert_eq!(c.direction, Direction::Earliest);
        assert_eq!(c.asked_for(1), "the release date of \"The Glass Fox\"");

        let c = DateComparison::of(
            "Which film has the director who died later, Blue Harbour or The Glass Fox?",
        )
        .unwrap();
        assert_eq!(c.direction, Direction::Latest);
        assert_eq!(
            c.asked_for(0),
            "the date of death of the director of \"Blue Harbour\""
        );

        let c = DateComparison::of("Who is older, Mira Tolvane or Oskar Fenn?").unwrap();
        assert_eq!(c.direction, Direction::Earliest);
        assert_eq!(c.asked_for(0), "the date of birth of \"Mira Tolvane\"");

        let c =
            DateComparison::of("Which band was formed more recently, Pale Orchard or Tinmouth?")
                .unwrap();
        assert_eq!(c.direction, Direction::Latest);
        assert_eq!(c.asked_for(1), "the founding date of \"Tinmouth\"");

        // The options' own words do not make the event or the person asked about.
        let c = DateComparison::of(
            "Which film has the director who died later, Blue Harbour or There'S One Born Every Minute?",
        )
        .unwrap();
        assert_eq!(
            c.asked_for(1),
            "the date of death of the director of \"There'S One Born Every Minute\""
        );
        let c = DateComparison::of(
            "Which film was released earlier, The Story Of Father Damien or Glass Fox?",
        )
        .unwrap();
        assert_eq!(c.role, None);
        assert_eq!(c.asked_for(1), "the release date of \"Glass Fox\"");

        // No comma between the comparison word and the options: the first option's
        // words end the clause.
        let c = DateComparison::of("Who was born first Mira Tolvane or Oskar Fenn?").unwrap();
        assert_eq!(c.options, ["Mira Tolvane".to_string(), "Oskar Fenn".into()]);
        assert_eq!(c.direction, Direction::Earliest);
        assert_eq!(c.asked_for(1), "the date of birth of \"Oskar Fenn\"");
        let c = DateComparison::of("Who was born first Mira ul Tolvane or Oskar Fenn?").unwrap();
        assert_eq!(
            c.options,
            ["Mira ul Tolvane".to_string(), "Oskar Fenn".into()]
        );
        let c =
            DateComparison::of("Which band was formed later Pale Orchard or Tinmouth?").unwrap();
        assert_eq!(c.direction, Direction::Latest);
        assert_eq!(c.asked_for(0), "the founding date of \"Pale Orchard\"");

        // Titles with a comma, a colon or a leading "..." stay whole.
        for (q, a, b) in [
            (
                "Which film has the director who died later, Home, James (Film) or Blue Harbour?",
                "Home, James (Film)",
                "Blue Harbour",
            ),
            (
                "Which film was released earlier, Molokai: The Story Of Father Damien or Glass Fox?",
                "Molokai: The Story Of Father Damien",
                "Glass Fox",
            ),
            (
                "Which film came out first, ...And God Created Them or The Glass Fox?",
                "...And God Created Them",
                "The Glass Fox",
            ),
            (
                "Which film came out first, the film Blue Harbour or The Glass Fox?",
                "Blue Harbour",
                "The Glass Fox",
            ),
        ] {
            let c = DateComparison::of(q).unwrap();
            assert_eq!(c.options, [a.to_string(), b.to_string()], "{q}");
        }
    }

    #[test]
    fn other_questions_are_not_date_comparisons() {
        for q in [
            "Which was the first film to win the Silver Fox, Blue Harbour or The Glass Fox?",
            "Which river is longer, the Ostra or the Velm?",
            "Who directed Blue Harbour?",
            "Were Mira Tolvane and Oskar Fenn born in the same year?",
            "Which was the first Blue Harbour film, Tinmouth or Glass Fox?",
        ] {
            assert_eq!(DateComparison::of(q), None, "{q}");
        }
    }

    #[test]
    fn lived_longer_questions_compare_two_lifespans() {
        let c = SpanComparison::of("Who lived longer, Mira Tolvane or Oskar Fenn?").unwrap();
        assert_eq!(c.options, ["Mira Tolvane".to_string(), "Oskar Fenn".into()]);
        assert!(c.longer);
        assert_eq!(c.asked_for(1, 1), "the date of death of \"Oskar Fenn\"");
        assert_eq!(c.asked_for(0, 0), "the date of birth of \"Mira Tolvane\"");
        let c = SpanComparison::of("Which painter lived the shortest, Mira Tolvane or Oskar Fenn?")
            .unwrap();
        assert!(!c.longer);
        for q in [
            "Who was born first, Mira Tolvane or Oskar Fenn?",
            "Who lived in Tinmouth longer, Mira Tolvane or Oskar Fenn?",
            "Where did Mira Tolvane live?",
        ] {
            assert_eq!(SpanComparison::of(q), None, "{q}");
        }
        // A date comparison is not a lifespan one, nor the other way round.
        assert_eq!(
            DateComparison::of("Who lived longer, Mira Tolvane or Oskar Fenn?"),
            None
        );
    }

    #[test]
    fn lasted_longer_questions_compare_two_durations() {
        let c =
            SpanComparison::of("Which battle lasted longer, Battle of Velm or Siege of Tinmouth?")
                .unwrap();
        assert_eq!(c.kind, SpanKind::Duration);
        assert!(c.longer);
        assert_eq!(c.asked_for(0, 0), "the start date of \"Battle of Velm\"");
        assert_eq!(c.asked_for(1, 1), "the end date of \"Siege of Tinmouth\"");
        let c = SpanComparison::of(
            "Which satellite was operational for longer, Velm Explorer or Tessa-1?",
        )
        .unwrap();
        assert_eq!((c.kind, c.longer), (SpanKind::Duration, true));
        let c = SpanComparison::of("Who lived longer, Mira Tolvane or Oskar Fenn?").unwrap();
        assert_eq!(c.kind, SpanKind::Life);
        // A length, not a span of time; and a span word with no comparative after it.
        for q in [
            "Which river is longer, the Ostra or the Velm?",
            "Which band was active in Velm, Pale Orchard or Tinmouth?",
        ] {
            assert_eq!(SpanComparison::of(q), None, "{q}");
        }
        // The start of a span takes the end's year when it has none, or the year before.
        let [start, end] =
            span_dates("Battle of Velm (19 September \u{2013} 16 December 1944) was a battle.")
                .unwrap();
        assert_eq!(
            (start.to_string(), end.to_string()),
            (
                "19 September 1944".to_string(),
                "16 December 1944".to_string()
            )
        );
        let [start, _] =
            span_dates("Siege of Tinmouth (12 November \u{2013} 3 January 1945) was a siege.")
                .unwrap();
        assert_eq!(start.to_string(), "12 November 1944");
        // A duration's first sentence may say "from X to Y"; a life's is not read that way.
        let read =
            |t: &str, kind| stated_span(t, kind).map(|[a, b]| (a.to_string(), b.to_string()));
        assert_eq!(
            read(
                "The Siege of Velm was fought from August 4 to September 18, 1950. It ended.",
                SpanKind::Duration
            ),
            Some(("4 August 1950".to_string(), "18 September 1950".to_string()))
        );
        assert_eq!(
            read(
                "Tessa-1 was a telescope operational from May 1983 until April 1986 in orbit.",
                SpanKind::Duration
            ),
            Some(("May 1983".to_string(), "April 1986".to_string()))
        );
        assert_eq!(
            read(
                "Mira Tolvane served as mayor from 1950 to 1960.",
                SpanKind::Life
            ),
            None
        );
        assert_eq!(
            read(
                "Tessa-1 was a telescope. It was operational from May 1983 until April 1986.",
                SpanKind::Duration
            ),
            None
        );
    }

    #[test]
    fn a_pages_opening_parenthesis_gives_its_persons_dates() {
        let read =
            |t: &str| span_dates(t).map(|[b, d]| (b.to_string(), d.to_string(), b.year, d.year));
        assert_eq!(
            read(
                "Mira Tolvane( 2 March 1901, in Velm \u{2013} 14 May 1990, in Tinmouth) was a painter."
            ),
            Some((
                "2 March 1901".to_string(),
                "14 May 1990".to_string(),
                1901,
                1990
            ))
        );
        assert_eq!(
            read(
                "Oskar Fenn (born Oskar Fennel, January 9, 1893 - March 23, 1957) was a composer."
            ),
            Some((
                "9 January 1893".to_string(),
                "23 March 1957".to_string(),
                1893,
                1957
            ))
        );
        let [birth, _] =
            span_dates("Brother Anselm( 669 \u{2013} 11 February 731) was an abbot.").unwrap();
        assert_eq!(
            birth,
            Date {
                year: 669,
                month: None,
                day: None
            }
        );
        for t in [
            "Mira Tolvane (born 1950) is a painter.",
            "Mira Tolvane (c. 1500 \u{2013} 1560) was a painter.",
            "Mira Tolvane (356 BC \u{2013} 323 BC) was a queen.",
            "Mira Tolvane (1990 \u{2013} 1901) was a painter.",
            "Mira Tolvane was a painter of the Velm school, whose pupils included many who would \
             later become known in their own right across the Tessan lands and beyond, among \
             them several who lived long lives and painted well into their old age, and one \
             who founded a school (1920 \u{2013} 1970).",
        ] {
            assert_eq!(span_dates(t), None, "{t}");
        }
    }

    #[test]
    fn lifespans_decide_only_what_their_precision_settles() {
        let d = |y, m, day| Date {
            year: y,
            month: m,
            day,
        };
        // 1900-03-01 .. 1950-03-01 (50 years) against 1910 .. 1955 (44 to 46 years).
        let full = [d(1900, Some(3), Some(1)), d(1950, Some(3), Some(1))];
        let years = [d(1910, None, None), d(1955, None, None)];
        assert_eq!(decide_spans(true, [full, years]), Some(0));
        assert_eq!(decide_spans(false, [full, years]), Some(1));
        assert_eq!(decide_spans(true, [years, full]), Some(1));
        // By years alone, 50 against 49: 48.x to 50.x overlaps 49.x.
        let close = [d(1901, None, None), d(1950, None, None)];
        assert_eq!(
            decide_spans(true, [[d(1900, None, None), d(1950, None, None)], close]),
            None
        );
        // Same years, months apart: 1900-01 .. 1950-12 against 1900-12 .. 1950-01.
        let long = [d(1900, Some(1), None), d(1950, Some(12), None)];
        let short = [d(1900, Some(12), None), d(1950, Some(1), None)];
        assert_eq!(decide_spans(true, [short, long]), Some(1));
        // A death before the birth decides nothing.
        let wrong = [d(1950, None, None), d(1900, None, None)];
        assert_eq!(decide_spans(true, [wrong, full]), None);
        // Leap years and month ends: 29 February 2000 to 1 March 2000 is one day.
        assert_eq!(
            span_days(d(2000, Some(2), Some(29)), d(2000, Some(3), Some(1))),
            Some((1, 1))
        );
        assert_eq!(
            span_days(d(1999, Some(12), Some(31)), d(2000, Some(1), Some(1))),
            Some((1, 1))
        );
        // A month alone spans all its days: February 2000 to March 2000 is 1 to 59 days.
        assert_eq!(
            span_days(d(2000, Some(2), None), d(2000, Some(3), None)),
            Some((1, 59))
        );
        assert_eq!(
            span_days(d(1999, Some(12), None), d(2000, None, None)),
            Some((1, 396))
        );
    }

    #[test]
    fn dates_are_read_as_precisely_as_written() {
        let d = |y, m, day| Date {
            year: y,
            month: m,
            day,
        };
        assert_eq!(
            Date::parse("12 March 1949"),
            Some(d(1949, Some(3), Some(12)))
        );
        assert_eq!(
            Date::parse("March 12th, 1949"),
            Some(d(1949, Some(3), Some(12)))
        );
        assert_eq!(Date::parse("Sept. 1901"), Some(d(1901, Some(9), None)));
        assert_eq!(Date::parse("in 1876 (aged 40)"), Some(d(1876, None, None)));
        assert_eq!(Date::parse("12/03/1949"), Some(d(1949, None, None)));
        assert_eq!(Date::parse("unknown"), None);
        assert_eq!(Date::parse("aged 40"), None);
    }

    #[test]
    fn an_order_is_given_only_where_the_text_settles_it() {
        let p = |t| Date::parse(t).unwrap();
        assert_eq!(p("1950").order(&p("1949")), Some(Ordering::Greater));
        assert_eq!(p("May 1950").order(&p("June 1950")), Some(Ordering::Less));
        assert_eq!(
            p("2 May 1950").order(&p("9 May 1950")),
            Some(Ordering::Less)
        );
        assert_eq!(p("1950").order(&p("June 1950")), None);
        assert_eq!(p("May 1950").order(&p("May 1950")), None);
        assert_eq!(decide(Direction::Earliest, [p("1950"), p("1949")]), Some(1));
        assert_eq!(decide(Direction::Latest, [p("1950"), p("1949")]), Some(0));
        assert_eq!(decide(Direction::Latest, [p("1950"), p("1950")]), None);
    }

    #[test]
    fn a_date_is_verified_by_its_cited_source_or_word_for_word_elsewhere() {
        let sources = [
            source(
                1,
                "Blue Harbour",
                "Blue Harbour is a 1962 film by Ilse Marrow.",
            ),
            source(
                2,
                "Ilse Marrow",
                "Ilse Marrow (born 4 May 1921) was a director.",
            ),
        ];
        let y1962 = Date::parse("1962").unwrap();
        assert_eq!(verified_date("1962", 1, &sources), Some((y1962, 1)));
        // Cited wrongly, found word for word in source 2.
        let may = Date::parse("4 May 1921").unwrap();
        assert_eq!(verified_date("4 May 1921", 1, &sources), Some((may, 2)));
        // A year alone, cited wrongly, is found as a word in source 2.
        assert_eq!(
            verified_date("1921", 1, &sources),
            Some((Date::parse("1921").unwrap(), 2))
        );
        assert_eq!(verified_date("1950", 1, &sources), None);
        assert_eq!(verified_date("unknown", 1, &sources), None);
    }

    #[test]
    fn a_date_belongs_to_the_option_its_page_names_or_links_to() {
        let sources = [
            source(
                1,
                "Blue Harbour",
                "Blue Harbour is a 1962 film by Ilse Marrow.",
            ),
            source(2, "Harbour", "Harbour is a 1931 film by Karl Roth."),
            source(
                3,
                "Ilse Marrow",
                "Ilse Marrow (born 4 May 1921) was a director.",
            ),
            source(
                4,
                "Karl Roth",
                "Karl Roth (born 1 June 1890) was a director.",
            ),
            source(
                5,
                "The Glass Fox",
                "The Glass Fox is a 1958 film by Otto Brandt.",
            ),
        ];
        let films = DateComparison::of("Which film came out first, Blue Harbour or The Glass Fox?")
            .unwrap();
        assert!(films.belongs(0, &sources[0], &sources));
        assert!(films.belongs(1, &sources[4], &sources));
        // A namesake's page is not the option's, nor is its director's for a release date.
        assert!(!films.belongs(1, &sources[1], &sources));
        assert!(!films.belongs(0, &sources[2], &sources));
        let directors = DateComparison::of(
            "Which film has the director born earlier, Blue Harbour or The Glass Fox?",
        )
        .unwrap();
        // Blue Harbour's page names Ilse Marrow; Karl Roth directed another film.
        assert!(directors.belongs(0, &sources[2], &sources));
        assert!(!directors.belongs(0, &sources[3], &sources));
        assert!(!directors.belongs(1, &sources[2], &sources));
    }

    #[test]
    fn a_shared_source_belongs_to_the_option_it_names_or_is_linked_from() {
        let options = ["Blue Harbour".to_string(), "The Glass Fox".to_string()];
        let none = &[];
        let own = source(
            1,
            "Blue Harbour",
            "Blue Harbour is a 1962 film by Ilse Marrow.",
        );
        assert_eq!(owner_of_shared(&options, &own, none), Some(0));
        // Named in the text only, and case aside.
        let text = source(1, "Ilse Marrow", "Marrow directed the glass fox in 1958.");
        assert_eq!(owner_of_shared(&options, &text, none), Some(1));
        // Both named: nothing says whose date it states.
        let both = source(
            1,
            "Festival",
            "Blue Harbour and The Glass Fox premiered in 1962.",
        );
        assert_eq!(owner_of_shared(&options, &both, none), None);
        // A word inside another word is not a name: "Fox" is not in "Foxley".
        let partial = ["Fox".to_string(), "Blue Harbour".to_string()];
        let foxley = source(1, "Foxley", "Foxley is a village founded in 1200.");
        assert_eq!(owner_of_shared(&partial, &foxley, none), None);

        // A page naming neither option belongs to the option whose own page names it.
        let director = source(
            3,
            "Ilse Marrow",
            "Ilse Marrow (born 4 May 1921) was a director.",
        );
        assert_eq!(owner_of_shared(&options, &director, none), None);
        let films = [
            source(
                1,
                "Blue Harbour",
                "Blue Harbour is a 1962 film by Ilse Marrow.",
            ),
            source(
                2,
                "The Glass Fox",
                "The Glass Fox is a 1958 film by Otto Brandt.",
            ),
            director.clone(),
        ];
        assert_eq!(owner_of_shared(&options, &director, &films), Some(0));
        // Linked from both options' pages, or from neither: no owner.
        let both_films = [
            films[0].clone(),
            source(
                2,
                "The Glass Fox",
                "The Glass Fox is a 1958 film by Ilse Marrow.",
            ),
        ];
        assert_eq!(owner_of_shared(&options, &director, &both_films), None);
        let stranger = source(4, "Karl Roth", "Karl Roth (born 1 June 1930) was an actor.");
        assert_eq!(owner_of_shared(&options, &stranger, &films), None);
    }
}
