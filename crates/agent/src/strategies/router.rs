//! `router`: seed `002`'s adaptive context router as a strategy.
//!
//! The question's intents (factual, conceptual, comparative, procedural, temporal) are
//! classified first, by the query embedding against example phrases (no model call), by
//! the small LLM under a JSON schema, or by cue words alone; the intents name the memories
//! to search (`metarag_retrieve::router::memories_for`: text always, the entity graph for
//! the questions that name things). One routed search fills the pool; `verify_context`
//! then checks that the fused context is relevant with the monitor's evidence signals, not
//! a small model's yes: every entity the question names is mentioned, and enough of its
//! terms are covered. When it is not, the query is reformulated (by the model, aimed at
//! what the sources lack; by rules when the model's reply is unusable) and searched once
//! more (`max_iterations`); then the answer is written over the sources, or, in a
//! context-only run (`metarag context`, the server's `/v1/context`, the MCP `context`
//! tool), the run stops with the verified sources for a larger generator elsewhere.

use crate::evidence::{diagnose_pool, next_hop_query};
use crate::graph::{Graph, NodeId, NodeResult, Transition};
use crate::monitor::entity_coverage;
use crate::nodes::{self, READ, RETRIEVE, WRITE};
use crate::registry::Strategy;
use crate::router::{intent_prompt, route_from_reply};
use crate::state::Run;
use crate::trace::{EvidenceMode, RetrievalReason, StepKind};
use metarag_core::{ChatRequest, Message};
use metarag_retrieve::router::{Route, RouteSource, merge_with_rules, rule_intents};
use metarag_retrieve::{Intent, router::DEFAULT_MARGIN};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

/// Classifies the question's intents and picks the memories to search.
pub const ROUTE: NodeId = NodeId("route");
/// Checks the fused context's relevance to the question.
pub const VERIFY: NodeId = NodeId("verify_context");
/// Rewrites the query for one more search.
pub const REFORMULATE: NodeId = NodeId("reformulate");

/// Which classifier routes the question.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Classifier {
    /// The query embedding against example phrases, then cue words: no model call, a few
    /// milliseconds (`docs/results/router.md`). Needs the agent's embedder; without one
    /// the cue words decide and the trace says so.
    #[default]
    Embedding,
    /// The chat model under a JSON schema, then cue words: one short call.
    Llm,
    /// Cue words alone (factual where none is present).
    Rules,
}

/// Who rewrites a query whose context failed the check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Reformulator {
    /// The chat model, told what the sources found and what they lack (falls back to
    /// the rules when its reply is unusable).
    #[default]
    Llm,
    /// The question's terms the sources lack plus the names the best passages mention
    /// (the next-hop query of the retrieve node).
    Rules,
}

/// The router's settings (`[strategies.router]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RouterConfig {
    /// The intent classifier.
    pub classifier: Classifier,
    /// The embedding classifier keeps intents within this cosine of the best one.
    pub margin: f32,
    /// Reformulations after a failed check (seed `002`: at most one).
    pub max_iterations: usize,
    /// Who reformulates.
    pub reformulate_with: Reformulator,
    /// Least share of the question's named entities the context must mention.
    pub min_entity_coverage: f64,
    /// Least share of the question's content terms the context must contain.
    pub min_term_coverage: f64,
    /// Passages per search.
    pub top_k: usize,
    /// Rerank each search with the cross-encoder (fused with the hybrid order).
    pub rerank: bool,
}

impl Default for RouterConfig {
    fn default() -> Self {
        RouterConfig {
            classifier: Classifier::Embedding,
            margin: DEFAULT_MARGIN,
            max_iterations: 1,
            reformulate_with: Reformulator::Llm,
            // Every named entity: a context that misses one of the question's names
            // misses a hop (the monitor's entity signal, docs/results/monitor.md).
            min_entity_coverage: 1.0,
            // The retrieve node's hop threshold (`agent.evidence_coverage_threshold`).
            min_term_coverage: 0.45,
            top_k: 10,
            rerank: true,
        }
    }
}

