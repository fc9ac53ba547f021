//! Strategies as plug-ins: the [`Strategy`] trait one file implements, its object-safe
//! twin [`DynStrategy`], and the [`Registry`] the agent, the CLI, the server and the
//! benchmark all ask for names, descriptions and graphs.
//!
//! Adding a strategy is a file under `strategies/` implementing [`Strategy`] and one line
//! in [`Registry::builtin`]; nothing else compares strategy names.

use crate::error::{Error, Result};
use crate::gateway::Gateway;
use crate::graph::{Budget, Graph};
use crate::state::Run;
use crate::trace::{EvidenceMode, Trace};
use crate::{AgentConfig, Passage};
use metarag_core::BoxFuture;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

/// A strategy's name, as the CLI, traces and benchmark records spell it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct StrategyId(String);

impl StrategyId {
    /// A name (not checked against a registry: [`Registry::get`] does that).
    pub fn new(name: impl Into<String>) -> Self {
        StrategyId(name.into().trim().to_string())
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for StrategyId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for StrategyId {
    fn from(s: &str) -> Self {
        StrategyId::new(s)
    }
}

impl PartialEq<&str> for StrategyId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

/// One strategy: its name, what it needs, its own configuration section, its own state,
/// and its graph over [`Run`]. Implemented once per file under `strategies/`.
pub trait Strategy: Send + Sync + Sized + 'static {
    /// The name on the command line and in traces.
    const NAME: &'static str;
    /// One line on what it does (and the paper it follows).
    const DESCRIPTION: &'static str;
    /// Whether it reads evidence (retrieved or given). `false` for closed-book answering.
    const NEEDS_EVIDENCE: bool = true;
    /// Whether it can stop before writing and return its context alone
    /// ([`Run::generate`] false).
    const CONTEXT_ONLY: bool = false;
    /// Its configuration section (`[strategies.NAME]` in the config file), with
    /// defaults for every field.
    type Config: DeserializeOwned + Serialize + Default + Clone + Send + Sync + 'static;
    /// Its part of the run state.
    type State: Send + 'static;

    /// The strategy with this configuration; the message names the field at fault.
    fn new(config: Self::Config) -> std::result::Result<Self, String>;

    /// A fresh state extension for one run.
    fn state(&self) -> Self::State;

    /// Continues from an earlier run's [`Trace::records`] (`mcts`: its tree, so a search
    /// stopped after k rollouts goes on to n without asking the model again for the nodes
    /// it expanded). Most strategies keep nothing to continue from.
    fn resume(
        &self,
        _state: &mut Self::State,
        _records: &serde_json::Value,
    ) -> std::result::Result<(), String> {
        Err(format!("strategy `{}` cannot resume a run", Self::NAME))
    }

    /// Its graph.
    fn graph(&self) -> Graph<Run<Self::State>>;
}

/// Object-safe view of a registered strategy.
pub trait DynStrategy: Send + Sync {
    /// See [`Strategy::NAME`].
    fn name(&self) -> &'static str;
    /// See [`Strategy::DESCRIPTION`].
    fn description(&self) -> &'static str;
    /// See [`Strategy::NEEDS_EVIDENCE`].
    fn needs_evidence(&self) -> bool;
    /// See [`Strategy::CONTEXT_ONLY`].
    fn context_only(&self) -> bool;
    /// The graph as a Mermaid flowchart.
    fn mermaid(&self) -> String;
    /// The strategy's configuration as JSON (for `metarag strategies --json`).
    fn config_json(&self) -> serde_json::Value;
    /// Runs the graph to its end and returns the trace.
    fn run<'a>(&'a self, setup: RunSetup, observer: Observer<'a>) -> BoxFuture<'a, Trace>;
    /// Whether [`Strategy::resume`] accepts these records (the run then resumes).
    fn check_resume(&self, records: &serde_json::Value) -> std::result::Result<(), String>;
}

impl std::fmt::Debug for dyn DynStrategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

pub use crate::graph::Observer;

/// What one run starts from.
pub struct RunSetup {
    /// The gateway (dependencies and accounting).
    pub gateway: Gateway,
    /// The agent's configuration.
    pub config: Arc<AgentConfig>,
    /// The budget the executor enforces between nodes.
    pub budget: Budget,
    /// The question.
    pub question: String,
    /// Gold paragraphs, if any.
    pub context: Option<Vec<Passage>>,
    /// Where evidence comes from.
    pub mode: EvidenceMode,
    /// An earlier run's records to continue from (checked by
    /// [`DynStrategy::check_resume`]).
    pub resume: Option<serde_json::Value>,
    /// Whether to write an answer (see [`Strategy::CONTEXT_ONLY`]).
    pub generate: bool,
}

/// A strategy with its graph built once.
struct Registered<S: Strategy> {
    strategy: S,
    config: S::Config,
    graph: Graph<Run<S::State>>,
}

impl<S: Strategy> DynStrategy for Registered<S> {
    fn name(&self) -> &'static str {
        S::NAME
    }
    fn description(&self) -> &'static str {
        S::DESCRIPTION
    }
    fn needs_evidence(&self) -> bool {
        S::NEEDS_EVIDENCE
    }
    fn context_only(&self) -> bool {
        S::CONTEXT_ONLY
    }
    fn mermaid(&self) -> String {
        self.graph.mermaid()
    }
    fn config_json(&self) -> serde_json::Value {
        serde_json::to_value(&self.config).unwrap_or(serde_json::Value::Null)
    }
    fn check_resume(&self, records: &serde_json::Value) -> std::result::Result<(), String> {
        self.strategy.resume(&mut self.strategy.state(), records)
    }
    fn run<'a>(&'a self, setup: RunSetup, observer: Observer<'a>) -> BoxFuture<'a, Trace> {
        Box::pin(async move {
            let mut state = self.strategy.state();
            if let Some(records) = &setup.resume {
                // Checked by the agent before the run; a failure here leaves a fresh run.
                let _ = self.strategy.resume(&mut state, records);
            }
            let mut run = Run::new(
                setup.gateway,
                setup.config,
                setup.question,
                setup.context,
                setup.mode,
                state,
            );
            run.generate = setup.generate;
            let g = self
                .graph
                .run_observed(&mut run, &setup.budget, observer)
                .await;
            run.into_trace(S::NAME, g)
        })
    }
}

