//! Retrieval quality and latency against gold supporting titles.

use crate::{QaRecord, Result};
use metarag_core::{Embedder, SearchMode, SearchRequest, StoreRead};
use metarag_retrieve::HybridRetriever;
use serde::Serialize;
use std::collections::BTreeMap;

/// Results of one retrieval mode.
#[derive(Debug, Clone, Serialize)]
pub struct ModeReport {
    /// The mode.
    pub mode: SearchMode,
    /// Questions evaluated.
    pub questions: usize,
    /// Fraction of questions with *all* supporting titles among the top k hits, by k (the
    /// number multi-hop papers report: both paragraphs are needed).
    pub recall_all: BTreeMap<usize, f64>,
    /// Mean fraction of supporting titles among the top k hits, by k.
    pub recall_mean: BTreeMap<usize, f64>,
    /// Mean reciprocal rank of the first supporting hit (0 when none is in the list).
    pub mrr: f64,
    /// `recall_all` at each k per question type.
    pub recall_all_by_type: BTreeMap<String, BTreeMap<usize, f64>>,
    /// Median search latency without the query embedding, milliseconds.
    pub search_ms_p50: f64,
    /// 95th percentile of the same.
    pub search_ms_p95: f64,
    /// Median query-embedding time, milliseconds (0 for BM25).
    pub embed_ms_p50: f64,
}

/// Results of every mode.
#[derive(Debug, Clone, Serialize)]
pub struct RetrievalReport {
    /// The cut-offs evaluated.
    pub ks: Vec<usize>,
    /// One report per mode.
    pub modes: Vec<ModeReport>,
}

/// The `p`-th percentile (0..=100) by nearest rank; 0 for no values.
pub fn percentile(values: &[f64], p: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * v.len() as f64).ceil().max(1.0) as usize;
    v[rank.min(v.len()) - 1]
}

/// Runs every question through every mode and scores the hits against the questions'
/// supporting titles. Questions without supporting titles are skipped.
pub async fn evaluate_retrieval<E: Embedder, S: StoreRead>(
    retriever: &HybridRetriever<E, S>,
    questions: &[QaRecord],
    modes: &[SearchMode],
    ks: &[usize],
) -> Result<RetrievalReport> {
    let depth = ks.iter().copied().max().unwrap_or(10);
    let questions: Vec<&QaRecord> = questions
        .iter()
        .filter(|q| !q.supporting_titles.is_empty())
        .collect();
    let mut reports = Vec::new();
    for &mode in modes {
        let _span = tracing::info_span!("bench.retrieval", ?mode).entered();
        let mut all_hits: BTreeMap<usize, f64> = BTreeMap::new();
        let mut mean_hits: BTreeMap<usize, f64> = BTreeMap::new();
        let mut by_type: BTreeMap<String, (usize, BTreeMap<usize, f64>)> = BTreeMap::new();
        let mut rr = 0.0;
        let mut search_ms = Vec::with_capacity(questions.len());
        let mut embed_ms = Vec::with_capacity(questions.len());
        for q in &questions {
            let mut req = SearchRequest::new(q.question.clone(), depth);
            req.mode = mode;
            let (hits, timings) = retriever.search_timed(&req).await?;
            search_ms.push(timings.search.as_secs_f64() * 1e3);
            embed_ms.push(timings.embed.as_secs_f64() * 1e3);
            let titles: Vec<&str> = hits.iter().map(|h| h.chunk.title.as_str()).collect();
            if let Some(pos) = titles
                .iter()
                .position(|t| q.supporting_titles.iter().any(|s| s == t))
            {
                rr += 1.0 / (pos + 1) as f64;
            }
            let kind = q.kind.clone().unwrap_or_else(|| "all".into());
            let entry = by_type.entry(kind).or_default();
            entry.0 += 1;
            for &k in ks {
                let top = &titles[..k.min(titles.len())];
                let found = q
                    .supporting_titles
                    .iter()
                    .filter(|s| top.contains(&s.as_str()))
                    .count();
                let all = if found == q.supporting_titles.len() {
                    1.0
                } else {
                    0.0
                };
                *all_hits.entry(k).or_default() += all;
                *mean_hits.entry(k).or_default() += found as f64 / q.supporting_titles.len() as f64;
                *entry.1.entry(k).or_default() += all;
            }
        }
        let n = questions.len().max(1) as f64;
        reports.push(ModeReport {
            mode,
            questions: questions.len(),
            recall_all: all_hits.into_iter().map(|(k, v)| (k, v / n)).collect(),
            recall_mean: mean_hits.into_iter().map(|(k, v)| (k, v / n)).collect(),
            mrr: rr / n,
            recall_all_by_type: by_type
                .into_iter()
                .map(|(t, (count, m))| {
                    (
                        t,
                        m.into_iter().map(|(k, v)| (k, v / count as f64)).collect(),
                    )
                })
                .collect(),
            search_ms_p50: percentile(&search_ms, 50.0),
            search_ms_p95: percentile(&search_ms, 95.0),
            embed_ms_p50: percentile(&embed_ms, 50.0),
        });
    }
    Ok(RetrievalReport {
        ks: ks.to_vec(),
        modes: reports,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), 50.0);
        assert_eq!(percentile(&v, 95.0), 95.0);
        assert_eq!(percentile(&[3.0], 95.0), 3.0);
        assert_eq!(percentile(&[], 50.0), 0.0);
    }
}
