//! The cross-encoder's mechanics on a tiny BERT with random weights, built here: no registry
//! package ships cross-encoder weights, so quality can't be tested offline, but loading,
//! pair encoding, batching, padding and truncation can.

use candle_core::{DType, Device};
use candle_nn::{VarBuilder, VarMap};
use candle_transformers::models::{bert, xlm_roberta};
use metarag_core::Reranker;
use metarag_models::CrossEncoder;
use std::path::Path;
use tokenizers::Tokenizer;
use tokenizers::models::wordpiece::WordPiece;
use tokenizers::normalizers::BertNormalizer;
use tokenizers::pre_tokenizers::bert::BertPreTokenizer;
use tokenizers::processors::bert::BertProcessing;
use tokenizers::processors::roberta::RobertaProcessing;

const WORDS: &[&str] = &[
    "who",
    "directed",
    "jaws",
    "the",
    "film",
    "steven",
    "spielberg",
    "is",
    "a",
    "thriller",
    "bananas",
    "are",
    "yellow",
    "paris",
    "tower",
    "in",
    "of",
    "and",
    "novel",
    "by",
];

/// A WordPiece tokenizer over `specials` then [`WORDS`], saved as `dir/tokenizer.json`;
/// returns the vocabulary size.
fn write_tokenizer(
    dir: &Path,
    specials: &[&str],
    unk: &str,
    post: impl Into<tokenizers::PostProcessorWrapper>,
) -> usize {
    let mut vocab: Vec<&str> = specials.to_vec();
    vocab.extend_from_slice(WORDS);
    let vocab_file = dir.join("vocab.txt");
    std::fs::write(&vocab_file, vocab.join("\n")).unwrap();
    let wordpiece = WordPiece::from_file(vocab_file.to_str().unwrap())
        .unk_token(unk.into())
        .build()
        .unwrap();
    let mut tokenizer = Tokenizer::new(wordpiece);
    tokenizer
        .with_normalizer(Some(BertNormalizer::default()))
        .unwrap();
    tokenizer.with_pre_tokenizer(Some(BertPreTokenizer));
    tokenizer.with_post_processor(Some(post));
    tokenizer.save(dir.join("tokenizer.json"), false).unwrap();
    vocab.len()
}

pub(crate) fn write_tiny_model(dir: &Path) {
    let vocab_size = write_tokenizer(
        dir,
        &["[PAD]", "[UNK]", "[CLS]", "[SEP]"],
        "[UNK]",
        BertProcessing::new(("[SEP]".into(), 3), ("[CLS]".into(), 2)),
    );
    let config = serde_json::json!({
        "architectures": ["BertForSequenceClassification"],
        "model_type": "bert",
        "vocab_size": vocab_size,
        "hidden_size": 32,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "intermediate_size": 64,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.0,
        "attention_probs_dropout_prob": 0.0,
        "max_position_embeddings": 64,
        "type_vocab_size": 2,
        "initializer_range": 0.02,
        "layer_norm_eps": 1e-12,
        "pad_token_id": 0,
        "id2label": {"0": "LABEL_0"}
    });
    std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
    let cfg: bert::Config = serde_json::from_value(config).unwrap();
    let varmap = VarMap::new();
    let vb = VarBuilder::from_varmap(&varmap, DType::F32, &Device::Cpu);
    bert::BertModel::load(vb.pp("bert"), &cfg).unwrap();
    candle_nn::linear(32, 32, vb.pp("bert.pooler.dense")).unwrap();
    candle_nn::linear(32, 1, vb.pp("classifier")).unwrap();
    varmap.save(dir.join("model.safetensors")).unwrap();
}

/// A tiny XLM-RoBERTa sequence classifier (bge-reranker's architecture): `<s> q </s></s> p
/// </s>` pairs, padding id 1, position ids offset past the padding id.
fn write_tiny_xlmr(dir: &Path) {
    let vocab_size = write_tokenizer(
        dir,
        &["<s>", "<pad>", "</s>", "<unk>"],
        "<unk>",
        RobertaProcessing::new(("</s>".into(), 2), ("<s>".into(), 0)),
    );
    let config = serde_json::json!({
        "architectures": ["XLMRobertaForSequenceClassification"],
        "model_type": "xlm-roberta",
        "vocab_size": vocab_size,
        "hidden_size": 32,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "intermediate_size": 64,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.0,
        "attention_probs_dropout_prob": 0.0,
        "max_position_embeddings": 66,
        "position_embedding_type": "absolute",
        "type_vocab_size": 1,
        "layer_norm_eps": 1e-5,
        "pad_token_id": 1,
        "id2label": {"0": "LABEL_0"}
    });
    std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
    let cfg: xlm_roberta::Config = serde_json::from_value(config).unwrap();
    let varmap = VarMap::new();
    let vb = VarBuilder::from_varmap(&varmap, DType::F32, &Device::Cpu);
    xlm_roberta::XLMRobertaForSequenceClassification::new(1, &cfg, vb).unwrap();
    varmap.save(dir.join("model.safetensors")).unwrap();
}

pub(crate) fn passages(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            // Different lengths so that batches need padding.
            WORDS
                .iter()
                .cycle()
                .skip(i)
                .take(3 + (i * 7) % 15)
                .copied()
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

async fn check_batching_invariance(ce: &CrossEncoder) {
    let query = "who directed jaws";
    // 21 passages: two batches of 16 and 5, with padding inside each.
    let ps = passages(21);
    let together = ce.score(query, &ps).await.unwrap();
    assert_eq!(together.len(), ps.len());
    for (i, p) in ps.iter().enumerate() {
        let alone = ce.score(query, std::slice::from_ref(p)).await.unwrap()[0];
        assert!(
            (alone - together[i]).abs() < 1e-4,
            "passage {i}: alone {alone} vs batched {}",
            together[i]
        );
    }
    // Different passages get different scores (the pair is really encoded).
    assert!((together[0] - together[1]).abs() > 1e-6);
    assert!(ce.score(query, &[]).await.unwrap().is_empty());
}

#[tokio::test]
async fn bert_scores_do_not_depend_on_batching_padding_or_position() {
    let dir = tempfile::tempdir().unwrap();
    write_tiny_model(dir.path());
    let ce = CrossEncoder::load(dir.path(), "tiny-ce").unwrap();
    assert_eq!(ce.model_id(), "tiny-ce");
    check_batching_invariance(&ce).await;
}

#[tokio::test]
async fn xlm_roberta_scores_do_not_depend_on_batching_padding_or_position() {
    let dir = tempfile::tempdir().unwrap();
    write_tiny_xlmr(dir.path());
    let ce = CrossEncoder::load(dir.path(), "tiny-xlmr").unwrap();
    check_batching_invariance(&ce).await;
    let long = WORDS.repeat(20).join(" ");
    assert!(ce.score("who directed jaws", &[long]).await.unwrap()[0].is_finite());
}

#[tokio::test]
async fn passages_longer_than_the_model_are_truncated_not_rejected() {
    let dir = tempfile::tempdir().unwrap();
    write_tiny_model(dir.path());
    let ce = CrossEncoder::load(dir.path(), "tiny-ce").unwrap();
    let long = WORDS.repeat(20).join(" ");
    let s = ce.score("who directed jaws", &[long]).await.unwrap();
    assert!(s[0].is_finite());
}
