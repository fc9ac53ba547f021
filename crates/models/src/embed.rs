//! Sentence-transformer embeddings on the CPU with candle.

use crate::bert::{BertEncoder, Sequence};
use crate::{Error, Result};
use candle_transformers::models::bert::Config;
use metarag_core::Embedder;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokenizers::{Tokenizer, TruncationParams};

/// How token vectors become one sentence vector (sentence-transformers' `1_Pooling`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pooling {
    /// Mean of the non-padding token vectors (MiniLM, E5).
    Mean,
    /// The `[CLS]` vector (BGE).
    Cls,
}

#[derive(Deserialize)]
struct PoolingConfig {
    #[serde(default)]
    pooling_mode_cls_token: bool,
    #[serde(default)]
    pooling_mode_mean_tokens: bool,
}

#[derive(Deserialize)]
struct SentenceBertConfig {
    max_seq_length: Option<usize>,
}

#[derive(Deserialize)]
struct Module {
    #[serde(rename = "type")]
    kind: String,
}

/// Texts per forward pass. The encoder packs a batch without padding, so the size only trades
/// the matrix products' efficiency (more rows) against memory; inputs are still sorted by
/// length so that a batch's attention tasks are of similar size.
const BATCH: usize = 32;

/// A BERT-family sentence-transformer loaded from a directory holding `config.json`,
/// `tokenizer.json` and `model.safetensors` (plus the optional sentence-transformers files
/// `1_Pooling/config.json`, `sentence_bert_config.json` and `modules.json`, which decide the
/// pooling, the maximum sequence length and normalisation).
#[derive(Clone)]
pub struct SentenceEmbedder {
    inner: Arc<Inner>,
}

struct Inner {
    name: String,
    model: BertEncoder,
    /// Tokenizer used for embedding: truncation at `max_tokens` as a last guard.
    batch_tokenizer: Tokenizer,
    /// The same tokenizer with truncation and padding off, for counting.
    tokenizer: Tokenizer,
    dimension: usize,
    max_tokens: usize,
    pooling: Pooling,
    normalize: bool,
    query_instruction: Option<String>,
    precision: Precision,
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    serde_json::from_slice(&bytes).map_err(|e| Error::Config {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })
}

/// `dir/file`, or [`Error::MissingFile`] naming both.
pub(crate) fn required(dir: &Path, file: &str) -> Result<PathBuf> {
    let p = dir.join(file);
    if p.is_file() {
        Ok(p)
    } else {
        Err(Error::MissingFile {
            dir: dir.to_path_buf(),
            file: file.to_string(),
        })
    }
}

/// Texts the int8 encoder measures its activations' ranges on at load time (SmoothQuant's
/// calibration, `bert.rs`): fixed, varied prose of the kinds an index holds, written for this
/// purpose; no benchmark or corpus text.
const CALIBRATION: &[&str] = &[
    "The river rises in the northern hills and flows 240 kilometres south to the sea, passing three market towns.",
    "Marguerite Olsen (born 12 March 1961) is a Norwegian architect known for timber public buildings.",
    "To reset the device, hold the power button for ten seconds until the light blinks twice, then release it.",
    "Quarterly revenue rose 8.4% to $1.27 billion, while operating costs fell for the second year in a row.",
    "Who wrote the opera that premiered in Prague in 1787, and where was its composer born?",
    "The enzyme breaks down starch into sugars; its activity peaks at 37 °C and a pH of about 6.8.",
    "Section 4(b): the tenant shall give the landlord written notice at least thirty days before leaving.",
    "fn main() { let total: u64 = (1..=10).sum(); println!(\"{total}\"); }",
    "The band's second album, recorded in a converted church, reached number three on the national chart.",
    "Patients were randomly assigned to two groups; the primary outcome was blood pressure after 12 weeks.",
    "Paris, Lyon and Marseille are the three largest cities of France by population.",
    "A short note.",
];

/// The arithmetic of the encoder's matrix products.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// f32 throughout: the reference vectors.
    #[default]
    F32,
    /// int8 linear layers (per-column weights, per-token activations, i32 sums) on AVX-512
    /// VNNI; attention, norms and pooling stay f32. 1.46x f32's speed on the HotpotQA corpus,
    /// vectors at mean cosine 0.9992 to f32's (docs/results/performance.md).
    Int8,
}

impl Precision {
    /// Whether this CPU can run `self` (int8 needs AVX-512 VNNI).
    pub fn supported(self) -> bool {
        match self {
            Precision::F32 => true,
            Precision::Int8 => crate::int8::supported(),
        }
    }
}

impl std::fmt::Display for Precision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Precision::F32 => "f32",
            Precision::Int8 => "int8",
        })
    }
}

impl SentenceEmbedder {
    /// Loads the model in `dir` under the name `name` (the name the index records), in f32.
    /// `query_instruction` is prepended to queries (BGE: "Represent this sentence for
    /// searching relevant passages: ").
    pub fn load(dir: &Path, name: &str, query_instruction: Option<String>) -> Result<Self> {
        Self::load_with(dir, name, query_instruction, Precision::F32)
    }

