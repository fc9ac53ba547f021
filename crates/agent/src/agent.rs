//! The [`Agent`]: runs any registered strategy over an LLM, named retrievers and a
//! reranker, and returns the run's [`Trace`].

use crate::config::AgentConfig;
use crate::error::{Error, Result};
use crate::evidence::Passage;
use crate::gateway::{DEFAULT_RETRIEVER, Deps, Gateway, TokenTap};
use crate::graph::Observer;
use crate::registry::{DynStrategy, Registry, RunSetup, StrategyId};
use crate::trace::{EvidenceMode, Trace};
use metarag_core::{DynEmbedder, DynLlm, DynReranker, DynRetriever, Llm};
use std::collections::BTreeMap;
use std::sync::Arc;

/// What to answer.
#[derive(Clone)]
pub struct Ask {
    /// The question.
    pub question: String,
    /// The strategy, by its registered name.
    pub strategy: StrategyId,
    /// Gold context paragraphs: when set, they are the only sources and nothing is
    /// retrieved.
    pub context: Option<Vec<Passage>>,
    /// Receives generated text as the model writes it (see [`TokenTap`]).
    pub tap: Option<TokenTap>,
    /// An earlier run's [`Trace::records`](crate::Trace::records) to continue from
    /// (`mcts`: its tree).
    pub resume: Option<serde_json::Value>,
    /// Whether to write an answer; `false` returns the verified context only (for
    /// strategies that support it: [`DynStrategy::context_only`]).
    pub generate: bool,
    /// The documents the run may read (empty: the whole index); see [`Ask::with_scope`].
    pub scope: metarag_core::Filter,
}

impl std::fmt::Debug for Ask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ask")
            .field("question", &self.question)
            .field("strategy", &self.strategy)
            .field("context", &self.context)
            .field("tap", &self.tap.is_some())
            .field("resume", &self.resume.is_some())
            .field("generate", &self.generate)
            .field("scope", &self.scope)
            .finish()
    }
}

impl Ask {
    /// A question for a strategy, retrieving from the index.
    pub fn new(question: impl Into<String>, strategy: impl Into<StrategyId>) -> Self {
        Ask {
            question: question.into(),
            strategy: strategy.into(),
            context: None,
            tap: None,
            resume: None,
            generate: true,
            scope: metarag_core::Filter::default(),
        }
    }

    /// Limits the run to the documents `scope` matches (a team's, a date range, a set of
    /// ids): every search of every strategy is narrowed by it, including the unfiltered
    /// retries strategies make when their own filters find too little.
    pub fn with_scope(mut self, scope: metarag_core::Filter) -> Self {
        self.scope = scope;
        self
    }

    /// Stops before writing: the trace carries the route, the searches and the numbered
    /// sources, with no answer (seed `002`'s router-only mode, for a larger generator
    /// elsewhere).
    pub fn context_only(mut self) -> Self {
        self.generate = false;
        self
    }

    /// Continues from an earlier run's records (see [`Strategy::resume`](crate::Strategy::resume)).
    pub fn with_resume(mut self, records: serde_json::Value) -> Self {
        self.resume = Some(records);
        self
    }

    /// Streams the text of the run's model calls to `tap` as it is generated.
    pub fn with_tap(mut self, tap: TokenTap) -> Self {
        self.tap = Some(tap);
        self
    }

    /// Uses these paragraphs as the only sources.
    pub fn with_context(mut self, paragraphs: Vec<Passage>) -> Self {
        self.context = Some(paragraphs);
        self
    }
}

/// Builds an [`Agent`].
pub struct AgentBuilder {
    llm: Arc<dyn DynLlm>,
    retrievers: BTreeMap<String, Arc<dyn DynRetriever>>,
    reranker: Option<Arc<dyn DynReranker>>,
    embedder: Option<Arc<dyn DynEmbedder>>,
    config: AgentConfig,
    registry: Option<Registry>,
    roles: crate::roles::Roles,
}

impl AgentBuilder {
    /// The retriever strategies search by default (not needed for gold context or
    /// closed-book strategies).
    pub fn retriever(self, retriever: Arc<dyn DynRetriever>) -> Self {
        self.named_retriever(DEFAULT_RETRIEVER, retriever)
    }

    /// A further retriever under a name (a strategy that routes between memories picks
    /// it by that name).
    pub fn named_retriever(
        mut self,
        name: impl Into<String>,
        retriever: Arc<dyn DynRetriever>,
    ) -> Self {
        self.retrievers.insert(name.into(), retriever);
        self
    }

    /// A reranker for routes that rerank (without one, reranking is skipped and the trace
    /// says so).
    pub fn reranker(mut self, reranker: Arc<dyn DynReranker>) -> Self {
        self.reranker = Some(reranker);
        self
    }

    /// The embedding model, for strategies that classify the query by its embedding (the
    /// `router` strategy's default classifier).
    pub fn embedder(mut self, embedder: Arc<dyn DynEmbedder>) -> Self {
        self.embedder = Some(embedder);
        self
    }

    /// Thresholds and limits.
    pub fn config(mut self, config: AgentConfig) -> Self {
        self.config = config;
        self
    }

