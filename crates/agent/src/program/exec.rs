//! Running a program: `find` and `follow` read typed values from sources about their
//! subject (searched for over an index when no source is about it yet), each value kept
//! only where code finds it stated in the sentence the model quotes from a source about
//! the subject; the other ops run in code on those values.

use super::plan::{Plan, plan};
use super::values::{
    Date, Kind, Quantity, Value, bare, nation, negated, numbers, option_quantity, predicate_stems,
    same_name, stems,
};
use super::{Op, Program, Subject};
use crate::evidence::{self, Source};
use crate::graph::NodeError;
use crate::monitor::{AnswerForm, says};
use crate::nodes;
use crate::prompts::over_sources;
use crate::state::Run;
use crate::text::{content_terms, tokens};
use crate::trace::{EvidenceMode, RetrievalReason};
use metarag_core::{ChatRequest, OutputSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;

/// How a step ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    /// A read whose value a source about its subject states.
    Grounded,
    /// An op computed in code from grounded values.
    Computed,
    /// The step could not be grounded or computed; the program stops here.
    Unresolved,
}

/// One executed step, as the trace shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StepRecord {
    /// The step's number, from 1.
    pub step: usize,
    /// The op as written: `find("Jaws", "release date", date)`.
    pub op: String,
    /// The subject it was asked of, references resolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// A read's question in words, references resolved ("What is the director of
    /// Jaws?", as the read asked it): what a planner that keeps a reasoning memory records
    /// the fact under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asks: Option<String>,
    /// The value it produced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
    /// The number of the source stating it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<usize>,
    /// The sentence of that source stating it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quote: Option<String>,
    /// How it ended.
    pub status: StepStatus,
    /// Why, in words.
    pub note: String,
}

/// How a program ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum Outcome {
    /// Every step grounded or computed: the answer.
    Resolved {
        /// The cited answer.
        answer: String,
        /// The short answer.
        short_answer: String,
        /// For a `pick` no option answers: what the sources say instead.
        #[serde(default)]
        neither: bool,
    },
    /// A step failed: the strategy answers as standard RAG does.
    Unresolved {
        /// The step, from 1.
        step: usize,
        /// Its op's name.
        op: String,
        /// Why.
        reason: String,
        /// Whether it failed because no source states the fact (a search for
        /// `query` may find it), rather than the values not settling the op.
        missing: bool,
        /// What to search for, for a missing fact.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        query: Option<String>,
    },
    /// The model's program did not parse or type.
    Invalid {
        /// Why.
        reason: String,
    },
    /// A program of one plain read: the written answer is that read already.
    Skipped,
}

/// A question's program and its run (the trace's `records.program`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProgramRun {
    /// The program as lines (`#1 = find(...)`), or the model's reply when it was invalid.
    pub program: String,
    /// The steps run, in order.
    pub steps: Vec<StepRecord>,
    /// How it ended.
    pub outcome: Outcome,
    /// A thing the question names that no document mentions: neither a source nor a
    /// search of the index for it writes its name. The program does not run; metarag
    /// declines (when declining is on) rather than answer about something the documents
    /// never name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unmentioned: Option<String>,
    /// The one thing the program reads facts of, when it follows no relation and the
    /// question writes its name ([`sole_subject`]): an answer none of whose cited
    /// sources mentions it is about something else ([`ProgramRun::off_subject`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
}

impl Outcome {
    /// The outcome's name, as the `program_<name>` metrics and reports write it.
    pub fn name(&self) -> &'static str {
        match self {
            Outcome::Resolved { .. } => "resolved",
            Outcome::Unresolved { .. } => "unresolved",
            Outcome::Invalid { .. } => "invalid",
            Outcome::Skipped => "skipped",
        }
    }
}

impl ProgramRun {
    /// The search for the fact an unresolved step found no source for.
    pub fn missing_fact(&self) -> Option<&str> {
        match &self.outcome {
            Outcome::Unresolved {
                missing: true,
                query,
                ..
            } => query.as_deref(),
            _ => None,
        }
    }

    /// The question of the read that found no source ("What is the director of Jaws?"),
    /// when that is why the run stopped.
    pub fn missing_read(&self) -> Option<&str> {
        self.missing_fact()?;
        self.steps
            .iter()
            .rev()
            .find(|step| step.status == StepStatus::Unresolved)?
            .asks
            .as_deref()
    }

    /// The program's one subject, when `answer` cites sources and none of them mentions
    /// it (see [`mentions`]): the write answered from pages about something else ("the
    /// relay's retry limit" read off a page on the ledger's). Only over an index
    /// (given paragraphs need not write the subject's name) and only for a program of one
    /// subject and no `follow`, whose every fact is the subject's own: a chain's answer is
    /// rightly cited to the page of the thing it reached.
    pub fn off_subject(
        &self,
        mode: EvidenceMode,
        answer: &str,
        sources: &[Source],
    ) -> Option<&str> {
        let subject = self.subject.as_deref()?;
        if mode != EvidenceMode::Retrieval {
            return None;
        }
        let mut cited: Vec<usize> = crate::verify::citations(answer)
            .into_iter()
            .flat_map(|(_, n)| n)
            .collect();
        cited.sort_unstable();
        cited.dedup();
        let terms: Vec<String> = content_terms(subject).into_iter().collect();
        let cited: Vec<&Source> = cited
            .iter()
            .filter_map(|&n| sources.iter().find(|src| src.n == n))
            .collect();
        let about = |src: &&Source| {
            mentions(
                &terms,
                &format!("{} {}", src.passage.title, src.passage.text),
            )
        };
        (!cited.is_empty() && !cited.iter().any(about)).then_some(subject)
    }

    /// Whether every step grounded.
    pub fn resolved(&self) -> bool {
        matches!(self.outcome, Outcome::Resolved { .. })
    }
}

/// The reply to a read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReadReply {
    /// The sentence of a source about the subject that states the value, copied word for
    /// word; empty if none does. Bounded in the grammar: a long sentence copied whole ran
    /// past the token limit and left the reply unparsed, where its first 300 characters
    /// are still the source's words in order.
    #[schemars(length(max = 300))]
    pub quote: String,
    /// The value as the source states it; empty if no source does ("yes" / "no" for a
    /// yes/no read).
    pub value: String,
    /// The number of that source; 0 if none.
    pub source: u32,
}

/// What a read asks for, by kind.
fn kind_hint(kind: Kind) -> &'static str {
    match kind {
        Kind::Person => "a person's name",
        Kind::Place => "a place or a country (a nationality as its country or demonym)",
        Kind::Date => "a date as the source writes it (day, month and year where given)",
        Kind::Quantity => "a number with its unit as the source writes it",
        Kind::List => "every item the source lists, separated by commas",
        Kind::Text => "a name or a short phrase",
        Kind::YesNo => "yes or no",
    }
}