/// One `verify_context` check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ContextCheck {
    /// The query searched last.
    pub query: String,
    /// Passages in the pool.
    pub passages: usize,
    /// Share of the question's content terms the pool contains.
    pub term_coverage: f64,
    /// Share of the question's named entities the pool mentions (1 when it names none).
    pub entity_coverage: f64,
    /// The named entities the pool does not mention.
    pub uncovered: Vec<String>,
    /// Whether the context passed.
    pub relevant: bool,
}

impl ContextCheck {
    /// One line: the verdict, both coverages and the names missing.
    pub fn summary(&self) -> String {
        format!(
            "{}: terms {:.2}, entities {:.2}{}",
            if self.relevant {
                "relevant"
            } else {
                "not relevant"
            },
            self.term_coverage,
            self.entity_coverage,
            if self.uncovered.is_empty() {
                String::new()
            } else {
                format!(" (missing {})", self.uncovered.join(", "))
            }
        )
    }
}

/// The router's part of the run state.
#[derive(Debug, Default)]
pub struct RouterState {
    route: Option<Route>,
    checks: Vec<ContextCheck>,
    reformulations: usize,
}

/// Seed `002`'s adaptive context router.
#[derive(Debug, Clone)]
pub struct Router(RouterConfig);

impl Strategy for Router {
    const NAME: &'static str = "router";
    const DESCRIPTION: &'static str = "routes the question to the memories its intents call for, verifies the context, reformulates once (seed 002)";
    const CONTEXT_ONLY: bool = true;
    type Config = RouterConfig;
    type State = RouterState;

    fn new(config: RouterConfig) -> Result<Self, String> {
        let share = |v: f64, field: &str| {
            if (0.0..=1.0).contains(&v) {
                Ok(())
            } else {
                Err(format!("{field} must be within 0..=1, got {v}"))
            }
        };
        share(config.min_entity_coverage, "min_entity_coverage")?;
        share(config.min_term_coverage, "min_term_coverage")?;
        if config.top_k == 0 {
            return Err("top_k must be at least 1".into());
        }
        if !(0.0..=1.0).contains(&config.margin) {
            return Err(format!(
                "margin must be within 0..=1, got {}",
                config.margin
            ));
        }
        Ok(Router(config))
    }

    fn state(&self) -> RouterState {
        RouterState::default()
    }

    fn graph(&self) -> Graph<Run<RouterState>> {
        let c = self.0.clone();
        let (c1, c2) = (c.clone(), c.clone());
        Graph::new(ROUTE)
            .node(ROUTE, &[(RETRIEVE, "")], move |s| {
                let c = c.clone();
                Box::pin(async move { route(s, &c).await })
            })
            .node(RETRIEVE, &[(VERIFY, "")], |s| {
                Box::pin(nodes::retrieve(s, VERIFY))
            })
            .node(
                VERIFY,
                &[(REFORMULATE, "not relevant"), (READ, "relevant or done")],
                move |s| {
                    let c = c1.clone();
                    Box::pin(async move { verify(s, &c) })
                },
            )
            .node(REFORMULATE, &[(RETRIEVE, "")], move |s| {
                let c = c2.clone();
                Box::pin(async move { reformulate(s, &c).await })
            })
            .node(READ, &[(WRITE, "generate")], |s| {
                let next = if s.generate {
                    Transition::Goto(WRITE)
                } else {
                    Transition::done("context only")
                };
                Box::pin(nodes::read(s, next))
            })
            .node(WRITE, &[], |s| {
                Box::pin(nodes::write(s, Transition::done("answered")))
            })
    }
}

