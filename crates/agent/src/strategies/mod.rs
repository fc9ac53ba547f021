//! The registered strategies, one file each (see [`crate::registry`]). Each file holds
//! the strategy's type, its configuration section, its state extension, its graph and
//! the nodes only it uses.

pub mod agentic;
pub mod cot;
pub mod critic;
mod direct;
mod flare;
mod ircot;
mod mcts;
mod metarag;
mod react;
mod reflexion;
pub mod router;
mod self_ask;
mod standard;

pub use agentic::{Agentic, AgenticConfig};
pub use cot::{Cot, CotConfig};
pub use critic::{Critic, CriticConfig};
pub use direct::Direct;
pub use flare::{Flare, FlareConfig};
pub use ircot::{Ircot, IrcotConfig};
pub use mcts::{Mcts, MctsConfig, NodeKind, TreeNode, best_node, check_tree};
pub use metarag::{Metarag, MetaragConfig, PROGRAM_RESOLVED};
pub use react::{React, ReactConfig};
pub use reflexion::{Reflexion, ReflexionConfig};
pub use router::{Router, RouterConfig};
pub use self_ask::{SelfAsk, SelfAskConfig};
pub use standard::Standard;

/// The empty configuration section of a strategy with nothing to configure.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoConfig {}
