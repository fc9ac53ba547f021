//! The web page in a real browser: headless Chromium driven over WebDriver (chromedriver,
//! both from Debian's packages, installed by `scripts/test.sh`). Upload a document, ask,
//! see the answer stream in with a clickable citation, open the source and the trace,
//! look at the runs dashboard.
//!
//! `METARAG_SCREENSHOTS=DIR` saves a screenshot of each view there (the ones in `docs/`
//! come from this test run against `metarag serve` with the default local model:
//! `METARAG_BROWSER_URL=http://127.0.0.1:8080 METARAG_BROWSER_STRATEGY=metarag`). Without Chromium the test fails and
//! says how to install it; `METARAG_SKIP_BROWSER=1` skips it on purpose.

use crate::api::{HOOVER, scripted, start};
use fantoccini::{Client, ClientBuilder, Locator};
use metarag_server::Limits;
use serde_json::json;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// Kills chromedriver however the test ends.
struct Driver(Child);

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

async fn browser() -> (Driver, Client) {
    let chromedriver = ["chromedriver", "/usr/bin/chromedriver"]
        .into_iter()
        .find(|c| {
            Command::new(c)
                .arg("--version")
                .stdout(Stdio::null())
                .status()
                .is_ok()
        })
        .unwrap_or_else(|| {
            panic!(
                "chromedriver is not installed: `sudo apt-get install chromium chromium-driver` (scripts/test.sh does), or set METARAG_SKIP_BROWSER=1"
            )
        });
    let port = free_port();
    let driver = Driver(
        Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let caps = json!({
        "browserName": "chrome",
        "goog:chromeOptions": {
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,900"]
        }
    });
    let url = format!("http://127.0.0.1:{port}");
    let connector = hyper_util::client::legacy::connect::HttpConnector::new();
    let mut last = None;
    // chromedriver takes a moment to listen.
    for _ in 0..100 {
        match ClientBuilder::new(connector.clone())
            .capabilities(caps.as_object().unwrap().clone())
            .connect(&url)
            .await
        {
            Ok(c) => return (driver, c),
            Err(e) => last = Some(e),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("chromedriver did not start: {last:?}");
}

async fn shot(c: &Client, name: &str) {
    if let Some(dir) = std::env::var_os("METARAG_SCREENSHOTS") {
        let dir = PathBuf::from(dir);
        std::fs::create_dir_all(&dir).unwrap();
        let png = c.screenshot().await.unwrap();
        std::fs::write(dir.join(format!("{name}.png")), png).unwrap();
    }
}

async fn click(c: &Client, id: &str) {
    c.find(Locator::Id(id))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
}

async fn text(c: &Client, id: &str) -> String {
    c.find(Locator::Id(id)).await.unwrap().text().await.unwrap()
}

/// Waits until `script` (a JS expression) is truthy.
async fn until(c: &Client, what: &str, script: &str, secs: u64) {
    let deadline = std::time::Instant::now() + Duration::from_secs(secs);
    loop {
        let v = c
            .execute(&format!("return !!({script});"), vec![])
            .await
            .unwrap();
        if v == json!(true) {
            return;
        }
        if std::time::Instant::now() > deadline {
            let page = c
                .execute("return document.body.innerText;", vec![])
                .await
                .unwrap();
            panic!("timed out waiting for {what}; the page says:\n{page}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn the_web_page_uploads_asks_streams_cites_and_shows_the_trace() {
    if std::env::var_os("METARAG_SKIP_BROWSER").is_some() {
        eprintln!("METARAG_SKIP_BROWSER is set: the browser test is skipped");
        return;
    }
    // Against a running `metarag serve`, or a fresh server with the scripted model.
    let (base, _server) = match std::env::var("METARAG_BROWSER_URL") {
        Ok(url) => (url, None),
        Err(_) => {
            let s = start(scripted(), Limits::default()).await;
            // Another collection's document on the same entity: the graph view of the
            // default collection must not show what it names.
            let (status, body) = s
                .post(
                    "/v1/ingest?collection=beta",
                    json!({"records": [{"doc_id": "rumours", "title": "Dam Rumours",
                        "text": "Hoover Dam was toured by Vesna Krall in 1990."}]}),
                )
                .await;
            assert_eq!(status, 200, "{body}");
            (s.base.clone(), Some(s))
        }
    };
    let local = _server.is_some();
    let (_driver, c) = browser().await;
    c.goto(&format!("{base}/")).await.unwrap();
    until(
        &c,
        "the health line",
        "document.getElementById('health').textContent.includes('documents')",
        30,
    )
    .await;

    // Documents: upload a file through the file input.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("hoover-dam.md");
    std::fs::write(&file, HOOVER).unwrap();
    click(&c, "tab-docs").await;
    c.find(Locator::Id("files"))
        .await
        .unwrap()
        .send_keys(file.to_str().unwrap())
        .await
        .unwrap();
    click(&c, "upload-btn").await;
    until(
        &c,
        "the upload result",
        "document.getElementById('upload-result').textContent.includes('hoover-dam.md:')",
        120,
    )
    .await;
    until(
        &c,
        "the document in the list",
        "[...document.querySelectorAll('#docs td')].some(td => td.textContent === 'Hoover Dam')",
        30,
    )
    .await;
    shot(&c, "documents").await;

    // Ask: the answer streams in, then its citation opens the source passage.
    click(&c, "tab-ask").await;
    c.find(Locator::Id("question"))
        .await
        .unwrap()
        .send_keys("When was the Hoover Dam built?")
        .await
        .unwrap();
    // The screenshots in docs/ show the metarag loop (METARAG_BROWSER_STRATEGY=metarag).
    let strategy = std::env::var("METARAG_BROWSER_STRATEGY").unwrap_or_else(|_| "standard".into());
    c.execute(
        "document.getElementById('strategy').value = arguments[0];",
        vec![json!(strategy)],
    )
    .await
    .unwrap();
    // Asked inside one collection, picked from those the key reads.
    until(
        &c,
        "the default collection in the picker",
        "[...document.getElementById('collection').options].some(o => o.value === 'default')",
        30,
    )
    .await;
    c.execute(
        "document.getElementById('collection').value = 'default';",
        vec![],
    )
    .await
    .unwrap();
    click(&c, "ask-btn").await;
    until(
        &c,
        "streamed answer text",
        "document.getElementById('answer').dataset.streamed === 'true'",
        300,
    )
    .await;
    until(
        &c,
        "the finished answer",
        "document.getElementById('status').textContent.startsWith('done')",
        300,
    )
    .await;
    until(
        &c,
        "a node in the progress list",
        "document.querySelectorAll('#nodes li').length >= 3",
        5,
    )
    .await;
    let cite = c
        .find(Locator::Css("#answer button.cite"))
        .await
        .expect("the answer has a clickable citation");
    cite.click().await.unwrap();
    until(
        &c,
        "the source dialog",
        "document.getElementById('source-dialog').open",
        5,
    )
    .await;
    let source = text(&c, "source-text").await;
    assert!(source.contains("Hoover"), "{source}");
    shot(&c, "ask").await;
    c.execute("document.getElementById('source-dialog').close();", vec![])
        .await
        .unwrap();

    // The graph view from a source: the entities its collection names beside it, and
    // none that only another collection's documents name.
    c.find(Locator::Css("#sources button.graph-open"))
        .await
        .expect("a source has a graph button")
        .click()
        .await
        .unwrap();
    until(
        &c,
        "the graph view's entities",
        "document.getElementById('graph-dialog').open && document.querySelectorAll('#graph-svg circle.entity').length > 0",
        30,
    )
    .await;
    let shown = c
        .execute(
            "return [...document.querySelectorAll('#graph-svg circle.entity')].map(c => c.dataset.name);",
            vec![],
        )
        .await
        .unwrap();
    let shown: Vec<String> = serde_json::from_value(shown).unwrap();
    if local {
        assert!(
            shown.iter().any(|n| n.contains("Colorado River")),
            "{shown:?}"
        );
        assert!(!shown.iter().any(|n| n.contains("Vesna")), "{shown:?}");
    }
    shot(&c, "graph").await;
    c.execute("document.getElementById('graph-dialog').close();", vec![])
        .await
        .unwrap();

    // The trace.
    click(&c, "trace-btn").await;
    until(
        &c,
        "the trace dialog",
        "document.getElementById('trace-dialog').open",
        5,
    )
    .await;
    let trace = text(&c, "trace-body").await;
    assert!(
        trace.contains("Steps and timings") && trace.contains("write"),
        "{trace}"
    );
    shot(&c, "trace").await;
    c.execute("document.getElementById('trace-dialog').close();", vec![])
        .await
        .unwrap();

    // A question the documents do not answer: the page says it was not answered.
    let q = c.find(Locator::Id("question")).await.unwrap();
    q.clear().await.unwrap();
    q.send_keys(crate::api::UNANSWERED).await.unwrap();
    click(&c, "ask-btn").await;
    until(
        &c,
        "the declined notice",
        "!document.getElementById('declined').hidden",
        300,
    )
    .await;
    let notice = text(&c, "declined").await;
    assert!(notice.starts_with("Not answered:"), "{notice}");
    assert_eq!(text(&c, "short").await, "");

    // Runs: the ask is on the dashboard, and opens its trace.
    click(&c, "tab-runs").await;
    until(&c, "the run in the dashboard", "[...document.querySelectorAll('#runs button')].some(b => b.textContent.includes('Hoover'))", 30).await;
    until(
        &c,
        "the declined run marked",
        "[...document.querySelectorAll('#runs .badge')].some(b => b.textContent === 'declined')",
        30,
    )
    .await;
    shot(&c, "runs").await;

    // Admin: the server has no keys yet, so the page may manage them; the first key made
    // (an admin key) is shown once. (Last: from then on every request needs a key.)
    if local {
        until(
            &c,
            "the admin tab",
            "!document.getElementById('tab-admin').hidden",
            30,
        )
        .await;
        click(&c, "tab-admin").await;
        until(
            &c,
            "the collections in the admin view",
            "[...document.querySelectorAll('#admin-collections td')].some(td => td.textContent === 'beta')",
            30,
        )
        .await;
        c.find(Locator::Id("key-name"))
            .await
            .unwrap()
            .send_keys("first admin")
            .await
            .unwrap();
        click(&c, "key-admin").await;
        c.find(Locator::Css("#key-form button[type=submit]"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        until(
            &c,
            "the new key shown once",
            "(document.getElementById('new-key') || {}).textContent?.startsWith('mrk_')",
            30,
        )
        .await;
        shot(&c, "admin").await;
    }
    c.close().await.unwrap();
}
