//! The serializable record of one run, shared by every strategy. `ask --trace`, the
//! server, the benchmark runner and the snapshot tests all read this one type.

use crate::config::{Complexity, RouteConfig};
use crate::evidence::{GuardrailReport, RetrievalDiagnostics, Source};
use crate::graph::{GraphTrace, StopReason};
use crate::metacog::{Category, Diagnosis, MonitorResult};
use crate::monitor::Signals;
use crate::verify::Verification;
use metarag_core::LogprobSummary;
use serde::{Deserialize, Serialize};

/// Version of the trace format; bumped when a field changes meaning. Version 2 added
/// [`Trace::steps`] and typed budget stop reasons; version 3 the monitor's
/// [`Round::assessment`] and [`Round::logprobs`] (metarag's gate is now the monitor's
/// confidence). Earlier traces still read.
pub const TRACE_VERSION: u32 = 3;

/// What one reasoning step of a strategy was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    /// The model's reasoning (a chain-of-thought sentence, a ReAct thought, a
    /// reflection on a failed attempt).
    Thought,
    /// What the strategy decided to do (a search with its query, a lookup).
    Action,
    /// What the action returned (the passages found, a lookup's sentence).
    Observation,
    /// A follow-up question the strategy asked itself (Self-Ask, decomposition).
    SubQuestion,
    /// An answer: to a sub-question, or a finished attempt.
    Answer,
}

/// One reasoning step, in order: the shared record of iterative strategies (IRCoT,
/// Self-Ask, ReAct, FLARE, Reflexion) beside MetaRAG's rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Step {
    /// The node that took it.
    pub node: String,
    /// What kind of step.
    pub kind: StepKind,
    /// Its text.
    pub text: String,
}

/// Where the evidence came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EvidenceMode {
    /// Searched in the index.
    Retrieval,
    /// Given paragraphs (gold context): no retrieval.
    Context,
    /// No evidence at all (the `direct` strategy).
    ClosedBook,
}

/// What the plan node decided.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PlanRecord {
    /// The query's complexity.
    pub complexity: Complexity,
    /// "llm" or "rules".
    pub method: String,
    /// The retrieval route it picked.
    pub route: RouteConfig,
    /// Why the LLM classification was not used, if it was not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback_reason: Option<String>,
}

/// Why a retrieval ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RetrievalReason {
    /// The first search, with the question.
    Initial,
    /// A further hop of a multi-hop plan (coverage under its threshold).
    Hop,
    /// Targeted re-retrieval of a remediation round.
    Remediation,
    /// The bridge entities the pool's best passages name, searched in the entity graph
    /// (their pages and their neighbours'), before a hop's or a remediation's query.
    FollowEntities,
    /// A reformulated query, after the context found for the first was judged not
    /// relevant enough (the `router` strategy's single reformulation).
    Reformulation,
    /// Gold context paragraphs taken as given.
    Context,
    /// A word (BM25) search for a name the question writes, to tell whether any document
    /// mentions it (`program::exec::unmentioned`); its hits are read for the name and
    /// never added to the pool.
    Mention,
}

/// One retrieval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RetrievalRecord {
    /// Why it ran.
    pub reason: RetrievalReason,
    /// The query.
    pub query: String,
    /// Chunks asked for.
    pub k: usize,
    /// Hits returned (or paragraphs given).
    pub hits: usize,
    /// Passages new to the evidence pool after the guardrails.
    pub added: usize,
    /// What the guardrails dropped.
    pub guardrails: GuardrailReport,
    /// Whether the hits were reranked (and by which model), or why not.
    pub rerank: String,
    /// Diagnostics of the whole pool after this retrieval.
    pub diagnostics: RetrievalDiagnostics,
    /// Milliseconds in search and rerank.
    pub ms: f64,
}

/// What a remediation round did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", tag = "action")]
pub enum Remediation {
    /// Targeted re-retrieval with a sub-query; the pool was augmented.
    Retrieve {
        /// The diagnosis category.
        category: Category,
        /// The sub-query.
        query: String,
    },
    /// A writing directive for the next write.
    Directive {
        /// The diagnosis category.
        category: Category,
        /// The directive.
        text: String,
    },
    /// Every short answer sampled over the same sources agreed, against the written one:
    /// their answer was taken as the next round, with the source sentence stating it.
    Vote {
        /// The diagnosis category.
        category: Category,
        /// The samples' answer.
        answer: String,
        /// How many samples gave it.
        samples: usize,
    },
    /// A remediation of a reader of particular question wordings (the date, quantity,
    /// kinship, link, parts and attribute checks) that the question program replaced:
    /// read from traces before it, never written.
    #[serde(other)]
    Retired,
}

