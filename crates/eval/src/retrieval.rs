//! Retrieval quality and latency against gold supporting titles.

use crate::{QaRecord, Result};
use metarag_core::{Embedder, Retriever, SearchMode, SearchRequest, StoreRead};
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

/// One way of taking the second hop of a multi-hop question.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HopMethod {
    /// No second search: the first search's top `2k` (the same number of passages).
    None,
    /// The agent's next-hop query (uncovered question terms and bridge names), hybrid.
    NextHopQuery,
    /// The bridge names the pool mentions, searched in the entity graph alone: the pages
    /// of the entities the first passages point at, and their neighbours.
    FollowEntities,
    /// Both: half of the hop's passages from each, the graph's first.
    Both,
    /// The agent's bridge hop (`agent.bridge_hop`): each bridge entity the question's
    /// relation passes through, searched by name, the agent's default `bridge_k` passages
    /// each (fewer passages than the other methods add).
    RelationBridges,
}

/// A second-hop method's effect on the pool.
#[derive(Debug, Clone, Serialize)]
pub struct HopReport {
    /// The method.
    pub method: HopMethod,
    /// Fraction of questions whose pool holds every supporting title.
    pub recall_all: f64,
    /// The same, per question type.
    pub recall_all_by_type: BTreeMap<String, f64>,
    /// Of the questions the first `k` passages leave incomplete, the fraction the hop
    /// completes.
    pub completed: f64,
    /// Questions evaluated.
    pub questions: usize,
}

/// Counts of one hop method over the questions.
#[derive(Default)]
struct HopTally {
    /// Questions whose pool holds every supporting title.
    complete: f64,
    /// Per question type: (questions, complete).
    by_type: BTreeMap<String, (usize, f64)>,
    /// Questions the first search's top `k` leaves incomplete.
    incomplete_before: usize,
    /// Of those, the ones the hop completes.
    completed: usize,
}

/// The agent's pool after one hop, per [`HopMethod`]: the first hybrid search's top `k`,
/// then `k` passages not in the pool yet from the hop (the agent's retrieve node does the
/// same with its route's `top_k`). Recall counts a question when the pool holds all its
/// supporting titles.
pub async fn evaluate_hops<E: Embedder, S: StoreRead>(
    retriever: &HybridRetriever<E, S>,
    questions: &[QaRecord],
    k: usize,
) -> Result<Vec<HopReport>> {
    use metarag_agent::evidence::{
        MAX_BRIDGES, Passage, bridge_names, next_hop_query, relation_bridges,
    };
    // The agent's own setting, so that the measure follows the default it reports on.
    let bridge_k = metarag_agent::AgentConfig::default().bridge_k;
    let questions: Vec<&QaRecord> = questions
        .iter()
        .filter(|q| !q.supporting_titles.is_empty())
        .collect();
    let methods = [
        HopMethod::None,
        HopMethod::NextHopQuery,
        HopMethod::FollowEntities,
        HopMethod::Both,
        HopMethod::RelationBridges,
    ];
    let mut tallies: Vec<HopTally> = methods.iter().map(|_| HopTally::default()).collect();
    let search = |query: String, mode: SearchMode, n: usize| {
        let mut req = SearchRequest::new(query, n);
        req.mode = mode;
        async move { retriever.search(&req).await }
    };
    for q in &questions {
        let _span = tracing::info_span!("bench.hops", id = %q.id).entered();
        let first: Vec<Passage> = search(q.question.clone(), SearchMode::Hybrid, 2 * k)
            .await?
            .iter()
            .map(Passage::from_hit)
            .collect();
        let pool: Vec<Passage> = first.iter().take(k).cloned().collect();
        let complete = |titles: &[&str]| {
            q.supporting_titles
                .iter()
                .all(|s| titles.contains(&s.as_str()))
        };
        let titles_of = |p: &[Passage]| p.iter().map(|p| p.title.clone()).collect::<Vec<_>>();
        let before = titles_of(&pool);
        let before_complete = complete(&before.iter().map(String::as_str).collect::<Vec<_>>());
        let fresh = |hits: Vec<Passage>, n: usize| -> Vec<Passage> {
            metarag_agent::evidence::fresh(&pool, hits)
                .into_iter()
                .take(n)
                .collect()
        };
        let hop_query = next_hop_query(&q.question, &pool);
        let names = bridge_names(&q.question, &pool, 3);
        let by_query = match &hop_query {
            Some(h) => search(h.clone(), SearchMode::Hybrid, 2 * k).await?,
            None => Vec::new(),
        };
        let by_query: Vec<Passage> = fresh(by_query.iter().map(Passage::from_hit).collect(), k);
        let by_graph = if names.is_empty() {
            Vec::new()
        } else {
            search(names.join("; "), SearchMode::Graph, 2 * k).await?
        };
        let by_graph: Vec<Passage> = fresh(by_graph.iter().map(Passage::from_hit).collect(), k);
        let mut by_bridge: Vec<Passage> = Vec::new();
        for name in relation_bridges(&q.question, &pool, MAX_BRIDGES) {
            let hits = search(name, SearchMode::Hybrid, bridge_k + k).await?;
            let hits: Vec<Passage> = hits.iter().map(Passage::from_hit).collect();
            let new = metarag_agent::evidence::fresh(&by_bridge, fresh(hits, bridge_k + k));
            by_bridge.extend(new.into_iter().take(bridge_k));
        }
        for (m, tally) in methods.iter().zip(tallies.iter_mut()) {
            let added: Vec<Passage> = match m {
                HopMethod::None => first.iter().skip(k).cloned().collect(),
                HopMethod::NextHopQuery => by_query.clone(),
                HopMethod::FollowEntities => by_graph.clone(),
                HopMethod::RelationBridges => by_bridge.clone(),
                HopMethod::Both => {
                    let mut both: Vec<Passage> =
                        by_graph.iter().take(k.div_ceil(2)).cloned().collect();
                    both.extend(metarag_agent::evidence::fresh(&both, by_query.clone()));
                    both.truncate(k);
                    both
                }
            };
            let mut titles = before.clone();
            titles.extend(titles_of(&added));
            let all = complete(&titles.iter().map(String::as_str).collect::<Vec<_>>());
            let v = f64::from(u8::from(all));
            tally.complete += v;
            let kind = q.kind.clone().unwrap_or_else(|| "all".into());
            let t = tally.by_type.entry(kind).or_default();
            t.0 += 1;
            t.1 += v;
            if !before_complete {
                tally.incomplete_before += 1;
                tally.completed += usize::from(all);
            }
        }
    }
    let n = questions.len().max(1) as f64;
    Ok(methods
        .iter()
        .zip(tallies)
        .map(|(&method, t)| HopReport {
            method,
            recall_all: t.complete / n,
            recall_all_by_type: t
                .by_type
                .into_iter()
                .map(|(kind, (c, v))| (kind, v / c.max(1) as f64))
                .collect(),
            completed: t.completed as f64 / t.incomplete_before.max(1) as f64,
            questions: questions.len(),
        })
        .collect())
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
