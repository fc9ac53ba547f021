//! A BERT encoder for inference on the CPU, written for throughput.
//!
//! candle's `BertModel` spends about two thirds of an embedding batch outside matrix products
//! (measured with `perf` on the 64-passage bench: exact-erf GELU through libm ~18%, softmax
//! `exp` ~7%, page faults and zeroing of freshly allocated tensors ~10%, element-wise
//! broadcasts and its thread barrier the rest). This encoder keeps candle's loader (the
//! safetensors weights) and `gemm`, candle's own matrix kernel, and changes the rest:
//!
//! - **no padding**: the sequences of a batch are packed row after row; the linear layers run
//!   over all tokens at once and attention runs per sequence, so a short text in a batch of
//!   long ones costs only its own tokens, and no attention mask is needed;
//! - **fused bias and residual**: a linear layer's output starts as `bias (+ residual)` and the
//!   product accumulates onto it; Q, K and V are one product;
//! - **fast exact-enough activations**: GELU with a rational erf approximation (max error
//!   ~1e-7 against libm's erf), softmax with a polynomial `exp`, both branch-free loops the
//!   compiler vectorises;
//! - **buffers per batch**, not per operation.
//!
//! Vectors agree with candle's `BertModel` to a cosine of 0.99999+ (tested on the real model
//! in `tests/it/bert.rs`).

use crate::int8::QLinear;
use crate::wide::wide;
use crate::{Error, Result};
use candle_core::{DType, Device, Tensor};
use candle_transformers::models::bert::{Config, HiddenAct};
use gemm::Parallelism;
use rayon::prelude::*;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// One input sequence: token ids and their token-type (segment) ids, of equal length.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sequence<'a> {
    /// Token ids, with the special tokens.
    pub ids: &'a [u32],
    /// Segment ids (0 for single texts; 0/1 for the two sides of a cross-encoder pair).
    pub types: &'a [u32],
}

impl<'a> Sequence<'a> {
    /// The sequences of a tokenizer's batch output (ids and segment ids, no padding).
    pub fn batch(encodings: &'a [tokenizers::Encoding]) -> Vec<Self> {
        encodings
            .iter()
            .map(|e| Sequence {
                ids: e.get_ids(),
                types: e.get_type_ids(),
            })
            .collect()
    }
}

/// The last hidden states of a batch: the token rows of every sequence, packed.
pub(crate) struct Hidden {
    data: Vec<f32>,
    /// Start row of each sequence, plus the total row count at the end.
    offsets: Vec<usize>,
    width: usize,
}

impl Hidden {
    /// Token rows of sequence `i`.
    fn rows(&self, i: usize) -> &[f32] {
        &self.data[self.offsets[i] * self.width..self.offsets[i + 1] * self.width]
    }

    /// The first token's vector (`[CLS]`) of sequence `i`.
    pub fn cls(&self, i: usize) -> Vec<f32> {
        self.rows(i)[..self.width].to_vec()
    }

    /// The mean of sequence `i`'s token vectors (no padding to mask out).
    pub fn mean(&self, i: usize) -> Vec<f32> {
        let mut sum = vec![0f32; self.width];
        let rows = self.rows(i);
        for row in rows.chunks_exact(self.width) {
            for (s, v) in sum.iter_mut().zip(row) {
                *s += v;
            }
        }
        let n = (rows.len() / self.width).max(1) as f32;
        sum.iter_mut().for_each(|s| *s /= n);
        sum
    }
}

/// `y = x · Wᵀ + b` for a row-major `x` of `rows × input`.
struct Linear {
    /// The weight transposed at load time to `input × output`, row-major, so that the product
    /// reads it with unit stride along the output.
    w: Vec<f32>,
    b: Vec<f32>,
    input: usize,
    output: usize,
    /// The int8 form of `w` once [`BertEncoder::quantize`] ran (`w` is then dropped).
    q: Option<QLinear>,
}