/// The prompt of one read: one fact about one subject, over the same sources as the
/// write (a local model reuses their evaluated prefix). The question is not shown: asked
/// beside it, a small model answers it instead of the one fact.
pub fn read_request(sources: &[Source], subject: &str, property: &str, kind: Kind) -> ChatRequest {
    let task = if kind == Kind::YesNo {
        format!(
            "Answer one thing only: is this true of {subject}: {property}? First copy, word for word, the \
             sentence of a source about {subject} that says whether it is. Then answer yes if that sentence \
             states it, no if it states the opposite or something else, and give the number of that source. \
             If no source says, leave quote and value empty and give source 0.\n\
             Reply in JSON: {{\"quote\": \"...\", \"value\": \"yes\" | \"no\" | \"\", \"source\": 0}}"
        )
    } else {
        format!(
            "Answer one thing only: what is the {property} of {subject}? First copy, word for word, the \
             sentence of a source about {subject} that states it. Then give the value alone ({}), and the \
             number of that source. If no source states it, leave quote and value empty and give source 0.\n\
             Reply in JSON: {{\"quote\": \"...\", \"value\": \"...\", \"source\": 0}}",
            kind_hint(kind)
        )
    };
    let mut request = ChatRequest::new(over_sources(sources, task));
    let mut schema = OutputSchema::of::<ReadReply>();
    if kind == Kind::YesNo
        && let Some(field) = schema
            .schema
            .pointer_mut("/properties/value")
            .and_then(|f| f.as_object_mut())
    {
        field.insert("enum".into(), serde_json::json!(["yes", "no", ""]));
    }
    request.schema = Some(schema);
    request.max_tokens(if kind == Kind::List { 200 } else { 160 })
}

/// The words of `source` that `quote` copies: the quote itself when the source holds its
/// words in order (a model may drop punctuation), else the one sentence of the source
/// that holds three quarters of its content words. The checks then read the source's sentence,
/// never the model's paraphrase of it: a quote that drops the source's "not" ("The
/// billing service is deprecated." from "... is not deprecated.") still matches here, and
/// the sentence returned is the negated one.
fn held(source: &Source, quote: &str) -> Option<String> {
    let q = tokens(quote);
    if q.is_empty() {
        return None;
    }
    let text = &source.passage.text;
    let t = tokens(text);
    if t.windows(q.len()).any(|w| w == q.as_slice()) {
        return Some(quote.trim().to_string());
    }
    let qt = content_terms(quote);
    if qt.is_empty() {
        return None;
    }
    crate::text::sentences(text)
        .iter()
        .map(|&(a, b)| {
            let st = content_terms(&text[a..b]);
            (qt.iter().filter(|w| st.contains(*w)).count(), a, b)
        })
        // Three quarters: the sentence, not the quote, is what the checks then read, so
        // a loose match cannot carry the model's words into them ("purge stale cache
        // files" is "Purge cache files older than date").
        .filter(|&(shared, _, _)| shared * 4 >= qt.len() * 3)
        // The sentence sharing the most; the first of equals.
        .min_by_key(|&(shared, a, _)| (std::cmp::Reverse(shared), a))
        .map(|(_, a, b)| text[a..b].trim().to_string())
}

/// Whether `source` (with the `quote` read from it) is about `subject`: at least half of
/// the subject's words (a disambiguation aside) are in its title or the quote, and at
/// least one.
pub fn about(source: &Source, quote: &str, subject: &str) -> bool {
    let wanted = content_terms(bare(subject));
    if wanted.is_empty() {
        return true;
    }
    let mut seen = content_terms(&source.passage.title);
    seen.extend(content_terms(quote));
    let covered = wanted.iter().filter(|w| seen.contains(*w)).count();
    if covered > 0 && covered * 2 >= wanted.len() {
        return true;
    }
    // The same name written with its parts run together or apart ("Abbas Uddin Ahmed",
    // "Abbasuddin Ahmed").
    let squeezed = |t: &str| -> String {
        t.chars()
            .filter(|c| c.is_alphanumeric())
            .flat_map(char::to_lowercase)
            .collect()
    };
    let name = squeezed(bare(subject));
    name.chars().count() >= 6
        && (squeezed(&source.passage.title).contains(&name) || squeezed(quote).contains(&name))
}

/// A read's value checked against its quote: the typed value that sentence states, or why
/// it does not.
pub fn stated(
    kind: Kind,
    property: &str,
    subject: &str,
    reply: &ReadReply,
    title: &str,
) -> Result<Value, String> {
    let quote = reply.quote.trim();
    let value = reply.value.trim();
    let said = format!("{title} {quote}");
    match kind {
        Kind::Date => {
            let v = Date::parse(value).ok_or_else(|| format!("{value:?} is not a date"))?;
            Date::all(quote)
                .into_iter()
                .find(|d| d.agrees_with(&v))
                // The date as precise as the source writes it.
                .map(|d| {
                    Value::Date(if d.month.is_some() || v.month.is_none() {
                        d
                    } else {
                        v
                    })
                })
                .ok_or_else(|| format!("the quote does not state the date {value:?}"))
        }
        Kind::Quantity => {
            let v = Quantity::parse(value).ok_or_else(|| format!("{value:?} is not a number"))?;
            if numbers(quote)
                .iter()
                .any(|n| (n - v.value).abs() <= 1e-9 * n.abs().max(1.0))
            {
                let written = Quantity::written_in(quote, v.value).unwrap_or(v.written.clone());
                Ok(Value::Quantity(Quantity { written, ..v }))
            } else {
                Err(format!("the quote does not state the number {value:?}"))
            }
        }
        Kind::Person | Kind::Place | Kind::Text => {
            if value.is_empty() {
                return Err("no value read".into());
            }
            let vt = content_terms(value);
            let st = content_terms(&said);
            let found = vt.iter().filter(|w| st.contains(*w)).count();
            // A country the quote names another way ("Iran" where it says "Iranian").
            let nation = kind == Kind::Place
                && said
                    .split(|c: char| !c.is_alphanumeric())
                    .any(|w| !w.is_empty() && nation(w).is_some() && same_name(w, value));
            if (!vt.is_empty() && found * 3 >= vt.len() * 2) || nation {
                Ok(Value::Name(value.to_string()))
            } else {
                Err(format!("the quote does not state {value:?}"))
            }
        }
        Kind::List => {
            let st = content_terms(&said);
            let items: Vec<String> = value
                .split([',', ';'])
                .flat_map(|p| p.split(" and "))
                .map(|p| p.trim().trim_end_matches('.').to_string())
                .filter(|p| {
                    let t = content_terms(p);
                    !t.is_empty() && t.iter().filter(|w| st.contains(*w)).count() * 3 >= t.len() * 2
                })
                .collect();
            if items.is_empty() {
                Err(format!("the quote states none of {value:?}"))
            } else {
                Ok(Value::List(items))
            }
        }
        Kind::YesNo => {
            // The predicate: the property's words that do not name the subject.
            let subject_stems = stems(subject);
            let predicate: std::collections::BTreeSet<String> = predicate_stems(property)
                .into_iter()
                .filter(|w| !subject_stems.contains(w))
                .collect();
            let quote_stems = stems(quote);
            let present = predicate
                .iter()
                .filter(|w| quote_stems.contains(*w))
                .count();
            let states_predicate = !predicate.is_empty() && present * 2 >= predicate.len();
            // A property that is itself negated ("not skip blank lines") holds where the
            // sentence negates the predicate as it does.
            let negative = negated(property, &predicate);
            match value.to_lowercase().as_str() {
                // A sentence that states the predicate decides it by its negation, whatever
                // the model's verdict: "is not deprecated" is `false`.
                _ if states_predicate => Ok(Value::Bool(negated(quote, &predicate) == negative)),
                // Something else about the subject says nothing of a negated property
                // ("a genus of shrubs" neither is nor is not "not a fern" as read).
                _ if negative => Err(format!("the quote does not state {property:?}")),
                // One that states something else about the subject ("a genus of shrubs"
                // for "a fern") is the model's "no".
                "no" => Ok(Value::Bool(false)),
                "yes" => Err(format!("the quote does not state {property:?}")),
                other => Err(format!("{other:?} is not a verdict")),
            }
        }
    }
}

