//! # metarag-eval
//!
//! Evaluation: loaders for the multi-hop QA data sets (the normalised JSONL of
//! `data/qa`), answer metrics as the papers compute them (EM, F1, precision, recall,
//! Sub-EM over answer aliases), and the retrieval benchmark — recall@k of the supporting
//! titles, MRR, and query latency per mode — that `metarag bench retrieval` runs, and the
//! QA benchmark ([`qa`]: every sampled question through every registered strategy, gold or
//! open protocol, resumable) with its run records, bootstrap intervals and markdown + SVG
//! report ([`report`]), and the run log ([`runs`]: every answered question in SQLite,
//! with its trace, for `metarag runs` and the server's analytics).

mod dataset;
mod error;
pub mod judge;
mod metrics;
pub mod monitor;
pub mod qa;
pub mod ragas;
pub mod report;
mod retrieval;
pub mod runs;
pub mod stats;
pub mod truth;
pub mod unanswerable;

pub use dataset::{QaContext, QaRecord, load_dataset};
pub use error::{Error, Result};
pub use metrics::{AnswerScores, normalize_answer, score_answer, token_f1};
pub use retrieval::{
    HopMethod, HopReport, ModeReport, RetrievalReport, evaluate_hops, evaluate_retrieval,
    percentile,
};
