//! Prometheus metrics: requests and latency per route and status, asks by strategy and
//! outcome, LLM calls, tokens and cache hits, the ask queue. Rendered in the text
//! exposition format at `GET /v1/metrics`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};

/// Upper bounds of the latency histogram buckets, seconds: from a cached search to a long
/// multi-round ask on a small CPU.
const BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

#[derive(Debug, Default, Clone)]
struct Histogram {
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

impl Histogram {
    fn observe(&mut self, seconds: f64) {
        if self.counts.is_empty() {
            self.counts = vec![0; BUCKETS.len()];
        }
        for (i, b) in BUCKETS.iter().enumerate() {
            if seconds <= *b {
                self.counts[i] += 1;
            }
        }
        self.sum += seconds;
        self.count += 1;
    }
}

#[derive(Debug, Default)]
struct Inner {
    requests: BTreeMap<(String, String, u16), u64>,
    latency: BTreeMap<String, Histogram>,
    asks: BTreeMap<(String, &'static str), u64>,
    llm_calls: u64,
    cached_calls: u64,
    prompt_tokens: u64,
    completion_tokens: u64,
    rejected: u64,
    queue_wait: Histogram,
    ask_ms_total: f64,
    asks_timed: u64,
}

/// The server's counters.
#[derive(Debug, Default)]
pub struct Metrics {
    inner: Mutex<Inner>,
    asks_running: AtomicI64,
    asks_waiting: AtomicI64,
}

impl Metrics {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// One finished request on `route` (the route pattern, not the concrete path, so ids do
    /// not explode the label set).
    pub fn request(&self, method: &str, route: &str, status: u16, seconds: f64) {
        let mut m = self.lock();
        *m.requests
            .entry((method.to_string(), route.to_string(), status))
            .or_default() += 1;
        m.latency
            .entry(route.to_string())
            .or_default()
            .observe(seconds);
    }

    /// One finished ask with its usage: `failed`, else `abstained` (it declined to
    /// answer), else answered.
    pub fn ask(
        &self,
        strategy: &str,
        failed: bool,
        abstained: bool,
        wall_ms: f64,
        usage: &metarag_agent::trace::RunUsage,
    ) {
        let mut m = self.lock();
        m.ask_ms_total += wall_ms;
        m.asks_timed += 1;
        let outcome = match (failed, abstained) {
            (true, _) => "failed",
            (false, true) => "abstained",
            (false, false) => "answered",
        };
        *m.asks.entry((strategy.to_string(), outcome)).or_default() += 1;
        m.llm_calls += usage.llm_calls;
        m.cached_calls += usage.cached_calls;
        m.prompt_tokens += usage.prompt_tokens;
        m.completion_tokens += usage.completion_tokens;
    }

    /// Mean run time of the asks served so far, milliseconds (`None` before the first):
    /// what a client turned away should wait per ask ahead of it.
    pub fn mean_ask_ms(&self) -> Option<f64> {
        let m = self.lock();
        (m.asks_timed > 0).then(|| m.ask_ms_total / m.asks_timed as f64)
    }

    /// An ask turned away because the queue was full.
    pub fn rejected(&self) {
        self.lock().rejected += 1;
    }

    /// Time an ask waited for a slot.
    pub fn queue_wait(&self, seconds: f64) {
        self.lock().queue_wait.observe(seconds);
    }

    /// Asks now running / waiting (gauges), changed by `delta`.
    pub fn running(&self, delta: i64) {
        self.asks_running.fetch_add(delta, Ordering::Relaxed);
    }

