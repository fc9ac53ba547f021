//! `metarag context`: seed `002`'s router-only mode. Runs the `router` strategy without
//! its write node: classifies the question's intents, searches the memories they call for,
//! verifies the context and reformulates once if it fails, and prints the sources (plus
//! the audit memory's events for a temporal question) for a larger generator elsewhere.

use crate::app::App;
use crate::output::{print_json, truncate};
use anyhow::Result;
use clap::{Args as ClapArgs, ValueEnum};
use metarag_agent::strategies::router::ContextCheck;
use metarag_agent::{Agent, Ask, Trace};
use metarag_core::{Capabilities, ChatRequest, Completion, DynLlm, Fault, Llm};
use metarag_retrieve::{Memory, Route};
use serde_json::Value;
use std::process::ExitCode;
use std::sync::Arc;

/// Which classifier routes the question.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum RouterArg {
    /// The question's embedding against example phrases, then cue words (no model call).
    Embedding,
    /// The local chat model with a JSON schema, then cue words.
    Llm,
    /// Cue words alone.
    Rules,
}

impl RouterArg {
    /// The name `[strategies.router] classifier` takes.
    pub fn as_str(self) -> &'static str {
        match self {
            RouterArg::Embedding => "embedding",
            RouterArg::Llm => "llm",
            RouterArg::Rules => "rules",
        }
    }
}

/// Who rewrites a query whose context fails the check.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum ReformulateArg {
    /// The chat model.
    Llm,
    /// The question's missing terms and the names the best passages mention.
    Rules,
}

/// `metarag context`
#[derive(ClapArgs, Debug)]
pub struct Args {
    /// The question.
    pub question: String,
    /// Passages per search (default: `[strategies.router] top_k`).
    #[arg(long)]
    pub k: Option<usize>,
    /// The classifier (default: `[strategies.router] classifier`).
    #[arg(long, value_enum)]
    pub router: Option<RouterArg>,
    /// Who reformulates (default: `[strategies.router] reformulate_with`).
    #[arg(long, value_enum)]
    pub reformulate: Option<ReformulateArg>,
    /// Reformulations after a failed check (default: `[strategies.router]
    /// max_iterations`, 1).
    #[arg(long)]
    pub max_iterations: Option<usize>,
    /// The chat model (an installed name or a .gguf file), for the LLM classifier and
    /// reformulation.
    #[arg(long)]
    pub model: Option<String>,
}

/// The router section of the configuration with the command line's overrides.
fn router_section(app: &App, args: &Args) -> metarag_agent::StrategySections {
    let mut sections = app.config.raw.strategies.clone();
    let entry = sections
        .entry("router".to_string())
        .or_insert_with(|| serde_json::json!({}));
    if let Value::Object(m) = entry {
        if let Some(r) = args.router {
            m.insert("classifier".into(), r.as_str().into());
        }
        if let Some(r) = args.reformulate {
            let name = match r {
                ReformulateArg::Llm => "llm",
                ReformulateArg::Rules => "rules",
            };
            m.insert("reformulate_with".into(), name.into());
        }
        if let Some(n) = args.max_iterations {
            m.insert("max_iterations".into(), n.into());
        }
        if let Some(k) = args.k {
            m.insert("top_k".into(), k.into());
        }
    }
    sections
}

/// The chat model, loaded on its first call: `metarag context` needs it only to classify
/// with the LLM or to reformulate, so a context that passes its check never loads it, and
/// a machine with only the embedding model installed still gets its context.
struct LazyLlm {
    app: App,
    model: Option<String>,
    name: String,
    cell: tokio::sync::OnceCell<Arc<dyn DynLlm>>,
}

impl LazyLlm {
    fn new(app: &App, model: Option<String>) -> Self {
        let name = model
            .clone()
            .unwrap_or_else(|| app.config.raw.llm.model.clone());
        LazyLlm {
            app: app.clone(),
            model,
            name,
            cell: tokio::sync::OnceCell::new(),
        }
    }
}

impl Llm for LazyLlm {
    fn model_id(&self) -> &str {
        self.cell.get().map_or(&self.name, |l| Llm::model_id(l))
    }

