//! The strategies as graphs over one run state, and the [`Agent`] that runs them.

use crate::config::{AgentConfig, Complexity, RouteConfig};
use crate::error::{Error, Result};
use crate::evidence::{self, Passage, Source};
use crate::graph::{Graph, GraphState, Spend, StopReason, Transition};
use crate::metacog::{self, DiagnoseInput};
use crate::prompts::{self, CriticReply, FactsReply, JudgeReply, PlanReply, WriteReply};
use crate::text::{is_refusal, reconcile_short_answer, sentences};
use crate::trace::{
    CallRecord, EvidenceMode, PlanRecord, Remediation, RetrievalReason, RetrievalRecord, Round,
    RunUsage, TRACE_VERSION, Trace,
};
use crate::verify::{VerifyInput, attribute, strip_invalid_citations, verify, without_citations};
use metarag_core::{
    ChatRequest, Completion, DynLlm, DynReranker, DynRetriever, Llm, SearchRequest, parse_json,
};
use serde::de::DeserializeOwned;
use std::sync::Arc;
use std::time::Instant;

/// The strategies the agent registers. Every one produces the same [`Trace`], so the CLI,
/// server and benchmark treat them alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// No retrieval: the model answers from its own knowledge.
    Direct,
    /// One retrieval, one write: the standard RAG baseline.
    Standard,
    /// Plan, retrieve, write, verify, and the metacognitive loop (seed `000`).
    Metarag,
}

impl Strategy {
    /// Every registered strategy.
    pub const ALL: [Strategy; 3] = [Strategy::Direct, Strategy::Standard, Strategy::Metarag];

    /// Its name on the command line and in traces.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Direct => "direct",
            Strategy::Standard => "standard",
            Strategy::Metarag => "metarag",
        }
    }

    /// One line on what it does.
    pub fn description(self) -> &'static str {
        match self {
            Strategy::Direct => "no retrieval: the model answers from its own knowledge",
            Strategy::Standard => "one retrieval, one cited answer (the standard RAG baseline)",
            Strategy::Metarag => {
                "plan, retrieve, write, verify; diagnose and remediate weak answers until they pass or converge"
            }
        }
    }

    /// Parses a name.
    pub fn parse(name: &str) -> Result<Self> {
        Strategy::ALL
            .into_iter()
            .find(|s| s.name() == name.trim())
            .ok_or_else(|| {
                Error::Request(format!(
                    "unknown strategy `{name}`; registered: {}",
                    Strategy::ALL.map(Strategy::name).join(", ")
                ))
            })
    }
}

/// What to answer.
#[derive(Debug, Clone)]
pub struct Ask {
    /// The question.
    pub question: String,
    /// The strategy.
    pub strategy: Strategy,
    /// Gold context paragraphs: when set, they are the only sources and nothing is
    /// retrieved.
    pub context: Option<Vec<Passage>>,
}

impl Ask {
    /// A question for a strategy, retrieving from the index.
    pub fn new(question: impl Into<String>, strategy: Strategy) -> Self {
        Ask {
            question: question.into(),
            strategy,
            context: None,
        }
    }

    /// Uses these paragraphs as the only sources.
    pub fn with_context(mut self, paragraphs: Vec<Passage>) -> Self {
        self.context = Some(paragraphs);
        self
    }
}

struct Deps {
    llm: Arc<dyn DynLlm>,
    retriever: Option<Arc<dyn DynRetriever>>,
    reranker: Option<Arc<dyn DynReranker>>,
    config: AgentConfig,
}

/// Builds an [`Agent`].
pub struct AgentBuilder {
    deps: Deps,
}

impl AgentBuilder {
    /// The retriever for strategies that search (not needed for gold context or `direct`).
    pub fn retriever(mut self, retriever: Arc<dyn DynRetriever>) -> Self {
        self.deps.retriever = Some(retriever);
        self
    }

    /// A reranker for routes that rerank (without one, reranking is skipped and the trace
    /// says so).
    pub fn reranker(mut self, reranker: Arc<dyn DynReranker>) -> Self {
        self.deps.reranker = Some(reranker);
        self
    }

