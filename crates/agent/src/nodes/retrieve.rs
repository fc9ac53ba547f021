//! Retrieval into the evidence pool: the retrieve node, and [`gather`] for strategies
//! that search from inside their own nodes.

use super::RETRIEVE;
use crate::evidence::{self, Passage};
use crate::gateway::DEFAULT_RETRIEVER;
use crate::graph::{NodeError, NodeId, NodeResult, Transition};
use crate::injection::{self, Screen};
use crate::state::Run;
use crate::text::content_terms;
use crate::trace::{EvidenceMode, RetrievalReason, RetrievalRecord};
use metarag_core::{Hit, RetrieverKind, SearchMode, SearchRequest};

/// The RRF constant used to fuse a reranker's order with the retriever's (as in retrieval).
const RERANK_RRF_K: f32 = 60.0;

/// Searches the pending query (the question first) or takes the given context into the
/// pool. While the route allows further hops and the pool covers the question's terms
/// poorly, it searches again for the next hop (back to itself); then goes to `next`.
pub async fn retrieve<E: Send>(s: &mut Run<E>, next: NodeId) -> NodeResult {
    let threshold = s.cfg().near_duplicate_threshold;
    if s.mode != EvidenceMode::Retrieval {
        let given = s.context.clone().unwrap_or_default();
        let hits = given.len();
        let (kept, mut guardrails) = evidence::guard(given, &s.pool, threshold);
        let kept = screen(s, kept, hits, &mut guardrails).await?;
        let added = evidence::merge(&mut s.pool, kept);
        s.note = Some(format!(
            "{hits} context paragraphs, {added} kept, {} dropped",
            guardrails.total()
        ));
        s.retrievals.push(RetrievalRecord {
            reason: RetrievalReason::Context,
            query: String::new(),
            k: hits,
            hits,
            added,
            guardrails,
            rerank: "no: gold context".into(),
            diagnostics: evidence::diagnose_pool(&s.question, &s.pool),
            ms: 0.0,
        });
        return Ok(Transition::Goto(next));
    }
    let (query, reason) = s
        .pending
        .take()
        .unwrap_or_else(|| (s.question.clone(), RetrievalReason::Initial));
    let k = s.route.top_k;
    // A hop this node planned, or a re-retrieval for a missing hop, first follows the
    // graph's edges from the bridge entities the pool names: half the passages from
    // there, the rest from the query (docs/results/graph.md measures the pool both ways).
    let mut followed = 0;
    if std::mem::take(&mut s.follow_bridge)
        && s.cfg().follow_entities
        && s.search_mode.retrievers().contains(&RetrieverKind::Graph)
    {
        let names = evidence::bridge_names(&s.question, &s.pool, 3);
        if !names.is_empty() {
            let mode = std::mem::replace(&mut s.search_mode, SearchMode::Graph);
            let result = search_into_pool(
                s,
                &names.join("; "),
                k.div_ceil(2),
                RetrievalReason::FollowEntities,
                false,
            )
            .await;
            s.search_mode = mode;
            followed = result?.0;
        }
    }
    let (added, _) = search_into_pool(
        s,
        &query,
        k.saturating_sub(followed).max(1),
        reason,
        s.route.rerank,
    )
    .await?;
    let added = added + followed;
    // A repair of an earlier search is not a hop of the plan.
    let repair = matches!(
        reason,
        RetrievalReason::Remediation | RetrievalReason::Reformulation
    );
    if !repair {
        s.hops += 1;
    }
    // The retrieval just recorded carries the pool's diagnostics.
    let diagnostics = s
        .retrievals
        .last()
        .map(|r| r.diagnostics)
        .ok_or("the search was not recorded")?;
    let low_diversity = if diagnostics.document_diversity < s.cfg().min_retrieval_diversity {
        "; warning: low document diversity"
    } else {
        ""
    };
    s.note = Some(format!(
        "{reason:?} {query:?}: {added} new; coverage {:.2}{low_diversity}",
        diagnostics.query_coverage
    ));
    // The bridge entities the first passages name, each searched by name before anything
    // is written: a chain's second hop, which query coverage never asks for.
    if reason == RetrievalReason::Initial && s.cfg().bridge_hop && s.hops < s.route.hops {
        let bridges = evidence::bridges(&s.question, &s.pool, evidence::MAX_BRIDGES);
        if !bridges.is_empty() {
            let mut found = 0;
            for b in &bridges {
                found +=
                    search_into_pool(s, &b.name, s.cfg().bridge_k, RetrievalReason::Hop, false)
                        .await?
                        .0;
            }
            s.hops += 1;
            let names: Vec<&str> = bridges.iter().map(|b| b.name.as_str()).collect();
            s.note = Some(format!(
                "{reason:?} {query:?}: {added} new; bridges {names:?}: {found} new"
            ));
            // Only a bridge whose own passage is now pooled can lead the writer anywhere.
            s.bridges = bridges
                .into_iter()
                .filter(|b| evidence::pooled(&b.name, &s.pool))
                .collect();
        }
    }
    if !repair
        && s.hops < s.route.hops
        && diagnostics.query_coverage < s.cfg().evidence_coverage_threshold
        && let Some(next_query) = evidence::next_hop_query(&s.question, &s.pool)
        && !s.queries.contains(&next_query)
    {
        s.pending = Some((next_query, RetrievalReason::Hop));
        s.follow_bridge = true;
        return Ok(Transition::Goto(RETRIEVE));
    }
    Ok(Transition::Goto(next))
}