/// `text` without the prompt's source markers (`[2]`).
fn without_markers(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('[') {
        let after = &rest[i + 1..];
        let digits = after.chars().take_while(char::is_ascii_digit).count();
        if digits > 0 && after[digits..].starts_with(']') {
            out.push_str(&rest[..i]);
            rest = &after[digits + 1..];
        } else {
            out.push_str(&rest[..=i]);
            rest = after;
        }
    }
    out.push_str(rest);
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The model's read, grounded: the value, the source stating it and the quote; or why
/// not, and whether the fact was missing from the sources.
fn ground(
    reply: &ReadReply,
    sources: &[Source],
    subject: &str,
    property: &str,
    kind: Kind,
) -> Result<(Value, usize, String), (String, bool)> {
    if reply.quote.trim().is_empty() && reply.value.trim().is_empty() {
        return Err((
            format!("no source states the {property} of {subject}"),
            true,
        ));
    }
    // A small model copies the source's number along with its words ("[1] Hypsicratea
    // was ..."): the marker is the prompt's, not the source's.
    let unmarked = ReadReply {
        quote: without_markers(&reply.quote),
        ..reply.clone()
    };
    let reply = &unmarked;
    let mut why = format!("no source holds the quote {:?}", reply.quote);
    let mut missing = true;
    for src in cited_first(sources, reply.source) {
        let Some(quote) = held(src, &reply.quote) else {
            continue;
        };
        let reply = &ReadReply {
            quote,
            ..reply.clone()
        };
        if !about(src, &reply.quote, subject) {
            why = format!("[{}] {:?} is not about {subject}", src.n, src.passage.title);
            continue;
        }
        match stated(kind, property, subject, reply, &src.passage.title) {
            Ok(v) => return Ok((v, src.n, reply.quote.clone())),
            Err(e) => {
                if let Some((v, quote)) = stated_nearby(src, reply, kind, property, subject) {
                    return Ok((v, src.n, quote));
                }
                why = format!("[{}]: {e} (quote {:?})", src.n, reply.quote);
                missing = false;
            }
        }
    }
    Err((why, missing))
}

/// The sources with the one a read cites first, then the rest in order: a small model
/// often cites the wrong number.
fn cited_first(sources: &[Source], cited: u32) -> impl Iterator<Item = &Source> {
    let cited = cited as usize;
    let first = sources.iter().filter(move |s| s.n == cited);
    first.chain(sources.iter().filter(move |s| s.n != cited))
}

/// The value stated by a sentence next to the quoted one, in the same source, when the
/// quote itself does not state it: the 1.5B reader often copies the sentence that names
/// the property ("Sets the timeout for a query to T seconds.") and takes the value from
/// the next ("The default timeout is 5 seconds."). The nearest of the two sentences on
/// either side that states the value, checked as a quote would be. Only numbers and
/// dates: a name in the next sentence may hold another role ("directed by X. The score
/// is by Y."), and a yes/no verdict belongs to the sentence the model chose.
fn stated_nearby(
    src: &Source,
    reply: &ReadReply,
    kind: Kind,
    property: &str,
    subject: &str,
) -> Option<(Value, String)> {
    if !matches!(kind, Kind::Quantity | Kind::Date) || reply.value.trim().is_empty() {
        return None;
    }
    let text = &src.passage.text;
    let spans = crate::text::sentences(text);
    let quoted = content_terms(&reply.quote);
    let overlap = |&(a, b): &(usize, usize)| {
        let st = content_terms(&text[a..b]);
        quoted.iter().filter(|w| st.contains(*w)).count()
    };
    let (at, _) = spans
        .iter()
        .enumerate()
        .max_by_key(|(_, span)| overlap(span))
        .filter(|(_, span)| overlap(span) > 0)?;
    [1isize, -1, 2, -2].iter().find_map(|d| {
        let i = usize::try_from(at as isize + d).ok()?;
        let &(a, b) = spans.get(i)?;
        let sentence = text[a..b].trim();
        let near = ReadReply {
            quote: sentence.to_string(),
            ..reply.clone()
        };
        stated(kind, property, subject, &near, &src.passage.title)
            .ok()
            .map(|v| (v, sentence.to_string()))
    })
}

/// For a relation read whose quote does not state its value (or is no source's words),
/// the first sentence of a source about `subject` that does, the cited source first: the
/// 1.5B reader often names the right person and copies another sentence of the same page
/// (the subject's birth, where the next sentence gives the parents), and a two-step chain
/// then stops at its first step. Only relation reads are repaired this way: the relation
/// check that follows reads the role off the sentence found, so a name the page gives in
/// another role ("directed by A. The score is by B.") is turned down as it would be from
/// the model's own quote. The value must be in the sentence itself, not only in the
/// source's title.
fn stated_in_a_sentence(
    reply: &ReadReply,
    sources: &[Source],
    subject: &str,
    property: &str,
    kind: Kind,
) -> Option<(Value, usize, String)> {
    if !matches!(kind, Kind::Person | Kind::Place | Kind::Text) || reply.value.trim().is_empty() {
        return None;
    }
    cited_first(sources, reply.source).find_map(|src| {
        let text = &src.passage.text;
        crate::text::sentences(text).into_iter().find_map(|(a, b)| {
            let sentence = text[a..b].trim();
            if !about(src, sentence, subject) {
                return None;
            }
            let candidate = ReadReply {
                quote: sentence.to_string(),
                ..reply.clone()
            };
            stated(kind, property, subject, &candidate, "")
                .ok()
                .map(|v| (v, src.n, sentence.to_string()))
        })
    })
}

/// Plans the question's program, checks it and runs it over the run's sources: the one
/// entry of every strategy that reasons through a program (`metarag`, `cot`, `mcts`).
/// The plan is mended ([`Plan::repaired`]), compiled, typed and matched to the answer's
/// form before any read, so a misread question costs no reads. Records the run
/// (`records.program`) and a `program_<outcome>` metric for each outcome, so that a
/// report's averages over questions are the shares of each, whatever the strategy.
pub async fn solve<E: Send>(s: &mut Run<E>, node: &str) -> Result<ProgramRun, NodeError> {
    let c = s.gw.chat(node, "program_plan", plan(&s.question)).await?;
    let invalid = |program: String, reason: String| ProgramRun {
        program,
        steps: Vec::new(),
        outcome: Outcome::Invalid { reason },
        unmentioned: None,
        subject: None,
    };
    let run = match c.parsed::<Plan>() {
        Err(e) => invalid(c.text().unwrap_or_default().to_string(), e),
        Ok(planned) => match planned
            .clone()
            .repaired(&s.question)
            .compile()
            .and_then(|raw| raw.validate())
            .and_then(|p| p.fits(&AnswerForm::of(&s.question)).map(|()| p))
        {
            Err(e) => invalid(
                serde_json::to_string(&planned).unwrap_or_default(),
                e.to_string(),
            ),
            Ok(p) => {
                let subject = sole_subject(&p, &s.question);
                let mut run = match unmentioned(s, &p.named_subjects()).await? {
                    Some(subject) => {
                        // The first step about it is the one that cannot ground.
                        let (i, op) = p
                            .steps
                            .iter()
                            .enumerate()
                            .find(|(_, op)| {
                                matches!(op, Op::Find { subject: Subject::Named(n), .. }
                                | Op::Follow { subject: Subject::Named(n), .. } if *n == subject)
                            })
                            .map_or((0, "find"), |(i, op)| (i, op.name()));
                        ProgramRun {
                            program: p.display(),
                            steps: Vec::new(),
                            outcome: Outcome::Unresolved {
                                step: i + 1,
                                op: op.into(),
                                reason: format!("no document mentions {subject:?}"),
                                missing: false,
                                query: None,
                            },
                            unmentioned: Some(subject),
                            subject: None,
                        }
                    }
                    None if !p.reasons() => ProgramRun {
                        program: p.display(),
                        steps: Vec::new(),
                        outcome: Outcome::Skipped,
                        unmentioned: None,
                        subject: None,
                    },
                    None => run(s, node, &p).await?,
                };
                run.subject = subject;
                run
            }
        },
    };
    let outcome = run.outcome.name();
    for o in ["resolved", "unresolved", "invalid", "skipped"] {
        s.metrics
            .insert(format!("program_{o}"), f64::from(u8::from(o == outcome)));
    }
    s.records.insert(
        "program".into(),
        serde_json::to_value(&run).unwrap_or_default(),
    );
    Ok(run)
}

/// Runs `program` over the run's sources, recording every step.
pub async fn run<E: Send>(
    s: &mut Run<E>,
    node: &str,
    program: &Program,
) -> Result<ProgramRun, NodeError> {
    let mut values: Vec<Value> = Vec::new();
    let mut subjects: Vec<Option<String>> = Vec::new();
    let mut records: Vec<StepRecord> = Vec::new();
    let mut cited: Vec<(usize, String)> = Vec::new();
    let mut neither = false;
    // Whether the last compare's first value won: a yes/no question asks that ("is A's
    // timeout longer than B's?"), not which one won.
    let mut first_wins = None;
    for (i, op) in program.steps.iter().enumerate() {
        let mut record = StepRecord {
            step: i + 1,
            op: op.display(),
            subject: None,
            asks: None,
            value: None,
            source: None,
            quote: None,
            status: StepStatus::Computed,
            note: String::new(),
        };
        let unresolved =
            |record: &mut StepRecord, reason: String, missing: bool, query: Option<String>| {
                record.status = StepStatus::Unresolved;
                record.note = reason.clone();
                Outcome::Unresolved {
                    step: i + 1,
                    op: op.name().to_string(),
                    reason,
                    missing,
                    query,
                }
            };
        let result: Result<Value, Outcome> = match op {
            Op::Find {
                subject, property, ..
            }
            | Op::Follow {
                subject,
                relation: property,
            } => {
                let kind = match op {
                    Op::Find { kind, .. } => *kind,
                    _ => Kind::Text,
                };
                let name = match subject {
                    Subject::Named(n) => n.clone(),
                    Subject::Step(r) => values[*r].display(),
                };
                record.subject = Some(name.clone());
                record.asks = Some(if kind == Kind::YesNo {
                    format!("Is this true of {name}: {property}?")
                } else {
                    format!("What is the {property} of {name}?")
                });
                let query = format!("{name} {property}");
                // A relation (a follow, or a read of a person) is checked beyond the value: the
                // sentence that names the person must name them in that role.
                let relates = matches!(op, Op::Follow { .. }) || kind == Kind::Person;
                match read(s, node, &name, property, kind, relates).await? {
                    Ok((v, n, quote)) => {
                        record.status = StepStatus::Grounded;
                        record.source = Some(n);
                        record.quote = Some(quote.clone());
                        record.note = format!("[{n}] states it");
                        cited.push((n, quote));
                        Ok(v)
                    }
                    Err((reason, missing)) => {
                        Err(unresolved(&mut record, reason, missing, Some(query)))
                    }
                }
            }
            Op::Compare { a, b, by } => match order(&values[*a], &values[*b]) {
                Some(Ordering::Equal) => Err(unresolved(
                    &mut record,
                    format!(
                        "#{} and #{} are the same ({})",
                        a + 1,
                        b + 1,
                        values[*a].display()
                    ),
                    false,
                    None,
                )),
                Some(o) => {
                    let a_wins = (o == Ordering::Less) == by.smaller_wins();
                    first_wins = Some(a_wins);
                    let winner = if a_wins { *a } else { *b };
                    let name = root(program, winner, &values);
                    record.note = format!(
                        "{} {} {}",
                        values[*a].display(),
                        match o {
                            Ordering::Less => "<",
                            _ => ">",
                        },
                        values[*b].display()
                    );
                    Ok(Value::Name(name))
                }
                None => Err(unresolved(
                    &mut record,
                    format!(
                        "{} and {} cannot be ordered as written",
                        values[*a].display(),
                        values[*b].display()
                    ),
                    false,
                    None,
                )),
            },
            Op::Same { a, b } => match values[*a].same(&values[*b]) {
                Some(same) => {
                    record.note = format!("{} vs {}", values[*a].display(), values[*b].display());
                    Ok(Value::Bool(same))
                }
                None => Err(unresolved(
                    &mut record,
                    format!(
                        "whether {} is {} cannot be told as written",
                        values[*a].display(),
                        values[*b].display()
                    ),
                    false,
                    None,
                )),
            },
            Op::All { of } | Op::Any { of } => {
                let verdicts: Vec<bool> = of
                    .iter()
                    .map(|&r| matches!(values[r], Value::Bool(true)))
                    .collect();
                let all = matches!(op, Op::All { .. });
                Ok(Value::Bool(if all {
                    verdicts.iter().all(|&v| v)
                } else {
                    verdicts.iter().any(|&v| v)
                }))
            }
            Op::Pick { options, of } => {
                if of.len() == options.len()
                    && of.iter().all(|&r| matches!(values[r], Value::Bool(_)))
                {
                    let holding: Vec<&String> = options
                        .iter()
                        .zip(of)
                        .filter(|(_, r)| values[**r] == Value::Bool(true))
                        .map(|(o, _)| o)
                        .collect();
                    match holding.as_slice() {
                        [one] => Ok(Value::Name((*one).clone())),
                        [] => {
                            neither = true;
                            record.note = "no option holds".into();
                            Ok(Value::Name("neither".into()))
                        }
                        _ => Err(unresolved(
                            &mut record,
                            "more than one option holds".into(),
                            false,
                            None,
                        )),
                    }
                } else {
                    let v = &values[of[0]];
                    let said = v.display();
                    // The option the value names: the monitor's test for "this answer is
                    // that option" (closer to it than to the other), else the only option
                    // naming the same thing (a country by its demonym).
                    let naming: Vec<&String> =
                        options.iter().filter(|o| same_name(o, &said)).collect();
                    let option = match quantity_option(v, options) {
                        Some(by_number) => by_number,
                        None => options
                            .iter()
                            .find(|o| says(&said, o, options))
                            .or_else(|| (naming.len() == 1).then(|| naming[0])),
                    };
                    match option {
                        Some(o) => Ok(Value::Name(o.clone())),
                        None => {
                            neither = true;
                            record.note = format!("neither option: the sources say {said}");
                            Ok(v.clone())
                        }
                    }
                }
            }
            Op::Count { of } => match &values[*of] {
                Value::List(items) => Ok(Value::Quantity(Quantity {
                    value: items.len() as f64,
                    unit: None,
                    written: items.len().to_string(),
                })),
                other => Err(unresolved(
                    &mut record,
                    format!("{} is not a list", other.display()),
                    false,
                    None,
                )),
            },
            Op::Intersect { a, b } => {
                let list = |v: &Value| match v {
                    Value::List(items) => items.clone(),
                    other => vec![other.display()],
                };
                let (la, lb) = (list(&values[*a]), list(&values[*b]));
                let shared: Vec<String> = la
                    .into_iter()
                    .filter(|x| lb.iter().any(|y| same_name(x, y)))
                    .collect();
                if shared.is_empty() {
                    Err(unresolved(
                        &mut record,
                        "no item in common".into(),
                        false,
                        None,
                    ))
                } else {
                    Ok(Value::List(shared))
                }
            }
        };
        match result {
            Ok(v) => {
                record.value = Some(v.clone());
                values.push(v);
                subjects.push(record.subject.clone());
                records.push(record);
            }
            Err(outcome) => {
                records.push(record);
                return Ok(ProgramRun {
                    program: program.display(),
                    steps: records,
                    outcome,
                    unmentioned: None,
                    subject: None,
                });
            }
        }
    }
    let mut last = values.last().cloned().unwrap_or(Value::Name(String::new()));
    if let (Some(Op::Compare { .. }), Some(a_wins)) = (program.steps.last(), first_wins)
        && AnswerForm::of(&s.question) == AnswerForm::YesNo
    {
        last = Value::Bool(a_wins);
    }
    let short = last.display();
    cited.dedup();
    let facts = cited
        .iter()
        .map(|(n, q)| format!("{} [{n}]", q.trim_end_matches('.')))
        .collect::<Vec<_>>()
        .join(". ");
    let lead = if neither && short != "neither" {
        format!("Neither: {short}")
    } else {
        let mut c = short.chars();
        c.next()
            .map(|f| f.to_uppercase().chain(c).collect::<String>())
            .unwrap_or_default()
    };
    Ok(ProgramRun {
        program: program.display(),
        steps: records,
        outcome: Outcome::Resolved {
            answer: format!("{lead}. {facts}."),
            short_answer: short,
            neither,
        },
        unmentioned: None,
        subject: None,
    })
}

/// The option a number read picks, by value ("5 seconds" is neither "after 2 seconds"
/// nor "after 10"; "10 s" is "10 seconds"): `Some(None)` when the value and at least one
/// option are quantities and no option equals the value, `None` when the pick is not one
/// of numbers (words decide it then). Token overlap cannot: "5 seconds" shares half its
/// words with "2 seconds".
fn quantity_option<'o>(value: &Value, options: &'o [String]) -> Option<Option<&'o String>> {
    let read = match value {
        Value::Quantity(q) => q.clone(),
        other => Quantity::parse(&other.display())?,
    };
    let numbered: Vec<(&String, Quantity)> = options
        .iter()
        .filter_map(|o| option_quantity(o).map(|q| (o, q)))
        .collect();
    if numbered.is_empty() {
        return None;
    }
    Some(
        numbered
            .into_iter()
            .find(|(_, q)| read.same(q) == Some(true))
            .map(|(o, _)| o),
    )
}

