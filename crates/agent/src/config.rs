//! The agent's typed configuration. Defaults follow seed `000`'s parameter table; the CLI
//! fills this from its raw config (file, env) and validates it before a run.

use crate::Budget;
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// How complex a query is, as the plan node classifies it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Complexity {
    /// One fact, one hop.
    Simple,
    /// Needs several facts from one place, or an explanation.
    Complex,
    /// Needs a chain: find one entity, then a fact about it.
    MultiHop,
}

impl Complexity {
    /// The name used in traces and prompts.
    pub fn as_str(self) -> &'static str {
        match self {
            Complexity::Simple => "simple",
            Complexity::Complex => "complex",
            Complexity::MultiHop => "multi_hop",
        }
    }
}

/// The retrieval settings one complexity level gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RouteConfig {
    /// Chunks per search.
    pub top_k: usize,
    /// Whether to rerank (only when a reranker is configured).
    pub rerank: bool,
    /// Most retrieval hops.
    pub hops: usize,
}

fn off() -> bool {
    false
}

/// When a run may decline to answer (`[agent] abstain`): `"off"`, or a monitor confidence.
///
/// On (a number), every strategy's writer is told it may say the sources do not answer
/// the question, and such a reply ends the run as abstained; metarag also declines when
/// its monitor's confidence in the kept answer is under the number, or when a read of the
/// question's program found no source for its fact and the monitor did not pass the
/// written answer. 0 keeps only the writer's and the program's declines. Off, every
/// strategy always answers (the papers' setting, and records written before this
/// existed).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Abstain {
    /// Never decline.
    Off,
    /// Decline under this monitor confidence (0 to 1).
    Below(f64),
}

impl Default for Abstain {
    fn default() -> Self {
        Abstain::Below(Abstain::DEFAULT)
    }
}

impl Abstain {
    /// The monitor confidence under which metarag declines by default: the threshold
    /// with the best truthfulness summed over the tuning halves with records (man pages
    /// and HotpotQA, open retrieval; docs/results/truthfulness.md, "The default
    /// threshold"), 0.35 on both.
    pub const DEFAULT: f64 = 0.35;

    /// Whether runs may decline at all.
    pub fn is_on(self) -> bool {
        !matches!(self, Abstain::Off)
    }

    /// The confidence threshold, when on.
    pub fn threshold(self) -> Option<f64> {
        match self {
            Abstain::Off => None,
            Abstain::Below(t) => Some(t),
        }
    }
}

impl std::str::FromStr for Abstain {
    type Err = String;

    /// `off`, `on`, or a confidence between 0 and 1 (`--abstain 0.3`).
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.trim() {
            "off" => Ok(Abstain::Off),
            "on" | "default" => Ok(Abstain::default()),
            other => match other.parse::<f64>() {
                Ok(t) if (0.0..=1.0).contains(&t) => Ok(Abstain::Below(t)),
                Ok(t) => Err(format!("{t} is not a confidence between 0 and 1")),
                Err(_) => Err(format!(
                    "`{other}` is neither off, on nor a confidence between 0 and 1"
                )),
            },
        }
    }
}

impl Serialize for Abstain {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self.threshold() {
            None => s.serialize_str("off"),
            Some(t) => s.serialize_f64(t),
        }
    }
}

impl<'de> Deserialize<'de> for Abstain {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(f64),
            Word(String),
        }
        match Raw::deserialize(d)? {
            Raw::Number(t) => Ok(Abstain::Below(t)),
            // A word, or a number written as text (`METARAG_AGENT__ABSTAIN=0.3`).
            Raw::Word(w) => w.parse().map_err(serde::de::Error::custom),
        }
    }
}

impl schemars::JsonSchema for Abstain {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Abstain".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "\"off\", \"on\" (the default threshold) or a monitor confidence between 0 and 1",
            "anyOf": [
                {"type": "string", "enum": ["off", "on"]},
                {"type": "number", "minimum": 0.0, "maximum": 1.0}
            ]
        })
    }
}

