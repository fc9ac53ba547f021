//! Nodes shared by strategies: plan, retrieve, read and write, plus the search helper
//! iterative strategies call from inside their own nodes.
//!
//! A node does its work on the shared part of [`crate::Run`] and goes where the graph
//! wiring tells it: the successor is an argument, so a node never asks which strategy
//! runs it.

mod plan;
mod retrieve;
mod write;

pub use plan::{classify, plan};
pub use retrieve::{gather, gather_fused, retrieve, same_passage};
pub use write::{read, write};

use crate::graph::NodeId;

/// Classifies the query and picks a retrieval route.
pub const PLAN: NodeId = NodeId("plan");
/// Searches (or takes the given context) into the evidence pool.
pub const RETRIEVE: NodeId = NodeId("retrieve");
/// Turns the pool into numbered sources.
pub const READ: NodeId = NodeId("read");
/// Writes a cited answer.
pub const WRITE: NodeId = NodeId("write");
