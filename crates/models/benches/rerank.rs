//! Reranking throughput (pairs/s) of both rerankers on real HotpotQA passages.
//!
//! - The cross-encoder at the size of ms-marco-MiniLM-L-6-v2 (6 layers, 384 wide, MiniLM's
//!   tokenizer). No registry package ships cross-encoder weights, so the weights here are
//!   random: speed depends on the shapes only, not on the values.
//! - The local chat model as a yes/no reranker, with the question's prefix reused.
//!
//! Run with `cargo bench --profile dev -p metarag-models --bench rerank`.

use candle_core::{DType, Device};
use candle_nn::{VarBuilder, VarMap};
use candle_transformers::models::bert;
use metarag_core::Reranker;
use metarag_models::{CrossEncoder, LlmReranker};
use std::sync::OnceLock;

fn main() {
    divan::main();
}

const QUESTION: &str = "Which country is the director of Jaws from?";

fn passages() -> &'static Vec<String> {
    static P: OnceLock<Vec<String>> = OnceLock::new();
    P.get_or_init(|| {
        let text = metarag_testkit::qa_file("hotpotqa-corpus.jsonl");
        text.lines()
            .take(20)
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).expect("corpus line");
                format!(
                    "{}: {}",
                    v["title"].as_str().unwrap_or(""),
                    v["text"].as_str().unwrap_or("")
                )
            })
            .collect()
    })
}

fn cross_encoder() -> &'static (tempfile::TempDir, CrossEncoder) {
    static CE: OnceLock<(tempfile::TempDir, CrossEncoder)> = OnceLock::new();
    CE.get_or_init(|| {
        metarag_testkit::embedder();
        let minilm = metarag_testkit::models_dir().join(metarag_testkit::EMBEDDER);
        let dir = tempfile::tempdir().unwrap();
        let mut config: serde_json::Value =
            serde_json::from_slice(&std::fs::read(minilm.join("config.json")).unwrap()).unwrap();
        config["architectures"] = serde_json::json!(["BertForSequenceClassification"]);
        config["id2label"] = serde_json::json!({"0": "LABEL_0"});
        std::fs::write(dir.path().join("config.json"), config.to_string()).unwrap();
        std::fs::copy(
            minilm.join("tokenizer.json"),
            dir.path().join("tokenizer.json"),
        )
        .unwrap();
        let cfg: bert::Config = serde_json::from_value(config).unwrap();
        let varmap = VarMap::new();
        let vb = VarBuilder::from_varmap(&varmap, DType::F32, &Device::Cpu);
        bert::BertModel::load(vb.pp("bert"), &cfg).unwrap();
        let h = cfg.hidden_size;
        candle_nn::linear(h, h, vb.pp("bert.pooler.dense")).unwrap();
        candle_nn::linear(h, 1, vb.pp("classifier")).unwrap();
        varmap.save(dir.path().join("model.safetensors")).unwrap();
        let ce = CrossEncoder::load(dir.path(), "minilm-l6-size-random").unwrap();
        (dir, ce)
    })
}

#[divan::bench(sample_count = 5, sample_size = 1)]
fn cross_encoder_20_pairs(bencher: divan::Bencher) {
    let (_, ce) = cross_encoder();
    let ps = passages();
    bencher
        .counter(divan::counter::ItemsCount::new(ps.len()))
        .bench(|| ce.score_blocking(QUESTION, ps).unwrap());
}

#[divan::bench(sample_count = 2, sample_size = 1)]
fn local_llm_yes_no_20_pairs(bencher: divan::Bencher) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let reranker = LlmReranker::new(metarag_testkit::local_llm(), 600);
    let ps = passages();
    bencher
        .counter(divan::counter::ItemsCount::new(ps.len()))
        .bench(|| rt.block_on(reranker.score(QUESTION, ps)).unwrap());
}
