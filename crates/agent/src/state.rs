//! The state every strategy's graph runs over: a shared part (question, evidence,
//! rounds, steps, the [`Gateway`] with its accounting) and a strategy's own extension
//! `E`, so a strategy in its own file keeps whatever else it needs, typed.

use crate::config::{AgentConfig, Complexity, RouteConfig};
use crate::evidence::{Passage, Source};
use crate::gateway::Gateway;
use crate::graph::{GraphState, GraphTrace, NodeError, Spend};
use crate::trace::{
    ABSTAINED_ANSWER, ABSTAINED_SHORT, AbstainedBy, Abstention, EvidenceMode, PlanRecord,
    RetrievalReason, RetrievalRecord, Round, Step, StepKind, TRACE_VERSION, Trace,
};
use metarag_core::SearchMode;
use std::sync::Arc;

/// One run's state: shared fields every node may read and write, plus `ext`, the
/// running strategy's own part.
pub struct Run<E> {
    /// Calls, searches and their accounting.
    pub gw: Gateway,
    /// The agent's configuration.
    pub config: Arc<AgentConfig>,
    /// The question, trimmed.
    pub question: String,
    /// Gold paragraphs, when given (then nothing is searched).
    pub context: Option<Vec<Passage>>,
    /// Where evidence comes from.
    pub mode: EvidenceMode,
    /// The query's complexity (the plan node sets it; `Complex` otherwise).
    pub complexity: Complexity,
    /// The retrieval route in force.
    pub route: RouteConfig,
    /// How searches combine retrievers (a router narrows it to the memories the question
    /// calls for).
    pub search_mode: SearchMode,
    /// Whether the run writes an answer; `false` for a context-only run of a strategy
    /// that supports one.
    pub generate: bool,
    /// The plan, for strategies that plan.
    pub plan: Option<PlanRecord>,
    /// Every passage retrieved so far (after guardrails).
    pub pool: Vec<Passage>,
    /// Retrieval hops taken (remediation searches not counted).
    pub hops: usize,
    /// Queries searched so far, the question first.
    pub queries: Vec<String>,
    /// The next search the retrieve node runs, when a node asked for one.
    pub pending: Option<(String, RetrievalReason)>,
    /// Whether the pending search is for a missing hop, so the retrieve node first follows
    /// the graph from the pool's bridge entities (`AgentConfig::follow_entities`). Set by
    /// the node that plans such a search; a strategy's own targeted query leaves it unset.
    pub follow_bridge: bool,
    /// Every retrieval.
    pub retrievals: Vec<RetrievalRecord>,
    /// The numbered sources the next write reads.
    pub sources: Vec<Source>,
    /// Bumped each time the sources change (caches keyed on the evidence use it).
    pub sources_version: usize,
    /// A writing directive for the next write.
    pub directive: Option<String>,
    /// Notes the next write reads after the question: an iterative strategy's reasoning
    /// (its chain of thought, sub-questions and their answers).
    pub notes: Option<String>,
    /// Bridges the bridge hop found and pooled, which the write is told about when
    /// `AgentConfig::bridge_notes` is on.
    pub bridges: Vec<crate::evidence::Bridge>,
    /// Every write.
    pub rounds: Vec<Round>,
    /// Reasoning steps of iterative strategies.
    pub steps: Vec<Step>,
    /// The strategy's own counters, copied into [`Trace::metrics`].
    pub metrics: std::collections::BTreeMap<String, f64>,
    /// The strategy's own structured records, copied into [`Trace::records`].
    pub records: std::collections::BTreeMap<String, serde_json::Value>,
    /// What the node that is running did, in one line (taken into its trace event).
    pub note: Option<String>,
    /// The round a strategy chose as its answer; unset, the best round by the gate's
    /// metrics is taken (see [`Run::into_trace`]).
    pub chosen: Option<usize>,
    /// Set by a strategy that declines to answer (metarag's monitor or program); a writer's
    /// own "the sources do not say" is found in [`Run::into_trace`].
    pub abstention: Option<Abstention>,
    /// The running strategy's own state.
    pub ext: E,
}

impl<E: Send> GraphState for Run<E> {
    fn spend(&self) -> Spend {
        self.gw.spend()
    }

    fn take_note(&mut self) -> Option<String> {
        self.note.take()
    }
}