/// Thresholds and limits of the agent, deserialised directly from the `[agent]` section of
/// `metarag.toml` (every field has a default; unknown fields are refused). Defaults follow
/// seed `000`'s parameter table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct AgentConfig {
    /// Route of simple queries (seed: 5 chunks, no rerank, 1 hop).
    pub simple: RouteConfig,
    /// Route of complex queries (seed: 10 chunks, rerank, 1 hop).
    pub complex: RouteConfig,
    /// Route of multi-hop queries (seed: 10 chunks, rerank, 3 hops).
    pub multi_hop: RouteConfig,
    /// Whether the plan node asks the LLM to classify (else rules only).
    pub plan_with_llm: bool,
    /// A further hop is taken while evidence coverage of the query terms is under this.
    pub evidence_coverage_threshold: f64,
    /// Whether a further hop and a re-retrieval for a missing hop also follow the entity
    /// graph's edges from the bridge entities the pool's best passages name (half the
    /// hop's passages from the graph, the rest from the hop's query). Chosen on the tuning
    /// halves: the pool after a hop holds both supporting titles for 73.0% of 2Wiki
    /// questions against 69.3% with the query alone (HotpotQA 90.3 / 89.9); the reporting
    /// halves agree (74.2 / 68.4, 86.8 / 83.1; docs/results/graph.md). Only where the
    /// search mode includes the graph.
    pub follow_entities: bool,
    /// Whether a route with hops left searches, right after its first search, for the
    /// bridge entities the question's relation passes through, named by the passages about
    /// the entities the question names ("who made X": X's page names its
    /// director, whose own page is searched by name, two passages each;
    /// `evidence::relation_bridges`). Costs a search per bridge and no model call.
    pub bridge_hop: bool,
    /// Passages each bridge entity's search adds.
    pub bridge_k: usize,
    /// Whether the write is told the bridges the bridge hop found and pooled: the sentence
    /// that names each one beside its subject, and that the question's relation passes
    /// through it (a 1.5B writer given Ingmar Bergman's page still answered with the film's
    /// own facts). Off: on 2Wiki open's tuning half (n = 50, default local model) it
    /// changed 2 answers, both from one wrong answer to another, F1 48.4 either way
    /// (docs/results/monitor.md); a stronger writer may use it. Absent from records written
    /// before it existed, where it was off.
    #[serde(default = "off")]
    pub bridge_notes: bool,
    /// Document diversity under this is reported as a retrieval warning.
    pub min_retrieval_diversity: f64,
    /// Near-duplicate chunks (word-trigram Jaccard at or above this) are dropped.
    pub near_duplicate_threshold: f64,
    /// Which prompt-injection screens every passage passes before it enters the evidence
    /// pool: `patterns` (free; the default) or `model` (the patterns, then one constrained
    /// yes/no call per passage asking the model whether the passage holds instructions
    /// aimed at it; for corpora nobody vetted). Measured by `metarag bench injection`.
    pub injection_screen: crate::injection::Screen,
    /// The model screen drops a passage when the model's probability that it holds
    /// instructions aimed at the model ([`crate::injection::score`]) is at least this.
    pub injection_threshold: f64,
    /// Most characters of evidence put in front of the model (the read node trims to it).
    pub max_evidence_chars: usize,
    /// A claim counts as supported when this share of its content terms is in its source.
    pub support_threshold: f64,
    /// Most metacognitive (remediation) rounds.
    pub max_rounds: usize,
    /// Weight of the LLM judge's own scores in faithfulness and completeness (the rest is
    /// measured in code).
    pub judge_weight: f64,
    /// Most tokens a written answer may take.
    pub answer_max_tokens: u32,
    /// When a run may decline to answer ([`Abstain`]).
    pub abstain: Abstain,
    /// Limits on the whole run (`[agent.budget]`).
    pub budget: Budget,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            simple: RouteConfig {
                top_k: 5,
                rerank: false,
                hops: 1,
            },
            complex: RouteConfig {
                top_k: 10,
                rerank: true,
                hops: 1,
            },
            multi_hop: RouteConfig {
                top_k: 10,
                rerank: true,
                hops: 3,
            },
            plan_with_llm: true,
            evidence_coverage_threshold: 0.45,
            follow_entities: true,
            bridge_hop: true,
            bridge_k: 2,
            bridge_notes: false,
            min_retrieval_diversity: 0.25,
            near_duplicate_threshold: 0.9,
            injection_screen: crate::injection::Screen::Patterns,
            injection_threshold: 0.65,
            max_evidence_chars: 6000,
            support_threshold: 0.6,
            max_rounds: 3,
            judge_weight: 0.25,
            answer_max_tokens: 256,
            abstain: Abstain::default(),
            budget: Budget::default(),
        }
    }
}

impl AgentConfig {
    /// The route for a complexity level.
    pub fn route(&self, c: Complexity) -> RouteConfig {
        match c {
            Complexity::Simple => self.simple,
            Complexity::Complex => self.complex,
            Complexity::MultiHop => self.multi_hop,
        }
    }

