//! The OpenAPI 3.1 document of the `/v1` API, generated from the request and response
//! types.
//!
//! OpenAPI 3.1 schemas are JSON Schema 2020-12, which is what schemars emits; every type
//! crossing the API already derives `schemars::JsonSchema` (the LLM layer uses it for
//! constrained JSON output), so the components come from the types themselves and a
//! second derive (utoipa) on some fifty types would only add a way for the two to drift.
//! The paths are listed here, next to the router, and a test checks that every routed
//! path is documented.

use crate::api::{
    AskBody, AskResponse, CollectionBody, CollectionCreated, CollectionDeleted, ContextBody,
    ContextResponse, DocumentDetail, GraphBody, GraphResponse, Health, IngestRecords,
    IngestResponse, KeyInfo, KeyRemoved, NewKey, NewKeyBody, Removed, RunsResponse, SearchBody,
    SearchResponse, StrategyInfo, StreamEvent,
};
use crate::error::ErrorBody;
use metarag_core::{CollectionInfo, Document};
use metarag_eval::runs::RunDetail;
use schemars::generate::{Contract, SchemaSettings};
use schemars::{JsonSchema, SchemaGenerator};
use serde_json::{Map, Value, json};

/// Schemas of request bodies (as they are read) and responses (as they are written).
struct Schemas {
    requests: SchemaGenerator,
    responses: SchemaGenerator,
}

impl Schemas {
    fn new() -> Self {
        let settings = |contract| {
            let mut s = SchemaSettings::draft2020_12();
            s.definitions_path = "/components/schemas".into();
            s.meta_schema = None;
            s.contract = contract;
            s
        };
        Schemas {
            requests: settings(Contract::Deserialize).into_generator(),
            responses: settings(Contract::Serialize).into_generator(),
        }
    }

    fn request<T: JsonSchema>(&mut self) -> Value {
        self.requests.subschema_for::<T>().to_value()
    }

    fn response<T: JsonSchema>(&mut self) -> Value {
        self.responses.subschema_for::<T>().to_value()
    }

    fn components(mut self) -> Map<String, Value> {
        let mut all = self.requests.take_definitions(true);
        // Where a type reads and writes differently, the written form is documented.
        all.extend(self.responses.take_definitions(true));
        all
    }
}

fn json_body(schema: Value) -> Value {
    json!({ "required": true, "content": { "application/json": { "schema": schema } } })
}

fn ok(description: &str, schema: Value) -> Value {
    json!({ "description": description, "content": { "application/json": { "schema": schema } } })
}

fn errors(s: &mut Schemas, codes: &[(&str, &str)]) -> Map<String, Value> {
    let body = s.response::<ErrorBody>();
    codes
        .iter()
        .map(|(code, why)| {
            (
                code.to_string(),
                json!({ "description": why, "content": { "application/json": { "schema": body } } }),
            )
        })
        .collect()
}

fn operation(
    summary: &str,
    request: Option<Value>,
    responses: Map<String, Value>,
    params: Vec<Value>,
) -> Value {
    let mut op = json!({ "summary": summary, "responses": responses });
    if let Some(r) = request {
        op["requestBody"] = r;
    }
    if !params.is_empty() {
        op["parameters"] = Value::Array(params);
    }
    op
}

fn with_ok(ok_response: Value, errs: Map<String, Value>) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("200".into(), ok_response);
    m.extend(errs);
    m
}

fn param(name: &str, place: &str, description: &str, schema: Value, required: bool) -> Value {
    json!({ "name": name, "in": place, "description": description, "required": required, "schema": schema })
}

