//! A client for any OpenAI-compatible `/v1/chat/completions` endpoint: DeepSeek, OpenAI,
//! vLLM, Ollama, llama.cpp's server, or `metarag serve-llm`.
//!
//! Structured output is sent as `response_format: json_schema`; a server that rejects it
//! (HTTP 400 naming `response_format`) is remembered and asked again with the schema in
//! the prompt instead, and the reply is parsed leniently by [`metarag_core::chat_json`].
//! Transient failures (connection errors, timeouts, 429, 5xx) are retried with
//! exponential backoff, honouring `Retry-After`; other 4xx fail at once with the server's
//! message. Wire types stay private to this module.

use crate::{Error, Result};
use metarag_core::{
    Capabilities, ChatRequest, Completion, FinishReason, Llm, Message, Role, Sample, TokenLogprob,
    TokenSink, Usage,
};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Settings of an OpenAI-compatible backend.
#[derive(Clone, PartialEq)]
pub struct OpenAiConfig {
    /// Base URL up to and including `/v1` (e.g. `https://api.deepseek.com/v1`).
    pub base_url: String,
    /// Bearer token, if the server wants one.
    pub api_key: Option<String>,
    /// The model name the server knows.
    pub model: String,
    /// Time limit of one HTTP attempt, from connecting to the reply's last byte (a streamed
    /// reply included: a generation longer than this is cut off and retried).
    pub timeout: Duration,
    /// Retries after the first attempt for transient failures.
    pub max_retries: u32,
    /// Delay before the first retry; doubled for each further one (capped at 30 s).
    pub backoff: Duration,
}

impl std::fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("model", &self.model)
            .field("timeout", &self.timeout)
            .field("max_retries", &self.max_retries)
            .finish()
    }
}

impl OpenAiConfig {
    /// Defaults: 120 s per attempt, 4 retries starting at 500 ms.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        OpenAiConfig {
            base_url: base_url.into(),
            api_key: None,
            model: model.into(),
            timeout: Duration::from_secs(120),
            max_retries: 4,
            backoff: Duration::from_millis(500),
        }
    }

    /// Sets the API key.
    pub fn api_key(mut self, key: Option<String>) -> Self {
        self.api_key = key;
        self
    }
}

/// An OpenAI-compatible chat backend.
#[derive(Debug)]
pub struct OpenAiLlm {
    config: OpenAiConfig,
    model_id: String,
    http: reqwest::Client,
    endpoint: String,
    /// Set once the server has rejected `response_format: json_schema`.
    no_json_schema: AtomicBool,
    retries: AtomicU64,
}

