//! `metarag bench llm`: the local chat model on gold multi-hop questions. Reports answer
//! quality (EM, F1, Sub-EM), seconds per question, prompt and generation tokens/s, and what
//! prefix reuse saves on a second call over the same evidence.
//!
//! `metarag bench rerank`: the local model as a pointwise reranker of hybrid retrieval:
//! recall@k and NDCG@10 of supporting titles before and after, and pairs/s.

use crate::app::App;
use crate::output::{print_json, write_json};
use anyhow::Result;
use clap::Args;
use metarag_core::{
    ChatRequest, DynReranker, Llm, Message, Reranker, Retriever, SearchMode, SearchRequest,
};
use metarag_eval::{QaRecord, score_answer};
use metarag_models::{CrossEncoder, LlmReranker, LocalLlm, LocalLlmConfig};
use serde::Serialize;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

#[derive(Args, Debug)]
pub struct LlmArgs {
    /// Questions with context paragraphs (normalised QA JSONL or an official dev file).
    #[arg(long)]
    questions: PathBuf,
    /// Installed chat models to compare, comma-separated (default: the configured one).
    #[arg(long, value_delimiter = ',')]
    models: Vec<String>,
    /// Questions to run (the first N).
    #[arg(long, default_value_t = 50)]
    n: usize,
    /// Evidence given: only the gold supporting paragraphs, or every context paragraph.
    #[arg(long, value_enum, default_value = "supporting")]
    context: ContextArg,
    /// Also write the JSON report here.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Also time a quoting read (copy the sentence that answers, then the answer, in
    /// JSON) without and with prompt-lookup drafting of up to this many tokens, and check
    /// that both write the same reply (0: skip).
    #[arg(long, default_value_t = 0)]
    lookup_draft: usize,
    /// Also time the quoting read on an instance that filters every candidate token by
    /// the JSON grammar (`llm.grammar_first = true`) against one that checks only the
    /// chosen token (the default), and check that both write the same reply.
    #[arg(long)]
    grammar_first: bool,
    /// Also time llama-bench's prompt test on the engine itself: this many prompt tokens
    /// evaluated in batches from an empty cache (llama-bench's `pp512` is `--pp 512`;
    /// 0: skip). With `--n 0` only the throughput tests run.
    #[arg(long, default_value_t = 0)]
    pp: usize,
    /// Also time llama-bench's generation test: this many tokens decoded one at a time
    /// from an empty cache (`tg128` is `--tg 128`; 0: skip).
    #[arg(long, default_value_t = 0)]
    tg: usize,
    /// Repetitions of the throughput tests, after one warm-up run (llama-bench's `-r`).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    repetitions: u32,
}

/// llama-bench's `pp` and `tg` tests timed on metarag's own engine.
#[derive(Debug, Default, Serialize)]
struct ThroughputReport {
    prompt_tokens: usize,
    generated_tokens: usize,
    repetitions: u32,
    /// Prompt tokens per second: mean and standard deviation over the repetitions.
    prompt_per_s: f64,
    prompt_per_s_sd: f64,
    /// Generated tokens per second: mean and standard deviation.
    generated_per_s: f64,
    generated_per_s_sd: f64,
}