/// Searches `query` (reranking when asked and a reranker is configured), passes the hits
/// through the guardrails, merges the new ones into the pool, records the retrieval, and
/// returns how many passages were added and the top `k` hits in the retriever's order
/// (new or already in the pool).
async fn search_into_pool<E: Send>(
    s: &mut Run<E>,
    query: &str,
    k: usize,
    reason: RetrievalReason,
    rerank: bool,
) -> Result<(usize, Vec<Passage>), NodeError> {
    let threshold = s.cfg().near_duplicate_threshold;
    // Later searches augment the pool: ask deep enough to find k passages not in it yet.
    let depth = k + s.pool.len();
    let search_ms = s.gw.usage.search_ms;
    let mut request = SearchRequest::new(query, depth);
    request.mode = s.search_mode;
    let mut hits = s.gw.search(DEFAULT_RETRIEVER, &request).await?;
    let rerank_note = match (s.gw.reranker().is_some(), rerank) {
        (_, false) => "no: not in this route".to_string(),
        (false, true) => "skipped: no reranker configured".to_string(),
        (true, true) if hits.len() > 1 => {
            let texts: Vec<String> = hits.iter().map(|h| h.chunk.draft.text.clone()).collect();
            let scores = s.gw.rerank(query, &texts).await?.unwrap_or_default();
            hits = fuse_with_reranker(hits, &scores);
            let model = s.gw.reranker().map(|r| r.model_id().to_string());
            format!(
                "yes: {} fused with the hybrid order",
                model.unwrap_or_default()
            )
        }
        (true, true) => "no: fewer than two hits".to_string(),
    };
    let ms = s.gw.usage.search_ms - search_ms;
    let n_hits = hits.len();
    let found: Vec<Passage> = hits.iter().map(Passage::from_hit).collect();
    let ranked: Vec<Passage> = found.iter().take(k).cloned().collect();
    let passages = evidence::fresh(&s.pool, found);
    let (kept, mut guardrails) = evidence::guard(passages, &s.pool, threshold);
    let kept = screen(s, kept, k, &mut guardrails).await?;
    let added = evidence::merge(&mut s.pool, kept);
    if !s.queries.iter().any(|q| q == query) {
        s.queries.push(query.to_string());
    }
    s.retrievals.push(RetrievalRecord {
        reason,
        query: query.to_string(),
        k,
        hits: n_hits,
        added,
        guardrails,
        rerank: rerank_note,
        diagnostics: evidence::diagnose_pool(&s.question, &s.pool),
        ms,
    });
    Ok((added, ranked))
}