impl Linear {
    /// `y = x · W + b (+ residual)`; `y` is `rows × output`.
    fn forward(&self, x: &[f32], rows: usize, y: &mut [f32], residual: Option<&[f32]>) {
        assert_eq!(x.len(), rows * self.input);
        assert_eq!(y.len(), rows * self.output);
        match residual {
            Some(r) => {
                assert_eq!(r.len(), y.len());
                y.par_chunks_mut(self.output * ROWS_PER_TASK)
                    .zip(r.par_chunks(self.output * ROWS_PER_TASK))
                    .for_each(|(y, r)| {
                        for (y, r) in y
                            .chunks_exact_mut(self.output)
                            .zip(r.chunks_exact(self.output))
                        {
                            for ((y, r), b) in y.iter_mut().zip(r).zip(&self.b) {
                                *y = r + b;
                            }
                        }
                    });
            }
            None => y.par_chunks_mut(self.output * ROWS_PER_TASK).for_each(|y| {
                for y in y.chunks_exact_mut(self.output) {
                    y.copy_from_slice(&self.b);
                }
            }),
        }
        if let Some(q) = &self.q {
            q.forward(x, rows, y);
            return;
        }
        matmul(
            Mat::new(x, self.input, 1),
            Mat::new(&self.w, self.output, 1),
            rows,
            self.output,
            self.input,
            y,
            (self.output, 1),
            1.0,
            true,
            Parallelism::Rayon(0),
        );
    }
}

/// A read-only matrix view for [`matmul`]: its data and its row and column strides.
#[derive(Clone, Copy)]
struct Mat<'a> {
    data: &'a [f32],
    row_stride: usize,
    col_stride: usize,
}

impl<'a> Mat<'a> {
    fn new(data: &'a [f32], row_stride: usize, col_stride: usize) -> Self {
        Mat {
            data,
            row_stride,
            col_stride,
        }
    }

    /// Whether element `(r, c)` for every `r < rows`, `c < cols` lies inside `data`.
    fn covers(&self, rows: usize, cols: usize) -> bool {
        rows == 0
            || cols == 0
            || (rows - 1) * self.row_stride + (cols - 1) * self.col_stride < self.data.len()
    }
}

/// `dst = (read_dst ? dst : 0) + scale · lhs · rhs`, with `lhs` `m × k`, `rhs` `k × n` and
/// `dst` `m × n` at `(row, col)` strides `dst_strides`.
#[allow(clippy::too_many_arguments, unsafe_code)]
fn matmul(
    lhs: Mat,
    rhs: Mat,
    m: usize,
    n: usize,
    k: usize,
    dst: &mut [f32],
    dst_strides: (usize, usize),
    scale: f32,
    read_dst: bool,
    parallelism: Parallelism,
) {
    // The bounds the kernel relies on, checked once here rather than trusted.
    assert!(lhs.covers(m, k) && rhs.covers(k, n));
    assert!(Mat::new(dst, dst_strides.0, dst_strides.1).covers(m, n));
    // SAFETY: every element the kernel reads or writes lies inside the slices (checked just
    // above); `dst` is borrowed mutably so nothing else aliases it, and `lhs`/`rhs` are shared
    // borrows that outlive the call.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.as_mut_ptr(),
            dst_strides.1 as isize,
            dst_strides.0 as isize,
            read_dst,
            lhs.data.as_ptr(),
            lhs.col_stride as isize,
            lhs.row_stride as isize,
            rhs.data.as_ptr(),
            rhs.col_stride as isize,
            rhs.row_stride as isize,
            1.0,
            scale,
            false,
            false,
            false,
            parallelism,
        );
    }
}

/// Rows handed to one rayon task by the element-wise passes: enough work per task to amortise
/// the scheduling, few enough tasks to keep both cores busy on a short batch.
const ROWS_PER_TASK: usize = 16;

/// Layer normalisation of each row in place (the residual it normalises was already added by
/// the linear layer before it).
struct Norm {
    gamma: Vec<f32>,
    beta: Vec<f32>,
    eps: f32,
}

