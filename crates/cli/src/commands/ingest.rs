//! `metarag ingest`: files and directories into the index.

use crate::app::App;
use crate::output::print_json;
use anyhow::Result;
use clap::{Args as ClapArgs, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;

/// Parser override for `ingest --format`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum FormatArg {
    /// Every record must be `{doc_id, title, text}` (JSONL, or a JSON array).
    CorpusJsonl,
    /// PDF.
    Pdf,
    /// DOCX.
    Docx,
    /// HTML.
    Html,
    /// Markdown.
    Markdown,
    /// Plain text.
    Text,
    /// JSON / JSONL documents.
    Json,
}

#[derive(ClapArgs, Debug)]
pub struct Args {
    /// Files and directories (directories are walked recursively).
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Parse every file as this format instead of guessing from the extension.
    #[arg(long, value_enum)]
    pub format: Option<FormatArg>,
    /// Only files matching this glob (relative to the directory given); repeatable.
    #[arg(long)]
    pub include: Vec<String>,
    /// Skip files matching this glob; repeatable.
    #[arg(long)]
    pub exclude: Vec<String>,
    /// Metadata set on every document ingested (over what the source gives), searchable
    /// with `search --where KEY=VALUE`; repeatable. `2020` and `true` are a number and a
    /// boolean, `'"2020"'` the text.
    #[arg(long = "meta", value_name = "KEY=VALUE")]
    pub meta: Vec<String>,
    /// The collection the documents go into (made if new); `default` when absent.
    #[arg(long, value_name = "NAME")]
    pub collection: Option<metarag_core::CollectionId>,
}

/// Ingests the paths into the index; exit code 3 when some files failed.
pub async fn run(app: &App, args: Args) -> Result<ExitCode> {
    let embedder = app.embedder()?;
    let mut options = app.ingest_options(args.format, args.include, args.exclude);
    for m in &args.meta {
        let (key, value) = crate::output::parse_meta(m, "--meta")?;
        options.metadata.insert(key, value);
    }
    if let Some(c) = args.collection {
        options.collection = c;
    }
    let opened = app.store(&embedder, true, None).await?;
    let report = app
        .ingest_into_store(&opened.store, &args.paths, options, &embedder)
        .await?;
    // A bulk load writes a segment per batch and tantivy's merge policy leaves many
    // behind, each of which every search reads: merged here once the ingest is done.
    let compact_above = app.config.raw.ingest.compact_above_segments;
    if let Some(index) = opened.index.clone()
        && compact_above > 0
        && !index.is_read_only()
        && index.bm25_segments()? > compact_above
    {
        let done = tokio::task::spawn_blocking(move || index.compact()).await??;
        tracing::info!(
            before = done.bm25_segments_before,
            seconds = done.seconds,
            "BM25 merged into one segment"
        );
    }
    if app.json {
        print_json(&report)?;
    } else {
        println!("{}", ingest_summary(&report));
    }
    Ok(if report.failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(3)
    })
}

/// A failed file as one line: the error, which names the file already, or the file and
/// the error.
pub fn failure_line(f: &metarag_ingest::Failure) -> String {
    if f.error.starts_with(&f.source) {
        f.error.clone()
    } else {
        format!("{}: {}", f.source, f.error)
    }
}

/// One line on what an ingest run did, for `ingest` and the benchmark's corpus index.
pub fn ingest_summary(report: &metarag_ingest::IngestReport) -> String {
    format!(
        "{} files: {} added, {} updated, {} unchanged, {} failed; {} chunks ({} tokens) in {:.1}s",
        report.files,
        report.added,
        report.updated,
        report.unchanged,
        report.failures.len(),
        report.chunks,
        report.tokens,
        report.seconds
    )
}
