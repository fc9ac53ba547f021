//! # metarag-agent
//!
//! The agent layer: strategies that answer questions over an LLM and a retriever, all
//! built on [`graph`], a typed state-graph executor whose nodes are async functions of a
//! typed state returning the next node or a stop reason, whose edges are data (so a
//! strategy's graph prints as Mermaid), whose loops are bounded by a [`Budget`], and whose
//! runs produce one serializable [`Trace`].
//!
//! Strategies ([`Strategy`]): `direct` (closed-book), `standard` (one retrieve, one write)
//! and `metarag` (seed `000`, after Yao et al. 2024): plan -> retrieve (guardrails,
//! diagnostics, further hops) -> read -> write -> verify -> monitor -> converge ->
//! diagnose -> remediate -> write again. Verdicts about an answer (supported, complete,
//! sufficient, which knowledge is missing) are decided in code from structured model
//! output ([`verify`], [`metacog`]), because small models cannot grade themselves.

pub mod config;
pub mod error;
pub mod evidence;
pub mod graph;
pub mod metacog;
pub mod prompts;
mod run;
pub mod text;
pub mod trace;
pub mod verify;

pub use config::{AgentConfig, Complexity, RouteConfig};
pub use error::{Error, Result};
pub use evidence::{Passage, Source};
pub use graph::{Budget, Graph, GraphState, GraphTrace, Spend, StopReason, TraceEvent, Transition};
pub use metacog::{Category, Diagnosis, DiagnosisMethod, ErrorType};
pub use run::{Agent, AgentBuilder, Ask, RunState, Strategy, classify, graph};
pub use trace::{EvidenceMode, Round, Trace};
