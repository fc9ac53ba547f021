//! The embedded chat model: a GGUF file run in-process by llama.cpp on the CPU.
//!
//! llama.cpp's context borrows its model and is not thread-safe, so both live on one
//! dedicated worker thread that takes jobs from a channel; async callers await a oneshot
//! reply. Inference is CPU-bound and serial anyway (one context), so the thread costs
//! nothing and keeps blocking work off the async runtime.
//!
//! The worker keeps the tokens currently in the KV cache. A new prompt that starts with the
//! same tokens (same system prompt and evidence, another question about it) only evaluates
//! the part after the longest common prefix: the calls metarag makes for one question share
//! long prefixes, and prompt evaluation dominates on a CPU.

use crate::{Error, Result};
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::kv_cache::KvCacheConversionError;
use llama_cpp_2::context::params::{LlamaContextParams, LlamaPoolingType};
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel};
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use metarag_core::{
    ChatRequest, Completion, FinishReason, Llm, Message, Sample, TokenLogprob, TokenSink, Usage,
};
use serde::Serialize;
use std::num::NonZeroU32;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, OnceLock};
use std::time::Instant;
use tokio::sync::{mpsc as tmpsc, oneshot};
use tracing::Instrument;

/// Settings of the embedded model.
#[derive(Debug, Clone, PartialEq)]
pub struct LocalLlmConfig {
    /// Name recorded in traces and the call cache (the model's cache name, or the file stem).
    pub model_id: String,
    /// The GGUF file.
    pub path: PathBuf,
    /// CPU threads for generation and prompt evaluation; 0 means one per available core.
    pub threads: usize,
    /// Context window in tokens (prompt plus completion).
    pub context_size: u32,
    /// Most prompt tokens evaluated in one llama.cpp batch.
    pub batch_size: u32,
    /// Keep the KV cache of the longest common prefix between consecutive calls.
    pub prefix_reuse: bool,
    /// With prefix reuse: keep a second prompt in the KV cache, the one a call sharing
    /// little with it set aside, so that a later call over the same prompt finds it again
    /// (metarag's check over its sources after a closed-book question).
    pub park_prompts: bool,
    /// Let [`LocalLlm::hidden_state`] read the model's last hidden layer (llama.cpp's
    /// embeddings output, no pooling). Off by default: only a monitor probe needs it.
    pub hidden_states: bool,
    /// Prompt-lookup drafting: the most tokens guessed ahead per step from an earlier
    /// occurrence of the text just generated (in the prompt or the reply), checked by the
    /// model in one batch; 0 turns it off. See [`LocalLlmConfig::lookup_draft`].
    pub lookup_draft: usize,
    /// Check a JSON grammar against every candidate token before choosing one (llama.cpp's
    /// plain grammar sampler) instead of checking only the token chosen. See
    /// [`LocalLlmConfig::grammar_first`].
    pub grammar_first: bool,
}

impl LocalLlmConfig {
    /// Defaults for a model file: all cores, 4096-token context, prefix reuse on.
    pub fn new(model_id: impl Into<String>, path: impl Into<PathBuf>) -> Self {
        LocalLlmConfig {
            model_id: model_id.into(),
            path: path.into(),
            threads: 0,
            context_size: 4096,
            batch_size: 512,
            prefix_reuse: true,
            park_prompts: true,
            hidden_states: false,
            lookup_draft: 0,
            grammar_first: false,
        }
    }

    /// Sets the thread count (0: one per core).
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = threads;
        self
    }

    /// Sets the context window.
    pub fn context_size(mut self, tokens: u32) -> Self {
        self.context_size = tokens;
        self
    }

    /// Turns prefix reuse on or off.
    pub fn prefix_reuse(mut self, on: bool) -> Self {
        self.prefix_reuse = on;
        self
    }

    /// Turns the parked second prompt on or off (see [`LocalLlmConfig::park_prompts`]).
    pub fn park_prompts(mut self, on: bool) -> Self {
        self.park_prompts = on;
        self
    }

    /// Turns the hidden-state output on or off (see [`LocalLlm::hidden_state`]).
    pub fn hidden_states(mut self, on: bool) -> Self {
        self.hidden_states = on;
        self
    }

    /// Sets prompt-lookup drafting: up to `tokens` guessed ahead per step (0: off).
    ///
    /// Much of what metarag asks the model to write is already in its prompt: a read
    /// copies a source's sentence as its quote, a reply repeats the JSON keys the prompt
    /// spells out. After each token, the longest recent stretch of the text (up to three
    /// tokens) is looked up earlier in the prompt and reply, and the tokens that followed
    /// it there are the draft. The model evaluates the token and the draft in one batch
    /// and each position's sample is taken as without a draft, by the same sampler
    /// (grammar and seed included): the draft is kept while it agrees and dropped from the
    /// first token that does not. Only single-sample calls draft. Off by default: on the
    /// 2-core machine measured (docs/results/llm-local.md) a batch of a few tokens costs
    /// nearly as much as evaluating them one by one, so the quoting reads generated 16%
    /// slower with it, and batched logits differ from one token's in the last bits, so a
    /// near tie may flip (2 of 10 replies differed).
    pub fn lookup_draft(mut self, tokens: usize) -> Self {
        self.lookup_draft = tokens;
        self
    }

    /// Sets how a JSON grammar constrains each token.
    ///
    /// Off (the default), a token is chosen from the model's own distribution and then
    /// checked against the grammar alone; only when the grammar refuses it is the whole
    /// vocabulary filtered and the choice made again (llama.cpp's `common_sampler` does the
    /// same). Checking every one of the 150k candidates per token cost about a third of
    /// the generation time of a quoting read under its grammar on two cores
    /// (docs/results/llm-local.md), and a model that follows the format is refused rarely.
    /// The reply is the same either way under greedy decoding (the best token the grammar
    /// allows is the best token whenever it is allowed), and a sample is drawn from the
    /// same distribution (a refused draw is redrawn from the allowed tokens in proportion
    /// to their probability); top-p then cuts the full distribution rather than the
    /// allowed part, and a seed's draws differ between the two ways. On: filter first.
    pub fn grammar_first(mut self, on: bool) -> Self {
        self.grammar_first = on;
        self
    }
}

/// The model's last hidden layer (after its final norm) over the tokens of a completion,
/// read while the model is fed the prompt and that completion: what a probe of the
/// model's own state reads to tell a right answer from a wrong one.
#[derive(Debug, Clone, PartialEq)]
pub struct HiddenState {
    /// At the completion's last token.
    pub last: Vec<f32>,
    /// Averaged over the completion's tokens.
    pub mean: Vec<f32>,
    /// Tokens of the completion.
    pub tokens: usize,
    /// Tokens of the prompt before it.
    pub prompt_tokens: usize,
}

/// What the loaded model file says about itself.
#[derive(Debug, Clone, Serialize)]
pub struct LocalLlmInfo {
    /// `general.name` from the GGUF metadata, if present.
    pub name: Option<String>,
    /// Parameter count.
    pub parameters: u64,
    /// File size in bytes of the weights.
    pub size_bytes: u64,
    /// Context length the model was trained with.
    pub trained_context: u32,
    /// Context window of this instance.
    pub context_size: u32,
    /// Threads in use.
    pub threads: usize,
    /// Whether the model ships a chat template (otherwise ChatML is used).
    pub has_chat_template: bool,
}

