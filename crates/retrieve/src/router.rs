//! The adaptive context router of seed `002`: what a query asks for (its intents), and
//! therefore which memories to search. Two classifiers, measured against each other in
//! `docs/results/router.md`: the query's embedding against example phrases per intent
//! (no model call beyond the query embedding hybrid search computes anyway), and cue
//! words (the seed's table: "how to" is procedural, "X vs Y" comparative, "when" and
//! "what changed" temporal). A small LLM's classification (agent crate) is merged with the
//! cues the same way.

use metarag_core::{Embedder, Result, SearchMode};
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

/// What a query asks for; several may hold.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Intent {
    /// "What is", "who is": a fact stated somewhere.
    Factual,
    /// "Why", "explain": an idea, a reason, a purpose.
    Conceptual,
    /// "X vs Y", "which of", "difference between".
    Comparative,
    /// "How do I", "steps to": a procedure.
    Procedural,
    /// "When", "what changed since": time and change.
    Temporal,
}

impl Intent {
    /// All intents, in table order.
    pub const ALL: [Intent; 5] = [
        Intent::Factual,
        Intent::Conceptual,
        Intent::Comparative,
        Intent::Procedural,
        Intent::Temporal,
    ];

    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Intent::Factual => "factual",
            Intent::Conceptual => "conceptual",
            Intent::Comparative => "comparative",
            Intent::Procedural => "procedural",
            Intent::Temporal => "temporal",
        }
    }

    /// Parses a lowercase name.
    pub fn parse(s: &str) -> Option<Intent> {
        Intent::ALL.into_iter().find(|i| i.as_str() == s.trim())
    }
}

/// A memory the router can search.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Memory {
    /// BM25 and dense vectors over the chunks.
    Text,
    /// The entity graph.
    Graph,
    /// The engine's timestamped event log (documents ingested, changed, removed; questions
    /// answered). Not built yet: a temporal route searches the text memory.
    Audit,
}

/// The memories the intents call for: seed `002`'s table (factual and conceptual ->
/// text; procedural -> graph; comparative -> text + graph; temporal -> audit), with the
/// text memory always searched (every answer has to cite text) and the graph added for
/// factual and temporal questions, where it raised recall on both multi-hop data sets
/// (`docs/results/graph.md`; for questions with a temporal cue, mostly a year, on the
/// HotpotQA tuning half: `docs/results/router.md`). The graph holds the dates the
/// documents state, so a temporal question reads it beside the audit log.
pub fn memories_for(intents: &[Intent]) -> Vec<Memory> {
    let mut out = vec![Memory::Text];
    for i in intents {
        let ms: &[Memory] = match i {
            Intent::Factual | Intent::Comparative | Intent::Procedural => &[Memory::Graph],
            Intent::Temporal => &[Memory::Graph, Memory::Audit],
            Intent::Conceptual => &[],
        };
        for m in ms {
            if !out.contains(m) {
                out.push(*m);
            }
        }
    }
    out.sort();
    out
}

/// Which classifier decided a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RouteSource {
    /// Cue words.
    Rules,
    /// The query embedding against example phrases.
    Embedding,
    /// The small LLM.
    Llm,
}

/// A classified query: its intents (strongest first), the memories they call for, and
/// how the decision was made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Route {
    /// Intents, strongest first.
    pub intents: Vec<Intent>,
    /// Memories to search.
    pub memories: Vec<Memory>,
    /// Who decided.
    pub source: RouteSource,
    /// The embedding classifier's similarity per intent, when it ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scores: Vec<(Intent, f32)>,
    /// Time spent classifying, microseconds (model calls included).
    pub micros: u64,
}

impl Route {
    /// A route for these intents.
    pub fn new(intents: Vec<Intent>, source: RouteSource, took: Duration) -> Route {
        Route {
            memories: memories_for(&intents),
            intents,
            source,
            scores: Vec::new(),
            micros: took.as_micros() as u64,
        }
    }

    /// The intents and the memories as text: `("factual, temporal", "text + graph")`.
    pub fn names(&self) -> (String, String) {
        let intents: Vec<&str> = self.intents.iter().map(|i| i.as_str()).collect();
        let memories: Vec<String> = self
            .memories
            .iter()
            .map(|m| format!("{m:?}").to_lowercase())
            .collect();
        (intents.join(", "), memories.join(" + "))
    }

    /// The search mode for the route's memories: hybrid (text and graph) when it includes
    /// the graph, the text memory alone otherwise. The audit memory is not a ranking of
    /// chunks; its events are read apart.
    pub fn search_mode(&self) -> SearchMode {
        if self.memories.contains(&Memory::Graph) {
            SearchMode::Hybrid
        } else {
            SearchMode::Text
        }
    }
}

