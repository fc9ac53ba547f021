//! `/v1/chat/completions` and `/v1/models` over one chat model, in the OpenAI wire format
//! that every client library speaks. Serves `metarag serve-llm`: one local model shared
//! by several processes, and the loopback target of the OpenAI-compatible client's tests.
//!
//! The model serves one call at a time (a llama.cpp context is serial). Requests beyond
//! the running ones wait in a bounded queue; when it is full the server answers 503 with
//! `Retry-After`, which well-behaved clients (metarag's own included) retry.

use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use metarag_core::{
    ChatRequest, Completion, DynLlm, Fault, FinishReason, GenParams, Message, OutputSchema, Role,
};
use serde::Deserialize;
use serde_json::{Value, json};
use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};
use tokio::sync::Semaphore;

/// Concurrency limits of the endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServeLimits {
    /// Calls run at once (1 for an embedded llama.cpp model).
    pub concurrent: usize,
    /// Calls allowed to wait; beyond this the server answers 503.
    pub queue: usize,
    /// Largest `max_tokens` a request may ask for.
    pub max_tokens: u32,
}

impl Default for ServeLimits {
    fn default() -> Self {
        ServeLimits {
            concurrent: 1,
            queue: 16,
            max_tokens: 2048,
        }
    }
}

struct AppState {
    llm: Arc<dyn DynLlm>,
    limits: ServeLimits,
    permits: Semaphore,
    admitted: AtomicUsize,
    next_id: AtomicU64,
}

/// The router serving `llm` under `/v1`.
pub fn router(llm: Arc<dyn DynLlm>, limits: ServeLimits) -> Router {
    let state = Arc::new(AppState {
        llm,
        limits,
        permits: Semaphore::new(limits.concurrent.max(1)),
        admitted: AtomicUsize::new(0),
        next_id: AtomicU64::new(1),
    });
    Router::new()
        .route("/v1/models", get(models))
        .route("/v1/chat/completions", post(chat))
        .route("/health", get(|| async { "ok" }))
        .with_state(state)
}

