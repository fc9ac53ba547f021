//! `metarag graph`: the entity graph of the index (`entities`, `show`, `neighbors`,
//! `explain`), or, with `--strategy`, a strategy's graph as Mermaid.

use crate::app::{App, UserError};
use crate::output::{print_json, truncate};
use anyhow::Result;
use clap::{Args as ClapArgs, Subcommand};
use metarag_core::{ChunkId, Filter, GraphWalk, ScoredChunk, StoreRead};
use metarag_index::{EmbeddedIndex, Entity, GraphStats, Link, Reached, StoredRelation};
use metarag_pgstore::PgStore;
use std::process::ExitCode;
use std::sync::Arc;

/// `metarag graph`
#[derive(ClapArgs, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    /// The strategy whose graph to print as Mermaid (when no subcommand is given).
    #[arg(long, default_value = "metarag")]
    pub strategy: String,
    /// What to show of the index's entity graph.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// The entity graph's subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// The most mentioned entities, with counts of the whole graph.
    Entities {
        /// How many.
        #[arg(long, default_value_t = 30)]
        n: usize,
        /// Only entities of this label: title, name, acronym, date, concept.
        #[arg(long)]
        label: Option<String>,
    },
    /// One entity: how the name links, its relations and the chunks that mention it.
    Show {
        /// The entity's name (linked exact, then alias, then fuzzy).
        entity: String,
        /// Relations and mentions listed.
        #[arg(long, default_value_t = 20)]
        n: usize,
    },
    /// The entities a walk from one entity reaches, with hop and weight.
    Neighbors {
        /// The entity's name.
        entity: String,
        /// Hops (default: retrieval.graph.max_hops).
        #[arg(long)]
        hops: Option<usize>,
        /// How many to list.
        #[arg(long, default_value_t = 30)]
        n: usize,
    },
    /// How a query walks the graph: its mentions' links, the entities reached, and the
    /// chunks ranked.
    Explain {
        /// The query.
        query: String,
        /// Chunks listed.
        #[arg(long, default_value_t = 10)]
        k: usize,
    },
}