impl<E> Run<E> {
    /// A fresh run of `question`, nothing retrieved or written yet.
    pub fn new(
        gw: Gateway,
        config: Arc<AgentConfig>,
        question: String,
        context: Option<Vec<Passage>>,
        mode: EvidenceMode,
        ext: E,
    ) -> Self {
        let route = RouteConfig {
            rerank: false,
            hops: 1,
            ..config.route(Complexity::Complex)
        };
        Run {
            gw,
            config,
            queries: vec![question.clone()],
            question,
            context,
            mode,
            complexity: Complexity::Complex,
            route,
            search_mode: SearchMode::Hybrid,
            generate: true,
            plan: None,
            pool: Vec::new(),
            hops: 0,
            pending: None,
            follow_bridge: false,
            retrievals: Vec::new(),
            sources: Vec::new(),
            sources_version: 0,
            directive: None,
            notes: None,
            bridges: Vec::new(),
            rounds: Vec::new(),
            steps: Vec::new(),
            metrics: Default::default(),
            records: Default::default(),
            note: None,
            chosen: None,
            abstention: None,
            ext,
        }
    }

    /// The configuration.
    pub fn cfg(&self) -> &AgentConfig {
        &self.config
    }

    /// The latest round, or an error when nothing has been written yet.
    pub fn current_round(&mut self) -> Result<&mut Round, NodeError> {
        self.rounds
            .last_mut()
            .ok_or_else(|| NodeError::Failed("no answer has been written yet".into()))
    }

    /// Records a reasoning step taken by `node`.
    pub fn step(&mut self, node: &str, kind: StepKind, text: impl Into<String>) {
        self.steps.push(Step {
            node: node.to_string(),
            kind,
            text: text.into(),
        });
    }

    /// Appends an answer as a round (for strategies whose final answer is not written by
    /// the shared write node) and returns its index.
    pub fn push_answer(&mut self, answer: String, short_answer: String) -> usize {
        let index = self.rounds.len();
        self.rounds.push(Round {
            index,
            directive: self.directive.clone(),
            answer,
            short_answer,
            stripped_citations: 0,
            attributed_citations: 0,
            write_fallback: None,
            logprobs: None,
            assessment: None,
            verification: None,
            monitor: None,
            similarity_to_previous: None,
            diagnosis: None,
            remediation: None,
        });
        index
    }

    /// The run as its trace. The final answer is the round the strategy chose
    /// ([`Run::chosen`]), else the best round by the gate's metrics (a passed round
    /// first), the latest among equals: a remediation that made things worse does not
    /// win, and strategies that do not verify end with their last round.
    pub fn into_trace(self, strategy: &str, graph: GraphTrace) -> Trace {
        let score = |r: &Round| {
            r.verification.as_ref().map_or(0.0, |v| {
                v.faithfulness + v.completeness + v.citation_precision
            }) + if r.monitor.is_some_and(|m| m.passed) {
                10.0
            } else {
                0.0
            }
        };
        let best = self.chosen.filter(|&i| i < self.rounds.len()).or_else(|| {
            self.rounds
                .iter()
                .enumerate()
                .max_by(|a, b| score(a.1).total_cmp(&score(b.1)).then(a.0.cmp(&b.0)))
                .map(|(i, _)| i)
        });
        let (answer, short_answer) = best
            .map(|i| {
                (
                    self.rounds[i].answer.clone(),
                    self.rounds[i].short_answer.clone(),
                )
            })
            .unwrap_or_default();
        // A writer that said the sources do not answer declined, whatever the strategy
        // (when abstaining is on, every write prompt offers it): in its answer, not only
        // in the short answer (see the write node).
        let abstention = self.abstention.or_else(|| {
            (self.config.abstain.is_on()
                && best.is_some()
                && crate::text::is_refusal(&short_answer)
                && crate::text::is_refusal(&answer))
            .then(|| Abstention {
                by: AbstainedBy::Writer,
                reason: "the writer said the sources do not answer the question".into(),
                sources_say: Vec::new(),
                withheld: None,
            })
        });
        // A strategy's decline replaces the answer it held back; the writer's own words
        // stay (they often say what the sources do state).
        let (answer, short_answer) = match &abstention {
            Some(a) if a.by != AbstainedBy::Writer => {
                let mut text = ABSTAINED_ANSWER.to_string();
                if !a.sources_say.is_empty() {
                    text.push_str(" What they do state: ");
                    text.push_str(&a.sources_say.join(" "));
                }
                (text, ABSTAINED_SHORT.to_string())
            }
            _ => (answer, short_answer),
        };
        Trace {
            version: TRACE_VERSION,
            strategy: strategy.to_string(),
            question: self.question,
            model: self.gw.model_id().to_string(),
            mode: self.mode,
            plan: self.plan,
            retrievals: self.retrievals,
            sources: self.sources,
            rounds: self.rounds,
            steps: self.steps,
            metrics: self.metrics,
            records: self.records,
            answer,
            short_answer,
            final_round: best,
            abstained: abstention.is_some(),
            abstention,
            stop: graph.stop.clone(),
            scope: self.gw.scope().clone(),
            calls: self.gw.calls,
            usage: self.gw.usage,
            graph,
            queue_ms: 0.0,
        }
    }
}
