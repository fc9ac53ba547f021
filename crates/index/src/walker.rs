//! The entity-graph search's logic apart from its storage: which of a query's mentions to
//! link, how a fuzzy link is ranked, how an entity's neighbours are weighed, the walk's
//! frontier and scores, and the final ranking. The embedded index drives it with SQLite
//! queries one entity at a time; the Postgres store with one query per hop for the whole
//! frontier. Both get the same ranking from the same graph because this is the only code
//! that decides it.

use crate::entities;
use crate::graph::{Entity, Link, LinkStage};
use metarag_core::{ChunkId, GraphWalk, ScoredChunk};
use std::collections::HashMap;

/// An entity a walk reached: its id, hops from the start and weight.
pub type Walked = (i64, usize, f32);

/// How specific an entity is among `total` chunks: 1 for one mention, falling towards 0
/// for an entity every chunk mentions (a walk through "United States" should not flood
/// the ranking).
pub fn specificity(df: u64, total: u64) -> f32 {
    let total = total.max(df).max(1) as f32;
    ((1.0 + total / df.max(1) as f32).ln() / (1.0 + total).ln()).clamp(0.0, 1.0)
}

/// A title's words for matching a query to the page it names: lower-cased runs of
/// letters and digits.
pub fn title_words(s: &str) -> Vec<String> {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The fuzzy stage of linking `key`: the candidates whose keys are within `threshold`
/// normalised Levenshtein similarity, most similar (then most mentioned) first, at most
/// `max`.
pub fn rank_fuzzy(
    key: &str,
    candidates: Vec<Entity>,
    threshold: f32,
    max: usize,
) -> Vec<(f32, Entity)> {
    let mut scored: Vec<(f32, Entity)> = candidates
        .into_iter()
        .filter_map(|e| {
            let sim = strsim::normalized_levenshtein(key, &e.key) as f32;
            (sim >= threshold).then_some((sim, e))
        })
        .collect();
    scored.sort_by(|a, b| {
        b.0.total_cmp(&a.0)
            .then(b.1.mentions.cmp(&a.1.mentions))
            .then(a.1.id.cmp(&b.1.id))
    });
    scored.truncate(max);
    scored
}

/// An entity's neighbours from its relations either way (`related`: id, the relation's
/// confidence, the neighbour's mention count) and, when the walk counts them, from the
/// chunks it is mentioned in (`co_mentioned`, at half their mention confidence): the
/// strongest `walk.fanout`, each edge weighed by how specific its neighbour is.
pub fn rank_neighbours(
    related: impl IntoIterator<Item = (i64, f32, u64)>,
    co_mentioned: impl IntoIterator<Item = (i64, f32, u64)>,
    walk: &GraphWalk,
    total: u64,
) -> Vec<(i64, f32, u64)> {
    let mut strength: HashMap<i64, (f32, u64)> = HashMap::new();
    for (id, c, df) in related {
        let s = strength.entry(id).or_insert((0.0, df));
        s.0 = s.0.max(c);
    }
    if walk.co_mentions {
        for (id, c, df) in co_mentioned {
            let s = strength.entry(id).or_insert((0.0, df));
            s.0 = s.0.max(0.5 * c);
        }
    }
    let mut out: Vec<(i64, f32, u64)> = strength
        .into_iter()
        .map(|(id, (s, df))| (id, s * specificity(df, total), df))
        .collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    out.truncate(walk.fanout);
    out
}

/// The seed's traversal, hop by hop: breadth-first from the linked entities to
/// `max_hops`, each hop multiplying the link's similarity by `decay`; every reached
/// entity adds its weight (times its mention confidence and specificity) to the chunks
/// that mention it. The caller reads [`Walker::frontier`], fetches those entities'
/// chunks (and, while [`Walker::expands`], their ranked neighbours) and hands them to
/// [`Walker::step`] until it returns false.
pub struct Walker<'a> {
    walk: &'a GraphWalk,
    total: u64,
    hop: usize,
    best: HashMap<i64, (usize, f32)>,
    // Each frontier entity carries its mention count (from the link or the neighbour
    // query), so expanding it needs no entity lookup.
    mentions: HashMap<i64, u64>,
    frontier: Vec<(i64, f32)>,
    scores: HashMap<i64, f32>,
}

