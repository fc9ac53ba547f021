//! `metarag bench injection`: the prompt-injection screens against labelled sets of
//! attacks and benign look-alikes: the patterns, the model screen, and either of them
//! (what `agent.injection_screen = "model"` runs).

use crate::app::{App, UserError};
use crate::output::print_json;
use anyhow::{Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use metarag_agent::injection::{self, Counts, Label, Labelled};
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;

/// `metarag bench injection SET.jsonl...`.
#[derive(Args, Debug)]
pub struct InjectionArgs {
    /// Labelled sets, JSONL of `{"label": "attack"|"benign", "text": ..., "class"?: ...}`
    /// (the project's are `crates/agent/tests/fixtures/injection-*.jsonl`).
    #[arg(required = true)]
    pub sets: Vec<PathBuf>,
    /// The screening model: an installed name or a .gguf file (default: `llm.model`).
    #[arg(long)]
    pub model: Option<String>,
    /// Measure the patterns only (no model is loaded).
    #[arg(long)]
    pub patterns_only: bool,
    /// Flag a passage when the model's probability that it holds instructions aimed at the
    /// model is at least this (default: `agent.injection_threshold`).
    #[arg(long)]
    pub threshold: Option<f64>,
    /// Write every passage's verdicts here (JSON).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// One passage's verdicts.
#[derive(Debug, Serialize)]
struct Row {
    label: Label,
    #[serde(skip_serializing_if = "Option::is_none")]
    class: Option<String>,
    text: String,
    patterns: bool,
    /// The model's probability that the passage holds instructions aimed at it; `None`:
    /// not asked, or no verdict (a failed call or reply).
    model: Option<f64>,
}

/// One set's results.
#[derive(Debug, Serialize)]
struct SetResult {
    set: String,
    patterns: Counts,
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<Counts>,
    #[serde(skip_serializing_if = "Option::is_none")]
    either: Option<Counts>,
    rows: Vec<Row>,
}

/// Runs both screens on every set, prints recall and precision per set and detector, and
/// lists what the combined screen missed and flagged.
pub async fn run(app: &App, args: InjectionArgs) -> Result<ExitCode> {
    // Checked before any file is read or model loaded.
    let threshold = args
        .threshold
        .unwrap_or(app.config.raw.agent.injection_threshold);
    if !(0.0..=1.0).contains(&threshold) {
        return Err(UserError(format!("--threshold {threshold} is not in [0, 1]")).into());
    }
    let mut sets: Vec<(String, Vec<Labelled>)> = Vec::new();
    for path in &args.sets {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let set = injection::parse_set(&text)
            .map_err(|e| UserError(format!("{}: {e}", path.display())))?;
        if set.is_empty() {
            return Err(UserError(format!("{}: no labelled passages", path.display())).into());
        }
        sets.push((path.display().to_string(), set));
    }
    let handle = if args.patterns_only {
        None
    } else {
        Some(app.llm(true, args.model.as_deref()).await?)
    };
    let model = handle
        .as_ref()
        .map(|h| metarag_core::Llm::model_id(&h.llm).to_string());
    let total: usize = sets.iter().map(|(_, s)| s.len()).sum();
    let bar = ProgressBar::new(if handle.is_some() { total as u64 } else { 0 });
    bar.set_style(
        ProgressStyle::with_template("screening {bar:30} {pos}/{len} {elapsed} (eta {eta})")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut results = Vec::new();
    for (name, set) in sets {
        let mut rows = Vec::with_capacity(set.len());
        for p in &set {
            let verdict = match &handle {
                Some(h) => {
                    let v = injection::ask(&*h.llm, &p.text).await;
                    bar.inc(1);
                    v
                }
                None => None,
            };
            rows.push(Row {
                label: p.label,
                class: p.class.clone(),
                text: p.text.clone(),
                patterns: injection::looks_like_injection(&p.text),
                model: verdict,
            });
        }
        let flags = |f: &dyn Fn(&Row) -> Option<bool>| rows.iter().map(f).collect::<Vec<_>>();
        let patterns = Counts::of(&set, &flags(&|r| Some(r.patterns)));
        let (model_counts, either) = if handle.is_some() {
            (
                Some(Counts::of(
                    &set,
                    &flags(&|r| r.model.map(|p| p >= threshold)),
                )),
                Some(Counts::of(
                    &set,
                    &flags(&|r| Some(r.patterns || r.model.is_some_and(|p| p >= threshold))),
                )),
            )
        } else {
            (None, None)
        };
        results.push(SetResult {
            set: name,
            patterns,
            model: model_counts,
            either,
            rows,
        });
    }
    bar.finish_and_clear();
    let record = serde_json::json!({"model": model, "threshold": threshold, "sets": results});
    if let Some(out) = &args.out {
        std::fs::write(out, serde_json::to_string_pretty(&record)?)
            .with_context(|| format!("writing {}", out.display()))?;
    }
    if app.json {
        print_json(&record)?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(m) = &model {
        println!("model screen: {m}, flags at probability >= {threshold}");
    }
    println!(
        "{:<44} {:<9} {:>8} {:>8} {:>7} {:>9} {:>9}",
        "set", "screen", "caught", "flagged", "recall", "precision", "undecided"
    );
    for r in &results {
        let rows = [
            ("patterns", Some(r.patterns)),
            ("model", r.model),
            ("either", r.either),
        ];
        for (screen, c) in rows {
            let Some(c) = c else { continue };
            // A set without attacks measures false alarms only.
            let (recall, precision) = if c.attacks == 0 {
                ("-".to_string(), "-".to_string())
            } else {
                (
                    format!("{:.2}", c.recall()),
                    format!("{:.2}", c.precision()),
                )
            };
            println!(
                "{:<44} {screen:<9} {:>4}/{:<3} {:>4}/{:<3} {recall:>7} {precision:>9} {:>9}",
                short(&r.set),
                c.caught,
                c.attacks,
                c.false_alarms,
                c.benign,
                c.undecided
            );
        }
    }
    if handle.is_some() {
        for r in &results {
            for row in &r.rows {
                let flagged = row.patterns || row.model.is_some_and(|p| p >= threshold);
                let wrong = match row.label {
                    Label::Attack => !flagged,
                    Label::Benign => flagged,
                };
                if wrong {
                    let what = if row.label == Label::Attack {
                        "missed"
                    } else {
                        "flagged"
                    };
                    let p = row.model.map_or("-".to_string(), |p| format!("{p:.2}"));
                    println!("{what} ({}, p {p}): {}", short(&r.set), row.text);
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A set's file name without its directories.
fn short(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}
