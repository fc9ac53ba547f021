//! The planner's prompt: the question in, a [`RawProgram`] out through the JSON grammar.
//!
//! The examples use invented things and cover every op once, so the model learns the
//! shapes, not one benchmark's questions. The prompt holds no sources: the same prefix
//! (system prompt and examples) comes first in every question's plan, so a local model
//! can keep it evaluated, and the question comes last.

use super::RawProgram;
use crate::prompts::SYSTEM_CLOSED;
use metarag_core::{ChatRequest, Message, OutputSchema};

/// The instructions and examples every plan starts with.
pub const PLAN_INSTRUCTIONS: &str = r##"Write a small program that answers the question from documents. Each step has "do" (the op), "of" (a subject), "read" (a fact or relation), "type", "versus" (options), "wins" and "with" (earlier steps); leave what an op does not use empty. Ops:
- find: read one fact "read" about the subject "of". "type" is person, place, date, quantity, yes_no (does the statement in "read" hold for the subject?), text or list.
- follow: the thing a relation "read" of the subject "of" names (its director, its father, its parent company); a later step can use it as "of": "#n".
- compare: which of two found dates or quantities ("with") "wins": earlier, later, more or less.
- same: whether two found values ("with") are the same.
- all / any: whether all / any of the yes_no steps ("with") hold.
- pick: which of the question's options ("versus") the steps ("with") pick: one yes_no step per option, or one found value.
- count: how many items a list step ("with") holds. intersect: the items two list steps share.
The last step is the answer. Refer to step n as "#n". Use the names as the question writes them.

Examples:
Q: Which was released first, Velmora or The Quill Lake?
{"steps": [{"do": "find", "of": "Velmora", "read": "release date", "type": "date"}, {"do": "find", "of": "The Quill Lake", "read": "release date", "type": "date"}, {"do": "compare", "with": ["#1", "#2"], "wins": "earlier"}]}
Q: In which city was the founder of Tarnwick Press born?
{"steps": [{"do": "follow", "of": "Tarnwick Press", "read": "founder"}, {"do": "find", "of": "#1", "read": "city of birth", "type": "place"}]}
Q: Are the Orlo gateway and the Brandt queue both deprecated?
{"steps": [{"do": "find", "of": "Orlo gateway", "read": "deprecated", "type": "yes_no"}, {"do": "find", "of": "Brandt queue", "read": "deprecated", "type": "yes_no"}, {"do": "all", "with": ["#1", "#2"]}]}
Q: Does the Hessel service cache with Redis or with Memcached?
{"steps": [{"do": "find", "of": "Hessel service", "read": "cache it uses", "type": "text"}, {"do": "pick", "with": ["#1"], "versus": ["Redis", "Memcached"]}]}
Q: Of Ilse Varga and Tomas Brel, who won more titles?
{"steps": [{"do": "find", "of": "Ilse Varga", "read": "number of titles won", "type": "quantity"}, {"do": "find", "of": "Tomas Brel", "read": "number of titles won", "type": "quantity"}, {"do": "compare", "with": ["#1", "#2"], "wins": "more"}]}
Q: What instrument do Pell Arno and Mira Sand both play?
{"steps": [{"do": "find", "of": "Pell Arno", "read": "instruments played", "type": "list"}, {"do": "find", "of": "Mira Sand", "read": "instruments played", "type": "list"}, {"do": "intersect", "with": ["#1", "#2"]}]}
Q: Were Marek Dunn and Sofia Ehle citizens of the same country?
{"steps": [{"do": "find", "of": "Marek Dunn", "read": "nationality", "type": "place"}, {"do": "find", "of": "Sofia Ehle", "read": "nationality", "type": "place"}, {"do": "same", "with": ["#1", "#2"]}]}
Q: Which of the two bands, Frostgard and Kelpie Lane, formed in Norway?
{"steps": [{"do": "find", "of": "Frostgard", "read": "formed in Norway", "type": "yes_no"}, {"do": "find", "of": "Kelpie Lane", "read": "formed in Norway", "type": "yes_no"}, {"do": "pick", "with": ["#1", "#2"], "versus": ["Frostgard", "Kelpie Lane"]}]}
Q: Who was the mother of Queen Elsbet's husband?
{"steps": [{"do": "follow", "of": "Queen Elsbet", "read": "husband"}, {"do": "follow", "of": "#1", "read": "mother"}]}
Q: How long is the warranty on the Pexa 3 printer?
{"steps": [{"do": "find", "of": "Pexa 3 printer", "read": "warranty length", "type": "quantity"}]}
"##;

/// Asks for the program of `question`.
pub fn plan(question: &str) -> ChatRequest {
    // The examples as turns of the conversation, each question the user's and its program
    // the assistant's: a small model copies the shape of its own earlier replies far more
    // closely than examples inside one message (the 1.5B model, shown them inline, wrote
    // one-step programs with names where step references go).
    let (rules, examples) = PLAN_INSTRUCTIONS
        .split_once("\nExamples:\n")
        .unwrap_or((PLAN_INSTRUCTIONS, ""));
    let mut messages = vec![Message::system(format!("{SYSTEM_CLOSED}\n\n{rules}"))];
    let mut lines = examples.lines();
    while let (Some(q), Some(program)) = (lines.next(), lines.next()) {
        messages.push(Message::user(q.trim_start_matches("Q: ").to_string()));
        // Every field written, as the grammar asks for them all.
        let full = serde_json::from_str::<RawProgram>(program)
            .ok()
            .and_then(|p| serde_json::to_string(&p).ok())
            .unwrap_or_else(|| program.to_string());
        messages.push(Message::assistant(full));
    }
    messages.push(Message::user(question.to_string()));
    let request = ChatRequest::new(messages);
    // The grammar requires every field of a step, which parsing does not (ops that need
    // few leave the rest out in tests): a grammar that lets the 0.5B model leave a field
    // out let it write finds with no property.
    let mut schema = OutputSchema::of::<RawProgram>();
    if let Some(step) = schema
        .schema
        .pointer_mut("/$defs/RawStep")
        .and_then(|s| s.as_object_mut())
    {
        step.insert(
            "required".into(),
            serde_json::json!(["do", "of", "read", "type", "versus", "wins", "with"]),
        );
    }
    let mut request = request;
    request.schema = Some(schema);
    request.max_tokens(400)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_example_is_a_valid_program() {
        let programs: Vec<RawProgram> = PLAN_INSTRUCTIONS
            .lines()
            .filter(|l| l.starts_with('{'))
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(programs.len(), 10);
        for p in &programs {
            p.validate().unwrap();
        }
        // Every op is shown at least once.
        let shown: std::collections::BTreeSet<&str> = programs
            .iter()
            .map(|p| p.validate().unwrap())
            .flat_map(|p| p.steps.into_iter().map(|s| s.name()))
            .collect();
        for op in [
            "find",
            "follow",
            "compare",
            "same",
            "all",
            "pick",
            "intersect",
        ] {
            assert!(shown.contains(op), "{op} is not shown");
        }
    }
}
