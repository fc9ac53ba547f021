//! `metarag migrate --to postgres`: copies the embedded index (documents, their text,
//! chunks and vectors: nothing is embedded again) into a Postgres store, skipping the
//! documents already there unchanged, and checks the counts.

use crate::app::{App, UserError};
use anyhow::Result;
use clap::{Args as ClapArgs, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use metarag_core::{DocumentUpdate, Store, StoreRead};
use metarag_index::EmbeddedIndex;
use metarag_pgstore::PgStore;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// Where to copy to.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum Target {
    /// A Postgres database with pgvector.
    Postgres,
}

/// `metarag migrate`
#[derive(ClapArgs, Debug)]
pub struct Args {
    /// The target store.
    #[arg(long, value_enum)]
    pub to: Target,
    /// The database URL (default: `[store] url`).
    #[arg(long)]
    pub url: Option<String>,
    /// The embedded index to copy (default: the data directory's).
    #[arg(long)]
    pub index: Option<PathBuf>,
    /// Documents per transaction.
    #[arg(long, default_value = "64")]
    pub batch: usize,
}

/// What a copy did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct CopyReport {
    /// Documents written.
    pub copied: usize,
    /// Documents already there with the same content hash.
    pub unchanged: usize,
    /// Chunks written.
    pub chunks: usize,
    /// Wall seconds.
    pub seconds: f64,
}

/// Connects to the Postgres store for an index built with `embedder` (`dimension`-d).
pub async fn connect(app: &App, url: &str, embedder: &str, dimension: usize) -> Result<PgStore> {
    Ok(PgStore::connect(app.pg_config(url, embedder, dimension)).await?)
}

/// Copies every document of `index` that `store` lacks or holds in another version, `batch`
/// documents per transaction, then checks both hold the same documents and chunks.
pub async fn copy(
    index: &EmbeddedIndex,
    store: &PgStore,
    batch: usize,
    show: bool,
) -> Result<CopyReport> {
    let started = Instant::now();
    let have = store.content_hashes().await?;
    let docs = index.documents()?;
    let bar = if show {
        let b = ProgressBar::new(docs.len() as u64);
        b.set_style(
            ProgressStyle::with_template("{bar:30} {pos}/{len} documents {elapsed} (eta {eta})")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        b
    } else {
        ProgressBar::hidden()
    };
    let mut report = CopyReport::default();
    let mut pending: Vec<DocumentUpdate> = Vec::new();
    for d in &docs {
        bar.inc(1);
        if have.get(d.id.as_str()) == Some(&d.content_hash) {
            report.unchanged += 1;
            continue;
        }
        let Some(update) = index.export_document(&d.id)? else {
            continue;
        };
        report.copied += 1;
        report.chunks += update.chunks.len();
        pending.push(update);
        if pending.len() >= batch.max(1) {
            store
                .apply(std::mem::take(&mut pending), Vec::new())
                .await?;
        }
    }
    if !pending.is_empty() {
        store.apply(pending, Vec::new()).await?;
    }
    bar.finish_and_clear();
    if report.copied > 0 {
        store.analyze().await?;
    }
    // Documents only the target holds are left alone (another server may have written
    // them); the counts must cover at least the source.
    let (a, b) = (index.stats()?, StoreRead::stats(store).await?);
    if b.documents < a.documents || b.chunks < a.chunks {
        return Err(anyhow::anyhow!(
            "after the copy Postgres holds {} documents and {} chunks, the index {} and {}",
            b.documents,
            b.chunks,
            a.documents,
            a.chunks
        ));
    }
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// Runs the copy and prints what it did.
pub async fn run(app: &App, args: Args) -> Result<ExitCode> {
    let Target::Postgres = args.to;
    let url = args
        .url
        .clone()
        .or_else(|| app.config.raw.store.url.clone())
        .ok_or_else(|| {
            UserError("migrate --to postgres needs --url or `[store] url` in the config".into())
        })?;
    let dir = args.index.clone().unwrap_or_else(|| app.config.index_dir());
    let Some((embedder, dimension)) = EmbeddedIndex::recorded_embedder(&dir)? else {
        return Err(UserError(format!("no index at {}", dir.display())).into());
    };
    let mut cfg = app.config.index(&embedder, dimension);
    // Reading needs no graph work; the copy carries documents, chunks and vectors only.
    cfg.graph = false;
    let index = EmbeddedIndex::open_for_reading(&dir, cfg)?;
    let store = connect(app, &url, &embedder, dimension).await?;
    let report = copy(&index, &store, args.batch, !app.json).await?;
    if app.json {
        crate::output::print_json(&report)?;
    } else {
        println!(
            "copied {} documents ({} chunks) in {:.1}s; {} already there unchanged",
            report.copied, report.chunks, report.seconds, report.unchanged
        );
    }
    Ok(ExitCode::SUCCESS)
}
