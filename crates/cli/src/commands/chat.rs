//! `metarag chat`: one message to the configured chat model, its reply streamed.

use crate::app::{App, UserError};
use crate::output::print_json;
use anyhow::Result;
use clap::Args as ClapArgs;
use metarag_core::{ChatRequest, GenParams, Llm, Message};
use std::io::Write;
use std::process::ExitCode;

/// `metarag chat`
#[derive(ClapArgs, Debug)]
pub struct Args {
    /// The message to send.
    pub prompt: String,
    /// A system prompt.
    #[arg(long)]
    pub system: Option<String>,
    /// Installed model or GGUF file to use instead of the configured one (local backend),
    /// or the server's model name (openai backend).
    #[arg(long)]
    pub model: Option<String>,
    /// Most tokens to generate.
    #[arg(long, default_value_t = 256)]
    pub max_tokens: u32,
    /// Sampling temperature (0: greedy, deterministic).
    #[arg(long, default_value_t = 0.0)]
    pub temperature: f32,
    /// Sampler seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Answer from the call cache when the same call was made before (and store this one).
    #[arg(long)]
    pub cache: bool,
}

/// `metarag chat`
pub async fn run(app: &App, args: Args) -> Result<ExitCode> {
    let handle = app.llm(args.cache, args.model.as_deref()).await?;
    let mut messages = Vec::new();
    if let Some(system) = &args.system {
        messages.push(Message::system(system.clone()));
    }
    messages.push(Message::user(args.prompt.clone()));
    let request = ChatRequest {
        messages,
        params: GenParams {
            temperature: args.temperature,
            max_tokens: args.max_tokens,
            seed: args.seed,
            ..GenParams::default()
        },
        schema: None,
        keep_prefix: false,
        collections: Vec::new(),
    };
    request.validate().map_err(|e| UserError(e.to_string()))?;
    let completion = if app.json {
        handle.llm.chat(&request).await?
    } else {
        let sink = |piece: &str| {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(piece.as_bytes());
            let _ = out.flush();
        };
        let c = handle.llm.chat_stream(&request, &sink).await?;
        println!();
        c
    };
    if app.json {
        print_json(&serde_json::json!({
            "completion": completion,
            "usage": handle.ledger.snapshot(),
        }))?;
    } else {
        let u = &completion.usage;
        let rate = |n: u64, ms: Option<f64>| match ms {
            Some(ms) if ms > 0.0 => format!(" ({:.1} tok/s)", n as f64 * 1e3 / ms),
            _ => String::new(),
        };
        eprintln!(
            "[{}{}: {} prompt tokens{}, {} reused; {} generated{}; {:.1} s]",
            completion.model,
            if completion.cached { ", cached" } else { "" },
            u.prompt_tokens,
            rate(u.prompt_tokens - u.cached_prompt_tokens, u.prompt_ms),
            u.cached_prompt_tokens,
            u.completion_tokens,
            rate(u.completion_tokens, u.generation_ms),
            u.wall_ms / 1e3,
        );
    }
    Ok(ExitCode::SUCCESS)
}
