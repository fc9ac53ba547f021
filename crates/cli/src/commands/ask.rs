//! `metarag ask`: answer a question with a strategy, show progress per node, print the
//! answer with its numbered sources, or the whole trace.

use crate::app::{App, UserError};
use crate::output::{print_json, truncate};
use anyhow::Result;
use clap::Args as ClapArgs;
use indicatif::{ProgressBar, ProgressStyle};
use metarag_agent::verify::citations;
use metarag_agent::{Agent, Ask, Passage, Progress, Trace};
use metarag_eval::runs::Surface;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// `metarag ask`
#[derive(ClapArgs, Debug)]
pub struct Args {
    /// The question.
    pub question: String,
    /// A registered strategy (`metarag strategies` lists them).
    #[arg(long, default_value = "metarag")]
    pub strategy: String,
    /// Print the answer, then the trace in readable form (nodes, rounds, diagnosis).
    #[arg(long)]
    pub trace: bool,
    /// Gold-context mode: these paragraphs (JSONL or JSON of `{title, text}`, or a QA
    /// record with `contexts`) are the only sources; nothing is retrieved.
    #[arg(long, value_name = "FILE")]
    pub context: Option<PathBuf>,
    /// Chat model: an installed name or a .gguf file (default: `llm.model`).
    #[arg(long)]
    pub model: Option<String>,
    /// Replay and record calls in the LLM call cache (off: every call runs).
    #[arg(long)]
    pub cache: bool,
    /// Most remediation rounds (default: `agent.max_rounds`).
    #[arg(long)]
    pub max_rounds: Option<usize>,
    /// When to decline to answer: off, on, or a monitor confidence under which metarag
    /// declines (default: `agent.abstain`). See the README's "When metarag does not answer".
    #[arg(long, value_name = "off|on|CONFIDENCE")]
    pub abstain: Option<metarag_agent::Abstain>,
    /// `mcts`: write the search tree here, one node per line (visits, value, reward,
    /// lineage, memory).
    #[arg(long, value_name = "FILE")]
    pub save_tree: Option<PathBuf>,
    /// `mcts`: continue the search of a tree saved by `--save-tree` (nodes already
    /// expanded are not asked of the model again).
    #[arg(long, value_name = "FILE")]
    pub resume: Option<PathBuf>,
    /// `mcts`: rollouts in all, counting a resumed tree's (default:
    /// `strategies.mcts.rollouts`).
    #[arg(long)]
    pub rollouts: Option<usize>,
    /// Answer only from documents whose metadata has KEY equal to VALUE (or a list
    /// holding it); repeatable, all must hold. Every search of the strategy is limited.
    #[arg(long = "where", value_name = "KEY=VALUE")]
    pub wheres: Vec<String>,
    /// Answer only from documents of this collection; repeatable (every collection when
    /// absent). Every search of the strategy is limited.
    #[arg(long, value_name = "NAME")]
    pub collection: Vec<metarag_core::CollectionId>,
    /// Answer only from these documents; repeatable.
    #[arg(long = "doc", value_name = "DOC_ID")]
    pub docs: Vec<String>,
}

/// Reads a tree saved by `--save-tree`: one node per line; a line that is not a node is an
/// error naming it.
pub fn load_tree(path: &Path) -> Result<Value> {
    let text =
        std::fs::read_to_string(path).map_err(|e| UserError(format!("{}: {e}", path.display())))?;
    let mut nodes = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let node: metarag_agent::strategies::TreeNode =
            serde_json::from_str(line).map_err(|e| {
                UserError(format!(
                    "{} line {}: not a tree node: {e}",
                    path.display(),
                    i + 1
                ))
            })?;
        nodes.push(node);
    }
    metarag_agent::strategies::check_tree(&nodes)
        .map_err(|e| UserError(format!("{}: {e}", path.display())))?;
    Ok(serde_json::json!({ "tree": nodes }))
}

/// Writes the run's search tree, if it keeps one, as `DIR/ID-STRATEGY.jsonl` (for
/// `bench --save-trees`).
pub fn save_tree_in(trace: &metarag_agent::Trace, dir: &Path, id: &str) -> std::io::Result<()> {
    let Some(Value::Array(nodes)) = trace.records.get("tree") else {
        return Ok(());
    };
    std::fs::create_dir_all(dir)?;
    let safe: String = format!("{id}-{}", trace.strategy)
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    std::fs::write(dir.join(format!("{safe}.jsonl")), tree_jsonl(nodes))
}