    /// The same route for every complexity level (tests, and runs that fix retrieval).
    pub fn with_route(self, route: RouteConfig) -> Self {
        AgentConfig {
            simple: route,
            complex: route,
            multi_hop: route,
            ..self
        }
    }

    /// Checks every field, naming the first that is out of range by its path in the
    /// `[agent]` section (`multi_hop.top_k`, `budget.max_steps`).
    pub fn validate(&self) -> Result<()> {
        let unit = [
            (
                "evidence_coverage_threshold",
                self.evidence_coverage_threshold,
            ),
            ("min_retrieval_diversity", self.min_retrieval_diversity),
            ("near_duplicate_threshold", self.near_duplicate_threshold),
            ("injection_threshold", self.injection_threshold),
            ("support_threshold", self.support_threshold),
            ("judge_weight", self.judge_weight),
        ];
        if let Abstain::Below(t) = self.abstain
            && !(0.0..=1.0).contains(&t)
        {
            return Err(Error::config("abstain", format!("{t} is not in [0, 1]")));
        }
        for (name, v) in unit {
            if !(0.0..=1.0).contains(&v) {
                return Err(Error::config(name, format!("{v} is not in [0, 1]")));
            }
        }
        for (name, r) in [
            ("simple", &self.simple),
            ("complex", &self.complex),
            ("multi_hop", &self.multi_hop),
        ] {
            if r.top_k == 0 {
                return Err(Error::config(format!("{name}.top_k"), "must be at least 1"));
            }
            if r.hops == 0 {
                return Err(Error::config(format!("{name}.hops"), "must be at least 1"));
            }
        }
        if self.max_evidence_chars < 200 {
            return Err(Error::config(
                "max_evidence_chars",
                "must be at least 200 characters",
            ));
        }
        if self.bridge_k == 0 {
            return Err(Error::config("bridge_k", "must be at least 1"));
        }
        if self.answer_max_tokens == 0 {
            return Err(Error::config("answer_max_tokens", "must be at least 1"));
        }
        let b = &self.budget;
        for (name, v) in [
            ("budget.max_steps", b.max_steps as u64),
            ("budget.max_llm_calls", b.max_llm_calls),
            ("budget.max_tokens", b.max_tokens),
            ("budget.deadline_secs", b.deadline.as_secs()),
        ] {
            if v == 0 {
                return Err(Error::config(name, "must be at least 1"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn defaults_follow_the_seed_table_and_validate() {
        let c = AgentConfig::default();
        c.validate().unwrap();
        assert_eq!(c.route(Complexity::Simple).top_k, 5);
        assert!(!c.route(Complexity::Simple).rerank);
        assert_eq!(c.route(Complexity::MultiHop).hops, 3);
        let bad = AgentConfig {
            support_threshold: 1.5,
            ..AgentConfig::default()
        };
        assert!(
            bad.validate()
                .unwrap_err()
                .to_string()
                .contains("`support_threshold`")
        );
        let mut bad = AgentConfig::default();
        bad.multi_hop.hops = 0;
        let e = bad.validate().unwrap_err().to_string();
        assert!(e.contains("`multi_hop.hops`"), "{e}");
        bad = AgentConfig::default();
        bad.budget.deadline = Duration::ZERO;
        let e = bad.validate().unwrap_err().to_string();
        assert!(e.contains("`budget.deadline_secs`"), "{e}");
    }

    #[test]
    fn the_toml_section_deserialises_directly_with_defaults_and_refuses_unknown_fields() {
        let c: AgentConfig = toml::from_str(
            "max_rounds = 1\nmulti_hop = { top_k = 4, rerank = false, hops = 2 }\n\
             [budget]\nmax_llm_calls = 7\ndeadline_secs = 30\n",
        )
        .unwrap();
        assert_eq!(c.max_rounds, 1);
        assert_eq!(c.multi_hop.top_k, 4);
        assert_eq!(c.simple, AgentConfig::default().simple);
        assert_eq!(c.budget.max_llm_calls, 7);
        assert_eq!(c.budget.deadline, Duration::from_secs(30));
        assert_eq!(c.budget.max_steps, Budget::default().max_steps);
        let e = toml::from_str::<AgentConfig>("faithfulness_threshold = 0.7\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("faithfulness_threshold"), "{e}");
        let e = toml::from_str::<AgentConfig>("[budget]\ndeadline = 3\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("deadline"), "{e}");
    }
}
