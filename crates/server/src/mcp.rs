//! The Model Context Protocol surface: the tools `search`, `ask`, `context`, `ingest`,
//! `list_documents` and `get_document` over the same [`Service`] as the REST API, served
//! over stdio (`metarag mcp`) and streamable HTTP (`/mcp` beside `/v1`).
//!
//! A tool that fails on its input answers a result marked `isError` carrying the same
//! `{"error": {"code", "message"}}` body as the REST API, so the calling model reads why;
//! protocol errors (an unknown tool, arguments that do not match the schema) are rmcp's.

use crate::api::{
    AskBody, ContextBody, GraphBody, IngestRecords, SearchBody, Service, records_upload,
};
use crate::auth::{Access, KeyScope};
use crate::error::Error;
use base64::Engine as _;
use metarag_eval::runs::Surface;
use metarag_ingest::{CorpusMode, Upload};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ServerCapabilities, ServerConfig};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, tool, tool_handler, tool_router};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Arguments of the `ingest` tool.
#[derive(Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct IngestArgs {
    /// Files by name (the extension picks the parser: .md, .txt, .html, .json, .jsonl,
    /// .pdf, .docx), each with `text` or, for binary formats, `base64`.
    #[serde(default)]
    pub files: Vec<FileArg>,
    /// Corpus records `{doc_id, title, text}`, each a document under its own id.
    #[serde(default)]
    pub records: Vec<crate::api::CorpusRecord>,
    /// The collection they go into (`default` when absent).
    #[serde(default)]
    pub collection: Option<metarag_core::CollectionId>,
}

/// One file given to the `ingest` tool.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FileArg {
    /// The file name (a plain name; its document id becomes `upload:NAME`).
    pub name: String,
    /// The content as text.
    #[serde(default)]
    pub text: Option<String>,
    /// The content as base64 (PDF, DOCX).
    #[serde(default)]
    pub base64: Option<String>,
}

/// Arguments of the `get_document` tool.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GetDocumentArgs {
    /// The document id (from `list_documents`).
    pub id: String,
    /// Include the chunks.
    #[serde(default)]
    pub chunks: bool,
}

/// Arguments of the `list_documents` tool.
#[derive(Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ListArgs {
    /// Only documents of this collection (every one when absent).
    #[serde(default)]
    pub collection: Option<metarag_core::CollectionId>,
}

/// The MCP server: one per session, all over one [`Service`].
#[derive(Clone)]
pub struct McpServer {
    service: Arc<Service>,
    tool_router: ToolRouter<Self>,
    /// Whether its requests come over HTTP, where each carries what its key may reach.
    over_http: bool,
}

impl McpServer {
    /// A server over `service` for a local client (stdio): it reaches every collection,
    /// as the user running it does.
    pub fn new(service: Arc<Service>) -> Self {
        McpServer {
            service,
            tool_router: Self::tool_router(),
            over_http: false,
        }
    }

    /// A server over `service` for `/mcp`: each tool call reaches only what the key of its
    /// HTTP request may ([`Access`], put there by the server's key check).
    pub fn over_http(service: Arc<Service>) -> Self {
        McpServer {
            over_http: true,
            ..McpServer::new(service)
        }
    }

    /// What this call may reach. Over HTTP a call without its request's access reaches
    /// nothing (it cannot happen behind the key check; never fall open).
    fn access(&self, ctx: &RequestContext<RoleServer>) -> Access {
        if !self.over_http {
            return Access::All;
        }
        ctx.extensions
            .get::<axum::http::request::Parts>()
            .and_then(|p| p.extensions.get::<Access>().cloned())
            .unwrap_or(Access::Scoped {
                key: String::new(),
                scope: KeyScope::default(),
            })
    }
}

/// A successful result as structured content (and its JSON as text, for clients that
/// read only text), or the error body marked `isError`.
fn reply<T: Serialize>(result: Result<T, Error>) -> Result<CallToolResult, ErrorData> {
    Ok(match result {
        Ok(v) => CallToolResult::structured(
            serde_json::to_value(v).map_err(|e| ErrorData::internal_error(e.to_string(), None))?,
        ),
        Err(e) => CallToolResult::structured_error(
            serde_json::to_value(e.body())
                .map_err(|e| ErrorData::internal_error(e.to_string(), None))?,
        ),
    })
}

