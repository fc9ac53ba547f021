//! `critic`: the evidence-gap critic with query decomposition (seed `001`, rag_agent).
//!
//! A planner first decides whether the question needs several look-ups. If it does, each
//! sub-question is retrieved on its own (map) and one write answers the original question
//! over all of the evidence, told which sources were found for which sub-question
//! (reduce). Otherwise the first retrieval is forced (the model may not answer before one
//! search), and an evidence-gap critic reads the sources: is the evidence sufficient, what
//! is missing, which searches would find it. While it is not sufficient and rewrites are
//! left, the next query is aimed at the gap (the critic's first new retrieval task, else
//! the question's terms the evidence lacks, else a rewrite by the model), optionally
//! expanded into a hypothetical passage (HyDE), and searched; then the answer is written.
//!
//! A small model says "sufficient" to almost anything, so its yes is not enough: the
//! evidence must also contain every key term of the question (its names, titles and
//! numbers: the words written capitalised after the first, or with digits; all content
//! terms when it has none). Plain words are not required: "country" or "director" rarely
//! appear in the passage that answers "Which country is the director of Jaws from?". A
//! critic reply that does not parse leaves the decision to that check alone, and the key
//! terms the evidence lacks are the next query when the critic names none.

use crate::evidence::diagnose_pool;
use crate::graph::{Graph, NodeId, NodeResult, Transition};
use crate::nodes::{self, READ, RETRIEVE, WRITE};
use crate::prompts::{SYSTEM_CLOSED, over_sources};
use crate::registry::Strategy;
use crate::state::Run;
use crate::text::content_terms;
use crate::trace::{EvidenceMode, RetrievalReason, StepKind};
use crate::{Passage, Source};
use metarag_core::{ChatRequest, Message};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Decides whether to decompose the question, and into which sub-questions.
pub const PLAN_QUERY: NodeId = NodeId("plan_query");
/// Retrieves each sub-question on its own, evidence tagged by sub-question.
pub const MAP: NodeId = NodeId("map");
/// Reads the mapped evidence into sources and notes which answer which sub-question.
pub const REDUCE: NodeId = NodeId("reduce");
/// Judges whether the evidence suffices and what is missing.
pub const CRITIC: NodeId = NodeId("critic");
/// Turns the gap into the next query.
pub const REWRITE: NodeId = NodeId("rewrite");

/// The critic's settings (`[strategies.critic]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CriticConfig {
    /// Ask the planner whether to decompose (off: always the critic loop).
    pub decompose: bool,
    /// Most sub-questions taken from a plan.
    pub max_subquestions: usize,
    /// Passages retrieved per sub-question.
    pub k_per_subquestion: usize,
    /// Most gap-driven rewrites (each one more retrieval).
    pub max_rewrites: usize,
    /// Search with a hypothetical passage answering the rewritten query (HyDE) instead of
    /// the query itself.
    pub hyde: bool,
    /// Most tokens of the critic's reply.
    pub critic_tokens: u32,
}

impl Default for CriticConfig {
    fn default() -> Self {
        CriticConfig {
            decompose: true,
            max_subquestions: 4,
            k_per_subquestion: 3,
            max_rewrites: 2,
            hyde: false,
            critic_tokens: 160,
        }
    }
}

/// The evidence-gap critic strategy.
#[derive(Debug, Clone)]
pub struct Critic(CriticConfig);

/// The critic's state: its settings, the plan, the latest analysis and the rewrites made.
#[derive(Debug)]
pub struct CriticState {
    config: CriticConfig,
    subquestions: Vec<SubQuestion>,
    /// Passages found per sub-question id, in the order the map found them.
    mapped: Vec<(String, Vec<Passage>)>,
    analysis: Option<GapAnalysis>,
    rewrites: usize,
    /// HyDE passages by query: a rewrite searched twice is expanded once.
    hyde: HashMap<String, String>,
}

/// One sub-question of a plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SubQuestion {
    /// Its id ("sq1").
    pub id: String,
    /// The question.
    pub question: String,
    /// What an answer must satisfy (a year, a place, a person).
    #[serde(default)]
    pub must_have_constraints: Vec<String>,
    /// "factual", "comparison", "list", "date", "number", "yes/no".
    #[serde(default)]
    pub expected_answer_type: String,
    /// "high", "normal" or "low".
    #[serde(default)]
    pub priority: String,
}

