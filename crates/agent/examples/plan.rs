//! Plans every question of a JSONL file with a local model and prints each program: how
//! the planner does on a set of questions (does the plan parse, type, reason in more than
//! one read), without running the programs or answering. One line of JSON per question to
//! the output file (its `id`, `question`, the program or why it is invalid, seconds);
//! questions already there are skipped, so a stopped run continues.
//!
//! ```sh
//! cargo run --release -p metarag-agent --example plan -- MODEL.gguf QUESTIONS.jsonl OUT.jsonl
//! ```
//!
//! `--replay PLANS.jsonl` reads such an output again and puts each recorded plan through
//! this build's repairs and checks, without a model: what a change to `Plan::repaired` or
//! the checks does to the same plans, question by question, in seconds.
//!
//! ```sh
//! cargo run -p metarag-agent --example plan -- --replay PLANS.jsonl
//! ```

use metarag_agent::monitor::AnswerForm;
use metarag_agent::program::plan::{Plan, plan};
use metarag_core::Llm;
use metarag_models::{LocalLlm, LocalLlmConfig};
use std::collections::{BTreeMap, HashSet};
use std::io::{BufRead, Write};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, plans] = args.as_slice()
        && flag == "--replay"
    {
        return replay(plans);
    }
    let [model, questions, out] = args.as_slice() else {
        return Err("usage: plan MODEL.gguf QUESTIONS.jsonl OUT.jsonl".into());
    };
    let done: HashSet<String> = match std::fs::File::open(out) {
        Ok(f) => std::io::BufReader::new(f)
            .lines()
            .map_while(|l| l.ok())
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(&l).ok())
            .filter_map(|v| v["id"].as_str().map(str::to_string))
            .collect(),
        Err(_) => HashSet::new(),
    };
    let llm = LocalLlm::load(LocalLlmConfig::new("planner", model))?;
    let mut sink = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(out)?;
    let mut shapes: BTreeMap<String, usize> = BTreeMap::new();
    let text =
        std::fs::read_to_string(questions).map_err(|e| format!("reading {questions}: {e}"))?;
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let record: serde_json::Value =
            serde_json::from_str(line).map_err(|e| format!("{questions} line {}: {e}", n + 1))?;
        let (Some(id), Some(question)) = (record["id"].as_str(), record["question"].as_str())
        else {
            return Err(format!("{questions} line {}: no `id` or `question`", n + 1).into());
        };
        if done.contains(id) {
            continue;
        }
        let started = std::time::Instant::now();
        let reply = llm.chat(&plan(question)).await?;
        let (shape, program) = checked(question, &reply.text);
        *shapes.entry(shape.clone()).or_default() += 1;
        println!("{question}\n  {}\n", program.replace('\n', "\n  "));
        let row = serde_json::json!({
            "id": id, "question": question, "plan": reply.text, "shape": shape,
            "program": program, "seconds": started.elapsed().as_secs_f64(),
        });
        writeln!(sink, "{row}")?;
    }
    for (shape, n) in shapes {
        println!("{n:4}  {shape}");
    }
    Ok(())
}

/// A plan's reply put through the repairs and checks: the program's shape ("follow >
/// find") and its listing, or "(invalid)" and why.
fn checked(question: &str, reply: &str) -> (String, String) {
    let typed = serde_json::from_str::<Plan>(reply)
        .map_err(|e| format!("the plan does not parse: {e}"))
        .and_then(|p| {
            p.repaired(question)
                .compile()
                .and_then(|raw| raw.validate())
                .and_then(|p| p.fits(&AnswerForm::of(question)).map(|()| p))
                .map_err(|e| e.to_string())
        });
    match typed {
        Ok(p) => (
            p.steps
                .iter()
                .map(|s| s.name())
                .collect::<Vec<_>>()
                .join(" > "),
            p.display(),
        ),
        Err(e) => ("(invalid)".to_string(), e),
    }
}

/// Each recorded plan checked again by this build: the questions whose program changed,
/// then the shapes before and after.
fn replay(plans: &str) -> Result<(), Box<dyn std::error::Error>> {
    let text = std::fs::read_to_string(plans).map_err(|e| format!("reading {plans}: {e}"))?;
    let (mut before, mut after): (BTreeMap<String, usize>, BTreeMap<String, usize>) =
        Default::default();
    let mut changed = 0;
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let row: serde_json::Value =
            serde_json::from_str(line).map_err(|e| format!("{plans} line {}: {e}", n + 1))?;
        let (Some(question), Some(reply), Some(old)) = (
            row["question"].as_str(),
            row["plan"].as_str(),
            row["program"].as_str(),
        ) else {
            return Err(
                format!("{plans} line {}: no `question`, `plan` or `program`", n + 1).into(),
            );
        };
        let (shape, program) = checked(question, reply);
        *before
            .entry(row["shape"].as_str().unwrap_or("?").to_string())
            .or_default() += 1;
        *after.entry(shape).or_default() += 1;
        if program != old {
            changed += 1;
            println!(
                "{question}\n  was: {}\n  now: {}\n",
                old.replace('\n', "\n       "),
                program.replace('\n', "\n       ")
            );
        }
    }
    println!("{changed} programs changed");
    let shapes: std::collections::BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    println!("before  after  shape");
    for shape in shapes {
        let n = |m: &BTreeMap<String, usize>| m.get(shape).copied().unwrap_or(0);
        println!("{:6}  {:5}  {shape}", n(&before), n(&after));
    }
    Ok(())
}