enum Job {
    Chat {
        request: ChatRequest,
        tokens: Option<tmpsc::UnboundedSender<String>>,
        reply: oneshot::Sender<Result<Completion>>,
    },
    YesProbability {
        messages: Vec<Message>,
        reply: oneshot::Sender<Result<(f32, Usage)>>,
    },
    CountTokens {
        messages: Vec<Message>,
        reply: oneshot::Sender<Result<usize>>,
    },
    HiddenState {
        messages: Vec<Message>,
        completion: String,
        reply: oneshot::Sender<Result<HiddenState>>,
    },
    /// Clear the KV cache but the kept prefix: the next call evaluates its whole prompt
    /// unless it starts with that prefix.
    Forget { reply: oneshot::Sender<()> },
    /// Time llama-bench's two tests (see [`LocalLlm::throughput`]).
    Throughput {
        prompt: usize,
        generate: usize,
        reply: oneshot::Sender<Result<Throughput>>,
    },
}

/// One run of llama-bench's two tests on the loaded model: a prompt of `prompt_tokens`
/// evaluated in batches from an empty cache (`pp512`), and `generated_tokens` decoded
/// one at a time from an empty cache (`tg128`), as llama-bench runs them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Throughput {
    /// Prompt tokens evaluated.
    pub prompt_tokens: usize,
    /// Seconds they took.
    pub prompt_s: f64,
    /// Tokens decoded one by one.
    pub generated_tokens: usize,
    /// Seconds they took.
    pub generate_s: f64,
}

impl Throughput {
    /// Prompt tokens per second.
    pub fn prompt_per_s(&self) -> f64 {
        self.prompt_tokens as f64 / self.prompt_s.max(f64::EPSILON)
    }

    /// Generated tokens per second.
    pub fn generated_per_s(&self) -> f64 {
        self.generated_tokens as f64 / self.generate_s.max(f64::EPSILON)
    }
}

/// A GGUF chat model run in-process with llama.cpp. Cheap to share behind an `Arc`; calls
/// are served one at a time in arrival order.
pub struct LocalLlm {
    model_id: String,
    jobs: mpsc::Sender<Job>,
    info: LocalLlmInfo,
    cancelled: Arc<AtomicU64>,
    drafts: Arc<DraftCounts>,
}

impl std::fmt::Debug for LocalLlm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalLlm")
            .field("model_id", &self.model_id)
            .field("info", &self.info)
            .finish()
    }
}

fn backend() -> Result<&'static LlamaBackend> {
    static BACKEND: OnceLock<std::result::Result<LlamaBackend, String>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            // The CPU kernels are a module picked for this CPU (crate::cpu); without one
            // llama.cpp has no device to run on. This also routes llama.cpp's logging
            // (every tensor it loads) into tracing (RUST_LOG=llama_cpp_2=debug).
            crate::cpu::load_backends()?;
            LlamaBackend::init().map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| Error::Llama(format!("initialising llama.cpp: {e}")))
}

impl LocalLlm {
    /// Loads the model and starts its worker thread. Blocks while the file is mapped and
    /// the context allocated (about a second for a 0.5B model).
    pub fn load(config: LocalLlmConfig) -> Result<Self> {
        if !config.path.is_file() {
            return Err(Error::Config {
                path: config.path.clone(),
                reason: "no such GGUF file".into(),
            });
        }
        if config.context_size < 256 {
            return Err(Error::Config {
                path: config.path.clone(),
                reason: "llm.context_size must be at least 256 tokens".into(),
            });
        }
        let backend = backend()?;
        let (jobs, rx) = mpsc::channel::<Job>();
        let (ready_tx, ready_rx) = mpsc::sync_channel::<Result<LocalLlmInfo>>(1);
        let model_id = config.model_id.clone();
        let cancelled = Arc::new(AtomicU64::new(0));
        let drafts = Arc::new(DraftCounts::default());
        std::thread::Builder::new()
            .name(format!("llama:{}", config.model_id))
            .spawn({
                let cancelled = cancelled.clone();
                let drafts = drafts.clone();
                move || worker(backend, config, rx, ready_tx, cancelled, drafts)
            })
            .map_err(|e| Error::Llama(format!("starting the model thread: {e}")))?;
        let info = ready_rx
            .recv()
            .map_err(|_| Error::Llama("the model thread exited while loading".into()))??;
        Ok(LocalLlm {
            model_id,
            jobs,
            info,
            cancelled,
            drafts,
        })
    }

    /// What the model file says about itself.
    pub fn info(&self) -> &LocalLlmInfo {
        &self.info
    }

    /// Chat calls stopped (or never started) because their caller went away: a closed
    /// stream, an aborted run. Their tokens are not generated for nobody.
    pub fn cancelled_calls(&self) -> u64 {
        self.cancelled.load(Ordering::Relaxed)
    }

    /// Prompt-lookup drafting so far (see [`LocalLlmConfig::lookup_draft`]): tokens
    /// drafted, and those the model's own samples agreed with.
    pub fn drafted_tokens(&self) -> (u64, u64) {
        (
            self.drafts.drafted.load(Ordering::Relaxed),
            self.drafts.accepted.load(Ordering::Relaxed),
        )
    }

    /// Probability that the model's next word is "yes" rather than "no" after `messages`
    /// (read from the logits of the first generated token; nothing is sampled). This is
    /// how the local model serves as a pointwise reranker or a calibrated yes/no judge.
    pub async fn yes_probability(&self, messages: Vec<Message>) -> Result<(f32, Usage)> {
        let (reply, rx) = oneshot::channel();
        self.send(Job::YesProbability { messages, reply })?;
        rx.await.map_err(|_| gone())?
    }

    /// The last hidden layer over `completion` as the reply to `messages` (the prompt's
    /// cached prefix is reused as for a chat call, so right after the call that wrote the
    /// completion this costs only the completion's tokens). Needs a model loaded with
    /// [`LocalLlmConfig::hidden_states`]; otherwise a configuration error.
    pub async fn hidden_state(
        &self,
        messages: Vec<Message>,
        completion: impl Into<String>,
    ) -> Result<HiddenState> {
        let (reply, rx) = oneshot::channel();
        self.send(Job::HiddenState {
            messages,
            completion: completion.into(),
            reply,
        })?;
        rx.await.map_err(|_| gone())?
    }

    /// Times llama-bench's `pp` and `tg` tests on this engine, so that its speed can be set
    /// beside llama.cpp's own on the same model file and threads: `prompt` tokens decoded
    /// in batches of the configured batch size with logits for the last one only, then
    /// `generate` tokens decoded one per call with logits for each, both from an empty
    /// cache and over pseudo-random tokens (fixed, so runs compare), as llama-bench does.
    /// Nothing is sampled: this is the model's evaluation speed alone, the ceiling a chat
    /// call's prompt and generation rates approach. The KV cache is emptied before and
    /// after, the kept prefix included.
    pub async fn throughput(&self, prompt: usize, generate: usize) -> Result<Throughput> {
        let (reply, rx) = oneshot::channel();
        self.send(Job::Throughput {
            prompt,
            generate,
            reply,
        })?;
        rx.await.map_err(|_| gone())?
    }

    /// Tokens the rendered chat prompt takes.
    pub async fn count_tokens(&self, messages: Vec<Message>) -> Result<usize> {
        let (reply, rx) = oneshot::channel();
        self.send(Job::CountTokens { messages, reply })?;
        rx.await.map_err(|_| gone())?
    }

    fn send(&self, job: Job) -> Result<()> {
        self.jobs.send(job).map_err(|_| gone())
    }