    /// The strategies the agent can run ([`Registry::builtin`] unless set).
    pub fn registry(mut self, registry: Registry) -> Self {
        self.registry = Some(registry);
        self
    }

    /// Gives `role` its own model and settings: every call whose purpose plays that role
    /// ([`Role::of`](crate::Role::of)) goes there. Unset roles use the default model.
    pub fn role(mut self, role: crate::Role, model: crate::RoleModel) -> Self {
        self.roles.insert(role, model);
        self
    }

    /// Validates the configuration and builds the agent.
    pub fn build(self) -> Result<Agent> {
        self.config.validate()?;
        for (role, model) in &self.roles {
            model.check().map_err(|reason| Error::Config {
                field: format!("roles.{role}"),
                reason,
            })?;
        }
        Ok(Agent {
            deps: Arc::new(Deps {
                retrievers: self.retrievers,
                reranker: self.reranker,
                embedder: self.embedder,
                roles: self.roles,
                ..Deps::new(self.llm)
            }),
            config: Arc::new(self.config),
            registry: Arc::new(self.registry.unwrap_or_else(Registry::builtin)),
        })
    }
}

/// Runs strategies over an LLM and, optionally, retrievers and a reranker.
#[derive(Clone)]
pub struct Agent {
    deps: Arc<Deps>,
    config: Arc<AgentConfig>,
    registry: Arc<Registry>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("deps", &self.deps)
            .field("registry", &self.registry)
            .finish()
    }
}

impl Agent {
    /// A builder over this LLM.
    pub fn builder(llm: Arc<dyn DynLlm>) -> AgentBuilder {
        AgentBuilder {
            llm,
            retrievers: BTreeMap::new(),
            reranker: None,
            embedder: None,
            config: AgentConfig::default(),
            registry: None,
            roles: crate::roles::Roles::new(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &AgentConfig {
        &self.config
    }

    /// The strategies this agent runs.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The model's name.
    pub fn model_id(&self) -> &str {
        Llm::model_id(&self.deps.llm)
    }

    /// Makes the model, and every role's own model, forget what it kept from earlier calls
    /// ([`Llm::forget_context`]), so that the next question is timed as if it were the first.
    /// A model shared by several roles (or with the default) is told once.
    pub async fn forget_context(&self) {
        Llm::forget_context(&self.deps.llm).await;
        // Compared by address (a `usize` keeps the future `Send`).
        let addr = |llm: &Arc<dyn DynLlm>| Arc::as_ptr(llm).cast::<()>() as usize;
        let mut told = vec![addr(&self.deps.llm)];
        for role in self.deps.roles.values() {
            if let Some(llm) = &role.llm
                && !told.contains(&addr(llm))
            {
                told.push(addr(llm));
                Llm::forget_context(llm).await;
            }
        }
    }

    /// Answers a question.
    pub async fn ask(&self, ask: &Ask) -> Result<Trace> {
        self.ask_observed(ask, &|_| {}).await
    }

    /// Answers a question, telling `observer` as each node starts and finishes.
    pub async fn ask_observed(&self, ask: &Ask, observer: Observer<'_>) -> Result<Trace> {
        let strategy: &Arc<dyn DynStrategy> = self.registry.get(ask.strategy.as_str())?;
        let question = ask.question.trim();
        if question.is_empty() {
            return Err(Error::Request("the question is empty".into()));
        }
        let has_index = !self.deps.retrievers.is_empty();
        let mode = match (&ask.context, strategy.needs_evidence()) {
            (_, false) => EvidenceMode::ClosedBook,
            (Some(_), true) => EvidenceMode::Context,
            (None, true) if has_index => EvidenceMode::Retrieval,
            (None, true) => {
                return Err(Error::Request(format!(
                    "strategy `{}` needs an index to search, or context paragraphs",
                    strategy.name()
                )));
            }
        };
        if let Some(ctx) = &ask.context
            && ctx.is_empty()
        {
            return Err(Error::Request("the context has no paragraphs".into()));
        }
        if let Some(records) = &ask.resume {
            strategy.check_resume(records).map_err(Error::Request)?;
        }
        ask.scope
            .validate()
            .map_err(|e| Error::Request(e.to_string()))?;
        if !ask.generate && !strategy.context_only() {
            let able: Vec<&str> = self
                .registry
                .iter()
                .filter(|s| s.context_only())
                .map(|s| s.name())
                .collect();
            return Err(Error::Request(format!(
                "strategy `{}` always writes an answer; context without one comes from: {}",
                strategy.name(),
                able.join(", ")
            )));
        }
        let setup = RunSetup {
            gateway: Gateway::new(self.deps.clone(), self.config.budget.clone())
                .with_tap(ask.tap.clone())
                .with_scope(ask.scope.clone()),
            config: self.config.clone(),
            budget: self.config.budget.clone(),
            question: question.to_string(),
            context: ask.context.clone(),
            mode,
            resume: ask.resume.clone(),
            generate: ask.generate,
        };
        Ok(strategy.run(setup, observer).await)
    }
}