/// The first of `subjects` that no document mentions, over an index: a subject the
/// question writes (a planner's paraphrase is not checked) that neither a source already
/// read nor the first hits of a BM25 search for it name (see [`mentions`]). A word
/// search is the right test of "the documents never write this name": any chunk holding
/// a rare name ranks first for it, where a dense search returns neighbours whatever the
/// words. Given paragraphs (gold context) are not an index and are never checked: a
/// subject the question describes ("the third season") need not be written in them.
pub async fn unmentioned<E: Send>(
    s: &mut Run<E>,
    subjects: &[String],
) -> Result<Option<String>, NodeError> {
    if s.mode != EvidenceMode::Retrieval {
        return Ok(None);
    }
    let asked = content_terms(&s.question);
    for subject in subjects {
        let terms: Vec<String> = content_terms(subject).into_iter().collect();
        if terms.is_empty() || !terms.iter().all(|t| asked.contains(t)) {
            continue;
        }
        let read = s
            .pool
            .iter()
            .any(|p| mentions(&terms, &format!("{} {}", p.title, p.text)));
        if read {
            continue;
        }
        let mut request = metarag_core::SearchRequest::new(subject.as_str(), MENTION_DEPTH);
        request.mode = metarag_core::SearchMode::Bm25;
        let search_ms = s.gw.usage.search_ms;
        let hits =
            s.gw.search(crate::gateway::DEFAULT_RETRIEVER, &request)
                .await?;
        let named = hits
            .iter()
            .any(|h| mentions(&terms, &format!("{} {}", h.chunk.title, h.chunk.draft.text)));
        // In the trace like any search, so that a decline on it shows what was searched
        // and what came back; its hits only answer "is the name written", and stay out of
        // the pool.
        s.retrievals.push(crate::trace::RetrievalRecord {
            reason: RetrievalReason::Mention,
            query: subject.clone(),
            k: MENTION_DEPTH,
            hits: hits.len(),
            added: 0,
            guardrails: Default::default(),
            rerank: format!(
                "no: a word search for the name; {}",
                if named {
                    "a hit writes it"
                } else {
                    "no hit writes it"
                }
            ),
            diagnostics: evidence::diagnose_pool(&s.question, &s.pool),
            ms: s.gw.usage.search_ms - search_ms,
        });
        if !named {
            return Ok(Some(subject.clone()));
        }
    }
    Ok(None)
}