/// The first `k` of `passages` (the guardrails' survivors, best first) that the
/// configured injection screen passes. With the model screen, each is asked about in
/// order until `k` pass, so a flagged passage costs one more call and not a place in the
/// pool; the flagged ones are counted in `report.injection_model`. A call that fails or a
/// reply that does not parse keeps its passage (the patterns have passed it) and is logged:
/// a screen that cannot answer must not empty the pool.
async fn screen<E: Send>(
    s: &mut Run<E>,
    passages: Vec<Passage>,
    k: usize,
    report: &mut evidence::GuardrailReport,
) -> Result<Vec<Passage>, NodeError> {
    if s.cfg().injection_screen == Screen::Patterns {
        return Ok(passages.into_iter().take(k).collect());
    }
    let threshold = s.cfg().injection_threshold;
    let mut kept = Vec::with_capacity(k);
    for passage in passages {
        if kept.len() == k {
            break;
        }
        let c =
            s.gw.chat(
                RETRIEVE.as_str(),
                "screen",
                injection::request(&passage.text),
            )
            .await?;
        match c.result.as_ref().map(injection::score) {
            Ok(Some(p)) if p >= threshold => {
                tracing::info!(title = %passage.title, "the model screen flagged a passage as injection");
                report.injection_model += 1;
            }
            Ok(Some(_)) => kept.push(passage),
            Ok(None) => {
                tracing::warn!(title = %passage.title, "the injection screen's reply did not parse; passage kept");
                kept.push(passage);
            }
            Err(e) => {
                tracing::warn!(title = %passage.title, "the injection screen's call failed ({e}); passage kept");
                kept.push(passage);
            }
        }
    }
    Ok(kept)
}

/// Reorders hits by RRF of the retriever's order and the reranker's scores: measured
/// here, a small reranker alone lowers NDCG, fused it keeps NDCG and lifts recall.
fn fuse_with_reranker(hits: Vec<Hit>, scores: &[f32]) -> Vec<Hit> {
    if scores.len() != hits.len() {
        return hits;
    }
    let n = hits.len();
    let mut by_score: Vec<usize> = (0..n).collect();
    by_score.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    let order = metarag_retrieve::fuse_orders(n, &[(0..n).collect(), by_score], RERANK_RRF_K);
    let mut slots: Vec<Option<Hit>> = hits.into_iter().map(Some).collect();
    order.into_iter().filter_map(|i| slots[i].take()).collect()
}

/// For strategies that search from inside a node (IRCoT, Self-Ask, ReAct, FLARE): the
/// `k` passages most relevant to `query`. Over an index it searches and returns the
/// retriever's top `k`, adding new passages to the pool (a [`RetrievalReason::Hop`]
/// retrieval); over given context it ranks the given paragraphs by the query's terms, so
/// the same strategy runs in both protocols. A query searched before is not searched
/// again: the pool is ranked instead.
/// Closed-book runs have nothing to gather.
pub async fn gather<E: Send>(
    s: &mut Run<E>,
    query: &str,
    k: usize,
) -> Result<Vec<Passage>, NodeError> {
    // A query searched before would find the same: rank the pool instead.
    let searched = s.queries.iter().any(|q| q == query);
    if s.mode == EvidenceMode::Retrieval && !query.trim().is_empty() && !searched {
        let (_, ranked) = search_into_pool(s, query, k, RetrievalReason::Hop, false).await?;
        return Ok(ranked);
    }
    Ok(rank_pool(&s.pool, query, k))
}

