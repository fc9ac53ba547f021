//! `metarag cache stats|clear`: the LLM call cache.

use crate::app::App;
use crate::output::print_json;
use anyhow::Result;
use clap::Subcommand;
use metarag_models::CallCache;
use std::process::ExitCode;

/// `metarag cache`
#[derive(Subcommand, Debug)]
pub enum Command {
    /// How many calls are stored and how often they were served.
    Stats,
    /// Remove stored calls.
    Clear {
        /// Only this model's calls (a model id as `cache stats` lists it).
        #[arg(long)]
        model: Option<String>,
    },
}

/// `metarag cache ...`
pub fn run(app: &App, command: Command) -> Result<ExitCode> {
    let path = app.config.cache_path();
    let cache = CallCache::open(&path)?;
    match command {
        Command::Stats => {
            let stats = cache.stats()?;
            if app.json {
                print_json(&stats)?;
            } else {
                println!("{}", stats.path.display());
                println!(
                    "{} calls stored, {} hits served, {:.1} MB",
                    stats.entries,
                    stats.hits,
                    stats.bytes as f64 / 1e6
                );
                for (model, n) in &stats.by_model {
                    println!("  {model}\t{n}");
                }
            }
        }
        Command::Clear { model } => {
            let n = cache.clear(model.as_deref())?;
            if app.json {
                print_json(&serde_json::json!({ "removed": n }))?;
            } else {
                println!("removed {n} stored calls from {}", path.display());
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