#[tool_router]
impl McpServer {
    /// Searches the index.
    #[tool(
        description = "Search the document index (hybrid BM25 + dense by default). Returns ranked passages with their document ids and scores."
    )]
    async fn search(
        &self,
        Parameters(args): Parameters<SearchBody>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        reply(self.service.search(args, &self.access(&ctx)).await)
    }

    /// Answers a question.
    #[tool(
        description = "Answer a question from the indexed documents with a strategy (default `metarag`: answers, checks itself and repairs weak answers). Returns the answer with [n] citations, the numbered sources, and the run id; `abstained` is true when the documents do not settle the question (then `abstention` says why and holds any answer held back)."
    )]
    async fn ask(
        &self,
        Parameters(args): Parameters<AskBody>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let access = self.access(&ctx);
        let result = self
            .service
            .ask(args, Surface::Mcp, &access)
            .await
            .map(|r| {
                serde_json::json!({
                    "run_id": r.run_id,
                    "answer": r.answer,
                    "short_answer": r.short_answer,
                    "abstained": r.abstained,
                    "abstention": r.trace.abstention,
                    "sources": r.sources,
                    "strategy": r.trace.strategy,
                    "rounds": r.trace.rounds.len(),
                    "stop": r.trace.stop.to_string(),
                })
            });
        reply(result)
    }

    /// An entity's neighbourhood in the entity graph.
    #[tool(
        description = "Look up an entity (a person, place, work, organisation) in the entity graph: the passages that mention it, the entities named beside it and the relations stated between them, from the documents this key may read."
    )]
    async fn graph(
        &self,
        Parameters(args): Parameters<GraphBody>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        reply(self.service.graph(args, &self.access(&ctx)).await)
    }

    /// The verified context for a question, without an answer.
    #[tool(
        description = "Find the context for a question without answering it: classifies the question's intents, searches the memories they call for (text, entity graph, audit log), checks the passages cover the question's names and terms, reformulates the search once if not. Returns the numbered sources, the route and the checks, for you to answer from."
    )]
    async fn context(
        &self,
        Parameters(args): Parameters<ContextBody>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let access = self.access(&ctx);
        let result = self
            .service
            .context(args, Surface::Mcp, &access)
            .await
            .map(|r| {
                serde_json::json!({
                    "run_id": r.run_id,
                    "route": r.route,
                    "checks": r.checks,
                    "sources": r.sources,
                    "audit": r.audit,
                })
            });
        reply(result)
    }

    /// Ingests files or corpus records.
    #[tool(
        description = "Add documents to the index: files by name with text (or base64 for PDF/DOCX), or corpus records {doc_id, title, text}. Re-sending a name or id replaces that document."
    )]
    async fn ingest(
        &self,
        Parameters(args): Parameters<IngestArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        reply(self.ingest_args(args, &self.access(&ctx)).await)
    }

    /// Lists documents.
    #[tool(
        description = "List the indexed documents (ids, titles, formats, chunk counts, collections), of one collection if named."
    )]
    async fn list_documents(
        &self,
        Parameters(args): Parameters<ListArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        // Structured content is an object by the protocol: the list goes under a key.
        reply(
            self.service
                .documents(args.collection, &self.access(&ctx))
                .await
                .map(|documents| serde_json::json!({ "documents": documents })),
        )
    }

    /// One document.
    #[tool(description = "Get one document's text by id, with its chunks if asked.")]
    async fn get_document(
        &self,
        Parameters(args): Parameters<GetDocumentArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        reply(
            self.service
                .document(args.id, args.chunks, &self.access(&ctx))
                .await,
        )
    }
}

impl McpServer {
    async fn ingest_args(
        &self,
        args: IngestArgs,
        access: &Access,
    ) -> Result<crate::api::IngestResponse, Error> {
        let collection = args.collection.unwrap_or_default();
        match (args.files.is_empty(), args.records.is_empty()) {
            (true, true) => Err(Error::bad_request("give `files` or `records`")),
            (false, false) => Err(Error::bad_request(
                "give `files` or `records`, not both in one call",
            )),
            (true, false) => {
                let upload = records_upload(&IngestRecords {
                    records: args.records,
                })?;
                self.service
                    .ingest(vec![upload], CorpusMode::Corpus, collection, access)
                    .await
            }
            (false, true) => {
                let limit = self.service.limits().max_files;
                if args.files.len() > limit {
                    return Err(Error::too_large(format!("at most {limit} files per call")));
                }
                let mut uploads = Vec::new();
                for f in args.files {
                    let bytes = match (f.text, f.base64) {
                        (Some(t), None) => t.into_bytes(),
                        (None, Some(b)) => base64::engine::general_purpose::STANDARD
                            .decode(b.trim())
                            .map_err(|e| {
                                Error::bad_request(format!(
                                    "{}: `base64` is not valid: {e}",
                                    f.name
                                ))
                            })?,
                        _ => {
                            return Err(Error::bad_request(format!(
                                "{}: give exactly one of `text` and `base64`",
                                f.name
                            )));
                        }
                    };
                    uploads.push(Upload::new(&f.name, bytes)?);
                }
                self.service
                    .ingest(uploads, CorpusMode::Auto, collection, access)
                    .await
            }
        }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build()).with_instructions(
            "metarag: search and question answering over the user's indexed documents. Use `search` for passages, `ask` for a cited answer, `ingest` to add documents.",
        )
    }
}

/// Serves MCP over stdin/stdout until the client disconnects (`metarag mcp`).
pub async fn serve_stdio(service: Arc<Service>) -> Result<(), Error> {
    use rmcp::ServiceExt;
    let running = McpServer::new(service)
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| Error::internal(format!("MCP session failed to start: {e}")))?;
    running
        .waiting()
        .await
        .map_err(|e| Error::internal(format!("MCP session ended with an error: {e}")))?;
    Ok(())
}

/// The streamable HTTP endpoint, mounted at `/mcp` by the API's router.
pub(crate) fn http_service(
    service: Arc<Service>,
) -> rmcp::transport::streamable_http_server::StreamableHttpService<
    McpServer,
    rmcp::transport::streamable_http_server::session::local::LocalSessionManager,
> {
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    };
    let mut config = StreamableHttpServerConfig::default();
    if let Some(hosts) = &service.limits().mcp_allowed_hosts {
        config = config.with_allowed_hosts(hosts.clone());
    }
    StreamableHttpService::new(
        move || Ok(McpServer::over_http(service.clone())),
        Arc::new(LocalSessionManager::default()),
        config,
    )
}
