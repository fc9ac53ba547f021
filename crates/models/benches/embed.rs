//! Embedding throughput of the default local model on real HotpotQA passages.
//! Run with `cargo bench -p metarag-models`; tokens/s is reported through divan's counter.

use metarag_core::embedding_input;
use std::sync::OnceLock;

// The allocator the `metarag` binary uses, so the figures are the product's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    divan::main();
}

fn passages() -> &'static (Vec<String>, usize) {
    static P: OnceLock<(Vec<String>, usize)> = OnceLock::new();
    P.get_or_init(|| {
        let text = metarag_testkit::qa_file("hotpotqa-corpus.jsonl");
        let texts: Vec<String> = text
            .lines()
            .take(64)
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).expect("corpus line");
                embedding_input(
                    v["title"].as_str().unwrap_or(""),
                    &[],
                    v["text"].as_str().unwrap_or(""),
                )
            })
            .collect();
        let e = metarag_testkit::embedder();
        let tokens = texts.iter().map(|t| e.count_tokens(t).unwrap()).sum();
        (texts, tokens)
    })
}

#[divan::bench(sample_count = 5, sample_size = 1)]
fn embed_64_passages(bencher: divan::Bencher) {
    let e = metarag_testkit::embedder();
    let (texts, tokens) = passages();
    bencher
        .counter(divan::counter::ItemsCount::new(*tokens))
        .bench(|| e.embed_blocking(texts).unwrap());
}

#[divan::bench(sample_count = 20)]
fn embed_one_query(bencher: divan::Bencher) {
    let e = metarag_testkit::embedder();
    let q = vec!["Which country is the director of Jaws from?".to_string()];
    bencher.bench(|| e.embed_blocking(&q).unwrap());
}

/// The int8 encoder (`[embedder] precision = "int8"`), where the CPU has AVX-512 VNNI.
#[divan::bench(sample_count = 5, sample_size = 1)]
fn embed_64_passages_int8(bencher: divan::Bencher) {
    let Some(e) = int8_embedder() else {
        eprintln!("no AVX-512 VNNI on this CPU: int8 not measured");
        return;
    };
    let (texts, tokens) = passages();
    bencher
        .counter(divan::counter::ItemsCount::new(*tokens))
        .bench(|| e.embed_blocking(texts).unwrap());
}

fn int8_embedder() -> Option<metarag_models::SentenceEmbedder> {
    let precision = metarag_models::Precision::Int8;
    precision.supported().then(|| {
        let _ = metarag_testkit::embedder(); // installs the model if needed
        let dir = metarag_testkit::models_dir().join(metarag_testkit::EMBEDDER);
        metarag_models::SentenceEmbedder::load_with(
            &dir,
            metarag_testkit::EMBEDDER,
            None,
            precision,
        )
        .unwrap()
    })
}
