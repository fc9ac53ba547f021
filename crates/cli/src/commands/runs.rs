//! `metarag runs list|show|stats`: the recorded runs.

use crate::app::{App, UserError};
use crate::output::{print_json, truncate};
use anyhow::Result;
use clap::Subcommand;
use metarag_eval::runs::{RunQuery, Surface};
use std::process::ExitCode;

/// `metarag runs ...`
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Recorded runs, newest first.
    List {
        /// Only this strategy.
        #[arg(long)]
        strategy: Option<String>,
        /// Only runs from cli, rest, mcp or bench.
        #[arg(long)]
        surface: Option<String>,
        /// At most this many.
        #[arg(long, default_value_t = 20)]
        limit: usize,
    },
    /// One run with its trace (`--json` for the whole record).
    Show {
        /// The run's id.
        id: String,
    },
    /// Per-strategy latency, calls, tokens and cost over every recorded run.
    Stats,
}

/// `metarag runs ...`
pub async fn run(app: &App, command: Command) -> Result<ExitCode> {
    let log = app.configured_run_log().await?;
    match command {
        Command::List {
            strategy,
            surface,
            limit,
        } => {
            let surface = surface
                .map(|s| {
                    serde_json::from_value::<Surface>(serde_json::Value::String(s.clone())).map_err(
                        |_| UserError(format!("--surface `{s}`: expected cli, rest, mcp or bench")),
                    )
                })
                .transpose()?;
            let runs = log
                .list(&RunQuery {
                    strategy,
                    surface,
                    limit,
                    offset: 0,
                    readable: None,
                })
                .await?;
            if app.json {
                print_json(&runs)?;
            } else if runs.is_empty() {
                eprintln!("no runs recorded in {}", log.location());
            } else {
                for r in runs {
                    println!(
                        "{}  {:<5} {:<10} {:>7.1}s {:>3} calls  {}  -> {}",
                        r.id,
                        r.surface.as_str(),
                        r.strategy,
                        r.wall_ms / 1e3,
                        r.llm_calls,
                        truncate(&r.question, 50),
                        truncate(&r.short_answer, 30)
                    );
                }
            }
        }
        Command::Show { id } => {
            let run = log.get(&id, None).await?.ok_or_else(|| {
                UserError(format!("no run with id `{id}` (see `metarag runs list`)"))
            })?;
            if app.json {
                print_json(&run)?;
            } else {
                crate::ask::print_answer(&run.trace);
                crate::ask::print_trace(&run.trace);
            }
        }
        Command::Stats => {
            let stats = log.stats().await?;
            if app.json {
                print_json(&stats)?;
            } else {
                println!(
                    "{:<12} {:>6} {:>6} {:>9} {:>9} {:>7} {:>9} {:>9}",
                    "strategy", "runs", "failed", "p50 s", "p95 s", "calls", "tokens", "cost $"
                );
                for s in stats {
                    println!(
                        "{:<12} {:>6} {:>6} {:>9.1} {:>9.1} {:>7.1} {:>9.0} {:>9.4}",
                        s.strategy,
                        s.runs,
                        s.failed,
                        s.p50_ms / 1e3,
                        s.p95_ms / 1e3,
                        s.mean_calls,
                        s.mean_tokens,
                        s.cost_usd
                    );
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
