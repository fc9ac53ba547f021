//! `agentic`: Thoth's agentic retrieval (seed `003`).
//!
//! Classify the question: **direct** (answered from the model's knowledge, as `direct`),
//! **standard** (one retrieval and one write, as `standard`), or **multi-hop**, which runs
//! the loop: expand the question into two or three phrasings and, when it is complex, its
//! sub-questions; extract metadata filters (document years and date ranges, quoted titles)
//! into the index's filter; search every phrasing and fuse the lists by RRF; grade the
//! passages for relevance in one batched call; while too few pass, rewrite the query from
//! what was found and search again; write over the relevant passages; check the answer is
//! grounded in them, and on failure search again for what was not supported and rewrite,
//! up to `max_retries`.
//!
//! Changed for a small local model: the route is the more complex of the model's and the
//! rules' (`nodes::classify`), so "direct" needs both to agree; filters are extracted by
//! rules, not by the model (a 1.5B model invents filters, and a year in a question is more
//! often about its subject than about the documents: only years tied to the documents
//! ("papers published after 2020") and quoted titles are taken, and a filter that leaves
//! too few hits is widened); grading is one call listing the relevant sources rather than
//! a call per passage; and the hallucination check needs both the model's verdict and
//! the claims' support measured in code (`verify`; at least 0.8 of claims in strict mode,
//! 0.5 in lenient).

use crate::config::Complexity;
use crate::evidence;
use crate::graph::{Graph, NodeId, NodeResult, Transition};
use crate::nodes::{self, READ, RETRIEVE, WRITE};
use crate::prompts::{SYSTEM_CLOSED, over_sources};
use crate::registry::Strategy;
use crate::state::Run;
use crate::trace::{EvidenceMode, RetrievalReason, StepKind};
use crate::verify::{VerifyInput, verify};
use crate::{Passage, Source};
use metarag_core::{ChatRequest, Filter, Message};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Picks the route: direct, standard or multi-hop.
pub const CLASSIFY: NodeId = NodeId("classify");
/// Answers from the model's own knowledge (the direct route).
pub const ANSWER_DIRECT: NodeId = NodeId("answer_direct");
/// Phrasings and sub-questions of the question, and its metadata filter.
pub const EXPAND: NodeId = NodeId("expand");
/// Searches every query under the filter and fuses the lists.
pub const SEARCH: NodeId = NodeId("search");
/// Grades the passages found for relevance.
pub const GRADE: NodeId = NodeId("grade");
/// Rewrites the query from what was found (or what was not supported).
pub const REWRITE: NodeId = NodeId("rewrite");
/// Checks the answer is grounded in its sources.
pub const CHECK: NodeId = NodeId("check");

/// The route a question takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Route {
    /// No retrieval: the model's knowledge.
    Direct,
    /// One retrieval, one write.
    Standard,
    /// The agentic loop.
    MultiHop,
}

/// The agentic strategy's settings (`[strategies.agentic]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgenticConfig {
    /// Most rewrites, for each loop (too few relevant passages; an ungrounded answer).
    pub max_retries: usize,
    /// Generate other phrasings of the question.
    pub query_expansion: bool,
    /// Phrasings generated (2-3 in the seed).
    pub expansions: usize,
    /// Split complex questions into sub-questions.
    pub query_decomposition: bool,
    /// Grade the passages found for relevance.
    pub document_grading: bool,
    /// Fewer relevant passages than this triggers a rewrite.
    pub min_relevant: usize,
    /// Check the answer is grounded in its sources.
    pub hallucination_check: bool,
    /// Strict: every claim directly stated in a source; lenient: reasonable inferences
    /// allowed.
    pub strict: bool,
    /// Passages searched for per round.
    pub k: usize,
}

impl Default for AgenticConfig {
    fn default() -> Self {
        AgenticConfig {
            max_retries: 2,
            query_expansion: true,
            expansions: 2,
            query_decomposition: true,
            document_grading: true,
            min_relevant: 2,
            hallucination_check: true,
            strict: false,
            k: 8,
        }
    }
}

