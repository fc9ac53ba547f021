//! `metarag bench crash`: crash consistency, proven by killing real processes. Each trial
//! starts `metarag` as a child (an ingest into an empty index, a re-ingest of changed
//! documents over a full one, a `docs rm` of a quarter of them, or a `collections rm` of a
//! collection holding a quarter of them), kills it with SIGKILL at a random moment, reopens
//! the index and checks it:
//!
//! - every document is wholly in one version (all its chunks from the text SQLite holds for
//!   it, ordinals 0..n, as many as its record says) and that version is one the command
//!   could have left (old or new; present or absent for a removal);
//! - no chunk is orphaned (the documents' chunks add up to the chunk count) and the BM25
//!   and vector engines hold exactly as many entries as SQLite holds chunks;
//! - BM25 and nearest-neighbour searches work and every id they return resolves to a chunk;
//! - for a collection's deletion: the collection's documents are all there or all gone,
//!   and the other collection's nearest-neighbour results are the ones it had before.
//!
//! Then it runs the same command again to completion and checks that the result is the
//! complete new state (resumption loses nothing and duplicates nothing).

use crate::app::App;
use crate::measure::unit;
use crate::output::{print_json, write_json};
use anyhow::{Context, Result, bail};
use clap::Args;
use metarag_core::{Embedder, Filter};
use metarag_index::EmbeddedIndex;
use metarag_models::SentenceEmbedder;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

#[derive(Args, Debug)]
pub struct CrashArgs {
    /// Corpus of `{doc_id, title, text}` lines; the first `--docs` are used.
    #[arg(long, default_value = "data/qa/hotpotqa-corpus.jsonl")]
    corpus: PathBuf,
    /// Documents per trial.
    #[arg(long, default_value_t = 200)]
    docs: usize,
    /// Trials (they rotate over ingest, re-ingest, removal and a collection's deletion).
    #[arg(long, default_value_t = 100)]
    trials: usize,
    /// Chunks per ingest batch in the killed commands (ingest's default is 1,024): small
    /// batches make many commits for a kill to land between or inside.
    #[arg(long, default_value_t = 16)]
    batch_chunks: usize,
    /// Only these commands (repeatable; default: all four in turn).
    #[arg(long = "phase", value_enum)]
    phases: Vec<Phase>,
    /// Seed of the kill times.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Working directory (default: a temporary one, removed after the run).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Also write the JSON report here.
    #[arg(long)]
    out: Option<PathBuf>,
}

/// The command a trial kills.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Phase {
    /// Ingest version 1 into an empty index.
    Ingest,
    /// Ingest version 2 (every third document changed) over a complete version 1.
    #[value(name = "re-ingest")]
    Reingest,
    /// Remove every fourth document from a complete version 1.
    #[value(name = "docs-rm")]
    Remove,
    /// Delete the collection holding every fourth document of a complete version 1 (the
    /// others are in the default collection).
    #[value(name = "collections-rm")]
    DropCollection,
}

impl Phase {
    fn name(self) -> &'static str {
        match self {
            Phase::Ingest => "ingest",
            Phase::Reingest => "re-ingest",
            Phase::Remove => "docs rm",
            Phase::DropCollection => "collections rm",
        }
    }
}

/// Which documents a check accepts: `(id, is version 2) -> allowed`.
type Allowed<'a> = Box<dyn Fn(&str, bool) -> bool + 'a>;

/// Marker appended to a document's text in version 2.
const REVISED: &str = "Revised edition";

/// The collection [`Phase::DropCollection`] deletes.
const DOOMED: &str = "crash-doomed";

struct Setup {
    v1: PathBuf,
    v2: PathBuf,
    /// Version 1 without the removed documents, and the removed ones alone.
    v1_kept: PathBuf,
    v1_doomed: PathBuf,
    ids: Vec<String>,
    removed: Vec<String>,
    exe: PathBuf,
    models: PathBuf,
    batch_chunks: usize,
}

