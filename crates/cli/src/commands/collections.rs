//! `metarag collections list|create|rename|rm`: the collections documents are kept in.

use crate::app::{App, UserError};
use crate::output::print_json;
use anyhow::Result;
use clap::Subcommand;
use metarag_core::{CollectionId, Store, StoreRead};
use std::process::ExitCode;

#[derive(Subcommand, Debug)]
pub enum Command {
    /// List collections with their document and chunk counts.
    List,
    /// Make an empty collection (`ingest --collection NAME` makes one too).
    Create {
        /// Its name: lower-case letters, digits, `-` and `_`.
        name: CollectionId,
    },
    /// Rename a collection; its documents and history move with it.
    Rename {
        /// The collection.
        from: CollectionId,
        /// Its new name.
        to: CollectionId,
    },
    /// Delete a collection with all its documents, chunks, vectors, graph entries and
    /// audit events (nothing of another collection is touched).
    Rm {
        /// The collection.
        name: CollectionId,
        /// Delete it even when it holds documents.
        #[arg(long)]
        force: bool,
    },
}

/// Runs one `collections` subcommand.
pub async fn run(app: &App, command: Command) -> Result<ExitCode> {
    let write = !matches!(command, Command::List);
    let Some(opened) = app.existing_store(write).await? else {
        return match command {
            Command::List => {
                list(app, &[])?;
                Ok(ExitCode::SUCCESS)
            }
            _ => Err(
                UserError("no index yet; add documents with `metarag ingest <paths>`".into())
                    .into(),
            ),
        };
    };
    let store = opened.store;
    match command {
        Command::List => list(app, &StoreRead::collections(&store).await?)?,
        Command::Create { name } => {
            let created = Store::create_collection(&store, &name).await?;
            if app.json {
                print_json(&serde_json::json!({ "collection": name, "created": created }))?;
            } else if created {
                println!("created collection {name}");
            } else {
                println!("collection {name} exists already");
            }
        }
        Command::Rename { from, to } => {
            Store::rename_collection(&store, &from, &to).await?;
            // The keys that reached it keep reaching it under its new name.
            let keys = key_store(app)
                .await?
                .move_collection(&from, Some(&to))
                .await?;
            if keys > 0 && !app.json {
                eprintln!("{keys} key(s) now name {to} in place of {from}");
            }
            // So do the keys that could read its runs.
            app.configured_run_log()
                .await?
                .move_collection(&from, Some(&to))
                .await?;
            if app.json {
                print_json(&serde_json::json!({ "renamed": from, "to": to }))?;
            } else {
                println!("renamed collection {from} to {to}");
            }
        }
        Command::Rm { name, force } => {
            let held = StoreRead::collections(&store)
                .await?
                .into_iter()
                .find(|c| c.name == name)
                .ok_or_else(|| {
                    UserError(format!(
                        "no collection named {name} (see `metarag collections list`)"
                    ))
                })?;
            if held.documents > 0 && !force {
                return Err(UserError(format!(
                    "collection {name} holds {} document(s); add --force to delete them with it",
                    held.documents
                ))
                .into());
            }
            let removed = Store::delete_collection(&store, &name).await?;
            // A collection made later under this name is not reachable by the old one's keys.
            let keys = key_store(app).await?.move_collection(&name, None).await?;
            if keys > 0 && !app.json {
                eprintln!("{keys} key(s) no longer name {name}");
            }
            // Its runs stay with the deleted collection (admin keys only), not its name.
            app.configured_run_log()
                .await?
                .move_collection(&name, None)
                .await?;
            if app.json {
                print_json(&serde_json::json!({ "deleted": name, "documents": removed }))?;
            } else {
                println!("deleted collection {name} and its {removed} document(s)");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The keys of the server over this index (the data directory's key file or the shared
/// database's table).
async fn key_store(app: &App) -> Result<metarag_server::KeyStore> {
    let db = app.database().await?;
    Ok(app.key_store(db.as_ref()))
}

fn list(app: &App, collections: &[metarag_core::CollectionInfo]) -> Result<()> {
    if app.json {
        return print_json(&collections);
    }
    if collections.is_empty() {
        eprintln!("no index yet; add documents with `metarag ingest <paths>`");
    }
    for c in collections {
        println!("{}\t{} documents\t{} chunks", c.name, c.documents, c.chunks);
    }
    Ok(())
}
