//! Accounting: LLM calls, tokens, cache hits, wall time and cost per model, for one run.

use metarag_core::{ChatRequest, Completion, Llm, TokenSink};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Price of a model's tokens, in US dollars per million tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Pricing {
    /// Per million prompt tokens evaluated (cached prompt tokens included: most APIs
    /// discount them, but not all report them, so this errs on the high side).
    pub prompt_per_million: f64,
    /// Per million completion tokens.
    pub completion_per_million: f64,
}

impl Pricing {
    /// The cost of these tokens, US dollars.
    pub fn cost(&self, prompt_tokens: u64, completion_tokens: u64) -> f64 {
        (prompt_tokens as f64 * self.prompt_per_million
            + completion_tokens as f64 * self.completion_per_million)
            / 1e6
    }
}

/// What one model cost during a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelUsage {
    /// Calls made (cache hits included).
    pub calls: u64,
    /// Calls served by the call cache.
    pub cache_hits: u64,
    /// Calls that failed.
    pub errors: u64,
    /// Prompt tokens of the calls that reached the model.
    pub prompt_tokens: u64,
    /// Of those, tokens served from a kept KV cache.
    pub cached_prompt_tokens: u64,
    /// Completion tokens generated.
    pub completion_tokens: u64,
    /// Wall time spent in calls, milliseconds.
    pub wall_ms: f64,
    /// Cost in US dollars, from the configured [`Pricing`].
    pub cost_usd: f64,
}

/// The ledger of a run: shared by every [`MeteredLlm`] of that run.
#[derive(Debug, Default)]
pub struct Ledger {
    pricing: BTreeMap<String, Pricing>,
    usage: Mutex<BTreeMap<String, ModelUsage>>,
}

impl Ledger {
    /// An empty ledger with prices per model id (models without a price cost 0).
    pub fn new(pricing: BTreeMap<String, Pricing>) -> Self {
        Ledger {
            pricing,
            usage: Mutex::default(),
        }
    }

    /// Records one call.
    pub fn record(&self, model: &str, outcome: std::result::Result<&Completion, ()>, wall_ms: f64) {
        let price = self.pricing.get(model).copied().unwrap_or_default();
        let mut usage = self.usage.lock().expect("ledger lock");
        let u = usage.entry(model.to_string()).or_default();
        u.calls += 1;
        u.wall_ms += wall_ms;
        match outcome {
            Err(()) => u.errors += 1,
            Ok(c) if c.cached => u.cache_hits += 1,
            Ok(c) => {
                u.prompt_tokens += c.usage.prompt_tokens;
                u.cached_prompt_tokens += c.usage.cached_prompt_tokens;
                u.completion_tokens += c.usage.completion_tokens;
                u.cost_usd += (c.usage.prompt_tokens as f64 * price.prompt_per_million
                    + c.usage.completion_tokens as f64 * price.completion_per_million)
                    / 1e6;
            }
        }
    }

    /// Usage so far, by model id.
    pub fn snapshot(&self) -> BTreeMap<String, ModelUsage> {
        self.usage.lock().expect("ledger lock").clone()
    }

    /// Totals over all models.
    pub fn total(&self) -> ModelUsage {
        let usage = self.usage.lock().expect("ledger lock");
        usage.values().fold(ModelUsage::default(), |mut t, u| {
            t.calls += u.calls;
            t.cache_hits += u.cache_hits;
            t.errors += u.errors;
            t.prompt_tokens += u.prompt_tokens;
            t.cached_prompt_tokens += u.cached_prompt_tokens;
            t.completion_tokens += u.completion_tokens;
            t.wall_ms += u.wall_ms;
            t.cost_usd += u.cost_usd;
            t
        })
    }
}

/// An [`Llm`] that records every call in a [`Ledger`]. Put it outermost (around the call
/// cache) so that cache hits are counted as such.
#[derive(Debug, Clone)]
pub struct MeteredLlm<L> {
    inner: L,
    ledger: Arc<Ledger>,
}

impl<L: Llm> MeteredLlm<L> {
    /// Wraps `inner`.
    pub fn new(inner: L, ledger: Arc<Ledger>) -> Self {
        MeteredLlm { inner, ledger }
    }

    /// The ledger calls are recorded in.
    pub fn ledger(&self) -> &Arc<Ledger> {
        &self.ledger
    }

    fn record(&self, result: &metarag_core::Result<Completion>, started: Instant) {
        let ms = started.elapsed().as_secs_f64() * 1e3;
        self.ledger
            .record(self.inner.model_id(), result.as_ref().map_err(|_| ()), ms);
    }
}

impl<L: Llm> Llm for MeteredLlm<L> {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }

    fn capabilities(&self) -> metarag_core::Capabilities {
        self.inner.capabilities()
    }

    async fn chat(&self, request: &ChatRequest) -> metarag_core::Result<Completion> {
        let started = Instant::now();
        let result = self.inner.chat(request).await;
        self.record(&result, started);
        result
    }

    async fn chat_stream(
        &self,
        request: &ChatRequest,
        sink: TokenSink<'_>,
    ) -> metarag_core::Result<Completion> {
        let started = Instant::now();
        let result = self.inner.chat_stream(request, sink).await;
        self.record(&result, started);
        result
    }

    fn forget_context(&self) -> impl std::future::Future<Output = ()> + Send {
        self.inner.forget_context()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use metarag_core::{FinishReason, Usage};

    fn completion(prompt: u64, completion: u64, cached: bool) -> Completion {
        Completion {
            logprobs: None,
            samples: Vec::new(),
            text: "x".into(),
            finish: FinishReason::Stop,
            usage: Usage {
                prompt_tokens: prompt,
                completion_tokens: completion,
                ..Usage::default()
            },
            model: "m".into(),
            cached,
        }
    }

    #[test]
    fn cost_counts_only_calls_that_reached_the_model() {
        let ledger = Ledger::new(
            [(
                "m".to_string(),
                Pricing {
                    prompt_per_million: 0.27,
                    completion_per_million: 1.10,
                },
            )]
            .into(),
        );
        ledger.record("m", Ok(&completion(1_000_000, 500_000, false)), 10.0);
        ledger.record("m", Ok(&completion(1_000_000, 500_000, true)), 1.0);
        ledger.record("m", Err(()), 5.0);
        let u = &ledger.snapshot()["m"];
        assert_eq!((u.calls, u.cache_hits, u.errors), (3, 1, 1));
        assert_eq!(u.prompt_tokens, 1_000_000);
        assert!((u.cost_usd - (0.27 + 0.55)).abs() < 1e-9);
        assert_eq!(ledger.total().wall_ms, 16.0);
    }
}