/// The planner's reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct QueryPlan {
    /// Whether the question needs several separate look-ups.
    pub needs_decomposition: bool,
    /// The look-ups, in the order they should be answered.
    #[serde(default)]
    pub subquestions: Vec<SubQuestion>,
    /// Constraints on the whole answer.
    #[serde(default)]
    pub global_constraints: Vec<String>,
}

/// One search the critic asks for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RetrievalTask {
    /// The search query.
    pub query: String,
    /// What it should find.
    #[serde(default)]
    pub focus: String,
}

/// The critic's reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GapAnalysis {
    /// Whether the sources answer the question completely.
    pub is_sufficient: bool,
    /// What the sources lack.
    #[serde(default)]
    pub missing_points: Vec<String>,
    /// Statements in the sources that need more evidence.
    #[serde(default)]
    pub unsupported_claims: Vec<String>,
    /// Searches that would fill the gaps.
    #[serde(default)]
    pub next_retrieval_tasks: Vec<RetrievalTask>,
    /// "high", "medium" or "low".
    #[serde(default)]
    pub confidence: String,
}

impl Strategy for Critic {
    const NAME: &'static str = "critic";
    const DESCRIPTION: &'static str = "plan sub-questions (map-reduce) or retrieve, then an evidence-gap critic aims rewritten queries at what is missing (seed 001)";
    type Config = CriticConfig;
    type State = CriticState;

    fn new(config: CriticConfig) -> Result<Self, String> {
        if config.k_per_subquestion == 0 || config.critic_tokens == 0 {
            return Err("k_per_subquestion and critic_tokens must be at least 1".into());
        }
        if config.decompose && config.max_subquestions < 2 {
            return Err("max_subquestions must be at least 2 when decompose is on".into());
        }
        Ok(Critic(config))
    }

    fn state(&self) -> CriticState {
        CriticState {
            config: self.0.clone(),
            subquestions: Vec::new(),
            mapped: Vec::new(),
            analysis: None,
            rewrites: 0,
            hyde: HashMap::new(),
        }
    }

    fn graph(&self) -> Graph<Run<CriticState>> {
        Graph::new(PLAN_QUERY)
            .node(
                PLAN_QUERY,
                &[(MAP, "decomposed"), (RETRIEVE, "one look-up")],
                |s| Box::pin(plan_query(s)),
            )
            .node(MAP, &[(REDUCE, "")], |s| Box::pin(map(s)))
            .node(REDUCE, &[(WRITE, "")], |s| Box::pin(reduce(s)))
            .node(RETRIEVE, &[(READ, "")], |s| {
                Box::pin(nodes::retrieve(s, READ))
            })
            .node(READ, &[(CRITIC, "")], |s| {
                Box::pin(nodes::read(s, Transition::Goto(CRITIC)))
            })
            .node(
                CRITIC,
                &[(WRITE, "sufficient, or rewrites spent"), (REWRITE, "a gap")],
                |s| Box::pin(critic(s)),
            )
            .node(REWRITE, &[(RETRIEVE, "")], |s| Box::pin(rewrite(s)))
            .node(WRITE, &[], |s| {
                Box::pin(nodes::write(s, Transition::done("answered")))
            })
    }
}

/// The planner's prompt.
pub fn plan_request(question: &str, max_subquestions: usize) -> ChatRequest {
    ChatRequest::new(vec![
        Message::system(SYSTEM_CLOSED),
        Message::user(format!(
            "Question: {question}\n\nDoes answering this question need several separate look-ups: a \
             comparison of two things, a chain (find one thing, then a fact about it), or several parts? \
             If so, split it into at most {max_subquestions} simple sub-questions, each about one thing, in \
             the order they must be answered. If one look-up is enough, set needs_decomposition to false \
             and give no sub-questions.\nReply in JSON: {{\"needs_decomposition\": <true or false>, \"subquestions\": \
             [{{\"id\": \"sq1\", \"question\": \"...\", \"must_have_constraints\": [\"...\"], \
             \"expected_answer_type\": \"factual\", \"priority\": \"high\"}}], \"global_constraints\": []}}"
        )),
    ])
    .json_schema::<QueryPlan>()
    // Room for four sub-questions with their fields; a plan cut off is not JSON.
    .max_tokens(320)
}

