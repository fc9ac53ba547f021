//! `metarag import`: a JSON/JSONL vector dump (`{id, text, embedding, metadata}`) into the
//! index, its vectors kept (not re-embedded) after a check that they come from the
//! index's embedding model.

use crate::app::App;
use crate::commands::ingest::{failure_line, ingest_summary};
use crate::output::print_json;
use anyhow::Result;
use clap::Args as ClapArgs;
use metarag_ingest::import::{ImportOptions, import_dump};
use std::path::PathBuf;
use std::process::ExitCode;

/// `metarag import`
#[derive(ClapArgs, Debug)]
pub struct Args {
    /// The dump: a JSON array or JSONL of `{id, text, embedding, metadata}` records
    /// (`metadata.title`, `metadata.source`, `metadata.date` are read if present).
    pub file: PathBuf,
    /// Records re-embedded to check the vectors come from the index's model.
    #[arg(long, default_value_t = 8)]
    pub check: usize,
    /// Skip that check (the vectors are known to come from the configured embedder).
    #[arg(long)]
    pub trust_vectors: bool,
}

/// Imports the dump; exit code 3 when some records failed.
pub async fn run(app: &App, args: Args) -> Result<ExitCode> {
    let embedder = app.embedder()?;
    let opened = app.store(&embedder, true, None).await?;
    let chunker = app.chunker(&embedder)?;
    let options = ImportOptions {
        check_sample: if args.trust_vectors { 0 } else { args.check },
        ..ImportOptions::default()
    };
    let report = import_dump(&args.file, &chunker, &embedder, &opened.store, &options).await?;
    if app.json {
        print_json(&report)?;
    } else {
        for f in &report.failures {
            eprintln!("{}", failure_line(f));
        }
        println!("{}", ingest_summary(&report));
    }
    Ok(if report.failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(3)
    })
}