impl<'a> Walker<'a> {
    /// A walk from `links` over a graph of `total` chunks.
    pub fn new(links: &[Link], walk: &'a GraphWalk, total: u64) -> Self {
        let mut best: HashMap<i64, (usize, f32)> = HashMap::new();
        let mut mentions = HashMap::new();
        for l in links {
            let w = best.entry(l.entity.id).or_insert((0, 0.0));
            w.1 = w.1.max(l.similarity);
            mentions.insert(l.entity.id, l.entity.mentions);
        }
        let mut frontier: Vec<(i64, f32)> = best.iter().map(|(&id, &(_, w))| (id, w)).collect();
        // Strongest first (the start by similarity, later hops by weight then edge
        // strength), cut to the walk's frontier.
        frontier.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        frontier.truncate(walk.frontier);
        Walker {
            walk,
            total,
            hop: 0,
            best,
            mentions,
            frontier,
            scores: HashMap::new(),
        }
    }

    /// The entities this hop expands, with their weights.
    pub fn frontier(&self) -> &[(i64, f32)] {
        &self.frontier
    }

    /// The entity ids of [`Walker::frontier`].
    pub fn frontier_ids(&self) -> Vec<i64> {
        self.frontier.iter().map(|&(id, _)| id).collect()
    }

    /// Whether this hop goes on to the neighbours (the last hop only scores chunks).
    pub fn expands(&self) -> bool {
        self.hop < self.walk.max_hops
    }

    /// Scores this hop's `chunks` (per frontier entity: chunk id and mention confidence,
    /// at most `chunks_per_entity`) and, when it expands, moves to the `neighbours` (per
    /// frontier entity, as [`rank_neighbours`] gives them) not reached before. Returns
    /// whether there is another hop to take.
    pub fn step(
        &mut self,
        chunks: &HashMap<i64, Vec<(i64, f32)>>,
        neighbours: &HashMap<i64, Vec<(i64, f32, u64)>>,
    ) -> bool {
        let expands = self.expands();
        let mut next: HashMap<i64, (f32, f32)> = HashMap::new();
        for &(id, w) in &self.frontier {
            let spec = specificity(self.mentions.get(&id).copied().unwrap_or(1), self.total);
            for &(chunk, conf) in chunks.get(&id).map_or(&[][..], Vec::as_slice) {
                *self.scores.entry(chunk).or_default() += w * conf * spec;
            }
            if !expands {
                continue;
            }
            for &(nb, strength, df) in neighbours.get(&id).map_or(&[][..], Vec::as_slice) {
                if self.best.contains_key(&nb) {
                    continue;
                }
                self.mentions.insert(nb, df);
                // The seed's weight (similarity x decay per hop); the edge's strength
                // only orders entities of equal weight when the frontier is cut.
                let v = next.entry(nb).or_default();
                *v = (v.0.max(w * self.walk.decay), v.1.max(strength));
            }
        }
        if !expands {
            self.frontier.clear();
            return false;
        }
        for (&id, &(w, _)) in &next {
            self.best.insert(id, (self.hop + 1, w));
        }
        let mut ordered: Vec<(i64, f32, f32)> =
            next.into_iter().map(|(id, (w, s))| (id, w, s)).collect();
        ordered.sort_by(|a, b| {
            b.1.total_cmp(&a.1)
                .then(b.2.total_cmp(&a.2))
                .then(a.0.cmp(&b.0))
        });
        self.frontier = ordered.into_iter().map(|(id, w, _)| (id, w)).collect();
        self.frontier.truncate(self.walk.frontier);
        self.hop += 1;
        !self.frontier.is_empty()
    }

    /// The reached entities (id, hop, weight), heaviest first, and the chunks' summed
    /// scores.
    pub fn finish(self) -> (Vec<Walked>, HashMap<i64, f32>) {
        let mut reached: Vec<Walked> = self
            .best
            .into_iter()
            .map(|(id, (hop, weight))| (id, hop, weight))
            .collect();
        reached.sort_by(|a, b| b.2.total_cmp(&a.2).then(a.0.cmp(&b.0)));
        (reached, self.scores)
    }
}

/// Which of a query's mentions to link, given what linking the earlier ones found: a
/// joined name ("Kiss and Tell") is a guess at a title whose parts are mentions in their
/// own right, so it keeps only exact or alias links and never goes on to the embedding
/// stage, and a part of a joined name the graph knows is not linked on its own.
#[derive(Debug, Default)]
pub struct QueryLinker {
    pending: std::vec::IntoIter<String>,
    covered: Vec<String>,
    links: Vec<Link>,
    unlinked: Vec<String>,
}

impl QueryLinker {
    /// The mentions of `query`.
    pub fn new(query: &str) -> Self {
        QueryLinker {
            pending: entities::query_mentions(query).into_iter(),
            ..Default::default()
        }
    }

