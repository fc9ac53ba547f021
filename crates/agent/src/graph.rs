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

/// A node's name. Nodes are named by constants (`nodes::WRITE`), so a misspelt target
/// does not compile; the name is what traces and the printed graph show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub &'static str);

impl NodeId {
    /// The node's name.
    pub fn as_str(self) -> &'static str {
        self.0
    }
}

impl std::fmt::Display for NodeId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

/// What a node decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transition {
    /// Run this node next.
    Goto(NodeId),
    /// End the run.
    Stop(StopReason),
}

impl Transition {
    /// Ends the run as done, with why.
    pub fn done(why: impl Into<String>) -> Self {
        Transition::Stop(StopReason::Done(why.into()))
    }
}

/// Which limit of a [`Budget`] a run reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BudgetKind {
    /// [`Budget::max_steps`].
    MaxSteps,
    /// [`Budget::max_llm_calls`].
    MaxLlmCalls,
    /// [`Budget::max_tokens`].
    MaxTokens,
    /// [`Budget::deadline`] (the limit in milliseconds).
    Deadline,
}

/// A budget limit that was reached: which one, and its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(try_from = "BudgetRepr")]
pub struct BudgetLimit {
    /// Which limit.
    pub kind: BudgetKind,
    /// Its value (steps, calls, tokens, or milliseconds for the deadline).
    pub limit: u64,
}

/// Traces before version 2 wrote the limit as text ("max_llm_calls 40").
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
enum BudgetRepr {
    Typed { kind: BudgetKind, limit: u64 },
    Text(String),
}

impl TryFrom<BudgetRepr> for BudgetLimit {
    type Error = String;
    fn try_from(r: BudgetRepr) -> Result<Self, String> {
        match r {
            BudgetRepr::Typed { kind, limit } => Ok(BudgetLimit { kind, limit }),
            BudgetRepr::Text(t) => {
                let (name, value) = t.split_once(' ').unwrap_or((t.as_str(), "0"));
                let kind = match name {
                    "max_steps" => BudgetKind::MaxSteps,
                    "max_llm_calls" => BudgetKind::MaxLlmCalls,
                    "max_tokens" => BudgetKind::MaxTokens,
                    "deadline" => BudgetKind::Deadline,
                    other => return Err(format!("unknown budget limit `{other}`")),
                };
                // Old deadlines read "600s"; the new unit is milliseconds.
                let digits: String = value.chars().take_while(char::is_ascii_digit).collect();
                let n: u64 = digits.parse().unwrap_or(0);
                let limit = if kind == BudgetKind::Deadline {
                    n * 1000
                } else {
                    n
                };
                Ok(BudgetLimit { kind, limit })
            }
        }
    }
}

impl std::fmt::Display for BudgetLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.kind {
            BudgetKind::MaxSteps => write!(f, "max_steps {}", self.limit),
            BudgetKind::MaxLlmCalls => write!(f, "max_llm_calls {}", self.limit),
            BudgetKind::MaxTokens => write!(f, "max_tokens {}", self.limit),
            BudgetKind::Deadline => write!(f, "deadline {}s", self.limit as f64 / 1e3),
        }
    }
}

/// Why a run ended. New reasons may be added: match with a wildcard arm.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", tag = "kind", content = "detail")]
#[non_exhaustive]
pub enum StopReason {
    /// A node finished the work (e.g. the answer passed or converged).
    Done(String),
    /// A budget limit was reached (between nodes, or at a call inside one).
    Budget(BudgetLimit),
    /// A node failed; the message says how.
    Failed(String),
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StopReason::Done(m) => write!(f, "done: {m}"),
            StopReason::Budget(b) => write!(f, "budget: {b}"),
            StopReason::Failed(m) => write!(f, "failed: {m}"),
        }
    }
}

/// Why a node did not return a transition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeError {
    /// A call inside the node would have gone over the budget.
    Budget(BudgetLimit),
    /// The node failed.
    Failed(String),
}

impl From<BudgetLimit> for NodeError {
    fn from(b: BudgetLimit) -> Self {
        NodeError::Budget(b)
    }
}

impl From<String> for NodeError {
    fn from(m: String) -> Self {
        NodeError::Failed(m)
    }
}

impl From<&str> for NodeError {
    fn from(m: &str) -> Self {
        NodeError::Failed(m.to_string())
    }
}

/// What a node returns.
pub type NodeResult = Result<Transition, NodeError>;

/// Limits on one run. Every loop in a strategy is bounded by these. In `metarag.toml` this
/// is `[agent.budget]`, the deadline in whole seconds (`deadline_secs`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Budget {
    /// Most node visits.
    pub max_steps: usize,
    /// Most LLM calls.
    pub max_llm_calls: u64,
    /// Most prompt plus completion tokens.
    pub max_tokens: u64,
    /// Wall-clock limit.
    #[serde(rename = "deadline_secs", with = "whole_seconds")]
    #[schemars(rename = "deadline_secs", with = "u64")]
    pub deadline: Duration,
}