    async fn run(&self, request: &ChatRequest, sink: Option<TokenSink<'_>>) -> Result<Completion> {
        request
            .validate()
            .map_err(|e| Error::Request(e.to_string()))?;
        let started = Instant::now();
        let (reply, rx) = oneshot::channel();
        let (tokens, mut token_rx) = match sink {
            Some(_) => {
                let (tx, rx) = tmpsc::unbounded_channel();
                (Some(tx), Some(rx))
            }
            None => (None, None),
        };
        self.send(Job::Chat {
            request: request.clone(),
            tokens,
            reply,
        })?;
        if let (Some(sink), Some(rx)) = (sink, token_rx.as_mut()) {
            while let Some(piece) = rx.recv().await {
                sink(&piece);
            }
        }
        let mut completion = rx.await.map_err(|_| gone())??;
        completion.usage.wall_ms = started.elapsed().as_secs_f64() * 1e3;
        Ok(completion)
    }
}

fn gone() -> Error {
    Error::Llama("the model thread has stopped (it panicked or failed earlier)".into())
}

impl Llm for LocalLlm {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    /// llama.cpp gives the logits of every generated token, decodes samples side by side
    /// over the evaluated prompt, and constrains JSON by a grammar.
    fn capabilities(&self) -> metarag_core::Capabilities {
        metarag_core::Capabilities {
            logprobs: true,
            samples: true,
            json_schema: true,
        }
    }

    async fn chat(&self, request: &ChatRequest) -> metarag_core::Result<Completion> {
        let span = tracing::info_span!("llm.local", model = %self.model_id);
        Ok(self.run(request, None).instrument(span).await?)
    }

    async fn chat_stream(
        &self,
        request: &ChatRequest,
        sink: TokenSink<'_>,
    ) -> metarag_core::Result<Completion> {
        let span = tracing::info_span!("llm.local", model = %self.model_id, stream = true);
        Ok(self.run(request, Some(sink)).instrument(span).await?)
    }

    /// Clears the KV cache once the calls queued before have run.
    async fn forget_context(&self) {
        let (reply, done) = oneshot::channel();
        // A stopped model thread holds no context to forget.
        if self.send(Job::Forget { reply }).is_ok() {
            let _ = done.await;
        }
    }
}

fn llama_err(what: &str) -> impl Fn(String) -> Error + '_ {
    move |e| Error::Llama(format!("{what}: {e}"))
}

/// Counts of prompt-lookup drafting, shared by the worker and its handle.
#[derive(Debug, Default)]
struct DraftCounts {
    drafted: AtomicU64,
    accepted: AtomicU64,
}

fn worker(
    backend: &'static LlamaBackend,
    config: LocalLlmConfig,
    jobs: mpsc::Receiver<Job>,
    ready: mpsc::SyncSender<Result<LocalLlmInfo>>,
    cancelled: Arc<AtomicU64>,
    drafts: Arc<DraftCounts>,
) {
    let threads = if config.threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        config.threads
    };
    let loaded = LlamaModel::load_from_file(backend, &config.path, &LlamaModelParams::default())
        .map_err(|e| Error::Config {
            path: config.path.clone(),
            reason: format!("llama.cpp cannot load this GGUF file: {e}"),
        });
    let model = match loaded {
        Ok(m) => m,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(config.context_size))
        .with_n_batch(config.batch_size)
        .with_n_ubatch(config.batch_size)
        .with_n_threads(threads as i32)
        .with_n_threads_batch(threads as i32)
        // Samples of one call decode side by side as sequences sharing the prompt's cells;
        // a unified cache lets each use the whole window instead of an equal share of it.
        // Three ids more: the parked prompt, a scratch id to swap it with, and the kept
        // prefix (`Engine::arrange`).
        .with_n_seq_max(metarag_core::MAX_SAMPLES + 3)
        .with_kv_unified(true);
    // Hidden states per token: no pooling, so that a chat call's outputs stay per token.
    let params = if config.hidden_states {
        params
            .with_embeddings(true)
            .with_pooling_type(LlamaPoolingType::None)
    } else {
        params
    };
    let ctx = match model.new_context(backend, params) {
        Ok(c) => c,
        Err(e) => {
            let _ = ready.send(Err(Error::Llama(format!("creating the context: {e}"))));
            return;
        }
    };
    let template = model.chat_template(None).ok();
    let info = LocalLlmInfo {
        name: model.meta_val_str("general.name").ok(),
        parameters: model.n_params(),
        size_bytes: model.size(),
        trained_context: model.n_ctx_train(),
        context_size: ctx.n_ctx(),
        threads,
        has_chat_template: template.is_some(),
    };
    let mut engine = Engine {
        model: &model,
        ctx,
        kv: Vec::new(),
        parked: Vec::new(),
        kept: Vec::new(),
        template,
        model_id: config.model_id.clone(),
        prefix_reuse: config.prefix_reuse,
        park_prompts: config.prefix_reuse && config.park_prompts,
        batch_size: config.batch_size as usize,
        yes_no: None,
        hidden_states: config.hidden_states,
        path: config.path.clone(),
        lookup_draft: config.lookup_draft,
        grammar_first: config.grammar_first,
        drafts,
    };
    if ready.send(Ok(info)).is_err() {
        return;
    }
    while let Ok(job) = jobs.recv() {
        match job {
            Job::Chat {
                request,
                tokens,
                reply,
            } => {
                // The caller dropped its future while the job waited: nobody will read it.
                if reply.is_closed() {
                    cancelled.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                let result = engine.chat(&request, tokens.as_ref(), &|| reply.is_closed());
                if let Err(Error::Cancelled) = result {
                    cancelled.fetch_add(1, Ordering::Relaxed);
                }
                if result.is_err() {
                    engine.reset();
                }
                let _ = reply.send(result);
            }
            Job::YesProbability { messages, reply } => {
                let result = engine.yes_probability(&messages);
                if result.is_err() {
                    engine.reset();
                }
                let _ = reply.send(result);
            }
            Job::CountTokens { messages, reply } => {
                let _ = reply.send(engine.render(&messages).map(|p| engine.tokenize(&p).len()));
            }
            Job::HiddenState {
                messages,
                completion,
                reply,
            } => {
                let result = engine.hidden_state(&messages, &completion);
                if result.is_err() {
                    engine.reset();
                }
                let _ = reply.send(result);
            }
            Job::Forget { reply } => {
                engine.forget();
                let _ = reply.send(());
            }
            Job::Throughput {
                prompt,
                generate,
                reply,
            } => {
                let result = engine.throughput(prompt, generate);
                engine.reset();
                let _ = reply.send(result);
            }
        }
    }
}

struct Engine<'m> {
    model: &'m LlamaModel,
    ctx: LlamaContext<'m>,
    /// Tokens whose keys and values are in the KV cache, at positions 0..len.
    kv: Vec<LlamaToken>,
    /// A second prompt kept in the cache as sequence [`PARKED`] (empty when none): the
    /// previous prompt, set aside when a call sharing little with it came, so that a later
    /// call over the same sources finds it again (metarag writes over its sources, asks a
    /// closed-book question, then checks the answer over the same sources).
    parked: Vec<LlamaToken>,
    /// A prompt start kept as sequence [`KEPT`] (empty when none) for the requests that
    /// mark theirs as shared ([`ChatRequest::keep_prefix`]: the planner's instructions and
    /// examples), which the calls of a question in between (reads over sources, a write, a
    /// closed-book probe) would otherwise push out of both sequence 0 and the parked slot.
    kept: Vec<LlamaToken>,
    template: Option<LlamaChatTemplate>,
    model_id: String,
    prefix_reuse: bool,
    /// Whether [`Engine::arrange`] may park a prompt.
    park_prompts: bool,
    batch_size: usize,
    yes_no: Option<(Vec<LlamaToken>, Vec<LlamaToken>)>,
    hidden_states: bool,
    path: PathBuf,
    /// Most tokens drafted per step by prompt lookup (0: none).
    lookup_draft: usize,
    /// See [`LocalLlmConfig::grammar_first`].
    grammar_first: bool,
    drafts: Arc<DraftCounts>,
}