impl Setup {
    /// `metarag` against the data directory `home`, quiet, with small ingest batches.
    fn metarag(&self, home: &Path) -> Command {
        let mut c = Command::new(&self.exe);
        c.env("METARAG_HOME", home)
            .env(
                "METARAG_INGEST__BATCH_CHUNKS",
                self.batch_chunks.to_string(),
            )
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        c
    }

    /// The child command of `phase` against the data directory `home`.
    fn command(&self, phase: Phase, home: &Path) -> Command {
        let mut c = self.metarag(home);
        match phase {
            Phase::Ingest => c.args(["ingest", "--format", "corpus-jsonl"]).arg(&self.v1),
            Phase::Reingest => c.args(["ingest", "--format", "corpus-jsonl"]).arg(&self.v2),
            Phase::Remove => c.args(["docs", "rm"]).args(&self.removed),
            Phase::DropCollection => c.args(["collections", "rm", DOOMED, "--force"]),
        };
        c
    }

    /// Ingests version 1 into `home` in two collections: the removed documents into
    /// [`DOOMED`], the others into the default one.
    fn split_ingest(&self, home: &Path) -> Result<()> {
        for (file, collection) in [(&self.v1_kept, "default"), (&self.v1_doomed, DOOMED)] {
            let mut c = self.metarag(home);
            c.args([
                "ingest",
                "--format",
                "corpus-jsonl",
                "--collection",
                collection,
            ])
            .arg(file);
            run_to_end(c)?;
        }
        Ok(())
    }

    /// A data directory for a trial: the shared model cache, and a copy of `base`'s index.
    fn home(&self, dir: &Path, base: Option<&Path>) -> Result<PathBuf> {
        if dir.exists() {
            std::fs::remove_dir_all(dir)?;
        }
        std::fs::create_dir_all(dir)?;
        std::os::unix::fs::symlink(&self.models, dir.join("models"))
            .context("linking the model cache")?;
        if let Some(base) = base {
            copy_dir(&base.join("index"), &dir.join("index"))?;
        }
        Ok(dir.to_path_buf())
    }
}

fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}