/// A duration as whole seconds: what a user writes in a config file.
mod whole_seconds {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_secs())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_secs)
    }
}

impl Budget {
    /// The first limit `spend` (after `steps` node visits and `elapsed` wall time) has
    /// reached, if any.
    pub fn exceeded(&self, spend: &Spend, steps: usize, elapsed: Duration) -> Option<BudgetLimit> {
        let hit = |kind, limit| Some(BudgetLimit { kind, limit });
        if steps >= self.max_steps {
            hit(BudgetKind::MaxSteps, self.max_steps as u64)
        } else if spend.llm_calls >= self.max_llm_calls {
            hit(BudgetKind::MaxLlmCalls, self.max_llm_calls)
        } else if spend.tokens >= self.max_tokens {
            hit(BudgetKind::MaxTokens, self.max_tokens)
        } else if elapsed >= self.deadline {
            hit(BudgetKind::Deadline, self.deadline.as_millis() as u64)
        } else {
            None
        }
    }
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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

/// What a run reports while it goes.
#[derive(Debug, Clone, Copy)]
pub enum Progress<'a> {
    /// A node is about to run.
    NodeStarted(&'a str),
    /// What the node that just started is doing, in a sentence for a person watching
    /// ("Expanding the search terms..."), for nodes that say.
    Doing(&'a str),
    /// A node finished: its timings, note, and the next node or the stop reason.
    NodeFinished(&'a TraceEvent),
}

/// Receives a run's [`Progress`] (the CLI's spinner, the server's SSE events).
pub type Observer<'a> = &'a (dyn Fn(Progress<'_>) + Send + Sync);

/// One node visit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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

type NodeFn<S> = Box<dyn for<'a> Fn(&'a mut S) -> BoxFuture<'a, NodeResult> + Send + Sync>;

struct NodeSpec<S> {
    run: NodeFn<S>,
    /// Declared successors with a label (the condition, for the printed graph).
    edges: Vec<(NodeId, &'static str)>,
    /// What the node is doing, in a sentence for a person watching, from the state it
    /// starts with ("Grading 10 passages...").
    doing: Option<DoingFn<S>>,
}

/// Describes a node's work from the state it starts with.
type DoingFn<S> = Box<dyn Fn(&S) -> String + Send + Sync>;

/// A typed state graph.
pub struct Graph<S> {
    start: NodeId,
    nodes: BTreeMap<NodeId, NodeSpec<S>>,
    order: Vec<NodeId>,
}

impl<S: GraphState> Graph<S> {
    /// An empty graph that starts at `start`.
    pub fn new(start: NodeId) -> Self {
        Graph {
            start,
            nodes: BTreeMap::new(),
            order: Vec::new(),
        }
    }

    /// Adds a node and the edges it may take (`(target, label)`).
    pub fn node<F>(mut self, name: NodeId, edges: &[(NodeId, &'static str)], run: F) -> Self
    where
        F: for<'a> Fn(&'a mut S) -> BoxFuture<'a, NodeResult> + Send + Sync + 'static,
    {
        self.order.push(name);
        self.nodes.insert(
            name,
            NodeSpec {
                run: Box::new(run),
                edges: edges.to_vec(),
                doing: None,
            },
        );
        self
    }

    /// Gives `name` a sentence for a person watching the run ("Grading 10 passages..."),
    /// told to the observer as [`Progress::Doing`] when the node starts. `name` must be a
    /// node already added.
    pub fn doing(
        mut self,
        name: NodeId,
        describe: impl Fn(&S) -> String + Send + Sync + 'static,
    ) -> Self {
        if let Some(spec) = self.nodes.get_mut(&name) {
            spec.doing = Some(Box::new(describe));
        }
        self
    }

    /// Checks that the start node and every edge target exist.
    pub fn validate(&self) -> Result<(), String> {
        if !self.nodes.contains_key(&self.start) {
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

    /// [`Graph::run`], telling `observer` as each node starts and finishes (the CLI's
    /// progress spinner, the server's SSE progress events).
    pub async fn run_observed(
        &self,
        state: &mut S,
        budget: &Budget,
        observer: Observer<'_>,
    ) -> GraphTrace {
        let started = Instant::now();
        let ms = |t: Instant| t.duration_since(started).as_secs_f64() * 1e3;
        let mut events = Vec::new();
        let mut current = self.start;
        let stop = loop {
            let before = state.spend();
            if let Some(limit) = budget.exceeded(&before, events.len(), started.elapsed()) {
                break StopReason::Budget(limit);
            }
            let Some(spec) = self.nodes.get(&current) else {
                break StopReason::Failed(format!("no node `{current}`"));
            };
            observer(Progress::NodeStarted(current.as_str()));
            if let Some(describe) = &spec.doing {
                observer(Progress::Doing(&describe(state)));
            }
            let node_started = Instant::now();
            let span = tracing::info_span!("node", name = current.as_str());
            let outcome = tracing::Instrument::instrument((spec.run)(state), span).await;
            let after = state.spend();
            let transition = match outcome {
                Ok(Transition::Goto(next)) if !spec.edges.iter().any(|(t, _)| *t == next) => {
                    Transition::Stop(StopReason::Failed(format!(
                        "node `{current}` went to `{next}`, which is not one of its edges"
                    )))
                }
                Ok(t) => t,
                Err(NodeError::Budget(limit)) => Transition::Stop(StopReason::Budget(limit)),
                Err(NodeError::Failed(e)) => {
                    Transition::Stop(StopReason::Failed(format!("{current}: {e}")))
                }
            };
            let event = TraceEvent {
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
            };
            observer(Progress::NodeFinished(&event));
            events.push(event);
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

    const WORK: NodeId = NodeId("work");
    const CHECK: NodeId = NodeId("check");

    fn looping(stop_at: u32) -> Graph<Counter> {
        Graph::new(WORK)
            .node(WORK, &[(CHECK, "")], |s: &mut Counter| {
                Box::pin(async move {
                    s.n += 1;
                    s.calls += 1;
                    Ok(Transition::Goto(CHECK))
                })
            })
            .node(CHECK, &[(WORK, "n < limit")], move |s: &mut Counter| {
                Box::pin(async move {
                    if s.n >= stop_at {
                        Ok(Transition::Stop(StopReason::Done("limit reached".into())))
                    } else {
                        Ok(Transition::Goto(WORK))
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
        assert_eq!(
            trace.stop,
            StopReason::Budget(BudgetLimit {
                kind: BudgetKind::MaxLlmCalls,
                limit: 5
            })
        );
        assert_eq!(s.calls, 5);
        let budget = Budget {
            max_steps: 7,
            ..Budget::default()
        };
        let trace = g.run(&mut Counter::default(), &budget).await;
        assert_eq!(trace.stop.to_string(), "budget: max_steps 7");
        assert_eq!(trace.events.len(), 7);
    }

    #[tokio::test]
    async fn undeclared_transitions_and_node_errors_stop_the_run() {
        let (a, b, c) = (NodeId("a"), NodeId("b"), NodeId("c"));
        let g: Graph<Counter> = Graph::new(a)
            .node(a, &[(b, "")], move |_s: &mut Counter| {
                Box::pin(async move { Ok(Transition::Goto(c)) })
            })
            .node(b, &[], |_s: &mut Counter| {
                Box::pin(async { Err("boom".into()) })
            })
            .node(c, &[], |_s: &mut Counter| {
                Box::pin(async { Ok(Transition::done("")) })
            });
        let trace = g.run(&mut Counter::default(), &Budget::default()).await;
        assert!(matches!(&trace.stop, StopReason::Failed(m) if m.contains("not one of its edges")));
        let g: Graph<Counter> = Graph::new(b).node(b, &[], |_s: &mut Counter| {
            Box::pin(async { Err("boom".into()) })
        });
        let trace = g.run(&mut Counter::default(), &Budget::default()).await;
        assert_eq!(trace.stop, StopReason::Failed("b: boom".into()));
        // A budget reached inside a node (at a call) ends the run with a typed reason.
        let limit = BudgetLimit {
            kind: BudgetKind::MaxTokens,
            limit: 9,
        };
        let g: Graph<Counter> = Graph::new(b).node(b, &[], move |_s: &mut Counter| {
            Box::pin(async move { Err(NodeError::Budget(limit)) })
        });
        let trace = g.run(&mut Counter::default(), &Budget::default()).await;
        assert_eq!(trace.stop, StopReason::Budget(limit));
    }

    #[test]
    fn budget_reasons_read_old_traces_and_round_trip() {
        let old: StopReason =
            serde_json::from_str(r#"{"kind":"budget","detail":"max_llm_calls 40"}"#).unwrap();
        assert_eq!(
            old,
            StopReason::Budget(BudgetLimit {
                kind: BudgetKind::MaxLlmCalls,
                limit: 40
            })
        );
        let old: StopReason =
            serde_json::from_str(r#"{"kind":"budget","detail":"deadline 600s"}"#).unwrap();
        assert_eq!(old.to_string(), "budget: deadline 600s");
        let json = serde_json::to_string(&old).unwrap();
        assert_eq!(serde_json::from_str::<StopReason>(&json).unwrap(), old);
    }

    #[test]
    fn the_graph_prints_as_mermaid_and_validates_edges() {
        let m = looping(1).mermaid();
        assert_eq!(
            m,
            "flowchart TD\n    start((start)) --> work\n    work --> check\n    check -->|n < limit| work\n"
        );
        let (a, z) = (NodeId("a"), NodeId("zzz"));
        let bad: Graph<Counter> = Graph::new(a).node(a, &[(z, "")], move |_s: &mut Counter| {
            Box::pin(async move { Ok(Transition::Goto(z)) })
        });
        assert!(bad.validate().unwrap_err().contains("zzz"));
    }
}
