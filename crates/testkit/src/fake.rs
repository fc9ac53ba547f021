//! A scripted fake LLM for deterministic tests of agent branches. It never stands in for
//! the real model in anything a user runs: only tests depend on this crate.

use metarag_core::{Capabilities, ChatRequest, Completion, FinishReason, Llm, TokenLogprob, Usage};
use std::sync::Mutex;

/// One scripted rule: when every needle occurs in the prompt, reply with `reply`.
#[derive(Debug, Clone)]
struct Rule {
    needles: Vec<String>,
    replies: Vec<String>,
    /// Replies are used in turn; the last one repeats.
    next: usize,
    /// How many times the rule fired.
    hits: usize,
}

/// A fake [`Llm`] whose replies are chosen by matching the prompt, recording every call.
///
/// Rules are tried in the order they were added; the first whose needles all occur in the
/// concatenated messages answers. A rule can have a sequence of replies (the first call gets
/// the first, and so on, the last repeating), which scripts multi-round loops. A prompt no
/// rule matches gets the fallback reply, or an error if none was set, so a test notices a
/// prompt it did not expect.
#[derive(Debug, Default)]
pub struct ScriptedLlm {
    rules: Mutex<Vec<Rule>>,
    fallback: Option<String>,
    calls: Mutex<Vec<ChatRequest>>,
    /// Words the fake is "unsure" of: their tokens get a low log-probability.
    unsure: Vec<String>,
    /// How many times [`Llm::forget_context`] was called.
    forgotten: std::sync::atomic::AtomicUsize,
    /// The model id it answers as (default `scripted-fake`).
    name: Option<String>,
}

impl ScriptedLlm {
    /// A fake with no rules.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many times the caller asked the fake to forget its context.
    pub fn forgotten(&self) -> usize {
        self.forgotten.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Replies `reply` whenever all `needles` occur in the prompt.
    pub fn on(self, needles: &[&str], reply: impl Into<String>) -> Self {
        self.on_seq(needles, &[&reply.into()])
    }

    /// Replies with `replies` in turn (the last repeating) whenever all `needles` occur.
    pub fn on_seq(self, needles: &[&str], replies: &[impl AsRef<str>]) -> Self {
        assert!(!replies.is_empty(), "a rule needs at least one reply");
        self.rules.lock().unwrap().push(Rule {
            needles: needles.iter().map(|s| s.to_string()).collect(),
            replies: replies.iter().map(|r| r.as_ref().to_string()).collect(),
            next: 0,
            hits: 0,
        });
        self
    }

    /// Answers as model `id`, so a test with several fakes (role models) tells them apart.
    pub fn named(mut self, id: impl Into<String>) -> Self {
        self.name = Some(id.into());
        self
    }

    /// The reply to prompts no rule matches.
    pub fn otherwise(mut self, reply: impl Into<String>) -> Self {
        self.fallback = Some(reply.into());
        self
    }

    /// Words whose tokens get log-probability ln 0.05 when a request asks for
    /// log-probabilities (every other word gets ln 0.98): scripts a confidence signal.
    pub fn unsure_of(mut self, words: &[&str]) -> Self {
        self.unsure = words.iter().map(|w| w.to_string()).collect();
        self
    }

    /// Every request received, in order.
    pub fn calls(&self) -> Vec<ChatRequest> {
        self.calls.lock().unwrap().clone()
    }

    /// Number of requests received.
    pub fn call_count(&self) -> usize {
        self.calls.lock().unwrap().len()
    }

    /// How often the rule with these needles fired.
    pub fn hits(&self, needles: &[&str]) -> usize {
        self.rules
            .lock()
            .unwrap()
            .iter()
            .filter(|r| {
                r.needles
                    .iter()
                    .map(String::as_str)
                    .eq(needles.iter().copied())
            })
            .map(|r| r.hits)
            .sum()
    }

    fn reply(&self, request: &ChatRequest) -> Option<String> {
        let prompt: String = request
            .messages
            .iter()
            .map(|m| m.content.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        let mut rules = self.rules.lock().unwrap();
        for rule in rules.iter_mut() {
            if rule.needles.iter().all(|n| prompt.contains(n.as_str())) {
                let reply = rule.replies[rule.next.min(rule.replies.len() - 1)].clone();
                rule.next += 1;
                rule.hits += 1;
                return Some(reply);
            }
        }
        self.fallback.clone()
    }
}

impl Llm for ScriptedLlm {
    fn model_id(&self) -> &str {
        self.name.as_deref().unwrap_or("scripted-fake")
    }

    /// Log-probabilities (scripted by [`ScriptedLlm::unsure_of`]); one sample per call,
    /// so callers exercise their per-sample fallback.
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            logprobs: true,
            samples: false,
            json_schema: false,
        }
    }

    async fn chat(&self, request: &ChatRequest) -> metarag_core::Result<Completion> {
        self.calls.lock().unwrap().push(request.clone());
        let text = self.reply(request).ok_or_else(|| {
            metarag_core::Error::invalid(
                "prompt",
                format!(
                    "no scripted reply matches this prompt: {:?}",
                    request.messages.last().map(|m| &m.content)
                ),
            )
        })?;
        let prompt_tokens: usize = request
            .messages
            .iter()
            .map(|m| m.content.split_whitespace().count())
            .sum();
        let logprobs = request.params.logprobs.then(|| {
            text.split_inclusive(char::is_whitespace)
                .map(|w| {
                    let word = w.trim().trim_matches(|c: char| !c.is_alphanumeric());
                    let p: f32 = if self.unsure.iter().any(|u| u == word) {
                        0.05
                    } else {
                        0.98
                    };
                    TokenLogprob {
                        token: w.to_string(),
                        logprob: p.ln(),
                    }
                })
                .collect()
        });
        let usage = Usage {
            prompt_tokens: prompt_tokens as u64,
            completion_tokens: text.split_whitespace().count() as u64,
            ..Usage::default()
        };
        let mut completion = Completion::new(text, FinishReason::Stop, usage, "scripted-fake");
        completion.logprobs = logprobs;
        Ok(completion)
    }

    async fn forget_context(&self) {
        self.forgotten
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use metarag_core::Message;

    #[tokio::test]
    async fn first_matching_rule_answers_and_sequences_advance() {
        let llm = ScriptedLlm::new()
            .on_seq(&["critic"], &["{\"a\":1}", "{\"a\":2}"])
            .on(&["Question"], "Paris")
            .otherwise("?");
        let ask = |s: &str| ChatRequest::new(vec![Message::user(s)]);
        assert_eq!(llm.chat(&ask("Question: x")).await.unwrap().text, "Paris");
        assert_eq!(llm.chat(&ask("critic")).await.unwrap().text, "{\"a\":1}");
        assert_eq!(llm.chat(&ask("critic")).await.unwrap().text, "{\"a\":2}");
        assert_eq!(llm.chat(&ask("critic")).await.unwrap().text, "{\"a\":2}");
        assert_eq!(llm.chat(&ask("other")).await.unwrap().text, "?");
        assert_eq!(llm.call_count(), 5);
        assert_eq!(llm.hits(&["critic"]), 3);
    }

    #[tokio::test]
    async fn unmatched_prompt_without_fallback_is_an_error() {
        let llm = ScriptedLlm::new().on(&["a"], "b");
        assert!(llm.chat(&ChatRequest::user("zzz")).await.is_err());
    }
}