/// The agentic strategy.
#[derive(Debug, Clone)]
pub struct Agentic(AgenticConfig);

/// Its state: settings, route, queries, filter, graded passages and counters.
#[derive(Debug)]
pub struct AgenticState {
    config: AgenticConfig,
    route: Route,
    /// The queries the next search runs.
    queries: Vec<String>,
    filter: Filter,
    /// The passages the last search returned, to be graded.
    candidates: Vec<Passage>,
    /// Passages graded relevant so far.
    relevant: Vec<Passage>,
    /// Claims the last check found unsupported.
    unsupported: Vec<String>,
    rewrites: usize,
    retries: usize,
    searches: usize,
    graded: usize,
    passed: usize,
    flagged: usize,
    grounded_round: Option<usize>,
}

/// The classifier's reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RouteReply {
    /// direct, standard or multi_hop.
    pub route: Route,
}

/// The expansion reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExpandReply {
    /// Other phrasings of the question (different words for the same need).
    #[serde(default)]
    pub variations: Vec<String>,
    /// Independent sub-questions, when the question has several parts.
    #[serde(default)]
    pub subquestions: Vec<String>,
}

/// The grader's reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GradeReply {
    /// Numbers of the sources relevant to the question.
    pub relevant: Vec<usize>,
}

/// The hallucination checker's reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CheckReply {
    /// Whether every claim of the answer is supported by the sources.
    pub grounded: bool,
    /// The claims that are not.
    #[serde(default)]
    pub unsupported: Vec<String>,
}

impl Strategy for Agentic {
    const NAME: &'static str = "agentic";
    const DESCRIPTION: &'static str = "route, expand and filter the query, grade the passages, rewrite until enough are relevant, check the answer is grounded (Thoth, seed 003)";
    type Config = AgenticConfig;
    type State = AgenticState;

    fn new(config: AgenticConfig) -> Result<Self, String> {
        if config.k == 0 {
            return Err("k must be at least 1".into());
        }
        if config.query_expansion && !(1..=5).contains(&config.expansions) {
            return Err("expansions must be between 1 and 5".into());
        }
        Ok(Agentic(config))
    }

    fn state(&self) -> AgenticState {
        AgenticState {
            config: self.0.clone(),
            route: Route::MultiHop,
            queries: Vec::new(),
            filter: Filter::default(),
            candidates: Vec::new(),
            relevant: Vec::new(),
            unsupported: Vec::new(),
            rewrites: 0,
            retries: 0,
            searches: 0,
            graded: 0,
            passed: 0,
            flagged: 0,
            grounded_round: None,
        }
    }

    fn graph(&self) -> Graph<Run<AgenticState>> {
        Graph::new(CLASSIFY)
            .node(
                CLASSIFY,
                &[
                    (ANSWER_DIRECT, "direct"),
                    (RETRIEVE, "standard"),
                    (EXPAND, "multi-hop"),
                ],
                |s| Box::pin(classify(s)),
            )
            .node(ANSWER_DIRECT, &[], |s| {
                Box::pin(async move {
                    s.mode = EvidenceMode::ClosedBook;
                    nodes::write(s, Transition::done("answered directly")).await
                })
            })
            .node(RETRIEVE, &[(READ, "")], |s| {
                Box::pin(nodes::retrieve(s, READ))
            })
            .node(EXPAND, &[(SEARCH, "")], |s| Box::pin(expand(s)))
            .node(SEARCH, &[(GRADE, "")], |s| Box::pin(search(s)))
            .node(
                GRADE,
                &[
                    (REWRITE, "too few relevant"),
                    (READ, "enough, or retries spent"),
                ],
                |s| Box::pin(grade(s)),
            )
            .node(REWRITE, &[(SEARCH, "")], |s| Box::pin(rewrite(s)))
            .node(READ, &[(WRITE, "")], |s| {
                Box::pin(nodes::read(s, Transition::Goto(WRITE)))
            })
            .node(WRITE, &[(CHECK, "")], |s| {
                Box::pin(nodes::write(s, Transition::Goto(CHECK)))
            })
            .node(CHECK, &[(REWRITE, "not grounded")], |s| Box::pin(check(s)))
            .doing(CLASSIFY, |_| "Deciding how to answer...".into())
            .doing(EXPAND, |_| "Expanding the search terms...".into())
            .doing(SEARCH, |s| {
                format!("Searching with {} queries...", s.ext.queries.len().max(1))
            })
            .doing(GRADE, |s| {
                format!("Grading {} passages...", s.ext.candidates.len())
            })
            .doing(REWRITE, |_| "Rewriting the query...".into())
            .doing(WRITE, |s| {
                format!("Writing from {} sources...", s.sources.len())
            })
            .doing(CHECK, |_| {
                "Verifying the answer against the sources...".into()
            })
    }
}

