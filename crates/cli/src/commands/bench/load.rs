//! `metarag bench load`: the server under concurrent load on loopback. It starts
//! `metarag serve`'s router in-process over the configured data directory and models, then
//! fires searches and asks at the same time, each with its own concurrency, and reports
//! per endpoint the latency percentiles, statuses and requests that never answered.
//! Bounded in count and in time: every request has a deadline, and one that passes it is
//! counted as hung, not waited for.

use crate::app::{App, UserError};
use crate::output::print_json;
use anyhow::{Context, Result};
use clap::Args;
use metarag_core::StoreRead;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Questions about the quickstart documents (`examples/docs`), asked when no file is given.
const DEFAULT_QUESTIONS: &[&str] = &[
    "When was the Hoover Dam built?",
    "Which river does the Hoover Dam span?",
    "What does the Panama Canal connect?",
    "Who designed the locks of the Panama Canal?",
];

/// `metarag bench load`
#[derive(Args, Debug)]
pub struct LoadArgs {
    /// Searches in all.
    #[arg(long, default_value_t = 500)]
    pub searches: usize,
    /// Searches in flight at once.
    #[arg(long, default_value_t = 50)]
    pub search_concurrency: usize,
    /// Asks in all.
    #[arg(long, default_value_t = 8)]
    pub asks: usize,
    /// Asks in flight at once.
    #[arg(long, default_value_t = 4)]
    pub ask_concurrency: usize,
    /// The strategy the asks use.
    #[arg(long, default_value = "standard")]
    pub strategy: String,
    /// Questions, one per line (default: four about the quickstart documents); searches
    /// use them too.
    #[arg(long)]
    pub questions: Option<PathBuf>,
    /// A request that has not answered after this many seconds counts as hung.
    #[arg(long, default_value_t = 600)]
    pub deadline_secs: u64,
    /// Chat model (default: `llm.model`).
    #[arg(long)]
    pub model: Option<String>,
    /// Write the markdown report here (and the JSON beside it).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// One endpoint's numbers.
#[derive(Debug, Serialize)]
struct EndpointReport {
    endpoint: String,
    requests: usize,
    concurrency: usize,
    statuses: BTreeMap<String, usize>,
    hung: usize,
    p50_ms: f64,
    p95_ms: f64,
    max_ms: f64,
    wall_s: f64,
    per_second: f64,
}

#[derive(Debug, Serialize)]
struct LoadReport {
    command: String,
    model: String,
    strategy: String,
    documents: u64,
    chunks: u64,
    cores: usize,
    endpoints: Vec<EndpointReport>,
}

/// Runs `n` requests, `concurrency` at a time, each under `deadline`; returns per request
/// the status ("hung" past the deadline, "error" without a response) and the latency.
async fn fire(
    n: usize,
    concurrency: usize,
    deadline: Duration,
    make: impl Fn(usize) -> reqwest::RequestBuilder,
) -> (Vec<(String, f64)>, f64) {
    let started = Instant::now();
    let gate = Arc::new(tokio::sync::Semaphore::new(concurrency.max(1)));
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..n {
        let request = make(i);
        let permit = gate.clone().acquire_owned().await;
        tasks.spawn(async move {
            let _permit = permit;
            let t = Instant::now();
            let status = match tokio::time::timeout(deadline, async {
                let r = request.send().await?;
                let status = r.status();
                // The whole body, so an ask is timed to its last byte.
                r.bytes().await?;
                Ok::<_, reqwest::Error>(status)
            })
            .await
            {
                Ok(Ok(s)) => s.as_u16().to_string(),
                Ok(Err(_)) => "error".to_string(),
                Err(_) => "hung".to_string(),
            };
            (status, t.elapsed().as_secs_f64() * 1e3)
        });
    }
    let mut out = Vec::with_capacity(n);
    while let Some(r) = tasks.join_next().await {
        out.push(r.unwrap_or_else(|_| ("error".to_string(), 0.0)));
    }
    (out, started.elapsed().as_secs_f64())
}

fn summarize(
    endpoint: &str,
    concurrency: usize,
    results: &[(String, f64)],
    wall_s: f64,
) -> EndpointReport {
    let mut statuses = BTreeMap::new();
    for (s, _) in results {
        *statuses.entry(s.clone()).or_insert(0) += 1;
    }
    let times: Vec<f64> = results
        .iter()
        .filter(|(s, _)| s != "hung")
        .map(|(_, ms)| *ms)
        .collect();
    EndpointReport {
        endpoint: endpoint.to_string(),
        requests: results.len(),
        concurrency,
        hung: statuses.get("hung").copied().unwrap_or(0),
        statuses,
        p50_ms: metarag_eval::percentile(&times, 50.0),
        p95_ms: metarag_eval::percentile(&times, 95.0),
        max_ms: times.iter().copied().fold(0.0, f64::max),
        wall_s,
        per_second: results.len() as f64 / wall_s.max(1e-9),
    }
}

fn markdown(r: &LoadReport) -> String {
    let mut out = format!(
        "# Server under load (loopback)\n\nCommand: `{}`\n\nModel `{}`, asks with `{}`, index of {} documents / {} chunks, {} CPU cores. Searches and asks run at the same time; every request has a deadline, and one past it counts as hung.\n\n",
        r.command, r.model, r.strategy, r.documents, r.chunks, r.cores
    );
    out.push_str("| endpoint | requests | concurrency | statuses | hung | p50 ms | p95 ms | max ms | req/s |\n|---|---:|---:|---|---:|---:|---:|---:|---:|\n");
    for e in &r.endpoints {
        let statuses: Vec<String> = e
            .statuses
            .iter()
            .map(|(s, n)| format!("{s}: {n}"))
            .collect();
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {:.1} | {:.1} | {:.1} | {:.2} |\n",
            e.endpoint,
            e.requests,
            e.concurrency,
            statuses.join(", "),
            e.hung,
            e.p50_ms,
            e.p95_ms,
            e.max_ms,
            e.per_second
        ));
    }
    out
}