/// The document served at `/openapi.json`.
pub fn document() -> Value {
    let mut s = Schemas::new();
    let common: &[(&str, &str)] = &[
        ("400", "Invalid input; the message names the field"),
        ("401", "An API key is required or wrong"),
    ];
    let e = |extra: &[(&'static str, &'static str)], s: &mut Schemas| {
        let mut all: Vec<(&str, &str)> = common.to_vec();
        all.extend_from_slice(extra);
        errors(s, &all)
    };
    let id_param = param(
        "id",
        "path",
        "The document id",
        json!({"type": "string"}),
        true,
    );
    let mut paths = Map::new();

    let ingest_ok = ok(
        "Per-file results and totals",
        s.response::<IngestResponse>(),
    );
    let ingest_errs = e(
        &[("413", "More bytes or files than the server accepts")],
        &mut s,
    );
    let records = s.request::<IngestRecords>();
    paths.insert(
        "/v1/ingest".into(),
        json!({ "post": operation(
            "Ingest uploaded files (multipart, field `file`, any supported format) or JSON corpus records",
            Some(json!({ "required": true, "content": {
                "multipart/form-data": { "schema": { "type": "object", "properties": {
                    "file": { "type": "array", "items": { "type": "string", "contentMediaType": "application/octet-stream" } } } } },
                "application/json": { "schema": records } } })),
            with_ok(ingest_ok, ingest_errs),
            vec![],
        ) }),
    );

    let docs_ok = ok(
        "Every document, without its text",
        json!({ "type": "array", "items": s.response::<Document>() }),
    );
    let docs_errs = e(&[], &mut s);
    paths.insert(
        "/v1/documents".into(),
        json!({ "get": operation("List documents", None, with_ok(docs_ok, docs_errs), vec![]) }),
    );
    let doc_ok = ok("The document with its text", s.response::<DocumentDetail>());
    let doc_errs = e(&[("404", "No such document")], &mut s);
    let removed_ok = ok("The removed id", s.response::<Removed>());
    let removed_errs = e(&[("404", "No such document")], &mut s);
    paths.insert(
        "/v1/documents/{id}".into(),
        json!({
            "get": operation("One document, with its chunks on `?chunks=true`", None, with_ok(doc_ok, doc_errs),
                vec![id_param.clone(), param("chunks", "query", "Include the chunks", json!({"type": "boolean"}), false)]),
            "delete": operation("Remove a document and its chunks", None, with_ok(removed_ok, removed_errs), vec![id_param]),
        }),
    );

    let search_req = json_body(s.request::<SearchBody>());
    let search_ok = ok(
        "Hits, best first, with timings",
        s.response::<SearchResponse>(),
    );
    let search_errs = e(&[], &mut s);
    paths.insert(
        "/v1/search".into(),
        json!({ "post": operation("Search the index (hybrid, bm25 or dense)", Some(search_req), with_ok(search_ok, search_errs), vec![]) }),
    );

    let graph_req = json_body(s.request::<GraphBody>());
    let graph_ok = ok(
        "The entity, the chunks that mention it, the entities named beside it and the relations stated, from the collections the key may read",
        s.response::<GraphResponse>(),
    );
    let graph_errs = e(
        &[("404", "No such entity in the documents this key may read")],
        &mut s,
    );
    paths.insert(
        "/v1/graph".into(),
        json!({ "post": operation("An entity's neighbourhood in the entity graph (the web page's graph view)", Some(graph_req), with_ok(graph_ok, graph_errs), vec![]) }),
    );

    let context_req = json_body(s.request::<ContextBody>());
    let context_ok = ok(
        "The route, the context checks, the numbered sources and the trace (no answer)",
        s.response::<ContextResponse>(),
    );
    let context_e = e(
        &[
            ("409", "The index is empty"),
            ("429", "Too many asks waiting; see Retry-After"),
            ("503", "The request took longer than the server allows"),
        ],
        &mut s,
    );
    paths.insert(
        "/v1/context".into(),
        json!({ "post": operation("The verified context for a question, without an answer (the router strategy, context-only)", Some(context_req), with_ok(context_ok, context_e), vec![]) }),
    );

    let ask_errs: &[(&str, &str)] = &[
        ("409", "The index is empty and no context was sent"),
        ("429", "Too many asks waiting; see Retry-After"),
        ("503", "The ask took longer than the server allows"),
    ];
    let ask_req = json_body(s.request::<AskBody>());
    let ask_ok = ok(
        "The answer, its sources and the whole trace",
        s.response::<AskResponse>(),
    );
    let ask_e = e(ask_errs, &mut s);
    paths.insert(
        "/v1/ask".into(),
        json!({ "post": operation("Answer a question with a strategy", Some(ask_req.clone()), with_ok(ask_ok, ask_e), vec![]) }),
    );
    let event = s.response::<StreamEvent>();
    let stream_e = e(ask_errs, &mut s);
    paths.insert(
        "/v1/ask/stream".into(),
        json!({ "post": operation(
            "Answer a question, streaming progress as server-sent events: `queued`, `started`, `node_start`, `doing` (what the node is doing, in a sentence, where the strategy says), `node_end`, `token` (the answer as it is written), then `done` with the trace, or `error`",
            Some(ask_req),
            with_ok(json!({ "description": "An event stream; each event's data is one StreamEvent", "content": { "text/event-stream": { "itemSchema": event } } }), stream_e),
            vec![],
        ) }),
    );

    let strategies_ok = ok(
        "The registered strategies",
        json!({ "type": "array", "items": s.response::<StrategyInfo>() }),
    );
    let strategies_e = e(&[], &mut s);
    paths.insert(
        "/v1/strategies".into(),
        json!({ "get": operation("List strategies", None, with_ok(strategies_ok, strategies_e), vec![]) }),
    );

    let runs_ok = ok(
        "Recorded runs, newest first, and per-strategy aggregates",
        s.response::<RunsResponse>(),
    );
    let runs_e = e(&[], &mut s);
    paths.insert(
        "/v1/runs".into(),
        json!({ "get": operation("List recorded runs (every ask from the CLI, REST, MCP or a benchmark)", None, with_ok(runs_ok, runs_e), vec![
            param("strategy", "query", "Only this strategy", json!({"type": "string"}), false),
            param("surface", "query", "Only runs from cli, rest, mcp or bench", json!({"type": "string", "enum": ["cli", "rest", "mcp", "bench"]}), false),
            param("limit", "query", "At most this many (default 50, at most 500)", json!({"type": "integer", "minimum": 1, "maximum": 500}), false),
            param("offset", "query", "Skip this many", json!({"type": "integer", "minimum": 0}), false),
        ]) }),
    );
    let run_ok = ok(
        "The run with its provenance snapshot (trace)",
        s.response::<RunDetail>(),
    );
    let run_e = e(&[("404", "No such run")], &mut s);
    paths.insert(
        "/v1/runs/{id}".into(),
        json!({ "get": operation("One recorded run", None, with_ok(run_ok, run_e), vec![
            param("id", "path", "The run id", json!({"type": "string"}), true)]) }),
    );

    let admin_e = |extra: &[(&'static str, &'static str)], s: &mut Schemas| {
        let mut all = vec![("403", "Not an admin key")];
        all.extend_from_slice(extra);
        e(&all, s)
    };
    let cols_ok = ok(
        "The collections the key may read, with their sizes",
        json!({ "type": "array", "items": s.response::<CollectionInfo>() }),
    );
    let cols_e = e(&[], &mut s);
    let col_req = json_body(s.request::<CollectionBody>());
    let col_made = ok("Made, or there already", s.response::<CollectionCreated>());
    let col_made_e = admin_e(&[], &mut s);
    paths.insert(
        "/v1/collections".into(),
        json!({
            "get": operation("List collections", None, with_ok(cols_ok, cols_e), vec![]),
            "post": operation("Make a collection (admin keys)", Some(col_req.clone()), with_ok(col_made, col_made_e), vec![]),
        }),
    );
    let renamed_ok = ok(
        "The collection under its new name",
        s.response::<CollectionInfo>(),
    );
    let renamed_e = admin_e(&[("404", "No such collection")], &mut s);
    let deleted_ok = ok(
        "Deleted, with its documents",
        s.response::<CollectionDeleted>(),
    );
    let deleted_e = admin_e(&[("404", "No such collection")], &mut s);
    let name_param = param(
        "name",
        "path",
        "The collection",
        json!({"type": "string"}),
        true,
    );
    paths.insert(
        "/v1/collections/{name}".into(),
        json!({
            "patch": operation("Rename a collection (admin keys); keys and runs follow it", Some(col_req), with_ok(renamed_ok, renamed_e), vec![name_param.clone()]),
            "delete": operation("Delete a collection with its documents, graph entries and history (admin keys)", None, with_ok(deleted_ok, deleted_e), vec![name_param]),
        }),
    );
    let keys_ok = ok(
        "Every key, without the key or its hash",
        json!({ "type": "array", "items": s.response::<KeyInfo>() }),
    );
    let keys_e = admin_e(&[], &mut s);
    let key_req = json_body(s.request::<NewKeyBody>());
    let key_made = ok("The key, shown this once", s.response::<NewKey>());
    let key_made_e = admin_e(&[], &mut s);
    paths.insert(
        "/v1/keys".into(),
        json!({
            "get": operation("List API keys (admin keys)", None, with_ok(keys_ok, keys_e), vec![]),
            "post": operation("Make an API key held to collections, or an admin key (admin keys)", Some(key_req), with_ok(key_made, key_made_e), vec![]),
        }),
    );
    let key_gone = ok("The removed key's id", s.response::<KeyRemoved>());
    let key_gone_e = admin_e(&[("404", "No such key")], &mut s);
    paths.insert(
        "/v1/keys/{id}".into(),
        json!({ "delete": operation("Remove an API key (admin keys); it stops working at once", None, with_ok(key_gone, key_gone_e),
            vec![param("id", "path", "The key's id", json!({"type": "string"}), true)]) }),
    );

    let health_ok = ok("The server is up", s.response::<Health>());
    paths.insert(
        "/v1/health".into(),
        json!({ "get": operation("Health, models and index size (no key needed)", None, with_ok(health_ok, Map::new()), vec![]) }),
    );
    let metrics_e = e(&[], &mut s);
    paths.insert(
        "/v1/metrics".into(),
        json!({ "get": operation("Prometheus metrics (text exposition format)", None,
            with_ok(json!({ "description": "Metrics", "content": { "text/plain": { "schema": { "type": "string" } } } }), metrics_e), vec![]) }),
    );

    // Every operation but health needs the key once one exists.
    for (path, item) in paths.iter_mut() {
        if path == "/v1/health" {
            continue;
        }
        if let Some(ops) = item.as_object_mut() {
            for op in ops.values_mut() {
                op["security"] = json!([{ "bearer": [] }]);
            }
        }
    }

    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "metarag",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Agentic retrieval-augmented generation that knows when its answer is weak. Every error is `{\"error\": {\"code\", \"message\"}}`.",
        },
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "paths": paths,
        "components": {
            "schemas": s.components(),
            "securitySchemes": { "bearer": { "type": "http", "scheme": "bearer", "description": "A key from `metarag keys add NAME`; needed once any key exists, and always when the server listens beyond loopback." } },
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `$ref` points at a schema the document defines.
    fn refs(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(r)) = m.get("$ref") {
                    out.push(r.clone());
                }
                m.values().for_each(|x| refs(x, out));
            }
            Value::Array(a) => a.iter().for_each(|x| refs(x, out)),
            _ => {}
        }
    }

    #[test]
    fn the_document_is_openapi_3_1_and_every_reference_resolves() {
        let doc = document();
        assert_eq!(doc["openapi"], "3.1.0");
        let mut found = Vec::new();
        refs(&doc, &mut found);
        assert!(!found.is_empty());
        for r in found {
            let name = r
                .strip_prefix("#/components/schemas/")
                .unwrap_or_else(|| panic!("unexpected ref {r}"));
            assert!(
                doc["components"]["schemas"].get(name).is_some(),
                "{r} is not defined"
            );
        }
        for path in [
            "/v1/ingest",
            "/v1/documents",
            "/v1/documents/{id}",
            "/v1/search",
            "/v1/graph",
            "/v1/ask",
            "/v1/context",
            "/v1/ask/stream",
            "/v1/strategies",
            "/v1/runs",
            "/v1/runs/{id}",
            "/v1/health",
            "/v1/metrics",
            "/v1/collections",
            "/v1/collections/{name}",
            "/v1/keys",
            "/v1/keys/{id}",
        ] {
            assert!(doc["paths"].get(path).is_some(), "{path} is not documented");
        }
    }
}