/// The classifier's prompt.
pub fn route_request(question: &str) -> ChatRequest {
    ChatRequest::new(vec![
        Message::system(SYSTEM_CLOSED),
        Message::user(format!(
            "Question: {question}\n\nHow should this question be answered? \"direct\": general knowledge or \
             conversation, no documents needed; \"standard\": one search finds the answer; \"multi_hop\": \
             several facts must be found and combined, or the question is ambiguous or broad.\n\
             Reply in JSON: {{\"route\": \"direct\" | \"standard\" | \"multi_hop\"}}"
        )),
    ])
    .json_schema::<RouteReply>()
    .max_tokens(16)
}

/// The expansion prompt: phrasings, and sub-questions when asked for.
pub fn expand_request(question: &str, expansions: usize, decompose: bool) -> ChatRequest {
    let sub = if decompose {
        " If the question has several parts or needs a chain of facts, also list at most two \
         independent sub-questions (otherwise none)."
    } else {
        " Give no sub-questions."
    };
    ChatRequest::new(vec![
        Message::system(SYSTEM_CLOSED),
        Message::user(format!(
            "Question: {question}\n\nWrite {expansions} search queries that ask for the same information in \
             different words (other terms, synonyms, the full names), each under 15 words.{sub}\nReply in \
             JSON: {{\"variations\": [\"...\"], \"subquestions\": [\"...\"]}}"
        )),
    ])
    .json_schema::<ExpandReply>()
    // Room for the reply asked for; a reply cut off is not JSON and loses every query.
    .max_tokens(256)
}

/// The grading prompt: every candidate numbered, the relevant ones asked for.
pub fn grade_request(question: &str, sources: &[Source]) -> ChatRequest {
    ChatRequest::new(over_sources(
        sources,
        format!(
            "Question: {question}\n\nWhich of the sources above hold information that helps answer the \
             question? List their numbers; leave out sources that only share words with it.\n\
             Reply in JSON: {{\"relevant\": [1, 2]}}"
        ),
    ))
    .json_schema::<GradeReply>()
    .max_tokens(48)
}

/// The rewrite prompt, from what the last search found.
pub fn rewrite_request(
    question: &str,
    found_titles: &[String],
    unsupported: &[String],
) -> ChatRequest {
    let aim = if unsupported.is_empty() {
        String::new()
    } else {
        format!(
            "\nThese statements still need evidence: {}",
            unsupported.join("; ")
        )
    };
    ChatRequest::new(vec![
        Message::system(SYSTEM_CLOSED),
        Message::user(format!(
            "Question: {question}\nThe last search found documents titled: {}{aim}\n\nThese did not answer the \
             question well. Write one new search query, more specific, that would find the missing \
             information. Reply with the query only.",
            if found_titles.is_empty() {
                "nothing".to_string()
            } else {
                found_titles.join("; ")
            }
        )),
    ])
    .max_tokens(32)
    .stop("\n")
}

/// The hallucination check's prompt over the sources the answer was written from.
pub fn check_request(
    question: &str,
    answer: &str,
    sources: &[Source],
    strict: bool,
) -> ChatRequest {
    let rule = if strict {
        "Every claim must be directly stated in a source."
    } else {
        "Reasonable inferences from the sources are allowed; claims with no basis in them are not."
    };
    ChatRequest::new(over_sources(
        sources,
        format!(
            "Question: {question}\nAnswer: {answer}\n\nIs the answer grounded in the sources above? {rule} \
             List the claims that are not supported.\nReply in JSON: {{\"grounded\": <true or false>, \
             \"unsupported\": [\"...\"]}}"
        ),
    ))
    .json_schema::<CheckReply>()
    .max_tokens(96)
}