    fn capabilities(&self) -> Capabilities {
        self.cell.get().map(Llm::capabilities).unwrap_or_default()
    }

    async fn chat(&self, request: &ChatRequest) -> metarag_core::Result<Completion> {
        let llm = self
            .cell
            .get_or_try_init(|| async {
                self.app
                    .llm(true, self.model.as_deref())
                    .await
                    .map(|h| h.llm)
            })
            .await
            .map_err(|e| {
                metarag_core::Error::backend(
                    "loading the chat model",
                    Fault::User,
                    Box::<dyn std::error::Error + Send + Sync>::from(format!("{e:#}")),
                )
            })?;
        llm.chat(request).await
    }

    async fn forget_context(&self) {
        // A model not loaded yet holds no context.
        if let Some(llm) = self.cell.get() {
            llm.forget_context().await;
        }
    }
}

/// Runs the router context-only and returns its trace.
pub async fn routed_context(app: &App, args: &Args) -> Result<Trace> {
    let registry = metarag_agent::Registry::builtin_with(&router_section(app, args))?;
    let (retriever, embedder) = app.retriever().await?;
    // The LLM reranker needs the local model itself, loaded now; otherwise the model loads
    // only if a node calls it.
    let (llm, local): (Arc<dyn DynLlm>, _) =
        if app.config.raw.rerank.backend == crate::config::RerankBackend::Llm {
            let handle = app.llm(true, args.model.as_deref()).await?;
            (handle.llm, handle.local)
        } else {
            (Arc::new(LazyLlm::new(app, args.model.clone())), None)
        };
    let mut builder = Agent::builder(llm)
        .config(app.config.raw.agent.clone())
        .registry(registry)
        .retriever(retriever)
        .embedder(embedder);
    if let Some(r) = app.reranker(local.as_ref())? {
        builder = builder.reranker(r);
    }
    let agent = builder.build()?;
    Ok(agent
        .ask(&Ask::new(args.question.clone(), "router").context_only())
        .await?)
}

/// The route a router trace recorded.
pub fn trace_route(trace: &Trace) -> Option<Route> {
    trace
        .records
        .get("route")
        .and_then(|v| serde_json::from_value(v.clone()).ok())
}

/// Routes, retrieves, verifies and prints the context.
pub async fn run(app: &App, args: Args) -> Result<ExitCode> {
    let trace = routed_context(app, &args).await?;
    let route = trace_route(&trace);
    let checks: Vec<ContextCheck> = trace
        .records
        .get("context_checks")
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default();
    // The audit memory for a temporal route: the document changes in the range the
    // question states (the latest ones when it states none).
    let audit = if route
        .as_ref()
        .is_some_and(|r| r.memories.contains(&Memory::Audit))
    {
        let (from, to) =
            metarag_retrieve::router::time_range(&args.question, crate::commands::audit::now())
                .unwrap_or((None, None));
        let query = metarag_core::AuditQuery {
            from,
            to,
            title: None,
            collections: trace.scope.collections.clone(),
            limit: 20,
        };
        match app.existing_store(false).await? {
            Some(opened) => metarag_core::StoreRead::audit_events(&opened.store, &query).await?,
            None => Vec::new(),
        }
    } else {
        Vec::new()
    };
    if app.json {
        print_json(&serde_json::json!({
            "question": args.question,
            "route": route,
            "checks": checks,
            "audit": audit,
            "sources": trace.sources,
            "retrievals": trace.retrievals,
            "usage": trace.usage,
            "stop": trace.stop,
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(route) = &route {
        let (intents, memories) = route.names();
        println!(
            "intents: {intents} ({:?}, {:.1} ms); memories: {memories}",
            route.source,
            route.micros as f64 / 1e3,
        );
    }
    for c in &checks {
        println!("context for {:?}: {}", c.query, c.summary());
    }
    if !audit.is_empty() {
        println!("\naudit memory:");
        for e in &audit {
            println!("  {}\t{}\t{}", e.at, e.kind, truncate(&e.title, 60));
        }
    }
    for s in &trace.sources {
        println!("\n[{}] {}", s.n, s.passage.title);
        println!("{}", truncate(&s.spans.join(" "), 600));
    }
    Ok(ExitCode::SUCCESS)
}