/// The one subject a program reads facts of, when it follows no relation and the
/// question writes every content word of the subject's name (a planner's paraphrase is
/// not a name to look for).
pub fn sole_subject(program: &Program, question: &str) -> Option<String> {
    if program
        .steps
        .iter()
        .any(|op| matches!(op, Op::Follow { .. }))
    {
        return None;
    }
    let subjects = program.named_subjects();
    let [only] = subjects.as_slice() else {
        return None;
    };
    let asked = content_terms(question);
    let terms = content_terms(only);
    (!terms.is_empty() && terms.iter().all(|t| asked.contains(t))).then(|| only.clone())
}

/// How many BM25 hits [`unmentioned`] reads for a subject.
const MENTION_DEPTH: usize = 10;

/// Whether `text` mentions a subject of content words `terms`: at least two thirds of
/// them are among its words ("Sons of Ingmar" in a passage on "Ingmar's sons" counts;
/// one shared word of a three-word name does not). An identifier written in camel case
/// counts as its words too: documentation writes "the stub DNS listener" as
/// `DNSStubListener=`.
pub fn mentions(terms: &[String], text: &str) -> bool {
    let mut words = content_terms(text);
    words.extend(camel_words(text));
    let found = terms.iter().filter(|t| words.contains(*t)).count();
    !terms.is_empty() && found * 3 >= terms.len() * 2
}

/// The words inside camel-case identifiers, lowercase: "DNSStubListener" -> "dns", "stub",
/// "listener"; "ReadWritePaths" -> "read", "write", "paths". A word boundary is a lowercase
/// letter followed by a capital, or a capital followed by a capital and a lowercase letter.
fn camel_words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for word in text.split(|c: char| !c.is_alphanumeric()) {
        let chars: Vec<char> = word.chars().collect();
        let mut start = 0;
        for i in 1..chars.len() {
            let lower_to_upper = chars[i - 1].is_lowercase() && chars[i].is_uppercase();
            let acronym_end = chars[i - 1].is_uppercase()
                && chars[i].is_uppercase()
                && chars.get(i + 1).is_some_and(|c| c.is_lowercase());
            if lower_to_upper || acronym_end {
                out.push(chars[start..i].iter().collect::<String>().to_lowercase());
                start = i;
            }
        }
        if start > 0 {
            out.push(chars[start..].iter().collect::<String>().to_lowercase());
        }
    }
    out
}

