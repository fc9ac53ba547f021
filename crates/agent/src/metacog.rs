//! The vocabulary of seed `000`'s metacognitive regulation (after Yao et al. 2024): the
//! four knowledge categories, the three declarative error types, and the diagnosis record
//! every trace carries. The diagnosis itself is decided in code from the monitor's signals
//! ([`crate::monitor::diagnose`]).
//!
//! Traces written before version 3 carry the older gate ([`MonitorResult`]: faithfulness,
//! completeness and citation precision thresholds) and diagnoses by the rules over an
//! evaluator-critic's reply ([`DiagnosisMethod::Rules`], [`DiagnosisMethod::Heuristic`]);
//! they still read. That gate was measured as a classifier of right and wrong first answers
//! and was near chance (AUROC of its metric sum on the reporting halves: 0.69 HotpotQA gold,
//! 0.51 2Wiki gold, 0.50 HotpotQA open; the facts check and the judge's confidence between
//! 0.42 and 0.57; docs/results/monitor.md), so it was replaced.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The outcome of the older monitoring gate (trace versions before 3).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MonitorResult {
    /// Whether the answer passes.
    pub passed: bool,
    /// Faithfulness reached its threshold.
    pub faithfulness_ok: bool,
    /// Completeness reached its threshold.
    pub completeness_ok: bool,
    /// Citation precision reached its threshold.
    pub citation_ok: bool,
    /// Passed by the confidence fast path rather than the three thresholds.
    pub fast_path: bool,
}

/// The four knowledge categories of the diagnosis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// Neither the model nor the sources suffice: re-retrieve.
    InsufficientKnowledge,
    /// The model knows; the sources are noisy or misleading.
    InternalKnowledgeOnly,
    /// The sources hold the answer; the model's own knowledge is wrong or absent.
    ExternalKnowledgeOnly,
    /// Both suffice: the failure is in the reasoning or the writing.
    ReasoningError,
}

impl Category {
    /// The name in traces and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Category::InsufficientKnowledge => "insufficient_knowledge",
            Category::InternalKnowledgeOnly => "internal_knowledge_only",
            Category::ExternalKnowledgeOnly => "external_knowledge_only",
            Category::ReasoningError => "reasoning_error",
        }
    }

    /// The category of an (internal, external) sufficiency pair, as in seed `000`'s table.
    pub fn of(internal: bool, external: bool) -> Self {
        match (internal, external) {
            (false, false) => Category::InsufficientKnowledge,
            (true, false) => Category::InternalKnowledgeOnly,
            (false, true) => Category::ExternalKnowledgeOnly,
            (true, true) => Category::ReasoningError,
        }
    }
}

/// The declarative error patterns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorType {
    /// Missed reasoning steps or ignored evidence.
    IncompleteReasoning,
    /// Repetitive or verbose.
    AnswerRedundance,
    /// Answered a related but different question.
    AmbiguityUnderstanding,
}

/// How the diagnosis was reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DiagnosisMethod {
    /// Traces before version 3: rules over a facts check, the closed-book probe and an
    /// evaluator-critic's reply.
    Rules,
    /// Traces before version 3: the critic failed and the metrics alone decided.
    Heuristic,
    /// The monitor's signals, decided in code without a critic call
    /// ([`crate::monitor::diagnose`]).
    Signals,
}

/// Why an answer is weak.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Diagnosis {
    /// The knowledge category.
    pub category: Category,
    /// Detected error patterns.
    pub error_types: Vec<ErrorType>,
    /// Could the model answer without the sources?
    pub internal_sufficient: bool,
    /// Do the sources suffice?
    pub external_sufficient: bool,
    /// The query for a targeted re-retrieval.
    pub suggested_query: String,
    /// How it was decided.
    pub method: DiagnosisMethod,
    /// The closed-book answer used to judge internal knowledge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed_book_answer: Option<String>,
    /// The evaluator-critic's reply (traces before version 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub critic: Option<CriticReply>,
    /// Why the critic gave none, if so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub critic_error: Option<String>,
    /// The rules that fired, in words.
    pub reasons: Vec<String>,
}

/// An evaluator-critic's reply, as traces before version 3 recorded it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CriticReply {
    /// Could the question be answered reliably without the sources?
    pub internal_sufficient: bool,
    /// Do the sources contain what the question needs?
    pub external_sufficient: bool,
    /// Any of incomplete_reasoning, answer_redundance, ambiguity_understanding.
    pub error_types: Vec<String>,
    /// One search query that would find the missing information.
    pub suggested_query: String,
}