/// Multi-query retrieval: every query searched (under `filter`, and again without it when
/// the filter leaves fewer than `k` hits: a question's year or title may not be the
/// documents' metadata), the lists fused by retrieval's RRF, guarded and merged into the
/// pool as one recorded retrieval (its query the queries joined by " | "). Returns the
/// fused top `k`, new to the pool or not. Over given context each query ranks the given
/// paragraphs instead.
pub async fn gather_fused<E: Send>(
    s: &mut Run<E>,
    queries: &[String],
    k: usize,
    filter: &metarag_core::Filter,
    reason: RetrievalReason,
) -> Result<Vec<Passage>, NodeError> {
    let queries: Vec<&String> = queries.iter().filter(|q| !q.trim().is_empty()).collect();
    let mut union: Vec<Passage> = Vec::new();
    let mut orders: Vec<Vec<usize>> = Vec::new();
    let position =
        |p: Passage, union: &mut Vec<Passage>| match union.iter().position(|u| same_passage(u, &p))
        {
            Some(i) => i,
            None => {
                union.push(p);
                union.len() - 1
            }
        };
    let search_ms = s.gw.usage.search_ms;
    let mut hits_total = 0;
    let mut filter_note = String::new();
    for q in &queries {
        let found: Vec<Passage> = if s.mode == EvidenceMode::Retrieval {
            let depth = k + s.pool.len();
            let mut request = SearchRequest::new(q.as_str(), depth);
            request.filter = filter.clone();
            request.mode = s.search_mode;
            let mut hits = s.gw.search(DEFAULT_RETRIEVER, &request).await?;
            if *filter != metarag_core::Filter::default() && hits.len() < k {
                filter_note = format!("; the filter left {} hits, unfiltered added", hits.len());
                let mut unfiltered = SearchRequest::new(q.as_str(), depth);
                unfiltered.mode = s.search_mode;
                let unfiltered = s.gw.search(DEFAULT_RETRIEVER, &unfiltered).await?;
                // The filtered hits keep their lead; the rest follow in their own order.
                let seen: std::collections::HashSet<_> = hits.iter().map(|h| h.chunk.id).collect();
                hits.extend(
                    unfiltered
                        .into_iter()
                        .filter(|h| !seen.contains(&h.chunk.id)),
                );
            }
            hits_total += hits.len();
            hits.iter().map(Passage::from_hit).collect()
        } else {
            rank_pool(&s.context.clone().unwrap_or_default(), q, k)
        };
        let order = found.into_iter().map(|p| position(p, &mut union)).collect();
        orders.push(order);
        if !s.queries.iter().any(|x| x == *q) {
            s.queries.push((*q).clone());
        }
    }
    let fused: Vec<Passage> = metarag_retrieve::fuse_orders(union.len(), &orders, RERANK_RRF_K)
        .into_iter()
        .map(|i| union[i].clone())
        .collect();
    let ranked: Vec<Passage> = fused.iter().take(k).cloned().collect();
    let threshold = s.cfg().near_duplicate_threshold;
    let fresh = evidence::fresh(&s.pool, fused);
    let (kept, mut guardrails) = evidence::guard(fresh, &s.pool, threshold);
    let kept = screen(s, kept, k, &mut guardrails).await?;
    let added = evidence::merge(&mut s.pool, kept);
    let ms = s.gw.usage.search_ms - search_ms;
    s.retrievals.push(RetrievalRecord {
        reason,
        query: queries
            .iter()
            .map(|q| q.as_str())
            .collect::<Vec<_>>()
            .join(" | "),
        k,
        hits: hits_total,
        added,
        guardrails,
        rerank: format!("no: {} lists fused by RRF{filter_note}", orders.len()),
        diagnostics: evidence::diagnose_pool(&s.question, &s.pool),
        ms,
    });
    Ok(ranked)
}

/// The same passage: the same chunk, or for given paragraphs the same title and text.
pub fn same_passage(a: &Passage, b: &Passage) -> bool {
    match (&a.chunk_id, &b.chunk_id) {
        (Some(x), Some(y)) => x == y,
        _ => a.title == b.title && a.text == b.text,
    }
}

/// The `k` passages of the pool sharing most content terms with `query` (title terms
/// count double: they name the passage's subject), in pool order among equals.
fn rank_pool(pool: &[Passage], query: &str, k: usize) -> Vec<Passage> {
    let q = content_terms(query);
    let mut scored: Vec<(usize, usize)> = pool
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let title = content_terms(&p.title);
            let text = content_terms(&p.text);
            let score = q
                .iter()
                .map(|t| 2 * usize::from(title.contains(t)) + usize::from(text.contains(t)))
                .sum();
            (i, score)
        })
        .collect();
    scored.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    scored
        .into_iter()
        .take(k)
        .map(|(i, _)| pool[i].clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pool_ranks_by_the_query_with_titles_first() {
        let pool = vec![
            Passage::paragraph("Jaws (film)", "A 1975 film directed by Steven Spielberg."),
            Passage::paragraph("Steven Spielberg", "An American filmmaker born in Ohio."),
            Passage::paragraph("Ohio", "A state of the United States."),
        ];
        let top = rank_pool(&pool, "Where was Steven Spielberg born?", 2);
        assert_eq!(top[0].title, "Steven Spielberg");
        assert_eq!(top[1].title, "Jaws (film)");
    }
}