impl Norm {
    fn apply(&self, x: &mut [f32]) {
        let width = self.gamma.len();
        x.par_chunks_mut(width * ROWS_PER_TASK)
            .for_each(|x| norm_rows(x, &self.gamma, &self.beta, self.eps));
    }
}

wide! {
    /// Layer normalisation of the rows of `x` (each `gamma.len()` wide).
    fn norm_rows(x: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) {
        let width = gamma.len();
        for row in x.chunks_exact_mut(width) {
            let mean = row.iter().sum::<f32>() / width as f32;
            let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / width as f32;
            let inv = 1.0 / (var + eps).sqrt();
            for ((v, g), b) in row.iter_mut().zip(gamma).zip(beta) {
                *v = (*v - mean) * inv * g + b;
            }
        }
    }
}

struct Layer {
    /// Q, K and V stacked: one product gives `rows × 3·hidden`.
    qkv: Linear,
    attn_out: Linear,
    attn_norm: Norm,
    up: Linear,
    down: Linear,
    out_norm: Norm,
}

/// A BERT encoder (embeddings + transformer layers), weights as `f32`.
pub(crate) struct BertEncoder {
    hidden: usize,
    heads: usize,
    intermediate: usize,
    max_positions: usize,
    word: Vec<f32>,
    position: Vec<f32>,
    token_type: Vec<f32>,
    type_vocab: usize,
    vocab: usize,
    emb_norm: Norm,
    layers: Vec<Layer>,
    act: HiddenAct,
}

/// The safetensors of a model, read by name under a prefix.
struct Weights {
    tensors: HashMap<String, Tensor>,
    prefix: String,
    path: PathBuf,
}

impl Weights {
    fn tensor(&self, name: &str) -> Result<&Tensor> {
        let full = format!("{}{name}", self.prefix);
        self.tensors.get(&full).ok_or_else(|| Error::Config {
            path: self.path.clone(),
            reason: format!("tensor `{full}` is missing"),
        })
    }