    /// Thresholds and limits.
    pub fn config(mut self, config: AgentConfig) -> Self {
        self.deps.config = config;
        self
    }

    /// Validates the configuration and builds the agent.
    pub fn build(self) -> Result<Agent> {
        self.deps.config.validate()?;
        Ok(Agent {
            deps: Arc::new(self.deps),
        })
    }
}

/// Runs strategies over an LLM and, optionally, a retriever and a reranker.
#[derive(Clone)]
pub struct Agent {
    deps: Arc<Deps>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("llm", &Llm::model_id(&self.deps.llm))
            .field("retriever", &self.deps.retriever.is_some())
            .field("reranker", &self.deps.reranker.is_some())
            .finish()
    }
}

impl Agent {
    /// A builder over this LLM.
    pub fn builder(llm: Arc<dyn DynLlm>) -> AgentBuilder {
        AgentBuilder {
            deps: Deps {
                llm,
                retriever: None,
                reranker: None,
                config: AgentConfig::default(),
            },
        }
    }

    /// The configuration.
    pub fn config(&self) -> &AgentConfig {
        &self.deps.config
    }

    /// Answers a question.
    pub async fn ask(&self, ask: &Ask) -> Result<Trace> {
        self.ask_observed(ask, &|_| {}).await
    }

    /// Answers a question, calling `observer` with each node's name as it starts.
    pub async fn ask_observed(
        &self,
        ask: &Ask,
        observer: &(dyn Fn(&str) + Send + Sync),
    ) -> Result<Trace> {
        let question = ask.question.trim();
        if question.is_empty() {
            return Err(Error::Request("the question is empty".into()));
        }
        let mode = match (&ask.context, ask.strategy) {
            (_, Strategy::Direct) => EvidenceMode::ClosedBook,
            (Some(_), _) => EvidenceMode::Context,
            (None, _) if self.deps.retriever.is_some() => EvidenceMode::Retrieval,
            (None, s) => {
                return Err(Error::Request(format!(
                    "strategy `{}` needs an index to search, or context paragraphs",
                    s.name()
                )));
            }
        };
        if let Some(ctx) = &ask.context
            && ctx.is_empty()
        {
            return Err(Error::Request("the context has no paragraphs".into()));
        }
        let cfg = &self.deps.config;
        let mut state = RunState {
            deps: self.deps.clone(),
            strategy: ask.strategy,
            question: question.to_string(),
            context: ask.context.clone(),
            mode,
            complexity: Complexity::Complex,
            route: RouteConfig {
                rerank: false,
                hops: 1,
                ..cfg.route(Complexity::Complex)
            },
            plan: None,
            pool: Vec::new(),
            hops: 0,
            queries: vec![question.to_string()],
            pending: None,
            retrievals: Vec::new(),
            sources: Vec::new(),
            sources_version: 0,
            facts: None,
            directive: None,
            rounds: Vec::new(),
            calls: Vec::new(),
            usage: RunUsage::default(),
            note: None,
        };
        let graph = graph(ask.strategy);
        let g = graph.run_observed(&mut state, &cfg.budget, observer).await;
        Ok(state.into_trace(g))
    }
}

/// The graph of a strategy (`metarag graph` prints it as Mermaid).
pub fn graph(strategy: Strategy) -> Graph<RunState> {
    match strategy {
        Strategy::Direct => Graph::new("write").node("write", &[], |s| Box::pin(write(s))),
        Strategy::Standard => Graph::new("retrieve")
            .node("retrieve", &[("read", "")], |s| Box::pin(retrieve(s)))
            .node("read", &[("write", "")], |s| Box::pin(read(s)))
            .node("write", &[], |s| Box::pin(write(s))),
        Strategy::Metarag => Graph::new("plan")
            .node("plan", &[("retrieve", "")], |s| Box::pin(plan(s)))
            .node(
                "retrieve",
                &[
                    ("retrieve", "coverage < threshold, hops left"),
                    ("read", "enough evidence"),
                ],
                |s| Box::pin(retrieve(s)),
            )
            .node("read", &[("write", "")], |s| Box::pin(read(s)))
            .node("write", &[("verify", "")], |s| Box::pin(write(s)))
            .node("verify", &[("monitor", "")], |s| Box::pin(verify_node(s)))
            .node("monitor", &[("converge", "gate failed")], |s| {
                Box::pin(monitor(s))
            })
            .node(
                "converge",
                &[("diagnose", "not converged, rounds left")],
                |s| Box::pin(converge(s)),
            )
            .node("diagnose", &[("remediate", "")], |s| Box::pin(diagnose(s)))
            .node(
                "remediate",
                &[
                    ("retrieve", "insufficient_knowledge"),
                    ("write", "writing directive"),
                ],
                |s| Box::pin(remediate(s)),
            ),
    }
}

