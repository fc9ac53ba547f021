//! `metarag config`: the effective configuration (defaults, file, environment).

use crate::app::App;
use crate::output::print_json;
use anyhow::{Context, Result};
use std::process::ExitCode;

/// Prints the effective configuration (TOML, or JSON with `--json`).
pub fn run(app: &App) -> Result<ExitCode> {
    let mut raw = app.config.raw.clone();
    raw.home = Some(app.config.home.clone());
    if app.json {
        print_json(&raw)?;
    } else {
        print!(
            "{}",
            toml::to_string_pretty(&raw).context("rendering the configuration")?
        );
    }
    Ok(ExitCode::SUCCESS)
}
