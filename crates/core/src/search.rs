//! Search requests and results.

use crate::{Chunk, ChunkId, CollectionId, DocId};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Which retriever produced a ranking.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum RetrieverKind {
    /// Lexical BM25 over title and text.
    Bm25,
    /// Dense vectors from the embedding model.
    Dense,
    /// The entity graph: entities the query names, and those related to them.
    Graph,
}

/// How a search combines retrievers.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum SearchMode {
    /// BM25 only.
    Bm25,
    /// Dense only.
    Dense,
    /// The entity graph only.
    Graph,
    /// BM25 and dense fused, without the entity graph (the text memory alone: what a
    /// router sends a question that names no entity).
    Text,
    /// BM25, dense and (where the index has one and its weight is above zero) the entity
    /// graph, fused by weighted reciprocal rank fusion.
    #[default]
    Hybrid,
}

impl SearchMode {
    /// The retrievers this mode runs.
    pub fn retrievers(self) -> &'static [RetrieverKind] {
        match self {
            SearchMode::Bm25 => &[RetrieverKind::Bm25],
            SearchMode::Dense => &[RetrieverKind::Dense],
            SearchMode::Graph => &[RetrieverKind::Graph],
            SearchMode::Text => &[RetrieverKind::Bm25, RetrieverKind::Dense],
            SearchMode::Hybrid => &[
                RetrieverKind::Bm25,
                RetrieverKind::Dense,
                RetrieverKind::Graph,
            ],
        }
    }

    /// Whether the mode fuses several rankings (by weighted RRF) rather than returning one.
    pub fn fuses(self) -> bool {
        matches!(self, SearchMode::Text | SearchMode::Hybrid)
    }
}

/// How the entity graph is walked for a query (seed `001`): the query's entities are
/// linked to the graph's (exact, then alias, then fuzzy, then by embedding), then a
/// breadth-first walk to `max_hops` scores the chunks each reached entity is mentioned in by the link's
/// similarity times `decay` per hop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct GraphWalk {
    /// Hops from a linked entity (0: only the chunks that mention it).
    pub max_hops: usize,
    /// Weight kept per hop (the seed's 0.7: one hop 70%, two 49%).
    pub decay: f32,
    /// Least similarity for a fuzzy link (edit similarity) and for an embedding link
    /// (cosine of the names' embeddings): the seed's 0.7 for both.
    pub link_threshold: f32,
    /// Whether a mention no string stage links is compared by embedding with the named
    /// entities of the chunks nearest it (needs an index given a name embedder; costs two
    /// embedding calls of a few dozen short strings, only for such mentions). Off by
    /// default: on the tuning halves it gained 0.4-1.3 points of recall for a p95 several
    /// times higher, and on the reporting halves it moved recall by one question either
    /// way (docs/results/graph.md). Worth turning on where questions paraphrase names.
    pub embedding_link: bool,
    /// Chunks nearest an unlinked mention whose named entities are its candidates.
    pub embedding_candidates: usize,
    /// Entities one query mention may link to.
    pub max_links: usize,
    /// Entities expanded per hop, strongest first: bounds the walk on hub entities.
    pub frontier: usize,
    /// Neighbours taken from each expanded entity, strongest first.
    pub fanout: usize,
    /// Chunks scored per reached entity, most confident mentions first.
    pub chunks_per_entity: usize,
    /// Whether entities mentioned in the same chunk count as neighbours beside the
    /// pattern relations (most bridges in encyclopaedic text are stated without a verb
    /// pattern the rules know).
    pub co_mentions: bool,
}

impl Default for GraphWalk {
    fn default() -> Self {
        GraphWalk {
            // The seed walks two hops; on the HotpotQA tuning half the second hop cost
            // recall at every k (docs/results/graph.md), so one is the default.
            max_hops: 1,
            decay: 0.7,
            link_threshold: 0.7,
            embedding_link: false,
            embedding_candidates: 8,
            max_links: 3,
            frontier: 64,
            fanout: 16,
            chunks_per_entity: 32,
            co_mentions: true,
        }
    }
}

