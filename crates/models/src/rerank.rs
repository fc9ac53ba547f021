//! Rerankers: a BERT-family cross-encoder (BERT on this crate's encoder, XLM-RoBERTa on
//! candle), and the local chat model as a pointwise yes/no judge.

use crate::bert::{BertEncoder, Sequence};
use crate::embed::required;
use crate::{Error, LocalLlm, Result};
use candle_core::{DType, Device, Module, Tensor};
use candle_nn::{Linear, VarBuilder};
use candle_transformers::models::{bert, xlm_roberta};
use metarag_core::{Message, Reranker};
use serde::Deserialize;
use std::path::Path;
use std::sync::Arc;
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams, TruncationStrategy};

/// Pairs per forward pass of the cross-encoder.
const PAIRS_PER_BATCH: usize = 16;

enum Architecture {
    /// `BertForSequenceClassification` (ms-marco-MiniLM-L-6-v2): CLS -> pooler (dense,
    /// tanh) -> classifier.
    Bert {
        model: BertEncoder,
        pooler: Option<Linear>,
        classifier: Linear,
    },
    /// `XLMRobertaForSequenceClassification` (bge-reranker-base, -large).
    XlmRoberta(xlm_roberta::XLMRobertaForSequenceClassification),
}

#[derive(Deserialize)]
struct HeadConfig {
    #[serde(default)]
    model_type: Option<String>,
    #[serde(default)]
    architectures: Vec<String>,
    #[serde(default)]
    id2label: Option<std::collections::BTreeMap<String, String>>,
    #[serde(default)]
    max_position_embeddings: Option<usize>,
    #[serde(default)]
    pad_token_id: Option<u32>,
}

/// A cross-encoder reranker loaded from a directory with `config.json`, `tokenizer.json`
/// and `model.safetensors` (a Hugging Face sequence-classification checkpoint: BERT family
/// such as `cross-encoder/ms-marco-MiniLM-L-6-v2`, or XLM-RoBERTa such as
/// `BAAI/bge-reranker-base`). Scores are the relevance logit (or the positive-class
/// probability for two-label heads).
#[derive(Clone)]
pub struct CrossEncoder {
    inner: Arc<CrossInner>,
}

impl std::fmt::Debug for CrossEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CrossEncoder")
            .field("name", &self.inner.name)
            .field("labels", &self.inner.labels)
            .finish()
    }
}

struct CrossInner {
    name: String,
    arch: Architecture,
    tokenizer: Tokenizer,
    labels: usize,
}

impl CrossEncoder {
    /// Loads the checkpoint in `dir` under the name `name`.
    pub fn load(dir: &Path, name: &str) -> Result<Self> {
        let config_path = required(dir, "config.json")?;
        let tokenizer_path = required(dir, "tokenizer.json")?;
        let weights_path = required(dir, "model.safetensors")?;
        let config_text =
            std::fs::read_to_string(&config_path).map_err(|e| Error::io(&config_path, e))?;
        let bad_config = |reason: String| Error::Config {
            path: config_path.clone(),
            reason,
        };
        let head: HeadConfig =
            serde_json::from_str(&config_text).map_err(|e| bad_config(e.to_string()))?;
        let labels = head.id2label.as_ref().map_or(1, |m| m.len().max(1));
        let weights = std::fs::read(&weights_path).map_err(|e| Error::io(&weights_path, e))?;
        let is_xlmr = head.model_type.as_deref() == Some("xlm-roberta")
            || head
                .architectures
                .iter()
                .any(|a| a.starts_with("XLMRoberta"));
        let arch = if is_xlmr {
            let cfg: xlm_roberta::Config =
                serde_json::from_str(&config_text).map_err(|e| bad_config(e.to_string()))?;
            let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu)?;
            Architecture::XlmRoberta(xlm_roberta::XLMRobertaForSequenceClassification::new(
                labels, &cfg, vb,
            )?)
        } else {
            let cfg: bert::Config =
                serde_json::from_str(&config_text).map_err(|e| bad_config(e.to_string()))?;
            let model = BertEncoder::load(&weights_path, &weights, &cfg, Some("bert."))?;
            // The small head (pooler, classifier) through candle, from the same bytes.
            let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu)?;
            let pooler =
                candle_nn::linear(cfg.hidden_size, cfg.hidden_size, vb.pp("bert.pooler.dense"))
                    .ok();
            let classifier = candle_nn::linear(cfg.hidden_size, labels, vb.pp("classifier"))
                .map_err(|e| {
                    bad_config(format!(
                        "no classifier head in the weights ({e}); is this a cross-encoder?"
                    ))
                })?;
            Architecture::Bert {
                model,
                pooler,
                classifier,
            }
        };
        let mut tokenizer = Tokenizer::from_file(&tokenizer_path).map_err(|e| Error::Config {
            path: tokenizer_path.clone(),
            reason: e.to_string(),
        })?;
        let max_len = head.max_position_embeddings.unwrap_or(512).min(512);
        // XLM-R reserves two positions for its offset position ids.
        let max_len = if is_xlmr {
            max_len.saturating_sub(2)
        } else {
            max_len
        };
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: max_len,
                strategy: TruncationStrategy::OnlySecond,
                ..Default::default()
            }))
            .map_err(|e| Error::Tokenizer(e.to_string()))?;
        // The BERT encoder packs pairs without padding; candle's XLM-R takes a padded batch
        // and its mask.
        if is_xlmr {
            tokenizer.with_padding(Some(PaddingParams {
                strategy: PaddingStrategy::BatchLongest,
                pad_id: head.pad_token_id.unwrap_or(0),
                ..Default::default()
            }));
        } else {
            tokenizer.with_padding(None);
        }
        Ok(CrossEncoder {
            inner: Arc::new(CrossInner {
                name: name.to_string(),
                arch,
                tokenizer,
                labels,
            }),
        })
    }

    /// Scores (query, passage) pairs on the calling thread.
    pub fn score_blocking(&self, query: &str, passages: &[String]) -> Result<Vec<f32>> {
        let _span = tracing::debug_span!("rerank.cross_encoder", n = passages.len()).entered();
        // Batches of similar length pad little: sort by length, score, put back in order.
        let mut order: Vec<usize> = (0..passages.len()).collect();
        order.sort_by_key(|&i| passages[i].len());
        let mut out = vec![0.0; passages.len()];
        for batch in order.chunks(PAIRS_PER_BATCH) {
            let texts: Vec<String> = batch.iter().map(|&i| passages[i].clone()).collect();
            for (&i, score) in batch.iter().zip(self.forward(query, &texts)?) {
                out[i] = score;
            }
        }
        Ok(out)
    }

    fn forward(&self, query: &str, passages: &[String]) -> Result<Vec<f32>> {
        let inner = &*self.inner;
        let pairs: Vec<(String, String)> = passages
            .iter()
            .map(|p| (query.to_string(), p.clone()))
            .collect();
        let encodings = inner
            .tokenizer
            .encode_batch(pairs, true)
            .map_err(|e| Error::Tokenizer(e.to_string()))?;
        let n = encodings.len();
        let device = &Device::Cpu;
        let logits = match &inner.arch {
            Architecture::Bert {
                model,
                pooler,
                classifier,
            } => {
                let batch = Sequence::batch(&encodings);
                let hidden = model.forward(&batch)?;
                let cls: Vec<f32> = (0..n).flat_map(|i| hidden.cls(i)).collect();
                let width = cls.len() / n.max(1);
                let cls = Tensor::from_vec(cls, (n, width), device)?;
                let pooled = match pooler {
                    Some(p) => p.forward(&cls)?.tanh()?,
                    None => cls,
                };
                classifier.forward(&pooled)?
            }
            Architecture::XlmRoberta(m) => {
                let len = encodings.first().map_or(0, |e| e.get_ids().len());
                let (mut ids, mut mask) = (Vec::new(), Vec::new());
                for e in &encodings {
                    ids.extend_from_slice(e.get_ids());
                    mask.extend_from_slice(e.get_attention_mask());
                }
                let ids = Tensor::from_vec(ids, (n, len), device)?;
                let mask = Tensor::from_vec(mask, (n, len), device)?;
                m.forward(&ids, &mask, &ids.zeros_like()?)?
            }
        };
        let logits = logits.to_vec2::<f32>()?;
        Ok(logits
            .into_iter()
            .map(|row| {
                if inner.labels == 2 {
                    // Two-label heads: probability of the "relevant" class.
                    let m = row[0].max(row[1]);
                    let (a, b) = ((row[0] - m).exp(), (row[1] - m).exp());
                    b / (a + b)
                } else {
                    row[0]
                }
            })
            .collect())
    }
}

