//! # metarag-eval
//!
//! Evaluation: loaders for the multi-hop QA data sets (the normalised JSONL of
//! `shared/data/qa`), answer metrics as the papers compute them (EM, F1, precision, recall,
//! Sub-EM over answer aliases), and the retrieval benchmark — recall@k of the supporting
//! titles, MRR, and query latency per mode — that `metarag bench retrieval` runs.

mod dataset;
mod error;
mod metrics;
mod retrieval;

pub use dataset::{QaContext, QaRecord, load_dataset};
pub use error::{Error, Result};
pub use metrics::{AnswerScores, normalize_answer, score_answer, token_f1};
pub use retrieval::{ModeReport, RetrievalReport, evaluate_retrieval, percentile};