/// The state a strategy's graph runs over. Opaque: a run turns it into a [`Trace`].
pub struct RunState {
    deps: Arc<Deps>,
    strategy: Strategy,
    question: String,
    context: Option<Vec<Passage>>,
    mode: EvidenceMode,
    complexity: Complexity,
    route: RouteConfig,
    plan: Option<PlanRecord>,
    pool: Vec<Passage>,
    hops: usize,
    queries: Vec<String>,
    pending: Option<(String, RetrievalReason)>,
    retrievals: Vec<RetrievalRecord>,
    sources: Vec<Source>,
    sources_version: usize,
    facts: Option<(usize, std::result::Result<FactsReply, String>)>,
    directive: Option<String>,
    rounds: Vec<Round>,
    calls: Vec<CallRecord>,
    usage: RunUsage,
    note: Option<String>,
}

impl GraphState for RunState {
    fn spend(&self) -> Spend {
        Spend {
            llm_calls: self.usage.llm_calls,
            tokens: self.usage.prompt_tokens + self.usage.completion_tokens,
            model_ms: self.usage.llm_ms + self.usage.search_ms,
        }
    }

    fn take_note(&mut self) -> Option<String> {
        self.note.take()
    }
}

type NodeResult = std::result::Result<Transition, String>;

/// An LLM call's outcome and wall time.
struct Called {
    purpose: &'static str,
    result: metarag_core::Result<Completion>,
    ms: f64,
}

async fn call(llm: &dyn DynLlm, purpose: &'static str, request: ChatRequest) -> Called {
    let t = Instant::now();
    let result = llm.chat_dyn(&request).await;
    Called {
        purpose,
        result,
        ms: t.elapsed().as_secs_f64() * 1e3,
    }
}