impl OpenAiLlm {
    /// A client for the configured server (no request is made until the first call).
    pub fn new(config: OpenAiConfig) -> Result<Self> {
        let base = config.base_url.trim_end_matches('/').to_string();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(Error::Request(format!(
                "llm.base_url `{}` must start with http:// or https://",
                config.base_url
            )));
        }
        if config.model.trim().is_empty() {
            return Err(Error::Request(
                "llm.model must name the server's model".into(),
            ));
        }
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| Error::Http(format!("building the HTTP client: {e}")))?;
        Ok(OpenAiLlm {
            model_id: format!("openai:{}", config.model),
            endpoint: format!("{base}/chat/completions"),
            config,
            http,
            no_json_schema: AtomicBool::new(false),
            retries: AtomicU64::new(0),
        })
    }

    /// Retries made so far (transient failures that were tried again).
    pub fn retries(&self) -> u64 {
        self.retries.load(Ordering::Relaxed)
    }

    fn body(&self, request: &ChatRequest, stream: bool, json_schema: bool) -> WireRequest {
        let mut messages: Vec<WireMessage> = request
            .messages
            .iter()
            .map(|m| WireMessage {
                role: m.role.as_str().to_string(),
                content: m.content.clone(),
            })
            .collect();
        let mut response_format = None;
        if let Some(schema) = &request.schema {
            if json_schema {
                response_format = Some(serde_json::json!({
                    "type": "json_schema",
                    "json_schema": { "name": schema.name, "schema": schema.schema, "strict": false }
                }));
            } else {
                // Prompt-and-parse fallback for servers without structured output.
                let instruction = format!(
                    "Reply with a single JSON value and nothing else. It must match this JSON schema:\n{}",
                    schema.schema
                );
                match messages
                    .iter_mut()
                    .find(|m| m.role == Role::System.as_str())
                {
                    Some(system) => {
                        system.content.push_str("\n\n");
                        system.content.push_str(&instruction);
                    }
                    None => messages.insert(0, WireMessage::from(&Message::system(instruction))),
                }
            }
        }
        let p = &request.params;
        WireRequest {
            model: self.config.model.clone(),
            messages,
            temperature: p.temperature,
            top_p: p.top_p,
            max_tokens: p.max_tokens,
            stop: (!p.stop.is_empty()).then(|| p.stop.clone()),
            seed: p.seed,
            // Several samples come back as choices; a stream carries one.
            n: (p.n > 1 && !stream).then_some(p.n),
            logprobs: p.logprobs.then_some(true),
            stream,
            stream_options: stream.then_some(StreamOptions {
                include_usage: true,
            }),
            response_format,
        }
    }

    /// Sends the request, retrying transient failures; returns the successful response.
    async fn send(&self, body: &WireRequest) -> Result<reqwest::Response> {
        let mut attempt = 0u32;
        loop {
            let mut req = self
                .http
                .post(&self.endpoint)
                .timeout(self.config.timeout)
                .json(body);
            if let Some(key) = &self.config.api_key {
                req = req.bearer_auth(key);
            }
            let outcome = req.send().await;
            let retry_after = match outcome {
                Ok(resp) if resp.status().is_success() => return Ok(resp),
                Ok(resp) => {
                    let status = resp.status();
                    let retry_after = resp
                        .headers()
                        .get(reqwest::header::RETRY_AFTER)
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.trim().parse::<f64>().ok())
                        .map(|s| Duration::from_secs_f64(s.clamp(0.0, 60.0)));
                    let text = resp.text().await.unwrap_or_default();
                    let transient = status.as_u16() == 429 || status.is_server_error();
                    if !transient || attempt >= self.config.max_retries {
                        return Err(Error::Api {
                            url: self.endpoint.clone(),
                            status: status.as_u16(),
                            message: server_message(&text),
                        });
                    }
                    tracing::warn!(
                        status = status.as_u16(),
                        attempt,
                        "LLM server busy or failing; retrying"
                    );
                    retry_after
                }
                Err(e) => {
                    let transient = e.is_timeout() || e.is_connect() || e.is_request();
                    if !transient || attempt >= self.config.max_retries {
                        return Err(Error::Http(format!("{}: {e}", self.endpoint)));
                    }
                    tracing::warn!(error = %e, attempt, "LLM request failed; retrying");
                    None
                }
            };
            let backoff = self
                .config
                .backoff
                .saturating_mul(1 << attempt.min(16))
                .min(Duration::from_secs(30));
            tokio::time::sleep(retry_after.unwrap_or(backoff)).await;
            attempt += 1;
            self.retries.fetch_add(1, Ordering::Relaxed);
        }
    }

    async fn call(&self, request: &ChatRequest, sink: Option<TokenSink<'_>>) -> Result<Completion> {
        request
            .validate()
            .map_err(|e| Error::Request(e.to_string()))?;
        let started = Instant::now();
        let wants_schema = request.schema.is_some() && !self.no_json_schema.load(Ordering::Relaxed);
        let body = self.body(request, sink.is_some(), wants_schema);
        let response = match self.send(&body).await {
            Err(Error::Api {
                status: 400,
                ref message,
                ..
            }) if wants_schema && mentions_response_format(message) => {
                tracing::info!(
                    "server rejects response_format json_schema; falling back to prompt-and-parse"
                );
                self.no_json_schema.store(true, Ordering::Relaxed);
                self.send(&self.body(request, sink.is_some(), false))
                    .await?
            }
            other => other?,
        };
        let mut completion = match sink {
            None => {
                let bytes = response.bytes().await.map_err(|e| {
                    Error::Http(format!("{}: reading the reply: {e}", self.endpoint))
                })?;
                let wire: WireResponse = serde_json::from_slice(&bytes).map_err(|e| {
                    Error::Http(format!(
                        "{}: the reply is not a chat completion ({e}): {}",
                        self.endpoint,
                        String::from_utf8_lossy(&bytes[..bytes.len().min(300)])
                    ))
                })?;
                let mut choices = wire.choices.into_iter();
                let mut choice = choices.next().ok_or_else(|| {
                    Error::Http(format!("{}: the reply has no choices", self.endpoint))
                })?;
                let mut completion = Completion::new(
                    choice.message.content.take().unwrap_or_default(),
                    finish_reason(choice.finish_reason.as_deref()),
                    wire.usage.map(Usage::from).unwrap_or_default(),
                    &self.model_id,
                );
                completion.logprobs = choice.logprobs();
                // A server that ignores `n` sends one choice: the caller sees fewer
                // samples than asked and draws the rest itself.
                completion.samples = choices
                    .map(|mut c| Sample {
                        logprobs: c.logprobs(),
                        finish: finish_reason(c.finish_reason.as_deref()),
                        text: c.message.content.unwrap_or_default(),
                    })
                    .collect();
                completion
            }
            Some(sink) => self.read_stream(response, sink).await?,
        };
        completion.usage.wall_ms = started.elapsed().as_secs_f64() * 1e3;
        Ok(completion)
    }

    async fn read_stream(
        &self,
        mut response: reqwest::Response,
        sink: TokenSink<'_>,
    ) -> Result<Completion> {
        let mut text = String::new();
        let mut finish = FinishReason::Stop;
        // A stream is whole when it says so: `[DONE]` or a finish reason. A connection that
        // closes before either has cut the answer short, and that is an error, not a
        // shorter answer.
        let mut ended = false;
        let mut usage = Usage::default();
        let mut pending: Vec<u8> = Vec::new();
        let read_err =
            |e: reqwest::Error| Error::Http(format!("{}: reading the stream: {e}", self.endpoint));
        'outer: while let Some(chunk) = response.chunk().await.map_err(read_err)? {
            pending.extend_from_slice(&chunk);
            while let Some(end) = pending.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = pending.drain(..=end).collect();
                let line = String::from_utf8_lossy(&line);
                let line = line.trim();
                let Some(data) = line.strip_prefix("data:") else {
                    continue;
                };
                let data = data.trim();
                if data == "[DONE]" {
                    ended = true;
                    break 'outer;
                }
                let event: WireChunk = serde_json::from_str(data).map_err(|e| {
                    Error::Http(format!("{}: bad stream event ({e}): {data}", self.endpoint))
                })?;
                if let Some(u) = event.usage {
                    usage = Usage::from(u);
                }
                for choice in event.choices {
                    if let Some(piece) = choice.delta.content
                        && !piece.is_empty()
                    {
                        sink(&piece);
                        text.push_str(&piece);
                    }
                    if let Some(reason) = choice.finish_reason {
                        finish = finish_reason(Some(&reason));
                        ended = true;
                    }
                }
            }
        }
        if !ended {
            return Err(Error::Http(format!(
                "{}: the stream ended before the reply was complete ({} characters received)",
                self.endpoint,
                text.len()
            )));
        }
        Ok(Completion::new(text, finish, usage, &self.model_id))
    }
}

