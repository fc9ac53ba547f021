//! `metarag graph`: a strategy's graph as Mermaid.

use crate::app::App;
use anyhow::Result;
use clap::Args as ClapArgs;
use std::process::ExitCode;

/// `metarag graph`
#[derive(ClapArgs, Debug)]
pub struct Args {
    /// The strategy whose graph to print.
    #[arg(long, default_value = "metarag")]
    pub strategy: String,
}

/// `metarag graph`: the strategy's graph as Mermaid.
pub fn run(app: &App, args: Args) -> Result<ExitCode> {
    print!("{}", app.registry()?.get(&args.strategy)?.mermaid());
    Ok(ExitCode::SUCCESS)
}
