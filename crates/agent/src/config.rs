//! The agent's typed configuration. Defaults follow seed `000`'s parameter table; the CLI
//! fills this from its raw config (file, env) and validates it before a run.

use crate::Budget;
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::time::Duration;

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

/// Thresholds and limits of the agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AgentConfig {
    /// Routes for simple / complex / multi-hop queries (seed: 5/no/1, 10/yes/1, 10/yes/3).
    pub routes: [RouteConfig; 3],
    /// Whether the plan node asks the LLM to classify (else rules only).
    pub plan_with_llm: bool,
    /// A further hop is taken while evidence coverage of the query terms is under this.
    pub evidence_coverage_threshold: f64,
    /// Document diversity under this is reported as a retrieval warning.
    pub min_retrieval_diversity: f64,
    /// Near-duplicate chunks (word-trigram Jaccard at or above this) are dropped.
    pub near_duplicate_threshold: f64,
    /// Most characters of evidence put in front of the model (the read node trims to it).
    pub max_evidence_chars: usize,
    /// Monitoring gate: faithfulness at least this.
    pub faithfulness_threshold: f64,
    /// Monitoring gate: completeness at least this.
    pub completeness_threshold: f64,
    /// Monitoring gate: citation precision at least this.
    pub citation_precision_threshold: f64,
    /// A claim counts as supported when this share of its content terms is in its source.
    pub support_threshold: f64,
    /// Optional fast path: skip diagnosis when the judge's confidence is at least this and
    /// every metric is within 0.15 of its threshold. Off (None) by default.
    pub fast_path_threshold: Option<f64>,
    /// The judge's confidence must reach this before it can tip a decision.
    pub evaluator_confidence_threshold: f64,
    /// Most metacognitive (remediation) rounds.
    pub max_rounds: usize,
    /// Consecutive answers with token-set Jaccard at or above this have converged.
    pub convergence_threshold: f64,
    /// Weight of the LLM judge's own scores in faithfulness and completeness (the rest is
    /// measured in code).
    pub judge_weight: f64,
    /// Time allowed for the evaluator-critic before the heuristic decides.
    pub critic_timeout: Duration,
    /// Most tokens a written answer may take.
    pub answer_max_tokens: u32,
    /// Limits on the whole run.
    pub budget: Budget,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            routes: [
                RouteConfig {
                    top_k: 5,
                    rerank: false,
                    hops: 1,
                },
                RouteConfig {
                    top_k: 10,
                    rerank: true,
                    hops: 1,
                },
                RouteConfig {
                    top_k: 10,
                    rerank: true,
                    hops: 3,
                },
            ],
            plan_with_llm: true,
            evidence_coverage_threshold: 0.45,
            min_retrieval_diversity: 0.25,
            near_duplicate_threshold: 0.9,
            max_evidence_chars: 6000,
            faithfulness_threshold: 0.70,
            completeness_threshold: 0.60,
            citation_precision_threshold: 0.40,
            support_threshold: 0.6,
            fast_path_threshold: None,
            evaluator_confidence_threshold: 0.4,
            max_rounds: 3,
            convergence_threshold: 0.85,
            judge_weight: 0.25,
            critic_timeout: Duration::from_secs(120),
            answer_max_tokens: 256,
            budget: Budget::default(),
        }
    }
}

impl AgentConfig {
    /// The route for a complexity level.
    pub fn route(&self, c: Complexity) -> RouteConfig {
        match c {
            Complexity::Simple => self.routes[0],
            Complexity::Complex => self.routes[1],
            Complexity::MultiHop => self.routes[2],
        }
    }

    /// Checks every field, naming the first that is out of range.
    pub fn validate(&self) -> Result<()> {
        let unit = [
            (
                "evidence_coverage_threshold",
                self.evidence_coverage_threshold,
            ),
            ("min_retrieval_diversity", self.min_retrieval_diversity),
            ("near_duplicate_threshold", self.near_duplicate_threshold),
            ("faithfulness_threshold", self.faithfulness_threshold),
            ("completeness_threshold", self.completeness_threshold),
            (
                "citation_precision_threshold",
                self.citation_precision_threshold,
            ),
            ("support_threshold", self.support_threshold),
            (
                "evaluator_confidence_threshold",
                self.evaluator_confidence_threshold,
            ),
            ("convergence_threshold", self.convergence_threshold),
            ("judge_weight", self.judge_weight),
        ];
        for (name, v) in unit {
            if !(0.0..=1.0).contains(&v) {
                return Err(Error::config(name, format!("{v} is not in [0, 1]")));
            }
        }
        if let Some(v) = self.fast_path_threshold
            && !(0.0..=1.0).contains(&v)
        {
            return Err(Error::config(
                "fast_path_threshold",
                format!("{v} is not in [0, 1]"),
            ));
        }
        for (name, r) in ["simple", "complex", "multi_hop"].iter().zip(&self.routes) {
            if r.top_k == 0 || r.hops == 0 {
                return Err(Error::config(
                    format!("routes.{name}"),
                    "top_k and hops must be at least 1",
                ));
            }
        }
        if self.max_evidence_chars < 200 {
            return Err(Error::config(
                "max_evidence_chars",
                "must be at least 200 characters",
            ));
        }
        if self.answer_max_tokens == 0 {
            return Err(Error::config("answer_max_tokens", "must be at least 1"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_the_seed_table_and_validate() {
        let c = AgentConfig::default();
        c.validate().unwrap();
        assert_eq!(c.route(Complexity::Simple).top_k, 5);
        assert!(!c.route(Complexity::Simple).rerank);
        assert_eq!(c.route(Complexity::MultiHop).hops, 3);
        let bad = AgentConfig {
            faithfulness_threshold: 1.5,
            ..AgentConfig::default()
        };
        assert!(
            bad.validate()
                .unwrap_err()
                .to_string()
                .contains("faithfulness_threshold")
        );
    }
}
