//! Chat models and rerankers: the request and completion records and the traits every
//! backend (embedded llama.cpp, OpenAI-compatible HTTP, the call cache, the scripted fake)
//! implements.

use crate::traits::BoxFuture;
use crate::{Error, Result};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::future::Future;
use std::sync::Arc;

/// Who wrote a chat message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Instructions that frame the conversation.
    System,
    /// The user's turn.
    User,
    /// The model's turn.
    Assistant,
}

impl Role {
    /// The name chat templates and the OpenAI wire format use.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

/// One chat message.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Message {
    /// Author.
    pub role: Role,
    /// Text.
    pub content: String,
}

impl Message {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Message {
            role: Role::System,
            content: content.into(),
        }
    }
    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Message {
            role: Role::User,
            content: content.into(),
        }
    }
    /// An assistant message.
    pub fn assistant(content: impl Into<String>) -> Self {
        Message {
            role: Role::Assistant,
            content: content.into(),
        }
    }
}

/// Sampling parameters. The defaults are deterministic (greedy) because metarag's calls
/// are judged and cached: the same request should give the same answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct GenParams {
    /// 0 means greedy decoding.
    pub temperature: f32,
    /// Nucleus sampling mass (1.0 disables it).
    pub top_p: f32,
    /// Most tokens to generate.
    pub max_tokens: u32,
    /// Generation stops before the first occurrence of any of these.
    pub stop: Vec<String>,
    /// Seed of the sampler (ignored when greedy). Sample `i` of `n` uses `seed + i`.
    pub seed: u64,
    /// Return the log-probability of every generated token (see
    /// [`Capabilities::logprobs`]; a backend without them returns none).
    #[serde(skip_serializing_if = "is_false")]
    pub logprobs: bool,
    /// Independent samples to draw from the same prompt (1 unless set). Backends that
    /// cannot draw several in one call are driven once per sample by the caller.
    #[serde(skip_serializing_if = "is_one")]
    pub n: u32,
}

// The two helpers keep new fields out of serialized requests at their defaults, so call
// cache keys written before the fields existed stay valid.
fn is_false(b: &bool) -> bool {
    !*b
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

/// The most samples one request may ask for.
pub const MAX_SAMPLES: u32 = 16;

impl Default for GenParams {
    fn default() -> Self {
        GenParams {
            temperature: 0.0,
            top_p: 1.0,
            max_tokens: 512,
            stop: Vec::new(),
            seed: 0,
            logprobs: false,
            n: 1,
        }
    }
}

impl GenParams {
    /// Checks the ranges, naming the field at fault.
    pub fn validate(&self) -> Result<()> {
        if !(0.0..=2.0).contains(&self.temperature) {
            return Err(Error::invalid("temperature", "must be within 0..=2"));
        }
        if !(self.top_p > 0.0 && self.top_p <= 1.0) {
            return Err(Error::invalid("top_p", "must be within (0, 1]"));
        }
        if self.max_tokens == 0 {
            return Err(Error::invalid("max_tokens", "must be at least 1"));
        }
        if self.stop.iter().any(String::is_empty) {
            return Err(Error::invalid("stop", "stop strings must not be empty"));
        }
        if !(1..=MAX_SAMPLES).contains(&self.n) {
            return Err(Error::invalid(
                "n",
                format!("must be within 1..={MAX_SAMPLES}"),
            ));
        }
        Ok(())
    }
}

/// A JSON schema the completion must satisfy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OutputSchema {
    /// A short name (OpenAI's `json_schema.name`).
    pub name: String,
    /// The JSON schema document.
    pub schema: serde_json::Value,
}

impl OutputSchema {
    /// The schema of `T`, derived with schemars.
    pub fn of<T: schemars::JsonSchema>() -> Self {
        let schema = schemars::schema_for!(T);
        let name: String = T::schema_name()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        OutputSchema {
            name,
            schema: schema.to_value(),
        }
    }
}

/// One chat call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ChatRequest {
    /// The conversation so far; the model writes the next assistant turn.
    pub messages: Vec<Message>,
    /// Sampling parameters.
    #[serde(default)]
    pub params: GenParams,
    /// When set, the completion must be JSON matching this schema.
    #[serde(default)]
    pub schema: Option<OutputSchema>,
    /// The prompt's start is shared by many requests to come (a planner's instructions
    /// and examples, with only the question after them): a backend that keeps evaluated
    /// prompts may keep this one's start for them. A hint that never changes the result,
    /// so it is not serialized (a call cache's key stays that of the same request without
    /// it).
    #[serde(skip)]
    pub keep_prefix: bool,
    /// The collections the request's sources may come from (empty: every one, or no
    /// sources). Not for the model (no backend sends it): it is part of what a call cache
    /// keys on, so that a completion made over one collection's passages is never served
    /// to a request held to other collections. Left out when empty, so keys written before
    /// it existed stay valid.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub collections: Vec<crate::CollectionId>,
}

