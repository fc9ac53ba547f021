//! # metarag-agent
//!
//! The agent layer. For now its foundation: [`graph`], a typed state-graph executor whose
//! nodes are async functions of a typed state returning the next node or a stop reason,
//! whose edges are data (so a strategy's graph prints as Mermaid), whose every loop is
//! bounded by a [`Budget`], and whose runs produce a serializable [`GraphTrace`]. The
//! MetaRAG strategy, standard RAG and the baselines are built on it (issue 4).

pub mod graph;

pub use graph::{Budget, Graph, GraphState, GraphTrace, Spend, StopReason, TraceEvent, Transition};
