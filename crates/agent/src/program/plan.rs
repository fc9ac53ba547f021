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
pub const PLAN_INSTRUCTIONS: &str = r##"Write a small program that answers the question from documents. Steps:
- find: read one fact about a subject. "property" names the fact; "type" is person, place, date, quantity, yes_no (does the statement in "property" hold for the subject?), text or list.
- follow: the thing a relation of a subject names (its director, its father, its parent company); a later step can use it as subject "#n".
- compare: which of two found dates or quantities ("args") is earlier, later, more or less ("by").
- same: whether two found values ("args") are the same.
- all / any: whether all / any of the yes_no steps ("args") hold.
- pick: which of the question's "options" the steps ("args") pick: one yes_no step per option, or one found value.
- count: how many items a list step holds. intersect: the items two list steps share.
The last step is the answer. Refer to step n as "#n". Use the names as the question writes them.

Examples:
Q: Which was released first, Velmora or The Quill Lake?
{"steps": [{"op": "find", "subject": "Velmora", "property": "release date", "type": "date"}, {"op": "find", "subject": "The Quill Lake", "property": "release date", "type": "date"}, {"op": "compare", "args": ["#1", "#2"], "by": "earlier"}]}
Q: In which city was the founder of Tarnwick Press born?
{"steps": [{"op": "follow", "subject": "Tarnwick Press", "property": "founder"}, {"op": "find", "subject": "#1", "property": "city of birth", "type": "place"}]}
Q: Are the Orlo gateway and the Brandt queue both deprecated?
{"steps": [{"op": "find", "subject": "Orlo gateway", "property": "deprecated", "type": "yes_no"}, {"op": "find", "subject": "Brandt queue", "property": "deprecated", "type": "yes_no"}, {"op": "all", "args": ["#1", "#2"]}]}
Q: Does the Hessel service cache with Redis or with Memcached?
{"steps": [{"op": "find", "subject": "Hessel service", "property": "cache it uses", "type": "text"}, {"op": "pick", "args": ["#1"], "options": ["Redis", "Memcached"]}]}
Q: Of Ilse Varga and Tomas Brel, who won more titles?
{"steps": [{"op": "find", "subject": "Ilse Varga", "property": "number of titles won", "type": "quantity"}, {"op": "find", "subject": "Tomas Brel", "property": "number of titles won", "type": "quantity"}, {"op": "compare", "args": ["#1", "#2"], "by": "more"}]}
Q: What instrument do Pell Arno and Mira Sand both play?
{"steps": [{"op": "find", "subject": "Pell Arno", "property": "instruments played", "type": "list"}, {"op": "find", "subject": "Mira Sand", "property": "instruments played", "type": "list"}, {"op": "intersect", "args": ["#1", "#2"]}]}
Q: Were Marek Dunn and Sofia Ehle citizens of the same country?
{"steps": [{"op": "find", "subject": "Marek Dunn", "property": "nationality", "type": "place"}, {"op": "find", "subject": "Sofia Ehle", "property": "nationality", "type": "place"}, {"op": "same", "args": ["#1", "#2"]}]}
Q: Which of the two bands, Frostgard and Kelpie Lane, formed in Norway?
{"steps": [{"op": "find", "subject": "Frostgard", "property": "formed in Norway", "type": "yes_no"}, {"op": "find", "subject": "Kelpie Lane", "property": "formed in Norway", "type": "yes_no"}, {"op": "pick", "args": ["#1", "#2"], "options": ["Frostgard", "Kelpie Lane"]}]}
Q: Who was the mother of Queen Elsbet's husband?
{"steps": [{"op": "follow", "subject": "Queen Elsbet", "property": "husband"}, {"op": "follow", "subject": "#1", "property": "mother"}]}
Q: How long is the warranty on the Pexa 3 printer?
{"steps": [{"op": "find", "subject": "Pexa 3 printer", "property": "warranty length", "type": "quantity"}]}
"##;

/// Asks for the program of `question`.
pub fn plan(question: &str) -> ChatRequest {
    let request = ChatRequest::new(vec![
        Message::system(SYSTEM_CLOSED),
        Message::user(format!(
            "{PLAN_INSTRUCTIONS}\nQ: {question}\nReply with the program in JSON only."
        )),
    ]);
    // The grammar requires every step's subject and a non-empty property, which parsing
    // does not (ops that need neither leave them out in tests and examples): a grammar
    // that lets the 0.5B model leave a field out let it write finds with no property.
    let mut schema = OutputSchema::of::<RawProgram>();
    if let Some(step) = schema
        .schema
        .pointer_mut("/$defs/RawStep")
        .and_then(|s| s.as_object_mut())
    {
        step.insert(
            "required".into(),
            serde_json::json!(["op", "subject", "property", "type", "args"]),
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