    /// The next mention to link, or `None` when every one is done.
    pub fn next_mention(&mut self) -> Option<String> {
        self.pending.by_ref().find(|mention| {
            !self
                .covered
                .iter()
                .any(|c| c.split(" and ").any(|p| p == mention))
        })
    }

    /// What linking `mention` (from [`QueryLinker::next_mention`]) found.
    pub fn found(&mut self, mention: String, found: Vec<Link>) {
        if mention.contains(" and ") || mention.contains(" & ") {
            if found.iter().any(|l| l.stage != LinkStage::Fuzzy) {
                self.covered.push(mention.replace(" & ", " and "));
                self.links
                    .extend(found.into_iter().filter(|l| l.stage != LinkStage::Fuzzy));
            }
            return;
        }
        if found.is_empty() {
            self.unlinked.push(mention);
        }
        self.links.extend(found);
    }

    /// The links made, and the mentions no string stage linked (for the embedding stage).
    pub fn finish(self) -> (Vec<Link>, Vec<String>) {
        (self.links, self.unlinked)
    }
}

/// The graph search's ranking: the pages the query names (`titled`) lead, above the best
/// walked score, then the walked chunks by score; only chunks `allowed`, at most `n`.
pub fn rank_chunks(
    scores: HashMap<i64, f32>,
    titled: &[i64],
    allowed: impl Fn(i64) -> bool,
    n: usize,
) -> Vec<ScoredChunk> {
    let mut ranked: Vec<ScoredChunk> = scores
        .into_iter()
        .filter(|(id, _)| !titled.contains(id) && allowed(*id))
        .map(|(id, score)| ScoredChunk::new(ChunkId(id as u64), score))
        .collect();
    ranked.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.id.0.cmp(&b.id.0)));
    let top = ranked.first().map_or(1.0, |c| c.score) + 1.0;
    let named: Vec<ScoredChunk> = titled
        .iter()
        .filter(|id| allowed(**id))
        .map(|&id| ScoredChunk::new(ChunkId(id as u64), top))
        .collect();
    ranked.splice(0..0, named);
    ranked.truncate(n);
    ranked
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specificity_falls_with_mentions() {
        assert!((specificity(1, 1000) - 1.0).abs() < 1e-6);
        assert!(specificity(10, 1000) > specificity(500, 1000));
        assert!(specificity(1000, 1000) < 0.15);
    }

    fn entity(id: i64, key: &str, mentions: u64) -> Entity {
        Entity {
            id,
            name: key.into(),
            key: key.into(),
            label: "name".into(),
            mentions,
        }
    }

    #[test]
    fn a_walk_scores_the_start_then_its_neighbours_decayed() {
        let walk = GraphWalk {
            max_hops: 1,
            decay: 0.5,
            ..GraphWalk::default()
        };
        let link = Link {
            mention: "a".into(),
            entity: entity(1, "a", 1),
            similarity: 1.0,
            stage: LinkStage::Exact,
        };
        let mut w = Walker::new(&[link], &walk, 100);
        assert_eq!(w.frontier_ids(), [1]);
        assert!(w.expands());
        let chunks = HashMap::from([(1, vec![(10, 1.0)])]);
        let neighbours = HashMap::from([(1, vec![(2, 0.9, 1)])]);
        assert!(w.step(&chunks, &neighbours));
        assert_eq!(w.frontier(), [(2, 0.5)]);
        assert!(!w.expands());
        let chunks = HashMap::from([(2, vec![(20, 1.0), (10, 0.5)])]);
        assert!(!w.step(&chunks, &HashMap::new()));
        let (reached, scores) = w.finish();
        assert_eq!(reached, [(1, 0, 1.0), (2, 1, 0.5)]);
        // Chunk 10: the start's mention plus the neighbour's half-confident one.
        assert!((scores[&10] - 1.25).abs() < 1e-6, "{scores:?}");
        assert!((scores[&20] - 0.5).abs() < 1e-6, "{scores:?}");
        let ranked = rank_chunks(scores, &[30], |id| id != 20, 5);
        let ids: Vec<u64> = ranked.iter().map(|c| c.id.0).collect();
        assert_eq!(ids, [30, 10]);
    }

    #[test]
    fn fuzzy_links_rank_by_similarity_then_mentions() {
        let ranked = rank_fuzzy(
            "orin dalby",
            vec![
                entity(1, "orrin dalby", 2),
                entity(2, "orrin dalbey", 9),
                entity(3, "morris", 50),
            ],
            0.8,
            5,
        );
        let ids: Vec<i64> = ranked.iter().map(|(_, e)| e.id).collect();
        assert_eq!(ids, [1, 2]);
    }
}