/// `metarag bench load`
pub async fn run(app: &App, args: LoadArgs) -> Result<ExitCode> {
    let questions: Vec<String> = match &args.questions {
        Some(p) => std::fs::read_to_string(p)
            .map_err(|e| UserError(format!("{}: {e}", p.display())))?
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect(),
        None => DEFAULT_QUESTIONS.iter().map(|q| q.to_string()).collect(),
    };
    if questions.is_empty() {
        return Err(UserError("--questions has no questions".into()).into());
    }
    let engine = app.engine(args.model.as_deref(), false, None).await?;
    let stats = StoreRead::stats(&engine.store).await?;
    if stats.documents == 0 {
        return Err(UserError(
            "the index is empty: ingest documents first (`metarag ingest examples/docs`)".into(),
        )
        .into());
    }
    let model = engine.agent.model_id().to_string();
    let mut limits = app.config.raw.server.limits();
    // The load is the point: the queue must hold every concurrent ask.
    limits.waiting_asks = limits.waiting_asks.max(args.ask_concurrency);
    let router = metarag_server::router(engine, limits, None);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let server = tokio::spawn(metarag_server::serve(
        listener,
        router,
        std::future::pending(),
    ));
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(args.search_concurrency.max(args.ask_concurrency))
        .build()
        .context("HTTP client")?;
    let deadline = Duration::from_secs(args.deadline_secs);
    eprintln!(
        "{} searches ({} at once) and {} asks ({} at once) against {base}",
        args.searches, args.search_concurrency, args.asks, args.ask_concurrency
    );
    let search_url = format!("{base}/v1/search");
    let ask_url = format!("{base}/v1/ask");
    let (searches, asks) = tokio::join!(
        fire(args.searches, args.search_concurrency, deadline, |i| {
            http.post(&search_url).json(&serde_json::json!({
                "query": questions[i % questions.len()], "k": 10
            }))
        }),
        fire(args.asks, args.ask_concurrency, deadline, |i| {
            http.post(&ask_url).json(&serde_json::json!({
                "question": questions[i % questions.len()], "strategy": args.strategy
            }))
        }),
    );
    server.abort();
    let report = LoadReport {
        command: std::env::args().collect::<Vec<_>>().join(" "),
        model,
        strategy: args.strategy.clone(),
        documents: stats.documents,
        chunks: stats.chunks,
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        endpoints: vec![
            summarize(
                "/v1/search",
                args.search_concurrency,
                &searches.0,
                searches.1,
            ),
            summarize("/v1/ask", args.ask_concurrency, &asks.0, asks.1),
        ],
    };
    let text = markdown(&report);
    if let Some(out) = &args.out {
        std::fs::write(out, &text).with_context(|| format!("writing {}", out.display()))?;
        let json = out.with_extension("json");
        std::fs::write(&json, serde_json::to_string_pretty(&report)?)
            .with_context(|| format!("writing {}", json.display()))?;
    }
    if app.json {
        print_json(&report)?;
    } else {
        print!("{text}");
    }
    let failed = report
        .endpoints
        .iter()
        .any(|e| e.hung > 0 || e.statuses.keys().any(|s| s != "200"));
    Ok(if failed {
        ExitCode::from(3)
    } else {
        ExitCode::SUCCESS
    })
}