/// Configuration sections of strategies, by strategy name: each is deserialised by its
/// own strategy into its [`Strategy::Config`].
pub type StrategySections = BTreeMap<String, serde_json::Value>;

/// The strategies an agent can run, by name.
#[derive(Default)]
pub struct Registry {
    strategies: BTreeMap<&'static str, Arc<dyn DynStrategy>>,
    order: Vec<&'static str>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(&self.order).finish()
    }
}

impl Registry {
    /// An empty registry (see [`Registry::builtin`] for metarag's own).
    pub fn new() -> Self {
        Self::default()
    }

    /// Every built-in strategy with its default configuration.
    pub fn builtin() -> Self {
        Self::builtin_with(&StrategySections::new()).expect("default strategy configs are valid")
    }

    /// Every built-in strategy, each configured from its section in `sections` (missing
    /// sections take the defaults). An unknown section name is an error.
    pub fn builtin_with(sections: &StrategySections) -> Result<Self> {
        use crate::strategies::*;
        let mut r = Registry::new();
        r.register::<Direct>(sections)?;
        r.register::<Standard>(sections)?;
        r.register::<Metarag>(sections)?;
        r.register::<Ircot>(sections)?;
        r.register::<SelfAsk>(sections)?;
        r.register::<React>(sections)?;
        r.register::<Flare>(sections)?;
        r.register::<Reflexion>(sections)?;
        r.register::<Critic>(sections)?;
        r.register::<Agentic>(sections)?;
        r.register::<Cot>(sections)?;
        r.register::<Mcts>(sections)?;
        r.register::<Router>(sections)?;
        if let Some(unknown) = sections
            .keys()
            .find(|k| !r.strategies.contains_key(k.as_str()))
        {
            return Err(Error::config(
                format!("strategies.{unknown}"),
                format!(
                    "no strategy of this name; registered: {}",
                    r.names().join(", ")
                ),
            ));
        }
        Ok(r)
    }