/// The order of two values where both are dates or both quantities.
fn order(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Date(x), Value::Date(y)) => x.order(y),
        (Value::Quantity(x), Value::Quantity(y)) => x.order(y),
        _ => None,
    }
}

/// The thing the question names that step `i`'s value belongs to: its subject, followed
/// back through the steps it refers to ("the release whose maintainer joined first" is the
/// release, not the maintainer).
fn root(program: &Program, i: usize, values: &[Value]) -> String {
    match &program.steps[i] {
        Op::Find { subject, .. } | Op::Follow { subject, .. } => match subject {
            Subject::Named(n) => n.clone(),
            Subject::Step(r) => root(program, *r, values),
        },
        _ => values[i].display(),
    }
}

/// One read: the sources about `subject` (searched for over an index when none is), one
/// model call, the reply grounded. The pool only appends, so a source number stays the
/// same passage when the sources are read again.
async fn read<E: Send>(
    s: &mut Run<E>,
    node: &str,
    subject: &str,
    property: &str,
    kind: Kind,
    relates: bool,
) -> Result<Result<(Value, usize, String), (String, bool)>, NodeError> {
    let has_source = |s: &Run<E>| s.sources.iter().any(|src| about(src, "", subject));
    if s.mode == EvidenceMode::Retrieval && !has_source(s) {
        let queries = vec![format!("{subject} {property}"), subject.to_string()];
        let k = s.cfg().bridge_k.max(2);
        nodes::gather_fused(
            s,
            &queries,
            k,
            &metarag_core::Filter::default(),
            RetrievalReason::Hop,
        )
        .await?;
        s.sources = evidence::read(&s.queries, &s.pool, s.cfg().max_evidence_chars);
        s.sources_version += 1;
    }
    if s.sources.is_empty() {
        return Ok(Err(("no sources to read".into(), true)));
    }
    let request = read_request(&s.sources, subject, property, kind);
    let c = s.gw.chat(node, "program_read", request).await?;
    let reply = match c.parsed::<ReadReply>() {
        Ok(r) => r,
        Err(e) => return Ok(Err((format!("the read did not parse: {e}"), false))),
    };
    let mut grounded = ground(&reply, &s.sources, subject, property, kind);
    if relates
        && grounded.is_err()
        && let Some(found) = stated_in_a_sentence(&reply, &s.sources, subject, property, kind)
    {
        grounded = Ok(found);
    }
    let Ok((Value::Name(name), n, quote)) = &grounded else {
        return Ok(grounded);
    };
    if !relates {
        return Ok(grounded);
    }
    if itself(subject, name) {
        let why = format!("[{n}] names {subject} itself as its {property}");
        return Ok(Err((why, true)));
    }
    let request = relation_request(quote, subject, property);
    let c = s.gw.chat(node, "program_relation", request).await?;
    Ok(match c.parsed::<RelationAnswer>() {
        Ok(r) if same_name(&r.answer, name) => grounded,
        Ok(r) => Err((
            format!(
                "[{n}] names {name}, but not as the {property} of {subject}: the sentence \
                 gives {:?} (quote {quote:?})",
                r.answer
            ),
            false,
        )),
        Err(e) => Err((format!("the relation check did not parse: {e}"), false)),
    })
}

/// Whether a relation read found the subject itself: no relation leads from a thing to
/// itself ("the director of Tam Reed" read as Tam Reed).
fn itself(subject: &str, value: &str) -> bool {
    let (vt, st) = (content_terms(bare(value)), content_terms(bare(subject)));
    !vt.is_empty() && vt == st
}

/// The model's reading of one relation off one sentence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RelationAnswer {
    /// The name the sentence gives as the relation's value, as written, or `none`.
    pub answer: String,
}

