//! `metarag bench embed`: corpus embedding throughput of the configured embedder, and the
//! Python stack's (sentence-transformers + torch, `../shared/peer-bench/peer_bench.py`) on
//! the same passages in the same run, one after the other, with the ratios.

use crate::app::App;
use crate::measure::{load_average, peak_rss_bytes, process_cpu_seconds, threads};
use crate::output::{print_json, write_json};
use anyhow::{Context, Result, bail};
use clap::Args;
use metarag_core::Embedder;
use metarag_models::Precision;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

#[derive(Args, Debug)]
pub struct EmbedArgs {
    /// Corpus of `{title, text}` lines; each passage is embedded as `title + "\n" + text`,
    /// as the peer script does.
    #[arg(long)]
    corpus: PathBuf,
    /// Embed only the first N passages.
    #[arg(long)]
    max_docs: Option<usize>,
    /// Also run the peer stack: the Python interpreter of its virtual environment.
    #[arg(long, requires_all = ["peer_model", "peer_script"])]
    peer_python: Option<PathBuf>,
    /// The peer's model directory (all-MiniLM-L6-v2 as sentence-transformers saves it).
    #[arg(long)]
    peer_model: Option<PathBuf>,
    /// The peer script (`peer_bench.py`).
    #[arg(long)]
    peer_script: Option<PathBuf>,
    /// Questions file the peer script requires (only its first question is used).
    #[arg(long, default_value = "data/qa/hotpotqa-dev.jsonl")]
    peer_questions: PathBuf,
    /// Also write the JSON report here.
    #[arg(long)]
    out: Option<PathBuf>,
}

fn load_passages(corpus: &Path, max: Option<usize>) -> Result<Vec<String>> {
    let text = std::fs::read_to_string(corpus)
        .with_context(|| format!("reading the corpus {}", corpus.display()))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if max.is_some_and(|m| out.len() >= m) {
            break;
        }
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(line)
            .with_context(|| format!("{}:{}: not a JSON line", corpus.display(), i + 1))?;
        let field = |name: &str| {
            v[name].as_str().map(str::to_string).with_context(|| {
                format!("{}:{}: no string field `{name}`", corpus.display(), i + 1)
            })
        };
        out.push(format!("{}\n{}", field("title")?, field("text")?));
    }
    if out.is_empty() {
        bail!("{}: no passages", corpus.display());
    }
    Ok(out)
}

/// Runs the peer script on the same passages and returns its JSON report.
fn run_peer(args: &EmbedArgs, passages: usize) -> Result<Value> {
    let (Some(python), Some(model), Some(script)) =
        (&args.peer_python, &args.peer_model, &args.peer_script)
    else {
        bail!("--peer-python, --peer-model and --peer-script go together");
    };
    let out = std::env::temp_dir().join(format!("metarag-peer-{}.json", std::process::id()));
    let threads = threads();
    eprintln!("running the peer stack ({})...", script.display());
    let status = std::process::Command::new(python)
        .arg(script)
        .arg("--corpus")
        .arg(&args.corpus)
        .arg("--questions")
        .arg(&args.peer_questions)
        .arg("--model")
        .arg(model)
        .arg("--max-docs")
        .arg(passages.to_string())
        .args(["--max-questions", "1", "--no-langchain", "--out"])
        .arg(&out)
        .env("PEER_THREADS", threads.to_string())
        .env("OMP_NUM_THREADS", threads.to_string())
        .stdout(std::process::Stdio::null())
        .status()
        .with_context(|| format!("starting {}", python.display()))?;
    if !status.success() {
        bail!("the peer script failed ({status})");
    }
    let text = std::fs::read_to_string(&out)
        .with_context(|| format!("reading the peer's report {}", out.display()))?;
    let _ = std::fs::remove_file(&out);
    serde_json::from_str(&text).context("the peer script's report is not JSON")
}

