//! `metarag serve`'s API over real HTTP on loopback: the real embedder and index, a scripted
//! chat model (and the real local one in one test). Every endpoint, the bad inputs a
//! client sends (corrupt file, path-traversal name, oversized upload, unknown strategy,
//! missing key), the SSE event order, the ask queue's 429, and that nothing stored is lost
//! along the way.

use metarag_agent::Agent;
use metarag_core::{DynLlm, DynStore, Llm};
use metarag_eval::runs::RunLog;
use metarag_index::{EmbeddedIndex, IndexConfig};
use metarag_ingest::{ChunkSettings, Chunker, IngestOptions};
use metarag_pgstore::{PgConfig, PgDatabase, PgStore};
use metarag_retrieve::{HybridRetriever, RetrievalConfig};
use metarag_server::{Engine, KeyStore, Keys, Limits, Service, router_for, serve};
use metarag_testkit::ScriptedLlm;
use reqwest::StatusCode;
use reqwest::multipart::{Form, Part};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

pub(crate) const ANSWER: &str = r#"{"answer": "The Hoover Dam was built between 1931 and 1936 [1].", "short_answer": "1931 to 1936"}"#;

pub(crate) const HOOVER: &str = "# Hoover Dam\n\nHoover Dam is a concrete arch-gravity dam in the Black Canyon of the Colorado River. It was constructed between 1931 and 1936.\n";
const PANAMA: &str = "<html><head><title>Panama Canal</title></head><body><h1>Panama Canal</h1><p>The Panama Canal connects the Atlantic and Pacific oceans. Its locks were designed by engineers of the US Army.</p></body></html>";

pub(crate) struct Server {
    pub(crate) base: String,
    pub(crate) service: Arc<Service>,
    pub(crate) http: reqwest::Client,
    pub(crate) keys: KeyStore,
    _dir: tempfile::TempDir,
    _pg: Option<metarag_testkit::PgServer>,
}

impl Server {
    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    async fn get(&self, path: &str) -> (StatusCode, Value) {
        let r = self.http.get(self.url(path)).send().await.unwrap();
        let status = r.status();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    pub(crate) async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        let r = self
            .http
            .post(self.url(path))
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = r.status();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    async fn upload(&self, files: &[(&str, Vec<u8>)]) -> (StatusCode, Value) {
        let mut form = Form::new();
        for (name, bytes) in files {
            form = form.part(
                "file",
                Part::bytes(bytes.clone()).file_name(name.to_string()),
            );
        }
        let r = self
            .http
            .post(self.url("/v1/ingest"))
            .multipart(form)
            .send()
            .await
            .unwrap();
        let status = r.status();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    pub(crate) async fn titles(&self) -> Vec<String> {
        let (status, docs) = self.get("/v1/documents").await;
        assert_eq!(status, 200, "{docs}");
        let mut t: Vec<String> = docs
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["title"].as_str().unwrap().to_string())
            .collect();
        t.sort();
        t
    }
}

/// Starts the API on an ephemeral loopback port over a fresh data directory.
pub(crate) async fn start(llm: Arc<dyn DynLlm>, limits: Limits) -> Server {
    start_on(llm, limits, false).await
}

/// [`start`], over a fresh Postgres database when `postgres` (the store, the run log and
/// the keys all in it, as `metarag serve` runs with `backend = "postgres"`).
pub(crate) async fn start_on(llm: Arc<dyn DynLlm>, limits: Limits, postgres: bool) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let embedder = metarag_testkit::embedder();
    let (model, dimension) = (
        metarag_core::Embedder::model_id(&embedder).to_string(),
        metarag_core::Embedder::dimension(&embedder),
    );
    let (store, runs, keys, pg): (Arc<dyn DynStore>, RunLog, KeyStore, _) = if postgres {
        let pg = metarag_testkit::postgres();
        let db = PgDatabase::connect(&pg.url(), 4).await.unwrap();
        let store = PgStore::open(db.clone(), PgConfig::new(pg.url(), model, dimension))
            .await
            .unwrap();
        (
            Arc::new(store),
            RunLog::postgres(db.clone()),
            KeyStore::postgres(db),
            Some(pg),
        )
    } else {
        let index =
            EmbeddedIndex::open(dir.path().join("index"), IndexConfig::new(model, dimension))
                .unwrap();
        (
            Arc::new(index),
            RunLog::open(&dir.path().join("runs.sqlite")).unwrap(),
            KeyStore::new(dir.path().join("keys.json")),
            None,
        )
    };
    let chunker = Arc::new(
        Chunker::new(
            embedder.tokenizer().clone(),
            ChunkSettings {
                max_tokens: metarag_core::Embedder::max_tokens(&embedder),
                overlap: 0,
            },
        )
        .unwrap(),
    );
    let retriever = Arc::new(HybridRetriever::new(
        embedder.clone(),
        store.clone(),
        RetrievalConfig::default(),
    ));
    let agent = Agent::builder(llm)
        .retriever(retriever)
        .embedder(Arc::new(embedder.clone()))
        .build()
        .unwrap();
    let engine = Engine {
        store,
        embedder,
        chunker,
        ingest: IngestOptions {
            max_file_bytes: 1 << 20,
            ..IngestOptions::default()
        },
        retrieval: RetrievalConfig::default(),
        agent,
        runs,
        pricing: Default::default(),
    };
    let service = Service::new(engine, limits, Some(Keys::new(keys.clone()).await.unwrap()));
    let app = router_for(service.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve(listener, app, std::future::pending()));
    Server {
        base: format!("http://{addr}"),
        service,
        http: reqwest::Client::builder()
            .timeout(Duration::from_secs(600))
            .build()
            .unwrap(),
        keys,
        _dir: dir,
        _pg: pg,
    }
}