impl Llm for OpenAiLlm {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    /// The OpenAI API has `logprobs` and `n`; servers that ignore `n` return one choice
    /// (the agent's gateway then draws the missing samples itself). JSON schemas are
    /// constrained unless the server rejected `response_format` once.
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            logprobs: true,
            samples: true,
            json_schema: !self.no_json_schema.load(Ordering::Relaxed),
        }
    }

    async fn chat(&self, request: &ChatRequest) -> metarag_core::Result<Completion> {
        let span = tracing::info_span!("llm.openai", model = %self.config.model);
        Ok(tracing::Instrument::instrument(self.call(request, None), span).await?)
    }

    async fn chat_stream(
        &self,
        request: &ChatRequest,
        sink: TokenSink<'_>,
    ) -> metarag_core::Result<Completion> {
        let span = tracing::info_span!("llm.openai", model = %self.config.model, stream = true);
        Ok(tracing::Instrument::instrument(self.call(request, Some(sink)), span).await?)
    }
}

fn mentions_response_format(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("response_format") || m.contains("json_schema") || m.contains("response format")
}

/// The `error.message` of an OpenAI-style error body, or the body itself.
fn server_message(body: &str) -> String {
    #[derive(Deserialize)]
    struct Outer {
        error: Inner,
    }
    #[derive(Deserialize)]
    struct Inner {
        message: String,
    }
    match serde_json::from_str::<Outer>(body) {
        Ok(o) => o.error.message,
        Err(_) => body.chars().take(500).collect(),
    }
}