/// The critic's prompt: the sources, the question, the analysis asked for.
pub fn critic_request(question: &str, sources: &[Source], max_tokens: u32) -> ChatRequest {
    ChatRequest::new(over_sources(
        sources,
        format!(
            "Question: {question}\n\nYou are an evidence-gap critic. Do the sources above contain everything \
             needed to answer the question completely? List the points that are missing or unclear, \
             statements that need more evidence, and for each gap one search query that would find it.\n\
             Reply in JSON: {{\"is_sufficient\": <true or false>, \"missing_points\": [\"...\"], \
             \"unsupported_claims\": [], \"next_retrieval_tasks\": [{{\"query\": \"...\", \"focus\": \"...\"}}], \
             \"confidence\": \"medium\"}}"
        ),
    ))
    .json_schema::<GapAnalysis>()
    .max_tokens(max_tokens)
}

/// The fallback rewrite when neither the critic nor the evidence names the gap.
pub fn rewrite_request(question: &str, tried: &[String]) -> ChatRequest {
    ChatRequest::new(vec![
        Message::system(SYSTEM_CLOSED),
        Message::user(format!(
            "Question: {question}\nSearches already tried: {}\n\nWrite one new, more specific search query \
             that would find the information still needed to answer the question. Reply with the query only.",
            tried.join("; ")
        )),
    ])
    .max_tokens(32)
    .stop("\n")
}

/// The HyDE prompt: a passage that would answer the query, to be searched in its place.
pub fn hyde_request(query: &str) -> ChatRequest {
    ChatRequest::new(vec![
        Message::system(SYSTEM_CLOSED),
        Message::user(format!(
            "Write a short, factual encyclopedia paragraph (two or three sentences) that answers: {query}"
        )),
    ])
    .max_tokens(96)
}

async fn plan_query(s: &mut Run<CriticState>) -> NodeResult {
    let cfg = s.ext.config.clone();
    if !cfg.decompose {
        s.note = Some("decomposition off".into());
        return Ok(Transition::Goto(RETRIEVE));
    }
    let c =
        s.gw.chat(
            PLAN_QUERY.as_str(),
            "plan_query",
            plan_request(&s.question, cfg.max_subquestions),
        )
        .await?;
    let plan = c.parsed::<QueryPlan>().ok();
    let mut subquestions: Vec<SubQuestion> = plan
        .iter()
        .filter(|p| p.needs_decomposition)
        .flat_map(|p| p.subquestions.iter().cloned())
        .filter(|sq| !sq.question.trim().is_empty())
        .collect();
    // A "decomposition" that restates the question is one look-up.
    subquestions.dedup_by(|a, b| a.question.trim() == b.question.trim());
    subquestions.retain(|sq| sq.question.trim() != s.question);
    subquestions.truncate(cfg.max_subquestions);
    if subquestions.len() < 2 {
        s.note = Some(match plan {
            None => "the plan did not parse: one look-up".into(),
            Some(_) => "one look-up".into(),
        });
        return Ok(Transition::Goto(RETRIEVE));
    }
    for (i, sq) in subquestions.iter_mut().enumerate() {
        // Ids are the planner's, unless missing or repeated.
        if sq.id.trim().is_empty() {
            sq.id = format!("sq{}", i + 1);
        }
    }
    for sq in &subquestions {
        s.step(
            PLAN_QUERY.as_str(),
            StepKind::SubQuestion,
            format!("{}: {}", sq.id, sq.question),
        );
    }
    s.note = Some(format!("{} sub-questions", subquestions.len()));
    s.ext.subquestions = subquestions;
    Ok(Transition::Goto(MAP))
}

async fn map(s: &mut Run<CriticState>) -> NodeResult {
    let k = s.ext.config.k_per_subquestion;
    let subquestions = s.ext.subquestions.clone();
    if s.mode != EvidenceMode::Retrieval {
        // Given context is the only evidence: the sub-questions rank it.
        let given = s.context.clone().unwrap_or_default();
        crate::evidence::merge(&mut s.pool, given);
    }
    for sq in &subquestions {
        let found = nodes::gather(s, &sq.question, k).await?;
        let titles: Vec<&str> = found.iter().map(|p| p.title.as_str()).collect();
        s.step(
            MAP.as_str(),
            StepKind::Observation,
            format!("{}: {}", sq.id, titles.join("; ")),
        );
        s.ext.mapped.push((sq.id.clone(), found));
    }
    s.note = Some(format!(
        "{} sub-questions searched, {} passages in the pool",
        subquestions.len(),
        s.pool.len()
    ));
    Ok(Transition::Goto(REDUCE))
}

