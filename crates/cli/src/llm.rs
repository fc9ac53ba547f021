//! The chat-model commands: `chat`, `serve-llm` and `cache`, and building the configured
//! backend with its call cache and ledger.

use crate::app::{App, UserError};
use crate::config::LlmBackend;
use crate::output::print_json;
use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use metarag_core::{ChatRequest, DynLlm, GenParams, Llm, Message};
use metarag_models::{
    CachedLlm, CallCache, Ledger, LocalLlm, LocalLlmConfig, MeteredLlm, OpenAiLlm,
};
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

/// The configured chat model, ready for calls, and the ledger its calls are recorded in.
pub struct LlmHandle {
    /// The model behind its cache (if on) and meter.
    pub llm: Arc<dyn DynLlm>,
    /// Usage of this run.
    pub ledger: Arc<Ledger>,
    /// The local model itself, when the backend is local (for the LLM reranker).
    pub local: Option<Arc<LocalLlm>>,
}

impl App {
    /// Loads the configured local model (installed name or `llm.path`).
    pub fn local_llm(&self, model: Option<&str>) -> Result<Arc<LocalLlm>> {
        let l = &self.config.raw.llm;
        let (id, path) = match (model, &l.path) {
            // `--model ./file.gguf`: any GGUF file, without installing it.
            (Some(file), _) if file.ends_with(".gguf") => {
                let path = std::path::PathBuf::from(file);
                if !path.is_file() {
                    return Err(UserError(format!("{file}: no such GGUF file")).into());
                }
                (
                    path.file_stem()
                        .map_or_else(|| "local".into(), |s| s.to_string_lossy().into_owned()),
                    path,
                )
            }
            (Some(name), _) => (name.to_string(), self.models.gguf_path(name)?),
            (None, Some(path)) => (
                path.file_stem()
                    .map_or_else(|| "local".into(), |s| s.to_string_lossy().into_owned()),
                path.clone(),
            ),
            (None, None) => (l.model.clone(), self.models.gguf_path(&l.model)?),
        };
        let config = LocalLlmConfig::new(id, path)
            .threads(l.threads)
            .context_size(l.context_size)
            .prefix_reuse(l.prefix_reuse);
        let llm = LocalLlm::load(config)?;
        tracing::info!(info = ?llm.info(), "local model loaded");
        Ok(Arc::new(llm))
    }

    /// Builds the configured backend; with `cache`, behind the call cache.
    pub async fn llm(&self, cache: bool, model: Option<&str>) -> Result<LlmHandle> {
        let mut local_model = None;
        let base: Arc<dyn DynLlm> = match self.config.raw.llm.backend {
            LlmBackend::Local => {
                let model = model.map(str::to_string);
                let this = self.clone();
                let local: Arc<LocalLlm> =
                    tokio::task::spawn_blocking(move || this.local_llm(model.as_deref()))
                        .await
                        .context("model loading task")??;
                local_model = Some(local.clone());
                local
            }
            LlmBackend::Openai => {
                let mut c = self.config.openai();
                if let Some(m) = model {
                    c.model = m.to_string();
                }
                Arc::new(OpenAiLlm::new(c)?)
            }
        };
        let ledger = Arc::new(Ledger::new(self.config.pricing(Llm::model_id(&base))));
        let llm: Arc<dyn DynLlm> = if cache {
            let cache = Arc::new(CallCache::open(self.config.cache_path())?);
            Arc::new(MeteredLlm::new(CachedLlm::new(base, cache), ledger.clone()))
        } else {
            Arc::new(MeteredLlm::new(base, ledger.clone()))
        };
        Ok(LlmHandle {
            llm,
            ledger,
            local: local_model,
        })
    }

    /// `metarag chat`
    pub async fn chat(&self, args: ChatArgs) -> Result<ExitCode> {
        let handle = self.llm(args.cache, args.model.as_deref()).await?;
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
        };
        request.validate().map_err(|e| UserError(e.to_string()))?;
        let completion = if self.json {
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
        if self.json {
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

    /// `metarag serve-llm`
    pub async fn serve_llm(&self, args: ServeLlmArgs) -> Result<ExitCode> {
        let handle = self.llm(args.cache, args.model.as_deref()).await?;
        let limits = metarag_server::ServeLimits {
            concurrent: 1,
            queue: args.queue,
            max_tokens: args.max_tokens,
        };
        let listener = tokio::net::TcpListener::bind(&args.addr)
            .await
            .map_err(|e| UserError(format!("cannot listen on {}: {e}", args.addr)))?;
        let addr = listener.local_addr()?;
        eprintln!(
            "serving {} at http://{addr}/v1 (OpenAI-compatible: /v1/chat/completions, /v1/models); Ctrl-C stops",
            Llm::model_id(&handle.llm)
        );
        let router = metarag_server::openai_router(handle.llm.clone(), limits);
        metarag_server::serve(listener, router, async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
        .context("serving")?;
        let total = handle.ledger.total();
        eprintln!(
            "served {} calls: {} prompt tokens ({} reused), {} generated",
            total.calls, total.prompt_tokens, total.cached_prompt_tokens, total.completion_tokens
        );
        Ok(ExitCode::SUCCESS)
    }

    /// `metarag cache ...`
    pub fn cache(&self, command: CacheCommand) -> Result<ExitCode> {
        let path = self.config.cache_path();
        let cache = CallCache::open(&path)?;
        match command {
            CacheCommand::Stats => {
                let stats = cache.stats()?;
                if self.json {
                    print_json(&stats)?;
                } else {
                    println!("{}", stats.path.display());
                    println!(
                        "{} calls stored, {} hits served, {:.1} MB",
                        stats.entries,
                        stats.hits,
                        stats.bytes as f64 / 1e6
                    );
                    for (model, n) in &stats.by_model {
                        println!("  {model}\t{n}");
                    }
                }
            }
            CacheCommand::Clear { model } => {
                let n = cache.clear(model.as_deref())?;
                if self.json {
                    print_json(&serde_json::json!({ "removed": n }))?;
                } else {
                    println!("removed {n} stored calls from {}", path.display());
                }
            }
        }
        Ok(ExitCode::SUCCESS)
    }
}

/// `metarag chat`
#[derive(Args, Debug)]
pub struct ChatArgs {
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

/// `metarag serve-llm`
#[derive(Args, Debug)]
pub struct ServeLlmArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8089")]
    pub addr: String,
    /// Installed model or GGUF file to serve instead of the configured one.
    #[arg(long)]
    pub model: Option<String>,
    /// Requests allowed to wait while one runs; beyond this the server answers 503.
    #[arg(long, default_value_t = 16)]
    pub queue: usize,
    /// Largest max_tokens a request may ask for.
    #[arg(long, default_value_t = 2048)]
    pub max_tokens: u32,
    /// Serve repeated calls from the call cache.
    #[arg(long)]
    pub cache: bool,
}

/// `metarag cache`
#[derive(Subcommand, Debug)]
pub enum CacheCommand {
    /// How many calls are stored and how often they were served.
    Stats,
    /// Remove stored calls.
    Clear {
        /// Only this model's calls (a model id as `cache stats` lists it).
        #[arg(long)]
        model: Option<String>,
    },
}
