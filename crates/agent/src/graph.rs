//! A small typed state-graph executor.
//!
//! A [`Graph`] is a set of named nodes over a state type `S`, each an async function of the
//! state that returns the next node or a stop reason, plus the edges each node may take,
//! declared as data. The executor checks every transition against the declared edges (so
//! the printed graph is the truth about what can run), bounds the run with a [`Budget`],
//! and records one [`TraceEvent`] per node visit.

use metarag_core::BoxFuture;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// What a node decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transition {
    /// Run this node next.
    Goto(&'static str),
    /// End the run.
    Stop(StopReason),
}

/// Why a run ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "detail")]
pub enum StopReason {
    /// A node finished the work (e.g. the answer passed or converged).
    Done(String),
    /// The budget ran out: which limit.
    Budget(String),
    /// A node failed; the message says how.
    Failed(String),
}

/// Limits on one run. Every loop in a strategy is bounded by these.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Budget {
    /// Most node visits.
    pub max_steps: usize,
    /// Most LLM calls.
    pub max_llm_calls: u64,
    /// Most prompt plus completion tokens.
    pub max_tokens: u64,
    /// Wall-clock limit.
    pub deadline: Duration,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            max_steps: 64,
            max_llm_calls: 40,
            max_tokens: 200_000,
            deadline: Duration::from_secs(600),
        }
    }
}

/// What a node used, as its state reports it (the executor cannot see inside the node).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Spend {
    /// LLM calls so far in the run.
    pub llm_calls: u64,
    /// Tokens so far in the run.
    pub tokens: u64,
    /// Milliseconds spent inside model calls and searches so far (the rest of the wall
    /// time is orchestration overhead).
    pub model_ms: f64,
}

/// State a graph runs over: it reports what the run has spent so far.
pub trait GraphState: Send {
    /// Calls, tokens and model time so far.
    fn spend(&self) -> Spend;

    /// A one-line summary of what the node that just ran did (its inputs and outputs),
    /// taken by the executor into that node's trace event.
    fn take_note(&mut self) -> Option<String> {
        None
    }
}

/// One node visit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceEvent {
    /// The node.
    pub node: String,
    /// Milliseconds from the start of the run.
    pub start_ms: f64,
    /// Duration of the visit.
    pub elapsed_ms: f64,
    /// LLM calls made during the visit.
    pub llm_calls: u64,
    /// Tokens used during the visit.
    pub tokens: u64,
    /// What the node did, in one line (inputs and outputs), when the state says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The node that ran next, if any.
    pub next: Option<String>,
    /// Why the run stopped here, if it did.
    pub stop: Option<StopReason>,
}

/// The record of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GraphTrace {
    /// Node visits in order.
    pub events: Vec<TraceEvent>,
    /// Why the run ended.
    pub stop: StopReason,
    /// Wall time of the run, milliseconds.
    pub wall_ms: f64,
    /// Wall time outside model calls and searches, milliseconds.
    pub overhead_ms: f64,
}

type NodeFn<S> =
    Box<dyn for<'a> Fn(&'a mut S) -> BoxFuture<'a, Result<Transition, String>> + Send + Sync>;

struct NodeSpec<S> {
    run: NodeFn<S>,
    /// Declared successors with a label (the condition, for the printed graph).
    edges: Vec<(&'static str, &'static str)>,
}

/// A typed state graph.
pub struct Graph<S> {
    start: &'static str,
    nodes: BTreeMap<&'static str, NodeSpec<S>>,
    order: Vec<&'static str>,
}

impl<S: GraphState> Graph<S> {
    /// An empty graph that starts at `start`.
    pub fn new(start: &'static str) -> Self {
        Graph {
            start,
            nodes: BTreeMap::new(),
            order: Vec::new(),
        }
    }

