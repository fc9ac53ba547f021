//! Weighted reciprocal rank fusion, implemented once for every retriever combination.

use metarag_core::{ChunkId, RetrieverKind, ScoredChunk, SourceRank};
use std::collections::HashMap;

/// One retriever's ranking, best first, with its fusion weight.
#[derive(Debug, Clone, PartialEq)]
pub struct RankedList {
    /// Which retriever produced it.
    pub retriever: RetrieverKind,
    /// Multiplies this list's contribution.
    pub weight: f32,
    /// Chunk ids with the retriever's own scores, best first.
    pub items: Vec<ScoredChunk>,
}

/// A fused result.
#[derive(Debug, Clone, PartialEq)]
pub struct Fused {
    /// The chunk.
    pub id: ChunkId,
    /// Σ weight / (k + rank) over the lists that contain it.
    pub score: f32,
    /// Where each list ranked it, in list order.
    pub sources: Vec<SourceRank>,
}

/// Weighted RRF (Cormack et al. 2009): `score(d) = Σ_i w_i / (k + rank_i(d))`, ranks
/// 1-based, lists that miss `d` contribute nothing. A chunk listed twice in one list counts
/// at its first (best) rank. Ties are broken by the best single rank, then by chunk id, so
/// the output is a deterministic function of the input.
pub fn reciprocal_rank_fusion(lists: &[RankedList], k: f32) -> Vec<Fused> {
    let mut acc: HashMap<ChunkId, (f64, usize, Vec<SourceRank>)> = HashMap::new();
    for list in lists {
        let mut seen = std::collections::HashSet::new();
        let mut rank = 0;
        for &ScoredChunk { id, score } in &list.items {
            if !seen.insert(id) {
                continue;
            }
            rank += 1;
            let e = acc.entry(id).or_insert((0.0, usize::MAX, Vec::new()));
            // f64 accumulation: sums of many tiny reciprocals must not depend on list order.
            e.0 += f64::from(list.weight) / (f64::from(k) + rank as f64);
            e.1 = e.1.min(rank);
            e.2.push(SourceRank {
                retriever: list.retriever,
                rank,
                score,
            });
        }
    }
    let mut out: Vec<(f64, usize, Fused)> = acc
        .into_iter()
        .map(|(id, (score, best, sources))| {
            (
                score,
                best,
                Fused {
                    id,
                    score: score as f32,
                    sources,
                },
            )
        })
        .collect();
    out.sort_by(|a, b| {
        b.0.total_cmp(&a.0)
            .then(a.1.cmp(&b.1))
            .then(a.2.id.cmp(&b.2.id))
    });
    out.into_iter().map(|(_, _, f)| f).collect()
}

