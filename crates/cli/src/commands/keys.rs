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
        /// Collections it may read (comma-separated; repeatable). With neither --read nor
        /// --write the key is an admin key: every collection, and keys and collections.
        #[arg(long, value_delimiter = ',', value_name = "NAMES")]
        read: Vec<metarag_core::CollectionId>,
        /// Collections it may write (ingest into, remove documents from), and so read.
        #[arg(long, value_delimiter = ',', value_name = "NAMES")]
        write: Vec<metarag_core::CollectionId>,
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
        Command::Add { name, read, write } => {
            let scope = (!read.is_empty() || !write.is_empty())
                .then_some(metarag_server::KeyScope { read, write });
            let (record, key) = store.add(&name, scope).await?;
            if app.json {
                print_json(&serde_json::json!({
                    "id": record.id, "name": record.name, "key": key, "scope": record.scope
                }))?;
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
                    let scope = match &k.scope {
                        None => "admin".to_string(),
                        Some(s) => {
                            let names = |cs: &[metarag_core::CollectionId]| {
                                cs.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(",")
                            };
                            format!("read: {}  write: {}", names(&s.read), names(&s.write))
                        }
                    };
                    println!("{}\t{}\t{scope}", k.id, k.name);
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