    /// Adds a node and the edges it may take (`(target, label)`).
    pub fn node<F>(
        mut self,
        name: &'static str,
        edges: &[(&'static str, &'static str)],
        run: F,
    ) -> Self
    where
        F: for<'a> Fn(&'a mut S) -> BoxFuture<'a, Result<Transition, String>>
            + Send
            + Sync
            + 'static,
    {
        self.order.push(name);
        self.nodes.insert(
            name,
            NodeSpec {
                run: Box::new(run),
                edges: edges.to_vec(),
            },
        );
        self
    }

    /// Checks that the start node and every edge target exist.
    pub fn validate(&self) -> Result<(), String> {
        if !self.nodes.contains_key(self.start) {
            return Err(format!("start node `{}` is not defined", self.start));
        }
        for (name, spec) in &self.nodes {
            for (target, _) in &spec.edges {
                if !self.nodes.contains_key(target) {
                    return Err(format!("node `{name}` has an edge to undefined `{target}`"));
                }
            }
        }
        Ok(())
    }

    /// The graph as a Mermaid flowchart.
    pub fn mermaid(&self) -> String {
        let mut out = String::from("flowchart TD\n");
        out.push_str(&format!("    start((start)) --> {}\n", self.start));
        for name in &self.order {
            for (target, label) in &self.nodes[name].edges {
                if label.is_empty() {
                    out.push_str(&format!("    {name} --> {target}\n"));
                } else {
                    out.push_str(&format!("    {name} -->|{label}| {target}\n"));
                }
            }
        }
        out
    }

    /// Runs the graph from its start node until a node stops, a node fails, a transition
    /// leaves the declared edges, or the budget runs out.
    pub async fn run(&self, state: &mut S, budget: &Budget) -> GraphTrace {
        self.run_observed(state, budget, &|_| {}).await
    }

    /// [`Graph::run`], calling `observer` with each node's name before the node runs (the
    /// CLI's progress spinner, the server's SSE progress events).
    pub async fn run_observed(
        &self,
        state: &mut S,
        budget: &Budget,
        observer: &(dyn Fn(&str) + Send + Sync),
    ) -> GraphTrace {
        let started = Instant::now();
        let ms = |t: Instant| t.duration_since(started).as_secs_f64() * 1e3;
        let mut events = Vec::new();
        let mut current = self.start;
        let stop = loop {
            let before = state.spend();
            if let Some(limit) = exceeded(budget, &before, events.len(), started.elapsed()) {
                break StopReason::Budget(limit);
            }
            let Some(spec) = self.nodes.get(current) else {
                break StopReason::Failed(format!("no node `{current}`"));
            };
            observer(current);
            let node_started = Instant::now();
            let span = tracing::info_span!("node", name = current);
            let outcome = tracing::Instrument::instrument((spec.run)(state), span).await;
            let after = state.spend();
            let transition = match outcome {
                Ok(Transition::Goto(next)) if !spec.edges.iter().any(|(t, _)| *t == next) => {
                    Transition::Stop(StopReason::Failed(format!(
                        "node `{current}` went to `{next}`, which is not one of its edges"
                    )))
                }
                Ok(t) => t,
                Err(e) => Transition::Stop(StopReason::Failed(format!("{current}: {e}"))),
            };
            events.push(TraceEvent {
                node: current.to_string(),
                start_ms: ms(node_started),
                elapsed_ms: node_started.elapsed().as_secs_f64() * 1e3,
                llm_calls: after.llm_calls - before.llm_calls,
                tokens: after.tokens - before.tokens,
                note: state.take_note(),
                next: match &transition {
                    Transition::Goto(n) => Some(n.to_string()),
                    Transition::Stop(_) => None,
                },
                stop: match &transition {
                    Transition::Stop(r) => Some(r.clone()),
                    Transition::Goto(_) => None,
                },
            });
            match transition {
                Transition::Goto(next) => current = next,
                Transition::Stop(reason) => break reason,
            }
        };
        let wall_ms = ms(Instant::now());
        GraphTrace {
            events,
            stop,
            wall_ms,
            overhead_ms: (wall_ms - state.spend().model_ms).max(0.0),
        }
    }
}

