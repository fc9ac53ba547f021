//! `metarag bench --dataset ...` (the QA benchmark) and `metarag bench report`.

use crate::app::{App, UserError};
use crate::output::print_json;
use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use metarag_agent::{Agent, StrategyId};
use metarag_core::Embedder;
use metarag_eval::qa::{Protocol, QuestionResult, RunConfig, run_all, sample_split};
use metarag_eval::report::{RECORD_VERSION, RunRecord, markdown, plots, summarize};
use metarag_eval::runs::Surface;
use metarag_eval::unanswerable::{filter_corpus, make_unanswerable};
use std::collections::{BTreeMap, HashSet};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

/// The evidence protocol.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ModeArg {
    /// The question's supporting paragraphs are the only sources.
    Gold,
    /// The data set's corpus is indexed; strategies retrieve from it.
    Open,
}

/// A share in `[0, 1]` (`--unanswerable 0.3`).
fn share_in_unit(s: &str) -> std::result::Result<f64, String> {
    let v: f64 = s
        .parse()
        .map_err(|e| format!("{s:?} is not a number: {e}"))?;
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{v} is not a share between 0 and 1"))
    }
}

/// `metarag bench --dataset ...`
#[derive(Args, Debug)]
pub struct QaArgs {
    /// hotpotqa, 2wikimultihopqa, musique (looked up in --data-dir), or a file: the
    /// normalised JSONL or the official HotpotQA / 2Wiki / MuSiQue dev files.
    #[arg(long)]
    pub dataset: Option<String>,
    /// gold or open.
    #[arg(long, value_enum, default_value = "gold")]
    pub mode: ModeArg,
    /// Questions to sample.
    #[arg(long, default_value_t = 100)]
    pub n: usize,
    /// Sampling seed.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Draw the n questions from one half of the data only (`reporting`: the half no
    /// weight or threshold was fitted on; `tuning`: where they are fitted). The same
    /// questions, in the same order, as that half of a run over both.
    #[arg(long, value_enum)]
    pub split: Option<SplitArg>,
    /// Make this share of the questions unanswerable (0.3 is CRAG's kind of mix): each
    /// drawn question (by a hash of its id) loses its supporting passages, from the indexed
    /// corpus in open mode and from its context in gold mode, and its gold becomes "no
    /// answer"; the report's truthfulness table scores withholding an answer there. A
    /// question whose file flags it `unanswerable` is one already.
    #[arg(long, value_parser = share_in_unit)]
    pub unanswerable: Option<f64>,
    /// When strategies may decline to answer: off (the papers' setting), on, or a monitor
    /// confidence (default: `agent.abstain`). Recorded with the run.
    #[arg(long, value_name = "off|on|CONFIDENCE")]
    pub abstain: Option<metarag_agent::Abstain>,
    /// Questions answered at the same time.
    #[arg(long, default_value_t = 1)]
    pub concurrency: usize,
    /// Strategies, comma-separated (direct, standard, metarag).
    #[arg(long, value_delimiter = ',', default_value = "metarag")]
    pub strategy: Vec<String>,
    /// Where results files and run records go.
    #[arg(long, default_value = "runs")]
    pub out: PathBuf,
    /// Where the data set names are looked up (default: ./data/qa, then the data/qa of the
    /// checkout this binary was built from, then ../shared/data/qa).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Open mode: the corpus (`{doc_id, title, text}` lines; default: the data set's
    /// `-corpus.jsonl` beside it).
    #[arg(long)]
    pub corpus: Option<PathBuf>,
    /// Run every call (the call cache is on by default, which also makes an interrupted
    /// run's repeats free).
    #[arg(long)]
    pub no_cache: bool,
    /// Start over instead of continuing the results file of the same experiment.
    #[arg(long)]
    pub fresh: bool,
    /// Chat model: an installed name or a .gguf file (default: `llm.model`).
    #[arg(long)]
    pub model: Option<String>,
    /// Most remediation rounds (default: `agent.max_rounds`).
    #[arg(long)]
    pub max_rounds: Option<usize>,
    /// Also score every answer with RAGAS-style metrics (faithfulness, answer relevancy,
    /// context precision and recall), judged by the chat model: about four more calls per
    /// answer.
    #[arg(long)]
    pub ragas: bool,
    /// Keep each question's search tree (strategies that build one: `mcts`) as
    /// `DIR/ID-STRATEGY.jsonl`, the format of `ask --save-tree`.
    #[arg(long, value_name = "DIR")]
    pub save_trees: Option<PathBuf>,
}

