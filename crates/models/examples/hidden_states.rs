//! Reads the local model's last hidden layer over answers it wrote: the features of a
//! monitor probe (does the model's own state tell a right answer from a wrong one?).
//!
//! ```sh
//! cargo run -p metarag-models --example hidden_states -- \
//!     MODEL.gguf pairs.jsonl features.jsonl
//! ```
//!
//! `pairs.jsonl` holds one object per line: `id` (any string), `messages` (the chat
//! request's messages, `[{"role": ..., "content": ...}]`) and `completion` (the text the
//! model replied). Each output line is the input's `id` with `last` and `mean` (the hidden
//! state at the completion's last token and averaged over its tokens) and token counts.
//! Lines already in the output are skipped, so a stopped run continues where it was.
//! Consecutive pairs sharing a prompt prefix reuse its KV cache: keep a question's calls
//! together.

use metarag_core::Message;
use metarag_models::{LocalLlm, LocalLlmConfig};
use serde::Deserialize;
use std::collections::HashSet;
use std::io::{BufRead, Write};

#[derive(Deserialize)]
struct Pair {
    id: String,
    messages: Vec<Message>,
    completion: String,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [model, pairs, out] = args.as_slice() else {
        return Err("usage: hidden_states MODEL.gguf PAIRS.jsonl OUT.jsonl".into());
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
    let llm = LocalLlm::load(
        LocalLlmConfig::new("probe", model)
            .context_size(4096)
            .hidden_states(true),
    )?;
    let mut sink = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(out)?;
    let input = std::io::BufReader::new(std::fs::File::open(pairs)?);
    for (n, line) in input.lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let pair: Pair =
            serde_json::from_str(&line).map_err(|e| format!("{pairs}: line {}: {e}", n + 1))?;
        if done.contains(&pair.id) {
            continue;
        }
        let started = std::time::Instant::now();
        let h = llm.hidden_state(pair.messages, pair.completion).await?;
        let row = serde_json::json!({
            "id": pair.id,
            "tokens": h.tokens,
            "prompt_tokens": h.prompt_tokens,
            "last": h.last,
            "mean": h.mean,
        });
        writeln!(sink, "{row}")?;
        eprintln!(
            "{} ({} + {} tokens) {:.1} s",
            pair.id,
            h.prompt_tokens,
            h.tokens,
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}