fn exceeded(budget: &Budget, spend: &Spend, steps: usize, elapsed: Duration) -> Option<String> {
    if steps >= budget.max_steps {
        Some(format!("max_steps {}", budget.max_steps))
    } else if spend.llm_calls >= budget.max_llm_calls {
        Some(format!("max_llm_calls {}", budget.max_llm_calls))
    } else if spend.tokens >= budget.max_tokens {
        Some(format!("max_tokens {}", budget.max_tokens))
    } else if elapsed >= budget.deadline {
        Some(format!("deadline {:?}", budget.deadline))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Counter {
        n: u32,
        calls: u64,
    }

    impl GraphState for Counter {
        fn spend(&self) -> Spend {
            Spend {
                llm_calls: self.calls,
                tokens: self.calls * 10,
                model_ms: 0.0,
            }
        }
    }

    fn looping(stop_at: u32) -> Graph<Counter> {
        Graph::new("work")
            .node("work", &[("check", "")], |s: &mut Counter| {
                Box::pin(async move {
                    s.n += 1;
                    s.calls += 1;
                    Ok(Transition::Goto("check"))
                })
            })
            .node("check", &[("work", "n < limit")], move |s: &mut Counter| {
                Box::pin(async move {
                    if s.n >= stop_at {
                        Ok(Transition::Stop(StopReason::Done("limit reached".into())))
                    } else {
                        Ok(Transition::Goto("work"))
                    }
                })
            })
    }

    #[tokio::test]
    async fn runs_until_a_node_stops_and_traces_every_visit() {
        let g = looping(3);
        g.validate().unwrap();
        let mut s = Counter::default();
        let trace = g.run(&mut s, &Budget::default()).await;
        assert_eq!(trace.stop, StopReason::Done("limit reached".into()));
        let nodes: Vec<_> = trace.events.iter().map(|e| e.node.as_str()).collect();
        assert_eq!(nodes, ["work", "check", "work", "check", "work", "check"]);
        assert_eq!(trace.events[0].llm_calls, 1);
        assert_eq!(trace.events[1].llm_calls, 0);
        assert_eq!(trace.events[0].next.as_deref(), Some("check"));
        // The trace is what the CLI, server and benchmark read: it round-trips as JSON.
        let json = serde_json::to_string(&trace).unwrap();
        let back: GraphTrace = serde_json::from_str(&json).unwrap();
        assert_eq!(back.stop, trace.stop);
        assert_eq!(back.events.len(), trace.events.len());
        assert_eq!(back.events[5].stop, trace.events[5].stop);
    }

    #[tokio::test]
    async fn the_budget_stops_a_runaway_loop() {
        let g = looping(u32::MAX);
        let mut s = Counter::default();
        let budget = Budget {
            max_llm_calls: 5,
            ..Budget::default()
        };
        let trace = g.run(&mut s, &budget).await;
        assert_eq!(trace.stop, StopReason::Budget("max_llm_calls 5".into()));
        assert_eq!(s.calls, 5);
        let budget = Budget {
            max_steps: 7,
            ..Budget::default()
        };
        let trace = g.run(&mut Counter::default(), &budget).await;
        assert_eq!(trace.stop, StopReason::Budget("max_steps 7".into()));
        assert_eq!(trace.events.len(), 7);
    }

    #[tokio::test]
    async fn undeclared_transitions_and_node_errors_stop_the_run() {
        let g: Graph<Counter> = Graph::new("a")
            .node("a", &[("b", "")], |_s: &mut Counter| {
                Box::pin(async { Ok(Transition::Goto("c")) })
            })
            .node("b", &[], |_s: &mut Counter| {
                Box::pin(async { Err("boom".to_string()) })
            })
            .node("c", &[], |_s: &mut Counter| {
                Box::pin(async { Ok(Transition::Stop(StopReason::Done(String::new()))) })
            });
        let trace = g.run(&mut Counter::default(), &Budget::default()).await;
        assert!(matches!(&trace.stop, StopReason::Failed(m) if m.contains("not one of its edges")));
        let g: Graph<Counter> = Graph::new("b").node("b", &[], |_s: &mut Counter| {
            Box::pin(async { Err("boom".to_string()) })
        });
        let trace = g.run(&mut Counter::default(), &Budget::default()).await;
        assert_eq!(trace.stop, StopReason::Failed("b: boom".into()));
    }

    #[test]
    fn the_graph_prints_as_mermaid_and_validates_edges() {
        let m = looping(1).mermaid();
        assert_eq!(
            m,
            "flowchart TD\n    start((start)) --> work\n    work --> check\n    check -->|n < limit| work\n"
        );
        let bad: Graph<Counter> = Graph::new("a").node("a", &[("zzz", "")], |_s: &mut Counter| {
            Box::pin(async { Ok(Transition::Goto("zzz")) })
        });
        assert!(bad.validate().unwrap_err().contains("zzz"));
    }
}