    /// The tensor `name` as `f32`, checked to have `shape`.
    fn get(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>> {
        let t = self.tensor(name)?;
        if t.dims() != shape {
            return Err(Error::Config {
                path: self.path.clone(),
                reason: format!(
                    "tensor `{}{name}` has shape {:?}, the config implies {shape:?}",
                    self.prefix,
                    t.dims()
                ),
            });
        }
        Ok(t.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?)
    }

    /// A linear layer `prefix.{weight,bias}` with the weight stored `output × input`.
    fn linear(&self, name: &str, input: usize, output: usize) -> Result<Linear> {
        let w = self.get(&format!("{name}.weight"), &[output, input])?;
        let b = self.get(&format!("{name}.bias"), &[output])?;
        Ok(Linear {
            w: transpose(&w, output, input),
            b,
            input,
            output,
            q: None,
        })
    }

    /// Q, K and V of one attention block as one linear layer.
    fn qkv(&self, name: &str, hidden: usize) -> Result<Linear> {
        let mut w = Vec::with_capacity(3 * hidden * hidden);
        let mut b = Vec::with_capacity(3 * hidden);
        for part in ["query", "key", "value"] {
            w.extend(self.get(&format!("{name}.{part}.weight"), &[hidden, hidden])?);
            b.extend(self.get(&format!("{name}.{part}.bias"), &[hidden])?);
        }
        Ok(Linear {
            w: transpose(&w, 3 * hidden, hidden),
            b,
            input: hidden,
            output: 3 * hidden,
            q: None,
        })
    }

    /// A layer norm, under either name pair checkpoints use (`weight`/`bias`, or the older
    /// `gamma`/`beta`).
    fn norm(&self, name: &str, width: usize, eps: f64) -> Result<Norm> {
        let (g, b) = if self
            .tensors
            .contains_key(&format!("{}{name}.gamma", self.prefix))
        {
            ("gamma", "beta")
        } else {
            ("weight", "bias")
        };
        Ok(Norm {
            gamma: self.get(&format!("{name}.{g}"), &[width])?,
            beta: self.get(&format!("{name}.{b}"), &[width])?,
            eps: eps as f32,
        })
    }
}

/// `rows × cols` row-major to `cols × rows` row-major.
fn transpose(w: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut t = vec![0f32; w.len()];
    for r in 0..rows {
        for c in 0..cols {
            t[c * rows + r] = w[r * cols + c];
        }
    }
    t
}

impl BertEncoder {
    /// Loads the encoder from the safetensors bytes of `path` (named in errors), finding its
    /// tensors with or without a `bert.` (or `{model_type}.`) prefix. `prefix` forces one.
    pub fn load(path: &Path, bytes: &[u8], config: &Config, prefix: Option<&str>) -> Result<Self> {
        let tensors = candle_core::safetensors::load_buffer(bytes, &Device::Cpu)?;
        let prefix = match prefix {
            Some(p) => p.to_string(),
            None => {
                let mut candidates = vec![String::new(), "bert.".to_string()];
                if let Some(t) = &config.model_type {
                    candidates.push(format!("{t}."));
                }
                candidates
                    .into_iter()
                    .find(|p| {
                        tensors.contains_key(&format!("{p}embeddings.word_embeddings.weight"))
                    })
                    .ok_or_else(|| Error::Config {
                        path: path.to_path_buf(),
                        reason: "no `embeddings.word_embeddings.weight` tensor: not a BERT model"
                            .into(),
                    })?
            }
        };
        let w = Weights {
            tensors,
            prefix,
            path: path.to_path_buf(),
        };
        let hidden = config.hidden_size;
        let heads = config.num_attention_heads;
        if heads == 0 || !hidden.is_multiple_of(heads) {
            return Err(Error::Config {
                path: path.with_file_name("config.json"),
                reason: format!(
                    "hidden_size {hidden} is not a multiple of num_attention_heads {heads}"
                ),
            });
        }
        let eps = config.layer_norm_eps;
        let inter = config.intermediate_size;
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for i in 0..config.num_hidden_layers {
            let l = format!("encoder.layer.{i}");
            layers.push(Layer {
                qkv: w.qkv(&format!("{l}.attention.self"), hidden)?,
                attn_out: w.linear(&format!("{l}.attention.output.dense"), hidden, hidden)?,
                attn_norm: w.norm(&format!("{l}.attention.output.LayerNorm"), hidden, eps)?,
                up: w.linear(&format!("{l}.intermediate.dense"), hidden, inter)?,
                down: w.linear(&format!("{l}.output.dense"), inter, hidden)?,
                out_norm: w.norm(&format!("{l}.output.LayerNorm"), hidden, eps)?,
            });
        }
        Ok(BertEncoder {
            hidden,
            heads,
            intermediate: inter,
            max_positions: config.max_position_embeddings,
            word: w.get(
                "embeddings.word_embeddings.weight",
                &[config.vocab_size, hidden],
            )?,
            position: w.get(
                "embeddings.position_embeddings.weight",
                &[config.max_position_embeddings, hidden],
            )?,
            token_type: w.get(
                "embeddings.token_type_embeddings.weight",
                &[config.type_vocab_size, hidden],
            )?,
            type_vocab: config.type_vocab_size,
            vocab: config.vocab_size,
            emb_norm: w.norm("embeddings.LayerNorm", hidden, eps)?,
            layers,
            act: config.hidden_act,
        })
    }