/// Tree nodes as JSONL, one per line.
fn tree_jsonl(nodes: &[Value]) -> String {
    nodes.iter().map(|n| format!("{n}\n")).collect()
}

/// Writes the run's search tree, one node per line.
fn save_tree(trace: &metarag_agent::Trace, path: &Path) -> Result<()> {
    let Some(Value::Array(nodes)) = trace.records.get("tree") else {
        return Err(UserError(format!(
            "--save-tree: strategy `{}` keeps no search tree",
            trace.strategy
        ))
        .into());
    };
    std::fs::write(path, tree_jsonl(nodes))
        .map_err(|e| UserError(format!("{}: {e}", path.display())))?;
    Ok(())
}

/// `metarag ask`
pub async fn run(app: &App, args: Args) -> Result<ExitCode> {
    let registry = match args.rollouts {
        Some(n) => {
            let mut sections = app.config.raw.strategies.clone();
            let mcts = sections
                .entry("mcts".to_string())
                .or_insert_with(|| serde_json::json!({}));
            if let Value::Object(m) = mcts {
                m.insert("rollouts".into(), n.into());
            }
            metarag_agent::Registry::builtin_with(&sections)?
        }
        None => app.registry()?,
    };
    let resume = args.resume.as_deref().map(load_tree).transpose()?;
    let needs_evidence = registry.get(&args.strategy)?.needs_evidence();
    let context = args.context.as_deref().map(load_context).transpose()?;
    let mut config = app.config.raw.agent.clone();
    if let Some(r) = args.max_rounds {
        config.max_rounds = r;
    }
    if let Some(a) = args.abstain {
        config.abstain = a;
    }
    // The index is checked before the model loads: an empty one is the user's to fix,
    // and says so at once.
    let retriever = if context.is_none() && needs_evidence {
        Some(app.retriever().await?)
    } else {
        None
    };
    let handle = app.llm(args.cache, args.model.as_deref()).await?;
    let mut builder = handle
        .with_roles(Agent::builder(handle.llm.clone()))
        .config(config)
        .registry(registry);
    if let Some((retriever, embedder)) = retriever {
        builder = builder.retriever(retriever).embedder(embedder);
        if let Some(r) = app.reranker(handle.local.as_ref())? {
            builder = builder.reranker(r);
        }
    }
    let agent = builder.build()?;
    let scope = metarag_core::Filter {
        doc_ids: args
            .docs
            .iter()
            .map(metarag_core::DocId::new)
            .collect::<Result<_, _>>()?,
        metadata: args
            .wheres
            .iter()
            .map(|w| crate::output::parse_meta(w, "--where"))
            .collect::<Result<_>>()?,
        collections: args.collection.clone(),
        ..Default::default()
    };
    let mut ask = Ask::new(args.question, args.strategy.as_str()).with_scope(scope);
    if let Some(c) = context {
        ask = ask.with_context(c);
    }
    if let Some(r) = resume {
        ask = ask.with_resume(r);
    }
    let spinner = ProgressBar::new_spinner();
    spinner.set_style(
        ProgressStyle::with_template("{spinner} {elapsed:>4} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    spinner.enable_steady_tick(Duration::from_millis(120));
    let trace = agent
        .ask_observed(&ask, &|p| match p {
            Progress::NodeStarted(node) => spinner.set_message(node.to_string()),
            Progress::Doing(sentence) => spinner.set_message(sentence.to_string()),
            Progress::NodeFinished(_) => {}
        })
        .await?;
    spinner.finish_and_clear();
    if let Some(path) = &args.save_tree {
        save_tree(&trace, path)?;
    }
    // The run log is a record, not the answer: failing to write it is a warning.
    let recorded = async {
        let log = app.configured_run_log().await?;
        Ok::<_, anyhow::Error>(
            log.record(&trace, Surface::Cli, 0.0, app.config.price())
                .await?,
        )
    };
    match recorded.await {
        Ok(id) => tracing::info!(run = %id, "run recorded"),
        Err(e) => eprintln!("warning: the run was not recorded: {e:#}"),
    }
    if app.json {
        print_json(&trace)?;
    } else {
        print_answer(&trace);
        if args.trace {
            print_trace(&trace);
        }
    }
    Ok(match trace.stop {
        metarag_agent::StopReason::Failed(_) => {
            eprintln!("error: the run failed: {:?}", trace.stop);
            ExitCode::from(1)
        }
        _ => ExitCode::SUCCESS,
    })
}

/// Reads gold context paragraphs: JSONL or a JSON array of `{title, text}` (or `sentences`,
/// or MuSiQue's `paragraph_text`), or one QA record with `contexts`.
pub fn load_context(path: &Path) -> Result<Vec<Passage>> {
    let text =
        std::fs::read_to_string(path).map_err(|e| UserError(format!("{}: {e}", path.display())))?;
    let trimmed = text.trim_start();
    let records: Vec<(usize, Value)> = if trimmed.starts_with('[')
        || trimmed.starts_with('{') && serde_json::from_str::<Value>(trimmed).is_ok()
    {
        let v: Value = serde_json::from_str(trimmed)
            .map_err(|e| UserError(format!("{}: not valid JSON: {e}", path.display())))?;
        match v {
            Value::Array(items) => items
                .into_iter()
                .enumerate()
                .map(|(i, v)| (i + 1, v))
                .collect(),
            Value::Object(ref o) if o.contains_key("contexts") => o["contexts"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .enumerate()
                .map(|(i, v)| (i + 1, v))
                .collect(),
            other => vec![(1, other)],
        }
    } else {
        let mut out = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let v: Value = serde_json::from_str(line).map_err(|e| {
                UserError(format!("{}:{}: not valid JSON: {e}", path.display(), i + 1))
            })?;
            out.push((i + 1, v));
        }
        out
    };
    let mut passages = Vec::new();
    for (n, v) in records {
        let title = v
            .get("title")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let body = v
            .get("text")
            .or_else(|| v.get("paragraph_text"))
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| {
                v.get("sentences").and_then(Value::as_array).map(|s| {
                    s.iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join(" ")
                })
            })
            .ok_or_else(|| {
                UserError(format!(
                    "{}: record {n}: no `text` (or `sentences`, `paragraph_text`)",
                    path.display()
                ))
            })?;
        let title = if title.is_empty() {
            format!("paragraph {n}")
        } else {
            title
        };
        passages.push(Passage::paragraph(title, body));
    }
    if passages.is_empty() {
        return Err(UserError(format!("{}: no paragraphs", path.display())).into());
    }
    Ok(passages)
}

/// Prints the answer and its numbered sources.
pub fn print_answer(t: &Trace) {
    if t.answer.is_empty() {
        println!("(no answer)");
    } else {
        println!("{}", t.answer);
    }
    if t.abstained {
        // A decline is an outcome, not an answer: say why, and show what was held back.
        if let Some(a) = &t.abstention {
            println!("\nNot answered ({}): {}", a.by.as_str(), a.reason);
            if let Some(held) = &a.withheld {
                println!("Held back, not supported well enough: {held}");
            }
        } else {
            println!("\nNot answered: the sources do not settle the question.");
        }
    } else if !t.short_answer.is_empty() && t.short_answer != t.answer {
        println!("\nShort answer: {}", t.short_answer);
    }
    let cited: BTreeSet<usize> = citations(&t.answer)
        .into_iter()
        .flat_map(|(_, n)| n)
        .collect();
    if !t.sources.is_empty() {
        println!("\nSources:");
        for s in &t.sources {
            let p = &s.passage;
            let section: String = p
                .section
                .iter()
                .filter(|x| **x != p.title)
                .map(|x| format!(" > {x}"))
                .collect();
            let pages = p
                .pages
                .map(|(a, b)| {
                    if a == b {
                        format!(", p. {a}")
                    } else {
                        format!(", pp. {a}-{b}")
                    }
                })
                .unwrap_or_default();
            let mark = if cited.contains(&s.n) { "*" } else { " " };
            println!("{mark}[{}] {}{}{}", s.n, p.title, section, pages);
            println!("     {}", truncate(&s.text().replace('\n', " "), 200));
        }
    }
    // A gated strategy that stopped without passing says so.
    let gated = t.rounds.iter().any(|r| r.gate_passed().is_some());
    let passed = t.rounds.iter().any(|r| r.gate_passed() == Some(true));
    eprintln!(
        "\n{} · {} round(s) · {} · {} LLM call(s) · {:.1} s · overhead {:.2}%",
        t.strategy,
        t.rounds.len(),
        match &t.stop {
            metarag_agent::StopReason::Done(m) if passed || !gated => m.clone(),
            metarag_agent::StopReason::Done(m) => format!("{m}, gate not passed"),
            other => other.to_string(),
        },
        t.usage.llm_calls,
        t.graph.wall_ms / 1e3,
        t.overhead_share() * 100.0
    );
}

/// Prints the trace in readable form: nodes, rounds, diagnosis, stop reason.
pub fn print_trace(t: &Trace) {
    println!("\nTrace");
    if let Some(p) = &t.plan {
        println!(
            "  plan: {} ({}), top_k {}, rerank {}, hops {}",
            p.complexity.as_str(),
            p.method,
            p.route.top_k,
            p.route.rerank,
            p.route.hops
        );
    }
    for r in &t.retrievals {
        println!(
            "  retrieve ({:?}): {:?} -> {} hits, {} new, dropped {}, coverage {:.2}, diversity {:.2}, rerank {}",
            r.reason,
            truncate(&r.query, 60),
            r.hits,
            r.added,
            r.guardrails.total(),
            r.diagnostics.query_coverage,
            r.diagnostics.document_diversity,
            r.rerank
        );
    }
    for step in &t.steps {
        println!(
            "  {} {:?}: {}",
            step.node,
            step.kind,
            truncate(&step.text.replace('\n', " "), 140)
        );
    }
    for r in &t.rounds {
        println!("  round {}: {}", r.index, truncate(&r.answer, 120));
        if let Some(d) = &r.directive {
            println!("    directive: {}", truncate(d, 100));
        }
        if let Some(v) = &r.verification {
            println!(
                "    faithfulness {:.2}, completeness {:.2}, citation precision {:.2}, unsupported {:.2}, facts found {}/{}",
                v.faithfulness,
                v.completeness,
                v.citation_precision,
                v.unsupported_claim_rate,
                v.facts.iter().filter(|f| f.verified).count(),
                v.facts.len()
            );
        }
        if let Some(a) = &r.assessment {
            let x = &a.signals;
            let opt = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}"));
            println!(
                "    monitor: confidence {:.2} ({}); short-answer logprob min {}, samples agree {}, closed-book agrees {}, entities covered {:.2}, answer in sources {}, form {}",
                a.confidence,
                if a.passed { "passed" } else { "failed" },
                opt(x.short_logprob.map(|l| l.min)),
                opt(x.sample_agreement),
                opt(x.closed_book_agreement),
                x.entity_coverage,
                opt(x.answer_in_sources),
                if x.type_match {
                    "matches"
                } else {
                    "does not match"
                },
            );
        }
        if let Some(m) = &r.monitor {
            println!("    gate: {}", if m.passed { "passed" } else { "failed" });
        }
        if let Some(d) = &r.diagnosis {
            println!(
                "    diagnosis: {} {:?} ({:?}): {}",
                d.category.as_str(),
                d.error_types,
                d.method,
                d.reasons.join("; ")
            );
        }
    }
    println!("  nodes:");
    for e in &t.graph.events {
        println!(
            "    {:<10} {:>9.1} ms  {} call(s)  {} tokens{}",
            e.node,
            e.elapsed_ms,
            e.llm_calls,
            e.tokens,
            e.next
                .as_deref()
                .map(|n| format!("  -> {n}"))
                .unwrap_or_default()
        );
        if let Some(note) = &e.note {
            println!("               {}", truncate(note, 110));
        }
    }
    println!(
        "  stop: {:?}; wall {:.0} ms, LLM {:.0} ms, search {:.0} ms, overhead {:.1} ms ({:.2}%)",
        t.stop,
        t.graph.wall_ms,
        t.usage.llm_ms,
        t.usage.search_ms,
        t.graph.overhead_ms,
        t.overhead_share() * 100.0
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_files_in_every_layout() {
        let dir = tempfile::tempdir().unwrap();
        let jsonl = dir.path().join("p.jsonl");
        std::fs::write(
            &jsonl,
            "{\"title\": \"A\", \"text\": \"alpha\"}\n\n{\"sentences\": [\"b1.\", \"b2.\"]}\n",
        )
        .unwrap();
        let p = load_context(&jsonl).unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(p[1].title, "paragraph 3");
        assert_eq!(p[1].text, "b1. b2.");
        let record = dir.path().join("r.json");
        std::fs::write(
            &record,
            r#"{"question": "q", "contexts": [{"title": "T", "text": "x"}]}"#,
        )
        .unwrap();
        assert_eq!(load_context(&record).unwrap()[0].title, "T");
        let bad = dir.path().join("bad.jsonl");
        std::fs::write(&bad, "{\"title\": \"A\"}\n").unwrap();
        let err = load_context(&bad).unwrap_err().to_string();
        assert!(err.contains("bad.jsonl: record 1: no `text`"), "{err}");
        std::fs::write(&bad, "{\"title\": \"A\", \"text\": \"x\"}\n{oops\n").unwrap();
        let err = load_context(&bad).unwrap_err().to_string();
        assert!(err.contains("bad.jsonl:2: not valid JSON"), "{err}");
    }
}
