//! The OpenAI-compatible client against a loopback server that misbehaves the ways real
//! endpoints do: hangs, errors with and without `Retry-After`, malformed bodies, and streams
//! cut off or dropped mid-way. Every case ends, bounded, in a reply or in an error that
//! names the endpoint; none hangs and none passes a truncated answer off as whole.

use metarag_core::{ChatRequest, Llm};
use metarag_models::{OpenAiConfig, OpenAiLlm};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// What the server does with one connection.
#[derive(Clone)]
enum Act {
    /// Reads the request and never answers.
    Hang,
    /// A full HTTP response: status, extra headers, body.
    Reply(u16, &'static str, String),
    /// A 200 event stream of these raw bytes, then the connection closes.
    Stream(String),
}

const COMPLETION: &str = r#"{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Paris"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}"#;

fn event(text: &str) -> String {
    format!(
        "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}},\"finish_reason\":null}}]}}\n\n"
    )
}

/// Serves `acts` in order, one per connection (the last repeats); returns the base URL and
/// the number of connections seen.
async fn server(acts: Vec<Act>) -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(AtomicUsize::new(0));
    let count = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let n = count.fetch_add(1, Ordering::SeqCst);
            let act = acts[n.min(acts.len() - 1)].clone();
            tokio::spawn(async move {
                // Read the request head and body (enough for these small requests).
                let mut buf = vec![0u8; 64 << 10];
                let mut got = 0;
                loop {
                    let Ok(k) = sock.read(&mut buf[got..]).await else {
                        return;
                    };
                    got += k;
                    let head = String::from_utf8_lossy(&buf[..got]);
                    if let Some(end) = head.find("\r\n\r\n") {
                        let len = head
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase()
                                    .strip_prefix("content-length:")
                                    .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                            })
                            .unwrap_or(0);
                        if got >= end + 4 + len || k == 0 {
                            break;
                        }
                    }
                    if k == 0 {
                        return;
                    }
                }
                match act {
                    Act::Hang => {
                        tokio::time::sleep(Duration::from_secs(3600)).await;
                    }
                    Act::Reply(status, headers, body) => {
                        let r = format!(
                            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n{headers}\r\n{body}",
                            body.len()
                        );
                        let _ = sock.write_all(r.as_bytes()).await;
                    }
                    Act::Stream(body) => {
                        let r = format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n{body}"
                        );
                        let _ = sock.write_all(r.as_bytes()).await;
                    }
                }
                let _ = sock.shutdown().await;
            });
        }
    });
    (format!("http://{addr}/v1"), seen)
}

fn client(base: &str) -> OpenAiLlm {
    let mut c = OpenAiConfig::new(base, "m");
    c.timeout = Duration::from_millis(500);
    c.max_retries = 2;
    c.backoff = Duration::from_millis(10);
    OpenAiLlm::new(c).unwrap()
}

fn ask() -> ChatRequest {
    ChatRequest::user("What is the capital of France?")
}

#[tokio::test]
async fn a_hanging_server_times_out_after_bounded_retries_naming_the_endpoint() {
    let (base, seen) = server(vec![Act::Hang]).await;
    let started = Instant::now();
    let err = client(&base).chat(&ask()).await.unwrap_err().to_string();
    assert!(err.contains(&base), "{err}");
    assert_eq!(seen.load(Ordering::SeqCst), 3, "one try and two retries");
    // Three attempts of 0.5 s plus backoff: bounded, not forever.
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[tokio::test]
async fn server_errors_and_rate_limits_are_retried_then_succeed() {
    let (base, seen) = server(vec![
        Act::Reply(500, "", r#"{"error":{"message":"boom"}}"#.into()),
        Act::Reply(429, "retry-after: 0\r\n", "{}".into()),
        Act::Reply(200, "", COMPLETION.into()),
    ])
    .await;
    let done = client(&base).chat(&ask()).await.unwrap();
    assert_eq!(done.text, "Paris");
    assert_eq!(seen.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn persistent_failures_end_in_an_error_with_the_servers_message() {
    let (base, seen) = server(vec![Act::Reply(
        503,
        "",
        r#"{"error":{"message":"overloaded"}}"#.into(),
    )])
    .await;
    let err = client(&base).chat(&ask()).await.unwrap_err().to_string();
    assert!(err.contains("overloaded") && err.contains("503"), "{err}");
    assert_eq!(seen.load(Ordering::SeqCst), 3);
    // A client error is not retried.
    let (base, seen) = server(vec![Act::Reply(
        401,
        "",
        r#"{"error":{"message":"bad key"}}"#.into(),
    )])
    .await;
    let err = client(&base).chat(&ask()).await.unwrap_err();
    assert!(err.to_string().contains("bad key"), "{err}");
    assert_eq!(seen.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_malformed_reply_is_an_error_naming_the_endpoint() {
    let (base, _) = server(vec![Act::Reply(200, "", "{\"choices\": [".into())]).await;
    let err = client(&base).chat(&ask()).await.unwrap_err().to_string();
    assert!(
        err.contains(&base) && err.contains("not a chat completion"),
        "{err}"
    );
}

#[tokio::test]
async fn a_stream_cut_off_before_its_end_is_an_error_not_a_short_answer() {
    let sink = |_: &str| {};
    // Whole: pieces, a finish reason, [DONE].
    let whole = format!(
        "{}{}data: {{\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"stop\"}}]}}\n\ndata: [DONE]\n\n",
        event("Par"),
        event("is")
    );
    let (base, _) = server(vec![Act::Stream(whole)]).await;
    let done = client(&base).chat_stream(&ask(), &sink).await.unwrap();
    assert_eq!(done.text, "Paris");
    // Cut: the connection closes after the first piece.
    let (base, _) = server(vec![Act::Stream(event("Par"))]).await;
    let err = client(&base)
        .chat_stream(&ask(), &sink)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains(&base) && err.contains("ended before"), "{err}");
    // Garbage inside the stream.
    let (base, _) = server(vec![Act::Stream(format!(
        "{}data: {{nope\n\n",
        event("Par")
    ))])
    .await;
    let err = client(&base)
        .chat_stream(&ask(), &sink)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("bad stream event"), "{err}");
}
