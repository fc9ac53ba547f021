//! `metarag strategies`: the registered strategies.

use crate::app::App;
use crate::output::print_json;
use anyhow::Result;
use clap::Args as ClapArgs;
use serde_json::Value;
use std::process::ExitCode;

/// `metarag strategies`
#[derive(ClapArgs, Debug)]
pub struct Args {}

/// `metarag strategies`: every registered strategy with what it does (`--json`: with
/// its configuration).
pub fn run(app: &App, _args: Args) -> Result<ExitCode> {
    let registry = app.registry()?;
    if app.json {
        let list: Vec<Value> = registry
            .iter()
            .map(|s| {
                serde_json::json!({
                    "name": s.name(),
                    "description": s.description(),
                    "needs_evidence": s.needs_evidence(),
                    "config": s.config_json(),
                })
            })
            .collect();
        print_json(&list)?;
    } else {
        let width = registry.names().iter().map(|n| n.len()).max().unwrap_or(0);
        for s in registry.iter() {
            println!("{:width$}  {}", s.name(), s.description());
        }
    }
    Ok(ExitCode::SUCCESS)
}