async fn models(State(state): State<Arc<AppState>>) -> Json<Value> {
    Json(json!({
        "object": "list",
        "data": [{ "id": state.llm.model_id(), "object": "model", "created": now(), "owned_by": "metarag" }]
    }))
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn error(status: StatusCode, kind: &str, message: impl Into<String>) -> Response {
    let body =
        json!({ "error": { "message": message.into(), "type": kind, "code": status.as_u16() } });
    (status, Json(body)).into_response()
}

/// Counts a request as admitted for as long as it lives.
struct Admission(Arc<AppState>);

impl Drop for Admission {
    fn drop(&mut self) {
        self.0.admitted.fetch_sub(1, Ordering::SeqCst);
    }
}

fn admit(state: &Arc<AppState>) -> Option<Admission> {
    let capacity = state.limits.concurrent.max(1) + state.limits.queue;
    if state.admitted.fetch_add(1, Ordering::SeqCst) >= capacity {
        state.admitted.fetch_sub(1, Ordering::SeqCst);
        return None;
    }
    Some(Admission(state.clone()))
}

#[derive(Debug, Deserialize)]
struct WireRequest {
    messages: Vec<WireMessage>,
    #[serde(default)]
    temperature: Option<f32>,
    #[serde(default)]
    top_p: Option<f32>,
    #[serde(default)]
    max_tokens: Option<u32>,
    #[serde(default)]
    max_completion_tokens: Option<u32>,
    #[serde(default)]
    stop: Option<StopField>,
    #[serde(default)]
    seed: Option<u64>,
    #[serde(default)]
    n: Option<u32>,
    #[serde(default)]
    logprobs: Option<bool>,
    #[serde(default)]
    stream: bool,
    #[serde(default)]
    response_format: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum StopField {
    One(String),
    Many(Vec<String>),
}

#[derive(Debug, Deserialize)]
struct WireMessage {
    role: String,
    #[serde(default)]
    content: Value,
}

fn to_request(wire: WireRequest, limits: &ServeLimits) -> Result<ChatRequest, String> {
    let mut messages = Vec::with_capacity(wire.messages.len());
    for (i, m) in wire.messages.into_iter().enumerate() {
        let role = match m.role.as_str() {
            "system" | "developer" => Role::System,
            "user" => Role::User,
            "assistant" => Role::Assistant,
            other => return Err(format!("messages[{i}].role `{other}` is not supported")),
        };
        // Content is a string, or an array of parts of which the text ones count.
        let content = match m.content {
            Value::String(s) => s,
            Value::Array(parts) => parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
            Value::Null => String::new(),
            _ => return Err(format!("messages[{i}].content must be a string")),
        };
        messages.push(Message { role, content });
    }
    let defaults = GenParams::default();
    let max_tokens = wire
        .max_completion_tokens
        .or(wire.max_tokens)
        .unwrap_or(defaults.max_tokens);
    if max_tokens > limits.max_tokens {
        return Err(format!(
            "max_tokens {max_tokens} exceeds this server's limit of {}",
            limits.max_tokens
        ));
    }
    let schema = match wire.response_format {
        None => None,
        Some(rf) => match rf.get("type").and_then(Value::as_str) {
            Some("text") | None => None,
            Some("json_object") => Some(OutputSchema {
                name: "json_object".into(),
                schema: json!({ "type": "object" }),
            }),
            Some("json_schema") => {
                let spec = rf
                    .get("json_schema")
                    .ok_or("response_format.json_schema is missing")?;
                let schema = spec
                    .get("schema")
                    .cloned()
                    .ok_or("response_format.json_schema.schema is missing")?;
                let name = spec
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("response")
                    .to_string();
                Some(OutputSchema { name, schema })
            }
            Some(other) => return Err(format!("response_format.type `{other}` is not supported")),
        },
    };
    let request = ChatRequest {
        messages,
        params: GenParams {
            temperature: wire.temperature.unwrap_or(defaults.temperature),
            top_p: wire.top_p.unwrap_or(defaults.top_p),
            max_tokens,
            stop: match wire.stop {
                None => Vec::new(),
                Some(StopField::One(s)) => vec![s],
                Some(StopField::Many(v)) => v,
            },
            seed: wire.seed.unwrap_or(defaults.seed),
            logprobs: wire.logprobs.unwrap_or(false),
            // A stream carries one choice.
            n: if wire.stream { 1 } else { wire.n.unwrap_or(1) },
        },
        schema,
        keep_prefix: false,
        collections: Vec::new(),
    };
    request.validate().map_err(|e| e.to_string())?;
    Ok(request)
}

fn finish_str(f: FinishReason) -> &'static str {
    match f {
        FinishReason::Stop => "stop",
        FinishReason::Length => "length",
    }
}

fn usage_json(c: &Completion) -> Value {
    let u = &c.usage;
    json!({
        "prompt_tokens": u.prompt_tokens,
        "completion_tokens": u.completion_tokens,
        "total_tokens": u.prompt_tokens + u.completion_tokens,
        "prompt_tokens_details": { "cached_tokens": u.cached_prompt_tokens },
    })
}

fn model_error(e: &metarag_core::Error) -> Response {
    match e.fault() {
        Fault::User => error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            e.to_string(),
        ),
        Fault::Internal => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "server_error",
            e.to_string(),
        ),
    }
}