/// The check of a relation read: which thing `quote` names as the `relation` of
/// `subject`, read off that one sentence, so that the model reads what it says rather
/// than what it knows; code compares the answer with the read's value (`same_name`). A
/// read over a sentence naming several people ("directed by A, music by B") often returns
/// the wrong one. Extracting the name is what a small model does well: asked instead to
/// judge "is A the composer of X?", the 1.5B model said no to 14 of 22 relations its
/// sentence states, and matching the relation's word in code passed 6 of 16 it does not
/// (docs/results/program.md, "The relation check reads the name").
pub fn relation_request(quote: &str, subject: &str, relation: &str) -> ChatRequest {
    let task = format!(
        "Sentence: \"{quote}\"\n\nAccording to this sentence alone, what is the {relation} of \
         {subject}? Copy the name as the sentence writes it, or answer \"none\" if the sentence \
         does not say.\nReply in JSON: {{\"answer\": \"...\"}}"
    );
    let mut request = ChatRequest::new(vec![metarag_core::Message::user(task)]);
    request.schema = Some(OutputSchema::of::<RelationAnswer>());
    request.max_tokens(40)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::test_source as src;

    fn compiled(json: serde_json::Value) -> Program {
        serde_json::from_value::<Plan>(json)
            .unwrap()
            .compile()
            .unwrap()
            .validate()
            .unwrap()
    }

    #[test]
    fn a_program_of_one_written_subject_and_no_follow_has_a_sole_subject() {
        let one = compiled(serde_json::json!({"about": ["search service"], "chain": [],
            "combine": "none", "options": [], "read": "log rotation", "type": "text"}));
        let q = "How often does the search service rotate its logs?";
        assert_eq!(sole_subject(&one, q).as_deref(), Some("search service"));
        // A paraphrase the question does not write is not looked for.
        assert_eq!(
            sole_subject(&one, "How often are the indexer's logs rotated?"),
            None
        );
        let two = compiled(serde_json::json!({"about": ["ledger service", "relay"],
            "chain": [], "combine": "earlier", "options": [], "read": "release date",
            "type": "date"}));
        assert_eq!(
            sole_subject(
                &two,
                "Which shipped first, the ledger service or the relay?"
            ),
            None
        );
        let chain = compiled(
            serde_json::json!({"about": ["Salt Road"], "chain": ["author"],
            "combine": "none", "options": [], "read": "birthplace", "type": "place"}),
        );
        assert_eq!(
            sole_subject(&chain, "Where was the author of Salt Road born?"),
            None
        );
    }

    #[test]
    fn an_answer_cited_only_to_other_pages_is_off_subject() {
        let run = ProgramRun {
            program: String::new(),
            steps: Vec::new(),
            outcome: Outcome::Skipped,
            unmentioned: None,
            subject: Some("search service".into()),
        };
        let sources = [
            src(1, "log rotation", "Logs are rotated every Sunday night."),
            src(
                2,
                "search",
                "The search service reloads its index every ten minutes.",
            ),
            // Documentation writes a name as an identifier: that mentions it too.
            src(
                3,
                "units",
                "SearchService= sets the unit that serves queries.",
            ),
        ];
        let off = |answer: &str, mode| run.off_subject(mode, answer, &sources);
        let retrieval = EvidenceMode::Retrieval;
        assert_eq!(
            off("Every Sunday night [1].", retrieval),
            Some("search service")
        );
        assert_eq!(off("Every ten minutes [1, 2].", retrieval), None);
        assert_eq!(off("It is SearchService [3].", retrieval), None);
        // Nothing cited, or a number no source has: nothing to judge by.
        assert_eq!(off("Every Sunday night.", retrieval), None);
        assert_eq!(off("Every Sunday night [7].", retrieval), None);
        // Given paragraphs need not write the subject's name.
        assert_eq!(off("Every Sunday night [1].", EvidenceMode::Context), None);
    }

    #[test]
    fn a_number_the_next_sentence_states_is_grounded_there() {
        let text = "+timeout=T Sets the timeout for a query to T seconds. The default \
                    timeout is 7 seconds. A timeout of less than one second is rounded up.";
        let sources = [src(1, "kestrel(1) / OPTIONS", text)];
        let read = |value: &str| ReadReply {
            quote: "Sets the timeout for a query to T seconds.".into(),
            value: value.into(),
            source: 1,
        };
        let (v, n, quote) = ground(
            &read("7 seconds"),
            &sources,
            "kestrel",
            "default timeout",
            Kind::Quantity,
        )
        .unwrap();
        assert_eq!((v.display().as_str(), n), ("7 seconds", 1));
        assert_eq!(quote, "The default timeout is 7 seconds.");
        // A number no sentence near the quote states is still refused.
        assert!(
            ground(
                &read("9 seconds"),
                &sources,
                "kestrel",
                "default timeout",
                Kind::Quantity
            )
            .is_err()
        );
    }

    #[test]
    fn a_number_picks_the_option_of_the_same_value_or_none() {
        let opts = |a: &str, b: &str| vec![a.to_string(), b.to_string()];
        let q = |t: &str| Value::Quantity(Quantity::parse(t).unwrap());
        let waits = opts("after 2 seconds", "after 10");
        // Half the words of "5 seconds" are those of "2 seconds"; the numbers differ.
        assert_eq!(quantity_option(&q("5 seconds"), &waits), Some(None));
        assert_eq!(quantity_option(&q("10 s"), &waits), Some(Some(&waits[1])));
        let spans = opts("a minute", "an hour");
        assert_eq!(
            quantity_option(&q("60 minutes"), &spans),
            Some(Some(&spans[1]))
        );
        assert_eq!(
            quantity_option(
                &Value::Name("1,000,000".into()),
                &opts("16,384", "a million")
            ),
            Some(Some(&"a million".to_string()))
        );
        // Names are picked by their words.
        assert_eq!(
            quantity_option(
                &Value::Name("ClickHouse".into()),
                &opts("Postgres", "MySQL")
            ),
            None
        );
    }

    #[test]
    fn a_relation_value_the_quote_misses_is_found_in_a_sentence_of_a_source_about_the_subject() {
        let sources = vec![
            src(
                1,
                "Ilsa Varn",
                "Ilsa Varn (born 1801) was a Norlish countess. She was the daughter of Oren \
                 Varn and Lady Mette Quill. She died at Kessel.",
            ),
            src(
                2,
                "Mette Quill",
                "Lady Mette Quill was the daughter of Tobin Quill.",
            ),
        ];
        // The reader named the mother and copied the birth sentence.
        let r = reply(
            "Ilsa Varn (born 1801) was a Norlish countess.",
            "Mette Quill",
            1,
        );
        assert!(ground(&r, &sources, "Ilsa Varn", "mother", Kind::Text).is_err());
        let (v, n, quote) =
            stated_in_a_sentence(&r, &sources, "Ilsa Varn", "mother", Kind::Text).unwrap();
        assert_eq!(v.display(), "Mette Quill");
        assert_eq!(n, 1);
        assert!(quote.starts_with("She was the daughter of"), "{quote}");
        // Cited as the wrong number: the source about the subject still holds it.
        let r = reply(
            "Lady Mette Quill was the daughter of Tobin Quill.",
            "Oren Varn",
            2,
        );
        let (_, n, _) =
            stated_in_a_sentence(&r, &sources, "Ilsa Varn", "father", Kind::Text).unwrap();
        assert_eq!(n, 1);
        // A name only a source's title gives: the sentence is about the subject, but the
        // value is the page's title, not its words.
        let titled = [src(
            3,
            "Tobin Quill",
            "He was the grandfather of Ilsa Varn.",
        )];
        let r = reply("She died at Kessel.", "Tobin Quill", 3);
        assert!(
            stated_in_a_sentence(&r, &titled, "Ilsa Varn", "grandfather", Kind::Text).is_none()
        );
        // A name only a sentence about someone else states.
        let r = reply("She died at Kessel.", "Tobin Quill", 1);
        assert!(
            stated_in_a_sentence(&r, &sources, "Ilsa Varn", "grandfather", Kind::Text).is_none()
        );
        // Not for dates, numbers or verdicts, and not for an empty value.
        let r = reply("She died at Kessel.", "1801", 1);
        assert!(stated_in_a_sentence(&r, &sources, "Ilsa Varn", "birth", Kind::Date).is_none());
        let r = reply("She died at Kessel.", "", 1);
        assert!(stated_in_a_sentence(&r, &sources, "Ilsa Varn", "mother", Kind::Text).is_none());
    }

    fn reply(quote: &str, value: &str, source: u32) -> ReadReply {
        ReadReply {
            quote: quote.into(),
            value: value.into(),
            source,
        }
    }

    #[test]
    fn a_subject_is_mentioned_by_most_of_its_words_identifiers_included() {
        let terms = |s: &str| content_terms(s).into_iter().collect::<Vec<_>>();
        let listener = terms("stub DNS listener");
        assert!(mentions(
            &listener,
            "DNSStubListener= takes a boolean argument or udp or tcp."
        ));
        assert!(mentions(
            &listener,
            "The DNS stub listener answers on 127.0.0.53."
        ));
        assert!(!mentions(&listener, "Each DNS server is tried in turn."));
        let name = terms("Sons of Ingmar");
        assert!(mentions(&name, "Ingmar's sons left the farm in 1919."));
        assert!(!mentions(&name, "Her sons left the farm in 1919."));
        assert!(!mentions(
            &terms("fail2ban"),
            "faillog maintains a count of login failures."
        ));
        assert_eq!(
            camel_words("ReadWritePaths= and HTTPServer, plain words"),
            ["read", "write", "paths", "http", "server"]
        );
    }

    #[test]
    fn a_negated_statement_is_false_whatever_the_model_says() {
        let sources = [src(
            1,
            "Services",
            "The billing service is not deprecated. The search service is not deprecated either.",
        )];
        for said in ["yes", "no"] {
            let r = reply("The billing service is not deprecated.", said, 1);
            let (v, n, _) =
                ground(&r, &sources, "billing service", "deprecated", Kind::YesNo).unwrap();
            assert_eq!((v, n), (Value::Bool(false), 1));
        }
        let r = reply("The search service is not deprecated either.", "yes", 1);
        assert_eq!(
            ground(&r, &sources, "search service", "is deprecated", Kind::YesNo)
                .unwrap()
                .0,
            Value::Bool(false)
        );
        // A negated property holds where the sentence negates the predicate too.
        let r = reply("The billing service is not deprecated.", "no", 1);
        let (v, _, _) = ground(
            &r,
            &sources,
            "billing service",
            "not deprecated",
            Kind::YesNo,
        )
        .unwrap();
        assert_eq!(v, Value::Bool(true));
        let plain = [src(
            1,
            "Services",
            "The billing service is deprecated since May.",
        )];
        let r = reply("The billing service is deprecated since May.", "yes", 1);
        let (v, _, _) =
            ground(&r, &plain, "billing service", "not deprecated", Kind::YesNo).unwrap();
        assert_eq!(v, Value::Bool(false));
        // The negation written as a contraction in the property is the negation, not a
        // word to find.
        let r = reply("The billing service is not deprecated.", "no", 1);
        let (v, _, _) = ground(
            &r,
            &sources,
            "billing service",
            "billing service won't be deprecated",
            Kind::YesNo,
        )
        .unwrap();
        assert_eq!(v, Value::Bool(true));
        // A quote about something else cannot decide a negated property.
        let other = [src(1, "Services", "The billing service handles refunds.")];
        let r = reply("The billing service handles refunds.", "no", 1);
        assert!(ground(&r, &other, "billing service", "not deprecated", Kind::YesNo).is_err());
        // A quote that names the predicate in other words than the source's sentence
        // ("stale" for "older") is that sentence when three quarters of its words are.
        let gc = [src(
            1,
            "pelt-cache(1) / OPTIONS",
            "--purge=<date> Purge cache files older than date (default is two weeks ago).",
        )];
        let r = reply("purge stale cache files", "yes", 1);
        let (v, _, quote) = ground(
            &r,
            &gc,
            "pelt cache",
            "purge stale cache files",
            Kind::YesNo,
        )
        .unwrap();
        assert_eq!(v, Value::Bool(true));
        assert!(
            quote.starts_with("--purge=<date> Purge cache files older"),
            "{quote}"
        );
        // A quote that drops the source's "not" is checked on the source's sentence, not
        // on the model's words.
        let r = reply("The billing service is deprecated.", "yes", 1);
        let (v, _, quote) =
            ground(&r, &sources, "billing service", "deprecated", Kind::YesNo).unwrap();
        assert_eq!(v, Value::Bool(false));
        assert_eq!(quote, "The billing service is not deprecated.");
    }

    #[test]
    fn a_quote_with_the_prompts_markers_and_a_name_run_together_still_ground() {
        assert_eq!(
            without_markers("[1] Hypsicratea was [12] his wife."),
            "Hypsicratea was his wife."
        );
        assert_eq!(without_markers("a [b] c [x1]"), "a [b] c [x1]");
        let source = |title: &str, text: &str| Source {
            n: 2,
            passage: crate::evidence::Passage::paragraph(title, text),
            spans: Vec::new(),
        };
        let src = source(
            "Abbasuddin Ahmed",
            "Abbasuddin Ahmed was a Bengali folk singer born in Cooch Behar, British India.",
        );
        let r = ReadReply {
            quote:
                "[2] Abbasuddin Ahmed was a Bengali folk singer born in Cooch Behar, British India."
                    .into(),
            value: "British India".into(),
            source: 2,
        };
        let (v, n, _) = ground(
            &r,
            std::slice::from_ref(&src),
            "Abbas Uddin Ahmed",
            "nationality",
            Kind::Place,
        )
        .unwrap();
        assert_eq!((v.display().as_str(), n), ("British India", 2));
        // A country the quote states by its demonym, and not one it does not name.
        let src = source(
            "Ali Abbasi",
            "Ali Abbasi is an Iranian-born Danish film director.",
        );
        let read = |value: &str| ReadReply {
            quote: "Ali Abbasi is an Iranian-born Danish film director.".into(),
            value: value.into(),
            source: 2,
        };
        let ground_as = |value: &str| {
            ground(
                &read(value),
                std::slice::from_ref(&src),
                "Ali Abbasi",
                "nationality",
                Kind::Place,
            )
        };
        assert!(ground_as("Iran").is_ok());
        assert!(ground_as("Denmark").is_ok());
        assert!(ground_as("Sweden").is_err());
    }

    #[test]
    fn a_value_counts_only_from_a_source_about_its_subject_that_states_it() {
        let sources = [
            src(
                1,
                "Velmora",
                "Velmora is a 1961 drama film directed by Ansel Crow.",
            ),
            src(
                2,
                "Ansel Crow",
                "Ansel Crow (born 4 May 1920 in Lyon) was a French director.",
            ),
        ];
        // The date is Ansel Crow's, read for Velmora: not about the subject.
        let r = reply(
            "Ansel Crow (born 4 May 1920 in Lyon) was a French director.",
            "4 May 1920",
            2,
        );
        assert!(ground(&r, &sources, "Velmora", "release date", Kind::Date).is_err());
        // A quote no source holds.
        let r = reply("Velmora was released in 1959.", "1959", 1);
        let (why, missing) =
            ground(&r, &sources, "Velmora", "release date", Kind::Date).unwrap_err();
        assert!(why.contains("no source holds"), "{why}");
        assert!(missing);
        // A value the quote does not state.
        let r = reply(
            "Velmora is a 1961 drama film directed by Ansel Crow.",
            "1962",
            1,
        );
        let (why, missing) =
            ground(&r, &sources, "Velmora", "release date", Kind::Date).unwrap_err();
        assert!(why.contains("does not state"), "{why}");
        assert!(!missing);
        // Cited as the wrong number, found in the right source, as precise as written there.
        let r = reply(
            "Ansel Crow (born 4 May 1920 in Lyon) was a French director.",
            "1920",
            1,
        );
        let (v, n, _) = ground(&r, &sources, "Ansel Crow", "date of birth", Kind::Date).unwrap();
        assert_eq!((v.display(), n), ("4 May 1920".to_string(), 2));
        // Nothing read: missing.
        let (_, missing) = ground(
            &reply("", "", 0),
            &sources,
            "Velmora",
            "budget",
            Kind::Quantity,
        )
        .unwrap_err();
        assert!(missing);
    }

    #[test]
    fn a_yes_needs_the_predicate_stated_and_a_no_needs_a_sentence_about_the_subject() {
        let sources = [src(
            1,
            "Quenmoor",
            "Quenmoor is a genus of flowering shrubs in the heath family.",
        )];
        let r = reply(
            "Quenmoor is a genus of flowering shrubs in the heath family.",
            "yes",
            1,
        );
        assert!(ground(&r, &sources, "Quenmoor", "a species of fern", Kind::YesNo).is_err());
        let r = reply(
            "Quenmoor is a genus of flowering shrubs in the heath family.",
            "no",
            1,
        );
        assert_eq!(
            ground(&r, &sources, "Quenmoor", "a species of fern", Kind::YesNo)
                .unwrap()
                .0,
            Value::Bool(false)
        );
        let r = reply(
            "Quenmoor is a genus of flowering shrubs in the heath family.",
            "no",
            1,
        );
        assert_eq!(
            ground(&r, &sources, "Quenmoor", "flowering shrubs", Kind::YesNo)
                .unwrap()
                .0,
            Value::Bool(true)
        );
    }

    #[test]
    fn a_relation_never_leads_to_the_subject_itself_and_is_read_off_the_sentence_alone() {
        assert!(itself("Tam Reed", "Tam Reed"));
        assert!(itself("Pieris (plant)", "Pieris"));
        // A namesake is not the subject itself.
        assert!(!itself("Piet Lune Jr.", "Piet Lune Sr."));
        let r = relation_request(
            "Orla Vey is a 1962 film directed by Tam Reed.",
            "Orla Vey",
            "composer",
        );
        let prompt = &r.messages.last().unwrap().content;
        assert!(
            prompt.contains("what is the composer of Orla Vey?"),
            "{prompt}"
        );
        assert!(!prompt.contains("Tam Reed is"), "{prompt}");
        let schema = r.schema.unwrap().schema;
        assert!(schema.pointer("/properties/answer").is_some(), "{schema}");
    }
}