/// Example phrases per intent for the embedding classifier: short, generic, none taken
/// from the labelled evaluation set.
const EXAMPLES: &[(Intent, &str)] = &[
    (
        Intent::Factual,
        "What is the name of the person who did it?",
    ),
    (Intent::Factual, "Who is the author?"),
    (Intent::Factual, "Which company makes this product?"),
    (Intent::Factual, "Where is it located?"),
    (Intent::Factual, "What is the value of the setting?"),
    (Intent::Factual, "How many are there?"),
    (Intent::Factual, "What nationality is the director?"),
    (Intent::Factual, "List the members of the group."),
    (Intent::Conceptual, "Why does it work this way?"),
    (Intent::Conceptual, "Explain the idea behind this design."),
    (Intent::Conceptual, "What is the purpose of this component?"),
    (Intent::Conceptual, "What does this concept mean?"),
    (
        Intent::Conceptual,
        "Describe the reasoning and the trade-offs.",
    ),
    (Intent::Conceptual, "What is the theory behind it?"),
    (
        Intent::Comparative,
        "What is the difference between A and B?",
    ),
    (Intent::Comparative, "A versus B: which one is better?"),
    (Intent::Comparative, "Compare the two options."),
    (Intent::Comparative, "Which of the two is older?"),
    (
        Intent::Comparative,
        "Are both of them from the same country?",
    ),
    (Intent::Comparative, "Who was born first, X or Y?"),
    (Intent::Procedural, "How do I do this?"),
    (Intent::Procedural, "What are the steps to set it up?"),
    (Intent::Procedural, "How to install and configure it?"),
    (Intent::Procedural, "Give me step-by-step instructions."),
    (Intent::Procedural, "What is the procedure to follow?"),
    (Intent::Procedural, "How can I fix this error?"),
    (Intent::Temporal, "When did it happen?"),
    (Intent::Temporal, "What changed since last month?"),
    (Intent::Temporal, "What was updated last week?"),
    (Intent::Temporal, "What is the history of this document?"),
    (Intent::Temporal, "In which year did it start?"),
    (
        Intent::Temporal,
        "What happened before and after the change?",
    ),
];

/// The embedding classifier's default margin: intents within this cosine of the best one
/// are kept (the setting `docs/results/router.md` measures).
pub const DEFAULT_MARGIN: f32 = 0.02;

/// The embedding classifier: each intent's score is the query's best cosine similarity to
/// one of its example phrases; intents within `margin` of the best are kept.
#[derive(Debug, Clone)]
pub struct EmbeddingRouter<E> {
    embedder: E,
    examples: Vec<(Intent, Vec<f32>)>,
    margin: f32,
}

impl<E: Embedder> EmbeddingRouter<E> {
    /// Embeds the example phrases once.
    pub async fn new(embedder: E, margin: f32) -> Result<Self> {
        let texts: Vec<String> = EXAMPLES.iter().map(|(_, t)| t.to_string()).collect();
        let vectors = embedder.embed(&texts).await?;
        let examples = EXAMPLES.iter().map(|(i, _)| *i).zip(vectors).collect();
        Ok(EmbeddingRouter {
            embedder,
            examples,
            margin,
        })
    }

    /// Classifies a query by its embedding.
    pub async fn classify(&self, query: &str) -> Result<Route> {
        let started = Instant::now();
        let v = self.embedder.embed_query(query).await?;
        Ok(self.classify_vector(&v, started))
    }

