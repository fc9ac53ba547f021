//! Every prompt the agent sends, and the shapes of the structured replies it asks for.
//!
//! All calls over evidence share one prefix (the system prompt, then the numbered
//! sources) and put the task after it, so a local model reuses the evaluated prefix from
//! one call to the next (measured: 88% of a second call's prompt, ~6x faster).

use crate::config::Complexity;
use crate::evidence::Source;
use crate::monitor::AnswerForm;
use metarag_core::{ChatRequest, Message, OutputSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// System prompt of every call over evidence.
pub const SYSTEM: &str = "You are a careful research assistant. You answer questions from numbered sources and cite them.";

/// System prompt of calls without evidence (closed-book, planning).
pub const SYSTEM_CLOSED: &str = "You are a knowledgeable assistant. Answer briefly and factually.";

/// The sources block every evidence prompt starts with.
pub fn sources_block(sources: &[Source]) -> String {
    let mut out = String::from("Sources:\n");
    for s in sources {
        out.push_str(&format!("[{}] {}", s.n, s.passage.title));
        if !s.passage.section.is_empty() {
            out.push_str(&format!(" / {}", s.passage.section.join(" / ")));
        }
        if let Some((a, b)) = s.passage.pages {
            if a == b {
                out.push_str(&format!(" (p. {a})"));
            } else {
                out.push_str(&format!(" (pp. {a}-{b})"));
            }
        }
        out.push('\n');
        out.push_str(&s.text());
        out.push_str("\n\n");
    }
    out
}

/// The messages of a call over evidence: the shared system prompt, then the sources, then
/// the task (so calls over the same sources share a prefix a local model reuses).
pub fn over_sources(sources: &[Source], task: String) -> Vec<Message> {
    vec![
        Message::system(SYSTEM),
        Message::user(format!("{}{task}", sources_block(sources))),
    ]
}

/// The plan node's reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PlanReply {
    /// simple, complex or multi_hop.
    pub complexity: Complexity,
}

/// Asks for the query's complexity.
pub fn plan(question: &str) -> ChatRequest {
    ChatRequest::new(vec![
        Message::system(SYSTEM_CLOSED),
        Message::user(format!(
            "Classify this question for a search engine.\n\
             - simple: asks for one fact about one named thing.\n\
             - complex: asks for several facts or an explanation about one subject.\n\
             - multi_hop: must first find one thing and then a fact about it, or compares two things.\n\n\
             Question: {question}\n\nReply in JSON: {{\"complexity\": \"simple\" | \"complex\" | \"multi_hop\"}}"
        )),
    ])
    .json_schema::<PlanReply>()
    .max_tokens(24)
}

/// The write node's reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WriteReply {
    /// The answer, one to three sentences, citing sources as `[n]`.
    pub answer: String,
    /// The bare final answer: a name, date, number, or yes/no.
    pub short_answer: String,
}

/// The schema of a reply with a `short_answer` field, its value limited to `allowed`
/// when given (a grammar-constrained backend can then only write one of them).
fn constrained<T: JsonSchema>(allowed: Option<Vec<String>>) -> OutputSchema {
    let mut schema = OutputSchema::of::<T>();
    if let Some(values) = allowed
        && let Some(field) = schema
            .schema
            .pointer_mut("/properties/short_answer")
            .and_then(|f| f.as_object_mut())
    {
        field.insert("enum".into(), serde_json::json!(values));
    }
    schema
}