fn finish_reason(reason: Option<&str>) -> FinishReason {
    match reason {
        Some("length") => FinishReason::Length,
        _ => FinishReason::Stop,
    }
}

#[derive(Debug, Serialize)]
struct WireRequest {
    model: String,
    messages: Vec<WireMessage>,
    temperature: f32,
    top_p: f32,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    stop: Option<Vec<String>>,
    seed: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    n: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    logprobs: Option<bool>,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<serde_json::Value>,
}

#[derive(Debug, Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Debug, Serialize)]
struct WireMessage {
    role: String,
    content: String,
}

impl From<&Message> for WireMessage {
    fn from(m: &Message) -> Self {
        WireMessage {
            role: m.role.as_str().to_string(),
            content: m.content.clone(),
        }
    }
}

#[derive(Debug, Deserialize)]
struct WireResponse {
    choices: Vec<WireChoice>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Debug, Deserialize)]
struct WireChoice {
    message: WireReplyMessage,
    #[serde(default)]
    finish_reason: Option<String>,
    #[serde(default)]
    logprobs: Option<WireLogprobs>,
}

#[derive(Debug, Deserialize)]
struct WireLogprobs {
    #[serde(default)]
    content: Option<Vec<WireTokenLogprob>>,
}

#[derive(Debug, Deserialize)]
struct WireTokenLogprob {
    token: String,
    logprob: f32,
}

impl WireChoice {
    fn logprobs(&mut self) -> Option<Vec<TokenLogprob>> {
        let content = self.logprobs.take()?.content?;
        Some(
            content
                .into_iter()
                .map(|t| TokenLogprob {
                    token: t.token,
                    logprob: t.logprob,
                })
                .collect(),
        )
    }
}

#[derive(Debug, Deserialize)]
struct WireReplyMessage {
    #[serde(default)]
    content: Option<String>,
}

#[derive(Debug, Deserialize)]
struct WireChunk {
    #[serde(default)]
    choices: Vec<WireChunkChoice>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Debug, Deserialize)]
struct WireChunkChoice {
    #[serde(default)]
    delta: WireDelta,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct WireDelta {
    #[serde(default)]
    content: Option<String>,
}

#[derive(Debug, Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<WirePromptDetails>,
}

#[derive(Debug, Deserialize)]
struct WirePromptDetails {
    #[serde(default)]
    cached_tokens: u64,
}

impl From<WireUsage> for Usage {
    fn from(u: WireUsage) -> Self {
        Usage {
            prompt_tokens: u.prompt_tokens,
            cached_prompt_tokens: u.prompt_tokens_details.map_or(0, |d| d.cached_tokens),
            completion_tokens: u.completion_tokens,
            ..Usage::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_bodies_yield_the_server_message() {
        assert_eq!(
            server_message(r#"{"error":{"message":"Invalid API key","type":"auth"}}"#),
            "Invalid API key"
        );
        assert_eq!(server_message("upstream down"), "upstream down");
    }

    #[test]
    fn schema_goes_into_the_prompt_when_the_server_lacks_json_schema() {
        #[derive(schemars::JsonSchema, Deserialize)]
        #[allow(dead_code)]
        struct A {
            answer: String,
        }
        let llm = OpenAiLlm::new(OpenAiConfig::new("http://127.0.0.1:1/v1", "m")).unwrap();
        let req = ChatRequest::new(vec![Message::system("Be brief."), Message::user("Q")])
            .json_schema::<A>();
        let with = llm.body(&req, false, true);
        assert!(with.response_format.is_some());
        let without = llm.body(&req, false, false);
        assert!(without.response_format.is_none());
        assert!(without.messages[0].content.contains("\"answer\""));
        assert_eq!(without.messages.len(), 2);
    }

    #[test]
    fn bad_base_urls_are_refused_by_field() {
        let err = OpenAiLlm::new(OpenAiConfig::new("localhost:8080", "m")).unwrap_err();
        assert!(err.to_string().contains("llm.base_url"));
    }
}