/// The writer's decline, for a question no upload answers.
pub(crate) const DECLINE: &str = r#"{"answer": "The sources do not say which message queue the dam publishes to.", "short_answer": "unknown"}"#;

/// A question the scripted writer declines ([`DECLINE`]).
pub(crate) const UNANSWERED: &str = "Which message queue does the Hoover Dam publish alerts to?";

pub(crate) fn scripted() -> Arc<dyn DynLlm> {
    Arc::new(
        ScriptedLlm::new()
            .on(
                &["Answer the question using the sources", "message queue"],
                DECLINE,
            )
            .otherwise(ANSWER),
    )
}

#[tokio::test]
async fn ingest_documents_search_ask_and_runs_over_http() {
    let s = start(scripted(), Limits::default()).await;

    let (status, health) = s.get("/v1/health").await;
    assert_eq!(status, 200);
    assert_eq!(health["documents"], 0);

    // Asking an empty index is a conflict the client can fix.
    let (status, body) = s
        .post(
            "/v1/ask",
            json!({"question": "When was Hoover Dam built?", "strategy": "standard"}),
        )
        .await;
    assert_eq!(status, 409, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("upload")
    );

    let docx = metarag_testkit::docx(&[
        ("Heading1", "Gatun Lake"),
        (
            "Normal",
            "Gatun Lake is an artificial lake forming part of the Panama Canal.",
        ),
    ]);
    let pdf = metarag_testkit::pdf(
        "Colorado River",
        &["The Colorado River flows through the Black Canyon."],
    );
    let (status, body) = s
        .upload(&[
            ("hoover.md", HOOVER.as_bytes().to_vec()),
            ("panama.html", PANAMA.as_bytes().to_vec()),
            ("gatun.docx", docx),
            ("colorado.pdf", pdf),
        ])
        .await;
    assert_eq!(status, 200, "{body}");
    let files = body["files"].as_array().unwrap();
    assert_eq!(files.len(), 4);
    for f in files {
        assert_eq!(f["added"], 1, "{f}");
        assert!(f["errors"].as_array().unwrap().is_empty(), "{f}");
    }
    assert_eq!(body["report"]["added"], 4);

    // Corpus records as JSON.
    let (status, body) = s
        .post(
            "/v1/ingest",
            json!({"records": [{"doc_id": "rec-1", "title": "Lake Mead", "text": "Lake Mead is the reservoir formed by Hoover Dam.", "metadata": {"region": "west", "tags": ["water", "dam"]}}]}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["report"]["added"], 1);
    assert_eq!(s.titles().await.len(), 5);

    // One document with its chunks; its id holds a colon and goes percent-encoded.
    let (status, doc) = s.get("/v1/documents/upload%3Ahoover.md?chunks=true").await;
    assert_eq!(status, 200, "{doc}");
    assert_eq!(doc["document"]["title"], "Hoover Dam");
    assert!(doc["chunks"][0]["text"].as_str().unwrap().contains("1931"));

    let (status, found) = s
        .post(
            "/v1/search",
            json!({"query": "When was the Hoover Dam constructed?", "k": 3}),
        )
        .await;
    assert_eq!(status, 200, "{found}");
    assert_eq!(found["hits"][0]["chunk"]["title"], "Hoover Dam", "{found}");
    let (status, found) = s
        .post(
            "/v1/search",
            json!({"query": "lake", "mode": "bm25", "filter": {"title_contains": "gatun"}}),
        )
        .await;
    assert_eq!(status, 200, "{found}");
    let hits = found["hits"].as_array().unwrap();
    assert!(
        !hits.is_empty() && hits.iter().all(|h| h["chunk"]["title"] == "Gatun Lake"),
        "{found}"
    );
    // Metadata sent with a record filters searches; a list value is refused by name.
    let (status, found) = s
        .post(
            "/v1/search",
            json!({"query": "lake", "filter": {"metadata": {"tags": "water"}}}),
        )
        .await;
    assert_eq!(status, 200, "{found}");
    let titles: Vec<&str> = found["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["chunk"]["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["Lake Mead"], "{found}");
    let (status, err) = s
        .post(
            "/v1/search",
            json!({"query": "lake", "filter": {"metadata": {"tags": ["water"]}}}),
        )
        .await;
    assert_eq!(status, 400, "{err}");
    assert!(err.to_string().contains("filter.metadata.tags"), "{err}");

    let (status, strategies) = s.get("/v1/strategies").await;
    assert_eq!(status, 200);
    assert!(
        strategies
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x["name"] == "metarag")
    );

    let (status, answer) = s
        .post(
            "/v1/ask",
            json!({"question": "When was the Hoover Dam built?", "strategy": "standard"}),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["short_answer"], "1931 to 1936");
    assert!(answer["answer"].as_str().unwrap().contains("[1]"));
    assert!(!answer["sources"].as_array().unwrap().is_empty());
    assert_eq!(answer["trace"]["strategy"], "standard");
    assert_eq!(answer["abstained"], false);
    let run_id = answer["run_id"].as_str().unwrap().to_string();

    // A question the documents do not answer: the writer declines, and the run log
    // counts it.
    let (status, declined) = s
        .post(
            "/v1/ask",
            json!({"question": UNANSWERED, "strategy": "standard"}),
        )
        .await;
    assert_eq!(status, 200, "{declined}");
    assert_eq!(declined["abstained"], true, "{declined}");
    assert_eq!(declined["trace"]["abstention"]["by"], "writer");
    let (_, runs) = s.get("/v1/runs?limit=5").await;
    let row = runs["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == declined["run_id"])
        .unwrap();
    assert_eq!(row["abstained"], true);

    // Gold context: no retrieval.
    let (status, answer) = s
        .post(
            "/v1/ask",
            json!({"question": "When was the Hoover Dam built?", "strategy": "standard",
                   "context": [{"title": "Hoover Dam", "text": "It was built between 1931 and 1936."}]}),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["trace"]["mode"], "context");

    // The router's context without an answer; a "when" question also reads the audit
    // memory, which holds the uploads above.
    let (status, ctx) = s
        .post(
            "/v1/context",
            json!({"question": "When was the Hoover Dam built?"}),
        )
        .await;
    assert_eq!(status, 200, "{ctx}");
    assert_eq!(ctx["sources"][0]["title"], "Hoover Dam", "{ctx}");
    assert!(
        ctx["route"]["memories"]
            .as_array()
            .unwrap()
            .contains(&json!("audit")),
        "{ctx}"
    );
    assert!(!ctx["audit"].as_array().unwrap().is_empty(), "{ctx}");
    assert_eq!(ctx["trace"]["stop"]["detail"], "context only", "{ctx}");
    assert!(ctx["trace"]["rounds"].as_array().unwrap().is_empty());
    let (status, bad) = s.post("/v1/context", json!({"question": " "})).await;
    assert_eq!(status, 400, "{bad}");

    let (status, runs) = s.get("/v1/runs?strategy=standard").await;
    assert_eq!(status, 200, "{runs}");
    // The first answer, the declined one, the one over given context; newest first.
    assert_eq!(runs["runs"].as_array().unwrap().len(), 3);
    assert_eq!(runs["runs"][2]["id"], run_id.as_str());
    assert_eq!(runs["runs"][2]["surface"], "rest");
    let standard = runs["strategies"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["strategy"] == "standard")
        .unwrap();
    assert_eq!(standard["runs"], 3, "{runs}");
    assert_eq!(standard["abstained"], 1, "{runs}");
    let (status, run) = s.get(&format!("/v1/runs/{run_id}")).await;
    assert_eq!(status, 200, "{run}");
    assert_eq!(run["trace"]["question"], "When was the Hoover Dam built?");
    assert!(
        !run["trace"]["graph"]["events"]
            .as_array()
            .unwrap()
            .is_empty()
    );

    let r = s.http.get(s.url("/v1/metrics")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let text = r.text().await.unwrap();
    assert!(
        text.contains("metarag_asks_total{strategy=\"standard\",outcome=\"answered\"} 2"),
        "{text}"
    );
    assert!(
        text.contains("metarag_asks_total{strategy=\"standard\",outcome=\"abstained\"} 1"),
        "{text}"
    );

    // A scoped ask: the sources come only from the documents the filter allows.
    let (status, scoped) = s
        .post(
            "/v1/ask",
            json!({"question": "When was the Hoover Dam built?", "strategy": "standard",
                   "filter": {"metadata": {"region": "west"}}}),
        )
        .await;
    assert_eq!(status, 200, "{scoped}");
    let docs: Vec<&str> = scoped["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["doc"].as_str().unwrap())
        .collect();
    assert!(
        !docs.is_empty() && docs.iter().all(|d| *d == "rec-1"),
        "{scoped}"
    );
    assert_eq!(scoped["trace"]["scope"]["metadata"]["region"], "west");
    let (status, bad) = s
        .post(
            "/v1/ask",
            json!({"question": "When was the Hoover Dam built?", "strategy": "standard",
                   "filter": {"metadata": {"region": ["west"]}}}),
        )
        .await;
    assert_eq!(status, 400, "{bad}");
    assert!(bad.to_string().contains("filter.metadata.region"), "{bad}");
    assert!(text.contains("route=\"/v1/search\""), "{text}");

    let r = s
        .http
        .delete(s.url("/v1/documents/upload%3Apanama.html"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(!s.titles().await.contains(&"Panama Canal".to_string()));
    let (_, health) = s.get("/v1/health").await;
    assert_eq!(health["documents"], 4);
}

/// Collections over HTTP: made, listed, ingested into, searched within, renamed and
/// deleted with their documents, the default one kept.
#[tokio::test]
async fn collections_are_made_searched_renamed_and_deleted_over_http() {
    let s = start(scripted(), Limits::default()).await;
    let (status, body) = s.post("/v1/collections", json!({"name": "hr"})).await;
    assert_eq!(status, 201, "{body}");
    let (status, body) = s.post("/v1/collections", json!({"name": "hr"})).await;
    assert_eq!(
        (status, &body["created"]),
        (StatusCode::OK, &json!(false)),
        "{body}"
    );
    let (status, body) = s
        .post("/v1/collections", json!({"name": "Human Resources"}))
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("collection"),
        "{body}"
    );
    let record = |id: &str, title: &str, text: &str| json!({"records": [{"doc_id": id, "title": title, "text": text}]});
    let (status, body) = s
        .post(
            "/v1/ingest?collection=hr",
            record(
                "leave",
                "Leave policy",
                "Staff take twenty days of leave a year.",
            ),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = s
        .post(
            "/v1/ingest",
            record(
                "dam",
                "Hoover Dam",
                "Hoover Dam staff take shifts of twelve hours.",
            ),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    // The same id from another collection is refused, naming the one that holds it.
    let (status, body) = s
        .post(
            "/v1/ingest",
            record("leave", "Leave", "Other words about leave."),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(body.to_string().contains("hr"), "{body}");
    let (status, listed) = s.get("/v1/collections").await;
    assert_eq!(status, 200);
    let counts: Vec<(String, u64)> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().into(),
                c["documents"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(counts, [("default".into(), 1), ("hr".into(), 1)]);
    // A search keeps to the collections asked for.
    let titles = |hits: &Value| -> Vec<String> {
        hits["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["chunk"]["title"].as_str().unwrap().to_string())
            .collect()
    };
    let (status, hits) = s
        .post(
            "/v1/search",
            json!({"query": "staff take", "filter": {"collections": ["hr"]}}),
        )
        .await;
    assert_eq!(status, 200, "{hits}");
    assert_eq!(titles(&hits), ["Leave policy"]);
    let (_, docs) = s.get("/v1/documents?collection=hr").await;
    assert_eq!(docs.as_array().unwrap().len(), 1, "{docs}");
    // Renamed, then deleted with its document; the default collection stays.
    let (status, body) = s
        .http
        .patch(s.url("/v1/collections/hr"))
        .json(&json!({"name": "people"}))
        .send()
        .await
        .map(|r| (r.status(), r))
        .unwrap();
    assert_eq!(status, 200, "{:?}", body.text().await);
    let (status, hits) = s
        .post(
            "/v1/search",
            json!({"query": "staff take", "filter": {"collections": ["people"]}}),
        )
        .await;
    assert_eq!(
        (status, titles(&hits)),
        (StatusCode::OK, vec!["Leave policy".to_string()])
    );
    let delete = |path: &str| s.http.delete(s.url(path)).send();
    let r = delete("/v1/collections/people").await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.json::<Value>().await.unwrap()["documents"], 1);
    assert_eq!(s.titles().await, ["Hoover Dam"]);
    assert_eq!(
        delete("/v1/collections/people").await.unwrap().status(),
        404
    );
    assert_eq!(
        delete("/v1/collections/default").await.unwrap().status(),
        400
    );
}

/// Two collections, three keys: a reader of alpha, a writer of beta, an admin. Each key's
/// view of every endpoint: what it cannot read is not found (or refused when named), what
/// it cannot write is refused, and only the admin manages collections.
#[tokio::test]
async fn each_key_sees_and_changes_only_its_collections() {
    each_key_on(start(scripted(), Limits::default()).await).await;
}

/// [`each_key_sees_and_changes_only_its_collections`] with the store, the run log and the
/// keys in Postgres.
#[tokio::test]
async fn each_key_sees_and_changes_only_its_collections_on_postgres() {
    each_key_on(start_on(scripted(), Limits::default(), true).await).await;
}

async fn each_key_on(s: Server) {
    let record = |id: &str, title: &str, text: &str| json!({"records": [{"doc_id": id, "title": title, "text": text}]});
    for (c, id, text) in [
        ("alpha", "a1", "The alpha team deploys on Tuesdays."),
        ("beta", "b1", "The beta team deploys on Fridays."),
    ] {
        let (status, body) = s
            .post(
                &format!("/v1/ingest?collection={c}"),
                record(id, &format!("{c} notes"), text),
            )
            .await;
        assert_eq!(status, 200, "{body}");
    }
    let col = |n: &str| metarag_core::CollectionId::new(n).unwrap();
    let scoped = |read: &[&str], write: &[&str]| metarag_server::KeyScope {
        read: read.iter().map(|c| col(c)).collect(),
        write: write.iter().map(|c| col(c)).collect(),
    };
    let admin = s.keys.add("admin", None).await.unwrap().1;
    let reader = s
        .keys
        .add("reader", Some(scoped(&["alpha"], &[])))
        .await
        .unwrap()
        .1;
    let writer = s
        .keys
        .add("writer", Some(scoped(&[], &["beta"])))
        .await
        .unwrap()
        .1;
    let call = |method: reqwest::Method, path: &str, key: &str, body: Option<Value>| {
        let mut r = s.http.request(method, s.url(path)).bearer_auth(key);
        if let Some(b) = body {
            r = r.json(&b);
        }
        async move {
            let r = r.send().await.unwrap();
            let status = r.status().as_u16();
            (status, r.json::<Value>().await.unwrap_or(Value::Null))
        }
    };
    use reqwest::Method;
    let titles = |hits: &Value| -> Vec<String> {
        let mut t: Vec<String> = hits["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["chunk"]["title"].as_str().unwrap().to_string())
            .collect();
        t.sort();
        t.dedup();
        t
    };
    let search = json!({"query": "team deploys"});
    // Search: each key its own collections, the admin both.
    for (key, want) in [
        (&reader, vec!["alpha notes"]),
        (&writer, vec!["beta notes"]),
        (&admin, vec!["alpha notes", "beta notes"]),
    ] {
        let (status, hits) = call(Method::POST, "/v1/search", key, Some(search.clone())).await;
        assert_eq!(status, 200, "{hits}");
        assert_eq!(titles(&hits), want);
    }
    // Naming a collection the key cannot read is refused by name.
    let (status, body) = call(
        Method::POST,
        "/v1/search",
        &reader,
        Some(json!({"query": "team deploys", "filter": {"collections": ["beta"]}})),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("beta"));
    // Documents: not found when unreadable (no existence leak), refused when read-only.
    let (_, docs) = call(Method::GET, "/v1/documents", &reader, None).await;
    let ids: Vec<&str> = docs
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["a1"]);
    assert_eq!(
        call(Method::GET, "/v1/documents/b1", &reader, None).await.0,
        404
    );
    assert_eq!(
        call(Method::DELETE, "/v1/documents/b1", &reader, None)
            .await
            .0,
        404
    );
    assert_eq!(
        call(Method::DELETE, "/v1/documents/a1", &reader, None)
            .await
            .0,
        403
    );
    assert_eq!(
        call(Method::GET, "/v1/documents/b1", &writer, None).await.0,
        200
    );
    // Ingest: only into collections the key writes.
    let (status, _) = call(
        Method::POST,
        "/v1/ingest?collection=alpha",
        &writer,
        Some(record("w1", "Sneaky", "Written where it may not be.")),
    )
    .await;
    assert_eq!(status, 403);
    let (status, _) = call(
        Method::POST,
        "/v1/ingest?collection=beta",
        &writer,
        Some(record(
            "b2",
            "beta more",
            "The beta team also deploys on Mondays.",
        )),
    )
    .await;
    assert_eq!(status, 200);
    // Collections: listed as readable; managed by the admin alone.
    let (_, listed) = call(Method::GET, "/v1/collections", &reader, None).await;
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(listed[0]["name"], "alpha");
    assert_eq!(
        call(
            Method::POST,
            "/v1/collections",
            &reader,
            Some(json!({"name": "new"}))
        )
        .await
        .0,
        403
    );
    assert_eq!(
        call(Method::DELETE, "/v1/collections/beta", &writer, None)
            .await
            .0,
        403
    );
    // Ask: every search of the run stays in the key's collections, and the run is shown
    // to the keys that can read all it could.
    let (status, answer) = call(
        Method::POST,
        "/v1/ask",
        &reader,
        Some(json!({"question": "When does the team deploy?", "strategy": "standard"})),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    let sources: Vec<&str> = answer["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["title"].as_str().unwrap())
        .collect();
    assert!(
        !sources.is_empty() && sources.iter().all(|t| *t == "alpha notes"),
        "{answer}"
    );
    let run = answer["run_id"].as_str().unwrap().to_string();
    let runs = |key: &str| {
        let call = &call;
        let key = key.to_string();
        async move {
            let (_, body) = call(Method::GET, "/v1/runs", &key, None).await;
            body["runs"].as_array().unwrap().len()
        }
    };
    assert_eq!(runs(&reader).await, 1);
    assert_eq!(runs(&writer).await, 0);
    assert_eq!(runs(&admin).await, 1);
    assert_eq!(
        call(Method::GET, &format!("/v1/runs/{run}"), &writer, None)
            .await
            .0,
        404
    );
    assert_eq!(
        call(Method::GET, &format!("/v1/runs/{run}"), &reader, None)
            .await
            .0,
        200
    );
    // A renamed collection stays the keys' under its new name.
    let (status, body) = call(
        Method::PATCH,
        "/v1/collections/alpha",
        &admin,
        Some(json!({"name": "alpha-notes"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (_, docs) = call(Method::GET, "/v1/documents", &reader, None).await;
    assert_eq!(docs[0]["id"], "a1", "{docs}");
    assert_eq!(docs[0]["collection"], "alpha-notes", "{docs}");
    // And so do its runs.
    assert_eq!(runs(&reader).await, 1);
    assert_eq!(
        call(Method::GET, &format!("/v1/runs/{run}"), &reader, None)
            .await
            .0,
        200
    );
    // A run over beta, before beta is deleted.
    let (status, answer) = call(
        Method::POST,
        "/v1/ask",
        &writer,
        Some(json!({"question": "When does the team deploy?", "strategy": "standard"})),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    let beta_run = answer["run_id"].as_str().unwrap().to_string();
    assert_eq!(runs(&writer).await, 1);
    // A deleted one's name, made again, is not the old keys'.
    let (status, body) = call(Method::DELETE, "/v1/collections/beta", &admin, None).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = call(
        Method::POST,
        "/v1/collections",
        &admin,
        Some(json!({"name": "beta"})),
    )
    .await;
    assert!((200..300).contains(&status), "{status} {body}");
    let (status, _) = call(
        Method::POST,
        "/v1/ingest?collection=beta",
        &writer,
        Some(record("b3", "beta again", "Written after the delete.")),
    )
    .await;
    assert_eq!(status, 403);
    // Nor are the old collection's runs the new one's readers': the answer they hold
    // quotes documents that were deleted with it.
    let newcomer = s
        .keys
        .add("newcomer", Some(scoped(&["beta"], &[])))
        .await
        .unwrap()
        .1;
    assert_eq!(runs(&newcomer).await, 0);
    assert_eq!(
        call(
            Method::GET,
            &format!("/v1/runs/{beta_run}"),
            &newcomer,
            None
        )
        .await
        .0,
        404
    );
    assert_eq!(runs(&admin).await, 2);
}

/// Keys managed over HTTP by admin keys alone: made held to collections (and working at
/// once), listed without their hashes, removed (and refused at once).
#[tokio::test]
async fn admin_keys_manage_keys_over_http() {
    let s = start(scripted(), Limits::default()).await;
    let (status, body) = s
        .post(
            "/v1/ingest?collection=alpha",
            json!({"records": [{"doc_id": "a1", "title": "Alpha", "text": "Alpha deploys on Tuesdays."}]}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    // On an open server the first key made over HTTP must be an admin key.
    let (status, err) = s
        .post("/v1/keys", json!({"name": "first", "read": ["alpha"]}))
        .await;
    assert_eq!(status, 400, "{err}");
    let admin = s.keys.add("admin", None).await.unwrap().1;
    let call = |method: reqwest::Method, path: &str, key: &str, body: Option<Value>| {
        let mut r = s.http.request(method, s.url(path)).bearer_auth(key);
        if let Some(b) = body {
            r = r.json(&b);
        }
        async move {
            let r = r.send().await.unwrap();
            let status = r.status().as_u16();
            (status, r.json::<Value>().await.unwrap_or(Value::Null))
        }
    };
    use reqwest::Method;
    let (status, made) = call(
        Method::POST,
        "/v1/keys",
        &admin,
        Some(json!({"name": "alpha-reader", "read": ["alpha"]})),
    )
    .await;
    assert_eq!(status, 201, "{made}");
    let reader = made["key"].as_str().unwrap().to_string();
    let id = made["record"]["id"].as_str().unwrap().to_string();
    assert_eq!(made["record"]["scope"]["read"], json!(["alpha"]), "{made}");
    // It works at once, held to its collection, and manages nothing.
    let (status, docs) = call(Method::GET, "/v1/documents", &reader, None).await;
    assert_eq!(status, 200, "{docs}");
    assert_eq!(docs.as_array().unwrap().len(), 1);
    assert_eq!(call(Method::GET, "/v1/keys", &reader, None).await.0, 403);
    assert_eq!(
        call(
            Method::POST,
            "/v1/keys",
            &reader,
            Some(json!({"name": "x", "admin": true}))
        )
        .await
        .0,
        403
    );
    // Listed without the key or its hash.
    let (status, listed) = call(Method::GET, "/v1/keys", &admin, None).await;
    assert_eq!(status, 200, "{listed}");
    let names: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["admin", "alpha-reader"]);
    assert!(!listed.to_string().contains("sha256"), "{listed}");
    assert!(!listed.to_string().contains(&reader[4..]), "{listed}");
    // A key with no collections is refused rather than made an admin key; so is one
    // that is both.
    for body in [
        json!({"name": "vague"}),
        json!({"name": "both", "admin": true, "read": ["alpha"]}),
        json!({"name": "bad", "read": ["Not A Name"]}),
    ] {
        let (status, err) = call(Method::POST, "/v1/keys", &admin, Some(body.clone())).await;
        assert_eq!(status, 400, "{body} -> {err}");
    }
    // Removed: refused at once.
    let (status, gone) = call(Method::DELETE, &format!("/v1/keys/{id}"), &admin, None).await;
    assert_eq!(status, 200, "{gone}");
    assert_eq!(
        call(Method::GET, "/v1/documents", &reader, None).await.0,
        401
    );
    assert_eq!(
        call(Method::DELETE, &format!("/v1/keys/{id}"), &admin, None)
            .await
            .0,
        404
    );
}

/// The graph view reads an entity's neighbourhood off the chunks a key may read: the
/// graph's entities are shared by every collection, but another collection's names,
/// relations and chunks never appear, and an entity only another collection names is
/// not found.
#[tokio::test]
async fn the_graph_view_shows_only_what_the_key_may_read() {
    graph_view_on(start(scripted(), Limits::default()).await).await;
}

/// [`the_graph_view_shows_only_what_the_key_may_read`] over Postgres's graph.
#[tokio::test]
async fn the_graph_view_shows_only_what_the_key_may_read_on_postgres() {
    graph_view_on(start_on(scripted(), Limits::default(), true).await).await;
}

async fn graph_view_on(s: Server) {
    for (c, id, title, text) in [
        (
            "alpha",
            "dalby",
            "Orrin Dalby",
            "Orrin Dalby was the mayor of Marrowgate. Dalby was born in Kestrel Bay.",
        ),
        (
            "beta",
            "dossier",
            "Dalby Dossier",
            "Orrin Dalby met Vesna Krall in Brightwater.",
        ),
    ] {
        let (status, body) = s
            .post(
                &format!("/v1/ingest?collection={c}"),
                json!({"records": [{"doc_id": id, "title": title, "text": text}]}),
            )
            .await;
        assert_eq!(status, 200, "{body}");
    }
    let col = |n: &str| metarag_core::CollectionId::new(n).unwrap();
    let admin = s.keys.add("admin", None).await.unwrap().1;
    let reader = s
        .keys
        .add(
            "reader",
            Some(metarag_server::KeyScope {
                read: vec![col("alpha")],
                write: vec![],
            }),
        )
        .await
        .unwrap()
        .1;
    let graph = |key: &str, body: Value| {
        let r = s.http.post(s.url("/v1/graph")).bearer_auth(key).json(&body);
        async move {
            let r = r.send().await.unwrap();
            (r.status().as_u16(), r.json::<Value>().await.unwrap())
        }
    };
    let names = |g: &Value| -> Vec<String> {
        g["neighbours"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["name"].as_str().unwrap().to_string())
            .collect()
    };
    let (status, g) = graph(&reader, json!({"entity": "Orrin Dalby"})).await;
    assert_eq!(status, 200, "{g}");
    assert_eq!(g["entity"], "Orrin Dalby", "{g}");
    let seen = names(&g);
    assert!(seen.iter().any(|n| n == "Marrowgate"), "{g}");
    let text = g.to_string();
    for hidden in ["Vesna", "Brightwater", "Dossier", "dossier"] {
        assert!(!text.contains(hidden), "{hidden} leaked: {g}");
    }
    // The admin reads both collections' chunks.
    let (status, g) = graph(&admin, json!({"entity": "Orrin Dalby"})).await;
    assert_eq!(status, 200, "{g}");
    let seen = names(&g);
    assert!(
        seen.iter().any(|n| n == "Marrowgate") && seen.iter().any(|n| n == "Vesna Krall"),
        "{g}"
    );
    // Naming a collection the key cannot read is refused; a name only it states is not
    // found, as a name no document states.
    let (status, _) = graph(
        &reader,
        json!({"entity": "Orrin Dalby", "collections": ["beta"]}),
    )
    .await;
    assert_eq!(status, 403);
    let (status, secret) = graph(&reader, json!({"entity": "Vesna Krall"})).await;
    let (_, nothing) = graph(&reader, json!({"entity": "Nobody Atall"})).await;
    assert_eq!(status, 404, "{secret}");
    assert_eq!(
        secret["error"]["message"]
            .as_str()
            .unwrap()
            .replace("Vesna Krall", "X"),
        nothing["error"]["message"]
            .as_str()
            .unwrap()
            .replace("Nobody Atall", "X")
    );
    let (status, _) = graph(&reader, json!({"entity": "  "})).await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn bad_input_gets_a_clear_error_and_nothing_stored_is_lost() {
    let limits = Limits {
        max_body_bytes: 64 << 10,
        max_files: 3,
        ..Limits::default()
    };
    let s = start(scripted(), limits).await;
    let (status, _) = s.upload(&[("hoover.md", HOOVER.as_bytes().to_vec())]).await;
    assert_eq!(status, 200);
    let before = s.titles().await;

    let message = |b: &Value| {
        b["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };

    // A corrupt PDF: 400, naming the file.
    let (status, body) = s
        .upload(&[("broken.pdf", b"%PDF-1.4 not really".to_vec())])
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(message(&body).contains("broken.pdf"), "{body}");

    // A name that tries to leave the upload: refused, never a path.
    for name in ["../../etc/passwd.md", "..\\evil.md", "a/b.md"] {
        let (status, body) = s.upload(&[(name, HOOVER.as_bytes().to_vec())]).await;
        assert_eq!(status, 400, "{name}: {body}");
        assert!(message(&body).contains("refused"), "{body}");
    }

    // Too big, too many.
    let (status, body) = s.upload(&[("big.txt", vec![b'a'; 200 << 10])]).await;
    assert_eq!(status, 413, "{body}");
    assert_eq!(body["error"]["code"], "payload_too_large");
    let many: Vec<(&str, Vec<u8>)> = ["a.txt", "b.txt", "c.txt", "d.txt"]
        .into_iter()
        .map(|n| (n, b"text".to_vec()))
        .collect();
    let (status, body) = s.upload(&many).await;
    assert_eq!(status, 413, "{body}");

    // An unsupported format, and a body that is neither multipart nor JSON.
    let (status, body) = s
        .upload(&[("image.png", vec![0x89, b'P', b'N', b'G'])])
        .await;
    assert_eq!(status, 400, "{body}");
    let r = s
        .http
        .post(s.url("/v1/ingest"))
        .body("x")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);

    // Asks: unknown strategy, empty question, malformed JSON.
    let (status, body) = s
        .post("/v1/ask", json!({"question": "q", "strategy": "nope"}))
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(
        message(&body).contains("unknown strategy `nope`") && message(&body).contains("metarag"),
        "{body}"
    );
    let (status, _) = s.post("/v1/ask", json!({"question": "  "})).await;
    assert_eq!(status, 400);
    let r = s
        .http
        .post(s.url("/v1/ask"))
        .header("content-type", "application/json")
        .body("{\"question\": ")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let (status, body) = s.post("/v1/search", json!({"query": "dam", "k": 0})).await;
    assert_eq!(status, 400, "{body}");
    assert!(message(&body).contains("`k`"));

    // Unknown things.
    assert_eq!(s.get("/v1/documents/upload%3Anope.md").await.0, 404);
    assert_eq!(
        s.http
            .delete(s.url("/v1/documents/nope"))
            .send()
            .await
            .unwrap()
            .status(),
        404
    );
    assert_eq!(s.get("/v1/runs/nope").await.0, 404);
    let (status, body) = s.get("/v2/anything").await;
    assert_eq!(status, 404);
    assert_eq!(body["error"]["code"], "not_found");

    assert_eq!(s.titles().await, before);
}

#[tokio::test]
async fn an_api_key_is_required_once_one_exists() {
    let s = start(scripted(), Limits::default()).await;
    assert_eq!(s.get("/v1/documents").await.0, 200);
    let (_, key) = s.keys.add("test", None).await.unwrap();
    let (status, body) = s.get("/v1/documents").await;
    assert_eq!(status, 401);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Bearer"),
        "{body}"
    );
    let wrong = s
        .http
        .get(s.url("/v1/documents"))
        .bearer_auth("mrk_0000")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    let right = s
        .http
        .get(s.url("/v1/documents"))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(right.status(), 200);
    // Health and the pages stay open: a load balancer and the page's key prompt need them.
    let (status, health) = s.get("/v1/health").await;
    assert_eq!(status, 200);
    assert_eq!(health["auth"], true);
    assert_eq!(s.http.get(s.url("/")).send().await.unwrap().status(), 200);
}

/// Parses an SSE body into (event, data) pairs.
fn events(body: &str) -> Vec<(String, Value)> {
    body.split("\n\n")
        .filter_map(|block| {
            let mut event = None;
            let mut data = String::new();
            for line in block.lines() {
                if let Some(e) = line.strip_prefix("event:") {
                    event = Some(e.trim().to_string());
                } else if let Some(d) = line.strip_prefix("data:") {
                    data.push_str(d.trim_start());
                }
            }
            Some((event?, serde_json::from_str(&data).ok()?))
        })
        .collect()
}

#[tokio::test]
async fn the_stream_reports_nodes_tokens_and_the_trace_in_order() {
    let s = start(scripted(), Limits::default()).await;
    let (status, _) = s.upload(&[("hoover.md", HOOVER.as_bytes().to_vec())]).await;
    assert_eq!(status, 200);
    let r = s
        .http
        .post(s.url("/v1/ask/stream"))
        .json(&json!({"question": "When was the Hoover Dam built?", "strategy": "standard"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(
        r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let got = events(&r.text().await.unwrap());
    let names: Vec<&str> = got.iter().map(|(e, _)| e.as_str()).collect();
    assert_eq!(names.first(), Some(&"started"), "{names:?}");
    assert_eq!(names.last(), Some(&"done"), "{names:?}");
    // Every node that starts ends before the next starts.
    let mut open: Option<String> = None;
    for (e, d) in &got {
        match e.as_str() {
            "node_start" => {
                assert!(open.is_none(), "{names:?}");
                open = Some(d["node"].as_str().unwrap().to_string());
            }
            "node_end" => assert_eq!(open.take().as_deref(), d["node"].as_str()),
            _ => {}
        }
    }
    let nodes: Vec<&str> = got
        .iter()
        .filter(|(e, _)| e == "node_start")
        .map(|(_, d)| d["node"].as_str().unwrap())
        .collect();
    assert_eq!(nodes, ["retrieve", "read", "write"]);
    // The answer's text arrives as tokens of the write call, before the write ends.
    let write_end = names.iter().rposition(|n| *n == "node_end").unwrap();
    let text: String = got[..write_end]
        .iter()
        .filter(|(e, d)| e == "token" && d["purpose"] == "write")
        .map(|(_, d)| d["text"].as_str().unwrap())
        .collect();
    assert_eq!(text, "The Hoover Dam was built between 1931 and 1936 [1].");
    let done = &got.last().unwrap().1;
    assert_eq!(done["trace"]["short_answer"], "1931 to 1936");
    let (status, _) = s
        .get(&format!("/v1/runs/{}", done["run_id"].as_str().unwrap()))
        .await;
    assert_eq!(status, 200);

    // Bad input is refused with a status before any stream starts.
    let (status, _) = s
        .post(
            "/v1/ask/stream",
            json!({"question": "q", "strategy": "nope"}),
        )
        .await;
    assert_eq!(status, 400);
}

/// A chat model that holds every call until released: asks pile up behind it.
struct Held {
    inner: ScriptedLlm,
    gate: Arc<tokio::sync::Semaphore>,
}

impl Llm for Held {
    fn model_id(&self) -> &str {
        "held"
    }
    async fn chat(
        &self,
        request: &metarag_core::ChatRequest,
    ) -> metarag_core::Result<metarag_core::Completion> {
        let _pass = self.gate.acquire().await.unwrap();
        self.inner.chat(request).await
    }
}

#[tokio::test]
async fn asks_beyond_the_queue_are_refused_with_retry_after_and_none_is_lost() {
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let llm: Arc<dyn DynLlm> = Arc::new(Held {
        inner: ScriptedLlm::new().otherwise(ANSWER),
        gate: gate.clone(),
    });
    let limits = Limits {
        running_asks: 1,
        waiting_asks: 1,
        ..Limits::default()
    };
    let s = Arc::new(start(llm, limits).await);
    let (status, _) = s.upload(&[("hoover.md", HOOVER.as_bytes().to_vec())]).await;
    assert_eq!(status, 200);
    let ask = |s: Arc<Server>| async move {
        s.post(
            "/v1/ask",
            json!({"question": "When was the Hoover Dam built?", "strategy": "standard"}),
        )
        .await
    };
    let first = tokio::spawn(ask(s.clone()));
    // Let the first take the slot and the second start waiting.
    let metrics = |s: Arc<Server>| async move {
        s.http
            .get(s.url("/v1/metrics"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    };
    for _ in 0..200 {
        if metrics(s.clone()).await.contains("metarag_asks_running 1") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let second = tokio::spawn(ask(s.clone()));
    for _ in 0..200 {
        if metrics(s.clone()).await.contains("metarag_asks_waiting 1") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let r = s
        .http
        .post(s.url("/v1/ask"))
        .json(&json!({"question": "When was the Hoover Dam built?", "strategy": "standard"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 429);
    let retry: u64 = r.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(retry >= 1);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "too_many_requests");

    gate.add_permits(1000);
    let (a, b) = (first.await.unwrap(), second.await.unwrap());
    assert_eq!(a.0, 200, "{}", a.1);
    assert_eq!(b.0, 200, "{}", b.1);
    assert!(b.1["queue_ms"].as_f64().unwrap() > 0.0);
    assert_eq!(b.1["trace"]["queue_ms"], b.1["queue_ms"]);
    let text = metrics(s.clone()).await;
    assert!(text.contains("metarag_asks_rejected_total 1"), "{text}");
    assert!(text.contains("metarag_asks_running 0"), "{text}");
}

#[tokio::test]
async fn the_openapi_document_docs_page_and_web_page_are_served() {
    let s = start(scripted(), Limits::default()).await;
    let (status, doc) = s.get("/openapi.json").await;
    assert_eq!(status, 200);
    assert_eq!(doc["openapi"], "3.1.0");
    assert!(doc["components"]["schemas"]["AskBody"].is_object());
    assert!(doc["paths"]["/v1/ask/stream"]["post"].is_object());
    for (path, needle) in [("/", "<title>metarag</title>"), ("/docs", "openapi.json")] {
        let r = s.http.get(s.url(path)).send().await.unwrap();
        assert_eq!(r.status(), 200);
        assert!(r.text().await.unwrap().contains(needle), "{path}");
    }
}

#[tokio::test]
async fn the_real_local_model_streams_an_answer_over_http() {
    let llm: Arc<dyn DynLlm> = metarag_testkit::local_llm();
    let s = start(llm, Limits::default()).await;
    let (status, _) = s.upload(&[("hoover.md", HOOVER.as_bytes().to_vec())]).await;
    assert_eq!(status, 200);
    let r = s
        .http
        .post(s.url("/v1/ask/stream"))
        .json(&json!({"question": "When was the Hoover Dam constructed?", "strategy": "standard"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let got = events(&r.text().await.unwrap());
    let tokens = got
        .iter()
        .filter(|(e, d)| e == "token" && d["purpose"] == "write")
        .count();
    assert!(tokens > 3, "the answer should arrive in pieces: {got:?}");
    let (last, done) = got.last().unwrap();
    assert_eq!(last, "done", "{done}");
    let answer = done["trace"]["answer"].as_str().unwrap();
    assert!(
        answer.contains("1931") || answer.contains("1936"),
        "{answer}"
    );
}