impl ChatRequest {
    /// A request with default parameters.
    pub fn new(messages: Vec<Message>) -> Self {
        ChatRequest {
            messages,
            params: GenParams::default(),
            schema: None,
            keep_prefix: false,
            collections: Vec::new(),
        }
    }

    /// A single user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self::new(vec![Message::user(content)])
    }

    /// Marks the prompt's start as shared by many requests to come (see
    /// [`ChatRequest::keep_prefix`]).
    pub fn keeping_prefix(mut self) -> Self {
        self.keep_prefix = true;
        self
    }

    /// Sets the most tokens to generate.
    pub fn max_tokens(mut self, n: u32) -> Self {
        self.params.max_tokens = n;
        self
    }

    /// Sets the temperature.
    pub fn temperature(mut self, t: f32) -> Self {
        self.params.temperature = t;
        self
    }

    /// Adds a stop string.
    pub fn stop(mut self, s: impl Into<String>) -> Self {
        self.params.stop.push(s.into());
        self
    }

    /// Asks for the log-probability of every generated token.
    pub fn logprobs(mut self) -> Self {
        self.params.logprobs = true;
        self
    }

    /// Asks for `n` independent samples at `temperature` (seeds `seed`, `seed + 1`, ...).
    pub fn samples(mut self, n: u32, temperature: f32, seed: u64) -> Self {
        self.params.n = n;
        self.params.temperature = temperature;
        self.params.seed = seed;
        self
    }

    /// Requires JSON output matching the schema of `T`.
    pub fn json_schema<T: schemars::JsonSchema>(mut self) -> Self {
        self.schema = Some(OutputSchema::of::<T>());
        self
    }

    /// Checks the request, naming the field at fault.
    pub fn validate(&self) -> Result<()> {
        if self.messages.is_empty() {
            return Err(Error::invalid("messages", "at least one message is needed"));
        }
        self.params.validate()
    }
}

/// Why generation stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// The model ended its turn or hit a stop string.
    Stop,
    /// `max_tokens` was reached.
    Length,
}

/// Tokens and time one call cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct Usage {
    /// Tokens of the prompt, including any the backend did not have to evaluate.
    pub prompt_tokens: u64,
    /// Of those, tokens served from a kept KV cache (prefix reuse) instead of evaluated.
    pub cached_prompt_tokens: u64,
    /// Tokens generated.
    pub completion_tokens: u64,
    /// Wall time of the call in milliseconds, as the caller saw it.
    pub wall_ms: f64,
    /// Time spent evaluating the prompt, where the backend reports it.
    pub prompt_ms: Option<f64>,
    /// Time spent generating, where the backend reports it.
    pub generation_ms: Option<f64>,
    /// For a completion replayed from the call cache: what the call took when the model
    /// produced it ([`Usage::compute_ms`] of the original), so a replayed run can still
    /// report how long its questions take.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub original_ms: Option<f64>,
}

impl Usage {
    /// The model's own time for the call: prompt plus generation time where the backend
    /// reports both (a local worker's queue wait left out), else the wall time.
    pub fn compute_ms(&self) -> f64 {
        match (self.prompt_ms, self.generation_ms) {
            (Some(p), Some(g)) => p + g,
            _ => self.wall_ms,
        }
    }
}

/// One generated token with its log-probability under the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TokenLogprob {
    /// The token's text (a piece of a word, possibly empty for partial UTF-8).
    pub token: String,
    /// Natural log of the model's probability of this token at its position, over the
    /// whole vocabulary before any grammar or sampling filter.
    pub logprob: f32,
}

/// Summaries of a sequence of token log-probabilities: the signals a monitor reads.
pub fn logprob_summary(tokens: &[TokenLogprob]) -> Option<LogprobSummary> {
    if tokens.is_empty() {
        return None;
    }
    let sum: f64 = tokens.iter().map(|t| f64::from(t.logprob)).sum();
    let min = tokens
        .iter()
        .map(|t| t.logprob)
        .fold(f32::INFINITY, f32::min);
    Some(LogprobSummary {
        mean: sum / tokens.len() as f64,
        min: f64::from(min),
        tokens: tokens.len(),
    })
}

/// Mean and minimum log-probability of some tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LogprobSummary {
    /// Mean log-probability per token.
    pub mean: f64,
    /// The least likely token's log-probability.
    pub min: f64,
    /// How many tokens.
    pub tokens: usize,
}