/// One write and what followed it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Round {
    /// 0 for the first answer, then one per remediation.
    pub index: usize,
    /// The writing directive this round wrote under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub directive: Option<String>,
    /// The answer with citations (invalid ones stripped).
    pub answer: String,
    /// The short final answer.
    pub short_answer: String,
    /// Citations to sources that do not exist, removed.
    pub stripped_citations: usize,
    /// Citations added in code to uncited sentences a source supports.
    pub attributed_citations: usize,
    /// Set when the model's reply was not the JSON asked for and the raw text was used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_fallback: Option<String>,
    /// What verify measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verification: Option<Verification>,
    /// Log-probabilities of the write reply's fields, when the backend gave them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<AnswerLogprobs>,
    /// The monitor's signals and confidence (strategies that assess their answers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assessment: Option<Assessment>,
    /// The monitoring gate's outcome (the faithfulness / completeness / citation gate of
    /// trace versions before 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monitor: Option<MonitorResult>,
    /// Similarity to the previous round's answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub similarity_to_previous: Option<f64>,
    /// The diagnosis, when the gate failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnosis: Option<Diagnosis>,
    /// The remediation applied after this round.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remediation: Option<Remediation>,
}

impl Round {
    /// The gate's verdict on this round: the monitor's (trace version 3) or the older
    /// faithfulness / completeness / citation gate's; `None` when no gate ran.
    pub fn gate_passed(&self) -> Option<bool> {
        self.assessment
            .as_ref()
            .map(|a| a.passed)
            .or(self.monitor.map(|m| m.passed))
    }
}

/// Log-probabilities of a written answer's two fields.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AnswerLogprobs {
    /// Over the answer field's tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<LogprobSummary>,
    /// Over the short answer's tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub short_answer: Option<LogprobSummary>,
}

/// What the monitor measured about a round and what it concluded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Assessment {
    /// The signals.
    pub signals: Signals,
    /// The monitor model's confidence that the answer is right.
    pub confidence: f64,
    /// The gate: confidence at or above the model's threshold.
    pub passed: bool,
    /// The short answers sampled over the same sources.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<String>,
    /// The closed-book probe's answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed_book: Option<String>,
    /// The short answer over the sources in reverse order, when that probe ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reordered: Option<String>,
}

/// One LLM call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CallRecord {
    /// The node that made it.
    pub node: String,
    /// What for ("write", "facts", "judge", "critic", "closed_book", "plan").
    pub purpose: String,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Prompt tokens reused from the KV cache.
    pub cached_prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Wall time of the call.
    pub ms: f64,
    /// Answered from the call cache.
    pub cached: bool,
    /// For a cached call: the model's time when it produced the answer (prompt plus
    /// generation), so reports can time a replayed run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original_ms: Option<f64>,
    /// The error, if the call failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The model that answered, when the call's role has its own model (absent: the
    /// run's default model, the trace's `model`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// Totals of a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunUsage {
    /// LLM calls.
    pub llm_calls: u64,
    /// Calls answered from the cache.
    pub cached_calls: u64,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Milliseconds inside LLM calls (concurrent calls counted once).
    pub llm_ms: f64,
    /// Milliseconds inside search and rerank.
    pub search_ms: f64,
}

/// Which check decided that a run declines to answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AbstainedBy {
    /// The writer itself said the sources do not answer the question (every strategy's
    /// write prompt offers it when abstaining is on).
    Writer,
    /// The monitor's confidence in the kept answer was under `[agent] abstain`.
    Monitor,
    /// The monitor diagnosed missing knowledge, and the search for the missing hop found
    /// nothing about it.
    Search,
    /// A read of the question's program found no source stating its fact, and the
    /// monitor did not pass the written answer; or the answer is a bare yes/no and the
    /// program that was to decide it did not resolve (whatever the monitor said); or, over
    /// an index, the program stopped at a step or was invalid and the monitor passed the
    /// answer by less than the strategy's margin.
    Program,
    /// A thing the question names appears in no document: no source read and no word
    /// search of the index for it writes its name (metarag, before it writes).
    Unmentioned,
    /// None of the sources the answer cites mentions the one thing the question asks
    /// about, and the monitor did not pass the answer (metarag).
    OffSubject,
    /// The answer cites no source, none supports it enough to be cited in code, and the
    /// monitor did not pass it (metarag, over an index; a bare yes/no aside).
    Uncited,
}