/// The route node: classifies, narrows the search mode to the route's memories, records.
async fn route(s: &mut Run<RouterState>, c: &RouterConfig) -> NodeResult {
    s.route.top_k = c.top_k;
    s.route.rerank = c.rerank;
    s.route.hops = 1;
    let started = Instant::now();
    let rules = |q: &str, took: Duration| {
        let mut intents = rule_intents(q);
        if intents.is_empty() {
            intents.push(Intent::Factual);
        }
        Route::new(intents, RouteSource::Rules, took)
    };
    let (route, fallback) = match c.classifier {
        Classifier::Rules => (rules(&s.question, started.elapsed()), None),
        Classifier::Embedding => match s.gw.classify_intents(&s.question, c.margin).await? {
            Some(r) => (r, None),
            None => (
                rules(&s.question, started.elapsed()),
                Some("no embedder configured: cue words decided"),
            ),
        },
        Classifier::Llm => {
            let called =
                s.gw.chat(ROUTE.as_str(), "route", intent_prompt(&s.question))
                    .await?;
            match called.text() {
                Ok(text) => (route_from_reply(&s.question, text, started.elapsed()), None),
                Err(_) => (
                    merge_with_rules(&s.question, rules(&s.question, started.elapsed())),
                    Some("the intent call failed: cue words decided"),
                ),
            }
        }
    };
    s.search_mode = route.search_mode();
    let (intents, memories) = route.names();
    s.note = Some(format!(
        "{intents} ({:?}) -> {memories}; search {:?}{}",
        route.source,
        s.search_mode,
        fallback.map(|f| format!("; {f}")).unwrap_or_default()
    ));
    s.metrics
        .insert("route_ms".into(), route.micros as f64 / 1e3);
    s.records.insert(
        "route".into(),
        serde_json::to_value(&route).unwrap_or_default(),
    );
    s.ext.route = Some(route);
    Ok(Transition::Goto(RETRIEVE))
}

/// Checks the context against the question's terms and names; goes to reformulate when
/// it fails and a reformulation is left (over retrieved evidence only).
fn verify(s: &mut Run<RouterState>, c: &RouterConfig) -> NodeResult {
    let check = check_context(&s.question, s.queries.last(), &s.pool, c);
    s.note = Some(check.summary());
    let again = !check.relevant
        && s.mode == EvidenceMode::Retrieval
        && s.ext.reformulations < c.max_iterations;
    s.ext.checks.push(check);
    s.records.insert(
        "context_checks".into(),
        serde_json::to_value(&s.ext.checks).unwrap_or_default(),
    );
    let last = s.ext.checks.last().is_some_and(|k| k.relevant);
    s.metrics
        .insert("context_relevant".into(), f64::from(u8::from(last)));
    Ok(Transition::Goto(if again { REFORMULATE } else { READ }))
}

/// `verify_context`'s verdict on a pool.
pub fn check_context(
    question: &str,
    last_query: Option<&String>,
    pool: &[crate::Passage],
    c: &RouterConfig,
) -> ContextCheck {
    let term_coverage = diagnose_pool(question, pool).query_coverage;
    let (entity_coverage, uncovered) = entity_coverage(question, pool);
    ContextCheck {
        query: last_query.cloned().unwrap_or_else(|| question.to_string()),
        passages: pool.len(),
        term_coverage,
        entity_coverage,
        uncovered,
        relevant: !pool.is_empty()
            && term_coverage >= c.min_term_coverage
            && entity_coverage >= c.min_entity_coverage,
    }
}

/// The model's reformulated query.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReformulateReply {
    /// One search query: keywords and names, no full sentence.
    pub query: String,
}

/// The reformulation prompt: the question, what the search found (titles), and what the
/// found passages lack.
pub fn reformulate_prompt(question: &str, found: &[String], missing: &[String]) -> ChatRequest {
    let system = "You rewrite search queries. A search for the user's question found passages that do not answer it. Write one new search query (keywords and names, not a sentence) that finds the missing information.";
    let user = format!(
        "Question: {question}\nFound passages about: {}\nThey do not mention: {}\nReturn the new query.",
        if found.is_empty() {
            "nothing".to_string()
        } else {
            found.join("; ")
        },
        if missing.is_empty() {
            "enough of the question's terms".to_string()
        } else {
            missing.join(", ")
        }
    );
    ChatRequest::new(vec![Message::system(system), Message::user(user)])
        .temperature(0.0)
        .max_tokens(48)
        .json_schema::<ReformulateReply>()
}