    /// Turns every layer's four linear products to int8 (`int8.rs`); a layer whose shape the
    /// kernel cannot take stays f32. The f32 weights are dropped.
    pub fn quantize(&mut self, calibration: &[Sequence]) -> Result<()> {
        // Each product's largest |input| per channel over the calibration texts (f32 pass).
        let mut peaks: Vec<[Vec<f32>; 4]> = self
            .layers
            .iter()
            .map(|l| {
                [
                    vec![0f32; l.qkv.input],
                    vec![0f32; l.attn_out.input],
                    vec![0f32; l.up.input],
                    vec![0f32; l.down.input],
                ]
            })
            .collect();
        self.run(calibration, &mut |layer, product, x| {
            let peak = &mut peaks[layer][product];
            for row in x.chunks_exact(peak.len()) {
                for (p, v) in peak.iter_mut().zip(row) {
                    *p = p.max(v.abs());
                }
            }
        })?;
        for (layer, peaks) in self.layers.iter_mut().zip(&peaks) {
            for (linear, peak) in [
                &mut layer.qkv,
                &mut layer.attn_out,
                &mut layer.up,
                &mut layer.down,
            ]
            .into_iter()
            .zip(peaks)
            {
                let smooth = smoothing(&linear.w, linear.output, peak, SMOOTHING_ALPHA);
                let outliers = outlier_channels(peak, OUTLIER_CHANNELS);
                if let Some(q) = QLinear::new(
                    &linear.w,
                    linear.input,
                    linear.output,
                    Some(smooth),
                    &outliers,
                ) {
                    linear.q = Some(q);
                    linear.w = Vec::new();
                }
            }
        }
        Ok(())
    }

    /// The last hidden states of `batch`.
    pub fn forward(&self, batch: &[Sequence]) -> Result<Hidden> {
        self.run(batch, &mut |_, _, _| {})
    }

    /// [`BertEncoder::forward`], showing `observe` the input of each linear product:
    /// `(layer, product, rows)` with products numbered qkv, attention output, up, down.
    fn run(
        &self,
        batch: &[Sequence],
        observe: &mut dyn FnMut(usize, usize, &[f32]),
    ) -> Result<Hidden> {
        let h = self.hidden;
        let mut offsets = Vec::with_capacity(batch.len() + 1);
        let mut total = 0;
        for s in batch {
            if s.ids.len() != s.types.len() {
                return Err(Error::Tokenizer(format!(
                    "{} token ids but {} type ids",
                    s.ids.len(),
                    s.types.len()
                )));
            }
            if s.ids.len() > self.max_positions {
                return Err(Error::Tokenizer(format!(
                    "a sequence of {} tokens exceeds the model's {} positions",
                    s.ids.len(),
                    self.max_positions
                )));
            }
            offsets.push(total);
            total += s.ids.len();
        }
        offsets.push(total);

        let mut x = vec![0f32; total * h];
        for (s, rows) in batch.iter().zip(offsets.windows(2)) {
            let out = &mut x[rows[0] * h..rows[1] * h];
            for (p, ((&id, &ty), row)) in s
                .ids
                .iter()
                .zip(s.types)
                .zip(out.chunks_exact_mut(h))
                .enumerate()
            {
                let (id, ty) = (id as usize, ty as usize);
                if id >= self.vocab || ty >= self.type_vocab {
                    return Err(Error::Tokenizer(format!(
                        "token id {id} or type id {ty} is outside the model's vocabulary ({} tokens, {} types)",
                        self.vocab, self.type_vocab
                    )));
                }
                let word = &self.word[id * h..(id + 1) * h];
                let pos = &self.position[p * h..(p + 1) * h];
                let typ = &self.token_type[ty * h..(ty + 1) * h];
                for (((o, w), p), t) in row.iter_mut().zip(word).zip(pos).zip(typ) {
                    *o = w + p + t;
                }
            }
        }
        self.emb_norm.apply(&mut x);

        let mut qkv = vec![0f32; total * 3 * h];
        let mut ctx = vec![0f32; total * h];
        let mut attn = vec![0f32; total * h];
        let mut up = vec![0f32; total * self.intermediate];
        for (i, layer) in self.layers.iter().enumerate() {
            observe(i, 0, &x);
            layer.qkv.forward(&x, total, &mut qkv, None);
            self.attention(&qkv, &offsets, &mut ctx);
            observe(i, 1, &ctx);
            layer.attn_out.forward(&ctx, total, &mut attn, Some(&x));
            layer.attn_norm.apply(&mut attn);
            observe(i, 2, &attn);
            layer.up.forward(&attn, total, &mut up, None);
            activate(self.act, &mut up);
            observe(i, 3, &up);
            layer.down.forward(&up, total, &mut x, Some(&attn));
            layer.out_norm.apply(&mut x);
        }
        Ok(Hidden {
            data: x,
            offsets,
            width: h,
        })
    }