/// Measures corpus embedding throughput (and the Python stack beside it).
pub async fn run(app: &App, args: EmbedArgs) -> Result<ExitCode> {
    let embedder = app.embedder()?;
    let passages = load_passages(&args.corpus, args.max_docs)?;
    let max = embedder.max_tokens();
    let mut tokens = 0usize;
    let mut truncated = 0usize;
    for p in &passages {
        let n = embedder.count_tokens(p)?;
        tokens += n.min(max);
        truncated += usize::from(n > max);
    }
    // Warm-up outside the timing, as the peer script does.
    embedder.embed_blocking(&vec!["warm up".to_string(); 4])?;
    eprintln!(
        "embedding {} passages ({tokens} tokens) with {}...",
        passages.len(),
        embedder.model_id()
    );
    let (cpu0, t0) = (process_cpu_seconds(), Instant::now());
    let vectors = embedder.embed_blocking(&passages)?;
    let wall = t0.elapsed().as_secs_f64();
    let cpu = process_cpu_seconds().zip(cpu0).map(|(b, a)| b - a);
    debug_assert_eq!(vectors.len(), passages.len());
    // A precision other than f32 is checked against f32's vectors of the same passages
    // (after the timing): the bar is a cosine of 0.999 on the corpus.
    let cosine = if embedder.precision() == Precision::F32 {
        None
    } else {
        eprintln!("embedding the passages again in f32 for the cosine check...");
        let reference = app
            .models
            .load_embedder_with(embedder.model_id(), Precision::F32)?
            .embed_blocking(&passages)?;
        let mut cos: Vec<f64> = vectors
            .iter()
            .zip(&reference)
            .map(|(a, b)| a.iter().zip(b).map(|(x, y)| f64::from(x * y)).sum())
            .collect();
        cos.sort_by(f64::total_cmp);
        let mean = cos.iter().sum::<f64>() / cos.len().max(1) as f64;
        Some(json!({
            "mean": mean,
            "min": cos.first(),
            "p01": cos.get(cos.len() / 100),
            "below_0_999": cos.iter().filter(|&&c| c < 0.999).count(),
        }))
    };
    let ours = json!({
        "model": embedder.model_id(),
        "precision": embedder.precision().to_string(),
        "cosine_to_f32": cosine,
        "passages": passages.len(),
        "tokens": tokens,
        "passages_truncated": truncated,
        "wall_s": wall,
        "cpu_s": cpu,
        "tokens_per_s": tokens as f64 / wall,
        "tokens_per_cpu_s": cpu.map(|c| tokens as f64 / c.max(1e-9)),
        "threads": threads(),
        "peak_rss_bytes": peak_rss_bytes(),
    });
    let peer = match args.peer_python {
        Some(_) => Some(run_peer(&args, passages.len())?),
        None => None,
    };
    let comparison = peer.as_ref().map(|p| {
        let e = &p["phases"]["embed_corpus"];
        let peer_tokens = p["data"]["tokens_fed_to_model"]
            .as_f64()
            .unwrap_or(f64::NAN);
        let peer_wall = e["wall_s"].as_f64().unwrap_or(f64::NAN);
        let peer_cpu = e["cpu_s"].as_f64().unwrap_or(f64::NAN);
        json!({
            "peer_tokens": peer_tokens,
            "peer_wall_s": peer_wall,
            "peer_cpu_s": peer_cpu,
            "peer_tokens_per_s": peer_tokens / peer_wall,
            "peer_tokens_per_cpu_s": peer_tokens / peer_cpu,
            "peer_peak_rss_mib": p["process"]["peak_rss_mib"],
            "peer_torch_threads": p["process"]["torch_threads"],
            "ratio_tokens_per_s": (tokens as f64 / wall) / (peer_tokens / peer_wall),
            "ratio_tokens_per_cpu_s": cpu.map(|c| (tokens as f64 / c) / (peer_tokens / peer_cpu)),
        })
    });
    let report = json!({
        "corpus": args.corpus,
        "load_average": load_average(),
        "metarag": ours,
        "peer": peer,
        "comparison": comparison,
    });
    write_json(args.out.as_deref(), &report)?;
    if app.json {
        print_json(&report)?;
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "metarag: {} passages, {tokens} tokens in {wall:.1} s wall{} = {:.0} tokens/s{}",
        passages.len(),
        cpu.map_or(String::new(), |c| format!(", {c:.1} CPU-s")),
        tokens as f64 / wall,
        cpu.map_or(String::new(), |c| format!(
            ", {:.0} tokens/CPU-s",
            tokens as f64 / c
        )),
    );
    if let Some(c) = &cosine {
        println!(
            "{} against f32: mean cosine {:.6}, lowest {:.6}, {} of {} passages below 0.999",
            embedder.precision(),
            c["mean"].as_f64().unwrap_or(f64::NAN),
            c["min"].as_f64().unwrap_or(f64::NAN),
            c["below_0_999"],
            passages.len()
        );
    }
    if let Some(c) = &comparison {
        println!(
            "peer:    {} tokens in {:.1} s wall, {:.1} CPU-s = {:.0} tokens/s, {:.0} tokens/CPU-s",
            c["peer_tokens"],
            c["peer_wall_s"],
            c["peer_cpu_s"],
            c["peer_tokens_per_s"],
            c["peer_tokens_per_cpu_s"],
        );
        println!(
            "ratio (metarag / peer): {:.2}x tokens/s, {}x tokens/CPU-s",
            c["ratio_tokens_per_s"].as_f64().unwrap_or(f64::NAN),
            c["ratio_tokens_per_cpu_s"]
                .as_f64()
                .map_or("?".into(), |r| format!("{r:.2}")),
        );
    }
    Ok(ExitCode::SUCCESS)
}
