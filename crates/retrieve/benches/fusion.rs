//! Cost of weighted RRF at the list depths hybrid search uses.

use metarag_core::{ChunkId, RetrieverKind, ScoredChunk};
use metarag_retrieve::{RankedList, reciprocal_rank_fusion};

fn main() {
    divan::main();
}

fn lists(depth: usize) -> Vec<RankedList> {
    // Half of each list overlaps the other, as BM25 and dense lists typically do.
    let a = (0..depth as u64)
        .map(|i| ScoredChunk::new(ChunkId(i), 1.0 / (i + 1) as f32))
        .collect();
    let b = (depth as u64 / 2..depth as u64 * 3 / 2)
        .map(|i| ScoredChunk::new(ChunkId(i), 1.0 / (i + 1) as f32))
        .collect();
    vec![
        RankedList {
            retriever: RetrieverKind::Bm25,
            weight: 1.0,
            items: a,
        },
        RankedList {
            retriever: RetrieverKind::Dense,
            weight: 1.0,
            items: b,
        },
    ]
}

#[divan::bench(args = [10, 50, 200])]
fn rrf(bencher: divan::Bencher, depth: usize) {
    let input = lists(depth);
    bencher.bench(|| reciprocal_rank_fusion(divan::black_box(&input), 60.0));
}
