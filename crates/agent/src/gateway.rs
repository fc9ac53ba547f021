//! The one door every model call and search of a run passes through.
//!
//! The [`Gateway`] owns the run's dependencies (the LLM, the named retrievers, the
//! reranker) and its accounting (every call, tokens, model and search time). It checks the
//! [`Budget`] before each call, so a loop *inside* a node (a ReAct episode, a chain of
//! follow-up questions, an IRCoT interleave) is bounded exactly like the loops between
//! nodes: the call that would go over the budget is not made, and the node returns
//! [`NodeError::Budget`], which ends the run with a typed stop reason.

use crate::graph::{Budget, BudgetLimit, NodeError, Spend};
use crate::roles::{Role, RoleModel, Roles};
use crate::trace::{CallRecord, RunUsage};
use futures_util::StreamExt;
use metarag_core::{
    Capabilities, ChatRequest, Completion, DynEmbedder, DynLlm, DynReranker, DynRetriever, Hit,
    Llm, SearchRequest, parse_json,
};
use metarag_retrieve::{EmbeddingRouter, Route};
use serde::de::DeserializeOwned;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The name of the retriever strategies use when they do not ask for another.
pub const DEFAULT_RETRIEVER: &str = "index";

/// What a run may call: the LLM, the retrievers by name, and an optional reranker.
#[derive(Clone)]
pub struct Deps {
    /// The chat model.
    pub llm: Arc<dyn DynLlm>,
    /// Retrievers by name; [`DEFAULT_RETRIEVER`] is the one searched unless a strategy
    /// picks another (a router over several memories).
    pub retrievers: BTreeMap<String, Arc<dyn DynRetriever>>,
    /// Reranks hits for routes that rerank.
    pub reranker: Option<Arc<dyn DynReranker>>,
    /// The embedding model, for the embedding intent classifier of the `router` strategy
    /// (without one, that classifier falls back to cue words and the trace says so).
    pub embedder: Option<Arc<dyn DynEmbedder>>,
    /// The embedding classifier, its example phrases embedded on first use and shared by
    /// every later run.
    pub intent_router: tokio::sync::OnceCell<EmbeddingRouter<Arc<dyn DynEmbedder>>>,
    /// Role models: calls whose purpose plays a configured role go to its model with its
    /// settings (see [`Role::of`]); the others go to `llm` as asked.
    pub roles: Roles,
}

impl Deps {
    /// An LLM with no retriever, reranker or embedder.
    pub fn new(llm: Arc<dyn DynLlm>) -> Self {
        Deps {
            llm,
            retrievers: BTreeMap::new(),
            reranker: None,
            embedder: None,
            intent_router: tokio::sync::OnceCell::new(),
            roles: Roles::new(),
        }
    }

    /// The model a call of `purpose` goes to and the role settings that apply, if its role
    /// is configured; with its model's name when that is not the default model.
    fn route(&self, purpose: &str) -> (&Arc<dyn DynLlm>, Option<&RoleModel>, Option<String>) {
        match self.roles.get(&Role::of(purpose)) {
            Some(role) => match &role.llm {
                Some(llm) => (llm, Some(role), Some(Llm::model_id(llm).to_string())),
                None => (&self.llm, Some(role), None),
            },
            None => (&self.llm, None, None),
        }
    }
}

impl std::fmt::Debug for Deps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deps")
            .field("llm", &Llm::model_id(&self.llm))
            .field("retrievers", &self.retrievers.keys().collect::<Vec<_>>())
            .field("reranker", &self.reranker.as_ref().map(|r| r.model_id()))
            .field("embedder", &self.embedder.as_ref().map(|e| e.model_id()))
            .field("roles", &self.roles)
            .finish()
    }
}

/// One finished LLM call: its outcome and its wall time.
#[derive(Debug)]
pub struct Called {
    /// What the call was for ("write", "judge", "follow_up", ...).
    pub purpose: &'static str,
    /// The completion, or why there is none.
    pub result: metarag_core::Result<Completion>,
    /// Wall time of the call, milliseconds.
    pub ms: f64,
    /// The model that answered, when a role sent the call to another than the default.
    pub model: Option<String>,
}