/// Restricts a search to part of the index. All set conditions must hold.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Filter {
    /// Only chunks of these documents.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub doc_ids: Vec<DocId>,
    /// Only documents whose title contains this text (case-insensitive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title_contains: Option<String>,
    /// Only documents dated at or after this Unix time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date_from: Option<i64>,
    /// Only documents dated before this Unix time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date_to: Option<i64>,
    /// Only documents whose metadata holds each of these keys with this value, or with a
    /// list that contains it (`{"team": "ops", "tags": "urgent"}` matches
    /// `{"team": "ops", "tags": ["urgent", "q3"]}`). Values are strings, numbers or
    /// booleans; numbers compare by value (`2` matches `2.0`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, serde_json::Value>,
    /// Only documents of these collections; empty: every collection.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub collections: Vec<CollectionId>,
}

impl Filter {
    /// True when no condition is set.
    pub fn is_empty(&self) -> bool {
        self.collections.is_empty()
            && self.doc_ids.is_empty()
            && self.title_contains.is_none()
            && self.date_from.is_none()
            && self.date_to.is_none()
            && self.metadata.is_empty()
    }

    /// Checks what the type cannot: metadata values are scalars (a list or object would
    /// mean different things to different stores), keys are not empty.
    pub fn validate(&self) -> crate::Result<()> {
        for (key, value) in &self.metadata {
            let field = || format!("filter.metadata.{key}");
            if key.is_empty() {
                return Err(crate::Error::Invalid {
                    field: "filter.metadata".into(),
                    reason: "a key is empty".into(),
                });
            }
            if !is_scalar(value) {
                return Err(crate::Error::Invalid {
                    field: field(),
                    reason: format!("{value} is not a string, number or boolean"),
                });
            }
        }
        Ok(())
    }
}

impl Filter {
    /// This filter narrowed by `other`, as one filter: both must hold where a filter can
    /// say so, and `self` (a scope: the documents an ask may read) always holds. `None`
    /// when nothing can match (no document in both id lists, an empty date range).
    ///
    /// Where one filter cannot express both conditions, `self`'s is kept and `other`'s
    /// dropped, so the result never reaches beyond `self`: two title texts of which neither
    /// contains the other, or two values for one metadata key (a document whose list holds
    /// both would match both).
    pub fn and(&self, other: &Filter) -> Option<Filter> {
        let doc_ids = match (self.doc_ids.is_empty(), other.doc_ids.is_empty()) {
            (true, _) => other.doc_ids.clone(),
            (false, true) => self.doc_ids.clone(),
            (false, false) => {
                let both: Vec<DocId> = self
                    .doc_ids
                    .iter()
                    .filter(|d| other.doc_ids.contains(d))
                    .cloned()
                    .collect();
                if both.is_empty() {
                    return None;
                }
                both
            }
        };
        let collections = match (self.collections.is_empty(), other.collections.is_empty()) {
            (true, _) => other.collections.clone(),
            (false, true) => self.collections.clone(),
            (false, false) => {
                let both: Vec<CollectionId> = self
                    .collections
                    .iter()
                    .filter(|c| other.collections.contains(c))
                    .cloned()
                    .collect();
                if both.is_empty() {
                    return None;
                }
                both
            }
        };
        let title_contains = match (&self.title_contains, &other.title_contains) {
            (Some(a), Some(b)) if b.to_lowercase().contains(&a.to_lowercase()) => Some(b.clone()),
            (Some(a), _) => Some(a.clone()),
            (None, b) => b.clone(),
        };
        let date_from = self.date_from.max(other.date_from);
        let date_to = match (self.date_to, other.date_to) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if let (Some(from), Some(to)) = (date_from, date_to)
            && from >= to
        {
            return None;
        }
        let mut metadata = other.metadata.clone();
        metadata.extend(self.metadata.clone());
        Some(Filter {
            collections,
            doc_ids,
            title_contains,
            date_from,
            date_to,
            metadata,
        })
    }
}

/// A string, number or boolean: what a metadata filter may compare with.
fn is_scalar(v: &serde_json::Value) -> bool {
    matches!(
        v,
        serde_json::Value::String(_) | serde_json::Value::Number(_) | serde_json::Value::Bool(_)
    )
}

/// A search as the retriever layer receives it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SearchRequest {
    /// The query text.
    pub query: String,
    /// How many hits to return.
    pub k: usize,
    /// Which retrievers to run.
    pub mode: SearchMode,
    /// Restrictions on the searched documents.
    pub filter: Filter,
}

