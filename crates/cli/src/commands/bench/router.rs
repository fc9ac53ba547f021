//! `metarag bench router`: the intent classifiers against a labelled question set
//! (accuracy of the main intent, of the intent set, and of the memories chosen), and their
//! time per question.

use crate::app::App;
use crate::commands::context::RouterArg;
use crate::output::write_json;
use anyhow::{Context as _, Result, bail};
use clap::Args;
use metarag_eval::percentile;
use metarag_retrieve::router::DEFAULT_MARGIN;
use metarag_retrieve::router::{Intent, memories_for, merge_with_rules, rule_intents};
use metarag_retrieve::{EmbeddingRouter, Route};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(Args, Debug)]
pub struct RouterArgs {
    /// Labelled questions: JSONL of `{question, intents: [..]}`.
    #[arg(long, default_value = "docs/results/router/intents.jsonl")]
    labels: PathBuf,
    /// Classifiers to measure, comma-separated.
    #[arg(long, value_delimiter = ',', value_enum, default_value = "embedding")]
    router: Vec<RouterArg>,
    /// More questions (normalised QA JSONL) to time the classifiers on, unlabelled.
    #[arg(long)]
    timing_questions: Option<PathBuf>,
    /// How many of them.
    #[arg(long, default_value_t = 100)]
    timing_n: usize,
    /// Also write the JSON report here.
    #[arg(long)]
    out: Option<PathBuf>,
}

struct Labelled {
    question: String,
    intents: Vec<Intent>,
}

fn load(path: &PathBuf) -> Result<Vec<Labelled>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("{}", path.display()))?;
    let mut out = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let v: serde_json::Value = serde_json::from_str(line)
            .with_context(|| format!("{}:{}: not JSON", path.display(), i + 1))?;
        let question = v["question"].as_str().map(str::to_string);
        let intents: Option<Vec<Intent>> = v["intents"].as_array().and_then(|a| {
            a.iter()
                .map(|x| x.as_str().and_then(Intent::parse))
                .collect()
        });
        match (question, intents) {
            (Some(q), Some(i)) if !i.is_empty() => out.push(Labelled {
                question: q,
                intents: i,
            }),
            _ => bail!(
                "{}:{}: needs `question` and `intents` (factual, conceptual, comparative, procedural, temporal)",
                path.display(),
                i + 1
            ),
        }
    }
    Ok(out)
}

/// Scores of one classifier on the labelled set.
#[derive(Debug, Default, serde::Serialize)]
struct Score {
    questions: usize,
    main_intent: usize,
    intent_set: usize,
    memories: usize,
    ms: Vec<f64>,
}

impl Score {
    fn add(&mut self, route: &Route, gold: &[Intent]) {
        self.questions += 1;
        if route.intents.first().is_some_and(|i| gold.contains(i)) {
            self.main_intent += 1;
        }
        let set = |v: &[Intent]| v.iter().copied().collect::<BTreeSet<_>>();
        if set(&route.intents) == set(gold) {
            self.intent_set += 1;
        }
        if route.memories == memories_for(gold) {
            self.memories += 1;
        }
    }

    fn json(&self) -> serde_json::Value {
        let n = self.questions.max(1) as f64;
        serde_json::json!({
            "questions": self.questions,
            "main_intent_accuracy": self.main_intent as f64 / n,
            "intent_set_accuracy": self.intent_set as f64 / n,
            "memory_accuracy": self.memories as f64 / n,
            "timed": self.ms.len(),
            "ms_p50": percentile(&self.ms, 50.0),
            "ms_p95": percentile(&self.ms, 95.0),
        })
    }
}

/// Measures the classifiers.
pub async fn run(app: &App, args: RouterArgs) -> Result<ExitCode> {
    let labelled = load(&args.labels)?;
    let mut timing: Vec<String> = labelled.iter().map(|l| l.question.clone()).collect();
    if let Some(path) = &args.timing_questions {
        let qs = metarag_eval::load_dataset(path)?;
        timing.extend(qs.into_iter().take(args.timing_n).map(|q| q.question));
    }
    let mut report = serde_json::Map::new();
    // The cue words alone (factual where none fires): the floor both classifiers merge with.
    let mut rules = Score::default();
    for l in &labelled {
        let mut intents = rule_intents(&l.question);
        if intents.is_empty() {
            intents.push(Intent::Factual);
        }
        rules.add(
            &Route::new(
                intents,
                metarag_retrieve::RouteSource::Rules,
                Default::default(),
            ),
            &l.intents,
        );
    }
    report.insert("rules".into(), rules.json());
    for router in &args.router {
        let (mut alone, mut merged) = (Score::default(), Score::default());
        match router {
            RouterArg::Embedding => {
                let r = EmbeddingRouter::new(app.embedder()?, DEFAULT_MARGIN).await?;
                for l in &labelled {
                    let route = r.classify(&l.question).await?;
                    alone.add(&route, &l.intents);
                    merged.add(&merge_with_rules(&l.question, route), &l.intents);
                }
                for q in &timing {
                    let t = Instant::now();
                    let _ = merge_with_rules(q, r.classify(q).await?);
                    merged.ms.push(t.elapsed().as_secs_f64() * 1e3);
                }
                report.insert("embedding".into(), alone.json());
                report.insert("embedding+rules".into(), merged.json());
            }
            RouterArg::Llm => {
                let handle = app.llm(true, None).await?;
                for l in &labelled {
                    let t = Instant::now();
                    let route =
                        metarag_agent::router::classify_with_llm(&*handle.llm, &l.question).await?;
                    merged.ms.push(t.elapsed().as_secs_f64() * 1e3);
                    merged.add(&route, &l.intents);
                }
                report.insert("llm+rules".into(), merged.json());
            }
            // The cue words alone are scored above for every run.
            RouterArg::Rules => {}
        }
    }
    let json = serde_json::json!({
        "labels": args.labels,
        "timing_questions": timing.len(),
        "classifiers": report,
    });
    write_json(args.out.as_deref(), &json)?;
    println!("| classifier | main intent | intent set | memories | ms p50 | ms p95 | timed |");
    println!("|---|---|---|---|---|---|---|");
    for (name, v) in json["classifiers"].as_object().into_iter().flatten() {
        println!(
            "| {name} | {:.2} | {:.2} | {:.2} | {:.1} | {:.1} | {} |",
            v["main_intent_accuracy"].as_f64().unwrap_or(0.0),
            v["intent_set_accuracy"].as_f64().unwrap_or(0.0),
            v["memory_accuracy"].as_f64().unwrap_or(0.0),
            v["ms_p50"].as_f64().unwrap_or(0.0),
            v["ms_p95"].as_f64().unwrap_or(0.0),
            v["timed"],
        );
    }
    Ok(ExitCode::SUCCESS)
}