impl Called {
    /// The completion's text, or the error as text.
    pub fn text(&self) -> Result<&str, String> {
        match &self.result {
            Ok(done) => Ok(done.text.as_str()),
            Err(e) => Err(e.to_string()),
        }
    }

    /// The completion parsed as JSON into `T`, or why not.
    pub fn parsed<T: DeserializeOwned>(&self) -> Result<T, String> {
        parse_json::<T>(self.text()?).map_err(|e| e.to_string())
    }
}

/// A piece of generated text.
#[derive(Debug, Clone, Copy)]
pub struct Generated<'a> {
    /// What the call is for ("write", "plan", ...).
    pub purpose: &'a str,
    /// The call's number in the run, from 0: pieces of one call share it.
    pub call: u64,
    /// The new text.
    pub text: &'a str,
}

/// Receives the text of single-sample LLM calls as it is generated: the server streams
/// it to its clients.
pub type TokenTap = Arc<dyn Fn(Generated<'_>) + Send + Sync>;

/// The run's door to models and searches, with its accounting. See the module docs.
pub struct Gateway {
    deps: Arc<Deps>,
    budget: Budget,
    started: Instant,
    tap: Option<TokenTap>,
    /// The documents this run may read: narrows every search.
    scope: metarag_core::Filter,
    /// Every LLM call, in order.
    pub calls: Vec<CallRecord>,
    /// Totals.
    pub usage: RunUsage,
}

impl Gateway {
    /// A gateway for one run, its clock starting now.
    pub fn new(deps: Arc<Deps>, budget: Budget) -> Self {
        Gateway {
            deps,
            budget,
            started: Instant::now(),
            tap: None,
            scope: metarag_core::Filter::default(),
            calls: Vec::new(),
            usage: RunUsage::default(),
        }
    }

    /// Limits every search of this run to the documents `scope` matches: a strategy's own
    /// filter (a year, a title) narrows it further but never widens it, and a search the
    /// two leave nothing to is not run.
    pub fn with_scope(mut self, scope: metarag_core::Filter) -> Self {
        self.scope = scope;
        self
    }

    /// The run's scope (empty: the whole index).
    pub fn scope(&self) -> &metarag_core::Filter {
        &self.scope
    }

    /// Streams every single-sample call's text to `tap` as it is generated.
    pub fn with_tap(mut self, tap: Option<TokenTap>) -> Self {
        self.tap = tap;
        self
    }

    /// The model's name.
    pub fn model_id(&self) -> &str {
        Llm::model_id(&self.deps.llm)
    }

    /// What the default model can do (log-probabilities, samples, constrained JSON): the
    /// generator's, unless that role has its own model.
    pub fn capabilities(&self) -> Capabilities {
        self.capabilities_for("write")
    }

    /// What the model that answers calls of `purpose` can do.
    pub fn capabilities_for(&self, purpose: &str) -> Capabilities {
        Llm::capabilities(self.deps.route(purpose).0)
    }

    /// The temperature a role imposes on every call of `purpose` (a sampler's own included),
    /// if its role sets one.
    pub fn temperature_for(&self, purpose: &str) -> Option<f32> {
        self.deps.route(purpose).1.and_then(|r| r.temperature)
    }

    /// How many calls of `purpose` may run at once (its role's concurrency, else 1).
    pub fn concurrency_for(&self, purpose: &str) -> usize {
        self.deps
            .route(purpose)
            .1
            .map_or(1, |r| r.concurrency.max(1))
    }

    /// The model, request and model label for a call of `purpose`.
    fn routed(
        &self,
        purpose: &str,
        request: ChatRequest,
    ) -> (Arc<dyn DynLlm>, ChatRequest, Option<String>) {
        let (llm, role, model) = self.deps.route(purpose);
        let mut request = match role {
            Some(r) => r.apply(request),
            None => request,
        };
        // The run's collections key the call cache: a completion over one collection's
        // passages is never served to a run held to others.
        request.collections = self.scope().collections.clone();
        (llm.clone(), request, model)
    }

    /// The reranker, if one is configured.
    pub fn reranker(&self) -> Option<&Arc<dyn DynReranker>> {
        self.deps.reranker.as_ref()
    }

    /// What the run has spent.
    pub fn spend(&self) -> Spend {
        Spend {
            llm_calls: self.usage.llm_calls,
            tokens: self.usage.prompt_tokens + self.usage.completion_tokens,
            model_ms: self.usage.llm_ms + self.usage.search_ms,
        }
    }

    /// Whether the budget leaves room for `calls` more LLM calls, each costing as many
    /// tokens and as much time as the largest call of this run so far. A planner asks
    /// before another step so that the write at its end still fits: a step cut off by the
    /// budget leaves a run with no answer at all. The estimate is in calls and tokens,
    /// which a replay from the call cache repeats exactly, and in wall time, which it does
    /// not (a replayed run may take a step the original skipped for the deadline).
    pub fn room_for(&self, calls: u64) -> bool {
        let (tokens, ms) = self.calls.iter().fold((0u64, 0f64), |(t, m), c| {
            (t.max(c.prompt_tokens + c.completion_tokens), m.max(c.ms))
        });
        let mut spend = self.spend();
        spend.llm_calls += calls.saturating_sub(1);
        spend.tokens += calls * tokens;
        let elapsed = self.started.elapsed() + Duration::from_secs_f64(calls as f64 * ms / 1e3);
        self.budget.exceeded(&spend, 0, elapsed).is_none()
    }

    /// The limit reached if `calls` more LLM calls were made now. Node visits are
    /// counted by the executor, so steps are not checked here.
    fn check(&self, calls: u64) -> Result<(), BudgetLimit> {
        let mut spend = self.spend();
        // A call is refused when it would be one over the limit.
        spend.llm_calls += calls.saturating_sub(1);
        match self.budget.exceeded(&spend, 0, self.started.elapsed()) {
            Some(limit) => Err(limit),
            None => Ok(()),
        }
    }

    /// One LLM call. The outer error is the budget (the call was not made); the inner
    /// result is the call's own.
    pub async fn chat(
        &mut self,
        node: &str,
        purpose: &'static str,
        request: ChatRequest,
    ) -> Result<Called, BudgetLimit> {
        self.check(1)?;
        let tap = self.tap.as_ref().map(|t| (t, self.usage.llm_calls));
        let (llm, request, model) = self.routed(purpose, request);
        let c = timed(llm.as_ref(), purpose, request, None, tap, model).await;
        self.record(node, &[&c], c.ms);
        Ok(c)
    }

    /// Two LLM calls at once (an API backend runs them concurrently; the local model
    /// queues them, first argument first, so it can reuse a shared prompt prefix). The
    /// first may have a time limit, after which it counts as failed.
    pub async fn chat2(
        &mut self,
        node: &str,
        first: (&'static str, ChatRequest, Option<Duration>),
        second: (&'static str, ChatRequest),
    ) -> Result<(Called, Called), BudgetLimit> {
        self.check(2)?;
        let (llm_a, request_a, model_a) = self.routed(first.0, first.1);
        let (llm_b, request_b, model_b) = self.routed(second.0, second.1);
        let t = Instant::now();
        let n = self.usage.llm_calls;
        let (tap_a, tap_b) = match self.tap.as_ref() {
            Some(t) => (Some((t, n)), Some((t, n + 1))),
            None => (None, None),
        };
        let (a, b) = tokio::join!(
            timed(llm_a.as_ref(), first.0, request_a, first.2, tap_a, model_a),
            timed(llm_b.as_ref(), second.0, request_b, None, tap_b, model_b)
        );
        self.record(node, &[&a, &b], t.elapsed().as_secs_f64() * 1e3);
        Ok((a, b))
    }

    /// `n` samples of one request at `temperature`, seeds `seed..seed + n`: one call
    /// where the backend draws several samples, else one call per sample (same seeds, so
    /// both paths give the same samples from a deterministic backend). Returns every
    /// sample's text, failed samples left out.
    pub async fn sample(
        &mut self,
        node: &str,
        purpose: &'static str,
        request: ChatRequest,
        n: u32,
        temperature: f32,
        seed: u64,
    ) -> Result<Vec<String>, BudgetLimit> {
        let mut texts = self
            .sample_many(node, purpose, vec![request.samples(n, temperature, seed)])
            .await?;
        Ok(texts.pop().unwrap_or_default())
    }

    /// Samples of several requests (each with its own `n`, temperature and seed set by
    /// [`ChatRequest::samples`]), their calls run together up to the role's concurrency
    /// ([`Gateway::chat_many`]). Returns each request's sample texts, in order.
    pub async fn sample_many(
        &mut self,
        node: &str,
        purpose: &'static str,
        requests: Vec<ChatRequest>,
    ) -> Result<Vec<Vec<String>>, BudgetLimit> {
        if self.capabilities_for(purpose).samples {
            let called = self.chat_many(node, purpose, requests.clone()).await?;
            let mut all = Vec::with_capacity(called.len());
            for (c, request) in called.iter().zip(&requests) {
                let mut texts: Vec<String> = match &c.result {
                    Ok(done) => done.texts().map(str::to_string).collect(),
                    Err(_) => Vec::new(),
                };
                // A server that ignored `n` gave fewer: draw the rest one by one.
                let (have, n) = (texts.len() as u32, request.params.n);
                if have > 0 && have < n {
                    texts.extend(self.one_by_one(node, purpose, request, have..n).await?);
                }
                all.push(texts);
            }
            return Ok(all);
        }
        // One call per sample, every request's samples in one batch.
        let mut owner = Vec::new();
        let mut singles = Vec::new();
        for (k, request) in requests.iter().enumerate() {
            for i in 0..request.params.n.max(1) {
                singles.push(one_sample(request, i));
                owner.push(k);
            }
        }
        let called = self.chat_many(node, purpose, singles).await?;
        let mut all = vec![Vec::new(); requests.len()];
        for (c, k) in called.into_iter().zip(owner) {
            if let Ok(done) = c.result {
                all[k].push(done.text);
            }
        }
        Ok(all)
    }

    async fn one_by_one(
        &mut self,
        node: &str,
        purpose: &'static str,
        request: &ChatRequest,
        range: std::ops::Range<u32>,
    ) -> Result<Vec<String>, BudgetLimit> {
        let requests = range.map(|i| one_sample(request, i)).collect();
        let called = self.chat_many(node, purpose, requests).await?;
        Ok(called
            .into_iter()
            .filter_map(|c| c.result.ok().map(|done| done.text))
            .collect())
    }

    /// Several calls of one purpose, up to its role's concurrency at once (one at a time
    /// unless configured: the local model answers one call at a time anyway). Results come
    /// back, and are recorded, in the order of `requests`. The budget must have room for
    /// every call, or none is made.
    pub async fn chat_many(
        &mut self,
        node: &str,
        purpose: &'static str,
        requests: Vec<ChatRequest>,
    ) -> Result<Vec<Called>, BudgetLimit> {
        if requests.is_empty() {
            return Ok(Vec::new());
        }
        let width = self.concurrency_for(purpose);
        if width <= 1 {
            // One at a time, each checked against the budget as it is made, as `chat`.
            let mut called = Vec::with_capacity(requests.len());
            for request in requests {
                called.push(self.chat(node, purpose, request).await?);
            }
            return Ok(called);
        }
        self.check(requests.len() as u64)?;
        let t = Instant::now();
        let calls = requests.into_iter().map(|request| {
            let (llm, request, model) = self.routed(purpose, request);
            async move { timed(llm.as_ref(), purpose, request, None, None, model).await }
        });
        let called: Vec<Called> = futures_util::stream::iter(calls)
            .buffered(width)
            .collect()
            .await;
        let refs: Vec<&Called> = called.iter().collect();
        self.record(node, &refs, t.elapsed().as_secs_f64() * 1e3);
        Ok(called)
    }

    /// A search with the named retriever ([`DEFAULT_RETRIEVER`] unless a strategy routes
    /// elsewhere). Search time is accounted as model time, not orchestration.
    pub async fn search(
        &mut self,
        retriever: &str,
        request: &SearchRequest,
    ) -> Result<Vec<Hit>, NodeError> {
        self.check(0)?;
        let r = self
            .deps
            .retrievers
            .get(retriever)
            .cloned()
            .ok_or_else(|| {
                NodeError::Failed(format!(
                    "no retriever named `{retriever}` (configured: {})",
                    self.deps
                        .retrievers
                        .keys()
                        .map(String::as_str)
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })?;
        let scoped;
        let request = if self.scope.is_empty() {
            request
        } else {
            match self.scope.and(&request.filter) {
                Some(filter) => {
                    scoped = SearchRequest {
                        filter,
                        ..request.clone()
                    };
                    &scoped
                }
                None => return Ok(Vec::new()),
            }
        };
        let t = Instant::now();
        let hits = r.search_dyn(request).await;
        self.usage.search_ms += t.elapsed().as_secs_f64() * 1e3;
        hits.map_err(|e| NodeError::Failed(format!("search: {e}")))
    }

    /// Classifies the query's intents with the embedding classifier (the query embedding
    /// against example phrases, then cue words), or `None` when no embedder is configured.
    /// Its time counts as search time.
    pub async fn classify_intents(
        &mut self,
        query: &str,
        margin: f32,
    ) -> Result<Option<Route>, NodeError> {
        let Some(embedder) = self.deps.embedder.clone() else {
            return Ok(None);
        };
        self.check(0)?;
        let t = Instant::now();
        let router = self
            .deps
            .intent_router
            .get_or_try_init(|| EmbeddingRouter::new(embedder, margin))
            .await
            .map_err(|e| NodeError::Failed(format!("intent classifier: {e}")))?;
        let route = router
            .classify(query)
            .await
            .map_err(|e| NodeError::Failed(format!("intent classifier: {e}")))?;
        self.usage.search_ms += t.elapsed().as_secs_f64() * 1e3;
        Ok(Some(metarag_retrieve::router::merge_with_rules(
            query, route,
        )))
    }

    /// Scores passages with the reranker (none configured: `None`).
    pub async fn rerank(
        &mut self,
        query: &str,
        passages: &[String],
    ) -> Result<Option<Vec<f32>>, NodeError> {
        let Some(r) = self.deps.reranker.clone() else {
            return Ok(None);
        };
        self.check(0)?;
        let t = Instant::now();
        let scores = r.score_dyn(query, passages).await;
        self.usage.search_ms += t.elapsed().as_secs_f64() * 1e3;
        scores
            .map(Some)
            .map_err(|e| NodeError::Failed(format!("rerank: {e}")))
    }

    /// Records calls that ran within one block of `block_ms` wall time (concurrent calls
    /// count once towards model time).
    fn record(&mut self, node: &str, called: &[&Called], block_ms: f64) {
        self.usage.llm_ms += block_ms;
        for c in called {
            self.usage.llm_calls += 1;
            let mut rec = CallRecord {
                node: node.to_string(),
                purpose: c.purpose.to_string(),
                prompt_tokens: 0,
                cached_prompt_tokens: 0,
                completion_tokens: 0,
                ms: c.ms,
                cached: false,
                original_ms: None,
                error: None,
                model: c.model.clone(),
            };
            match &c.result {
                Ok(done) => {
                    rec.prompt_tokens = done.usage.prompt_tokens;
                    rec.cached_prompt_tokens = done.usage.cached_prompt_tokens;
                    rec.completion_tokens = done.usage.completion_tokens;
                    rec.cached = done.cached;
                    rec.original_ms = done.usage.original_ms;
                    self.usage.prompt_tokens += done.usage.prompt_tokens;
                    self.usage.completion_tokens += done.usage.completion_tokens;
                    self.usage.cached_calls += u64::from(done.cached);
                }
                Err(e) => rec.error = Some(e.to_string()),
            }
            self.calls.push(rec);
        }
    }
}

/// Sample `i` of `request` as a call of its own: one sample, seed `seed + i`.
fn one_sample(request: &ChatRequest, i: u32) -> ChatRequest {
    let mut one = request.clone();
    one.params.n = 1;
    one.params.seed = request.params.seed.wrapping_add(u64::from(i));
    one
}

async fn timed(
    llm: &dyn DynLlm,
    purpose: &'static str,
    request: ChatRequest,
    limit: Option<Duration>,
    tap: Option<(&TokenTap, u64)>,
    model: Option<String>,
) -> Called {
    let t = Instant::now();
    // Several samples would interleave in one stream; only single-sample calls stream.
    let sink = tap.filter(|_| request.params.n <= 1).map(|(tap, call)| {
        move |text: &str| {
            tap(Generated {
                purpose,
                call,
                text,
            })
        }
    });
    let call = async {
        match &sink {
            Some(sink) => llm.chat_stream_dyn(&request, sink).await,
            None => llm.chat_dyn(&request).await,
        }
    };
    let result = match limit {
        None => call.await,
        Some(d) => match tokio::time::timeout(d, call).await {
            Ok(r) => r,
            Err(_) => Err(metarag_core::Error::backend(
                "model",
                metarag_core::Fault::Internal,
                format!("timed out after {d:?}"),
            )),
        },
    };
    Called {
        purpose,
        result,
        ms: t.elapsed().as_secs_f64() * 1e3,
        model,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::BudgetKind;
    use metarag_core::{FinishReason, Usage};

    /// Echoes the seed, so samples tell their seeds apart.
    struct Echo;

    impl Llm for Echo {
        fn model_id(&self) -> &str {
            "echo"
        }
        async fn chat(&self, r: &ChatRequest) -> metarag_core::Result<Completion> {
            let usage = Usage {
                prompt_tokens: 10,
                completion_tokens: 1,
                ..Usage::default()
            };
            Ok(Completion::new(
                format!("seed {}", r.params.seed),
                FinishReason::Stop,
                usage,
                "echo",
            ))
        }
    }

    /// Echoes the seed and counts the calls in flight at once.
    #[derive(Default)]
    struct Counting {
        now: std::sync::atomic::AtomicUsize,
        most: std::sync::atomic::AtomicUsize,
    }

    impl Llm for Counting {
        fn model_id(&self) -> &str {
            "counting"
        }
        async fn chat(&self, r: &ChatRequest) -> metarag_core::Result<Completion> {
            use std::sync::atomic::Ordering::SeqCst;
            let now = self.now.fetch_add(1, SeqCst) + 1;
            self.most.fetch_max(now, SeqCst);
            // Lets the other calls of a batch start before this one ends.
            tokio::time::sleep(Duration::from_millis(5)).await;
            self.now.fetch_sub(1, SeqCst);
            Echo.chat(r).await
        }
    }

    #[tokio::test]
    async fn a_roles_calls_run_up_to_its_concurrency_in_order_and_are_all_recorded() {
        for width in [1, 3] {
            let counting = Arc::new(Counting::default());
            let mut deps = Deps::new(Arc::new(Echo));
            let llm: Arc<dyn DynLlm> = counting.clone();
            deps.roles.insert(
                Role::Generator,
                RoleModel::new().llm(llm).concurrency(width),
            );
            let mut g = Gateway::new(Arc::new(deps), Budget::default());
            let texts = g
                .sample("n", "expand", ChatRequest::user("q"), 6, 0.7, 100)
                .await
                .unwrap();
            let seeds: Vec<String> = (100..106).map(|s| format!("seed {s}")).collect();
            assert_eq!(texts, seeds);
            assert_eq!(
                counting.most.load(std::sync::atomic::Ordering::SeqCst),
                width
            );
            assert_eq!(g.usage.llm_calls, 6);
            assert!(
                g.calls
                    .iter()
                    .all(|c| c.model.as_deref() == Some("counting"))
            );
            // Calls of another role still go to the default model.
            g.chat("n", "extract", ChatRequest::user("q"))
                .await
                .unwrap();
            assert_eq!(g.calls.last().unwrap().model, None);
        }
        // A batch the budget cannot hold is not started.
        let mut deps = Deps::new(Arc::new(Echo));
        deps.roles
            .insert(Role::Generator, RoleModel::new().concurrency(4));
        let mut g = Gateway::new(
            Arc::new(deps),
            Budget {
                max_llm_calls: 3,
                ..Budget::default()
            },
        );
        let over = g
            .chat_many("n", "expand", vec![ChatRequest::user("q"); 4])
            .await;
        assert!(over.is_err());
        assert_eq!(g.usage.llm_calls, 0);
    }

    fn gateway(budget: Budget) -> Gateway {
        let deps = Deps::new(Arc::new(Echo));
        Gateway::new(Arc::new(deps), budget)
    }

    #[tokio::test]
    async fn the_budget_stops_the_call_that_would_exceed_it() {
        let mut g = gateway(Budget {
            max_llm_calls: 2,
            ..Budget::default()
        });
        for _ in 0..2 {
            let c = g.chat("n", "p", ChatRequest::user("hi")).await.unwrap();
            assert!(c.result.is_ok());
        }
        let err = g.chat("n", "p", ChatRequest::user("hi")).await.unwrap_err();
        assert_eq!(err.kind, BudgetKind::MaxLlmCalls);
        // Refused calls are not made, so not recorded either.
        assert_eq!(g.calls.len(), 2);
        assert_eq!(g.usage.prompt_tokens, 20);
    }

    #[tokio::test]
    async fn room_for_counts_calls_as_large_as_the_largest_so_far() {
        let mut g = gateway(Budget {
            max_llm_calls: 4,
            max_tokens: 50,
            ..Budget::default()
        });
        // Nothing made yet: only the call count can be told.
        assert!(g.room_for(4));
        assert!(!g.room_for(5));
        for _ in 0..2 {
            g.chat("n", "p", ChatRequest::user("hi")).await.unwrap();
        }
        // 22 tokens spent, 11 a call: two more fit under 50, three do not.
        assert!(g.room_for(2));
        assert!(!g.room_for(3));
        // The call limit binds first when tokens are plenty.
        let mut g = gateway(Budget {
            max_llm_calls: 3,
            ..Budget::default()
        });
        g.chat("n", "p", ChatRequest::user("hi")).await.unwrap();
        assert!(g.room_for(2));
        assert!(!g.room_for(3));
    }

    #[tokio::test]
    async fn samples_are_drawn_one_by_one_with_distinct_seeds_without_backend_support() {
        let mut g = gateway(Budget::default());
        let texts = g
            .sample("n", "vote", ChatRequest::user("q"), 3, 0.7, 40)
            .await
            .unwrap();
        assert_eq!(texts, ["seed 40", "seed 41", "seed 42"]);
        assert_eq!(g.usage.llm_calls, 3);
        // Three samples need three calls: a budget of two refuses the batch part-way.
        let mut g = gateway(Budget {
            max_llm_calls: 2,
            ..Budget::default()
        });
        assert!(
            g.sample("n", "vote", ChatRequest::user("q"), 3, 0.7, 0)
                .await
                .is_err()
        );
    }

    #[tokio::test]
    async fn an_unknown_retriever_is_named_in_the_error() {
        let mut g = gateway(Budget::default());
        let err = g
            .search("graph", &SearchRequest::new("q", 3))
            .await
            .unwrap_err();
        assert!(matches!(err, NodeError::Failed(m) if m.contains("no retriever named `graph`")));
    }
}
