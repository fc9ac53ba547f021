//! `standard`: the standard RAG baseline: one retrieval, one cited answer.

use super::NoConfig;
use crate::graph::{Graph, Transition};
use crate::nodes::{self, READ, RETRIEVE, WRITE};
use crate::registry::Strategy;
use crate::state::Run;

/// One retrieval (the question as the query), one write.
#[derive(Debug, Clone, Default)]
pub struct Standard;

impl Strategy for Standard {
    const NAME: &'static str = "standard";
    const DESCRIPTION: &'static str = "one retrieval, one cited answer (the standard RAG baseline)";
    type Config = NoConfig;
    type State = ();

    fn new(_: NoConfig) -> Result<Self, String> {
        Ok(Standard)
    }

    fn state(&self) {}

    fn graph(&self) -> Graph<Run<()>> {
        Graph::new(RETRIEVE)
            .node(RETRIEVE, &[(READ, "")], |s| {
                Box::pin(nodes::retrieve(s, READ))
            })
            .node(READ, &[(WRITE, "")], |s| {
                Box::pin(nodes::read(s, Transition::Goto(WRITE)))
            })
            .node(WRITE, &[], |s| {
                Box::pin(nodes::write(s, Transition::done("answered")))
            })
    }
}