/// Fuses several orderings of the same `n` items (each a permutation of `0..n`, best
/// first, or a prefix of one) by unweighted RRF with constant `k`, returning item indices
/// best first. Used where a reranker's order is fused with a retriever's: the same RRF as
/// retrieval, over positions instead of chunk ids.
pub fn fuse_orders(n: usize, orders: &[Vec<usize>], k: f32) -> Vec<usize> {
    let lists: Vec<RankedList> = orders
        .iter()
        .map(|o| RankedList {
            // The label only names where a rank came from; positions are not chunks of
            // one retriever, and the labels are dropped below.
            retriever: RetrieverKind::Bm25,
            weight: 1.0,
            items: o
                .iter()
                .filter(|&&i| i < n)
                .map(|&i| ScoredChunk::new(ChunkId(i as u64), 0.0))
                .collect(),
        })
        .collect();
    reciprocal_rank_fusion(&lists, k)
        .into_iter()
        .map(|f| f.id.0 as usize)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn fused_orders_keep_agreement_on_top() {
        // The retriever's first is the reranker's last: fused, it falls behind items both
        // rank well.
        let order = fuse_orders(3, &[vec![0, 1, 2], vec![1, 2, 0]], 60.0);
        assert_eq!(order, [1, 0, 2]);
    }

    fn list(kind: RetrieverKind, w: f32, ids: &[u64]) -> RankedList {
        RankedList {
            retriever: kind,
            weight: w,
            items: ids
                .iter()
                .map(|&i| ScoredChunk::new(ChunkId(i), 1.0))
                .collect(),
        }
    }

    #[test]
    fn hand_computed_scores() {
        let f = reciprocal_rank_fusion(
            &[
                list(RetrieverKind::Bm25, 1.0, &[1, 2]),
                list(RetrieverKind::Dense, 1.0, &[2, 3]),
            ],
            60.0,
        );
        let ids: Vec<u64> = f.iter().map(|f| f.id.0).collect();
        assert_eq!(ids, [2, 1, 3]);
        assert!((f[0].score - (1.0 / 62.0 + 1.0 / 61.0)).abs() < 1e-7);
        assert_eq!(f[0].sources.len(), 2);
        assert_eq!(f[0].sources[1].rank, 1);
    }

    #[test]
    fn weights_scale_contributions() {
        let f = reciprocal_rank_fusion(
            &[
                list(RetrieverKind::Bm25, 0.5, &[1]),
                list(RetrieverKind::Dense, 2.0, &[2]),
            ],
            60.0,
        );
        assert_eq!(f[0].id, ChunkId(2));
        assert!((f[0].score / f[1].score - 4.0).abs() < 1e-5);
    }

    fn ids_strategy() -> impl Strategy<Value = Vec<u64>> {
        proptest::collection::vec(0u64..40, 0..25)
    }

    proptest! {
        /// Swapping the order of equally weighted lists changes nothing but the order of
        /// each hit's `sources`.
        #[test]
        fn order_invariant_for_equal_weights(a in ids_strategy(), b in ids_strategy()) {
            let x = reciprocal_rank_fusion(&[list(RetrieverKind::Bm25, 1.0, &a), list(RetrieverKind::Dense, 1.0, &b)], 60.0);
            let y = reciprocal_rank_fusion(&[list(RetrieverKind::Dense, 1.0, &b), list(RetrieverKind::Bm25, 1.0, &a)], 60.0);
            let xs: Vec<_> = x.iter().map(|f| (f.id, f.score)).collect();
            let ys: Vec<_> = y.iter().map(|f| (f.id, f.score)).collect();
            prop_assert_eq!(xs, ys);
        }

        /// Output is the de-duplicated union of the inputs, sorted by score.
        #[test]
        fn union_without_duplicates(a in ids_strategy(), b in ids_strategy()) {
            let f = reciprocal_rank_fusion(&[list(RetrieverKind::Bm25, 1.0, &a), list(RetrieverKind::Dense, 0.7, &b)], 60.0);
            let mut want: Vec<u64> = a.iter().chain(&b).copied().collect();
            want.sort_unstable();
            want.dedup();
            let mut got: Vec<u64> = f.iter().map(|f| f.id.0).collect();
            got.sort_unstable();
            prop_assert_eq!(got, want);
            prop_assert!(f.windows(2).all(|w| w[0].score >= w[1].score));
        }

        /// Moving a chunk up one place in a list never lowers its fused score or its
        /// position in the output.
        #[test]
        fn monotone_in_rank(a in proptest::collection::hash_set(0u64..40, 2..20), b in ids_strategy(), pos in 1usize..19) {
            let a: Vec<u64> = a.into_iter().collect();
            let pos = pos.min(a.len() - 1);
            let mut better = a.clone();
            better.swap(pos, pos - 1);
            let moved = a[pos];
            let before = reciprocal_rank_fusion(&[list(RetrieverKind::Bm25, 1.0, &a), list(RetrieverKind::Dense, 1.0, &b)], 60.0);
            let after = reciprocal_rank_fusion(&[list(RetrieverKind::Bm25, 1.0, &better), list(RetrieverKind::Dense, 1.0, &b)], 60.0);
            let find = |v: &[Fused]| v.iter().position(|f| f.id.0 == moved).unwrap();
            prop_assert!(after[find(&after)].score >= before[find(&before)].score);
            prop_assert!(find(&after) <= find(&before));
        }

        /// Chunks in symmetric positions tie on score and are ordered by id.
        #[test]
        fn ties_are_deterministic(r in 0usize..10, x in 100u64..200, y in 200u64..300) {
            let mut a: Vec<u64> = (0..10).collect();
            let mut b: Vec<u64> = (10..20).collect();
            a[r] = x;
            b[r] = y;
            let f = reciprocal_rank_fusion(&[list(RetrieverKind::Bm25, 1.0, &a), list(RetrieverKind::Dense, 1.0, &b)], 60.0);
            let px = f.iter().position(|f| f.id.0 == x).unwrap();
            let py = f.iter().position(|f| f.id.0 == y).unwrap();
            prop_assert_eq!(f[px].score, f[py].score);
            prop_assert!(px < py);
        }
    }
}
