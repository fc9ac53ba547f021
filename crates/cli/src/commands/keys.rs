//! `metarag keys add|list|rm`: the API keys of `metarag serve`.

use crate::app::{App, UserError};
use crate::output::print_json;
use anyhow::Result;
use clap::Subcommand;
use std::process::ExitCode;

/// `metarag keys ...`
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Create an API key; it is printed once and stored only as a hash.
    Add {
        /// What the key is for.
        name: String,
    },
    /// List keys (ids and names; never the keys).
    List,
    /// Remove a key by its id.
    Rm {
        /// The key's id (from `metarag keys list`).
        id: String,
    },
}

/// `metarag keys ...`
pub async fn run(app: &App, command: Command) -> Result<ExitCode> {
    let db = app.database().await?;
    let store = app.key_store(db.as_ref());
    match command {
        Command::Add { name } => {
            let (record, key) = store.add(&name).await?;
            if app.json {
                print_json(
                    &serde_json::json!({ "id": record.id, "name": record.name, "key": key }),
                )?;
            } else {
                println!("{key}");
                eprintln!(
                    "key `{}` ({}) created; it is shown only now. Send it as `Authorization: Bearer KEY`.",
                    record.id, record.name
                );
            }
        }
        Command::List => {
            let keys = store.list().await?;
            if app.json {
                print_json(&keys)?;
            } else if keys.is_empty() {
                eprintln!("no keys; `metarag keys add NAME` creates one");
            } else {
                for k in keys {
                    println!("{}\t{}", k.id, k.name);
                }
            }
        }
        Command::Rm { id } => {
            if !store.remove(&id).await? {
                return Err(
                    UserError(format!("no key with id `{id}` (see `metarag keys list`)")).into(),
                );
            }
            if !app.json {
                println!("removed key {id}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
