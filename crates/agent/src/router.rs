//! Seed `002`'s `classify_query` with the small LLM: the query's intents as JSON under a
//! schema (the model can only name the five intents), merged with the cue-word rules of
//! [`metarag_retrieve::router`] as the agent merges the model's answers with rules
//! elsewhere: a stated cue wins, the model decides where none is present.

use crate::Result;
use metarag_core::{ChatRequest, Llm, Message};
use metarag_retrieve::router::{Intent, Route, RouteSource, merge_with_rules};
use schemars::JsonSchema;
use serde::Deserialize;
use std::time::Instant;

/// The model's reply.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct IntentReply {
    /// One or more of: factual, conceptual, comparative, procedural, temporal; the main one
    /// first.
    pub intents: Vec<IntentName>,
}

/// An intent as the schema spells it.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)]
pub enum IntentName {
    Factual,
    Conceptual,
    Comparative,
    Procedural,
    Temporal,
}

impl From<IntentName> for Intent {
    fn from(n: IntentName) -> Intent {
        match n {
            IntentName::Factual => Intent::Factual,
            IntentName::Conceptual => Intent::Conceptual,
            IntentName::Comparative => Intent::Comparative,
            IntentName::Procedural => Intent::Procedural,
            IntentName::Temporal => Intent::Temporal,
        }
    }
}

/// The classification prompt: the seed's, with the five intents of its table.
pub fn intent_prompt(query: &str) -> ChatRequest {
    let system = "You route a user's question to the right kind of search. Classify it into one or more intents:\n\
- factual: asks for a fact, a name, a number, a place (\"What is the default port?\", \"Who wrote it?\")\n\
- conceptual: asks why, or for an explanation of an idea (\"Why does the cache use TTLs?\")\n\
- comparative: compares two or more things (\"X vs Y\", \"Which is older, A or B?\")\n\
- procedural: asks how to do something, steps (\"How do I add a provider?\")\n\
- temporal: asks when, or what changed over time (\"What changed since March?\")\n\
Return every intent that applies, the main one first.";
    ChatRequest::new(vec![Message::system(system), Message::user(query)])
        .temperature(0.0)
        .max_tokens(48)
        .json_schema::<IntentReply>()
}

/// Classifies `query` with the model, then merges the cue-word rules.
pub async fn classify_with_llm<L: Llm + ?Sized>(llm: &L, query: &str) -> Result<Route> {
    let started = Instant::now();
    let completion = llm.chat(&intent_prompt(query)).await?;
    Ok(route_from_reply(query, &completion.text, started.elapsed()))
}

/// The route the model's reply names, merged with the cue-word rules. A reply that breaks
/// the schema (an endpoint that ignores it) counts as no opinion: the rules or the factual
/// default decide.
pub fn route_from_reply(query: &str, reply: &str, took: std::time::Duration) -> Route {
    let mut intents: Vec<Intent> = match serde_json::from_str::<IntentReply>(reply) {
        Ok(r) => r.intents.into_iter().map(Intent::from).collect(),
        Err(e) => {
            tracing::warn!(error = %e, "intent reply is not valid JSON; using the rules");
            Vec::new()
        }
    };
    intents.dedup();
    if intents.is_empty() {
        intents.push(Intent::Factual);
    }
    merge_with_rules(query, Route::new(intents, RouteSource::Llm, took))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_constrains_the_reply_to_the_five_intents() {
        let p = intent_prompt("How do I rotate keys?");
        let schema = serde_json::to_string(&p.schema.unwrap().schema).unwrap();
        for i in [
            "factual",
            "conceptual",
            "comparative",
            "procedural",
            "temporal",
        ] {
            assert!(schema.contains(i), "{schema}");
        }
    }
}
