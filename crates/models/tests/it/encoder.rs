//! The crate's own BERT encoder against candle's `BertModel`, the reference it replaced: the
//! real default embedder on real passages, and a tiny cross-encoder with random weights.

use candle_core::{DType, Device, Module, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert;
use metarag_core::Reranker;
use metarag_models::CrossEncoder;
use std::path::Path;
use tokenizers::{PaddingParams, Tokenizer, TruncationParams};

/// Mean-pooled, normalised vectors of `texts` through candle's `BertModel` with a padded
/// batch and its attention mask: how the embedder computed them before.
fn candle_embeddings(dir: &Path, texts: &[String]) -> Vec<Vec<f32>> {
    let cfg: bert::Config =
        serde_json::from_slice(&std::fs::read(dir.join("config.json")).unwrap()).unwrap();
    let vb = VarBuilder::from_buffered_safetensors(
        std::fs::read(dir.join("model.safetensors")).unwrap(),
        DType::F32,
        &Device::Cpu,
    )
    .unwrap();
    let model = bert::BertModel::load(vb, &cfg).unwrap();
    let mut tok = Tokenizer::from_file(dir.join("tokenizer.json")).unwrap();
    tok.with_truncation(Some(TruncationParams {
        max_length: 256,
        ..Default::default()
    }))
    .unwrap();
    tok.with_padding(Some(PaddingParams::default()));
    let enc = tok.encode_batch(texts.to_vec(), true).unwrap();
    let (n, len) = (enc.len(), enc[0].get_ids().len());
    let ids: Vec<u32> = enc.iter().flat_map(|e| e.get_ids().to_vec()).collect();
    let mask: Vec<u32> = enc
        .iter()
        .flat_map(|e| e.get_attention_mask().to_vec())
        .collect();
    let ids = Tensor::from_vec(ids, (n, len), &Device::Cpu).unwrap();
    let mask = Tensor::from_vec(mask, (n, len), &Device::Cpu).unwrap();
    let hidden = model
        .forward(&ids, &ids.zeros_like().unwrap(), Some(&mask))
        .unwrap();
    let m = mask.to_dtype(DType::F32).unwrap().unsqueeze(2).unwrap();
    let pooled = hidden
        .broadcast_mul(&m)
        .unwrap()
        .sum(1)
        .unwrap()
        .broadcast_div(&m.sum(1).unwrap())
        .unwrap();
    pooled
        .to_vec2::<f32>()
        .unwrap()
        .into_iter()
        .map(|v| {
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            v.iter().map(|x| x / norm).collect()
        })
        .collect()
}

#[test]
fn the_embedder_agrees_with_candles_bert_on_real_passages() {
    let embedder = metarag_testkit::embedder();
    // 48 passages of mixed length (one batch pads heavily under candle) plus edge cases: a
    // one-word text and one longer than the model's 256 tokens.
    let mut texts = corpus_passages(0, 48);
    texts.push("Jaws".into());
    texts.push(texts[..6].join(" "));
    let ours = embedder.embed_blocking(&texts).unwrap();
    let dir = metarag_testkit::models_dir().join(metarag_testkit::EMBEDDER);
    let theirs = candle_embeddings(&dir, &texts);
    let worst = ours
        .iter()
        .zip(&theirs)
        .map(|(a, b)| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>())
        .fold(1f32, f32::min);
    assert!(
        worst > 0.99999,
        "lowest cosine to candle's vectors: {worst}"
    );
    // Batch composition does not change a vector: no padding leaks into it.
    let alone = embedder.embed_blocking(&texts[..1]).unwrap();
    let cos: f32 = alone[0].iter().zip(&ours[0]).map(|(x, y)| x * y).sum();
    assert!(cos > 0.999999, "{cos}");
}

#[tokio::test]
async fn the_cross_encoder_agrees_with_candles_bert() {
    let dir = tempfile::tempdir().unwrap();
    crate::cross_encoder::write_tiny_model(dir.path());
    let ce = CrossEncoder::load(dir.path(), "tiny-ce").unwrap();
    let query = "who directed jaws";
    let passages = crate::cross_encoder::passages(9);
    let ours = ce.score(query, &passages).await.unwrap();

    // The reference: candle's BertModel over the padded batch, CLS -> pooler -> classifier.
    let cfg: bert::Config =
        serde_json::from_slice(&std::fs::read(dir.path().join("config.json")).unwrap()).unwrap();
    let vb = VarBuilder::from_buffered_safetensors(
        std::fs::read(dir.path().join("model.safetensors")).unwrap(),
        DType::F32,
        &Device::Cpu,
    )
    .unwrap();
    let model = bert::BertModel::load(vb.pp("bert"), &cfg).unwrap();
    let pooler = candle_nn::linear(32, 32, vb.pp("bert.pooler.dense")).unwrap();
    let classifier = candle_nn::linear(32, 1, vb.pp("classifier")).unwrap();
    let mut tok = Tokenizer::from_file(dir.path().join("tokenizer.json")).unwrap();
    tok.with_padding(Some(PaddingParams::default()));
    let pairs: Vec<(String, String)> = passages
        .iter()
        .map(|p| (query.to_string(), p.clone()))
        .collect();
    let enc = tok.encode_batch(pairs, true).unwrap();
    let (n, len) = (enc.len(), enc[0].get_ids().len());
    let flat = |f: &dyn Fn(&tokenizers::Encoding) -> Vec<u32>| {
        Tensor::from_vec(
            enc.iter().flat_map(f).collect::<Vec<u32>>(),
            (n, len),
            &Device::Cpu,
        )
        .unwrap()
    };
    let ids = flat(&|e| e.get_ids().to_vec());
    let types = flat(&|e| e.get_type_ids().to_vec());
    let mask = flat(&|e| e.get_attention_mask().to_vec());
    let hidden = model.forward(&ids, &types, Some(&mask)).unwrap();
    let cls = hidden.narrow(1, 0, 1).unwrap().squeeze(1).unwrap();
    let logits = classifier
        .forward(&pooler.forward(&cls).unwrap().tanh().unwrap())
        .unwrap()
        .to_vec2::<f32>()
        .unwrap();
    for (i, (a, b)) in ours.iter().zip(&logits).enumerate() {
        assert!(
            (a - b[0]).abs() < 1e-4,
            "pair {i}: {a} vs candle's {}",
            b[0]
        );
    }
}

/// Passages of the HotpotQA corpus as the index embeds them (`title\ntext`), from `skip`.
fn corpus_passages(skip: usize, n: usize) -> Vec<String> {
    metarag_testkit::qa_file("hotpotqa-corpus.jsonl")
        .lines()
        .skip(skip)
        .take(n)
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            format!(
                "{}\n{}",
                v["title"].as_str().unwrap(),
                v["text"].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
fn int8_vectors_stay_within_the_issues_cosine_of_the_f32_ones() {
    if !metarag_models::Precision::Int8.supported() {
        eprintln!("no AVX-512 VNNI on this CPU: int8 is refused here, nothing to compare");
        return;
    }
    let dir = metarag_testkit::models_dir().join(metarag_testkit::EMBEDDER);
    let f32s = metarag_testkit::embedder();
    let int8 = metarag_models::SentenceEmbedder::load_with(
        &dir,
        metarag_testkit::EMBEDDER,
        None,
        metarag_models::Precision::Int8,
    )
    .unwrap();
    assert_eq!(int8.precision(), metarag_models::Precision::Int8);
    let texts = corpus_passages(1000, 200);
    let a = f32s.embed_blocking(&texts).unwrap();
    let b = int8.embed_blocking(&texts).unwrap();
    let cos: Vec<f32> = a
        .iter()
        .zip(&b)
        .map(|(x, y)| x.iter().zip(y).map(|(p, q)| p * q).sum())
        .collect();
    let mean = cos.iter().sum::<f32>() / cos.len() as f32;
    let worst = cos.iter().copied().fold(1f32, f32::min);
    eprintln!("int8 against f32 on 200 passages: mean cosine {mean:.6}, lowest {worst:.6}");
    // The issue's bar for every passage, not only on average (before the outlier channels
    // the lowest here was 0.9982).
    assert!(mean >= 0.9995, "mean cosine {mean}");
    assert!(worst >= 0.999, "lowest cosine {worst}");
    // The quantised encoder is the same model: a query still finds its own passage first.
    let q = int8
        .embed_blocking(&[texts[17].split('\n').next().unwrap().to_string()])
        .unwrap();
    let best = a
        .iter()
        .map(|v| v.iter().zip(&q[0]).map(|(x, y)| x * y).sum::<f32>())
        .enumerate()
        .max_by(|x, y| x.1.total_cmp(&y.1))
        .unwrap()
        .0;
    assert_eq!(texts[best].split('\n').next(), texts[17].split('\n').next());
}