impl AbstainedBy {
    /// The name, as traces and reports write it.
    pub fn as_str(self) -> &'static str {
        match self {
            AbstainedBy::Writer => "writer",
            AbstainedBy::Monitor => "monitor",
            AbstainedBy::Search => "search",
            AbstainedBy::Program => "program",
            AbstainedBy::Unmentioned => "unmentioned",
            AbstainedBy::OffSubject => "off_subject",
            AbstainedBy::Uncited => "uncited",
        }
    }
}

/// Why a run declined to answer, and what it would have said.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Abstention {
    /// The check that decided it.
    pub by: AbstainedBy,
    /// Why, in words: the step that did not ground, or the confidence and the threshold.
    pub reason: String,
    /// What the sources do state that bears on the question (grounded facts, each with
    /// its `[n]`); empty when nothing was grounded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources_say: Vec<String>,
    /// The answer that was held back, for a strategy that wrote one and then judged it
    /// unsupported; a user may still read it, marked as such.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub withheld: Option<String>,
}

/// The answer of a run that declined to answer.
pub const ABSTAINED_ANSWER: &str = "The sources do not say.";

/// The short answer of a run that declined to answer.
pub const ABSTAINED_SHORT: &str = "unknown";

/// The record of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Trace {
    /// [`TRACE_VERSION`].
    pub version: u32,
    /// The strategy.
    pub strategy: String,
    /// The question.
    pub question: String,
    /// The LLM.
    pub model: String,
    /// Where the evidence came from.
    pub mode: EvidenceMode,
    /// The plan, for strategies that plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<PlanRecord>,
    /// Every retrieval, in order.
    pub retrievals: Vec<RetrievalRecord>,
    /// The numbered sources of the final answer.
    pub sources: Vec<Source>,
    /// Every write, with its checks.
    pub rounds: Vec<Round>,
    /// Reasoning steps of iterative strategies, in order (empty for the others).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<Step>,
    /// A strategy's own counters (`agentic`: rewrites, retries, graded passages...);
    /// `bench report` averages each per strategy.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub metrics: std::collections::BTreeMap<String, f64>,
    /// A strategy's own structured records (`mcts`: its search tree, one entry per node,
    /// as `--save-tree` writes it).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    #[schemars(with = "std::collections::BTreeMap<String, serde_json::Value>")]
    pub records: std::collections::BTreeMap<String, serde_json::Value>,
    /// The final answer (the best round's).
    pub answer: String,
    /// The final short answer.
    pub short_answer: String,
    /// Which round the final answer is from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_round: Option<usize>,
    /// Whether the run declined to answer: the sources, as far as its checks tell, do not
    /// settle the question. [`Trace::abstention`] says why.
    #[serde(default)]
    pub abstained: bool,
    /// Why it declined, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abstention: Option<Abstention>,
    /// Why the run ended.
    pub stop: StopReason,
    /// Every LLM call.
    pub calls: Vec<CallRecord>,
    /// Totals.
    pub usage: RunUsage,
    /// Node visits with timings, and the orchestration overhead.
    pub graph: GraphTrace,
    /// Milliseconds the run waited for a free slot before it started (a server queues
    /// asks when the model is busy); not part of `graph.wall_ms`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub queue_ms: f64,
    /// The documents the run was limited to (`Ask::with_scope`): every search it made was
    /// narrowed by this filter. Absent when the whole index was open to it.
    #[serde(default, skip_serializing_if = "metarag_core::Filter::is_empty")]
    pub scope: metarag_core::Filter,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

impl Trace {
    /// Remediation rounds taken (rounds after the first).
    pub fn remediation_rounds(&self) -> usize {
        self.rounds.len().saturating_sub(1)
    }

    /// Orchestration overhead as a share of the run's wall time.
    pub fn overhead_share(&self) -> f64 {
        if self.graph.wall_ms <= 0.0 {
            0.0
        } else {
            self.graph.overhead_ms / self.graph.wall_ms
        }
    }

    /// The diagnosis categories of the run, in order.
    pub fn categories(&self) -> Vec<Category> {
        self.rounds
            .iter()
            .filter_map(|r| r.diagnosis.as_ref().map(|d| d.category))
            .collect()
    }
}
