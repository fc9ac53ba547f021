//! `direct`: the closed-book baseline: the model answers from its own knowledge.

use super::NoConfig;
use crate::graph::{Graph, Transition};
use crate::nodes::{self, WRITE};
use crate::registry::Strategy;
use crate::state::Run;

/// No retrieval: one write without sources.
#[derive(Debug, Clone, Default)]
pub struct Direct;

impl Strategy for Direct {
    const NAME: &'static str = "direct";
    const DESCRIPTION: &'static str = "no retrieval: the model answers from its own knowledge";
    const NEEDS_EVIDENCE: bool = false;
    type Config = NoConfig;
    type State = ();

    fn new(_: NoConfig) -> Result<Self, String> {
        Ok(Direct)
    }

    fn state(&self) {}

    fn graph(&self) -> Graph<Run<()>> {
        Graph::new(WRITE).node(WRITE, &[], |s| {
            Box::pin(nodes::write(s, Transition::done("answered")))
        })
    }
}
