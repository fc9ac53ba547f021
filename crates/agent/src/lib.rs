//! # metarag-agent
//!
//! The agent layer: strategies that answer questions over an LLM and retrievers, each a
//! typed state graph ([`graph`]) whose nodes are async functions of a run's state
//! ([`Run`]: a shared part plus the strategy's own) returning the next node or a stop
//! reason, whose edges are data (so a graph prints as Mermaid), and whose every model
//! call and search passes through one [`Gateway`] that enforces the run's [`Budget`].
//! Every run produces one serializable [`Trace`].
//!
//! Strategies are plug-ins ([`registry`]): a type implementing [`Strategy`] in its own
//! file under `strategies/`, registered by one line. Built in: `direct` (closed-book),
//! `standard` (one retrieve, one write), `metarag` (seed `000`, after Yao et al. 2024:
//! plan -> retrieve -> read -> write -> verify -> monitor -> converge -> diagnose ->
//! remediate -> write again), and the baselines of the MetaRAG paper's table: `ircot`,
//! `self-ask`, `react`, `flare` and `reflexion`; seed `001`'s `critic`, seed `003`'s
//! `agentic`, and seed `004`'s linear planner `cot` over an explicit reasoning memory
//! ([`reasoning`]). Verdicts about an answer are decided in
//! code from structured model output ([`verify`], [`metacog`]), because small models
//! cannot grade themselves.

mod agent;
pub mod config;
pub mod error;
pub mod evidence;
pub mod gateway;
pub mod graph;
pub mod injection;
pub mod metacog;
pub mod monitor;
pub mod nodes;
pub mod program;
pub mod prompts;
pub mod reasoning;
pub mod registry;
pub mod roles;
pub mod router;
pub mod state;
pub mod strategies;
pub mod text;
pub mod trace;
pub mod verify;

pub use agent::{Agent, AgentBuilder, Ask};
pub use config::{Abstain, AgentConfig, Complexity, RouteConfig};
pub use error::{Error, Result};
pub use evidence::{Passage, Source};
pub use gateway::{DEFAULT_RETRIEVER, Gateway, Generated, TokenTap};
pub use graph::{
    Budget, BudgetKind, BudgetLimit, Graph, GraphState, GraphTrace, NodeError, NodeId, NodeResult,
    Observer, Progress, Spend, StopReason, TraceEvent, Transition,
};
pub use metacog::{Category, Diagnosis, DiagnosisMethod, ErrorType};
pub use monitor::{AnswerForm, MonitorModel, Signals};
pub use nodes::classify;
pub use registry::{DynStrategy, Registry, Strategy, StrategyId, StrategySections};
pub use roles::{Role, RoleModel, Roles};
pub use state::Run;
pub use trace::{
    ABSTAINED_ANSWER, ABSTAINED_SHORT, AbstainedBy, Abstention, EvidenceMode, Round, Step,
    StepKind, Trace,
};