/// What the prompt says the short answer must be, by the question's form.
fn short_rule(form: &AnswerForm) -> String {
    match form {
        AnswerForm::YesNo => "The short_answer is yes or no.".into(),
        // Not forced: when the sources say the answer is neither option, that is the answer.
        AnswerForm::Choice(_) => format!(
            "The short_answer is one of: {}; or, when the sources say it is neither, what they say it is.",
            form.options()
                .iter()
                .map(|x| format!("\"{x}\""))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        _ => "The short_answer is the answer alone in as few words as possible (a name, a date, a \
              number), not a sentence."
            .into(),
    }
}

/// Asks for a cited answer (with sources) or a closed-book one (without). The short
/// answer's form follows the question: for a yes/no question the schema allows only yes
/// or no, so a grammar-constrained backend cannot put a sentence there. An "A or B"
/// question's short answer is not limited to the options: the sources may say it is
/// neither. With `may_decline` (`[agent] abstain` on) the writer may say the sources do
/// not answer the question, the short answer then `unknown` (allowed by the schema too):
/// the only way standard RAG declines, and the baseline metarag's own checks are measured
/// against.
pub fn write(
    question: &str,
    sources: &[Source],
    notes: Option<&str>,
    directive: Option<&str>,
    max_tokens: u32,
    may_decline: bool,
) -> ChatRequest {
    let form = AnswerForm::of(question);
    let notes = notes
        .map(|n| {
            format!("Notes from your reasoning so far (check them against the sources):\n{n}\n\n")
        })
        .unwrap_or_default();
    let directive = format!(
        "{notes}{}",
        directive
            .map(|d| format!("Instruction for this attempt: {d}\n\n"))
            .unwrap_or_default()
    );
    let may_decline = may_decline && !sources.is_empty();
    let decline = if may_decline {
        format!(
            " If the sources do not state the answer, say so in the answer and write \"{}\" as the short_answer.",
            crate::trace::ABSTAINED_SHORT
        )
    } else {
        String::new()
    };
    let shape = format!(
        "Reply in JSON: {{\"answer\": \"...\", \"short_answer\": \"...\"}}. {}{decline}",
        short_rule(&form)
    );
    let mut request = if sources.is_empty() {
        ChatRequest::new(vec![
            Message::system(SYSTEM_CLOSED),
            Message::user(format!(
                "Question: {question}\n\n{directive}Answer from your own knowledge in one or two sentences. \
                 \n{shape}"
            )),
        ])
    } else {
        ChatRequest::new(over_sources(
            sources,
            format!(
                "Question: {question}\n\n{directive}Answer the question using the sources. After every fact, \
                 cite the source that states it by its number in square brackets, like [1]. Use one to three \
                 sentences.\n{shape}"
            ),
        ))
    };
    let allowed = form.allowed().map(|mut values| {
        if may_decline {
            values.push(crate::trace::ABSTAINED_SHORT.to_string());
        }
        values
    });
    request.schema = Some(constrained::<WriteReply>(allowed));
    request.max_tokens(max_tokens)
}

/// A reply holding only a short answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ShortReply {
    /// The bare answer: a name, date, number, or yes/no.
    pub short_answer: String,
}

/// Asks for the short answer alone over the same sources (the monitor samples it several
/// times: agreement between samples is a confidence signal). It shares the sources and
/// question prefix with the write call, so a local model evaluates only the task line.
pub fn short_answer(question: &str, sources: &[Source]) -> ChatRequest {
    let form = AnswerForm::of(question);
    let mut request = ChatRequest::new(over_sources(
        sources,
        format!(
            "Question: {question}\n\nAnswer the question using the sources, with the answer alone. {}\n\
             Reply in JSON: {{\"short_answer\": \"...\"}}",
            short_rule(&form)
        ),
    ));
    request.schema = Some(constrained::<ShortReply>(form.allowed()));
    request.max_tokens(32)
}

/// One fact the question needs, as the verify step asks the model to list them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FactReply {
    /// What must be known ("who directed Jaws").
    pub need: String,
    /// Its value as the sources state it ("Steven Spielberg"); empty if no source does.
    pub value: String,
    /// The number of the source that states it; 0 if none.
    pub source: u32,
    /// The exact words of that source stating it; empty if none.
    pub quote: String,
}

/// The facts reply (the facts check [`crate::verify`] reads).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FactsReply {
    /// One entry per reasoning step, at most four.
    pub facts: Vec<FactReply>,
}

/// A judge's scores of an answer (the [`crate::verify`] input).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct JudgeReply {
    /// Every claim supported by its cited source (0 to 1).
    pub faithfulness: f64,
    /// Every part of the question answered (0 to 1).
    pub completeness: f64,
    /// How sure the judge is that the answer is right (0 to 1).
    pub confidence: f64,
}

/// Asks for a short closed-book answer (the internal-knowledge probe).
pub fn closed_book(question: &str) -> ChatRequest {
    ChatRequest::new(vec![
        Message::system(SYSTEM_CLOSED),
        Message::user(format!(
            "Question: {question}\n\nAnswer from your own knowledge with only the answer itself, in a few words. \
             If you do not know, answer \"unknown\"."
        )),
    ])
    .max_tokens(24)
    .stop("\n")
}