impl Reranker for CrossEncoder {
    fn model_id(&self) -> &str {
        &self.inner.name
    }

    async fn score(&self, query: &str, passages: &[String]) -> metarag_core::Result<Vec<f32>> {
        let this = self.clone();
        let query = query.to_string();
        let passages = passages.to_vec();
        tokio::task::spawn_blocking(move || this.score_blocking(&query, &passages))
            .await
            .map_err(|e| {
                metarag_core::Error::backend("rerank task", metarag_core::Fault::Internal, e)
            })?
            .map_err(Into::into)
    }
}

/// The local chat model as a pointwise reranker: the score of a passage is the probability
/// the model gives to "yes" over "no" when asked whether the passage helps answer the
/// question, read from the logits of its first answer token (nothing is generated).
///
/// The question comes before the passage in the prompt, so consecutive passages for one
/// question share the system prompt and question in the KV cache and only the passage is
/// evaluated each time (prefix reuse in [`LocalLlm`]).
#[derive(Debug, Clone)]
pub struct LlmReranker {
    llm: Arc<LocalLlm>,
    model_id: String,
    max_passage_chars: usize,
}

const RERANK_SYSTEM: &str = "You judge whether a passage contains information that helps \
answer a question. Reply with yes or no only.";

impl LlmReranker {
    /// Reranks with `llm`; passages longer than `max_passage_chars` are cut (prompt
    /// evaluation is the cost, about 60 tokens/s on two cores for a 0.5B model).
    pub fn new(llm: Arc<LocalLlm>, max_passage_chars: usize) -> Self {
        let model_id = format!("llm-yes-no:{}", metarag_core::Llm::model_id(&*llm));
        LlmReranker {
            llm,
            model_id,
            max_passage_chars,
        }
    }

    /// The prompt for one pair.
    pub fn messages(&self, query: &str, passage: &str) -> Vec<Message> {
        let passage: String = if passage.len() > self.max_passage_chars {
            let mut end = self.max_passage_chars;
            while !passage.is_char_boundary(end) {
                end -= 1;
            }
            passage[..end].to_string()
        } else {
            passage.to_string()
        };
        vec![
            Message::system(RERANK_SYSTEM),
            Message::user(format!(
                "Question: {query}\n\nPassage: {passage}\n\nDoes the passage help answer the question? Answer yes or no."
            )),
        ]
    }
}

impl Reranker for LlmReranker {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    async fn score(&self, query: &str, passages: &[String]) -> metarag_core::Result<Vec<f32>> {
        let mut out = Vec::with_capacity(passages.len());
        for p in passages {
            let (prob, _) = self.llm.yes_probability(self.messages(query, p)).await?;
            out.push(prob);
        }
        Ok(out)
    }
}