    /// Classifies an already embedded query (`started`: when its embedding began).
    pub fn classify_vector(&self, v: &[f32], started: Instant) -> Route {
        let mut scores: Vec<(Intent, f32)> = Intent::ALL
            .into_iter()
            .map(|i| {
                let best = self
                    .examples
                    .iter()
                    .filter(|(e, _)| *e == i)
                    .map(|(_, x)| dot(v, x))
                    .fold(f32::MIN, f32::max);
                (i, best)
            })
            .collect();
        scores.sort_by(|a, b| b.1.total_cmp(&a.1));
        let best = scores[0].1;
        let intents = scores
            .iter()
            .filter(|(_, s)| *s >= best - self.margin)
            .map(|(i, _)| *i)
            .collect();
        let mut route = Route::new(intents, RouteSource::Embedding, started.elapsed());
        route.scores = scores;
        route
    }
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    // The embedder's vectors are unit length: the dot product is the cosine.
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Comparative adjectives that, with "or" between two options, make a comparison.
const COMPARATIVES: &[&str] = &[
    " first ",
    " earlier ",
    " later ",
    " older ",
    " younger ",
    " newer ",
    " longer ",
    " shorter ",
    " larger ",
    " smaller ",
    " bigger ",
    " taller ",
    " wider ",
    " faster ",
    " slower ",
    " cheaper ",
    " heavier ",
    " closer ",
    " more ",
    " fewer ",
    " less ",
    " lower ",
    " higher ",
    " better ",
    " worse ",
];

/// Intents the query's cue words state, strongest first; empty when no cue is present.
pub fn rule_intents(query: &str) -> Vec<Intent> {
    let q = format!(
        " {} ",
        query
            .to_lowercase()
            .replace(['?', ',', '.', ':', ';', '!'], " ")
    );
    let has = |cues: &[&str]| cues.iter().any(|c| q.contains(c));
    let mut out = Vec::new();
    if has(&[
        " how do i ",
        " how to ",
        " how can i ",
        " how should i ",
        " steps ",
        " step by step ",
        " procedure ",
        " process for ",
        " instructions ",
        " walk me through ",
        " set up ",
        " what should i do ",
    ]) {
        out.push(Intent::Procedural);
    }
    if has(&[
        " difference ",
        " differ ",
        " vs ",
        " versus ",
        " compare ",
        " contrast ",
        " similarities ",
        " in common ",
        " same ",
        " which of ",
        " better ",
        " rank ",
    ]) || (q.contains(" or ")
        && has(&[
            " which ", " who ", " is ", " are ", " does ", " did ", " was ", " were ",
        ])
        && has(COMPARATIVES))
    {
        out.push(Intent::Comparative);
    }
    let year = q
        .split_whitespace()
        .any(|w| w.len() == 4 && w.parse::<u32>().is_ok_and(|y| (1800..2100).contains(&y)));
    if has(&[
        " when ",
        " changed ",
        " change ",
        " since ",
        " last week ",
        " yesterday ",
        " history ",
        " latest ",
        " evolved ",
        " before the ",
        " after the ",
        " last time ",
        " last month ",
        " this week ",
    ]) || year
    {
        out.push(Intent::Temporal);
    }
    if has(&[
        " why ",
        " explain ",
        " purpose ",
        " idea ",
        " concept ",
        " meaning ",
        " mean ",
        " describe ",
        " summarise ",
        " summarize ",
        " trade-offs ",
        " intuition ",
        " reasoning ",
        " philosophy ",
        " principles ",
        " role of ",
        " significance ",
    ]) {
        out.push(Intent::Conceptual);
    }
    out
}

/// A time range a query states, resolved against `now` (Unix seconds): `(from, to)`, either
/// end open. Understands "today", "yesterday", "last/this week", "last/this month", "last
/// N days", "since <month>", "since/after <year>", "in <year>", "before <year>", and
/// `YYYY-MM-DD` after "since", "after", "before" or "on".
pub fn time_range(query: &str, now: i64) -> Option<(Option<i64>, Option<i64>)> {
    use metarag_core::time::{civil_from_days, days_from_civil, month_number, parse_day};
    const DAY: i64 = 86_400;
    let q = query.to_lowercase().replace(['?', ',', '!', ';'], " ");
    let words: Vec<&str> = q.split_whitespace().collect();
    let today = now.div_euclid(DAY) * DAY;
    let (y, m, _) = civil_from_days(now.div_euclid(DAY));
    let month_start = |y: i64, m: i64| days_from_civil(y, m, 1) * DAY;
    let year_of = |w: &str| {
        w.trim_end_matches('.')
            .parse::<i64>()
            .ok()
            .filter(|y| w.len() == 4 && (1800..2100).contains(y))
    };
    for (i, w) in words.iter().enumerate() {
        let next = words.get(i + 1).copied().unwrap_or("");
        let prev = if i > 0 { words[i - 1] } else { "" };
        match *w {
            "today" => return Some((Some(today), None)),
            "yesterday" => return Some((Some(today - DAY), Some(today))),
            "week" if matches!(prev, "last" | "past" | "this") => {
                return Some((Some(today - 7 * DAY), None));
            }
            "month" if prev == "this" => return Some((Some(month_start(y, m)), None)),
            "month" if matches!(prev, "last" | "past") => {
                let (py, pm) = if m == 1 { (y - 1, 12) } else { (y, m - 1) };
                return Some((Some(month_start(py, pm)), Some(month_start(y, m))));
            }
            "days" if matches!(prev.parse::<i64>(), Ok(n) if n > 0) => {
                let n: i64 = prev.parse().unwrap_or(1);
                return Some((Some(today - n * DAY), None));
            }
            "since" | "after" | "before" | "in" | "on" => {
                if let Some(day) = parse_day(next) {
                    return Some(match *w {
                        "before" => (None, Some(day)),
                        "on" => (Some(day), Some(day + DAY)),
                        _ => (Some(day), None),
                    });
                }
                if let Some(year) = year_of(next) {
                    let start = days_from_civil(year, 1, 1) * DAY;
                    let end = days_from_civil(year + 1, 1, 1) * DAY;
                    return Some(match *w {
                        "before" => (None, Some(start)),
                        "in" | "on" => (Some(start), Some(end)),
                        "after" => (Some(end), None),
                        _ => (Some(start), None),
                    });
                }
                if let Some(mi) = month_number(next) {
                    // The latest such month that has begun.
                    let year = if mi <= m { y } else { y - 1 };
                    let start = month_start(year, mi);
                    return Some(match *w {
                        "before" => (None, Some(start)),
                        "since" | "after" => (Some(start), None),
                        _ => {
                            let (ny, nm) = if mi == 12 {
                                (year + 1, 1)
                            } else {
                                (year, mi + 1)
                            };
                            (Some(start), Some(month_start(ny, nm)))
                        }
                    });
                }
            }
            _ => {}
        }
    }
    None
}

/// Cue words first (a stated "how to" or "when" is stronger evidence than a nearest
/// example phrase); the classifier's answer where no cue is present.
pub fn merge_with_rules(query: &str, classified: Route) -> Route {
    let rules = rule_intents(query);
    if rules.is_empty() {
        return classified;
    }
    let mut merged = Route::new(
        rules,
        RouteSource::Rules,
        Duration::from_micros(classified.micros),
    );
    merged.scores = classified.scores;
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cue_words_name_intents() {
        assert_eq!(
            rule_intents("How do I rotate the keys?"),
            [Intent::Procedural]
        );
        assert_eq!(rule_intents("Postgres vs SQLite?"), [Intent::Comparative]);
        assert_eq!(
            rule_intents("Who was born first, Ann Vell or Bo Dorn?"),
            [Intent::Comparative]
        );
        assert_eq!(
            rule_intents("What changed in the guide since March?"),
            [Intent::Temporal]
        );
        assert_eq!(
            rule_intents("In 1998, who ran the mill?"),
            [Intent::Temporal]
        );
        assert_eq!(
            rule_intents("Why is the cache eventually consistent?"),
            [Intent::Conceptual]
        );
        assert!(rule_intents("Who wrote the report?").is_empty());
    }

    #[test]
    fn time_expressions_resolve_against_now() {
        use metarag_core::time::parse_day;
        let now = parse_day("2026-11-24").unwrap() + 3_600;
        let day = |s: &str| parse_day(s);
        assert_eq!(
            time_range("What changed in the payment docs since March?", now),
            Some((day("2026-03-01"), None))
        );
        assert_eq!(
            time_range("What was added yesterday?", now),
            Some((day("2026-11-23"), day("2026-11-24")))
        );
        assert_eq!(
            time_range("what happened in 2019", now),
            Some((day("2019-01-01"), day("2020-01-01")))
        );
        assert_eq!(
            time_range("decisions last month", now),
            Some((day("2026-10-01"), day("2026-11-01")))
        );
        assert_eq!(
            time_range("changes since december", now),
            Some((day("2025-12-01"), None))
        );
        assert_eq!(
            time_range("before 2024-05-01", now),
            Some((None, day("2024-05-01")))
        );
        assert_eq!(time_range("Who wrote the report?", now), None);
    }

    #[test]
    fn memories_follow_the_seed_table_with_text_always() {
        assert_eq!(memories_for(&[Intent::Conceptual]), [Memory::Text]);
        assert_eq!(
            memories_for(&[Intent::Comparative]),
            [Memory::Text, Memory::Graph]
        );
        assert_eq!(
            memories_for(&[Intent::Temporal]),
            [Memory::Text, Memory::Graph, Memory::Audit]
        );
        assert_eq!(
            memories_for(&[Intent::Procedural, Intent::Temporal]),
            [Memory::Text, Memory::Graph, Memory::Audit]
        );
    }

    #[test]
    fn rules_win_over_the_classifier_only_when_they_fire() {
        let emb = Route::new(
            vec![Intent::Factual],
            RouteSource::Embedding,
            Duration::ZERO,
        );
        let r = merge_with_rules("How do I add a provider?", emb.clone());
        assert_eq!(
            (r.intents.as_slice(), r.source),
            ([Intent::Procedural].as_slice(), RouteSource::Rules)
        );
        let r = merge_with_rules("Who wrote the report?", emb.clone());
        assert_eq!(r, emb);
    }
}