async fn reduce(s: &mut Run<CriticState>) -> NodeResult {
    // Queries decide which sentences of each passage are read: the sub-questions'.
    for sq in &s.ext.subquestions {
        if !s.queries.contains(&sq.question) {
            s.queries.push(sq.question.clone());
        }
    }
    nodes::read(s, Transition::Goto(WRITE)).await?;
    let mut notes = String::from("The question was split into sub-questions; evidence for each:\n");
    for sq in &s.ext.subquestions {
        let found = s
            .ext
            .mapped
            .iter()
            .find(|(id, _)| *id == sq.id)
            .map(|(_, f)| f.as_slice())
            .unwrap_or_default();
        let cited: Vec<String> = s
            .sources
            .iter()
            .filter(|src| found.iter().any(|p| nodes::same_passage(p, &src.passage)))
            .map(|src| format!("[{}]", src.n))
            .collect();
        let cited = if cited.is_empty() {
            "nothing found".to_string()
        } else {
            cited.join(", ")
        };
        notes.push_str(&format!("- {} {}: {cited}\n", sq.id, sq.question));
    }
    notes
        .push_str("Answer the original question by combining the evidence of all sub-questions.\n");
    s.notes = Some(notes);
    s.note = Some(format!(
        "{} sources for {} sub-questions",
        s.sources.len(),
        s.ext.subquestions.len()
    ));
    Ok(Transition::Goto(WRITE))
}

/// The question's key terms, in order: content terms written capitalised (after the
/// first word) or with digits; all its content terms when it has none.
fn key_terms(question: &str) -> Vec<String> {
    let content = content_terms(question);
    let mut keys: Vec<String> = Vec::new();
    for (i, word) in question
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .enumerate()
    {
        let named = (i > 0 && word.starts_with(char::is_uppercase))
            || word.chars().any(|c| c.is_ascii_digit());
        let term = word.to_lowercase();
        if named && content.contains(&term) && !keys.contains(&term) {
            keys.push(term);
        }
    }
    if keys.is_empty() {
        let mut all: Vec<String> = content.into_iter().collect();
        all.sort();
        return all;
    }
    keys
}

/// The question's key terms the evidence does not contain, in question order.
fn uncovered_terms(question: &str, pool: &[Passage]) -> Vec<String> {
    let mut seen: std::collections::HashSet<String> = std::collections::HashSet::new();
    for p in pool {
        seen.extend(content_terms(&p.title));
        seen.extend(content_terms(&p.text));
    }
    key_terms(question)
        .into_iter()
        .filter(|t| !seen.contains(t))
        .collect()
}

async fn critic(s: &mut Run<CriticState>) -> NodeResult {
    let cfg = s.ext.config.clone();
    if s.mode != EvidenceMode::Retrieval {
        s.note = Some("given context: nothing more to retrieve".into());
        return Ok(Transition::Goto(WRITE));
    }
    let coverage = diagnose_pool(&s.question, &s.pool).query_coverage;
    let uncovered = uncovered_terms(&s.question, &s.pool);
    let covered = uncovered.is_empty();
    let c =
        s.gw.chat(
            CRITIC.as_str(),
            "critic",
            critic_request(&s.question, &s.sources, cfg.critic_tokens),
        )
        .await?;
    let analysis = c.parsed::<GapAnalysis>().ok();
    // The model's yes needs the evidence to cover the question too; without a verdict the
    // coverage check decides alone.
    let sufficient = analysis.as_ref().map_or(covered, |a| a.is_sufficient) && covered;
    let verdict = match &analysis {
        Some(a) => format!(
            "critic: {}; missing: {}",
            if a.is_sufficient {
                "sufficient"
            } else {
                "not sufficient"
            },
            if a.missing_points.is_empty() {
                "nothing".to_string()
            } else {
                a.missing_points.join("; ")
            }
        ),
        None => "critic reply did not parse".to_string(),
    };
    let keys = if covered {
        "every key term found".to_string()
    } else {
        format!("not found: {}", uncovered.join(", "))
    };
    s.step(
        CRITIC.as_str(),
        StepKind::Thought,
        format!("{verdict}; {keys}"),
    );
    s.ext.analysis = analysis;
    let spent = s.ext.rewrites >= cfg.max_rewrites;
    s.note = Some(format!(
        "{verdict}; {keys}; term coverage {coverage:.2} -> {}",
        if sufficient {
            "write"
        } else if spent {
            "write (rewrites spent)"
        } else {
            "rewrite"
        }
    ));
    Ok(Transition::Goto(if sufficient || spent {
        WRITE
    } else {
        REWRITE
    }))
}