/// `metarag bench report`
#[derive(Args, Debug)]
pub struct ReportArgs {
    /// A run record (`runs/....json`).
    pub record: PathBuf,
    /// Another run record to compare with.
    #[arg(long)]
    pub compare: Option<PathBuf>,
    /// Directory for the markdown and SVG files (default: beside the record).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Report only one split of the questions (`tuning` or `reporting`: the FNV-1a hash of
    /// the id, even or odd, a quarter held out of both as `final`), e.g. the half no weight
    /// or threshold was fitted on.
    #[arg(long, value_enum)]
    pub split: Option<SplitArg>,
    /// Score the answers not scored yet with RAGAS-style metrics and keep the scores in
    /// the record (about four judge calls per answer, through the call cache).
    #[arg(long)]
    pub ragas: bool,
    /// The judge of `--ragas`: an installed name or a .gguf file (default: `llm.model`).
    #[arg(long)]
    pub judge_model: Option<String>,
}

/// A half of the dev questions.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum SplitArg {
    /// Where weights and thresholds are fitted.
    Tuning,
    /// Where results are reported.
    Reporting,
    /// Held out of both: read once, at the end of a piece of work.
    Final,
}

impl SplitArg {
    pub fn split(self) -> metarag_eval::monitor::Split {
        match self {
            SplitArg::Tuning => metarag_eval::monitor::Split::Tune,
            SplitArg::Reporting => metarag_eval::monitor::Split::Report,
            SplitArg::Final => metarag_eval::monitor::Split::Final,
        }
    }
}