/// The rules' reformulation: the missing names, then the next-hop query (the question's
/// uncovered terms and the names the best passages mention), else the question's names.
fn rule_query(s: &Run<RouterState>) -> Option<String> {
    let uncovered = s
        .ext
        .checks
        .last()
        .map(|c| c.uncovered.clone())
        .unwrap_or_default();
    let hop = next_hop_query(&s.question, &s.pool);
    let mut parts = uncovered;
    if let Some(h) = hop {
        parts.push(h);
    }
    let q = parts.join(" ");
    (!q.trim().is_empty()).then_some(q)
}

/// The reformulate node: one new query, searched by the retrieve node next.
async fn reformulate(s: &mut Run<RouterState>, c: &RouterConfig) -> NodeResult {
    s.ext.reformulations += 1;
    let mut source = "rules";
    let mut query = None;
    if c.reformulate_with == Reformulator::Llm {
        let mut found: Vec<String> = Vec::new();
        for p in &s.pool {
            if !found.contains(&p.title) && found.len() < 6 {
                found.push(p.title.clone());
            }
        }
        let missing = match s.ext.checks.last() {
            Some(k) if !k.uncovered.is_empty() => k.uncovered.clone(),
            _ => next_hop_query(&s.question, &s.pool)
                .map(|q| vec![q])
                .unwrap_or_default(),
        };
        let called =
            s.gw.chat(
                REFORMULATE.as_str(),
                "reformulate",
                reformulate_prompt(&s.question, &found, &missing),
            )
            .await?;
        if let Ok(r) = called.parsed::<ReformulateReply>() {
            let q = r.query.trim().to_string();
            // A query searched before finds the same passages: the rules try instead.
            if !q.is_empty() && !s.queries.contains(&q) {
                query = Some(q);
                source = "model";
            }
        }
    }
    let query = match query.or_else(|| rule_query(s)) {
        Some(q) if !s.queries.contains(&q) => q,
        // Nothing new to search: the context stays as it is.
        _ => {
            s.note = Some("no new query: the context stays as found".into());
            return Ok(Transition::Goto(READ));
        }
    };
    s.step(
        REFORMULATE.as_str(),
        StepKind::Action,
        format!("{query} ({source})"),
    );
    s.note = Some(format!("{query:?} ({source})"));
    s.metrics
        .insert("reformulations".into(), s.ext.reformulations as f64);
    s.pending = Some((query, RetrievalReason::Reformulation));
    Ok(Transition::Goto(RETRIEVE))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Passage;

    #[test]
    fn a_context_missing_a_named_entity_fails_the_check() {
        let c = RouterConfig::default();
        let pool = vec![Passage::paragraph(
            "Orla Brenn",
            "Orla Brenn is a painter born in Vessmark.",
        )];
        let q = "Did Orla Brenn teach Tamsin Quell?";
        let k = check_context(q, None, &pool, &c);
        assert!(!k.relevant);
        assert_eq!(k.uncovered, ["Tamsin Quell"]);
        let pool = vec![
            pool[0].clone(),
            Passage::paragraph(
                "Tamsin Quell",
                "Tamsin Quell was the teacher of Orla Brenn; she was born in Dunmore.",
            ),
        ];
        let k = check_context(q, None, &pool, &c);
        assert!(k.relevant, "{k:?}");
        assert_eq!(k.entity_coverage, 1.0);
        assert!(!check_context(q, None, &[], &c).relevant);
    }

    #[test]
    fn bad_settings_name_their_field() {
        let bad = RouterConfig {
            min_term_coverage: 1.5,
            ..RouterConfig::default()
        };
        assert!(Router::new(bad).unwrap_err().contains("min_term_coverage"));
        let bad = RouterConfig {
            top_k: 0,
            ..RouterConfig::default()
        };
        assert!(Router::new(bad).unwrap_err().contains("top_k"));
    }

    #[test]
    fn the_reformulation_prompt_names_what_is_missing() {
        let p = reformulate_prompt(
            "Who directed the film Orla Brenn starred in?",
            &["Orla Brenn".into()],
            &["film".into()],
        );
        let text = &p.messages[1].content;
        assert!(text.contains("Found passages about: Orla Brenn"), "{text}");
        assert!(text.contains("They do not mention: film"), "{text}");
        assert!(p.schema.is_some());
    }
}