    /// Multi-head self-attention of each sequence on its own rows of `qkv`, into `ctx`.
    fn attention(&self, qkv: &[f32], offsets: &[usize], ctx: &mut [f32]) {
        let h = self.hidden;
        let dh = h / self.heads;
        let scale = 1.0 / (dh as f32).sqrt();
        // Each sequence's context rows, as disjoint mutable slices for the parallel loop.
        let mut parts = Vec::with_capacity(offsets.len() - 1);
        let mut rest = ctx;
        for w in offsets.windows(2) {
            let (part, tail) = rest.split_at_mut((w[1] - w[0]) * h);
            parts.push((w[0], w[1] - w[0], part));
            rest = tail;
        }
        parts.into_par_iter().for_each(|(start, len, out)| {
            let rows = &qkv[start * 3 * h..(start + len) * 3 * h];
            let mut scores = vec![0f32; len * len];
            for head in 0..self.heads {
                let q = &rows[head * dh..];
                let k = &rows[h + head * dh..];
                let v = &rows[2 * h + head * dh..];
                // scores = scale · Q Kᵀ: Kᵀ read through strides, no copy.
                matmul(
                    Mat::new(q, 3 * h, 1),
                    Mat::new(k, 1, 3 * h),
                    len,
                    len,
                    dh,
                    &mut scores,
                    (len, 1),
                    scale,
                    false,
                    Parallelism::None,
                );
                for row in scores.chunks_exact_mut(len) {
                    softmax(row);
                }
                matmul(
                    Mat::new(&scores, len, 1),
                    Mat::new(v, 3 * h, 1),
                    len,
                    dh,
                    len,
                    &mut out[head * dh..],
                    (h, 1),
                    1.0,
                    false,
                    Parallelism::None,
                );
            }
        });
    }
}

/// SmoothQuant's migration strength: its paper's default, 0.5. On 200 HotpotQA passages
/// 0.3, 0.4, 0.5 and 0.7 gave mean cosines to f32 of 0.99860, 0.99924, 0.99925 and 0.99874
/// (none: 0.99890); the corpus-wide figures are in docs/results/performance.md.
const SMOOTHING_ALPHA: f32 = 0.5;

/// Input channels per linear product kept out of int8 (`int8.rs`, outlier channels): those
/// with the largest activation peaks over the calibration sentences. Chosen on 500 passages of
/// the 2WikiMultiHopQA corpus (int8 against f32): lowest cosine 0.99824 with none, 0.99909 /
/// 0.99924 / 0.99930 / 0.99927 with 1 / 2 / 4 / 8, mean 0.99923 -> 0.99963 with 4; the f32
/// side costs 4 multiply-adds per output for every 384 or 1,536 in int8.
const OUTLIER_CHANNELS: usize = 4;

/// The `n` channels with the largest peaks (none whose peak is 0).
fn outlier_channels(peak: &[f32], n: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..peak.len()).filter(|&c| peak[c] > 0.0).collect();
    order.sort_by(|&a, &b| peak[b].total_cmp(&peak[a]).then(a.cmp(&b)));
    order.truncate(n);
    order
}