/// `metarag graph`.
pub async fn run(app: &App, args: Args) -> Result<ExitCode> {
    let Some(command) = args.command else {
        print!("{}", app.registry()?.get(&args.strategy)?.mermaid());
        return Ok(ExitCode::SUCCESS);
    };
    let Some(opened) = app.existing_store(false).await? else {
        return Err(
            UserError("no index yet; add documents with `metarag ingest <paths>`".into()).into(),
        );
    };
    let index = match (opened.index, opened.postgres) {
        (Some(index), _) if !index.config().graph => {
            return Err(UserError("the entity graph is off (`index.graph = false`)".into()).into());
        }
        (Some(index), _) => Graph::Embedded(index),
        (None, Some(pg)) => Graph::Postgres(pg),
        (None, None) => unreachable!("a store is embedded or Postgres"),
    };
    let walk = app.config.retrieval().graph;
    match command {
        Command::Entities { n, label } => {
            let stats = index.graph_stats().await?;
            let top = index.top_entities(label.as_deref(), n).await?;
            if app.json {
                print_json(&serde_json::json!({ "stats": stats, "entities": top }))?;
            } else {
                println!(
                    "{} entities, {} mentions, {} relations",
                    stats.entities, stats.mentions, stats.relations
                );
                for e in &top {
                    println!(
                        "{}\t{}\t{} chunks",
                        truncate(&e.name, 60),
                        e.label,
                        e.mentions
                    );
                }
            }
        }
        Command::Show { entity, n } => {
            let e = resolve(&index, &entity, &walk).await?;
            let relations = index.entity_relations(&e, n).await?;
            let mentions = index.entity_mentions(&e, n).await?;
            let ids: Vec<_> = mentions.iter().map(|m| m.0).collect();
            let chunks = index.chunks(&ids).await?;
            if app.json {
                let mentions: Vec<_> = mentions
                    .iter()
                    .zip(&chunks)
                    .map(|((id, conf), c)| {
                        serde_json::json!({"chunk": id, "confidence": conf, "title": c.title})
                    })
                    .collect();
                print_json(&serde_json::json!({
                    "entity": e, "relations": relations, "mentions": mentions
                }))?;
            } else {
                println!("{} ({}, {} chunks)", e.name, e.label, e.mentions);
                if !relations.is_empty() {
                    println!("\nrelations:");
                    for r in &relations {
                        println!(
                            "  {} -[{}]-> {}\t{} {:.2}\tchunk {}",
                            r.subject, r.predicate, r.object, r.pattern, r.confidence, r.chunk
                        );
                    }
                }
                println!("\nmentioned in:");
                for ((id, conf), c) in mentions.iter().zip(&chunks) {
                    println!("  chunk {id}\t{conf:.2}\t{}", truncate(&c.title, 60));
                }
            }
        }
        Command::Neighbors { entity, hops, n } => {
            let e = resolve(&index, &entity, &walk).await?;
            let mut walk = walk.clone();
            if let Some(h) = hops {
                walk.max_hops = h;
            }
            let mut reached = index.entity_neighbours(&e, &walk).await?;
            reached.truncate(n);
            if app.json {
                print_json(&reached)?;
            } else {
                for r in &reached {
                    println!(
                        "{}\thop {}\t{:.3}\t{} ({} chunks)",
                        truncate(&r.entity.name, 60),
                        r.hop,
                        r.weight,
                        r.entity.label,
                        r.entity.mentions
                    );
                }
            }
        }
        Command::Explain { query, k } => {
            let (links, reached, ranked) =
                index.explain(&query, k, &walk, &Filter::default()).await?;
            let ids: Vec<_> = ranked.iter().map(|r| r.id).collect();
            let chunks = index.chunks(&ids).await?;
            if app.json {
                let hits: Vec<_> = ranked
                    .iter()
                    .zip(&chunks)
                    .map(|(r, c)| serde_json::json!({"chunk": r.id, "score": r.score, "title": c.title}))
                    .collect();
                print_json(&serde_json::json!({
                    "links": links, "reached": reached.iter().take(30).collect::<Vec<_>>(), "chunks": hits
                }))?;
            } else {
                println!("links:");
                for l in &links {
                    println!(
                        "  \"{}\" -> {} ({:?}, {:.2})",
                        l.mention, l.entity.name, l.stage, l.similarity
                    );
                }
                println!("\nreached ({}):", reached.len());
                for r in reached.iter().take(15) {
                    println!(
                        "  {}\thop {}\t{:.3}",
                        truncate(&r.entity.name, 50),
                        r.hop,
                        r.weight
                    );
                }
                println!("\nchunks:");
                for (r, c) in ranked.iter().zip(&chunks) {
                    println!(
                        "  {:.3}\tchunk {}\t{}",
                        r.score,
                        r.id,
                        truncate(&c.title, 60)
                    );
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The entity a name links to best, or a user error naming the name.
async fn resolve(index: &Graph, name: &str, walk: &GraphWalk) -> Result<Entity> {
    index
        .link(name, walk.link_threshold, 1)
        .await?
        .into_iter()
        .next()
        .map(|l| l.entity)
        .ok_or_else(|| UserError(format!("no entity in the graph matches `{name}`")).into())
}

/// The entity graph of either store: the same inspection over the embedded index's
/// SQLite tables or Postgres's.
enum Graph {
    Embedded(Arc<EmbeddedIndex>),
    Postgres(Arc<PgStore>),
}

impl Graph {
    async fn graph_stats(&self) -> Result<GraphStats> {
        Ok(match self {
            Graph::Embedded(i) => i.graph_stats()?,
            Graph::Postgres(p) => p.graph_stats().await?,
        })
    }

    async fn top_entities(&self, label: Option<&str>, n: usize) -> Result<Vec<Entity>> {
        Ok(match self {
            Graph::Embedded(i) => i.top_entities(label, n)?,
            Graph::Postgres(p) => p.top_entities(label, n).await?,
        })
    }

    async fn link(&self, name: &str, threshold: f32, max: usize) -> Result<Vec<Link>> {
        Ok(match self {
            Graph::Embedded(i) => i.link_entity(name, threshold, max)?,
            Graph::Postgres(p) => p.link_entity(name, threshold, max).await?,
        })
    }

    async fn entity_relations(&self, e: &Entity, n: usize) -> Result<Vec<StoredRelation>> {
        Ok(match self {
            Graph::Embedded(i) => i.entity_relations(e, n)?,
            Graph::Postgres(p) => p.entity_relations(e, n).await?,
        })
    }

    async fn entity_mentions(&self, e: &Entity, n: usize) -> Result<Vec<(ChunkId, f32)>> {
        Ok(match self {
            Graph::Embedded(i) => i.entity_mentions(e, n)?,
            Graph::Postgres(p) => p.entity_mentions(e, n).await?,
        })
    }

    async fn entity_neighbours(&self, e: &Entity, walk: &GraphWalk) -> Result<Vec<Reached>> {
        Ok(match self {
            Graph::Embedded(i) => i.entity_neighbours(e, walk)?,
            Graph::Postgres(p) => p.entity_neighbours(e, walk).await?,
        })
    }

    async fn explain(
        &self,
        query: &str,
        k: usize,
        walk: &GraphWalk,
        filter: &Filter,
    ) -> Result<(Vec<Link>, Vec<Reached>, Vec<ScoredChunk>)> {
        Ok(match self {
            Graph::Embedded(i) => i.graph_search_explained(query, k, walk, filter)?,
            Graph::Postgres(p) => p.graph_search_explained(query, k, walk, filter).await?,
        })
    }

    async fn chunks(&self, ids: &[ChunkId]) -> Result<Vec<metarag_core::Chunk>> {
        Ok(match self {
            Graph::Embedded(i) => StoreRead::chunks(i, ids).await?,
            Graph::Postgres(p) => StoreRead::chunks(p, ids).await?,
        })
    }
}