/// Unix time of 1 January of `year` (proleptic Gregorian).
fn year_start(year: i64) -> i64 {
    let y = year - 1;
    let days =
        365 * (year - 1970) + (y / 4 - y / 100 + y / 400) - (1969 / 4 - 1969 / 100 + 1969 / 400);
    days * 86_400
}

/// Metadata filters a question states about its documents: a year or range tied to the
/// documents ("papers published after 2020", "reports from 2019", "articles written
/// between 2015 and 2018") and a quoted title. Returns the filter and what was taken.
pub fn extract_filter(question: &str) -> (Filter, Vec<String>) {
    let mut filter = Filter::default();
    let mut taken = Vec::new();
    static DATED: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
        r"(?i)\b(?:papers?|documents?|articles?|reports?|posts?|notes?|sources?|studies|study|files?)\b(?:\s+\w+){0,3}?\s+(?:published|written|dated|released|from|issued)?\s*(in|after|since|before|from|between)\s+(\d{4})(?:\s*(?:and|-|to)\s*(\d{4}))?",
        )
        .expect("a valid pattern")
    });
    // A quoted title is a filter only where the question ties it to its documents ("in the
    // paper "X"", "according to "X""); elsewhere quotes name the question's subject ("the
    // host of "The Joe Schmo Show"") and a filter on them hides the answer's document.
    static QUOTED: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r#"(?i)(?:\b(?:paper|document|article|report|book|source|file|note|post|study)s?\s+(?:titled|called|named)?\s*|according\s+to\s+(?:the\s+)?)["“]([^"”]{3,120})["”]"#,
        )
        .expect("a valid pattern")
    });
    if let Some(c) = DATED.captures(question) {
        let word = c[1].to_lowercase();
        let a: i64 = c[2].parse().unwrap_or(0);
        let b: Option<i64> = c.get(3).and_then(|m| m.as_str().parse().ok());
        match (word.as_str(), b) {
            (_, Some(b)) if b >= a => {
                filter.date_from = Some(year_start(a));
                filter.date_to = Some(year_start(b + 1));
                taken.push(format!("dated {a}-{b}"));
            }
            ("after", _) => {
                filter.date_from = Some(year_start(a + 1));
                taken.push(format!("dated after {a}"));
            }
            ("since", _) => {
                filter.date_from = Some(year_start(a));
                taken.push(format!("dated since {a}"));
            }
            ("before", _) => {
                filter.date_to = Some(year_start(a));
                taken.push(format!("dated before {a}"));
            }
            _ => {
                filter.date_from = Some(year_start(a));
                filter.date_to = Some(year_start(a + 1));
                taken.push(format!("dated {a}"));
            }
        }
    }
    if let Some(c) = QUOTED.captures(question) {
        let title = c[1].trim().to_string();
        taken.push(format!("title contains {title:?}"));
        filter.title_contains = Some(title);
    }
    (filter, taken)
}

/// The rules' route: one fact is one search; a chain, a comparison or a broad question
/// is the loop. The rules never send a question past the documents on their own.
fn rules_route(c: Complexity) -> Route {
    match c {
        Complexity::Simple => Route::Standard,
        Complexity::Complex | Complexity::MultiHop => Route::MultiHop,
    }
}

fn order(r: Route) -> u8 {
    match r {
        Route::Direct => 0,
        Route::Standard => 1,
        Route::MultiHop => 2,
    }
}