/// SmoothQuant's per-input-channel factors `s_c = peak_x(c)^α / peak_w(c)^(1-α)`: the
/// activations are divided by them and the weight's rows multiplied, which moves the few
/// outlier channels' range from the activations (one scale per token) into the weights (one
/// scale per output column), where int8 holds it better.
fn smoothing(w: &[f32], output: usize, peak_x: &[f32], alpha: f32) -> Vec<f32> {
    w.chunks_exact(output)
        .zip(peak_x)
        .map(|(row, &px)| {
            let pw = row.iter().fold(0f32, |m, v| m.max(v.abs()));
            if px <= 0.0 || pw <= 0.0 {
                1.0
            } else {
                (px.powf(alpha) / pw.powf(1.0 - alpha)).clamp(1e-3, 1e3)
            }
        })
        .collect()
}

fn activate(act: HiddenAct, x: &mut [f32]) {
    x.par_chunks_mut(4096).for_each(|x| activate_chunk(act, x));
}

wide! {
    fn activate_chunk(act: HiddenAct, x: &mut [f32]) {
        match act {
            HiddenAct::Gelu => x.iter_mut().for_each(|v| *v = gelu_erf(*v)),
            HiddenAct::GeluApproximate => x.iter_mut().for_each(|v| *v = gelu_tanh(*v)),
            HiddenAct::Relu => x.iter_mut().for_each(|v| *v = v.max(0.0)),
        }
    }
}

wide! {
    /// Softmax of one row in place.
    fn softmax(row: &mut [f32]) {
        let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        // Two loops: the exps vectorise apart from the (ordered) sum.
        row.iter_mut().for_each(|v| *v = exp(*v - max));
        let sum: f32 = row.iter().sum();
        let inv = 1.0 / sum;
        row.iter_mut().for_each(|v| *v *= inv);
    }
}

/// `eˣ` to about one ulp: `2ⁿ · eʳ` with `n = round(x / ln 2)`, `|r| ≤ ln 2 / 2` and a degree-7
/// polynomial for `eʳ`. Branch-free so that loops over it vectorise.
#[inline(always)]
pub(crate) fn exp(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    // ln 2 split in two so that n · LN2_HI is exact.
    const LN2_HI: f32 = 0.693_145_75;
    const LN2_LO: f32 = 1.428_606_8e-6;
    // Adding and subtracting 1.5 · 2²³ rounds to the nearest integer without a call.
    const ROUND: f32 = 12_582_912.0;
    let x = x.clamp(-87.0, 88.0);
    let n = (x * LOG2E + ROUND) - ROUND;
    let r = x - n * LN2_HI - n * LN2_LO;
    let p = 1.0
        + r * (1.0
            + r * (0.5
                + r * (1.0 / 6.0
                    + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (1.0 / 720.0 + r / 5040.0))))));
    p * f32::from_bits(((n as i32 + 127) as u32) << 23)
}

/// `erf(x)` as a rational function of odd and even polynomials on `[-4, 4]` (outside it erf
/// is ±1 in `f32`): the approximation Eigen and XLA use, max error about 1e-7.
#[inline(always)]
pub(crate) fn erf(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let mut p = x2 * -2.726_142_3e-10 + 2.770_681_4e-8;
    p = x2 * p + -2.101_024e-6;
    p = x2 * p + -5.692_506_4e-5;
    p = x2 * p + -7.349_906_3e-4;
    p = x2 * p + -2.954_600_2e-3;
    p = x2 * p + -1.609_603_3e-2;
    let mut q = x2 * -1.456_607_2e-5 + -2.133_740_6e-4;
    q = x2 * q + -1.682_827e-3;
    q = x2 * q + -7.373_329_4e-3;
    q = x2 * q + -1.426_474e-2;
    x * p / q
}