async fn chat(State(state): State<Arc<AppState>>, body: axum::body::Bytes) -> Response {
    let wire: WireRequest = match serde_json::from_slice(&body) {
        Ok(w) => w,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                format!("request body: {e}"),
            );
        }
    };
    let stream = wire.stream;
    let request = match to_request(wire, &state.limits) {
        Ok(r) => r,
        Err(e) => return error(StatusCode::BAD_REQUEST, "invalid_request_error", e),
    };
    let Some(admission) = admit(&state) else {
        let mut resp = error(
            StatusCode::SERVICE_UNAVAILABLE,
            "server_busy",
            "the model is busy and the queue is full; retry shortly",
        );
        resp.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        return resp;
    };
    let id = format!("chatcmpl-{}", state.next_id.fetch_add(1, Ordering::Relaxed));
    let model = state.llm.model_id().to_string();
    if !stream {
        let _permit = state.permits.acquire().await.expect("semaphore open");
        let result = state.llm.chat_dyn(&request).await;
        drop(admission);
        return match result {
            Ok(c) => {
                let first = (c.text.as_str(), c.finish, c.logprobs.as_deref());
                let rest = c
                    .samples
                    .iter()
                    .map(|s| (s.text.as_str(), s.finish, s.logprobs.as_deref()));
                let choices: Vec<Value> = std::iter::once(first)
                    .chain(rest)
                    .enumerate()
                    .map(|(i, (text, finish, logprobs))| {
                        let mut choice = json!({
                            "index": i,
                            "message": { "role": "assistant", "content": text },
                            "finish_reason": finish_str(finish),
                        });
                        if let Some(tokens) = logprobs {
                            let content: Vec<Value> = tokens
                                .iter()
                                .map(|t| json!({ "token": t.token, "logprob": t.logprob }))
                                .collect();
                            choice["logprobs"] = json!({ "content": content });
                        }
                        choice
                    })
                    .collect();
                Json(json!({
                    "id": id,
                    "object": "chat.completion",
                    "created": now(),
                    "model": model,
                    "choices": choices,
                    "usage": usage_json(&c),
                }))
                .into_response()
            }
            Err(e) => model_error(&e),
        };
    }
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Event>();
    let chunk = {
        let (id, model) = (id.clone(), model.clone());
        move |delta: Value, finish: Option<&str>, usage: Option<Value>| {
            let mut v = json!({
                "id": id,
                "object": "chat.completion.chunk",
                "created": now(),
                "model": model,
                "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }],
            });
            if let Some(u) = usage {
                v["usage"] = u;
            }
            Event::default().data(v.to_string())
        }
    };
    tokio::spawn(async move {
        let _admission = admission;
        let _permit = state.permits.acquire().await.expect("semaphore open");
        let _ = tx.send(chunk(
            json!({ "role": "assistant", "content": "" }),
            None,
            None,
        ));
        let sink_tx = tx.clone();
        let sink_chunk = chunk.clone();
        let sink = move |piece: &str| {
            let _ = sink_tx.send(sink_chunk(json!({ "content": piece }), None, None));
        };
        match state.llm.chat_stream_dyn(&request, &sink).await {
            Ok(c) => {
                let _ = tx.send(chunk(
                    json!({}),
                    Some(finish_str(c.finish)),
                    Some(usage_json(&c)),
                ));
            }
            Err(e) => {
                // Headers are gone by now: report the failure as an error event.
                let body = json!({ "error": { "message": e.to_string(), "type": "server_error" } });
                let _ = tx.send(Event::default().data(body.to_string()));
            }
        }
        let _ = tx.send(Event::default().data("[DONE]"));
    });
    let events = tokio_stream::StreamExt::map(
        tokio_stream::wrappers::UnboundedReceiverStream::new(rx),
        Ok::<_, Infallible>,
    );
    Sse::new(events).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wire(v: Value) -> WireRequest {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn wire_requests_map_onto_chat_requests() {
        let r = to_request(
            wire(json!({
                "model": "x",
                "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": [{"type": "text", "text": "hi"}]}],
                "max_tokens": 5, "stop": "\n", "temperature": 0.2,
                "response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": {"type": "object"}}}
            })),
            &ServeLimits::default(),
        )
        .unwrap();
        assert_eq!(r.messages[1].content, "hi");
        assert_eq!(r.params.max_tokens, 5);
        assert_eq!(r.params.stop, vec!["\n".to_string()]);
        assert_eq!(r.schema.unwrap().name, "a");
    }

    #[test]
    fn bad_requests_name_the_field() {
        let limits = ServeLimits::default();
        let e = to_request(
            wire(json!({"messages": [{"role": "tool", "content": "x"}]})),
            &limits,
        )
        .unwrap_err();
        assert!(e.contains("messages[0].role"), "{e}");
        let e = to_request(
            wire(json!({"messages": [{"role": "user", "content": "x"}], "max_tokens": 99999})),
            &limits,
        )
        .unwrap_err();
        assert!(e.contains("max_tokens"), "{e}");
        let e = to_request(wire(json!({"messages": []})), &limits).unwrap_err();
        assert!(e.contains("messages"), "{e}");
    }
}