impl Engine<'_> {
    fn reset(&mut self) {
        self.ctx.clear_kv_cache();
        self.kv.clear();
        self.parked.clear();
        self.kept.clear();
    }

    /// Forgets every prompt but the kept prefix ([`Llm::forget_context`]): it holds
    /// instructions shared by every request to come, no question's content, and a
    /// long-running server keeps it too.
    fn forget(&mut self) {
        self.clear_active();
        self.drop_parked();
    }

    /// Drops the kept prefix, freeing the cells only it holds.
    fn drop_kept(&mut self) {
        self.drop_spare(KEPT);
    }

    /// Drops a spare sequence ([`PARKED`] or [`KEPT`]) and the tokens it is recorded as
    /// holding, freeing the cells only it holds; a cache that refuses is cleared whole.
    fn drop_spare(&mut self, seq: i32) {
        let held = if seq == KEPT {
            &self.kept
        } else {
            &self.parked
        };
        if held.is_empty() {
            return;
        }
        if matches!(
            self.ctx.clear_kv_cache_seq(Some(seq as u32), None, None),
            Ok(true)
        ) {
            if seq == KEPT {
                self.kept.clear();
            } else {
                self.parked.clear();
            }
        } else {
            self.reset();
        }
    }

    /// After sequence 0 was brought to hold `tokens` for a request marking its start as
    /// shared: keeps that start as sequence [`KEPT`]. The first such request keeps its
    /// whole prompt; each later one trims the kept tokens to what the two share, which is
    /// the common instructions once two questions were asked. Relabels cells only.
    fn keep(&mut self, tokens: &[LlamaToken]) -> Result<()> {
        let relabel = |e: KvCacheConversionError| llama_err("keeping a prefix")(e.to_string());
        let shared = common_prefix(&self.kept, tokens);
        if shared >= PARK_MIN_TOKENS {
            if shared < self.kept.len() {
                let trimmed = self
                    .ctx
                    .clear_kv_cache_seq(Some(KEPT as u32), Some(shared as u32), None)
                    .map_err(|e| llama_err("trimming the kept prefix")(e.to_string()))?;
                if !trimmed {
                    self.drop_kept();
                    return Ok(());
                }
                self.kept.truncate(shared);
            }
            return Ok(());
        }
        let len = self.kv.len().min(tokens.len().saturating_sub(1));
        if len < PARK_MIN_TOKENS {
            return Ok(());
        }
        self.drop_kept();
        self.ctx
            .copy_kv_cache_seq(0, KEPT, Some(0), Some(len as u32))
            .map_err(relabel)?;
        self.kept = tokens[..len].to_vec();
        Ok(())
    }

    /// Empties sequence 0 alone (a parked prompt stays).
    fn clear_active(&mut self) {
        if matches!(self.ctx.clear_kv_cache_seq(Some(0), None, None), Ok(true)) {
            self.kv.clear();
        } else {
            self.reset();
        }
    }

    /// Drops the parked prompt, freeing the cells only it holds.
    fn drop_parked(&mut self) {
        self.drop_spare(PARKED);
    }

    /// Gets the cache ready for a call over `tokens` that needs `extra` cells beyond them
    /// (generated tokens, samples): when the parked prompt shares more of `tokens` than
    /// sequence 0 does, the two swap; when sequence 0 would lose at least
    /// [`PARK_MIN_TOKENS`] of what it holds, it is parked instead, in place of the parked
    /// one. Swapping and parking only relabel cells (no evaluation, no copying of keys and
    /// values). The parked prompt is dropped when it and the call could not both fit the
    /// context (counted as if it shared no cells with sequence 0: an upper bound).
    fn arrange(&mut self, tokens: &[LlamaToken], extra: usize) -> Result<()> {
        if !self.park_prompts {
            return Ok(());
        }
        let here = common_prefix(&self.kv, tokens);
        let there = common_prefix(&self.parked, tokens);
        let kept = common_prefix(&self.kept, tokens);
        let relabel = |e: KvCacheConversionError| llama_err("relabelling KV cells")(e.to_string());
        if kept > here && kept >= there {
            // Sequence 0 is set aside as it would be for any call sharing little with it,
            // then starts again from the kept prefix's cells.
            if self.kv.len().saturating_sub(here) >= PARK_MIN_TOKENS {
                self.drop_parked();
                self.ctx
                    .copy_kv_cache_seq(0, PARKED, None, None)
                    .map_err(relabel)?;
                self.parked = self.kv.clone();
            }
            self.clear_active();
            self.ctx
                .copy_kv_cache_seq(KEPT, 0, Some(0), Some(kept as u32))
                .map_err(relabel)?;
            self.kv = tokens[..kept].to_vec();
        } else if there > here {
            // Sequence 0 to the scratch id, the parked prompt to 0, the scratch to parked.
            self.ctx
                .copy_kv_cache_seq(0, SWAP, None, None)
                .map_err(relabel)?;
            self.ctx
                .clear_kv_cache_seq(Some(0), None, None)
                .map_err(relabel)?;
            self.ctx
                .copy_kv_cache_seq(PARKED, 0, None, None)
                .map_err(relabel)?;
            self.ctx
                .clear_kv_cache_seq(Some(PARKED as u32), None, None)
                .map_err(relabel)?;
            self.ctx
                .copy_kv_cache_seq(SWAP, PARKED, None, None)
                .map_err(relabel)?;
            self.ctx
                .clear_kv_cache_seq(Some(SWAP as u32), None, None)
                .map_err(relabel)?;
            std::mem::swap(&mut self.kv, &mut self.parked);
        } else if self.kv.len().saturating_sub(here) >= PARK_MIN_TOKENS {
            self.drop_parked();
            self.ctx
                .copy_kv_cache_seq(0, PARKED, None, None)
                .map_err(relabel)?;
            self.parked = self.kv.clone();
        }
        let n_ctx = self.ctx.n_ctx() as usize;
        if tokens.len() + extra + self.parked.len() + self.kept.len() > n_ctx {
            self.drop_parked();
        }
        if tokens.len() + extra + self.kept.len() > n_ctx {
            self.drop_kept();
        }
        Ok(())
    }

    fn render(&self, messages: &[Message]) -> Result<String> {
        if let Some(template) = &self.template {
            let chat = messages
                .iter()
                .map(|m| LlamaChatMessage::new(m.role.as_str().to_string(), m.content.clone()))
                .collect::<std::result::Result<Vec<_>, _>>()
                .map_err(|e| Error::Request(format!("message contains a NUL byte: {e}")))?;
            if let Ok(prompt) = self.model.apply_chat_template(template, &chat, true) {
                return Ok(prompt);
            }
            tracing::warn!(
                model = %self.model_id,
                "the model's chat template is not supported by llama.cpp; using ChatML"
            );
        }
        // ChatML: what Qwen and SmolLM use, and the most common template for GGUF models.
        let mut prompt = String::new();
        for m in messages {
            prompt.push_str("<|im_start|>");
            prompt.push_str(m.role.as_str());
            prompt.push('\n');
            prompt.push_str(&m.content);
            prompt.push_str("<|im_end|>\n");
        }
        prompt.push_str("<|im_start|>assistant\n");
        Ok(prompt)
    }

    fn tokenize(&self, text: &str) -> Vec<LlamaToken> {
        // parse_special: the template's role markers are special tokens.
        self.model.vocab().tokenize(text.as_bytes(), true, true)
    }

    /// Brings sequence 0 to hold exactly `tokens`, evaluating only what is not already
    /// there (in sequence 0 or in the parked prompt, see [`Engine::arrange`]), with room
    /// for `extra` cells more. Returns how many tokens were reused and the batch index of
    /// the last token's logits.
    fn prepare(&mut self, tokens: &[LlamaToken], extra: usize) -> Result<(usize, i32)> {
        let n_ctx = self.ctx.n_ctx() as usize;
        if tokens.is_empty() {
            return Err(Error::Request("the prompt is empty".into()));
        }
        if tokens.len() >= n_ctx {
            return Err(Error::ContextOverflow {
                prompt_tokens: tokens.len(),
                max_tokens: 0,
                context: n_ctx,
            });
        }
        self.arrange(tokens, extra)?;
        let mut reuse = if self.prefix_reuse {
            common_prefix(&self.kv, tokens)
        } else {
            0
        };
        // The last prompt token is always evaluated again: its logits are what the first
        // sampled token comes from.
        reuse = reuse.min(tokens.len() - 1);
        if reuse == 0 {
            self.clear_active();
        } else if reuse < self.kv.len() {
            let removed = self
                .ctx
                .clear_kv_cache_seq(Some(0), Some(reuse as u32), None)
                .map_err(|e| llama_err("trimming the KV cache")(e.to_string()))?;
            if !removed {
                self.clear_active();
                reuse = 0;
            } else {
                self.kv.truncate(reuse);
            }
        }
        let rest = &tokens[reuse..];
        let mut batch = LlamaBatch::new(self.batch_size, 1);
        let mut last_index = 0;
        for (chunk_no, chunk) in rest.chunks(self.batch_size).enumerate() {
            batch.clear();
            let is_last_chunk = (chunk_no + 1) * self.batch_size >= rest.len();
            for (i, token) in chunk.iter().enumerate() {
                let pos = (reuse + chunk_no * self.batch_size + i) as i32;
                let logits = is_last_chunk && i + 1 == chunk.len();
                batch
                    .add(*token, pos, &[0], logits)
                    .map_err(|e| llama_err("filling a batch")(e.to_string()))?;
            }
            self.ctx
                .decode(&mut batch)
                .map_err(|e| llama_err("evaluating the prompt")(e.to_string()))?;
            self.kv.extend_from_slice(chunk);
            last_index = chunk.len() as i32 - 1;
        }
        Ok((reuse, last_index))
    }

    fn sampler(&self, request: &ChatRequest, seed: u64) -> Result<TokenSampler> {
        let grammar = match &request.schema {
            Some(schema) => {
                let grammar = llama_cpp_2::json_schema_to_grammar(&schema.schema.to_string())
                    .map_err(|e| {
                        Error::Request(format!(
                            "schema `{}` cannot be turned into a grammar: {e}",
                            schema.name
                        ))
                    })?;
                Some(
                    LlamaSampler::grammar(self.model, &grammar, "root")
                        .map_err(|e| llama_err("compiling the JSON grammar")(e.to_string()))?,
                )
            }
            None => None,
        };
        let mut chain = Vec::new();
        let p = &request.params;
        if p.temperature <= 0.0 {
            chain.push(LlamaSampler::greedy());
        } else {
            if p.top_p < 1.0 {
                chain.push(LlamaSampler::top_p(p.top_p, 1));
            }
            chain.push(LlamaSampler::temp(p.temperature));
            chain.push(LlamaSampler::dist(seed as u32));
        }
        let chain = LlamaSampler::chain_simple(chain);
        Ok(match grammar {
            Some(grammar) if self.grammar_first => {
                TokenSampler::Plain(LlamaSampler::chain_simple([grammar, chain]))
            }
            Some(grammar) => TokenSampler::CheckChosen { chain, grammar },
            None => TokenSampler::Plain(chain),
        })
    }

    /// Runs a chat request: `n` samples (seeds `seed + i`) over one evaluated prompt, with
    /// per-token log-probabilities when asked for. Only the first sample streams.
    ///
    /// The samples are decoded side by side as sequences of one llama.cpp batch: the
    /// prompt's KV cells are shared (tagged with every sequence id, not copied), and a
    /// decode step of `n` tokens costs little more than one on a CPU, where a single
    /// token's step is bound by reading the weights. When the KV cache cannot hold every
    /// sample's tokens beside the prompt they are drawn one after another instead.
    fn chat(
        &mut self,
        request: &ChatRequest,
        stream: Option<&tmpsc::UnboundedSender<String>>,
        gone: &dyn Fn() -> bool,
    ) -> Result<Completion> {
        let prompt = self.render(&request.messages)?;
        let tokens = self.tokenize(&prompt);
        let max_tokens = request.params.max_tokens as usize;
        let n_ctx = self.ctx.n_ctx() as usize;
        if tokens.len() + max_tokens > n_ctx {
            return Err(Error::ContextOverflow {
                prompt_tokens: tokens.len(),
                max_tokens,
                context: n_ctx,
            });
        }
        let n = request.params.n.max(1) as usize;
        // `n` is at most MAX_SAMPLES (validated), the sequences the context was made for.
        let width = if tokens.len() + n * max_tokens <= n_ctx {
            n
        } else {
            1
        };
        let mut usage = Usage {
            prompt_tokens: tokens.len() as u64,
            prompt_ms: Some(0.0),
            generation_ms: Some(0.0),
            ..Usage::default()
        };
        let mut samples = Vec::with_capacity(n);
        while samples.len() < n {
            let first = samples.len();
            let seeds: Vec<u64> = (first..n.min(first + width))
                .map(|i| request.params.seed.wrapping_add(i as u64))
                .collect();
            let g = self.generate(
                &tokens,
                request,
                &seeds,
                stream.filter(|_| first == 0),
                gone,
            )?;
            if first == 0 {
                usage.cached_prompt_tokens = g.reused as u64;
            }
            usage.completion_tokens += g.generated as u64;
            *usage.prompt_ms.get_or_insert(0.0) += g.prompt_ms;
            *usage.generation_ms.get_or_insert(0.0) += g.generation_ms;
            samples.extend(g.samples);
        }
        usage.wall_ms = usage.compute_ms();
        let first = samples.remove(0);
        let mut completion = Completion::new(first.text, first.finish, usage, &self.model_id);
        completion.logprobs = first.logprobs;
        completion.samples = samples;
        Ok(completion)
    }

    /// One sample per seed from an already tokenized prompt, decoded together: sequence 0
    /// is the one the KV cache bookkeeping (`self.kv`) follows; the others borrow its
    /// prompt cells and are removed when they are done.
    fn generate(
        &mut self,
        tokens: &[LlamaToken],
        request: &ChatRequest,
        seeds: &[u64],
        stream: Option<&tmpsc::UnboundedSender<String>>,
        gone: &dyn Fn() -> bool,
    ) -> Result<Generated> {
        let mut seqs = seeds
            .iter()
            .enumerate()
            .map(|(i, &seed)| {
                let stream = stream.filter(|_| i == 0);
                Ok(Decoding::new(
                    i as i32,
                    self.sampler(request, seed)?,
                    stream,
                    request,
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        let prompt_started = Instant::now();
        let (reused, logits_index) =
            self.prepare(tokens, seeds.len() * request.params.max_tokens as usize)?;
        if request.keep_prefix && self.park_prompts {
            self.keep(tokens)?;
        }
        for d in &mut seqs {
            d.logits_index = logits_index;
            if d.seq > 0 {
                self.ctx
                    .copy_kv_cache_seq(0, d.seq, None, None)
                    .map_err(|e| llama_err("sharing the prompt's KV cells")(e.to_string()))?;
            }
        }
        let prompt_ms = prompt_started.elapsed().as_secs_f64() * 1e3;
        let generation_started = Instant::now();
        let decoded = self.decode(&mut seqs, &request.params.stop, gone);
        // Whatever happened, only sequence 0 may stay in the cache: the next call's prefix
        // match reads `self.kv`, which describes sequence 0 alone.
        for d in &seqs[1..] {
            let removed = self.ctx.clear_kv_cache_seq(Some(d.seq as u32), None, None);
            if !matches!(removed, Ok(true)) {
                self.reset();
            }
        }
        decoded?;
        let generation_ms = generation_started.elapsed().as_secs_f64() * 1e3;
        let generated = seqs.iter().map(|d| d.generated).sum();
        tracing::debug!(
            prompt_tokens = tokens.len(),
            reused,
            samples = seqs.len(),
            generated,
            prompt_ms,
            generation_ms,
            "llm call"
        );
        Ok(Generated {
            samples: seqs.into_iter().map(Decoding::finish).collect(),
            reused,
            generated,
            prompt_ms,
            generation_ms,
        })
    }

    /// See [`LocalLlm::throughput`].
    fn throughput(&mut self, prompt: usize, generate: usize) -> Result<Throughput> {
        if prompt + generate == 0 || prompt.max(generate) > self.ctx.n_ctx() as usize {
            return Err(Error::Request(format!(
                "throughput test of {prompt} prompt and {generate} generated tokens: each \
                 must fit the context of {} tokens, and one must be above 0",
                self.ctx.n_ctx()
            )));
        }
        let vocab = self.model.n_vocab().max(1) as u64;
        // Fixed pseudo-random ids (splitmix64), so two runs time the same work.
        let token = |i: usize| {
            let mut z = (i as u64).wrapping_add(0x9e37_79b9_7f4a_7c15);
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            LlamaToken::new(((z ^ (z >> 31)) % vocab) as i32)
        };
        self.reset();
        let started = Instant::now();
        let tokens: Vec<LlamaToken> = (0..prompt).map(token).collect();
        let mut pos = 0usize;
        for chunk in tokens.chunks(self.batch_size.max(1)) {
            let mut batch = LlamaBatch::new(chunk.len(), 1);
            for &t in chunk {
                batch
                    .add(t, pos as i32, &[0], pos + 1 == prompt)
                    .map_err(|e| llama_err("filling a batch")(e.to_string()))?;
                pos += 1;
            }
            self.ctx
                .decode(&mut batch)
                .map_err(|e| llama_err("evaluating the prompt")(e.to_string()))?;
        }
        let prompt_s = started.elapsed().as_secs_f64();
        self.reset();
        let started = Instant::now();
        let mut batch = LlamaBatch::new(1, 1);
        for i in 0..generate {
            batch.clear();
            batch
                .add(token(prompt + i), i as i32, &[0], true)
                .map_err(|e| llama_err("filling a batch")(e.to_string()))?;
            self.ctx
                .decode(&mut batch)
                .map_err(|e| llama_err("generating")(e.to_string()))?;
        }
        let generate_s = started.elapsed().as_secs_f64();
        self.reset();
        Ok(Throughput {
            prompt_tokens: prompt,
            prompt_s,
            generated_tokens: generate,
            generate_s,
        })
    }

    /// Samples and decodes every sequence one token per step until each has stopped.
    fn decode(
        &mut self,
        seqs: &mut [Decoding<'_>],
        stop: &[String],
        gone: &dyn Fn() -> bool,
    ) -> Result<()> {
        if let [d] = seqs
            && self.lookup_draft > 0
        {
            return self.decode_drafting(d, stop, gone);
        }
        let vocab = self.model.vocab();
        let hold_back = stop.iter().map(String::len).max().unwrap_or(1) - 1;
        let mut batch = LlamaBatch::new(seqs.len(), seqs.len() as i32);
        // Every sequence continues the same prompt, so they share each step's position.
        let mut pos = self.kv.len() as i32;
        loop {
            // Checked per step (a channel flag, nanoseconds): a caller that went away stops
            // the generation within one token.
            if gone() {
                return Err(Error::Cancelled);
            }
            batch.clear();
            let mut next_of_first = None;
            for d in seqs.iter_mut().filter(|d| !d.done) {
                let Some(token) = d.next(&self.ctx, &vocab, stop, hold_back) else {
                    continue;
                };
                let index = batch.n_tokens();
                batch
                    .add(token, pos, &[d.seq], true)
                    .map_err(|e| llama_err("filling a batch")(e.to_string()))?;
                d.logits_index = index;
                if d.seq == 0 {
                    next_of_first = Some(token);
                }
            }
            if batch.n_tokens() == 0 {
                return Ok(());
            }
            self.ctx
                .decode(&mut batch)
                .map_err(|e| llama_err("generating")(e.to_string()))?;
            if let Some(token) = next_of_first {
                self.kv.push(token);
            }
            pos += 1;
        }
    }

    /// [`Engine::decode`] for one sequence, with prompt-lookup drafts (see
    /// [`LocalLlmConfig::lookup_draft`]): each step decodes the sampled token and the
    /// tokens that followed its context earlier in one batch, then samples every position
    /// in turn as the plain loop would, keeping the draft while the samples agree. The
    /// cells of a rejected draft are removed, so `self.kv` describes sequence 0 as always.
    fn decode_drafting(
        &mut self,
        d: &mut Decoding<'_>,
        stop: &[String],
        gone: &dyn Fn() -> bool,
    ) -> Result<()> {
        let vocab = self.model.vocab();
        let hold_back = stop.iter().map(String::len).max().unwrap_or(1) - 1;
        let mut batch = LlamaBatch::new(self.lookup_draft + 1, 1);
        let Some(mut token) = d.next(&self.ctx, &vocab, stop, hold_back) else {
            return Ok(());
        };
        loop {
            if gone() {
                return Err(Error::Cancelled);
            }
            let pos = self.kv.len();
            // Never past the room `prepare` made: the draft holds at most the tokens the
            // call may still generate after this one.
            let room = d.max_tokens.saturating_sub(d.generated);
            let draft = lookup(&self.kv, token, self.lookup_draft.min(room));
            batch.clear();
            for (i, &t) in std::iter::once(&token).chain(&draft).enumerate() {
                batch
                    .add(t, (pos + i) as i32, &[0], true)
                    .map_err(|e| llama_err("filling a batch")(e.to_string()))?;
            }
            self.ctx
                .decode(&mut batch)
                .map_err(|e| llama_err("generating")(e.to_string()))?;
            self.kv.push(token);
            let mut next = None;
            for i in 0..=draft.len() {
                d.logits_index = i as i32;
                match d.next(&self.ctx, &vocab, stop, hold_back) {
                    Some(t) if draft.get(i) == Some(&t) => self.kv.push(t),
                    sampled => {
                        next = sampled;
                        break;
                    }
                }
            }
            let accepted = self.kv.len() - pos - 1;
            self.drafts
                .drafted
                .fetch_add(draft.len() as u64, Ordering::Relaxed);
            self.drafts
                .accepted
                .fetch_add(accepted as u64, Ordering::Relaxed);
            if accepted < draft.len() {
                let removed = self
                    .ctx
                    .clear_kv_cache_seq(Some(0), Some(self.kv.len() as u32), None)
                    .map_err(|e| llama_err("dropping a draft")(e.to_string()))?;
                if !removed {
                    return Err(Error::Llama("dropping a draft: cells not removed".into()));
                }
            }
            match next {
                Some(t) => token = t,
                None => return Ok(()),
            }
        }
    }

    /// Single-token spellings of yes and no in this vocabulary.
    fn yes_no_tokens(&mut self) -> Result<(Vec<LlamaToken>, Vec<LlamaToken>)> {
        if let Some(v) = &self.yes_no {
            return Ok(v.clone());
        }
        let single = |words: &[&str]| -> Vec<LlamaToken> {
            let mut out: Vec<LlamaToken> = words
                .iter()
                .filter_map(|w| {
                    let t = self.model.vocab().tokenize(w.as_bytes(), false, false);
                    (t.len() == 1).then(|| t[0])
                })
                .collect();
            out.sort_by_key(|t| t.0);
            out.dedup();
            out
        };
        let yes = single(&["yes", "Yes", "YES", " yes", " Yes"]);
        let no = single(&["no", "No", "NO", " no", " No"]);
        if yes.is_empty() || no.is_empty() {
            return Err(Error::Llama(
                "this model's vocabulary has no single-token yes/no".into(),
            ));
        }
        self.yes_no = Some((yes.clone(), no.clone()));
        Ok((yes, no))
    }

    fn yes_probability(&mut self, messages: &[Message]) -> Result<(f32, Usage)> {
        let (yes, no) = self.yes_no_tokens()?;
        let prompt = self.render(messages)?;
        let tokens = self.tokenize(&prompt);
        let started = Instant::now();
        let (reused, index) = self.prepare(&tokens, 0)?;
        let logits = self.ctx.get_logits_ith(index);
        let lse = |ids: &[LlamaToken]| {
            let vals: Vec<f32> = ids.iter().map(|t| logits[t.0 as usize]).collect();
            let max = vals.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
            max + vals.iter().map(|v| (v - max).exp()).sum::<f32>().ln()
        };
        let (ly, ln) = (lse(&yes), lse(&no));
        let p = 1.0 / (1.0 + (ln - ly).exp());
        let ms = started.elapsed().as_secs_f64() * 1e3;
        Ok((
            p,
            Usage {
                prompt_tokens: tokens.len() as u64,
                cached_prompt_tokens: reused as u64,
                completion_tokens: 0,
                wall_ms: ms,
                prompt_ms: Some(ms),
                generation_ms: Some(0.0),
                original_ms: None,
            },
        ))
    }

    fn hidden_state(&mut self, messages: &[Message], completion: &str) -> Result<HiddenState> {
        if !self.hidden_states {
            return Err(Error::Config {
                path: self.path.clone(),
                reason: "the model was loaded without hidden-state output (llm hidden_states)"
                    .into(),
            });
        }
        let prompt = self.tokenize(&self.render(messages)?);
        let answer = self
            .model
            .vocab()
            .tokenize(completion.as_bytes(), false, false);
        if answer.is_empty() {
            return Err(Error::Request("the completion is empty".into()));
        }
        let n_ctx = self.ctx.n_ctx() as usize;
        if prompt.len() + answer.len() >= n_ctx {
            return Err(Error::ContextOverflow {
                prompt_tokens: prompt.len() + answer.len(),
                max_tokens: 0,
                context: n_ctx,
            });
        }
        // The prompt through the cache as for a chat call; the completion is evaluated
        // again with an output at every token, since a cached copy has no outputs.
        self.prepare(&prompt, answer.len())?;
        let mut sum: Vec<f32> = Vec::new();
        let mut last: Vec<f32> = Vec::new();
        let mut batch = LlamaBatch::new(self.batch_size, 1);
        for chunk in answer.chunks(self.batch_size) {
            batch.clear();
            let start = self.kv.len();
            for (i, token) in chunk.iter().enumerate() {
                batch
                    .add(*token, (start + i) as i32, &[0], true)
                    .map_err(|e| llama_err("filling a batch")(e.to_string()))?;
            }
            self.ctx
                .decode(&mut batch)
                .map_err(|e| llama_err("evaluating the completion")(e.to_string()))?;
            self.kv.extend_from_slice(chunk);
            for i in 0..chunk.len() {
                let h = self
                    .ctx
                    .embeddings_ith(i as i32)
                    .map_err(|e| llama_err("reading the hidden state")(e.to_string()))?;
                if sum.is_empty() {
                    sum = vec![0.0; h.len()];
                }
                for (s, v) in sum.iter_mut().zip(h) {
                    *s += v;
                }
                last.clear();
                last.extend_from_slice(h);
            }
        }
        let n = answer.len() as f32;
        Ok(HiddenState {
            last,
            mean: sum.into_iter().map(|s| s / n).collect(),
            tokens: answer.len(),
            prompt_tokens: prompt.len(),
        })
    }
}

/// The samples of one batch and what they cost.
struct Generated {
    samples: Vec<Sample>,
    reused: usize,
    generated: usize,
    prompt_ms: f64,
    generation_ms: f64,
}

/// How a sequence's next token is chosen.
enum TokenSampler {
    /// One llama.cpp chain over the whole vocabulary (a grammar in it, if any, first).
    Plain(LlamaSampler),
    /// The chain chooses from the model's distribution, then the grammar checks that one
    /// token; the vocabulary is filtered only when the grammar refuses it
    /// ([`LocalLlmConfig::grammar_first`]).
    CheckChosen {
        chain: LlamaSampler,
        grammar: LlamaSampler,
    },
}

impl TokenSampler {
    /// Chooses the token at batch index `idx` of the last evaluation and feeds it to every
    /// sampler (the grammar advances past it).
    fn sample(&mut self, ctx: &LlamaContext<'_>, idx: i32) -> LlamaToken {
        let (chain, grammar) = match self {
            TokenSampler::Plain(chain) => return chain.sample(ctx, idx),
            TokenSampler::CheckChosen { chain, grammar } => (chain, grammar),
        };
        let mut candidates = ctx.token_data_array_ith(idx);
        candidates.apply_sampler(chain);
        let chosen = candidates.selected_token();
        let allowed = chosen.is_some_and(|token| {
            let mut one =
                LlamaTokenDataArray::new(vec![LlamaTokenData::new(token, 1.0, 0.0)], false);
            one.apply_sampler(grammar);
            one.data[0].logit() != f32::NEG_INFINITY
        });
        let token = match chosen {
            Some(token) if allowed => token,
            _ => {
                let mut candidates = ctx.token_data_array_ith(idx);
                candidates.apply_sampler(grammar);
                candidates.apply_sampler(chain);
                // The chain always selects one (greedy or dist); a grammar that allows
                // nothing leaves every logit at -inf and greedy still picks the first.
                candidates
                    .selected_token()
                    .unwrap_or_else(|| candidates.data[0].id())
            }
        };
        grammar.accept(token);
        chain.accept(token);
        token
    }
}

/// One sequence being decoded: its sampler and what it has produced so far.
struct Decoding<'s> {
    seq: i32,
    sampler: TokenSampler,
    /// Where its text streams (the first sequence of a streamed call only).
    stream: Option<&'s tmpsc::UnboundedSender<String>>,
    max_tokens: usize,
    bytes: Vec<u8>,
    emitted: usize,
    generated: usize,
    finish: FinishReason,
    cut_at: Option<usize>,
    logprobs: Option<Vec<TokenLogprob>>,
    /// Batch index of the logits its next token is sampled from.
    logits_index: i32,
    done: bool,
}

impl<'s> Decoding<'s> {
    fn new(
        seq: i32,
        sampler: TokenSampler,
        stream: Option<&'s tmpsc::UnboundedSender<String>>,
        request: &ChatRequest,
    ) -> Self {
        let max_tokens = request.params.max_tokens as usize;
        Decoding {
            seq,
            sampler,
            stream,
            max_tokens,
            bytes: Vec::new(),
            emitted: 0,
            generated: 0,
            finish: FinishReason::Length,
            cut_at: None,
            logprobs: request.params.logprobs.then(Vec::new),
            logits_index: 0,
            done: max_tokens == 0,
        }
    }

    /// Samples this sequence's next token. Returns it when it must be decoded (the
    /// sequence goes on), `None` when the sequence has ended with it.
    fn next(
        &mut self,
        ctx: &LlamaContext<'_>,
        vocab: &llama_cpp_2::vocab::LlamaVocab<'_>,
        stop: &[String],
        hold_back: usize,
    ) -> Option<LlamaToken> {
        // `sample` also feeds the token to every sampler in the chain (the grammar
        // advances); it must not be accepted a second time.
        let token = self.sampler.sample(ctx, self.logits_index);
        if vocab.is_eog(token) {
            self.finish = FinishReason::Stop;
            self.done = true;
            return None;
        }
        self.generated += 1;
        let piece = vocab.token_to_piece(token, false, None);
        if let Some(lp) = self.logprobs.as_mut() {
            lp.push(TokenLogprob {
                token: String::from_utf8_lossy(&piece).into_owned(),
                logprob: log_softmax_at(ctx.get_logits_ith(self.logits_index), token),
            });
        }
        self.bytes.extend(piece);
        let text = valid_utf8_prefix(&self.bytes);
        if let Some(at) = first_stop(text, stop) {
            self.cut_at = Some(at);
            self.finish = FinishReason::Stop;
            self.done = true;
            return None;
        }
        if let Some(tx) = self.stream {
            let safe = floor_boundary(text, text.len().saturating_sub(hold_back));
            if safe > self.emitted {
                let _ = tx.send(text[self.emitted..safe].to_string());
                self.emitted = safe;
            }
        }
        if self.generated == self.max_tokens {
            self.done = true;
            return None;
        }
        Some(token)
    }

    /// The finished sample (the rest of a streamed text is sent).
    fn finish(self) -> Sample {
        let mut text = String::from_utf8_lossy(&self.bytes).into_owned();
        if let Some(at) = self.cut_at {
            text.truncate(at);
        }
        if let Some(tx) = self.stream
            && text.len() > self.emitted
        {
            let _ = tx.send(text[self.emitted..].to_string());
        }
        Sample {
            text,
            finish: self.finish,
            logprobs: self.logprobs,
        }
    }
}

/// `log softmax(logits)[token]`, over the whole vocabulary: the model's own probability
/// of the token, before any grammar or sampling filter narrowed the choice.
fn log_softmax_at(logits: &[f32], token: LlamaToken) -> f32 {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let sum: f64 = logits.iter().map(|&l| f64::from(l - max).exp()).sum();
    (f64::from(logits[token.0 as usize] - max) - sum.ln()) as f32
}

/// Sequence id of the parked prompt ([`Engine::arrange`]); sample sequences use
/// `1..MAX_SAMPLES`.
const PARKED: i32 = metarag_core::MAX_SAMPLES as i32;

/// Scratch sequence id for swapping the parked prompt with sequence 0.
const SWAP: i32 = PARKED + 1;

/// Sequence id of the kept prefix ([`Engine::keep`]).
const KEPT: i32 = SWAP + 1;

/// Least cached tokens a call must be about to discard for them to be parked: a shorter
/// prompt is cheap to evaluate again and not worth holding cells for.
const PARK_MIN_TOKENS: usize = 64;

/// Tokens two prompts share from their start.
/// The draft for the token after `last`: the tokens that followed the latest earlier
/// occurrence of the text's last three tokens (`history` then `last`), else of its last
/// two, at most `max` of them. A single token is not looked up: too common to predict what
/// follows it. Empty when nothing matches.
fn lookup(history: &[LlamaToken], last: LlamaToken, max: usize) -> Vec<LlamaToken> {
    if max == 0 {
        return Vec::new();
    }
    let n = history.len() + 1;
    let at = |i: usize| if i == n - 1 { last } else { history[i] };
    for len in [3usize, 2] {
        if n <= len {
            continue;
        }
        let pattern: Vec<LlamaToken> = (n - len..n).map(at).collect();
        // Latest first: the reply's own recent text, then the prompt from its end (the
        // sources and the request sit late in a prompt).
        let found = (0..n - len)
            .rev()
            .find(|&start| (0..len).all(|k| at(start + k) == pattern[k]));
        if let Some(start) = found {
            let from = start + len;
            return (from..n.min(from + max)).map(at).collect();
        }
    }
    Vec::new()
}

fn common_prefix(a: &[LlamaToken], b: &[LlamaToken]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// The longest prefix of `bytes` that is valid UTF-8 (a token can end mid-character).
fn valid_utf8_prefix(bytes: &[u8]) -> &str {
    match std::str::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => std::str::from_utf8(&bytes[..e.valid_up_to()]).expect("valid up to here"),
    }
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Byte offset of the earliest stop string in `text`.
fn first_stop(text: &str, stop: &[String]) -> Option<usize> {
    stop.iter().filter_map(|s| text.find(s.as_str())).min()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_draft_is_what_followed_the_latest_earlier_occurrence() {
        let t = |v: &[i32]| v.iter().map(|&x| LlamaToken::new(x)).collect::<Vec<_>>();
        // ... 1 2 3 [4 5 6] ... 1 2 | 3 -> 4 5 (at most two).
        let history = t(&[9, 1, 2, 3, 4, 5, 6, 7, 1, 2]);
        assert_eq!(lookup(&history, LlamaToken::new(3), 2), t(&[4, 5]));
        // The latest occurrence wins over an earlier one.
        let history = t(&[1, 2, 8, 0, 1, 2, 9, 0, 1]);
        assert_eq!(lookup(&history, LlamaToken::new(2), 3), t(&[9, 0, 1]));
        // Two tokens when three do not match; never one alone.
        let history = t(&[5, 6, 7, 0, 6]);
        assert_eq!(lookup(&history, LlamaToken::new(7), 4), t(&[0, 6, 7]));
        assert!(lookup(&t(&[1, 2, 3]), LlamaToken::new(3), 4).is_empty());
        assert!(lookup(&history, LlamaToken::new(7), 0).is_empty());
        assert!(lookup(&[], LlamaToken::new(7), 4).is_empty());
    }

    #[test]
    fn stop_strings_cut_at_the_earliest() {
        let stop = vec!["\n\n".to_string(), "Question:".to_string()];
        assert_eq!(first_stop("Paris.\n\nQuestion: x", &stop), Some(6));
        assert_eq!(first_stop("Paris.", &stop), None);
    }

    #[test]
    fn log_softmax_is_a_log_probability() {
        let logits = [1.0f32, 2.0, 3.0];
        let p: f32 = (0..3)
            .map(|i| log_softmax_at(&logits, LlamaToken(i)).exp())
            .sum();
        assert!((p - 1.0).abs() < 1e-5);
        assert!(log_softmax_at(&logits, LlamaToken(2)) > log_softmax_at(&logits, LlamaToken(0)));
    }

    #[test]
    fn partial_utf8_is_held_back() {
        let bytes = "né".as_bytes();
        assert_eq!(valid_utf8_prefix(&bytes[..2]), "n");
        assert_eq!(valid_utf8_prefix(bytes), "né");
        assert_eq!(floor_boundary("né", 2), 1);
    }
}
