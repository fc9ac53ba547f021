//! # metarag-retrieve
//!
//! Retrieval over a [`metarag_core::StoreRead`]: BM25, dense, the entity graph, and hybrid
//! (all three, fused by weighted reciprocal rank fusion, see [`reciprocal_rank_fusion`]). [`HybridRetriever`]
//! implements [`metarag_core::Retriever`]; results carry the chunk text and where each
//! retriever ranked it.

mod fusion;
pub mod router;

pub use fusion::{Fused, RankedList, fuse_orders, reciprocal_rank_fusion};
pub use router::{EmbeddingRouter, Intent, Memory, Route, RouteSource};

use metarag_core::{
    ChunkId, Embedder, GraphWalk, Hit, Result, Retriever, RetrieverKind, ScoredChunk, SearchMode,
    SearchRequest, SourceRank, StoreRead,
};
use std::time::{Duration, Instant};
use tracing::Instrument;

/// Settings of hybrid retrieval: the `[retrieval]` section of `metarag.toml`, deserialised
/// directly (every field has a default; unknown fields are refused).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetrievalConfig {
    /// The RRF constant `k` (60 in the original paper and most systems).
    pub rrf_k: f32,
    /// Weight of the BM25 list in fusion.
    pub bm25_weight: f32,
    /// Weight of the dense list in fusion.
    pub dense_weight: f32,
    /// Weight of the entity graph's list in fusion; 0 leaves the graph out of hybrid
    /// search. 1 (the three lists alike), chosen on the tuning halves of HotpotQA and
    /// 2WikiMultiHopQA over seed `001`'s 0.4 / 0.4 / 0.2 (docs/results/graph.md).
    pub graph_weight: f32,
    /// How the entity graph is walked.
    pub graph: GraphWalk,
    /// How deep each retriever ranks before fusion (at least the requested `k`).
    pub candidates: usize,
    /// Hits a search returns when its caller does not say (`metarag search` without `-k`).
    pub k: usize,
}

impl Default for RetrievalConfig {
    fn default() -> Self {
        RetrievalConfig {
            rrf_k: 60.0,
            bm25_weight: 1.0,
            dense_weight: 1.0,
            graph_weight: 1.0,
            graph: GraphWalk::default(),
            candidates: 50,
            k: 10,
        }
    }
}

/// Time spent in the stages of one search. BM25 runs while the query is embedded, so a
/// caller waits about `max(BM25, embed + nearest) + rest`, not `embed + search`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SearchTimings {
    /// Embedding the query (zero for BM25-only searches).
    pub embed: Duration,
    /// The index's share: the slower of the two rankings (BM25 and the graph walk, which
    /// run side by side), fusion, and loading chunk text.
    pub search: Duration,
}

/// BM25, dense and hybrid retrieval over a store.
#[derive(Debug, Clone)]
pub struct HybridRetriever<E, S> {
    embedder: E,
    store: S,
    config: RetrievalConfig,
}

impl<E: Embedder, S: StoreRead> HybridRetriever<E, S> {
    /// A retriever over `store`, embedding queries with `embedder`.
    pub fn new(embedder: E, store: S, config: RetrievalConfig) -> Self {
        HybridRetriever {
            embedder,
            store,
            config,
        }
    }

    /// The settings in force.
    pub fn config(&self) -> &RetrievalConfig {
        &self.config
    }

    /// The store searched.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// Searches and reports how long the query embedding and the rest took.
    pub async fn search_timed(&self, request: &SearchRequest) -> Result<(Vec<Hit>, SearchTimings)> {
        let span = tracing::info_span!("retrieve", mode = ?request.mode, k = request.k);
        self.search_inner(request).instrument(span).await
    }

    /// Searches the memories a [`Route`] names: the entity graph's list only when the route
    /// includes the graph (the text memory is always searched). A request for one
    /// retriever alone (`bm25`, `dense`, `graph`) keeps its mode.
    pub async fn search_routed(
        &self,
        request: &SearchRequest,
        route: &Route,
    ) -> Result<(Vec<Hit>, SearchTimings)> {
        let mut request = request.clone();
        if request.mode.fuses() {
            request.mode = route.search_mode();
        }
        let span = tracing::info_span!("retrieve.routed", intents = ?route.intents, k = request.k);
        self.search_inner(&request).instrument(span).await
    }