impl SearchRequest {
    /// A hybrid search for `k` hits with no filter.
    pub fn new(query: impl Into<String>, k: usize) -> Self {
        SearchRequest {
            query: query.into(),
            k,
            mode: SearchMode::Hybrid,
            filter: Filter::default(),
        }
    }
}

/// One entry of a primitive ranking (BM25 or nearest neighbours): a chunk and the
/// ranking's own score for it, best first in the list that holds it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ScoredChunk {
    /// The chunk.
    pub id: ChunkId,
    /// The ranking's score (a BM25 score, a cosine similarity): higher is better.
    pub score: f32,
}

impl ScoredChunk {
    /// A chunk with its score.
    pub fn new(id: ChunkId, score: f32) -> Self {
        ScoredChunk { id, score }
    }
}

/// Where one retriever ranked a hit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SourceRank {
    /// The retriever.
    pub retriever: RetrieverKind,
    /// 1-based rank in that retriever's list.
    pub rank: usize,
    /// The retriever's own score (BM25 score, cosine similarity).
    pub score: f32,
}

/// A search result: the chunk, its final score, and which retrievers found it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Hit {
    /// The chunk, with its text.
    pub chunk: Chunk,
    /// Final score (the fused score in hybrid mode, the retriever's score otherwise).
    pub score: f32,
    /// Per-retriever ranks, in retriever order.
    pub sources: Vec<SourceRank>,
}

impl Hit {
    /// The id of the hit's chunk.
    pub fn chunk_id(&self) -> ChunkId {
        self.chunk.id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(xs: &[&str]) -> Vec<DocId> {
        xs.iter().map(|x| DocId::new(*x).unwrap()).collect()
    }

    fn cols(xs: &[&str]) -> Vec<CollectionId> {
        xs.iter().map(|x| CollectionId::new(*x).unwrap()).collect()
    }

    #[test]
    fn a_scope_narrowed_by_a_request_never_reaches_beyond_the_scope() {
        let scope = Filter {
            doc_ids: ids(&["a", "b"]),
            title_contains: Some("canal".into()),
            date_from: Some(10),
            date_to: Some(100),
            metadata: [("team".to_string(), serde_json::json!("ops"))].into(),
            collections: cols(&["hr", "ops"]),
        };
        // Nothing asked: the scope itself.
        assert_eq!(scope.and(&Filter::default()), Some(scope.clone()));
        // Both hold where one filter can say so.
        let request = Filter {
            doc_ids: ids(&["b", "c"]),
            title_contains: Some("Panama Canal".into()),
            date_from: Some(50),
            date_to: Some(200),
            metadata: [("year".to_string(), serde_json::json!(2024))].into(),
            collections: cols(&["ops", "sales"]),
        };
        let both = scope.and(&request).unwrap();
        assert_eq!(both.doc_ids, ids(&["b"]));
        assert_eq!(both.collections, cols(&["ops"]));
        assert_eq!(both.title_contains.as_deref(), Some("Panama Canal"));
        assert_eq!((both.date_from, both.date_to), (Some(50), Some(100)));
        assert_eq!(both.metadata.len(), 2);
        // Where it cannot, the scope's condition stays.
        let other = Filter {
            title_contains: Some("dam".into()),
            metadata: [("team".to_string(), serde_json::json!("docs"))].into(),
            ..Default::default()
        };
        let kept = scope.and(&other).unwrap();
        assert_eq!(kept.title_contains.as_deref(), Some("canal"));
        assert_eq!(kept.metadata["team"], serde_json::json!("ops"));
        // Nothing can match.
        let disjoint = Filter {
            doc_ids: ids(&["z"]),
            ..Default::default()
        };
        assert_eq!(scope.and(&disjoint), None);
        let later = Filter {
            date_from: Some(100),
            ..Default::default()
        };
        assert_eq!(scope.and(&later), None);
        // No collection of the scope's asked for: nothing, never every collection.
        let elsewhere = Filter {
            collections: cols(&["sales"]),
            ..Default::default()
        };
        assert_eq!(scope.and(&elsewhere), None);
        // No scope: the request as it is.
        assert_eq!(Filter::default().and(&request), Some(request));
    }
}