/// A further sample of a call that asked for `n > 1`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Sample {
    /// The sample's text.
    pub text: String,
    /// Why it stopped.
    pub finish: FinishReason,
    /// Its tokens' log-probabilities, when asked for and available.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<Vec<TokenLogprob>>,
}

/// A finished chat call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Completion {
    /// The assistant's text (JSON when a schema was given); the first sample.
    pub text: String,
    /// Why it stopped.
    pub finish: FinishReason,
    /// What it cost (all samples together).
    pub usage: Usage,
    /// The model that produced it.
    pub model: String,
    /// True when the call cache served it without calling the model.
    #[serde(default)]
    pub cached: bool,
    /// Log-probabilities of the first sample's tokens, when the request asked for them
    /// and the backend has them ([`Capabilities::logprobs`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<Vec<TokenLogprob>>,
    /// Samples 2..=n of a request that asked for several; empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<Sample>,
}

impl Completion {
    /// A completion of one sample without log-probabilities.
    pub fn new(text: impl Into<String>, finish: FinishReason, usage: Usage, model: &str) -> Self {
        Completion {
            text: text.into(),
            finish,
            usage,
            model: model.to_string(),
            cached: false,
            logprobs: None,
            samples: Vec::new(),
        }
    }

    /// The texts of every sample, the first included.
    pub fn texts(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.text.as_str()).chain(self.samples.iter().map(|s| s.text.as_str()))
    }
}

/// What a chat backend can do beyond plain text. Strategies that need a capability
/// degrade when it is missing (documented per strategy), rather than fail.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct Capabilities {
    /// Returns per-token log-probabilities ([`GenParams::logprobs`]).
    pub logprobs: bool,
    /// Draws `n > 1` samples in one call ([`GenParams::n`]); without it the caller makes
    /// `n` calls with seeds `seed + i`.
    pub samples: bool,
    /// Constrains the output to a JSON schema ([`ChatRequest::schema`]); without it the
    /// schema is only a hint in the prompt and replies may not parse.
    pub json_schema: bool,
}

/// Receives generated text as it is produced.
pub type TokenSink<'a> = &'a (dyn Fn(&str) + Send + Sync);

/// A chat model.
pub trait Llm: Send + Sync {
    /// A stable name of the model (part of the call-cache key and of every trace).
    fn model_id(&self) -> &str;

    /// What the backend can do beyond plain text; nothing, unless it says so.
    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }

    /// Runs one chat call to completion.
    fn chat(&self, request: &ChatRequest) -> impl Future<Output = Result<Completion>> + Send;

    /// Runs one chat call, handing text to `sink` as it is generated. Backends that can't
    /// stream hand over the whole text at the end.
    fn chat_stream(
        &self,
        request: &ChatRequest,
        sink: TokenSink<'_>,
    ) -> impl Future<Output = Result<Completion>> + Send {
        async move {
            let completion = self.chat(request).await?;
            sink(&completion.text);
            Ok(completion)
        }
    }

    /// Drops what the backend keeps from earlier calls only to answer later ones faster (a
    /// local model's KV cache of the last prompt), so that the next call's time does not
    /// depend on what ran before it. The benchmark runner calls it before each strategy
    /// answers a question: otherwise the second strategy finds the sources the first one
    /// evaluated and is timed as if it had read them for free. Answers stay the same up to
    /// the order llama.cpp accumulates in, which a different batch split can change.
    /// A prefix a request marked as shared by every request to come
    /// ([`ChatRequest::keep_prefix`]: instructions that hold no question's content) may
    /// stay, as it stays in a long-running server. Backends that keep nothing of the kind
    /// do nothing.
    fn forget_context(&self) -> impl Future<Output = ()> + Send {
        async {}
    }
}

impl<T: Llm + ?Sized> Llm for Arc<T> {
    fn model_id(&self) -> &str {
        (**self).model_id()
    }
    fn capabilities(&self) -> Capabilities {
        (**self).capabilities()
    }
    fn chat(&self, request: &ChatRequest) -> impl Future<Output = Result<Completion>> + Send {
        (**self).chat(request)
    }
    fn chat_stream(
        &self,
        request: &ChatRequest,
        sink: TokenSink<'_>,
    ) -> impl Future<Output = Result<Completion>> + Send {
        (**self).chat_stream(request, sink)
    }
    fn forget_context(&self) -> impl Future<Output = ()> + Send {
        (**self).forget_context()
    }
}