async fn rewrite(s: &mut Run<CriticState>) -> NodeResult {
    let cfg = s.ext.config.clone();
    s.ext.rewrites += 1;
    let tried = s.queries.clone();
    let new = |q: &str| !q.trim().is_empty() && !tried.iter().any(|t| t.trim() == q.trim());
    // The critic's own task first, then what the evidence lacks, then the model's rewrite.
    let from_critic = s
        .ext
        .analysis
        .iter()
        .flat_map(|a| a.next_retrieval_tasks.iter())
        .map(|t| t.query.trim().to_string())
        .find(|q| new(q));
    let (query, source) = match from_critic {
        Some(q) => (q, "critic task"),
        None => {
            let missing = uncovered_terms(&s.question, &s.pool);
            let from_terms = (!missing.is_empty()).then(|| missing.join(" "));
            match from_terms.filter(|q| new(q)) {
                Some(q) => (q, "uncovered terms"),
                None => {
                    let c =
                        s.gw.chat(
                            REWRITE.as_str(),
                            "rewrite",
                            rewrite_request(&s.question, &tried),
                        )
                        .await?;
                    let q = c
                        .text()
                        .unwrap_or_default()
                        .trim()
                        .trim_matches('"')
                        .to_string();
                    let q = if new(&q) { q } else { s.question.clone() };
                    (q, "model rewrite")
                }
            }
        }
    };
    let searched = if cfg.hyde {
        match s.ext.hyde.get(&query) {
            Some(p) => p.clone(),
            None => {
                let c =
                    s.gw.chat(REWRITE.as_str(), "hyde", hyde_request(&query))
                        .await?;
                let passage = c.text().unwrap_or_default().trim().to_string();
                let passage = if passage.is_empty() {
                    query.clone()
                } else {
                    passage
                };
                s.ext.hyde.insert(query.clone(), passage.clone());
                passage
            }
        }
    } else {
        query.clone()
    };
    s.step(
        REWRITE.as_str(),
        StepKind::Action,
        format!("search ({source}): {query}"),
    );
    s.note = Some(format!(
        "rewrite {} ({source}): {query:?}{}",
        s.ext.rewrites,
        if cfg.hyde { " via HyDE" } else { "" }
    ));
    s.pending = Some((searched, RetrievalReason::Hop));
    Ok(Transition::Goto(RETRIEVE))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_terms_are_names_and_numbers_else_every_content_term() {
        assert_eq!(
            key_terms("Which country is the director of Jaws from?"),
            ["jaws"]
        );
        assert_eq!(
            key_terms("Were Anna Veltz and Piet Ormund born before 1950?"),
            ["anna", "veltz", "piet", "ormund", "1950"]
        );
        assert_eq!(
            key_terms("which river flows through the capital?"),
            ["capital", "flows", "river", "through"]
        );
    }

    #[test]
    fn uncovered_terms_are_the_key_terms_no_passage_has() {
        let pool = vec![Passage::paragraph(
            "Jaws (film)",
            "A 1975 film directed by Steven Spielberg.",
        )];
        assert!(uncovered_terms("Where was the director of Jaws born?", &pool).is_empty());
        assert_eq!(
            uncovered_terms("Did Jaws open before the Zorblatt festival?", &pool),
            ["zorblatt"]
        );
    }

    #[test]
    fn a_plan_without_sub_questions_parses_with_defaults() {
        let p: QueryPlan = serde_json::from_str(r#"{"needs_decomposition": false}"#).unwrap();
        assert!(p.subquestions.is_empty());
        let g: GapAnalysis = serde_json::from_str(r#"{"is_sufficient": true}"#).unwrap();
        assert!(g.next_retrieval_tasks.is_empty());
    }
}