/// Mean and sample standard deviation.
fn mean_sd(xs: &[f64]) -> (f64, f64) {
    let n = xs.len().max(1) as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = if xs.len() > 1 {
        xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (mean, var.sqrt())
}

/// One warm-up run, then `repetitions` timed ones, as llama-bench runs its tests.
async fn time_throughput(llm: &LocalLlm, args: &LlmArgs) -> Result<ThroughputReport> {
    llm.throughput(args.pp.min(16), args.tg.min(4)).await?;
    let (mut pp, mut tg) = (Vec::new(), Vec::new());
    for _ in 0..args.repetitions {
        let t = llm.throughput(args.pp, args.tg).await?;
        pp.push(t.prompt_per_s());
        tg.push(t.generated_per_s());
    }
    let (prompt_per_s, prompt_per_s_sd) = mean_sd(&pp);
    let (generated_per_s, generated_per_s_sd) = mean_sd(&tg);
    Ok(ThroughputReport {
        prompt_tokens: args.pp,
        generated_tokens: args.tg,
        repetitions: args.repetitions,
        prompt_per_s,
        prompt_per_s_sd,
        generated_per_s,
        generated_per_s_sd,
    })
}

#[derive(Debug, Clone, Copy, clap::ValueEnum, Serialize)]
#[serde(rename_all = "snake_case")]
enum ContextArg {
    Supporting,
    All,
}

const ANSWER_SYSTEM: &str = "You answer questions using only the numbered passages. Reply with \
the answer alone: a name, a date, a number, a short phrase, or yes/no. No explanation.";

fn evidence(q: &QaRecord, context: ContextArg) -> String {
    let mut out = String::from("Passages:\n");
    let paragraphs = q
        .contexts
        .iter()
        .filter(|c| matches!(context, ContextArg::All) || c.is_supporting);
    for (i, c) in paragraphs.enumerate() {
        let _ = writeln!(out, "[{}] {}: {}", i + 1, c.title, c.text.trim());
    }
    out
}

/// The answer call: evidence first, question last, so calls over the same evidence share
/// the longest possible prefix.
fn answer_request(evidence: &str, question: &str) -> ChatRequest {
    ChatRequest::new(vec![
        Message::system(ANSWER_SYSTEM),
        Message::user(format!("{evidence}\nQuestion: {question}")),
    ])
    .max_tokens(24)
    .stop("\n")
}

/// A second call over the same evidence (the shape of a verify or critic call).
fn followup_request(evidence: &str, question: &str) -> ChatRequest {
    ChatRequest::new(vec![
        Message::system(ANSWER_SYSTEM),
        Message::user(format!(
            "{evidence}\nQuestion: Which passage numbers are needed to answer \"{question}\"?"
        )),
    ])
    .max_tokens(8)
    .stop("\n")
}

/// The shape of a program read: a quote copied from a source, then the value, in JSON
/// under a grammar. Most of its tokens are in the prompt already, which is what
/// prompt-lookup drafting is for.
fn quote_request(evidence: &str, question: &str) -> ChatRequest {
    let mut request = ChatRequest::new(vec![
        Message::system("You answer questions using only the numbered passages."),
        Message::user(format!(
            "{evidence}\nQuestion: {question}\nFirst copy, word for word, the sentence of a passage \
             that answers the question. Then give the answer alone. Reply in JSON: \
             {{\"quote\": \"...\", \"answer\": \"...\"}}"
        )),
    ])
    .max_tokens(120);
    request.schema = Some(metarag_core::OutputSchema {
        name: "quote".into(),
        schema: serde_json::json!({
            "type": "object",
            "properties": {"quote": {"type": "string"}, "answer": {"type": "string"}},
            "required": ["quote", "answer"],
            "additionalProperties": false
        }),
    });
    request
}

/// The quoting read on two instances of one model, over the same questions.
#[derive(Debug, Default, Serialize)]
struct ReadComparison {
    /// Tokens generated by each (the same when the replies agree).
    generated_plain: u64,
    generated_other: u64,
    /// Generation time alone (prompt evaluation left out), milliseconds.
    generation_ms_plain: f64,
    generation_ms_other: f64,
    generation_tokens_per_second_plain: f64,
    generation_tokens_per_second_other: f64,
    /// Questions whose two replies are the same text.
    identical: usize,
    /// The questions whose replies differ: id, plain reply, other reply.
    different: Vec<(String, String, String)>,
}

/// The quoting read without and with prompt-lookup drafting ("other" is drafting).
#[derive(Debug, Default, Serialize)]
struct DraftReport {
    /// Most tokens drafted per step.
    lookup_draft: usize,
    /// Tokens drafted, and those the model's samples agreed with.
    drafted: u64,
    accepted: u64,
    #[serde(flatten)]
    reads: ReadComparison,
}

#[derive(Debug, Default, Serialize)]
struct ModelReport {
    model: String,
    questions: usize,
    em: f64,
    f1: f64,
    sub_em: f64,
    seconds_per_question_mean: f64,
    seconds_per_question_p50: f64,
    seconds_per_question_p95: f64,
    prompt_tokens_per_question: f64,
    prompt_tokens_per_second: f64,
    generation_tokens_per_second: f64,
    followup_prompt_tokens: u64,
    followup_reused_tokens: u64,
    followup_prompt_ms_with_reuse: f64,
    followup_prompt_ms_without_reuse: f64,
    followup_wall_ms_with_reuse: f64,
    followup_wall_ms_without_reuse: f64,
    threads: usize,
    predictions: Vec<Prediction>,
    #[serde(skip_serializing_if = "Option::is_none")]
    drafting: Option<DraftReport>,
    /// The quoting read with every candidate filtered by the grammar ("plain") against
    /// the check of the chosen token alone ("other").
    #[serde(skip_serializing_if = "Option::is_none")]
    grammar_first: Option<ReadComparison>,
    #[serde(skip_serializing_if = "Option::is_none")]
    throughput: Option<ThroughputReport>,
}

#[derive(Debug, Serialize)]
struct Prediction {
    id: String,
    kind: Option<String>,
    question: String,
    answers: Vec<String>,
    prediction: String,
    f1: f64,
    seconds: f64,
}

/// The quoting read over every question on the plain instance, then on the other one.
async fn compare_reads(
    plain: &LocalLlm,
    other: &LocalLlm,
    questions: &[QaRecord],
    args: &LlmArgs,
) -> Result<ReadComparison> {
    let mut d = ReadComparison::default();
    for (i, q) in questions.iter().enumerate() {
        let request = quote_request(&evidence(q, args.context), &q.question);
        let a = plain.chat(&request).await?;
        let b = other.chat(&request).await?;
        d.generated_plain += a.usage.completion_tokens;
        d.generated_other += b.usage.completion_tokens;
        d.generation_ms_plain += a.usage.generation_ms.unwrap_or(0.0);
        d.generation_ms_other += b.usage.generation_ms.unwrap_or(0.0);
        if a.text == b.text {
            d.identical += 1;
        } else {
            d.different
                .push((q.id.clone(), a.text.clone(), b.text.clone()));
        }
        eprintln!(
            "[quote {}/{}] plain {:.0} ms, other {:.0} ms, {} tokens, same: {}",
            i + 1,
            questions.len(),
            a.usage.generation_ms.unwrap_or(0.0),
            b.usage.generation_ms.unwrap_or(0.0),
            a.usage.completion_tokens,
            a.text == b.text
        );
    }
    d.generation_tokens_per_second_plain =
        d.generated_plain as f64 * 1e3 / d.generation_ms_plain.max(1e-9);
    d.generation_tokens_per_second_other =
        d.generated_other as f64 * 1e3 / d.generation_ms_other.max(1e-9);
    Ok(d)
}

/// The quoting read on the plain instance and on the drafting one, with the drafts counted.
async fn time_drafting(
    plain: &LocalLlm,
    drafting: &LocalLlm,
    questions: &[QaRecord],
    args: &LlmArgs,
) -> Result<DraftReport> {
    let (drafted_before, accepted_before) = drafting.drafted_tokens();
    let reads = compare_reads(plain, drafting, questions, args).await?;
    let (drafted, accepted) = drafting.drafted_tokens();
    Ok(DraftReport {
        lookup_draft: args.lookup_draft,
        drafted: drafted - drafted_before,
        accepted: accepted - accepted_before,
        reads,
    })
}

/// Measures the local chat model on gold QA.
pub async fn run(app: &App, args: LlmArgs) -> Result<ExitCode> {
    let mut questions = metarag_eval::load_dataset(&args.questions)?;
    questions.truncate(args.n);
    let models = if args.models.is_empty() {
        vec![app.config.raw.llm.model.clone()]
    } else {
        args.models.clone()
    };
    let l = &app.config.raw.llm;
    let mut reports = Vec::new();
    for name in &models {
        let path = app.models.gguf_path(name)?;
        let config = || {
            LocalLlmConfig::new(name.clone(), path.clone())
                .threads(l.threads)
                .context_size(l.context_size)
                .grammar_first(l.grammar_first)
        };
        let load = |reuse: bool| LocalLlm::load(config().prefix_reuse(reuse));
        let with = load(true)?;
        let without = load(false)?;
        let mut r = ModelReport {
            model: name.clone(),
            threads: with.info().threads,
            ..ModelReport::default()
        };
        if args.pp + args.tg > 0 {
            // First, on a model nothing else has run on yet (as llama-bench's own run).
            r.throughput = Some(time_throughput(&with, &args).await?);
        }
        let (mut prompt_tokens, mut prompt_ms, mut gen_tokens, mut gen_ms) = (0u64, 0.0, 0u64, 0.0);
        let mut seconds = Vec::new();
        for (i, q) in questions.iter().enumerate() {
            let ev = evidence(q, args.context);
            let started = Instant::now();
            let answer = with.chat(&answer_request(&ev, &q.question)).await?;
            let secs = started.elapsed().as_secs_f64();
            let follow = followup_request(&ev, &q.question);
            let reused = with.chat(&follow).await?;
            // Same call on an instance that keeps nothing: the price of no reuse.
            let fresh = without.chat(&follow).await?;
            let u = &answer.usage;
            prompt_tokens += u.prompt_tokens - u.cached_prompt_tokens;
            prompt_ms += u.prompt_ms.unwrap_or(0.0);
            gen_tokens += u.completion_tokens;
            gen_ms += u.generation_ms.unwrap_or(0.0);
            r.prompt_tokens_per_question += u.prompt_tokens as f64;
            r.followup_prompt_tokens += reused.usage.prompt_tokens;
            r.followup_reused_tokens += reused.usage.cached_prompt_tokens;
            r.followup_prompt_ms_with_reuse += reused.usage.prompt_ms.unwrap_or(0.0);
            r.followup_prompt_ms_without_reuse += fresh.usage.prompt_ms.unwrap_or(0.0);
            r.followup_wall_ms_with_reuse += reused.usage.wall_ms;
            r.followup_wall_ms_without_reuse += fresh.usage.wall_ms;
            let prediction = answer.text.trim().to_string();
            let s = score_answer(&prediction, &q.answers);
            r.em += s.em;
            r.f1 += s.f1;
            r.sub_em += s.sub_em;
            seconds.push(secs);
            eprintln!(
                "[{name} {}/{}] {:.1}s F1 {:.2} | {} -> {:?} (gold {:?})",
                i + 1,
                questions.len(),
                secs,
                s.f1,
                q.question,
                prediction,
                q.answers.first()
            );
            r.predictions.push(Prediction {
                id: q.id.clone(),
                kind: q.kind.clone(),
                question: q.question.clone(),
                answers: q.answers.clone(),
                prediction,
                f1: s.f1,
                seconds: secs,
            });
        }
        let n = questions.len().max(1) as f64;
        r.questions = questions.len();
        r.em /= n;
        r.f1 /= n;
        r.sub_em /= n;
        r.prompt_tokens_per_question /= n;
        r.seconds_per_question_mean = seconds.iter().sum::<f64>() / n;
        r.seconds_per_question_p50 = metarag_eval::percentile(&seconds, 50.0);
        r.seconds_per_question_p95 = metarag_eval::percentile(&seconds, 95.0);
        r.prompt_tokens_per_second = prompt_tokens as f64 * 1e3 / prompt_ms.max(1e-9);
        r.generation_tokens_per_second = gen_tokens as f64 * 1e3 / gen_ms.max(1e-9);
        drop(without);
        if args.lookup_draft > 0 {
            let drafting = LocalLlm::load(config().lookup_draft(args.lookup_draft))?;
            r.drafting = Some(time_drafting(&with, &drafting, &questions, &args).await?);
        }
        if args.grammar_first {
            // A fresh pair, so neither finds the other's prompts in its cache.
            drop(with);
            let first = LocalLlm::load(config().grammar_first(true))?;
            let chosen = LocalLlm::load(config().grammar_first(false))?;
            r.grammar_first = Some(compare_reads(&first, &chosen, &questions, &args).await?);
        }
        reports.push(r);
    }
    let json = serde_json::json!({
        "questions": args.questions,
        "context": args.context,
        "n": questions.len(),
        "models": reports,
    });
    write_json(args.out.as_deref(), &json)?;
    if app.json {
        print_json(&json)?;
        return Ok(ExitCode::SUCCESS);
    }
    if !questions.is_empty() {
        println!(
            "| model | n | EM | F1 | Sub-EM | s/question (mean, p50, p95) | prompt tok/s | gen tok/s | 2nd call: prompt tokens reused | 2nd call ms, reuse vs none |"
        );
        println!("|---|---|---|---|---|---|---|---|---|---|");
    }
    for r in reports.iter().filter(|r| r.questions > 0) {
        println!(
            "| {} | {} | {:.3} | {:.3} | {:.3} | {:.1}, {:.1}, {:.1} | {:.1} | {:.1} | {:.0}% | {:.0} vs {:.0} |",
            r.model,
            r.questions,
            r.em,
            r.f1,
            r.sub_em,
            r.seconds_per_question_mean,
            r.seconds_per_question_p50,
            r.seconds_per_question_p95,
            r.prompt_tokens_per_second,
            r.generation_tokens_per_second,
            100.0 * r.followup_reused_tokens as f64 / r.followup_prompt_tokens.max(1) as f64,
            r.followup_wall_ms_with_reuse / r.questions.max(1) as f64,
            r.followup_wall_ms_without_reuse / r.questions.max(1) as f64,
        );
    }
    let tests: Vec<(&ModelReport, &ThroughputReport)> = reports
        .iter()
        .filter_map(|r| Some((r, r.throughput.as_ref()?)))
        .collect();
    if !tests.is_empty() {
        // llama-bench's own table shape, so the two read side by side.
        println!("\n| model | threads | test | t/s |\n|---|---|---|---|");
        for (r, t) in tests {
            if t.prompt_tokens > 0 {
                println!(
                    "| {} | {} | pp{} | {:.2} ± {:.2} |",
                    r.model, r.threads, t.prompt_tokens, t.prompt_per_s, t.prompt_per_s_sd
                );
            }
            if t.generated_tokens > 0 {
                println!(
                    "| {} | {} | tg{} | {:.2} ± {:.2} |",
                    r.model, r.threads, t.generated_tokens, t.generated_per_s, t.generated_per_s_sd
                );
            }
        }
    }
    let drafts: Vec<(&str, &DraftReport)> = reports
        .iter()
        .filter_map(|r| Some((r.model.as_str(), r.drafting.as_ref()?)))
        .collect();
    if !drafts.is_empty() {
        println!(
            "\n| model | quoting read, draft up to | gen tok/s plain | gen tok/s drafting | speed-up | drafted | accepted | same reply |"
        );
        println!("|---|---|---|---|---|---|---|---|");
        for (model, d) in drafts {
            println!(
                "| {model} | {} | {:.1} | {:.1} | {:.2}x | {} | {} ({:.0}%) | {} of {} |",
                d.lookup_draft,
                d.reads.generation_tokens_per_second_plain,
                d.reads.generation_tokens_per_second_other,
                d.reads.generation_tokens_per_second_other
                    / d.reads.generation_tokens_per_second_plain.max(1e-9),
                d.drafted,
                d.accepted,
                100.0 * d.accepted as f64 / d.drafted.max(1) as f64,
                d.reads.identical,
                d.reads.identical + d.reads.different.len(),
            );
        }
    }
    let grammar: Vec<(&str, &ReadComparison)> = reports
        .iter()
        .filter_map(|r| Some((r.model.as_str(), r.grammar_first.as_ref()?)))
        .collect();
    if !grammar.is_empty() {
        println!(
            "\n| model | quoting read | gen tok/s, grammar on every candidate | gen tok/s, grammar on the chosen token | speed-up | same reply |"
        );
        println!("|---|---|---|---|---|---|");
        for (model, g) in grammar {
            println!(
                "| {model} | {} tokens | {:.1} | {:.1} | {:.2}x | {} of {} |",
                g.generated_plain,
                g.generation_tokens_per_second_plain,
                g.generation_tokens_per_second_other,
                g.generation_tokens_per_second_other
                    / g.generation_tokens_per_second_plain.max(1e-9),
                g.identical,
                g.identical + g.different.len(),
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Args, Debug)]
pub struct RerankArgs {
    /// Corpus of `{doc_id, title, text}` lines (indexed once under the data dir).
    #[arg(long)]
    corpus: PathBuf,
    /// Questions with supporting titles.
    #[arg(long)]
    questions: PathBuf,
    /// Questions to run (the first N).
    #[arg(long, default_value_t = 20)]
    n: usize,
    /// Hybrid candidates reranked per question.
    #[arg(long, default_value_t = 20)]
    top: usize,
    /// Passages are cut to this many characters in the reranking prompt.
    #[arg(long, default_value_t = 600)]
    max_chars: usize,
    /// Rerank with this cross-encoder directory (config.json, tokenizer.json,
    /// model.safetensors) instead of the local chat model.
    #[arg(long, value_name = "DIR")]
    cross_encoder: Option<PathBuf>,
    /// Also write the JSON report here.
    #[arg(long)]
    out: Option<PathBuf>,
}

/// Binary-relevance metrics of one ranked list of titles.
fn ranking_metrics(titles: &[String], gold: &[String], ks: &[usize]) -> (Vec<f64>, f64) {
    let relevant = |t: &String| gold.iter().any(|g| g == t);
    // Count each gold title once, at its best rank (chunks of one passage repeat titles).
    let mut seen = std::collections::HashSet::new();
    let first_ranks: Vec<usize> = titles
        .iter()
        .enumerate()
        .filter(|(_, t)| relevant(t) && seen.insert(t.as_str()))
        .map(|(i, _)| i)
        .collect();
    let recall = ks
        .iter()
        .map(|&k| first_ranks.iter().filter(|&&r| r < k).count() as f64 / gold.len().max(1) as f64)
        .collect();
    let dcg: f64 = first_ranks
        .iter()
        .filter(|&&r| r < 10)
        .map(|&r| 1.0 / ((r + 2) as f64).log2())
        .sum();
    let ideal: f64 = (0..gold.len().min(10))
        .map(|r| 1.0 / ((r + 2) as f64).log2())
        .sum();
    (recall, if ideal > 0.0 { dcg / ideal } else { 0.0 })
}

/// Measures the local chat model as a reranker.
pub async fn rerank(app: &App, args: RerankArgs) -> Result<ExitCode> {
    let embedder = app.embedder()?;
    let (dir, _) = crate::bench::corpus_index(app, &args.corpus, None, &embedder).await?;
    let index = app.open_index(&dir, &embedder)?;
    let retriever = metarag_retrieve::HybridRetriever::new(embedder, index, app.config.retrieval());
    let mut questions = metarag_eval::load_dataset(&args.questions)?;
    questions.truncate(args.n);
    let reranker: Arc<dyn DynReranker> = match &args.cross_encoder {
        Some(dir) => {
            let name = dir.file_name().map_or_else(
                || "cross-encoder".into(),
                |n| n.to_string_lossy().into_owned(),
            );
            Arc::new(CrossEncoder::load(dir, &name)?)
        }
        None => Arc::new(LlmReranker::new(app.local_llm(None)?, args.max_chars)),
    };
    let ks = [2usize, 5, 10];
    let (mut before_r, mut after_r) = (vec![0.0; ks.len()], vec![0.0; ks.len()]);
    let mut fused_r = vec![0.0; ks.len()];
    let (mut before_ndcg, mut after_ndcg, mut fused_ndcg) = (0.0, 0.0, 0.0);
    let mut per_question = Vec::new();
    let (mut pairs, mut rerank_secs) = (0usize, 0.0);
    for (qi, q) in questions.iter().enumerate() {
        let request = SearchRequest {
            mode: SearchMode::Hybrid,
            ..SearchRequest::new(q.question.clone(), args.top)
        };
        let hits = retriever.search(&request).await?;
        let titles: Vec<String> = hits.iter().map(|h| h.chunk.title.clone()).collect();
        let texts: Vec<String> = hits
            .iter()
            .map(|h| format!("{}: {}", h.chunk.title, h.chunk.draft.text))
            .collect();
        let started = Instant::now();
        let scores = reranker.score(&q.question, &texts).await?;
        rerank_secs += started.elapsed().as_secs_f64();
        pairs += texts.len();
        let mut order: Vec<usize> = (0..hits.len()).collect();
        // Stable: ties keep the fused order.
        order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
        let reranked: Vec<String> = order.iter().map(|&i| titles[i].clone()).collect();
        // A weak judge is better used as one more ranking than as the only one: reciprocal
        // rank fusion of the hybrid order and the reranker's order (k = 60).
        let mut llm_rank = vec![0usize; hits.len()];
        for (rank, &i) in order.iter().enumerate() {
            llm_rank[i] = rank;
        }
        let fused_score = |i: usize| 1.0 / (61.0 + i as f64) + 1.0 / (61.0 + llm_rank[i] as f64);
        let mut fused_order: Vec<usize> = (0..hits.len()).collect();
        fused_order.sort_by(|&a, &b| fused_score(b).total_cmp(&fused_score(a)));
        let fused: Vec<String> = fused_order.iter().map(|&i| titles[i].clone()).collect();
        let (rb, nb) = ranking_metrics(&titles, &q.supporting_titles, &ks);
        let (ra, na) = ranking_metrics(&reranked, &q.supporting_titles, &ks);
        let (rf, nf) = ranking_metrics(&fused, &q.supporting_titles, &ks);
        for i in 0..ks.len() {
            before_r[i] += rb[i];
            after_r[i] += ra[i];
            fused_r[i] += rf[i];
        }
        before_ndcg += nb;
        after_ndcg += na;
        fused_ndcg += nf;
        per_question.push(serde_json::json!({
            "id": q.id,
            "supporting_titles": q.supporting_titles,
            "titles": titles,
            "scores": scores,
            "ndcg10": [nb, na, nf],
        }));
        eprintln!(
            "[rerank {}/{}] NDCG@10 {:.2} -> {:.2} reranked, {:.2} fused ({:.1} pairs/s)",
            qi + 1,
            questions.len(),
            nb,
            na,
            nf,
            pairs as f64 / rerank_secs.max(1e-9)
        );
    }
    let n = questions.len().max(1) as f64;
    let json = serde_json::json!({
        "corpus": args.corpus,
        "questions": args.questions,
        "n": questions.len(),
        "top": args.top,
        "reranker": Reranker::model_id(&reranker),
        "ks": ks,
        "recall_before": before_r.iter().map(|v| v / n).collect::<Vec<_>>(),
        "recall_after": after_r.iter().map(|v| v / n).collect::<Vec<_>>(),
        "ndcg10_before": before_ndcg / n,
        "ndcg10_after": after_ndcg / n,
        "recall_fused": fused_r.iter().map(|v| v / n).collect::<Vec<_>>(),
        "ndcg10_fused": fused_ndcg / n,
        "per_question": per_question,
        "pairs": pairs,
        "pairs_per_second": pairs as f64 / rerank_secs.max(1e-9),
    });
    write_json(args.out.as_deref(), &json)?;
    print_json(&json)?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranking_metrics_count_each_gold_title_once() {
        let t = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let (r, ndcg) = ranking_metrics(&t(&["a", "x", "a", "b"]), &t(&["a", "b"]), &[1, 2, 4]);
        assert_eq!(r, vec![0.5, 0.5, 1.0]);
        let ideal = 1.0 + 1.0 / 3f64.log2();
        let got = 1.0 + 1.0 / 5f64.log2();
        assert!((ndcg - got / ideal).abs() < 1e-12);
    }
}