    /// See [`Metrics::running`].
    pub fn waiting(&self, delta: i64) -> i64 {
        self.asks_waiting.fetch_add(delta, Ordering::Relaxed) + delta
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let m = self.lock();
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# HELP metarag_http_requests_total HTTP requests by method, route and status.\n# TYPE metarag_http_requests_total counter"
        );
        for ((method, route, status), n) in &m.requests {
            let _ = writeln!(
                out,
                "metarag_http_requests_total{{method=\"{method}\",route=\"{}\",status=\"{status}\"}} {n}",
                escape(route)
            );
        }
        let _ = writeln!(
            out,
            "# HELP metarag_http_request_duration_seconds Request latency by route.\n# TYPE metarag_http_request_duration_seconds histogram"
        );
        for (route, h) in &m.latency {
            histogram(
                &mut out,
                "metarag_http_request_duration_seconds",
                &format!("route=\"{}\"", escape(route)),
                h,
            );
        }
        let _ = writeln!(
            out,
            "# HELP metarag_asks_total Answered and failed asks by strategy.\n# TYPE metarag_asks_total counter"
        );
        for ((strategy, outcome), n) in &m.asks {
            let _ = writeln!(
                out,
                "metarag_asks_total{{strategy=\"{}\",outcome=\"{outcome}\"}} {n}",
                escape(strategy)
            );
        }
        for (name, help, value) in [
            (
                "metarag_llm_calls_total",
                "LLM calls made by asks.",
                m.llm_calls,
            ),
            (
                "metarag_llm_cache_hits_total",
                "LLM calls answered from the call cache.",
                m.cached_calls,
            ),
            (
                "metarag_llm_prompt_tokens_total",
                "Prompt tokens of asks.",
                m.prompt_tokens,
            ),
            (
                "metarag_llm_completion_tokens_total",
                "Completion tokens of asks.",
                m.completion_tokens,
            ),
            (
                "metarag_asks_rejected_total",
                "Asks turned away with 429 because the queue was full.",
                m.rejected,
            ),
        ] {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}"
            );
        }
        for (name, help, value) in [
            (
                "metarag_asks_running",
                "Asks running now.",
                self.asks_running.load(Ordering::Relaxed),
            ),
            (
                "metarag_asks_waiting",
                "Asks waiting for a slot now.",
                self.asks_waiting.load(Ordering::Relaxed),
            ),
        ] {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}"
            );
        }
        let _ = writeln!(
            out,
            "# HELP metarag_ask_queue_wait_seconds Time asks waited for a slot.\n# TYPE metarag_ask_queue_wait_seconds histogram"
        );
        histogram(
            &mut out,
            "metarag_ask_queue_wait_seconds",
            "",
            &m.queue_wait,
        );
        out
    }
}

fn histogram(out: &mut String, name: &str, labels: &str, h: &Histogram) {
    let sep = if labels.is_empty() { "" } else { "," };
    for (i, b) in BUCKETS.iter().enumerate() {
        let n = h.counts.get(i).copied().unwrap_or(0);
        let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"{b}\"}} {n}");
    }
    let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {}", h.count);
    let braces = if labels.is_empty() {
        String::new()
    } else {
        format!("{{{labels}}}")
    };
    let _ = writeln!(out, "{name}_sum{braces} {}", h.sum);
    let _ = writeln!(out, "{name}_count{braces} {}", h.count);
}

/// Escapes a label value as the exposition format requires.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_are_cumulative_and_render_in_the_text_format() {
        let m = Metrics::default();
        m.request("GET", "/v1/health", 200, 0.003);
        m.request("GET", "/v1/health", 200, 0.2);
        m.request("POST", "/v1/search", 400, 0.02);
        let text = m.render();
        assert!(text.contains(
            "metarag_http_requests_total{method=\"GET\",route=\"/v1/health\",status=\"200\"} 2"
        ));
        assert!(text.contains(
            "metarag_http_request_duration_seconds_bucket{route=\"/v1/health\",le=\"0.005\"} 1"
        ));
        assert!(text.contains(
            "metarag_http_request_duration_seconds_bucket{route=\"/v1/health\",le=\"0.25\"} 2"
        ));
        assert!(text.contains(
            "metarag_http_request_duration_seconds_bucket{route=\"/v1/health\",le=\"+Inf\"} 2"
        ));
        assert!(text.contains("metarag_ask_queue_wait_seconds_count 0"));
    }
}
