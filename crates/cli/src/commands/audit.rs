//! `metarag audit`: the audit memory: which documents were added, updated (with the
//! sections gained and lost) and removed, when; by time range and by document.

use crate::app::{App, UserError};
use crate::output::{parse_date, print_json, truncate};
use anyhow::Result;
use clap::Args as ClapArgs;
use std::process::ExitCode;

/// `metarag audit`
#[derive(ClapArgs, Debug)]
pub struct Args {
    /// Only events on or after this day (YYYY-MM-DD or Unix seconds).
    #[arg(long)]
    pub since: Option<String>,
    /// Only events before this day.
    #[arg(long)]
    pub until: Option<String>,
    /// Only documents whose title or id contains this text.
    #[arg(long)]
    pub doc: Option<String>,
    /// Or: a time expression in words ("since March", "last week", "in 2024").
    #[arg(long, conflicts_with_all = ["since", "until"])]
    pub when: Option<String>,
    /// How many events, newest first.
    #[arg(long, default_value_t = 50)]
    pub n: usize,
    /// Only events of this collection (repeat for several; every collection when absent).
    #[arg(long)]
    pub collection: Vec<metarag_core::CollectionId>,
}

/// Prints the events.
pub async fn run(app: &App, args: Args) -> Result<ExitCode> {
    let Some(opened) = app.existing_store(false).await? else {
        return Err(
            UserError("no index yet; add documents with `metarag ingest <paths>`".into()).into(),
        );
    };
    let (from, to) = match &args.when {
        Some(w) => metarag_retrieve::router::time_range(w, now()).ok_or_else(|| {
            UserError(format!(
                "--when `{w}`: no time expression understood (try \"since March\", \"last week\", \"in 2024\")"
            ))
        })?,
        None => (
            args.since.as_deref().map(parse_date).transpose()?,
            args.until.as_deref().map(parse_date).transpose()?,
        ),
    };
    let query = metarag_core::AuditQuery {
        from,
        to,
        title: args.doc,
        collections: args.collection,
        limit: args.n,
    };
    let events = metarag_core::StoreRead::audit_events(&opened.store, &query).await?;
    if app.json {
        print_json(&events)?;
        return Ok(ExitCode::SUCCESS);
    }
    if events.is_empty() {
        eprintln!("no events in that range");
    }
    for e in &events {
        println!(
            "{}\t{}\t{}\t{}",
            e.at,
            e.kind,
            truncate(&e.title, 50),
            truncate(&e.detail.to_string(), 100)
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The current Unix time.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}
