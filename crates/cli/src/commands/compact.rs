//! `metarag compact`: merges the embedded index's BM25 segments into one after a large
//! ingest, so that each search reads one segment instead of many.

use crate::app::{App, UserError};
use crate::output::print_json;
use anyhow::Result;
use std::process::ExitCode;

/// Merges the default index's BM25 segments (a no-op on a compact index).
pub async fn run(app: &App) -> Result<ExitCode> {
    app.require_embedded("`metarag compact`")?;
    let Some(index) = app.open_existing_index(true)? else {
        return Err(UserError(format!(
            "no index at {}; add documents with `metarag ingest <paths>` first",
            app.config.index_dir().display()
        ))
        .into());
    };
    let done = tokio::task::spawn_blocking(move || index.compact()).await??;
    if app.json {
        print_json(&done)?;
    } else {
        println!(
            "BM25 segments: {} -> {} ({:.1} s)",
            done.bm25_segments_before, done.bm25_segments_after, done.seconds
        );
    }
    Ok(ExitCode::SUCCESS)
}