async fn classify(s: &mut Run<AgenticState>) -> NodeResult {
    let complexity = nodes::classify(&s.question);
    let rules = rules_route(complexity);
    let model = if s.mode == EvidenceMode::Retrieval {
        let c =
            s.gw.chat(CLASSIFY.as_str(), "classify", route_request(&s.question))
                .await?;
        c.parsed::<RouteReply>().ok().map(|r| r.route)
    } else {
        // Given context is the evidence: nothing to route around it.
        Some(Route::MultiHop)
    };
    // The more complex of the two; "direct" only when the model says so of a question
    // the rules find simple.
    let route = match model {
        Some(Route::Direct) if complexity == Complexity::Simple => Route::Direct,
        Some(m) if order(m) >= order(rules) => m,
        _ => rules,
    };
    s.ext.route = route;
    s.metrics.insert(
        "route_multi_hop".into(),
        f64::from(u8::from(route == Route::MultiHop)),
    );
    s.step(
        CLASSIFY.as_str(),
        StepKind::Thought,
        format!("route: {route:?} (model {model:?}, rules {rules:?})"),
    );
    s.note = Some(format!("{route:?}"));
    Ok(Transition::Goto(match route {
        Route::Direct => ANSWER_DIRECT,
        Route::Standard => RETRIEVE,
        Route::MultiHop => EXPAND,
    }))
}

async fn expand(s: &mut Run<AgenticState>) -> NodeResult {
    let cfg = s.ext.config.clone();
    let mut queries = vec![s.question.clone()];
    let mut expanded = false;
    if cfg.query_expansion || cfg.query_decomposition {
        let c =
            s.gw.chat(
                EXPAND.as_str(),
                "expand",
                expand_request(
                    &s.question,
                    if cfg.query_expansion {
                        cfg.expansions
                    } else {
                        0
                    },
                    cfg.query_decomposition,
                ),
            )
            .await?;
        if let Ok(r) = c.parsed::<ExpandReply>() {
            let variations = r.variations.into_iter().take(if cfg.query_expansion {
                cfg.expansions
            } else {
                0
            });
            let subs = r
                .subquestions
                .into_iter()
                .take(if cfg.query_decomposition { 4 } else { 0 });
            for (kind, q) in variations
                .map(|q| (StepKind::Action, q))
                .chain(subs.map(|q| (StepKind::SubQuestion, q)))
            {
                let q = q.trim().to_string();
                if !q.is_empty() && !queries.contains(&q) {
                    s.step(EXPAND.as_str(), kind, q.clone());
                    queries.push(q);
                    expanded = true;
                }
            }
        }
    }
    let (filter, taken) = extract_filter(&s.question);
    if !taken.is_empty() {
        s.step(
            EXPAND.as_str(),
            StepKind::Thought,
            format!("filter: {}", taken.join(", ")),
        );
    }
    s.metrics
        .insert("expanded".into(), f64::from(u8::from(expanded)));
    s.note = Some(format!(
        "{} queries{}",
        queries.len(),
        if taken.is_empty() {
            String::new()
        } else {
            format!("; filter {}", taken.join(", "))
        }
    ));
    s.ext.filter = filter;
    s.ext.queries = queries;
    Ok(Transition::Goto(SEARCH))
}

async fn search(s: &mut Run<AgenticState>) -> NodeResult {
    let k = s.ext.config.k;
    let queries = std::mem::take(&mut s.ext.queries);
    let filter = s.ext.filter.clone();
    let reason = if s.ext.searches == 0 {
        RetrievalReason::Initial
    } else {
        RetrievalReason::Hop
    };
    let found = nodes::gather_fused(s, &queries, k, &filter, reason).await?;
    s.ext.searches += 1;
    let titles: Vec<&str> = found.iter().map(|p| p.title.as_str()).collect();
    s.step(SEARCH.as_str(), StepKind::Observation, titles.join("; "));
    s.note = Some(format!(
        "{} queries -> {} passages",
        queries.len(),
        found.len()
    ));
    s.ext.candidates = found;
    Ok(Transition::Goto(GRADE))
}

