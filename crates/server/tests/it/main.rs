//! The server's integration tests over real HTTP on loopback: [`api`] is `metarag serve`'s
//! REST + SSE API, [`mcp`] its MCP tools (an rmcp client session, and JSON-RPC over `/mcp`),
//! [`browser`] the web page in headless Chromium; the tests below are the OpenAI-compatible client against `serve-llm`'s
//! router with the real local model behind it: plain and streamed replies, structured
//! output, a retry after a 503 from a full queue, and a 4xx that is not retried.

mod api;
mod browser;
mod mcp;

use metarag_core::{ChatRequest, DynLlm, Fault, Llm, Message, chat_json};
use metarag_models::{OpenAiConfig, OpenAiLlm};
use metarag_server::{ServeLimits, openai_router, serve};
use serde::Deserialize;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Starts the server on an ephemeral loopback port; returns its `/v1` base URL.
async fn start(limits: ServeLimits) -> String {
    let llm: Arc<dyn DynLlm> = metarag_testkit::local_llm();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve(
        listener,
        openai_router(llm, limits),
        std::future::pending(),
    ));
    format!("http://{addr}/v1")
}

fn client(base: &str) -> OpenAiLlm {
    let mut c = OpenAiConfig::new(base, "qwen2.5-0.5b-instruct");
    c.backoff = Duration::from_millis(200);
    OpenAiLlm::new(c).unwrap()
}

#[tokio::test]
async fn plain_and_streamed_replies_over_http() {
    let base = start(ServeLimits::default()).await;
    let llm = client(&base);
    let request = ChatRequest::new(vec![
        Message::system("Answer with one word."),
        Message::user("What is the capital of France?"),
    ])
    .max_tokens(8);
    let plain = llm.chat(&request).await.unwrap();
    assert!(plain.text.contains("Paris"), "{:?}", plain.text);
    assert!(plain.usage.prompt_tokens > 10 && plain.usage.completion_tokens > 0);

    let pieces = Mutex::new(Vec::<String>::new());
    let sink = |p: &str| pieces.lock().unwrap().push(p.to_string());
    let streamed = llm
        .chat_stream(
            &ChatRequest::user("List four fruits, comma separated.").max_tokens(24),
            &sink,
        )
        .await
        .unwrap();
    let pieces = pieces.into_inner().unwrap();
    assert!(pieces.len() > 1, "{pieces:?}");
    assert_eq!(pieces.concat(), streamed.text);
    assert!(
        streamed.usage.completion_tokens > 0,
        "usage arrives in the last chunk"
    );
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct Person {
    name: String,
    born: u32,
}

#[tokio::test]
async fn structured_output_through_response_format() {
    let base = start(ServeLimits::default()).await;
    let llm = client(&base);
    let request = ChatRequest::new(vec![
        Message::system("Extract the person from the text as JSON."),
        Message::user("Steven Spielberg was born in 1946 in Cincinnati."),
    ])
    .max_tokens(48);
    let out = chat_json::<Person, _>(&llm, request).await.unwrap();
    assert!(out.value.name.contains("Spielberg"), "{:?}", out.value);
    assert_eq!(out.value.born, 1946);
}

#[tokio::test]
async fn a_503_from_a_full_queue_is_retried_until_it_succeeds() {
    // One call at a time and no queue: a second concurrent call is refused with 503.
    let base = start(ServeLimits {
        concurrent: 1,
        queue: 0,
        max_tokens: 256,
    })
    .await;
    let busy = Arc::new(client(&base));
    let long = {
        let busy = busy.clone();
        tokio::spawn(async move {
            busy.chat(
                &ChatRequest::user("Count from 1 to 100, separated by spaces.").max_tokens(48),
            )
            .await
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut config = OpenAiConfig::new(&base, "qwen2.5-0.5b-instruct");
    // The server says "retry after 1 s": allow minutes, not a fixed count of seconds, so a
    // loaded machine (the long call slowed by other model users) does not fail the test.
    config.max_retries = 600;
    let patient = OpenAiLlm::new(config).unwrap();
    let reply = patient
        .chat(&ChatRequest::user("Say OK.").max_tokens(4))
        .await
        .unwrap();
    assert!(!reply.text.is_empty());
    assert!(
        patient.retries() >= 1,
        "the first attempt should have met a 503"
    );
    assert!(long.await.unwrap().is_ok());
}

#[tokio::test]
async fn a_bad_request_fails_at_once_with_the_servers_message() {
    let base = start(ServeLimits::default()).await;
    let llm = client(&base);
    let err = llm
        .chat(&ChatRequest::user("hi").max_tokens(100_000))
        .await
        .unwrap_err();
    assert_eq!(err.fault(), Fault::User, "{err}");
    assert!(err.to_string().contains("max_tokens"), "{err}");
    assert_eq!(llm.retries(), 0);
}

#[tokio::test]
async fn models_endpoint_lists_the_served_model() {
    let base = start(ServeLimits::default()).await;
    let body: serde_json::Value = reqwest::get(format!("{base}/models"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(body["data"][0]["id"], "qwen2.5-0.5b-instruct");
}

/// A real server in front of the real one that, like some OpenAI-compatible servers,
/// rejects `response_format`; everything else is passed through.
async fn start_without_json_schema(seen: Arc<Mutex<Vec<serde_json::Value>>>) -> String {
    use axum::http::StatusCode;
    use axum::response::IntoResponse;
    let inner = start(ServeLimits::default()).await;
    let handler = move |axum::Json(body): axum::Json<serde_json::Value>| {
        let (inner, seen) = (inner.clone(), seen.clone());
        async move {
            seen.lock().unwrap().push(body.clone());
            if body.get("response_format").is_some() {
                let err =
                    serde_json::json!({"error": {"message": "response_format is not supported"}});
                return (StatusCode::BAD_REQUEST, axum::Json(err)).into_response();
            }
            let resp = reqwest::Client::new()
                .post(format!("{inner}/chat/completions"))
                .json(&body)
                .send()
                .await
                .unwrap();
            let status = StatusCode::from_u16(resp.status().as_u16()).unwrap();
            let reply: serde_json::Value = resp.json().await.unwrap();
            (status, axum::Json(reply)).into_response()
        }
    };
    let app = axum::Router::new().route("/v1/chat/completions", axum::routing::post(handler));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve(listener, app, std::future::pending()));
    format!("http://{addr}/v1")
}

#[tokio::test]
async fn servers_without_json_schema_get_the_schema_in_the_prompt() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let base = start_without_json_schema(seen.clone()).await;
    let llm = client(&base);
    let request = ChatRequest::new(vec![
        Message::system("Extract the person from the text."),
        Message::user("Steven Spielberg was born in 1946 in Cincinnati."),
    ])
    .max_tokens(64);
    let out = chat_json::<Person, _>(&llm, request.clone()).await.unwrap();
    assert!(out.value.name.contains("Spielberg"), "{:?}", out.value);
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 2, "one refused attempt, then the fallback");
        assert!(seen[0].get("response_format").is_some());
        assert!(seen[1].get("response_format").is_none());
        let system = seen[1]["messages"][0]["content"].as_str().unwrap();
        assert!(
            system.contains("JSON schema") && system.contains("born"),
            "{system}"
        );
    }
    // Remembered: the next structured call goes straight to the fallback.
    chat_json::<Person, _>(&llm, request).await.unwrap();
    assert_eq!(seen.lock().unwrap().len(), 3);
    assert_eq!(llm.retries(), 0);
}
