//! `metarag docs list|show|rm`: the documents in the index.

use crate::app::{App, UserError};
use crate::output::{print_json, truncate};
use anyhow::Result;
use clap::Subcommand;
use metarag_core::{DocId, Store, StoreRead};
use std::process::ExitCode;

#[derive(Subcommand, Debug)]
pub enum Command {
    /// List documents.
    List,
    /// Show one document and its chunks.
    Show {
        /// Document id (as `docs list` prints it).
        id: String,
        /// Print the chunks' text too.
        #[arg(long)]
        chunks: bool,
    },
    /// Remove documents and all their chunks.
    Rm {
        /// Document ids.
        #[arg(required = true)]
        ids: Vec<String>,
    },
}

/// Runs one `docs` subcommand.
pub async fn run(app: &App, command: Command) -> Result<ExitCode> {
    match command {
        Command::List => list(app).await,
        Command::Show { id, chunks } => show(app, &id, chunks).await,
        Command::Rm { ids } => rm(app, &ids).await,
    }
}

async fn list(app: &App) -> Result<ExitCode> {
    let (docs, stats) = match app.existing_store(false).await? {
        Some(opened) => (
            StoreRead::documents(&opened.store).await?,
            Some(StoreRead::stats(&opened.store).await?),
        ),
        None => (Vec::new(), None),
    };
    if app.json {
        print_json(&docs)?;
    } else if docs.is_empty() {
        eprintln!("no documents; add some with `metarag ingest <paths>`");
    } else {
        for d in &docs {
            println!(
                "{}\t{}\t{}\t{} chunks",
                d.id,
                d.format.as_str(),
                truncate(&d.title, 60),
                d.chunk_count
            );
        }
        if let Some(s) = stats {
            // On stderr: the listing on stdout stays one line per document.
            let mut line = format!(
                "{} documents, {} chunks, {} tokens",
                s.documents, s.chunks, s.tokens
            );
            if let (Some(e), Some(r)) = (s.entities, s.relations) {
                line.push_str(&format!("; entity graph: {e} entities, {r} relations"));
            }
            eprintln!("{line}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn show(app: &App, id: &str, with_chunks: bool) -> Result<ExitCode> {
    let id = DocId::new(id)?;
    let index = app
        .existing_store(false)
        .await?
        .ok_or_else(|| UserError("the index is empty".into()))?
        .store;
    let doc = StoreRead::document(&index, &id).await?.ok_or_else(|| {
        UserError(format!(
            "no document with id `{id}` (see `metarag docs list`)"
        ))
    })?;
    let chunks = StoreRead::document_chunks(&index, &id).await?;
    if app.json {
        print_json(&serde_json::json!({ "document": doc, "chunks": chunks }))?;
        return Ok(ExitCode::SUCCESS);
    }
    println!("id:       {}", doc.id);
    println!("title:    {}", doc.title);
    println!("source:   {}", doc.source);
    println!("format:   {}", doc.format.as_str());
    println!("bytes:    {}", doc.bytes);
    println!("chunks:   {}", doc.chunk_count);
    println!("hash:     {}", doc.content_hash);
    for (key, value) in &doc.metadata {
        println!("meta:     {key} = {value}");
    }
    for c in &chunks {
        let pages = c
            .draft
            .pages
            .map(|(a, b)| format!(" p.{a}-{b}"))
            .unwrap_or_default();
        println!(
            "  #{} [{} tokens, bytes {}..{}{}] {}",
            c.draft.ordinal,
            c.draft.token_count,
            c.draft.bytes.start,
            c.draft.bytes.end,
            pages,
            c.draft.section.join(" > ")
        );
        if with_chunks {
            println!("    {}", c.draft.text.replace('\n', "\n    "));
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn rm(app: &App, ids: &[String]) -> Result<ExitCode> {
    let index = app
        .existing_store(true)
        .await?
        .ok_or_else(|| UserError("the index is empty".into()))?
        .store;
    let mut removals = Vec::new();
    for id in ids {
        let id = DocId::new(id.as_str())?;
        if !StoreRead::contains(&index, &id).await? {
            return Err(UserError(format!(
                "no document with id `{id}` (see `metarag docs list`)"
            ))
            .into());
        }
        removals.push(id);
    }
    Store::apply(&index, Vec::new(), removals.clone()).await?;
    if app.json {
        print_json(&serde_json::json!({ "removed": removals }))?;
    } else {
        println!("removed {} document(s)", removals.len());
    }
    Ok(ExitCode::SUCCESS)
}
