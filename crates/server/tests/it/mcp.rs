//! The MCP tools: a real rmcp client session against the server (initialize, tools/list,
//! tools/call), and the same over streamable HTTP at `/mcp` as raw JSON-RPC, the way any
//! MCP client speaks it.

use crate::api::{HOOVER, scripted, start};
use metarag_server::Limits;
use metarag_server::mcp::McpServer;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};

fn args(v: Value) -> serde_json::Map<String, Value> {
    v.as_object().unwrap().clone()
}

#[tokio::test]
async fn an_mcp_client_lists_and_calls_every_tool() {
    let s = start(scripted(), Limits::default()).await;
    let (server_io, client_io) = tokio::io::duplex(1 << 16);
    let server = McpServer::new(s.service.clone());
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let client = ().serve(client_io).await.unwrap();

    let tools = client.list_all_tools().await.unwrap();
    let mut names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "ask",
            "context",
            "get_document",
            "graph",
            "ingest",
            "list_documents",
            "search"
        ]
    );
    let ask = tools.iter().find(|t| t.name == "ask").unwrap();
    let schema = serde_json::to_value(&ask.input_schema).unwrap();
    assert!(
        schema["required"]
            .as_array()
            .unwrap()
            .contains(&json!("question")),
        "{schema}"
    );

    let call =
        |name: &'static str, a: Value| CallToolRequestParams::new(name).with_arguments(args(a));
    let done = client
        .call_tool(call(
            "ingest",
            json!({"files": [{"name": "hoover.md", "text": HOOVER}]}),
        ))
        .await
        .unwrap();
    assert_ne!(done.is_error, Some(true), "{done:?}");
    assert_eq!(
        done.structured_content.as_ref().unwrap()["report"]["added"],
        1
    );

    let listed = client
        .call_tool(call("list_documents", json!({})))
        .await
        .unwrap();
    let docs = listed.structured_content.unwrap();
    assert_eq!(docs["documents"][0]["id"], "upload:hoover.md", "{docs}");

    let found = client
        .call_tool(call(
            "search",
            json!({"query": "Hoover Dam construction", "k": 2}),
        ))
        .await
        .unwrap();
    assert_eq!(
        found.structured_content.unwrap()["hits"][0]["chunk"]["title"],
        "Hoover Dam"
    );

    let graph = client
        .call_tool(call("graph", json!({"entity": "Hoover Dam"})))
        .await
        .unwrap();
    let g = graph.structured_content.unwrap();
    assert_eq!(g["entity"], "Hoover Dam", "{g}");
    assert!(
        g["neighbours"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n["name"].as_str().unwrap().contains("Colorado River")),
        "{g}"
    );

    let doc = client
        .call_tool(call(
            "get_document",
            json!({"id": "upload:hoover.md", "chunks": true}),
        ))
        .await
        .unwrap();
    assert!(
        doc.structured_content.unwrap()["chunks"][0]["text"]
            .as_str()
            .unwrap()
            .contains("1931")
    );

    let answer = client
        .call_tool(call(
            "ask",
            json!({"question": "When was the Hoover Dam built?", "strategy": "standard"}),
        ))
        .await
        .unwrap();
    let a = answer.structured_content.unwrap();
    assert_eq!(a["short_answer"], "1931 to 1936", "{a}");
    assert_eq!(a["abstained"], false, "{a}");
    // The run is in the log, marked as coming from MCP.
    let runs = s
        .http
        .get(s.url("/v1/runs?surface=mcp"))
        .send()
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap();
    assert_eq!(runs["runs"][0]["id"], a["run_id"]);
    // A question the documents do not answer: declined, and said so.
    let declined = client
        .call_tool(call(
            "ask",
            json!({"question": crate::api::UNANSWERED, "strategy": "standard"}),
        ))
        .await
        .unwrap()
        .structured_content
        .unwrap();
    assert_eq!(declined["abstained"], true, "{declined}");
    assert_eq!(declined["abstention"]["by"], "writer", "{declined}");

    // The router's context without an answer: route, checks and sources.
    let ctx = client
        .call_tool(call(
            "context",
            json!({"question": "When was the Hoover Dam built?"}),
        ))
        .await
        .unwrap();
    assert_ne!(ctx.is_error, Some(true), "{ctx:?}");
    let c = ctx.structured_content.unwrap();
    assert_eq!(c["sources"][0]["title"], "Hoover Dam", "{c}");
    assert!(
        c["route"]["intents"]
            .as_array()
            .is_some_and(|i| !i.is_empty()),
        "{c}"
    );
    assert!(!c["checks"].as_array().unwrap().is_empty(), "{c}");
    assert!(c.get("answer").is_none());

    // A tool that fails on its input says why, as a result the model can read; what is
    // stored stays.
    let bad = client
        .call_tool(call(
            "ingest",
            json!({"files": [{"name": "../x.md", "text": "x"}]}),
        ))
        .await
        .unwrap();
    assert_eq!(bad.is_error, Some(true));
    assert!(
        bad.structured_content.unwrap()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("refused")
    );
    let bad = client
        .call_tool(call("ask", json!({"question": "q", "strategy": "nope"})))
        .await
        .unwrap();
    assert_eq!(bad.is_error, Some(true));
    assert_eq!(s.titles().await, ["Hoover Dam"]);
    client.cancel().await.unwrap();
}