/// Runs `c` to completion and returns its wall time.
fn run_to_end(mut c: Command) -> Result<Duration> {
    let t = Instant::now();
    let out = c
        .stderr(Stdio::piped())
        .output()
        .context("starting metarag")?;
    if !out.status.success() {
        bail!(
            "{:?} failed ({}): {}",
            c.get_args().collect::<Vec<_>>(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(t.elapsed())
}

/// What one check of an index found wrong (empty: consistent).
fn check(
    home: &Path,
    embedder: &SentenceEmbedder,
    app: &App,
    allowed: &dyn Fn(&str, bool) -> bool,
    probes: &[Vec<f32>],
) -> Result<(Vec<String>, usize)> {
    let cfg = app.config.index(embedder.model_id(), embedder.dimension());
    let dir = home.join("index");
    if !dir.join("meta.sqlite").exists() {
        return Ok((Vec::new(), 0));
    }
    let index = EmbeddedIndex::open(&dir, cfg)?;
    let mut defects = Vec::new();
    let stats = index.stats()?;
    let documents = index.documents()?;
    let mut chunk_total = 0u64;
    for d in &documents {
        let text = index
            .document(&d.id)?
            .and_then(|d| d.text)
            .unwrap_or_default();
        let chunks = index.document_chunks(&d.id)?;
        chunk_total += chunks.len() as u64;
        if chunks.len() != d.chunk_count as usize {
            defects.push(format!(
                "{}: {} chunks stored, its record says {}",
                d.id,
                chunks.len(),
                d.chunk_count
            ));
        }
        let ordinals: Vec<u32> = chunks.iter().map(|c| c.draft.ordinal).collect();
        if ordinals != (0..chunks.len() as u32).collect::<Vec<_>>() {
            defects.push(format!("{}: chunk ordinals {ordinals:?}", d.id));
        }
        if chunks.iter().any(|c| !text.contains(c.draft.text.trim())) {
            defects.push(format!("{}: a chunk is not from the stored text", d.id));
        }
        if !allowed(d.id.as_str(), text.contains(REVISED)) {
            defects.push(format!(
                "{}: version {} was not a possible state",
                d.id,
                if text.contains(REVISED) { 2 } else { 1 }
            ));
        }
    }
    if chunk_total != stats.chunks {
        defects.push(format!(
            "{} chunks in SQLite, {chunk_total} belong to documents (orphans)",
            stats.chunks
        ));
    }
    let (bm25, dense) = index.engine_sizes()?;
    if bm25 as u64 != stats.chunks || dense as u64 != stats.chunks {
        defects.push(format!(
            "engines disagree with SQLite: BM25 {bm25}, vectors {dense}, chunks {}",
            stats.chunks
        ));
    }
    if stats.chunks > 0 {
        let mut ids: Vec<_> = index
            .lexical("the film", 20, &Filter::default())?
            .into_iter()
            .map(|h| h.id)
            .collect();
        for v in probes {
            let hits = index.nearest(v, 20, &Filter::default())?;
            if hits.is_empty() {
                defects.push("a nearest-neighbour search found nothing".into());
            }
            ids.extend(hits.into_iter().map(|h| h.id));
        }
        ids.sort();
        ids.dedup();
        let found = index.chunks(&ids)?.len();
        if found != ids.len() {
            defects.push(format!(
                "{} of {} search results name chunks SQLite does not have",
                ids.len() - found,
                ids.len()
            ));
        }
    }
    Ok((defects, documents.len()))
}

/// The default collection's nearest chunks for each probe (the part of the index a
/// collection's deletion must not move), and the names of the collections the index holds.
fn kept_view(
    home: &Path,
    embedder: &SentenceEmbedder,
    app: &App,
    probes: &[Vec<f32>],
) -> Result<(Vec<Vec<String>>, Vec<String>)> {
    let cfg = app.config.index(embedder.model_id(), embedder.dimension());
    let index = EmbeddedIndex::open(home.join("index"), cfg)?;
    let default_only = Filter {
        collections: vec![metarag_core::CollectionId::default()],
        ..Default::default()
    };
    let mut results = Vec::new();
    for v in probes {
        let hits = index.nearest(v, 20, &default_only)?;
        results.push(hits.into_iter().map(|h| h.id.to_string()).collect());
    }
    let names = index
        .collections()?
        .into_iter()
        .map(|c| c.name.to_string())
        .collect();
    Ok((results, names))
}

fn write_versions(corpus: &Path, n: usize, dir: &Path) -> Result<(PathBuf, PathBuf, Vec<String>)> {
    let text =
        std::fs::read_to_string(corpus).with_context(|| format!("reading {}", corpus.display()))?;
    let (mut v1, mut v2, mut ids) = (String::new(), String::new(), Vec::new());
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    // Passages past the first `n`, to make long documents of: every 25th document carries
    // 80 of them, several ingest batches of chunks, so kills also land inside a staged
    // write (a document larger than a batch is handed to the index a slice at a time).
    let filler: Vec<String> = lines
        .iter()
        .skip(n)
        .take(400)
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|r| r["text"].as_str().map(str::to_string))
        .collect();
    for (i, line) in lines.iter().take(n).enumerate() {
        let mut rec: Value = serde_json::from_str(line)
            .with_context(|| format!("{}:{}: not JSON", corpus.display(), i + 1))?;
        let id = format!("crash-{i}");
        rec["doc_id"] = json!(id);
        if i % 25 == 0 && !filler.is_empty() {
            let t = rec["text"].as_str().unwrap_or_default().to_string();
            let start = (i / 25 * 80) % filler.len();
            let more: Vec<&str> = filler
                .iter()
                .cycle()
                .skip(start)
                .take(80)
                .map(String::as_str)
                .collect();
            rec["text"] = json!(format!("{t}\n\n{}", more.join("\n\n")));
        }
        v1.push_str(&rec.to_string());
        v1.push('\n');
        if i % 3 == 0 {
            let t = rec["text"].as_str().unwrap_or_default().to_string();
            rec["text"] = json!(format!("{t} {REVISED} {i} of this passage."));
        }
        v2.push_str(&rec.to_string());
        v2.push('\n');
        ids.push(id);
    }
    if ids.is_empty() {
        bail!("{}: no passages", corpus.display());
    }
    let (p1, p2) = (dir.join("v1.jsonl"), dir.join("v2.jsonl"));
    std::fs::write(&p1, v1)?;
    std::fs::write(&p2, v2)?;
    Ok((p1, p2, ids))
}

/// Runs the crash-consistency trials and writes their record.
pub async fn run(app: &App, args: CrashArgs) -> Result<ExitCode> {
    if args.trials == 0 || args.docs < 4 {
        bail!("--trials must be positive and --docs at least 4");
    }
    let tmp;
    let dir = match &args.dir {
        Some(d) => {
            std::fs::create_dir_all(d)?;
            d.clone()
        }
        None => {
            tmp = tempdir()?;
            tmp.clone()
        }
    };
    let embedder = app.embedder()?;
    let (v1, v2, ids) = write_versions(&args.corpus, args.docs, &dir)?;
    // Version 1 split as `removed` is below: every fourth document apart.
    let (mut kept, mut doomed) = (String::new(), String::new());
    for (i, line) in std::fs::read_to_string(&v1)?.lines().enumerate() {
        let part = if i % 4 == 0 { &mut doomed } else { &mut kept };
        part.push_str(line);
        part.push('\n');
    }
    let (v1_kept, v1_doomed) = (dir.join("v1-kept.jsonl"), dir.join("v1-doomed.jsonl"));
    std::fs::write(&v1_kept, kept)?;
    std::fs::write(&v1_doomed, doomed)?;
    let setup = Setup {
        v1,
        v2,
        v1_kept,
        v1_doomed,
        removed: ids.iter().step_by(4).cloned().collect(),
        ids,
        exe: std::env::current_exe().context("finding the metarag executable")?,
        models: app.config.models_dir(),
        batch_chunks: args.batch_chunks,
    };
    let probes = vec![
        embedder
            .embed_query("a film directed by an American director")
            .await?,
        embedder.embed_query("a river in Europe").await?,
    ];

    // The complete states, and how long each command takes uninterrupted.
    eprintln!("preparing: {} documents...", setup.ids.len());
    let base = setup.home(&dir.join("base"), None)?;
    let mut durations = HashMap::new();
    durations.insert("ingest", run_to_end(setup.command(Phase::Ingest, &base))?);
    for phase in [Phase::Reingest, Phase::Remove] {
        let home = setup.home(&dir.join("timing"), Some(&base))?;
        durations.insert(phase.name(), run_to_end(setup.command(phase, &home))?);
    }
    let split = setup.home(&dir.join("base-collections"), None)?;
    setup.split_ingest(&split)?;
    let (kept_before, _) = kept_view(&split, &embedder, app, &probes)?;
    let home = setup.home(&dir.join("timing"), Some(&split))?;
    durations.insert(
        Phase::DropCollection.name(),
        run_to_end(setup.command(Phase::DropCollection, &home))?,
    );

    let phases = if args.phases.is_empty() {
        vec![
            Phase::Ingest,
            Phase::Reingest,
            Phase::Remove,
            Phase::DropCollection,
        ]
    } else {
        args.phases.clone()
    };
    let mut trials = Vec::new();
    let mut total_defects = 0;
    let mut killed = 0;
    for t in 0..args.trials {
        let phase = phases[t % phases.len()];
        let full = durations[phase.name()];
        // Uniform over the command's whole run, start-up included.
        let delay = full.mul_f64(unit(args.seed.wrapping_mul(1_000_003) + t as u64));
        let home = setup.home(
            &dir.join("trial"),
            match phase {
                Phase::Ingest => None,
                Phase::Reingest | Phase::Remove => Some(base.as_path()),
                Phase::DropCollection => Some(split.as_path()),
            },
        )?;
        let mut child = setup
            .command(phase, &home)
            .spawn()
            .context("starting metarag")?;
        std::thread::sleep(delay);
        let finished_first = child.try_wait()?.is_some();
        if !finished_first {
            child.kill()?;
            killed += 1;
        }
        child.wait()?;
        let removed = &setup.removed;
        // Only a re-ingest can leave version 2 behind; each document wholly one version.
        let after_kill: Allowed = match phase {
            Phase::Reingest => Box::new(|_, _| true),
            Phase::Ingest | Phase::Remove | Phase::DropCollection => Box::new(|_, v2| !v2),
        };
        let (mut defects, docs_after_kill) = check(&home, &embedder, app, &*after_kill, &probes)?;
        let removal = matches!(phase, Phase::Remove | Phase::DropCollection);
        if removal && ![setup.ids.len(), setup.ids.len() - removed.len()].contains(&docs_after_kill)
        {
            defects.push(format!(
                "{docs_after_kill} documents after a killed removal: neither all nor all but the removed"
            ));
        }
        // The other collection's results never move, whenever the delete is killed.
        let kept_check = |home: &Path, resumed: bool| -> Result<Vec<String>> {
            let mut found = Vec::new();
            let (kept_now, names) = kept_view(home, &embedder, app, &probes)?;
            if kept_now != kept_before {
                found.push("the default collection's nearest chunks changed".to_string());
            }
            if resumed && names.iter().any(|n| n == DOOMED) {
                found.push(format!("collection {DOOMED} is still listed"));
            }
            Ok(found)
        };
        if phase == Phase::DropCollection {
            defects.extend(kept_check(&home, false)?);
        }
        // Resume: the same command to completion, then the complete new state.
        if !removal || docs_after_kill == setup.ids.len() {
            run_to_end(setup.command(phase, &home))?;
        }
        let is_removed = |id: &str| removed.iter().any(|r| r == id);
        let complete: Allowed = match phase {
            Phase::Ingest => Box::new(|_, v2| !v2),
            Phase::Reingest => Box::new(|id: &str, v2| {
                let n: usize = id.trim_start_matches("crash-").parse().unwrap_or(1);
                v2 == n.is_multiple_of(3)
            }),
            Phase::Remove | Phase::DropCollection => {
                Box::new(move |id: &str, v2| !v2 && !is_removed(id))
            }
        };
        let (mut after_resume, docs_final) = check(&home, &embedder, app, &*complete, &probes)?;
        let expected = if removal {
            setup.ids.len() - removed.len()
        } else {
            setup.ids.len()
        };
        if phase == Phase::DropCollection {
            after_resume.extend(kept_check(&home, true)?);
        }
        if docs_final != expected {
            after_resume.push(format!(
                "{docs_final} documents after resuming, expected {expected} (lost or extra)"
            ));
        }
        defects.extend(
            after_resume
                .into_iter()
                .map(|d| format!("after resuming: {d}")),
        );
        total_defects += defects.len();
        eprintln!(
            "trial {:>3} {:<10} kill at {:>5.2}s{} -> {} documents, {} defects",
            t + 1,
            phase.name(),
            delay.as_secs_f64(),
            if finished_first {
                " (had finished)"
            } else {
                ""
            },
            docs_after_kill,
            defects.len()
        );
        trials.push(json!({
            "trial": t + 1,
            "phase": phase.name(),
            "kill_after_s": delay.as_secs_f64(),
            "finished_before_kill": finished_first,
            "documents_after_kill": docs_after_kill,
            "defects": defects,
        }));
    }
    let report = json!({
        "corpus": args.corpus,
        "documents": setup.ids.len(),
        "trials": args.trials,
        "killed": killed,
        "defects": total_defects,
        "uninterrupted_s": durations.iter().map(|(k, v)| (k.to_string(), json!(v.as_secs_f64()))).collect::<serde_json::Map<_, _>>(),
        "seed": args.seed,
        "results": trials,
    });
    if args.dir.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    write_json(args.out.as_deref(), &report)?;
    if app.json {
        print_json(&report)?;
    } else {
        println!(
            "{} trials, {killed} killed mid-command, {total_defects} defects",
            args.trials
        );
    }
    Ok(if total_defects == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// A fresh directory under the system's temporary directory.
fn tempdir() -> Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("metarag-crash-{}", std::process::id()));
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}
