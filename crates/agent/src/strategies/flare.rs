//! `flare`: forward-looking active retrieval (Jiang et al., EMNLP 2023), FLARE-direct.
//!
//! The answer is generated one sentence at a time. Each sentence is first drafted with
//! the log-probability of every token; when any content token's probability is under
//! the threshold, the draft is turned into a query (its unsure tokens masked out, the
//! paper's implicit query), passages are retrieved, and the sentence is written again over
//! the new evidence. Confident drafts are kept as they are. The generated text goes as
//! notes to the shared write node for the cited answer.
//!
//! Where the local model forces a change: on a 1.5B model token probabilities are high
//! almost everywhere (published: FLARE's trigger "rarely activates" on Qwen2.5-1.5B), so
//! the threshold is a setting to fit on the tuning split per model, not the paper's
//! value. A backend without log-probabilities ([`metarag_core::Capabilities`]) cannot
//! tell confident tokens from unsure ones: then every sentence retrieves (FLARE with
//! θ = 1), and the trace says so.

use crate::graph::{Graph, NodeId, NodeResult, Transition};
use crate::nodes::{self, READ, RETRIEVE, WRITE};
use crate::prompts::over_sources;
use crate::registry::Strategy;
use crate::state::Run;
use crate::text::is_stopword;
use crate::trace::StepKind;
use crate::verify::without_citations;
use metarag_core::{ChatRequest, TokenLogprob};
use serde::{Deserialize, Serialize};

/// Drafts the next sentence, retrieves when unsure, and writes it.
pub const GENERATE: NodeId = NodeId("generate");

/// FLARE's settings (`[strategies.flare]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FlareConfig {
    /// A draft retrieves when any content token's probability is under this (θ).
    pub threshold: f64,
    /// Most sentences generated.
    pub max_sentences: usize,
    /// Passages retrieved per unsure sentence.
    pub k_per_retrieval: usize,
    /// Most tokens per sentence.
    pub sentence_tokens: u32,
}

impl Default for FlareConfig {
    fn default() -> Self {
        FlareConfig {
            threshold: 0.4,
            max_sentences: 4,
            k_per_retrieval: 3,
            sentence_tokens: 64,
        }
    }
}

/// The FLARE strategy.
#[derive(Debug, Clone)]
pub struct Flare(FlareConfig);

/// FLARE's state: settings and the sentences written so far.
#[derive(Debug)]
pub struct FlareState {
    config: FlareConfig,
    written: Vec<String>,
}

impl Strategy for Flare {
    const NAME: &'static str = "flare";
    const DESCRIPTION: &'static str = "generate sentence by sentence; retrieve and rewrite a sentence when a token's probability is low (FLARE, Jiang et al. 2023)";
    type Config = FlareConfig;
    type State = FlareState;

    fn new(config: FlareConfig) -> Result<Self, String> {
        if !(0.0..=1.0).contains(&config.threshold) {
            return Err(format!("threshold {} is not in [0, 1]", config.threshold));
        }
        if config.max_sentences == 0 || config.k_per_retrieval == 0 || config.sentence_tokens == 0 {
            return Err(
                "max_sentences, k_per_retrieval and sentence_tokens must be at least 1".into(),
            );
        }
        Ok(Flare(config))
    }

    fn state(&self) -> FlareState {
        FlareState {
            config: self.0.clone(),
            written: Vec::new(),
        }
    }

    fn graph(&self) -> Graph<Run<FlareState>> {
        Graph::new(RETRIEVE)
            .node(RETRIEVE, &[(READ, "")], |s| {
                Box::pin(nodes::retrieve(s, READ))
            })
            .node(
                READ,
                &[(GENERATE, "sentences to write"), (WRITE, "done")],
                |s| Box::pin(read_then(s)),
            )
            .node(
                GENERATE,
                &[(GENERATE, "answer not finished"), (READ, "finished")],
                |s| Box::pin(generate(s)),
            )
            .node(WRITE, &[], |s| {
                Box::pin(nodes::write(s, Transition::done("answered")))
            })
    }
}

/// Reads the pool; the first time on to generation, once the notes are set on to writing.
async fn read_then(s: &mut Run<FlareState>) -> NodeResult {
    let next = if s.notes.is_some() { WRITE } else { GENERATE };
    nodes::read(s, Transition::Goto(next)).await
}

/// The prompt for the next sentence of the answer.
pub fn next_sentence(
    question: &str,
    sources: &[crate::Source],
    written: &[String],
    max_tokens: u32,
) -> ChatRequest {
    let so_far = if written.is_empty() {
        "(nothing yet)".to_string()
    } else {
        written.join(" ")
    };
    ChatRequest::new(over_sources(
        sources,
        format!(
            "Question: {question}\n\nAnswer written so far: {so_far}\n\nWrite the next sentence of the answer: one \
             sentence with one fact from the sources. If the answer is complete, write only: DONE"
        ),
    ))
    .max_tokens(max_tokens)
    .stop("\n")
}