/// `metarag bench monitor`.
#[derive(Args, Debug)]
pub struct MonitorArgs {
    /// Run records (`runs/....json`) whose traces the monitor assessed, or the results
    /// file of a run in progress (`runs/....jsonl`).
    #[arg(required = true)]
    pub records: Vec<PathBuf>,
    /// The strategy whose first answers to read.
    #[arg(long, default_value = "metarag")]
    pub strategy: String,
    /// Fit the monitor's weights and threshold on the tuning half and report them on the
    /// reporting half.
    #[arg(long)]
    pub fit: bool,
    /// Features the fit may use (default: every signal).
    #[arg(long, value_delimiter = ',')]
    pub features: Vec<String>,
    /// Write the fitted model here as a `[strategies.metarag.monitor]` TOML section
    /// (`monitor_open` when every record is open-domain).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// Where a named data set is looked up without `--data-dir`: `./data/qa` (a checkout's root),
/// the `data/qa` of the checkout this binary was built from (so `metarag bench --dataset
/// hotpotqa` works from any folder after `cargo install --path crates/cli`), then the project's
/// optional `../shared/data/qa`.
fn default_data_dirs() -> Vec<PathBuf> {
    let built_from = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/qa");
    let mut dirs = vec![PathBuf::from("data/qa")];
    if let Ok(d) = built_from.canonicalize() {
        dirs.push(d);
    }
    dirs.push("../shared/data/qa".into());
    dirs
}

fn resolve_dataset(name: &str, data_dir: Option<&Path>) -> Result<PathBuf> {
    let as_path = PathBuf::from(name);
    if as_path.is_file() {
        return Ok(as_path);
    }
    let known = ["hotpotqa", "2wikimultihopqa", "musique"];
    if !known.contains(&name) {
        return Err(UserError(format!(
            "--dataset {name}: no such file, and not one of {}",
            known.join(", ")
        ))
        .into());
    }
    let dirs: Vec<PathBuf> = match data_dir {
        Some(d) => vec![d.to_path_buf()],
        None => default_data_dirs(),
    };
    for d in &dirs {
        let f = d.join(format!("{name}-dev.jsonl"));
        if f.is_file() {
            return Ok(f);
        }
    }
    Err(UserError(format!(
        "--dataset {name}: no {name}-dev.jsonl in {}; pass --data-dir or a file",
        dirs.iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(" or ")
    ))
    .into())
}

/// The commit the binary was built from (`build.rs` embeds it, with `-dirty` when tracked
/// files differed from it), so a record names the code that produced it wherever the binary
/// runs; `None` for a build outside a git checkout.
fn git_commit() -> Option<String> {
    option_env!("METARAG_GIT_COMMIT")
        .filter(|c| !c.is_empty())
        .map(str::to_string)
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The header line of a results file.
#[derive(serde::Serialize, serde::Deserialize)]
struct Header {
    config: RunConfig,
    started_at: u64,
    /// The code that wrote the results so far (older files lack it).
    #[serde(default)]
    git_commit: Option<String>,
}

/// Reads a results file: its header and every complete result line (a line cut short by
/// an interruption is ignored, and that question runs again).
fn read_results(path: &Path) -> Result<(Header, Vec<QuestionResult>)> {
    let file = std::fs::File::open(path).with_context(|| format!("{}", path.display()))?;
    let mut lines = std::io::BufReader::new(file).lines();
    let header: Header = match lines.next() {
        Some(l) => serde_json::from_str(&l?)
            .map_err(|e| UserError(format!("{}: not a results file: {e}", path.display())))?,
        None => return Err(UserError(format!("{}: empty results file", path.display())).into()),
    };
    let mut results = Vec::new();
    for line in lines {
        let line = line?;
        if let Ok(r) = serde_json::from_str::<QuestionResult>(&line) {
            results.push(r);
        }
    }
    Ok((header, results))
}

/// A run record, or the results file of a run still in progress (`.jsonl`: its header
/// and the results so far, without a summary).
fn record_or_results(path: &Path) -> Result<RunRecord> {
    if path.extension().is_some_and(|e| e == "jsonl") {
        let (header, results) = read_results(path)?;
        return Ok(RunRecord {
            version: RECORD_VERSION,
            config: header.config,
            command: String::new(),
            git_commit: header.git_commit,
            earlier_commits: Vec::new(),
            started_at: header.started_at,
            finished_at: header.started_at,
            summary: Vec::new(),
            results,
        });
    }
    Ok(RunRecord::load(path)?)
}

/// `metarag bench --dataset ...`
pub async fn run(app: &App, args: QaArgs) -> Result<ExitCode> {
    let name = args.dataset.as_deref().ok_or_else(|| {
        UserError(
            "bench: give --dataset NAME|FILE, or a subcommand (retrieval, llm, rerank, report)"
                .into(),
        )
    })?;
    let path = resolve_dataset(name, args.data_dir.as_deref())?;
    let records = metarag_eval::load_dataset(&path)?;
    if records.is_empty() {
        return Err(UserError(format!("{}: no questions", path.display())).into());
    }
    let dataset = records
        .iter()
        .map(|r| r.dataset.clone())
        .find(|d| !d.is_empty())
        .unwrap_or_else(|| {
            path.file_stem()
                .map_or_else(|| "dataset".into(), |s| s.to_string_lossy().into_owned())
        });
    let split = args.split.map(SplitArg::split);
    let questions = sample_split(records, args.n, args.seed, split);
    let mut removal = make_unanswerable(questions, args.unanswerable.unwrap_or(0.0));
    if args.unanswerable.is_some() {
        eprintln!(
            "{} of {} questions unanswerable ({} drawn but left answerable: another question needs their passages, or they name none); {} passage titles removed",
            removal.count(),
            removal.questions.len(),
            removal.kept,
            removal.removed.len()
        );
    }
    let questions = std::mem::take(&mut removal.questions);
    let registry = app.registry()?;
    let strategies: Vec<StrategyId> =
        registry.parse_list(args.strategy.iter().map(String::as_str))?;
    let protocol = match args.mode {
        ModeArg::Gold => Protocol::Gold,
        ModeArg::Open => Protocol::Open,
    };
    let mut agent_config = app.config.raw.agent.clone();
    if let Some(r) = args.max_rounds {
        agent_config.max_rounds = r;
    }
    if let Some(a) = args.abstain {
        agent_config.abstain = a;
    }
    let handle = app.llm(!args.no_cache, args.model.as_deref()).await?;
    let model = metarag_core::Llm::model_id(&handle.llm).to_string();
    let mut builder = handle
        .with_roles(Agent::builder(handle.llm.clone()))
        .config(agent_config.clone())
        .registry(registry);
    let mut embedder_id = None;
    if protocol == Protocol::Open {
        let corpus = match &args.corpus {
            Some(c) => c.clone(),
            None => {
                let c = path.with_file_name(format!("{dataset}-corpus.jsonl"));
                if !c.is_file() {
                    return Err(UserError(format!(
                        "open mode needs the corpus: no {} (pass --corpus FILE)",
                        c.display()
                    ))
                    .into());
                }
                c
            }
        };
        // Without the removed passages: a corpus of its own, so its own index.
        let corpus = if removal.removed.is_empty() {
            corpus
        } else {
            let stem = corpus
                .file_stem()
                .map_or_else(|| "corpus".into(), |s| s.to_string_lossy().into_owned());
            let dir = app.config.home.join("bench");
            std::fs::create_dir_all(&dir)?;
            let out = dir.join(format!("{stem}-{}.jsonl", removal.corpus_tag()));
            if !out.is_file() {
                let dropped = filter_corpus(&corpus, &removal.removed, &out)?;
                eprintln!(
                    "{}: {dropped} passages removed from {}",
                    out.display(),
                    corpus.display()
                );
            }
            out
        };
        let embedder = app.embedder()?;
        embedder_id = Some(embedder.model_id().to_string());
        let (dir, _) = crate::bench::corpus_index_to_search(app, &corpus, None, &embedder).await?;
        let index = app.open_index_for_reading(&dir, &embedder)?;
        builder = builder
            .embedder(Arc::new(embedder.clone()))
            .retriever(Arc::new(metarag_retrieve::HybridRetriever::new(
                embedder,
                index,
                app.config.retrieval(),
            )));
        if let Some(r) = app.reranker(handle.local.as_ref())? {
            builder = builder.reranker(r);
        }
    }
    let agent = builder.build()?;
    let config = RunConfig {
        dataset: dataset.clone(),
        dataset_path: path.display().to_string(),
        protocol,
        n: questions.len(),
        seed: args.seed,
        split,
        unanswerable: args.unanswerable,
        strategies: strategies.clone(),
        model: model.clone(),
        embedder: embedder_id,
        agent: agent_config,
        cache: !args.no_cache,
        strategy_settings: strategies
            .iter()
            .filter_map(|s| agent.registry().get(s.as_str()).ok())
            .map(|s| (s.name().to_string(), s.config_json()))
            .collect(),
        roles: app
            .config
            .raw
            .roles
            .iter()
            .map(|(role, raw)| {
                (
                    role.to_string(),
                    serde_json::to_value(raw).unwrap_or(serde_json::Value::Null),
                )
            })
            .collect(),
    };

    // The results file of this experiment: continued unless --fresh.
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let stem: String = format!(
        "{dataset}-{}-{}-{model}-n{}-s{}{}{}",
        protocol.as_str(),
        strategies
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("+"),
        questions.len(),
        args.seed,
        split.map_or(String::new(), |s| format!("-{}", s.as_str())),
        // A run with unanswerable questions is another experiment: never resumed as one
        // without them.
        args.unanswerable
            .map_or(String::new(), |u| format!("-unanswerable{:.0}", u * 100.0))
    )
    .chars()
    .map(|c| {
        if c.is_alphanumeric() || "-+._".contains(c) {
            c
        } else {
            '_'
        }
    })
    .collect();
    let results_path = args.out.join(format!("{stem}.jsonl"));
    let mut earlier_commits = Vec::new();
    let record_path = args.out.join(format!("{stem}.json"));
    let (started_at, mut results) = if results_path.is_file() && !args.fresh {
        let (header, results) = read_results(&results_path)?;
        if !header.config.same_experiment(&config) {
            return Err(UserError(format!(
                "{} holds a run with other settings; pass --fresh to start over or --out another directory",
                results_path.display()
            ))
            .into());
        }
        let now_commit = git_commit();
        if header.git_commit != now_commit {
            let before = header
                .git_commit
                .clone()
                .unwrap_or_else(|| "unknown".into());
            eprintln!(
                "warning: the results so far were written by commit {before}, this is {}; the record lists both",
                now_commit.as_deref().unwrap_or("unknown")
            );
            earlier_commits.push(before);
        }
        (header.started_at, results)
    } else {
        let header = Header {
            config: config.clone(),
            started_at: now(),
            git_commit: git_commit(),
        };
        std::fs::write(
            &results_path,
            format!("{}\n", serde_json::to_string(&header)?),
        )
        .with_context(|| format!("writing {}", results_path.display()))?;
        (header.started_at, Vec::new())
    };
    let wanted: HashSet<(String, StrategyId)> = questions
        .iter()
        .flat_map(|q| strategies.iter().map(move |s| (q.id.clone(), s.clone())))
        .collect();
    results.retain(|r| wanted.contains(&r.key()));
    let done: HashSet<(String, StrategyId)> = results.iter().map(QuestionResult::key).collect();
    let total = (questions.len() * strategies.len()) as u64;
    if !done.is_empty() {
        eprintln!(
            "continuing {}: {} of {total} done",
            results_path.display(),
            done.len()
        );
    }

    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} {elapsed_precise} eta {eta} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_position(done.len() as u64);
    let mut running: BTreeMap<String, (f64, f64, usize)> = BTreeMap::new();
    for r in &results {
        let e = running.entry(r.strategy.to_string()).or_default();
        e.0 += r.scores.em;
        e.1 += r.scores.f1;
        e.2 += 1;
    }
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&results_path)
        .with_context(|| format!("opening {}", results_path.display()))?;
    let mut write_error = None;
    let run_log = match app.local_run_log() {
        Ok(log) => Some(log),
        Err(e) => {
            eprintln!("warning: benchmark runs will not be in the run log: {e:#}");
            None
        }
    };
    let price = app.config.price();
    let mut log_error: Option<metarag_eval::Error> = None;
    run_all(
        &agent,
        &questions,
        &strategies,
        protocol,
        args.concurrency,
        &done,
        |r| {
            // The run log gets every benchmark answer too (`metarag runs --surface
            // bench`); it is a record beside the results file, so a failure to write
            // it is reported once and the benchmark goes on.
            if let (Some(log), Some(trace)) = (&run_log, &r.trace)
                && let Err(e) = log.record(trace, Surface::Bench, 0.0, price)
            {
                log_error.get_or_insert(e);
            }
            let line = serde_json::to_string(&r).unwrap_or_default();
            if let Err(e) = writeln!(file, "{line}").and_then(|_| file.flush()) {
                write_error.get_or_insert(e);
            }
            if let (Some(dir), Some(trace)) = (&args.save_trees, &r.trace)
                && let Err(e) = crate::commands::ask::save_tree_in(trace, dir, &r.id)
            {
                write_error.get_or_insert(e);
            }
            let e = running.entry(r.strategy.to_string()).or_default();
            e.0 += r.scores.em;
            e.1 += r.scores.f1;
            e.2 += 1;
            bar.set_message(
                running
                    .iter()
                    .map(|(s, (em, f1, n))| {
                        format!(
                            "{s} EM {:.1} F1 {:.1}",
                            em / *n as f64 * 100.0,
                            f1 / *n as f64 * 100.0
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(" | "),
            );
            bar.inc(1);
            results.push(r);
        },
    )
    .await;
    bar.finish_and_clear();
    if let Some(e) = log_error {
        eprintln!("warning: some benchmark runs are not in the run log: {e}");
    }
    if let Some(e) = write_error {
        return Err(anyhow::anyhow!("writing {}: {e}", results_path.display()));
    }

    // Report order: strategy, then sample order.
    let order: BTreeMap<&str, usize> = questions
        .iter()
        .enumerate()
        .map(|(i, q)| (q.id.as_str(), i))
        .collect();
    let sidx = |s: &StrategyId| strategies.iter().position(|x| x == s).unwrap_or(0);
    results.sort_by_key(|r| {
        (
            sidx(&r.strategy),
            order.get(r.id.as_str()).copied().unwrap_or(0),
        )
    });
    if args.ragas {
        let judge = metarag_eval::ragas::Judge {
            llm: handle.llm.clone(),
            embedder: Some(Arc::new(app.embedder()?)),
        };
        let scored = add_ragas(&judge, &mut results).await;
        eprintln!("RAGAS: {scored} answers scored by {}", judge.llm.model_id());
    }
    let summary = summarize(&strategies, &results, config.agent.max_rounds);
    let record = RunRecord {
        version: RECORD_VERSION,
        config,
        command: std::env::args().collect::<Vec<_>>().join(" "),
        git_commit: git_commit(),
        earlier_commits,
        started_at,
        finished_at: now(),
        summary,
        results,
    };
    std::fs::write(&record_path, serde_json::to_string(&record)?)
        .with_context(|| format!("writing {}", record_path.display()))?;
    if app.json {
        print_json(&serde_json::json!({"record": record_path, "summary": record.summary}))?;
    } else {
        let md = markdown(&record, None, &[]);
        // The answers table, and where the full report comes from.
        if let Some(table) = md
            .split("## Answers")
            .nth(1)
            .and_then(|t| t.split("\n## ").next())
        {
            println!("{}", table.trim());
        }
        println!("\nrun record: {}", record_path.display());
        println!("report:     metarag bench report {}", record_path.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// `metarag bench report`
pub fn monitor(app: &App, args: MonitorArgs) -> Result<ExitCode> {
    use metarag_eval::monitor;
    let records = args
        .records
        .iter()
        .map(|p| record_or_results(p))
        .collect::<Result<Vec<_>>>()?;
    let mut tables = Vec::new();
    for r in &records {
        for t in monitor::tables(r, &args.strategy) {
            tables.push((
                format!("{} {}", r.config.dataset, r.config.protocol.as_str()),
                t,
            ));
        }
    }
    if tables.is_empty() {
        return Err(UserError(format!(
            "no first answer of `{}` in these records was assessed by a monitor or gate",
            args.strategy
        ))
        .into());
    }
    let fit = if args.fit {
        let known = metarag_agent::monitor::FEATURES;
        for f in &args.features {
            if !known.contains(&f.as_str()) {
                return Err(UserError(format!(
                    "--features {f}: unknown (known: {})",
                    known.join(", ")
                ))
                .into());
            }
        }
        let features: Vec<&str> = if args.features.is_empty() {
            known.to_vec()
        } else {
            args.features.iter().map(String::as_str).collect()
        };
        Some(monitor::fit(&records, &args.strategy, &features))
    } else {
        None
    };
    if let (Some(fit), Some(out)) = (&fit, &args.out) {
        // Records over an index fit the open-domain monitor.
        let open = records.iter().all(|r| r.config.protocol == Protocol::Open);
        let key = if open { "monitor_open" } else { "monitor" };
        let section = serde_json::json!({"strategies": {"metarag": {key: fit.model}}});
        let text = toml::to_string_pretty(&section).context("the fitted model as TOML")?;
        std::fs::write(out, text).with_context(|| format!("writing {}", out.display()))?;
    }
    if app.json {
        print_json(&serde_json::json!({
            "tables": tables.iter().map(|(run, t)| serde_json::json!({"run": run, "table": t})).collect::<Vec<_>>(),
            "fit": fit.as_ref().map(|f| serde_json::json!({
                "model": f.model, "tune_n": f.tune_n, "report_n": f.report_n,
                "tune_auroc": f.tune_auroc, "report_auroc": f.report_auroc,
                "report_accuracy": f.report_accuracy, "by_record": f.by_record,
            })),
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    let f = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.2}"));
    println!("| run | half | n | right | gate AUROC | with the checks | gate accuracy | passed |");
    println!("|---|---|---|---|---|---|---|---|");
    for (run, t) in &tables {
        println!(
            "| {run} | {} | {} | {:.0}% | {} | {} | {} | {} |",
            t.split.as_str(),
            t.n,
            t.right_rate * 100.0,
            monitor::with_interval(t.combined, t.combined_interval),
            monitor::with_interval(t.with_checks, t.with_checks_interval),
            f(t.gate_accuracy),
            f(t.pass_rate)
        );
    }
    println!("\n| run | half | signal | AUROC |\n|---|---|---|---|");
    for (run, t) in &tables {
        for (name, a) in &t.signals {
            println!("| {run} | {} | {name} | {} |", t.split.as_str(), f(*a));
        }
    }
    if let Some(fit) = &fit {
        println!(
            "\nfitted on {} tuning answers (AUROC there {}), threshold {:.3}; on {} reporting answers: AUROC {}, gate accuracy {}",
            fit.tune_n,
            f(fit.tune_auroc),
            fit.model.threshold,
            fit.report_n,
            f(fit.report_auroc),
            f(fit.report_accuracy)
        );
        if !fit.by_record.is_empty() {
            println!(
                "\n| record (reporting half) | n | AUROC | with the checks | gate accuracy |\n|---|---|---|---|---|"
            );
            for r in &fit.by_record {
                println!(
                    "| {} | {} | {} | {} | {} |",
                    r.run,
                    r.n,
                    f(r.auroc),
                    f(r.with_checks),
                    f(r.accuracy)
                );
            }
        }
        println!("bias {:.4}", fit.model.bias);
        for (name, w) in &fit.model.weights {
            println!(
                "  {name}: weight {:.4}, mean {:.4}, scale {:.4}",
                w.weight, w.mean, w.scale
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `metarag bench judge`
#[derive(Args, Debug)]
pub struct JudgeArgs {
    /// A run record (`runs/....json`); the verdicts are kept in it.
    pub record: PathBuf,
    /// The judge: an installed name or a .gguf file (default: `llm.model`).
    #[arg(long)]
    pub model: Option<String>,
    /// Answers labelled by hand (JSONL of `{id, strategy, correct, reason}`): report how
    /// often the judge, EM and F1 >= 0.5 agree with them.
    #[arg(long)]
    pub labels: Option<PathBuf>,
}

/// Judges every answer of a record not judged yet by this model, keeps the verdicts in the
/// record, prints the judged accuracy per strategy and, with labels, the agreement.
pub async fn judge(app: &App, args: JudgeArgs) -> Result<ExitCode> {
    let mut record = RunRecord::load(&args.record)?;
    let labels: Vec<metarag_eval::judge::Label> = match &args.labels {
        None => Vec::new(),
        Some(path) => std::fs::read_to_string(path)
            .with_context(|| format!("reading {}", path.display()))?
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| {
                serde_json::from_str(l).map_err(|e| {
                    UserError(format!("{}:{}: not a label: {e}", path.display(), i + 1))
                })
            })
            .collect::<std::result::Result<_, _>>()?,
    };
    let handle = app.llm(true, args.model.as_deref()).await?;
    let model = metarag_core::Llm::model_id(&handle.llm).to_string();
    let todo: Vec<usize> = (0..record.results.len())
        .filter(|&i| {
            record.results[i]
                .judge
                .as_ref()
                .is_none_or(|v| v.model != model)
        })
        .collect();
    let bar = ProgressBar::new(todo.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("judging {bar:30} {pos}/{len} {elapsed} (eta {eta})")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    for i in todo {
        record.results[i].judge =
            metarag_eval::judge::judge(&*handle.llm, &record.results[i]).await;
        bar.inc(1);
    }
    bar.finish_and_clear();
    std::fs::write(&args.record, serde_json::to_string(&record)?)
        .with_context(|| format!("writing {}", args.record.display()))?;
    let summary = summarize(
        &record.config.strategies,
        &record.results,
        record.config.agent.max_rounds,
    );
    let agreement =
        (!labels.is_empty()).then(|| metarag_eval::judge::agreement(&record.results, &labels));
    if app.json {
        let per: Vec<_> = summary
            .iter()
            .map(|s| serde_json::json!({"strategy": s.strategy, "judge": s.judge, "em": s.em.mean, "f1": s.f1.mean}))
            .collect();
        print_json(
            &serde_json::json!({"model": model, "strategies": per, "agreement": agreement}),
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    println!("judge: {model}");
    for s in &summary {
        if let Some((acc, _, n)) = &s.judge {
            println!(
                "{:<12} judged {n:>4}  correct {:>5.1}%  (EM {:.1}%, F1 {:.1}%)",
                s.strategy,
                acc * 100.0,
                s.em.mean * 100.0,
                s.f1.mean * 100.0
            );
        }
    }
    if let Some(a) = agreement {
        println!(
            "agreement with {} hand labels: judge {:.1}% (of {} judged), EM {:.1}%, F1 >= 0.5 {:.1}%",
            a.n,
            a.judge * 100.0,
            a.judged,
            a.em * 100.0,
            a.f1_half * 100.0
        );
        for (id, strategy, label) in &a.judge_misses {
            println!(
                "  judge disagrees: {id} {strategy} (labelled {})",
                if *label { "correct" } else { "wrong" }
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Scores the results not scored yet with the RAGAS-style metrics of `judge`; returns
/// how many were scored.
async fn add_ragas(judge: &metarag_eval::ragas::Judge, results: &mut [QuestionResult]) -> usize {
    let todo: Vec<usize> = (0..results.len())
        .filter(|&i| results[i].ragas.is_none() && results[i].trace.is_some())
        .collect();
    let bar = ProgressBar::new(todo.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("RAGAS {bar:30} {pos}/{len} {elapsed} (eta {eta})")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut scored = 0;
    for i in todo {
        results[i].ragas = metarag_eval::ragas::score(judge, &results[i]).await;
        scored += usize::from(results[i].ragas.is_some());
        bar.inc(1);
    }
    bar.finish_and_clear();
    scored
}

/// The RAGAS judge: the configured chat model (or `model`) behind the call cache, and the
/// configured embedder for answer relevancy.
async fn ragas_judge(app: &App, model: Option<&str>) -> Result<metarag_eval::ragas::Judge> {
    let handle = app.llm(true, model).await?;
    let embedder: Arc<dyn metarag_core::DynEmbedder> = Arc::new(app.embedder()?);
    Ok(metarag_eval::ragas::Judge {
        llm: handle.llm,
        embedder: Some(embedder),
    })
}

/// Turns a run record (or a results file) into its markdown report and plots.
pub async fn report(app: &App, args: ReportArgs) -> Result<ExitCode> {
    if args.ragas {
        let mut record = RunRecord::load(&args.record)?;
        let judge = ragas_judge(app, args.judge_model.as_deref()).await?;
        let scored = add_ragas(&judge, &mut record.results).await;
        // The scores stay in the record: a later report does not pay for them again.
        std::fs::write(&args.record, serde_json::to_string(&record)?)
            .with_context(|| format!("writing {}", args.record.display()))?;
        eprintln!("RAGAS: {scored} answers scored by {}", judge.llm.model_id());
    }
    // The summaries are recomputed from the per-question results, so a report made
    // with newer code shows the newer statistics of the same answers.
    let split = args.split.map(SplitArg::split);
    let resummarize = |mut r: RunRecord| {
        if let Some(split) = split {
            r.results
                .retain(|q| metarag_eval::monitor::split_of(&q.id) == split);
        }
        r.summary = summarize(&r.config.strategies, &r.results, r.config.agent.max_rounds);
        r
    };
    let record = resummarize(RunRecord::load(&args.record)?);
    let compare = args
        .compare
        .as_deref()
        .map(RunRecord::load)
        .transpose()?
        .map(resummarize);
    let dir = args.out.clone().unwrap_or_else(|| {
        args.record
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
    });
    let stem = args
        .record
        .file_stem()
        .map_or_else(|| "run".into(), |s| s.to_string_lossy().into_owned());
    let stem = match split {
        Some(s) => format!("{stem}-{}", s.as_str()),
        None => stem,
    };
    let svgs = plots(&record, &dir, &stem)?;
    let names: Vec<String> = svgs
        .iter()
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    let mut md = markdown(&record, compare.as_ref(), &names);
    if let Some(split) = split {
        let at = md.find('\n').map_or(0, |i| i + 1);
        md.insert_str(
            at,
            &format!(
                "\n> The {} half of the questions only ({} of them; halves by the FNV-1a hash of the question id).\n",
                split.as_str(),
                record.results.len() / record.config.strategies.len().max(1)
            ),
        );
    }
    let md_path = dir.join(format!("{stem}.md"));
    std::fs::write(&md_path, &md).with_context(|| format!("writing {}", md_path.display()))?;
    if app.json {
        print_json(&serde_json::json!({"report": md_path, "plots": svgs}))?;
    } else {
        println!("{}", md_path.display());
        for p in &svgs {
            println!("{}", p.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tests run in the crate's folder, where no `./data/qa` is: the names resolve to the
    /// data that ships in the checkout the binary was built from.
    #[test]
    fn named_data_sets_resolve_to_the_checkouts_data_from_any_folder() {
        for name in ["hotpotqa", "2wikimultihopqa", "musique"] {
            let path = resolve_dataset(name, None).unwrap();
            assert!(
                path.ends_with(format!("data/qa/{name}-dev.jsonl")),
                "{path:?}"
            );
            assert!(
                path.with_file_name(format!("{name}-corpus.jsonl"))
                    .is_file()
            );
        }
        let empty = tempfile::tempdir().unwrap();
        let err = resolve_dataset("hotpotqa", Some(empty.path()))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("no hotpotqa-dev.jsonl in") && err.contains("--data-dir"),
            "{err}"
        );
        assert!(resolve_dataset("squad", None).is_err());
    }
}