    async fn search_inner(&self, request: &SearchRequest) -> Result<(Vec<Hit>, SearchTimings)> {
        let graph_weight = self.config.graph_weight;
        // Before any ranking runs: a bad filter is the caller's error, named by field.
        request.filter.validate()?;
        if request.k == 0 {
            return Ok((Vec::new(), SearchTimings::default()));
        }
        let depth = self.config.candidates.max(request.k);
        let wanted = request.mode.retrievers();
        // BM25 needs no query vector, so it runs while the query is embedded and the graph
        // walked: a hybrid search costs the slower of the two, not their sum (BM25 is the
        // slower at 1M chunks, docs/results/performance.md).
        let bm25 = async {
            if !wanted.contains(&RetrieverKind::Bm25) {
                return Ok(None);
            }
            let t = Instant::now();
            let items = self
                .store
                .lexical(&request.query, depth, &request.filter)
                .await?;
            Ok::<_, metarag_core::Error>(Some((items, t.elapsed())))
        };
        let dense = async {
            if !wanted.contains(&RetrieverKind::Dense) {
                return Ok(None);
            }
            let t = Instant::now();
            let vector = self.embedder.embed_query(&request.query).await?;
            let embed = t.elapsed();
            let t = Instant::now();
            let items = self.store.nearest(&vector, depth, &request.filter).await?;
            Ok::<_, metarag_core::Error>(Some((items, embed, t.elapsed())))
        };
        let graph = async {
            let weighted = request.mode == SearchMode::Graph || graph_weight > 0.0;
            if !wanted.contains(&RetrieverKind::Graph) || !weighted {
                return Ok(None);
            }
            let t = Instant::now();
            let items = self
                .store
                .graph(&request.query, depth, &self.config.graph, &request.filter)
                .await?;
            Ok::<_, metarag_core::Error>(Some((items, t.elapsed())))
        };
        let (bm25, dense, graph) = tokio::join!(bm25, dense, graph);
        let (mut bm25, mut dense, mut graph) = (bm25?, dense?, graph?);
        let post = Instant::now();
        let mut timings = SearchTimings::default();
        let mut index_time = Duration::ZERO;
        let mut lists = Vec::with_capacity(3);
        for kind in wanted {
            match kind {
                RetrieverKind::Bm25 => {
                    if let Some((items, took)) = bm25.take() {
                        index_time = index_time.max(took);
                        lists.push(RankedList {
                            retriever: RetrieverKind::Bm25,
                            weight: self.config.bm25_weight,
                            items,
                        });
                    }
                }
                RetrieverKind::Dense => {
                    if let Some((items, embed, took)) = dense.take() {
                        timings.embed = embed;
                        index_time = index_time.max(took);
                        lists.push(RankedList {
                            retriever: RetrieverKind::Dense,
                            weight: self.config.dense_weight,
                            items,
                        });
                    }
                }
                RetrieverKind::Graph => {
                    if let Some((items, took)) = graph.take() {
                        index_time = index_time.max(took);
                        lists.push(RankedList {
                            retriever: RetrieverKind::Graph,
                            weight: graph_weight,
                            items,
                        });
                    }
                }
            }
        }
        let ranked: Vec<(ChunkId, f32, Vec<SourceRank>)> = if request.mode.fuses() {
            reciprocal_rank_fusion(&lists, self.config.rrf_k)
                .into_iter()
                .take(request.k)
                .map(|f| (f.id, f.score, f.sources))
                .collect()
        } else {
            let list = lists.pop().unwrap_or_else(|| RankedList {
                retriever: RetrieverKind::Bm25,
                weight: 1.0,
                items: Vec::new(),
            });
            list.items
                .iter()
                .take(request.k)
                .enumerate()
                .map(|(i, &ScoredChunk { id, score })| {
                    let source = SourceRank {
                        retriever: list.retriever,
                        rank: i + 1,
                        score,
                    };
                    (id, score, vec![source])
                })
                .collect()
        };
        let ids: Vec<ChunkId> = ranked.iter().map(|r| r.0).collect();
        let chunks = self.store.chunks(&ids).await?;
        let mut by_id: std::collections::HashMap<ChunkId, metarag_core::Chunk> =
            chunks.into_iter().map(|c| (c.id, c)).collect();
        let hits = ranked
            .into_iter()
            .filter_map(|(id, score, sources)| {
                by_id.remove(&id).map(|chunk| Hit {
                    chunk,
                    score,
                    sources,
                })
            })
            .collect();
        // The index's share: the slower ranking (they run side by side) plus fusion and
        // loading the chunks; the query embedding is reported apart.
        timings.search = index_time + post.elapsed();
        Ok((hits, timings))
    }
}

impl<E: Embedder, S: StoreRead> Retriever for HybridRetriever<E, S> {
    async fn search(&self, request: &SearchRequest) -> Result<Vec<Hit>> {
        Ok(self.search_timed(request).await?.0)
    }
}