/// Object-safe twin of [`Llm`], for backends chosen from configuration at run time.
/// `Arc<dyn DynLlm>` implements [`Llm`] again.
pub trait DynLlm: Send + Sync {
    /// See [`Llm::model_id`].
    fn model_id(&self) -> &str;
    /// See [`Llm::capabilities`].
    fn capabilities_dyn(&self) -> Capabilities;
    /// See [`Llm::chat`].
    fn chat_dyn<'a>(&'a self, request: &'a ChatRequest) -> BoxFuture<'a, Result<Completion>>;
    /// See [`Llm::chat_stream`].
    fn chat_stream_dyn<'a>(
        &'a self,
        request: &'a ChatRequest,
        sink: TokenSink<'a>,
    ) -> BoxFuture<'a, Result<Completion>>;
    /// See [`Llm::forget_context`].
    fn forget_context_dyn(&self) -> BoxFuture<'_, ()>;
}

impl<T: Llm> DynLlm for T {
    fn model_id(&self) -> &str {
        Llm::model_id(self)
    }
    fn capabilities_dyn(&self) -> Capabilities {
        Llm::capabilities(self)
    }
    fn chat_dyn<'a>(&'a self, request: &'a ChatRequest) -> BoxFuture<'a, Result<Completion>> {
        Box::pin(self.chat(request))
    }
    fn chat_stream_dyn<'a>(
        &'a self,
        request: &'a ChatRequest,
        sink: TokenSink<'a>,
    ) -> BoxFuture<'a, Result<Completion>> {
        Box::pin(self.chat_stream(request, sink))
    }
    fn forget_context_dyn(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.forget_context())
    }
}

impl Llm for dyn DynLlm {
    fn model_id(&self) -> &str {
        DynLlm::model_id(self)
    }
    fn capabilities(&self) -> Capabilities {
        self.capabilities_dyn()
    }
    async fn chat(&self, request: &ChatRequest) -> Result<Completion> {
        self.chat_dyn(request).await
    }
    async fn chat_stream(&self, request: &ChatRequest, sink: TokenSink<'_>) -> Result<Completion> {
        self.chat_stream_dyn(request, sink).await
    }
    async fn forget_context(&self) {
        self.forget_context_dyn().await
    }
}

/// A completion whose text was parsed into `T`.
#[derive(Debug, Clone)]
pub struct Structured<T> {
    /// The parsed value.
    pub value: T,
    /// The raw completion (text, usage).
    pub completion: Completion,
}

/// Runs a chat call that must answer with JSON matching the schema of `T`, and parses it.
///
/// The schema is attached to the request (backends constrain decoding with it: a grammar
/// for llama.cpp, `response_format` for OpenAI-compatible servers). A reply that still
/// does not parse is [`Error::InvalidOutput`], which callers are expected to fall back from.
pub async fn chat_json<T, L>(llm: &L, request: ChatRequest) -> Result<Structured<T>>
where
    T: schemars::JsonSchema + DeserializeOwned,
    L: Llm + ?Sized,
{
    let request = ChatRequest {
        schema: Some(OutputSchema::of::<T>()),
        ..request
    };
    let completion = llm.chat(&request).await?;
    let value = parse_json(&completion.text)?;
    Ok(Structured { value, completion })
}

/// Parses a model's JSON reply, tolerating the wrappers models add when they were not
/// constrained (a ```json fence, text before the first brace).
pub fn parse_json<T: DeserializeOwned>(text: &str) -> Result<T> {
    let trimmed = text.trim();
    let direct = serde_json::from_str::<T>(trimmed);
    let err = match direct {
        Ok(v) => return Ok(v),
        Err(e) => e,
    };
    if let Some(candidate) = json_span(trimmed)
        && let Ok(v) = serde_json::from_str::<T>(candidate)
    {
        return Ok(v);
    }
    Err(Error::InvalidOutput {
        reason: err.to_string(),
        raw: text.to_string(),
    })
}

/// The outermost `{...}` or `[...]` in `text`, if any.
fn json_span(text: &str) -> Option<&str> {
    let start = text.find(['{', '['])?;
    let close = if text[start..].starts_with('{') {
        '}'
    } else {
        ']'
    };
    let end = text.rfind(close)?;
    (end > start).then(|| &text[start..=end])
}

/// Scores passages for their use in answering a query (higher is more useful).
pub trait Reranker: Send + Sync {
    /// A stable name of the model.
    fn model_id(&self) -> &str;
    /// One score per passage, in the order given.
    fn score(
        &self,
        query: &str,
        passages: &[String],
    ) -> impl Future<Output = Result<Vec<f32>>> + Send;
}

