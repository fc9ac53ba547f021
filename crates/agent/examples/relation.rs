//! The relation check of a question program's `follow` on a labelled set: for each case (a
//! quoted sentence, a subject, a relation, the value a read found, and whether the
//! sentence states that relation), the name the local model reads off the sentence for
//! the relation (`relation_request`), and whether the check passes the value (the same
//! name in code); then its accuracy on the relations stated and on the others.
//!
//! ```sh
//! cargo run -p metarag-agent --example relation -- MODEL.gguf CASES.jsonl
//! ```

use metarag_agent::program::exec::{RelationAnswer, relation_request};
use metarag_agent::program::values::same_name;
use metarag_core::Llm;
use metarag_models::{LocalLlm, LocalLlmConfig};

#[derive(serde::Deserialize)]
struct Case {
    quote: String,
    subject: String,
    relation: String,
    value: String,
    states: bool,
    #[serde(default)]
    origin: String,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [model, cases] = args.as_slice() else {
        return Err("usage: relation MODEL.gguf CASES.jsonl".into());
    };
    let llm = LocalLlm::load(LocalLlmConfig::new("relation", model))?;
    let text = std::fs::read_to_string(cases).map_err(|e| format!("reading {cases}: {e}"))?;
    // [stated, not stated] x [right, total].
    let mut tally = [[0usize; 2]; 2];
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let c: Case =
            serde_json::from_str(line).map_err(|e| format!("{cases} line {}: {e}", n + 1))?;
        let reply = llm
            .chat(&relation_request(&c.quote, &c.subject, &c.relation))
            .await?;
        let answer = serde_json::from_str::<RelationAnswer>(&reply.text)
            .map(|r| r.answer)
            .unwrap_or_else(|e| format!("(unparsed: {e})"));
        let passes = same_name(&answer, &c.value);
        let row = usize::from(!c.states);
        tally[row][0] += usize::from(passes == c.states);
        tally[row][1] += 1;
        println!(
            "{} read {answer:?}, want {} | {} -> {} of {} ({})",
            if passes == c.states { "ok  " } else { "MISS" },
            if c.states { "passed" } else { "refused" },
            c.value,
            c.relation,
            c.subject,
            c.origin,
        );
    }
    let [[sr, st], [nr, nt]] = tally;
    println!(
        "stated {sr}/{st}, not stated {nr}/{nt}, all {}/{}",
        sr + nr,
        st + nt
    );
    Ok(())
}