/// The JSON-RPC messages of a response: a JSON body or an SSE stream of them.
async fn messages(r: reqwest::Response) -> Vec<Value> {
    let json = r
        .headers()
        .get("content-type")
        .is_some_and(|v| v.to_str().unwrap().starts_with("application/json"));
    let text = r.text().await.unwrap();
    if json {
        return vec![serde_json::from_str(&text).unwrap()];
    }
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str(d.trim()).ok())
        .collect()
}

#[tokio::test]
async fn mcp_over_streamable_http_with_and_without_a_key() {
    let s = start(scripted(), Limits::default()).await;
    let url = s.url("/mcp");
    let post = |body: Value, session: Option<String>, key: Option<&str>| {
        let mut r = s
            .http
            .post(&url)
            .header("accept", "application/json, text/event-stream")
            .json(&body);
        if let Some(id) = session {
            r = r
                .header("mcp-session-id", id)
                .header("mcp-protocol-version", "2025-06-18");
        }
        if let Some(k) = key {
            r = r.bearer_auth(k);
        }
        r.send()
    };
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}}});
    let r = post(init.clone(), None, None).await.unwrap();
    assert_eq!(r.status(), 200);
    let session = r
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_string());
    let replies = messages(r).await;
    assert!(
        replies[0]["result"]["serverInfo"]["name"].is_string(),
        "{replies:?}"
    );
    let r = post(
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        session.clone(),
        None,
    )
    .await
    .unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    let r = post(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        session.clone(),
        None,
    )
    .await
    .unwrap();
    let tools = messages(r).await;
    let n = tools
        .iter()
        .find(|m| m["id"] == 2)
        .map(|m| m["result"]["tools"].as_array().unwrap().len());
    assert_eq!(n, Some(7), "{tools:?}");
    let r = post(
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "list_documents", "arguments": {}}}),
        session.clone(),
        None,
    )
    .await
    .unwrap();
    let called = messages(r).await;
    let result = called.iter().find(|m| m["id"] == 3).unwrap();
    assert_eq!(
        result["result"]["structuredContent"],
        json!({"documents": []}),
        "{result}"
    );

    // Once a key exists, /mcp needs it like /v1 does.
    let key = s.keys.add("mcp", None).await.unwrap().1;
    let r = post(init.clone(), None, None).await.unwrap();
    assert_eq!(r.status(), 401);
    let r = post(init.clone(), None, Some(&key)).await.unwrap();
    assert_eq!(r.status(), 200);

    // A key scoped to one collection reaches only it through every tool.
    let alpha = metarag_core::CollectionId::new("alpha").unwrap();
    for (c, id, title, text) in [
        (
            "alpha",
            "a1",
            "alpha notes",
            "The alpha team deploys on Tuesdays.",
        ),
        (
            "beta",
            "b1",
            "beta notes",
            "The beta team deploys on Fridays.",
        ),
        (
            "beta",
            "b2",
            "Dalby Dossier",
            "Orrin Dalby met Vesna Krall in Brightwater.",
        ),
    ] {
        let r = s
            .http
            .post(s.url(&format!("/v1/ingest?collection={c}")))
            .bearer_auth(&key)
            .json(&json!({"records": [{"doc_id": id, "title": title, "text": text}]}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
    }
    let reader = s
        .keys
        .add(
            "reader",
            Some(metarag_server::KeyScope {
                read: vec![alpha],
                write: Vec::new(),
            }),
        )
        .await
        .unwrap()
        .1;
    let r = post(init, None, Some(&reader)).await.unwrap();
    let session = r
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_string());
    post(
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        session.clone(),
        Some(&reader),
    )
    .await
    .unwrap();
    let call = |id: u32, name: &str, arguments: Value| {
        post(
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": arguments}}),
            session.clone(),
            Some(&reader),
        )
    };
    let result = |replies: Vec<Value>, id: u32| {
        replies.into_iter().find(|m| m["id"] == id).unwrap()["result"].clone()
    };
    let listed = result(
        messages(call(4, "list_documents", json!({})).await.unwrap()).await,
        4,
    );
    let ids: Vec<&str> = listed["structuredContent"]["documents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["a1"], "{listed}");
    let found = result(
        messages(
            call(5, "search", json!({"query": "team deploys"}))
                .await
                .unwrap(),
        )
        .await,
        5,
    );
    let titles: Vec<&str> = found["structuredContent"]["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["chunk"]["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["alpha notes"], "{found}");
    let hidden = result(
        messages(call(6, "get_document", json!({"id": "b1"})).await.unwrap()).await,
        6,
    );
    assert_eq!(hidden["isError"], true, "{hidden}");
    let refused = result(
        messages(
            call(
                7,
                "ingest",
                json!({"records": [{"doc_id": "x", "title": "x", "text": "x y z"}], "collection": "alpha"}),
            )
            .await
            .unwrap(),
        )
        .await,
        7,
    );
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(refused.to_string().contains("may not write"), "{refused}");
    // The graph: an entity only another collection names is not found, and nothing of
    // its text comes back.
    let unseen = result(
        messages(
            call(8, "graph", json!({"entity": "Vesna Krall"}))
                .await
                .unwrap(),
        )
        .await,
        8,
    );
    assert_eq!(unseen["isError"], true, "{unseen}");
    assert!(!unseen.to_string().contains("Brightwater"), "{unseen}");
}