impl<T: Reranker + ?Sized> Reranker for Arc<T> {
    fn model_id(&self) -> &str {
        (**self).model_id()
    }
    fn score(
        &self,
        query: &str,
        passages: &[String],
    ) -> impl Future<Output = Result<Vec<f32>>> + Send {
        (**self).score(query, passages)
    }
}

/// Object-safe twin of [`Reranker`].
pub trait DynReranker: Send + Sync {
    /// See [`Reranker::model_id`].
    fn model_id(&self) -> &str;
    /// See [`Reranker::score`].
    fn score_dyn<'a>(
        &'a self,
        query: &'a str,
        passages: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<f32>>>;
}

impl<T: Reranker> DynReranker for T {
    fn model_id(&self) -> &str {
        Reranker::model_id(self)
    }
    fn score_dyn<'a>(
        &'a self,
        query: &'a str,
        passages: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<f32>>> {
        Box::pin(self.score(query, passages))
    }
}

impl Reranker for dyn DynReranker {
    fn model_id(&self) -> &str {
        DynReranker::model_id(self)
    }
    async fn score(&self, query: &str, passages: &[String]) -> Result<Vec<f32>> {
        self.score_dyn(query, passages).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, Deserialize, schemars::JsonSchema)]
    struct Verdict {
        answer: String,
        confident: bool,
    }

    #[test]
    fn compute_time_leaves_out_queueing_where_the_backend_reports_it() {
        let mut u = Usage {
            wall_ms: 900.0,
            ..Usage::default()
        };
        assert_eq!(u.compute_ms(), 900.0);
        u.prompt_ms = Some(300.0);
        u.generation_ms = Some(200.0);
        assert_eq!(u.compute_ms(), 500.0);
    }

    #[test]
    fn parses_fenced_and_prefixed_json() {
        let v: Verdict =
            parse_json("Sure!\n```json\n{\"answer\": \"Paris\", \"confident\": true}\n```")
                .unwrap();
        assert_eq!(v.answer, "Paris");
        assert!(v.confident);
    }

    #[test]
    fn invalid_json_is_a_typed_error_with_the_raw_text() {
        let err = parse_json::<Verdict>("{\"answer\": \"Paris\"").unwrap_err();
        match err {
            Error::InvalidOutput { raw, .. } => assert_eq!(raw, "{\"answer\": \"Paris\""),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn schema_names_are_wire_safe_and_describe_fields() {
        let s = OutputSchema::of::<Vec<Verdict>>();
        assert!(
            s.name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
        );
        let text = s.schema.to_string();
        assert!(text.contains("confident"), "{text}");
    }

    #[test]
    fn new_params_at_their_defaults_leave_the_serialized_request_unchanged() {
        // The call cache keys requests by their JSON: old keys must stay valid.
        let json = serde_json::to_string(&ChatRequest::user("hi")).unwrap();
        assert!(
            !json.contains("logprobs") && !json.contains("\"n\""),
            "{json}"
        );
        let json =
            serde_json::to_string(&ChatRequest::user("hi").logprobs().samples(3, 0.7, 1)).unwrap();
        assert!(
            json.contains("\"logprobs\":true") && json.contains("\"n\":3"),
            "{json}"
        );
        let old = r#"{"messages":[{"role":"user","content":"hi"}],"params":{"temperature":0.0,"top_p":1.0,"max_tokens":5,"stop":[],"seed":0}}"#;
        let back: ChatRequest = serde_json::from_str(old).unwrap();
        assert_eq!(back.params.n, 1);
        assert!(!back.params.logprobs);
    }

    #[test]
    fn logprob_summaries_give_mean_and_minimum() {
        let t = |p: f32| TokenLogprob {
            token: "x".into(),
            logprob: p,
        };
        let s = logprob_summary(&[t(-0.1), t(-2.0), t(-0.3)]).unwrap();
        assert!((s.mean - (-0.8)).abs() < 1e-6);
        assert!((s.min - (-2.0)).abs() < 1e-6);
        assert_eq!(s.tokens, 3);
        assert!(logprob_summary(&[]).is_none());
    }

    #[test]
    fn params_are_validated_by_field() {
        assert!(
            ChatRequest::user("hi")
                .samples(0, 0.7, 0)
                .validate()
                .unwrap_err()
                .to_string()
                .contains("invalid n")
        );
        let bad = ChatRequest::user("hi").temperature(3.0);
        assert!(
            bad.validate()
                .unwrap_err()
                .to_string()
                .contains("temperature")
        );
        assert!(ChatRequest::new(vec![]).validate().is_err());
        assert!(ChatRequest::user("hi").validate().is_ok());
    }
}