/// Content tokens under the threshold, and the draft with them masked out (the query).
fn unsure(tokens: &[TokenLogprob], threshold: f64) -> (Vec<String>, String) {
    let ln_t = threshold.max(f64::MIN_POSITIVE).ln();
    let mut low = Vec::new();
    let mut query = String::new();
    for t in tokens {
        let word = t.token.trim().trim_matches(|c: char| !c.is_alphanumeric());
        let content = !word.is_empty() && !is_stopword(&word.to_lowercase());
        if content && f64::from(t.logprob) < ln_t {
            low.push(word.to_string());
        } else {
            query.push_str(&t.token);
        }
    }
    (low, query.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// True when a sentence ends the answer.
fn finished(sentence: &str) -> bool {
    let s = sentence.trim();
    s.is_empty() || s.to_lowercase().starts_with("done")
}

async fn generate(s: &mut Run<FlareState>) -> NodeResult {
    let cfg = s.ext.config.clone();
    let has_logprobs = s.gw.capabilities().logprobs;
    let mut request = next_sentence(&s.question, &s.sources, &s.ext.written, cfg.sentence_tokens);
    if has_logprobs {
        request = request.logprobs();
    }
    let c = s.gw.chat(GENERATE.as_str(), "draft", request).await?;
    let draft = c
        .text()
        .map_err(|e| format!("draft: {e}"))?
        .trim()
        .to_string();
    if finished(&draft) || s.ext.written.contains(&draft) {
        return end(s, "answer complete");
    }
    let logprobs = c.result.as_ref().ok().and_then(|d| d.logprobs.clone());
    let (low, masked) = match &logprobs {
        Some(tokens) => unsure(tokens, cfg.threshold),
        // Without log-probabilities every sentence counts as unsure (θ = 1).
        None => (vec!["(no log-probabilities)".to_string()], String::new()),
    };
    s.step(
        GENERATE.as_str(),
        StepKind::Thought,
        format!("draft: {draft} (unsure: {})", low.join(", ")),
    );
    let sentence = if low.is_empty() {
        draft
    } else {
        // The masked draft keeps what the model is sure of; with too little left, the
        // question anchors the query.
        let masked = without_citations(&masked);
        let query = if masked.split_whitespace().count() >= 3 {
            masked
        } else {
            format!("{} {}", s.question, without_citations(&draft))
        };
        s.step(
            GENERATE.as_str(),
            StepKind::Action,
            format!("search: {query}"),
        );
        let found = nodes::gather(s, &query, cfg.k_per_retrieval).await?;
        let titles: Vec<&str> = found.iter().map(|p| p.title.as_str()).collect();
        s.step(GENERATE.as_str(), StepKind::Observation, titles.join("; "));
        nodes::read(s, Transition::Goto(GENERATE)).await?;
        let again = next_sentence(&s.question, &s.sources, &s.ext.written, cfg.sentence_tokens);
        let c = s.gw.chat(GENERATE.as_str(), "rewrite", again).await?;
        let rewritten = c
            .text()
            .map_err(|e| format!("rewrite: {e}"))?
            .trim()
            .to_string();
        if finished(&rewritten) {
            return end(s, "answer complete after retrieval");
        }
        rewritten
    };
    s.step(GENERATE.as_str(), StepKind::Answer, sentence.clone());
    s.note = Some(format!(
        "sentence {}: {} unsure tokens",
        s.ext.written.len() + 1,
        low.len()
    ));
    s.ext.written.push(sentence);
    if s.ext.written.len() >= cfg.max_sentences {
        return end(s, "sentences spent");
    }
    Ok(Transition::Goto(GENERATE))
}

fn end(s: &mut Run<FlareState>, why: &str) -> NodeResult {
    s.notes = Some(if s.ext.written.is_empty() {
        "(no sentence written)".to_string()
    } else {
        s.ext.written.join(" ")
    });
    s.note = Some(format!("{}: {why}", s.ext.written.len()));
    Ok(Transition::Goto(READ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tok(t: &str, p: f32) -> TokenLogprob {
        TokenLogprob {
            token: t.into(),
            logprob: p.ln(),
        }
    }

    #[test]
    fn unsure_content_tokens_are_masked_out_of_the_query() {
        let tokens = [
            tok("Jaws", 0.99),
            tok(" was", 0.99),
            tok(" directed", 0.95),
            tok(" by", 0.2),
            tok(" Spielberg", 0.1),
        ];
        let (low, query) = unsure(&tokens, 0.4);
        // "by" is a stopword: unsure but not content, so it stays.
        assert_eq!(low, ["Spielberg"]);
        assert_eq!(query, "Jaws was directed by");
        let (low, _) = unsure(&tokens, 0.05);
        assert!(low.is_empty());
    }
}