/// GELU with the exact (erf) form, as BERT's `"gelu"` is defined.
#[inline(always)]
fn gelu_erf(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

/// GELU's tanh approximation (`"gelu_new"`, `"gelu_pytorch_tanh"`).
#[inline(always)]
fn gelu_tanh(x: f32) -> f32 {
    const C: f32 = 0.797_884_6; // sqrt(2 / pi)
    let u = C * (x + 0.044_715 * x * x * x);
    // tanh(u) = 1 - 2 / (e^{2u} + 1), through the fast exp.
    let t = 1.0 - 2.0 / (exp(2.0 * u) + 1.0);
    0.5 * x * (1.0 + t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_matches_std_to_a_few_ulp() {
        let mut worst = 0f32;
        let mut x = -87.0f32;
        while x < 88.0 {
            let rel = ((exp(x) - x.exp()) / x.exp()).abs();
            worst = worst.max(rel);
            x += 0.0137;
        }
        assert!(worst < 5e-7, "worst relative error {worst}");
        // Clamped, not wrapped: huge negative inputs give the smallest normal, not garbage.
        assert!(exp(-1000.0) < 1e-37 && exp(-1000.0) >= 0.0);
        assert!(exp(f32::NEG_INFINITY) < 1e-37);
    }

    /// Largest absolute difference between `ours` and candle's activation over [-6, 6].
    fn worst_against(
        ours: fn(f32) -> f32,
        candle: fn(&Tensor) -> candle_core::Result<Tensor>,
    ) -> f32 {
        let xs: Vec<f32> = (-6000..=6000).map(|i| i as f32 / 1000.0).collect();
        let t = Tensor::new(xs.as_slice(), &Device::Cpu).unwrap();
        let reference = candle(&t).unwrap().to_vec1::<f32>().unwrap();
        xs.iter()
            .zip(&reference)
            .map(|(&x, &r)| (ours(x) - r).abs())
            .fold(0f32, f32::max)
    }

    #[test]
    fn gelu_matches_candle() {
        // candle's gelu_erf uses libm's erf: the reference the model was checked against.
        let worst = worst_against(gelu_erf, Tensor::gelu_erf);
        assert!(worst < 2e-6, "erf GELU: worst absolute error {worst}");
        let worst = worst_against(gelu_tanh, Tensor::gelu);
        assert!(worst < 2e-6, "tanh GELU: worst absolute error {worst}");
    }

    #[test]
    fn softmax_sums_to_one_and_keeps_order() {
        let mut row = vec![1.0, 3.0, -2.0, 3.0, 12.0, -9.0];
        softmax(&mut row);
        assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        assert!(row[4] > 0.99 && row[1] == row[3] && row[2] > row[5] && row[5] > 0.0);
        // Scores far below the maximum underflow to (almost) zero, never to NaN.
        let mut row = vec![0.0, -500.0, f32::MIN];
        softmax(&mut row);
        assert!(row[0] > 0.999_999 && row.iter().all(|v| v.is_finite()));
    }

    #[test]
    fn strided_matmul_matches_naive() {
        // lhs 3×4, rhs read transposed from a 5×4 buffer.
        let a: Vec<f32> = (0..12).map(|i| i as f32 * 0.5 - 2.0).collect();
        let b: Vec<f32> = (0..20).map(|i| (i % 7) as f32 - 3.0).collect();
        let mut out = vec![1f32; 15];
        matmul(
            Mat::new(&a, 4, 1),
            Mat::new(&b, 1, 4),
            3,
            5,
            4,
            &mut out,
            (5, 1),
            2.0,
            true,
            Parallelism::None,
        );
        for i in 0..3 {
            for j in 0..5 {
                let dot: f32 = (0..4).map(|k| a[i * 4 + k] * b[j * 4 + k]).sum();
                assert!((out[i * 5 + j] - (1.0 + 2.0 * dot)).abs() < 1e-4);
            }
        }
    }

    #[test]
    #[should_panic]
    fn matmul_refuses_a_view_past_its_slice() {
        let a = vec![0f32; 4];
        let mut out = vec![0f32; 4];
        matmul(
            Mat::new(&a, 2, 1),
            Mat::new(&a, 2, 1),
            3,
            2,
            2,
            &mut out,
            (2, 1),
            1.0,
            false,
            Parallelism::None,
        );
    }
}