async fn grade(s: &mut Run<AgenticState>) -> NodeResult {
    let cfg = s.ext.config.clone();
    let candidates = s.ext.candidates.clone();
    let relevant: Vec<Passage> = if cfg.document_grading && !candidates.is_empty() {
        let numbered = evidence::read(
            std::slice::from_ref(&s.question),
            &candidates,
            s.cfg().max_evidence_chars,
        );
        let c =
            s.gw.chat(
                GRADE.as_str(),
                "grade",
                grade_request(&s.question, &numbered),
            )
            .await?;
        match c.parsed::<GradeReply>() {
            Ok(g) => numbered
                .iter()
                .filter(|src| g.relevant.contains(&src.n))
                .map(|src| src.passage.clone())
                .collect(),
            // An unparsable grade grades nothing out.
            Err(_) => candidates.clone(),
        }
    } else {
        candidates.clone()
    };
    let passed = relevant.len();
    s.ext.graded += candidates.len();
    s.ext.passed += passed;
    for p in relevant {
        if !s.ext.relevant.iter().any(|r| nodes::same_passage(r, &p)) {
            s.ext.relevant.push(p);
        }
    }
    let enough = s.ext.relevant.len() >= cfg.min_relevant;
    s.step(
        GRADE.as_str(),
        StepKind::Thought,
        format!(
            "{passed} of {} passages relevant; {} relevant so far",
            candidates.len(),
            s.ext.relevant.len()
        ),
    );
    if !enough && s.ext.rewrites < cfg.max_retries {
        s.note = Some(format!("{} relevant: rewrite", s.ext.relevant.len()));
        return Ok(Transition::Goto(REWRITE));
    }
    // The write reads the relevant passages (all found, when none were).
    if !s.ext.relevant.is_empty() {
        s.pool = s.ext.relevant.clone();
    }
    s.note = Some(format!("{} relevant: write", s.ext.relevant.len()));
    Ok(Transition::Goto(READ))
}

async fn rewrite(s: &mut Run<AgenticState>) -> NodeResult {
    let titles: Vec<String> = s.ext.candidates.iter().map(|p| p.title.clone()).collect();
    if s.ext.unsupported.is_empty() {
        s.ext.rewrites += 1;
    }
    let c =
        s.gw.chat(
            REWRITE.as_str(),
            "rewrite",
            rewrite_request(&s.question, &titles, &s.ext.unsupported),
        )
        .await?;
    let q = c
        .text()
        .unwrap_or_default()
        .trim()
        .trim_matches('"')
        .to_string();
    let q = if q.is_empty() || s.queries.contains(&q) {
        // Nothing new: the unsupported claims themselves, else the question.
        s.ext
            .unsupported
            .first()
            .cloned()
            .unwrap_or_else(|| s.question.clone())
    } else {
        q
    };
    s.step(REWRITE.as_str(), StepKind::Action, format!("search: {q}"));
    s.note = Some(format!("{q:?}"));
    s.ext.queries = vec![q];
    Ok(Transition::Goto(SEARCH))
}