    /// [`SentenceEmbedder::load`] with the matrix products in `precision`; int8 on a CPU
    /// without AVX-512 VNNI is refused (its portable path would be slower than f32).
    pub fn load_with(
        dir: &Path,
        name: &str,
        query_instruction: Option<String>,
        precision: Precision,
    ) -> Result<Self> {
        let _span = tracing::info_span!("embedder.load", model = name, %precision).entered();
        let config_path = required(dir, "config.json")?;
        let tokenizer_path = required(dir, "tokenizer.json")?;
        let weights_path = required(dir, "model.safetensors")?;
        let config: Config = read_json(&config_path)?;

        let pooling_path = dir.join("1_Pooling/config.json");
        let pooling = if pooling_path.is_file() {
            let p: PoolingConfig = read_json(&pooling_path)?;
            match (p.pooling_mode_cls_token, p.pooling_mode_mean_tokens) {
                (true, _) => Pooling::Cls,
                (false, true) => Pooling::Mean,
                (false, false) => {
                    return Err(Error::Config {
                        path: pooling_path,
                        reason: "only mean and CLS pooling are supported".into(),
                    });
                }
            }
        } else {
            Pooling::Mean
        };
        let st_path = dir.join("sentence_bert_config.json");
        let max_seq = if st_path.is_file() {
            read_json::<SentenceBertConfig>(&st_path)?.max_seq_length
        } else {
            None
        };
        let max_tokens = max_seq.unwrap_or(512).min(config.max_position_embeddings);
        let modules_path = dir.join("modules.json");
        // Without modules.json we can't tell; normalising never hurts cosine ranking.
        let normalize = if modules_path.is_file() {
            read_json::<Vec<Module>>(&modules_path)?
                .iter()
                .any(|m| m.kind.ends_with("Normalize"))
        } else {
            true
        };

        let mut counter = Tokenizer::from_file(&tokenizer_path).map_err(|e| Error::Config {
            path: tokenizer_path.clone(),
            reason: e.to_string(),
        })?;
        // MiniLM's tokenizer.json truncates at 128: counting through it would make every
        // text look short.
        counter
            .with_truncation(None)
            .map_err(|e| Error::Tokenizer(e.to_string()))?;
        counter.with_padding(None);
        let mut batch_tokenizer = counter.clone();
        batch_tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: max_tokens,
                ..Default::default()
            }))
            .map_err(|e| Error::Tokenizer(e.to_string()))?;

        let weights = std::fs::read(&weights_path).map_err(|e| Error::io(&weights_path, e))?;
        let mut model = BertEncoder::load(&weights_path, &weights, &config, None)?;
        if precision == Precision::Int8 {
            if !precision.supported() {
                return Err(Error::Unsupported(
                    "int8 embedding needs a CPU with AVX-512 VNNI, which this one lacks; use precision f32".into(),
                ));
            }
            let encodings = batch_tokenizer
                .encode_batch(CALIBRATION.to_vec(), true)
                .map_err(|e| Error::Tokenizer(e.to_string()))?;
            model.quantize(&Sequence::batch(&encodings))?;
        }
        Ok(SentenceEmbedder {
            inner: Arc::new(Inner {
                name: name.to_string(),
                model,
                batch_tokenizer,
                tokenizer: counter,
                dimension: config.hidden_size,
                max_tokens,
                pooling,
                normalize,
                query_instruction,
                precision,
            }),
        })
    }

    /// The arithmetic the encoder runs in.
    pub fn precision(&self) -> Precision {
        self.inner.precision
    }

    /// The tokenizer with truncation and padding off: what chunkers count tokens with.
    pub fn tokenizer(&self) -> &Tokenizer {
        &self.inner.tokenizer
    }

    /// Tokens of `text` including the special tokens the model adds.
    pub fn count_tokens(&self, text: &str) -> Result<usize> {
        Ok(self
            .inner
            .tokenizer
            .encode(text, true)
            .map_err(|e| Error::Tokenizer(e.to_string()))?
            .len())
    }

    /// The pooling the model uses.
    pub fn pooling(&self) -> Pooling {
        self.inner.pooling
    }

    /// Embeds texts synchronously on the calling thread (the async trait method moves this
    /// onto the blocking pool).
    pub fn embed_blocking(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let _span = tracing::debug_span!("embed", n = texts.len()).entered();
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| texts[i].len());
        let mut out = vec![Vec::new(); texts.len()];
        for batch in order.chunks(BATCH) {
            let inputs: Vec<&str> = batch.iter().map(|&i| texts[i].as_str()).collect();
            let vectors = self.forward(&inputs)?;
            for (&i, v) in batch.iter().zip(vectors) {
                out[i] = v;
            }
        }
        Ok(out)
    }

    fn forward(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let inner = &*self.inner;
        let encodings = inner
            .batch_tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| Error::Tokenizer(e.to_string()))?;
        let batch = Sequence::batch(&encodings);
        let hidden = inner.model.forward(&batch)?;
        Ok((0..batch.len())
            .map(|i| {
                let mut v = match inner.pooling {
                    Pooling::Cls => hidden.cls(i),
                    Pooling::Mean => hidden.mean(i),
                };
                if inner.normalize {
                    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
                    v.iter_mut().for_each(|x| *x /= norm);
                }
                v
            })
            .collect())
    }
}

impl Embedder for SentenceEmbedder {
    fn model_id(&self) -> &str {
        &self.inner.name
    }

    fn dimension(&self) -> usize {
        self.inner.dimension
    }

    fn max_tokens(&self) -> usize {
        self.inner.max_tokens
    }

    async fn embed(&self, texts: &[String]) -> metarag_core::Result<Vec<Vec<f32>>> {
        let this = self.clone();
        let texts = texts.to_vec();
        tokio::task::spawn_blocking(move || this.embed_blocking(&texts))
            .await
            .map_err(|e| {
                metarag_core::Error::backend("embedding task", metarag_core::Fault::Internal, e)
            })?
            .map_err(Into::into)
    }

    async fn embed_query(&self, query: &str) -> metarag_core::Result<Vec<f32>> {
        let text = match &self.inner.query_instruction {
            Some(instruction) => format!("{instruction}{query}"),
            None => query.to_string(),
        };
        let mut v = self.embed(&[text]).await?;
        v.pop()
            .ok_or_else(|| metarag_core::Error::invalid("query", "the embedder returned no vector"))
    }
}