    /// Adds `S`, configured from its section of `sections` (defaults if absent).
    pub fn register<S: Strategy>(&mut self, sections: &StrategySections) -> Result<&mut Self> {
        let field = |e: String| Error::config(format!("strategies.{}", S::NAME), e);
        let config: S::Config = match sections.get(S::NAME) {
            None => S::Config::default(),
            Some(v) => serde_json::from_value(v.clone()).map_err(|e| field(e.to_string()))?,
        };
        let strategy = S::new(config.clone()).map_err(field)?;
        let graph = strategy.graph();
        graph
            .validate()
            .map_err(|e| Error::Request(format!("strategy `{}`: {e}", S::NAME)))?;
        if self.strategies.contains_key(S::NAME) {
            return Err(Error::Request(format!(
                "strategy `{}` is registered twice",
                S::NAME
            )));
        }
        self.order.push(S::NAME);
        self.strategies.insert(
            S::NAME,
            Arc::new(Registered {
                strategy,
                config,
                graph,
            }),
        );
        Ok(self)
    }

    /// The strategy of this name; the error lists the registered ones.
    pub fn get(&self, name: &str) -> Result<&Arc<dyn DynStrategy>> {
        self.strategies.get(name.trim()).ok_or_else(|| {
            Error::Request(format!(
                "unknown strategy `{name}`; registered: {}",
                self.names().join(", ")
            ))
        })
    }

    /// Names in registration order.
    pub fn names(&self) -> Vec<&'static str> {
        self.order.clone()
    }

    /// The strategies in registration order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn DynStrategy>> {
        self.order.iter().map(|n| &self.strategies[n])
    }

    /// Checks names against the registry, returning them as ids.
    pub fn parse_list<'a>(
        &self,
        names: impl IntoIterator<Item = &'a str>,
    ) -> Result<Vec<StrategyId>> {
        names
            .into_iter()
            .map(|n| self.get(n).map(|s| StrategyId::new(s.name())))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_registry_has_every_strategy_with_a_valid_graph() {
        let r = Registry::builtin();
        assert_eq!(
            r.names(),
            [
                "direct",
                "standard",
                "metarag",
                "ircot",
                "self-ask",
                "react",
                "flare",
                "reflexion",
                "critic",
                "agentic",
                "cot",
                "mcts",
                "router"
            ]
        );
        for s in r.iter() {
            assert!(s.mermaid().starts_with("flowchart TD"), "{}", s.name());
            assert!(!s.description().is_empty());
        }
        assert!(!r.get("direct").unwrap().needs_evidence());
        assert!(r.get("ircot").unwrap().needs_evidence());
        let err = r.get("nope").unwrap_err().to_string();
        assert!(
            err.contains("unknown strategy `nope`") && err.contains("self-ask"),
            "{err}"
        );
    }

    #[test]
    fn sections_configure_their_strategy_and_bad_ones_name_the_field() {
        let mut sections = StrategySections::new();
        sections.insert("ircot".into(), serde_json::json!({"max_steps": 2}));
        let r = Registry::builtin_with(&sections).unwrap();
        assert_eq!(r.get("ircot").unwrap().config_json()["max_steps"], 2);
        sections.insert("ircot".into(), serde_json::json!({"max_steps": "many"}));
        let err = Registry::builtin_with(&sections).unwrap_err().to_string();
        assert!(err.contains("strategies.ircot"), "{err}");
        let mut sections = StrategySections::new();
        sections.insert("irc0t".into(), serde_json::json!({}));
        let err = Registry::builtin_with(&sections).unwrap_err().to_string();
        assert!(err.contains("strategies.irc0t"), "{err}");
    }
}