async fn check(s: &mut Run<AgenticState>) -> NodeResult {
    let cfg = s.ext.config.clone();
    let index = s.rounds.len().saturating_sub(1);
    let done = |s: &mut Run<AgenticState>, why: &str| {
        s.chosen = s.ext.grounded_round.or(Some(index));
        s.metrics.insert("rewrites".into(), s.ext.rewrites as f64);
        s.metrics.insert("retries".into(), s.ext.retries as f64);
        s.metrics
            .insert("retrieval_rounds".into(), s.ext.searches as f64);
        s.metrics
            .insert("hallucination_flagged".into(), s.ext.flagged as f64);
        if s.ext.graded > 0 {
            s.metrics.insert(
                "relevant_ratio".into(),
                s.ext.passed as f64 / s.ext.graded as f64,
            );
        }
        Ok(Transition::done(why.to_string()))
    };
    if s.ext.route != Route::MultiHop || !cfg.hallucination_check {
        s.ext.grounded_round = Some(index);
        return done(s, "answered");
    }
    let (answer, short) = {
        let r = s.current_round()?;
        (r.answer.clone(), r.short_answer.clone())
    };
    let v = verify(VerifyInput {
        answer: &answer,
        short_answer: &short,
        sources: &s.sources,
        facts: Err("not asked: the agentic check runs its own call".into()),
        judge: Err("not asked: the agentic check runs its own call".into()),
        support_threshold: s.cfg().support_threshold,
        judge_weight: 0.0,
    });
    let floor = if cfg.strict { 0.8 } else { 0.5 };
    let c =
        s.gw.chat(
            CHECK.as_str(),
            "check",
            check_request(&s.question, &answer, &s.sources, cfg.strict),
        )
        .await?;
    let reply = c.parsed::<CheckReply>().ok();
    // Without a verdict the measured support decides alone.
    let model_says = reply.as_ref().is_none_or(|r| r.grounded);
    let grounded = model_says && v.faithfulness >= floor;
    let mut unsupported: Vec<String> = reply
        .map(|r| r.unsupported)
        .unwrap_or_default()
        .into_iter()
        .filter(|c| !c.trim().is_empty())
        .collect();
    unsupported.extend(
        v.claims
            .iter()
            .filter(|c| !c.supported)
            .map(|c| c.text.clone()),
    );
    unsupported.dedup();
    s.step(
        CHECK.as_str(),
        StepKind::Thought,
        format!(
            "{}: model {}, {:.0}% of claims supported (floor {:.0}%)",
            if grounded { "grounded" } else { "not grounded" },
            if model_says { "yes" } else { "no" },
            v.faithfulness * 100.0,
            floor * 100.0
        ),
    );
    if grounded {
        s.ext.grounded_round = Some(index);
        return done(s, "answered");
    }
    s.ext.flagged += 1;
    if s.ext.retries >= cfg.max_retries {
        return done(s, "answered (not grounded; retries spent)");
    }
    s.ext.retries += 1;
    unsupported.truncate(3);
    s.ext.unsupported = unsupported;
    s.note = Some(format!("not grounded: retry {}", s.ext.retries));
    Ok(Transition::Goto(REWRITE))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn year_start_is_unix_time_of_new_year() {
        assert_eq!(year_start(1970), 0);
        assert_eq!(year_start(2000), 946_684_800);
        assert_eq!(year_start(2024), 1_704_067_200);
        assert_eq!(year_start(1969), -31_536_000);
    }

    #[test]
    fn filters_are_taken_only_where_the_question_states_them_about_documents() {
        let (f, t) = extract_filter("What do papers published after 2020 say about RLHF?");
        assert_eq!(f.date_from, Some(year_start(2021)));
        assert_eq!(f.date_to, None);
        assert_eq!(t, ["dated after 2020"]);
        let (f, _) = extract_filter("Summarise the reports from 2019 on flooding.");
        assert_eq!(
            (f.date_from, f.date_to),
            (Some(year_start(2019)), Some(year_start(2020)))
        );
        let (f, _) = extract_filter("Which articles written between 2015 and 2018 cover it?");
        assert_eq!(
            (f.date_from, f.date_to),
            (Some(year_start(2015)), Some(year_start(2019)))
        );
        let (f, _) = extract_filter("What did the documents dated before 2001 predict?");
        assert_eq!((f.date_from, f.date_to), (None, Some(year_start(2001))));
        // A year about the question's subject is not a document filter.
        let (f, t) = extract_filter("Which film released in 1975 was directed by Spielberg?");
        assert_eq!(f, Filter::default());
        assert!(t.is_empty());
        let (f, _) = extract_filter("What is cited according to “Flood defence review”?");
        assert_eq!(f.title_contains.as_deref(), Some("Flood defence review"));
        // Quotes naming the question's subject are not a filter (seen on HotpotQA: it hid
        // the answer's document).
        let (f, t) = extract_filter(
            "Which travel parody series featured the host of \"The Joe Schmo Show\"?",
        );
        assert_eq!(f, Filter::default());
        assert!(t.is_empty());
        let (f, t) = extract_filter("What does the paper \"Attention Is All You Need\" propose?");
        assert_eq!(
            f.title_contains.as_deref(),
            Some("Attention Is All You Need")
        );
        assert_eq!(t, ["title contains \"Attention Is All You Need\""]);
    }
}