impl RunState {
    fn cfg(&self) -> &AgentConfig {
        &self.deps.config
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

    fn current_round(&mut self) -> std::result::Result<&mut Round, String> {
        self.rounds
            .last_mut()
            .ok_or_else(|| "no answer has been written yet".to_string())
    }

    fn into_trace(self, graph: crate::graph::GraphTrace) -> Trace {
        // The final answer is the best round by the gate's metrics (a passed round first),
        // the latest among equals: a remediation that made things worse does not win.
        let score = |r: &Round| {
            r.verification.as_ref().map_or(0.0, |v| {
                v.faithfulness + v.completeness + v.citation_precision
            }) + if r.monitor.is_some_and(|m| m.passed) {
                10.0
            } else {
                0.0
            }
        };
        let best = self
            .rounds
            .iter()
            .enumerate()
            .max_by(|a, b| score(a.1).total_cmp(&score(b.1)).then(a.0.cmp(&b.0)))
            .map(|(i, _)| i);
        let (answer, short_answer) = best
            .map(|i| {
                (
                    self.rounds[i].answer.clone(),
                    self.rounds[i].short_answer.clone(),
                )
            })
            .unwrap_or_default();
        Trace {
            version: TRACE_VERSION,
            strategy: self.strategy.name().to_string(),
            question: self.question,
            model: Llm::model_id(&self.deps.llm).to_string(),
            mode: self.mode,
            plan: self.plan,
            retrievals: self.retrievals,
            sources: self.sources,
            rounds: self.rounds,
            answer,
            short_answer,
            final_round: best,
            stop: graph.stop.clone(),
            calls: self.calls,
            usage: self.usage,
            graph,
        }
    }
}

fn parsed<T: DeserializeOwned>(c: &Called) -> std::result::Result<T, String> {
    match &c.result {
        Ok(done) => parse_json::<T>(&done.text).map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    }
}

/// Rule-based complexity: comparisons and nested references ("the director of X") are
/// multi-hop; open explanations and long questions complex; the rest simple.
pub fn classify(question: &str) -> Complexity {
    let q = format!(" {} ", question.to_lowercase());
    const COMPARE: &[&str] = &[
        " or ",
        " both ",
        " same ",
        " older ",
        " younger ",
        " first",
        " earlier ",
        " later ",
        " more ",
        " less ",
        " than ",
        " larger ",
        " longer ",
        " higher ",
        " compare",
        " difference ",
    ];
    if COMPARE.iter().any(|c| q.contains(c))
        || q.contains("'s ")
        || (q.contains(" the ") && q.contains(" of "))
        // A relative clause after the first word ("the palace at which X died").
        || [" who ", " which ", " whose ", " that ", " where "]
            .iter()
            .any(|w| q[1..].contains(w))
    {
        Complexity::MultiHop
    } else if ["why ", "how ", "explain", "describe"]
        .iter()
        .any(|w| q.trim_start().starts_with(w))
        || question.split_whitespace().count() > 20
    {
        Complexity::Complex
    } else {
        Complexity::Simple
    }
}

fn rank(c: Complexity) -> u8 {
    match c {
        Complexity::Simple => 0,
        Complexity::Complex => 1,
        Complexity::MultiHop => 2,
    }
}

async fn plan(s: &mut RunState) -> NodeResult {
    let rules = classify(&s.question);
    let (complexity, method, fallback_reason) = if s.mode != EvidenceMode::Retrieval {
        (
            rules,
            "rules",
            Some("no retrieval to route: the context is given".to_string()),
        )
    } else if !s.cfg().plan_with_llm {
        (rules, "rules", Some("plan_with_llm is off".to_string()))
    } else {
        let llm = s.deps.llm.clone();
        let c = call(llm.as_ref(), "plan", prompts::plan(&s.question)).await;
        s.record("plan", &[&c], c.ms);
        match parsed::<PlanReply>(&c) {
            // The rules see nesting ("the palace at which X died") a small model misses:
            // the more complex of the two wins.
            Ok(p) if rank(rules) > rank(p.complexity) => (rules, "llm+rules", None),
            Ok(p) => (p.complexity, "llm", None),
            Err(e) => (rules, "rules", Some(e)),
        }
    };
    s.complexity = complexity;
    s.route = s.cfg().route(complexity);
    s.note = Some(format!(
        "{} by {method}: top_k {}, rerank {}, hops {}",
        complexity.as_str(),
        s.route.top_k,
        s.route.rerank,
        s.route.hops
    ));
    s.plan = Some(PlanRecord {
        complexity,
        method: method.to_string(),
        route: s.route,
        fallback_reason,
    });
    Ok(Transition::Goto("retrieve"))
}

/// Fuses the retriever's order with a reranker's by RRF (k = 60): measured here, a small
/// reranker alone lowers NDCG but fused it keeps NDCG and lifts recall.
fn fuse_rerank(n: usize, scores: &[f32]) -> Vec<usize> {
    let mut by_score: Vec<usize> = (0..n).collect();
    by_score.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    let mut fused = vec![0.0f64; n];
    for (rank, &i) in by_score.iter().enumerate() {
        fused[i] += 1.0 / (60.0 + rank as f64 + 1.0);
    }
    for (i, f) in fused.iter_mut().enumerate() {
        *f += 1.0 / (60.0 + i as f64 + 1.0);
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| fused[b].total_cmp(&fused[a]).then(a.cmp(&b)));
    order
}

async fn retrieve(s: &mut RunState) -> NodeResult {
    let threshold = s.cfg().near_duplicate_threshold;
    if s.mode != EvidenceMode::Retrieval {
        let given = s.context.clone().unwrap_or_default();
        let hits = given.len();
        let (kept, guardrails) = evidence::guard(given, &s.pool, threshold);
        let added = evidence::merge(&mut s.pool, kept);
        s.note = Some(format!(
            "{hits} context paragraphs, {added} kept, {} dropped",
            guardrails.total()
        ));
        s.retrievals.push(RetrievalRecord {
            reason: RetrievalReason::Context,
            query: String::new(),
            k: hits,
            hits,
            added,
            guardrails,
            rerank: "no: gold context".into(),
            diagnostics: evidence::diagnose_pool(&s.question, &s.pool),
            ms: 0.0,
        });
        return Ok(Transition::Goto("read"));
    }
    let (query, reason) = s
        .pending
        .take()
        .unwrap_or_else(|| (s.question.clone(), RetrievalReason::Initial));
    let retriever = s
        .deps
        .retriever
        .clone()
        .ok_or_else(|| "no retriever configured".to_string())?;
    let k = s.route.top_k;
    // Later searches augment the pool: ask deep enough to find k passages not in it yet.
    let depth = k + s.pool.len();
    let t = Instant::now();
    let mut hits = retriever
        .search_dyn(&SearchRequest::new(query.clone(), depth))
        .await
        .map_err(|e| format!("search: {e}"))?;
    let rerank = match (&s.deps.reranker, s.route.rerank) {
        (_, false) => "no: not in this route".to_string(),
        (None, true) => "skipped: no reranker configured".to_string(),
        (Some(r), true) if hits.len() > 1 => {
            let texts: Vec<String> = hits.iter().map(|h| h.chunk.draft.text.clone()).collect();
            let scores = r
                .score_dyn(&query, &texts)
                .await
                .map_err(|e| format!("rerank: {e}"))?;
            let order = fuse_rerank(hits.len(), &scores);
            let mut slots: Vec<Option<metarag_core::Hit>> = hits.into_iter().map(Some).collect();
            hits = order.into_iter().filter_map(|i| slots[i].take()).collect();
            format!("yes: {} fused with the hybrid order", r.model_id())
        }
        (Some(_), true) => "no: fewer than two hits".to_string(),
    };
    let ms = t.elapsed().as_secs_f64() * 1e3;
    s.usage.search_ms += ms;
    let n_hits = hits.len();
    let passages = evidence::fresh(&s.pool, hits.iter().map(Passage::from_hit).collect());
    let (mut kept, guardrails) = evidence::guard(passages, &s.pool, threshold);
    kept.truncate(k);
    let added = evidence::merge(&mut s.pool, kept);
    if reason != RetrievalReason::Remediation {
        s.hops += 1;
    }
    if !s.queries.contains(&query) {
        s.queries.push(query.clone());
    }
    let diagnostics = evidence::diagnose_pool(&s.question, &s.pool);
    let low_diversity = if diagnostics.document_diversity < s.cfg().min_retrieval_diversity {
        "; warning: low document diversity"
    } else {
        ""
    };
    s.note = Some(format!(
        "{reason:?} {query:?}: {n_hits} hits, {added} new, {} dropped; coverage {:.2}{low_diversity}",
        guardrails.total(),
        diagnostics.query_coverage
    ));
    s.retrievals.push(RetrievalRecord {
        reason,
        query,
        k,
        hits: n_hits,
        added,
        guardrails,
        rerank,
        diagnostics,
        ms,
    });
    if s.strategy == Strategy::Metarag
        && reason != RetrievalReason::Remediation
        && s.hops < s.route.hops
        && diagnostics.query_coverage < s.cfg().evidence_coverage_threshold
        && let Some(next) = evidence::next_hop_query(&s.question, &s.pool)
        && !s.queries.contains(&next)
    {
        s.pending = Some((next, RetrievalReason::Hop));
        return Ok(Transition::Goto("retrieve"));
    }
    Ok(Transition::Goto("read"))
}

async fn read(s: &mut RunState) -> NodeResult {
    s.sources = evidence::read(&s.queries, &s.pool, s.cfg().max_evidence_chars);
    s.sources_version += 1;
    let spans: usize = s.sources.iter().map(|x| x.spans.len()).sum();
    s.note = Some(format!("{} sources, {spans} sentences", s.sources.len()));
    Ok(Transition::Goto("write"))
}

async fn write(s: &mut RunState) -> NodeResult {
    let sources: Vec<Source> = if s.mode == EvidenceMode::ClosedBook {
        Vec::new()
    } else {
        s.sources.clone()
    };
    let request = prompts::write(
        &s.question,
        &sources,
        s.directive.as_deref(),
        s.cfg().answer_max_tokens,
    );
    let n_sources = sources.len();
    let llm = s.deps.llm.clone();
    let c = call(llm.as_ref(), "write", request).await;
    s.record("write", &[&c], c.ms);
    let text = match &c.result {
        Ok(done) => done.text.clone(),
        Err(e) => return Err(format!("write: {e}")),
    };
    let (answer, short, write_fallback) = match parse_json::<WriteReply>(&text) {
        Ok(r) => (r.answer, r.short_answer, None),
        Err(e) => {
            // Use the raw text: an answer in the wrong wrapper is still an answer.
            let raw = text.trim().to_string();
            let first = sentences(&raw)
                .first()
                .map(|&(a, b)| without_citations(&raw[a..b]))
                .unwrap_or_default();
            (raw, first, Some(e.to_string()))
        }
    };
    let (answer, stripped) = strip_invalid_citations(answer.trim(), n_sources);
    let (answer, attributed) = attribute(&answer, &sources, s.cfg().support_threshold);
    let mut short = without_citations(short.trim());
    // A "short" answer longer than the answer itself is the model copying a passage.
    let answer_words = without_citations(&answer).split_whitespace().count();
    if short.split_whitespace().count() > 12 && answer_words < short.split_whitespace().count() {
        short = without_citations(&answer);
    }
    if short.is_empty() && !is_refusal(&answer) {
        short = sentences(&answer)
            .first()
            .map(|&(a, b)| without_citations(&answer[a..b]))
            .unwrap_or_default();
    }
    // Small models swap the two fields ("answer": "No", "short_answer": "They were not
    // ..."); the model's own short answer stays in the note.
    let mut fixed = String::new();
    if let Some((better, why)) =
        reconcile_short_answer(&s.question, &without_citations(&answer), &short)
    {
        fixed = format!(" (model wrote {short:?}; took the {})", why.as_str());
        short = better;
    }
    let index = s.rounds.len();
    s.note = Some(format!(
        "round {index}: {:?}{fixed}; {stripped} invalid citations stripped, {attributed} attributed",
        short
    ));
    s.rounds.push(Round {
        index,
        directive: s.directive.clone(),
        answer,
        short_answer: short,
        stripped_citations: stripped,
        attributed_citations: attributed,
        write_fallback,
        verification: None,
        monitor: None,
        similarity_to_previous: None,
        diagnosis: None,
        remediation: None,
    });
    Ok(match s.strategy {
        Strategy::Metarag => Transition::Goto("verify"),
        _ => Transition::Stop(StopReason::Done("answered".into())),
    })
}

async fn verify_node(s: &mut RunState) -> NodeResult {
    let (answer, short) = {
        let r = s.current_round()?;
        (r.answer.clone(), r.short_answer.clone())
    };
    let need_facts = s
        .facts
        .as_ref()
        .is_none_or(|(version, _)| *version != s.sources_version);
    let llm = s.deps.llm.clone();
    let judge_req = prompts::judge(&s.question, &s.sources, &answer);
    let t = Instant::now();
    // The facts depend only on the evidence, so they are asked once per evidence pool;
    // with an API backend the two calls run at the same time.
    let (facts_call, judge_call) = if need_facts {
        let facts_req = prompts::facts(&s.question, &s.sources);
        let (f, j) = tokio::join!(
            call(llm.as_ref(), "facts", facts_req),
            call(llm.as_ref(), "judge", judge_req)
        );
        (Some(f), j)
    } else {
        (None, call(llm.as_ref(), "judge", judge_req).await)
    };
    let block = t.elapsed().as_secs_f64() * 1e3;
    match &facts_call {
        Some(f) => s.record("verify", &[f, &judge_call], block),
        None => s.record("verify", &[&judge_call], block),
    }
    if let Some(f) = &facts_call {
        s.facts = Some((s.sources_version, parsed::<FactsReply>(f)));
    }
    let facts = match &s.facts {
        Some((_, Ok(f))) => Ok(f),
        Some((_, Err(e))) => Err(e.clone()),
        None => Err("no facts".to_string()),
    };
    let v = verify(VerifyInput {
        answer: &answer,
        short_answer: &short,
        sources: &s.sources,
        facts,
        judge: parsed::<JudgeReply>(&judge_call),
        support_threshold: s.cfg().support_threshold,
        judge_weight: s.cfg().judge_weight,
    });
    s.note = Some(format!(
        "faithfulness {:.2}, completeness {:.2}, citation precision {:.2}, facts found {}/{}",
        v.faithfulness,
        v.completeness,
        v.citation_precision,
        v.facts.iter().filter(|f| f.verified).count(),
        v.facts.len()
    ));
    s.current_round()?.verification = Some(v);
    Ok(Transition::Goto("monitor"))
}

async fn monitor(s: &mut RunState) -> NodeResult {
    let cfg = s.cfg().clone();
    let round = s.current_round()?;
    let v = round
        .verification
        .as_ref()
        .ok_or_else(|| "the answer was not verified".to_string())?;
    let m = metacog::monitor(v, &cfg);
    round.monitor = Some(m);
    s.note = Some(if m.passed {
        "gate passed".into()
    } else {
        "gate failed".into()
    });
    Ok(if m.passed {
        Transition::Stop(StopReason::Done(if m.fast_path {
            "passed (fast path)".into()
        } else {
            "passed".into()
        }))
    } else {
        Transition::Goto("converge")
    })
}

async fn converge(s: &mut RunState) -> NodeResult {
    let (max_rounds, threshold) = (s.cfg().max_rounds, s.cfg().convergence_threshold);
    let n = s.rounds.len();
    let similarity = (n >= 2)
        .then(|| metacog::answer_similarity(&s.rounds[n - 2].answer, &s.rounds[n - 1].answer));
    s.current_round()?.similarity_to_previous = similarity;
    if n > max_rounds {
        return Ok(Transition::Stop(StopReason::Done(format!(
            "max_rounds {max_rounds}"
        ))));
    }
    if let Some(j) = similarity
        && j >= threshold
    {
        return Ok(Transition::Stop(StopReason::Done(format!(
            "converged (jaccard {j:.2})"
        ))));
    }
    Ok(Transition::Goto("diagnose"))
}

/// What the checks found, in words, for the critic.
fn findings(round: &Round) -> Vec<String> {
    let Some(v) = &round.verification else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let unsupported = v.claims.iter().filter(|c| !c.supported).count();
    if unsupported > 0 {
        out.push(format!(
            "{unsupported} of {} claims are not supported by the sources they cite",
            v.claims.len()
        ));
    }
    if v.citation_precision < 1.0 {
        out.push(format!("citation precision is {:.2}", v.citation_precision));
    }
    for f in v.facts.iter().filter(|f| !f.verified) {
        out.push(format!("needed fact not found in the sources: {}", f.need));
    }
    for f in v.facts.iter().filter(|f| f.verified && !f.in_answer) {
        out.push(format!("the answer does not use: {} = {}", f.need, f.value));
    }
    if v.refusal {
        out.push("the answer declines to answer".into());
    }
    out
}

async fn diagnose(s: &mut RunState) -> NodeResult {
    let cfg = s.cfg().clone();
    let round = s.current_round()?.clone();
    let v = round
        .verification
        .clone()
        .ok_or_else(|| "the answer was not verified".to_string())?;
    let llm = s.deps.llm.clone();
    let critic_req = prompts::critic(&s.question, &s.sources, &round.answer, &findings(&round));
    let t = Instant::now();
    // The critic goes first: it shares the evidence prefix with the calls before it, so a
    // local model reuses that prefix (the closed-book probe would evict it).
    let (critic, cb) = tokio::join!(
        tokio::time::timeout(cfg.critic_timeout, call(llm.as_ref(), "critic", critic_req)),
        call(
            llm.as_ref(),
            "closed_book",
            prompts::closed_book(&s.question)
        )
    );
    let block = t.elapsed().as_secs_f64() * 1e3;
    let critic_result: std::result::Result<CriticReply, String> = match &critic {
        Ok(c) => {
            s.record("diagnose", &[&cb, c], block);
            parsed::<CriticReply>(c)
        }
        Err(_) => {
            s.record("diagnose", &[&cb], block);
            Err(format!("timed out after {:?}", cfg.critic_timeout))
        }
    };
    let closed_book = match &cb.result {
        Ok(done) => Ok(done.text.trim().to_string()),
        Err(e) => Err(e.to_string()),
    };
    let coverage = evidence::diagnose_pool(&s.question, &s.pool).query_coverage;
    let fallback_query = evidence::next_hop_query(&s.question, &s.pool);
    let d = metacog::diagnose(
        DiagnoseInput {
            question: &s.question,
            answer: &round.answer,
            short_answer: &round.short_answer,
            complexity: s.complexity,
            verification: &v,
            coverage,
            closed_book,
            critic: critic_result,
            fallback_query,
        },
        &cfg,
    );
    s.note = Some(format!(
        "{} {:?} ({:?})",
        d.category.as_str(),
        d.error_types,
        d.method
    ));
    s.current_round()?.diagnosis = Some(d);
    Ok(Transition::Goto("remediate"))
}

async fn remediate(s: &mut RunState) -> NodeResult {
    let can_retrieve = s.mode == EvidenceMode::Retrieval;
    let round = s.current_round()?;
    let d = round
        .diagnosis
        .clone()
        .ok_or_else(|| "no diagnosis".to_string())?;
    let (remediation, next, directive, pending) = match metacog::directive(&d) {
        None if can_retrieve => (
            Remediation::Retrieve {
                category: d.category,
                query: d.suggested_query.clone(),
            },
            "retrieve",
            None,
            Some((d.suggested_query.clone(), RetrievalReason::Remediation)),
        ),
        None => (
            Remediation::Directive {
                category: d.category,
                text: metacog::DIRECTIVE_REREAD.into(),
            },
            "write",
            Some(metacog::DIRECTIVE_REREAD.to_string()),
            None,
        ),
        Some(text) => (
            Remediation::Directive {
                category: d.category,
                text: text.clone(),
            },
            "write",
            Some(text),
            None,
        ),
    };
    let note = match &remediation {
        Remediation::Retrieve { query, .. } => format!("re-retrieve with {query:?}"),
        Remediation::Directive { text, .. } => format!("directive: {text}"),
    };
    round.remediation = Some(remediation);
    s.note = Some(note);
    s.directive = directive;
    s.pending = pending;
    Ok(Transition::Goto(next))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strategies_parse_by_name() {
        assert_eq!(Strategy::parse("metarag").unwrap(), Strategy::Metarag);
        assert!(
            Strategy::parse("react")
                .unwrap_err()
                .to_string()
                .contains("direct, standard, metarag")
        );
    }

    #[test]
    fn every_graph_validates() {
        for s in Strategy::ALL {
            graph(s).validate().unwrap();
        }
        let m = graph(Strategy::Metarag).mermaid();
        assert!(m.contains("remediate -->|insufficient_knowledge| retrieve"));
    }

    #[test]
    fn rules_classify_questions() {
        assert_eq!(
            classify("Who was born first, Ed Wood or Scott Derrickson?"),
            Complexity::MultiHop
        );
        assert_eq!(
            classify("Which country is the director of Jaws from?"),
            Complexity::MultiHop
        );
        assert_eq!(classify("Why do stars shine?"), Complexity::Complex);
        assert_eq!(classify("When was Jaws released?"), Complexity::Simple);
        assert_eq!(
            classify("When was the palace founded at which Columba de Dunbar died in 1435?"),
            Complexity::MultiHop
        );
        assert_eq!(classify("Who directed Jaws?"), Complexity::Simple);
    }

    #[test]
    fn rerank_fusion_keeps_agreement_on_top() {
        // The retriever's first is the reranker's last: fused, it falls behind items both like.
        let order = fuse_rerank(3, &[0.1, 0.9, 0.8]);
        assert_eq!(order, [1, 0, 2]);
    }
}
