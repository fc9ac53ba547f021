//! `mcts`: seed `004`'s tree planner (State-Aware RAG, Man et al.): Monte Carlo tree search
//! over reasoning states, each node carrying its own [`ReasoningMemory`].
//!
//! retrieve (the question) -> the question's typed **program** ([`crate::program`]), as
//! `metarag` runs it: resolved, its answer ends the run; otherwise its grounded reads are
//! the root's memory -> **search** (one rollout per visit: select a leaf by UCT,
//! expand it, evaluate one new child, back the reward up to the root) until `rollouts`
//! -> read -> write with the best path's memory as notes.
//!
//! Node kinds, after the seed: the user question (the root), a sub-question with its
//! extracted answer (`sub_qa`), and a final answer (`final_answer`, a leaf). Expanding a
//! node asks the generator (the `cot` prompt: the node's memory, and at the root the
//! question's sources) for `branching` samples at `temperature` in one call, each a next
//! sub-question or a final answer: the branches are the model's own alternatives. A
//! `sub_qa` child is evaluated when first visited: its sub-question is searched and the
//! extractor answers it (`cot::extract_fact`). Rewards come from what the code can check, not from the model
//! grading itself: a fact's reward is its confidence (its words in the passages it cites,
//! times its token probability); a final answer's is how far the trusted facts on its
//! path and the question's sources state its words, times the mean confidence of the
//! path's facts. The tree is kept in the trace (`records.tree`), one entry per node with
//! visits, value, reward, lineage and memory.

use super::cot::{DecomposeReply, ask_fact, decompose_prompt, extract_fact};
use crate::graph::{Graph, NodeError, NodeId, NodeResult, Transition};
use crate::nodes::{self, READ, RETRIEVE, WRITE};
use crate::program::exec::Outcome;
use crate::program::{self, PROGRAM_RESOLVED};
use crate::reasoning::{Candidate, ReasoningMemory};
use crate::registry::Strategy;
use crate::state::Run;
use crate::trace::{EvidenceMode, StepKind};
use metarag_core::parse_json;
use serde::{Deserialize, Serialize};

/// One rollout of the tree search.
pub const SEARCH: NodeId = NodeId("search");

/// MCTS's settings (`[strategies.mcts]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MctsConfig {
    /// Rollouts (select, expand, evaluate, back up).
    pub rollouts: usize,
    /// Children proposed per expansion (samples of one generator call).
    pub branching: u32,
    /// Sub-questions on one path at most; a node this deep is answered.
    pub max_depth: usize,
    /// UCT's exploration weight.
    pub exploration: f64,
    /// Temperature of the generator's samples.
    pub temperature: f32,
    /// Passages retrieved per sub-question.
    pub k_per_step: usize,
    /// Facts below this confidence are shown as not found.
    pub min_confidence: f64,
    /// Seed of the generator's samples (the search is deterministic for a seed with the
    /// call cache on).
    pub seed: u64,
    /// Show the question's sources to every expansion, not only the root's. Off: below the
    /// root the generator reads the path's facts (each with its sources' titles), which is
    /// the state the seed's planner reasons over, and a call costs ~200-250 prompt tokens
    /// instead of the sources' ~1,300 (what keeps a search at its defaults within 3x
    /// metarag's tokens).
    pub sources_in_every_expansion: bool,
    /// The confidence of a path without facts, which a final answer's grounding is
    /// multiplied by: how far an answer proposed without any looked-up fact is trusted.
    /// 1.0 (the default, the reward as first built) lets such a proposal outrank an answer
    /// backed by a fact whenever the sources state its words, and on an "A or B" question
    /// the sources state both options (docs/results/strategies.md, the budget runs); below
    /// a trusted fact's confidence, the search prefers answers it has checked. A value
    /// other than 1.0 is to be chosen on the tuning half.
    pub unverified_confidence: f64,
    /// Plan and run the question's program before the search ([`crate::program`]): its
    /// grounded reads are the root's memory, and a program whose every step grounds is the
    /// answer, with no search.
    pub program: bool,
}

impl Default for MctsConfig {
    fn default() -> Self {
        MctsConfig {
            rollouts: 6,
            branching: 2,
            max_depth: 3,
            exploration: 1.0,
            temperature: 0.7,
            k_per_step: 3,
            min_confidence: 0.5,
            seed: 0,
            sources_in_every_expansion: false,
            unverified_confidence: 1.0,
            program: true,
        }
    }
}

/// What a tree node is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    /// The root: the question.
    UserQuestion,
    /// A sub-question and (once visited) its extracted answer.
    SubQa,
    /// A proposed final answer (a leaf).
    FinalAnswer,
}

/// One node of the search tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TreeNode {
    /// Its index in the tree.
    pub id: usize,
    /// Its parent's index (`None` for the root).
    pub parent: Option<usize>,
    /// What it is.
    pub kind: NodeKind,
    /// The question, sub-question or final answer.
    pub content: String,
    /// Sub-questions on its path.
    pub depth: usize,
    /// Rollouts through it.
    pub visits: u32,
    /// Sum of the rewards backed up through it.
    pub value: f64,
    /// Its own reward, once evaluated.
    pub reward: Option<f64>,
    /// Its children's indices.
    pub children: Vec<usize>,
    /// The reasoning memory at this node.
    pub memory: ReasoningMemory,
}

impl TreeNode {
    fn expanded(&self) -> bool {
        !self.children.is_empty()
    }
}

/// The MCTS planner.
#[derive(Debug, Clone)]
pub struct Mcts(MctsConfig);

/// MCTS's state: its settings, the tree, the rollouts done.
#[derive(Debug)]
pub struct MctsState {
    config: MctsConfig,
    tree: Vec<TreeNode>,
    rollouts: usize,
}

impl Strategy for Mcts {
    const NAME: &'static str = "mcts";
    const DESCRIPTION: &'static str = "Monte Carlo tree search over reasoning states: sub-questions sampled as branches, facts scored in code, UCT (seed 004, State-Aware RAG)";
    type Config = MctsConfig;
    type State = MctsState;

    fn new(config: MctsConfig) -> Result<Self, String> {
        if config.rollouts == 0 || config.branching == 0 || config.k_per_step == 0 {
            return Err("rollouts, branching and k_per_step must be at least 1".into());
        }
        if config.branching > metarag_core::MAX_SAMPLES {
            return Err(format!(
                "branching {} is over {}",
                config.branching,
                metarag_core::MAX_SAMPLES
            ));
        }
        if !(config.exploration >= 0.0 && config.exploration.is_finite()) {
            return Err(format!("exploration {} must be >= 0", config.exploration));
        }
        if !(0.0..=1.0).contains(&config.min_confidence) {
            return Err(format!(
                "min_confidence {} is not in [0, 1]",
                config.min_confidence
            ));
        }
        if !(0.0..=1.0).contains(&config.unverified_confidence) {
            return Err(format!(
                "unverified_confidence {} is not in [0, 1]",
                config.unverified_confidence
            ));
        }
        Ok(Mcts(config))
    }

    fn state(&self) -> MctsState {
        MctsState {
            config: self.0.clone(),
            tree: Vec::new(),
            rollouts: 0,
        }
    }

    /// Continues the tree of `records.tree`: the rollouts done are the root's visits, and
    /// nodes already expanded or evaluated are not asked of the model again.
    fn resume(&self, state: &mut MctsState, records: &serde_json::Value) -> Result<(), String> {
        let tree = records.get("tree").ok_or("the records hold no `tree`")?;
        let tree: Vec<TreeNode> =
            serde_json::from_value(tree.clone()).map_err(|e| format!("tree: {e}"))?;
        check_tree(&tree)?;
        state.rollouts = tree[0].visits as usize;
        state.tree = tree;
        Ok(())
    }

    fn graph(&self) -> Graph<Run<MctsState>> {
        Graph::new(RETRIEVE)
            .node(RETRIEVE, &[(SEARCH, "")], |s| {
                Box::pin(nodes::retrieve(s, SEARCH))
            })
            .node(
                SEARCH,
                &[
                    (SEARCH, "rollouts left"),
                    (READ, "rollouts spent or the tree exhausted"),
                ],
                |s| Box::pin(search(s)),
            )
            .node(READ, &[(WRITE, "")], |s| {
                Box::pin(nodes::read(s, Transition::Goto(WRITE)))
            })
            .node(WRITE, &[], |s| {
                Box::pin(nodes::write(s, Transition::done("answered")))
            })
    }
}

type S = Run<MctsState>;

/// Whether nodes form a tree as [`Mcts`] builds it: ids are positions, the root first,
/// every parent before its children and listing them.
pub fn check_tree(tree: &[TreeNode]) -> Result<(), String> {
    let root = tree.first().ok_or("the tree is empty")?;
    if root.parent.is_some() || root.kind != NodeKind::UserQuestion {
        return Err("node 0 is not a root user_question".into());
    }
    for (i, n) in tree.iter().enumerate() {
        if n.id != i {
            return Err(format!("node at position {i} has id {}", n.id));
        }
        if let Some(p) = n.parent
            && (p >= i || !tree[p].children.contains(&i))
        {
            return Err(format!("node {i}: parent {p} does not list it before it"));
        }
        if i > 0 && n.parent.is_none() {
            return Err(format!("node {i} has no parent"));
        }
        if let Some(&c) = n
            .children
            .iter()
            .find(|&&c| c >= tree.len() || tree[c].parent != Some(i))
        {
            return Err(format!("node {i}: child {c} is not its child"));
        }
    }
    Ok(())
}

/// UCT score of `child` under a parent visited `parent_visits` times; unvisited first.
pub fn uct(value: f64, visits: u32, parent_visits: u32, exploration: f64) -> f64 {
    if visits == 0 {
        return f64::INFINITY;
    }
    let n = f64::from(visits);
    value / n + exploration * (f64::from(parent_visits.max(1)).ln() / n).sqrt()
}

/// Walks from the root by UCT to the node to expand or evaluate: an unvisited node, or
/// a visited leaf that is not a final answer.
fn select(tree: &[TreeNode], exploration: f64) -> usize {
    let mut at = 0;
    loop {
        let node = &tree[at];
        if node.visits == 0 || !node.expanded() || node.kind == NodeKind::FinalAnswer {
            return at;
        }
        let best = node
            .children
            .iter()
            .copied()
            .max_by(|&a, &b| {
                let (x, y) = (&tree[a], &tree[b]);
                uct(x.value, x.visits, node.visits, exploration)
                    .total_cmp(&uct(y.value, y.visits, node.visits, exploration))
                    // Ties to the older child, so the walk is deterministic.
                    .then(b.cmp(&a))
            })
            .unwrap_or(at);
        at = best;
    }
}

fn backup(tree: &mut [TreeNode], from: usize, reward: f64) {
    let mut at = Some(from);
    while let Some(i) = at {
        tree[i].visits += 1;
        tree[i].value += reward;
        at = tree[i].parent;
    }
}

/// A final answer's reward: how far the trusted facts on its path and the question's
/// sources state its words, times the mean confidence of the path's facts
/// (`unverified` without facts).
fn answer_reward(
    answer: &str,
    memory: &ReasoningMemory,
    sources: &[crate::Source],
    min: f64,
    unverified: f64,
) -> f64 {
    let path = if memory.facts.is_empty() {
        unverified
    } else {
        memory.facts.iter().map(|f| f.confidence).sum::<f64>() / memory.facts.len() as f64
    };
    memory.grounding(answer, sources, min) * path
}

async fn search(s: &mut S) -> NodeResult {
    let cfg = s.ext.config.clone();
    if s.sources_version == 0 {
        nodes::read(s, Transition::Goto(SEARCH)).await?;
    }
    // A resumed tree may already have its rollouts.
    if s.ext.rollouts >= cfg.rollouts && !s.ext.tree.is_empty() {
        finish(s);
        return Ok(Transition::Goto(READ));
    }
    if s.ext.tree.is_empty() {
        // A generator role at temperature 0 overrides the sampler's temperature: every
        // branch would be the same reply. Said once a run, in the log and the metrics.
        if cfg.branching > 1 && s.gw.temperature_for("expand").is_some_and(|t| t <= 0.0) {
            tracing::warn!(
                "the generator role's temperature 0 makes mcts's {} samples per expansion identical; \
                 leave roles.generator.temperature unset or above 0 for a search",
                cfg.branching
            );
            s.metrics.insert("generator_temperature_zero".into(), 1.0);
        }
        let mut memory = ReasoningMemory::default();
        let mut resolved = None;
        if cfg.program && !s.sources.is_empty() && s.mode != EvidenceMode::ClosedBook {
            let run = program::exec::solve(s, SEARCH.as_str()).await?;
            memory = ReasoningMemory::from_program(&run, &s.sources);
            if let Outcome::Resolved {
                answer,
                short_answer,
                ..
            } = run.outcome
            {
                memory.candidates.push(Candidate {
                    answer: short_answer.clone(),
                    confidence: 1.0,
                });
                resolved = Some((answer, short_answer));
            }
        }
        s.ext.tree.push(TreeNode {
            id: 0,
            parent: None,
            kind: NodeKind::UserQuestion,
            content: s.question.clone(),
            depth: 0,
            visits: 0,
            value: 0.0,
            reward: None,
            children: Vec::new(),
            memory,
        });
        // Every step grounded: the program's answer, with no search.
        if let Some((answer, short_answer)) = resolved {
            let i = s.push_answer(answer, short_answer);
            s.chosen = Some(i);
            finish(s);
            return Ok(Transition::done(PROGRAM_RESOLVED));
        }
    }
    let width = batch_width(s, &cfg);
    if width > 1 {
        return search_batch(s, &cfg, width).await;
    }
    let leaf = select(&s.ext.tree, cfg.exploration);
    let reward = if s.ext.tree[leaf].reward.is_none() && s.ext.tree[leaf].kind == NodeKind::SubQa {
        evaluate(s, leaf).await?
    } else if s.ext.tree[leaf].kind == NodeKind::FinalAnswer {
        // A final answer is a leaf: visiting it again re-counts its reward.
        s.ext.tree[leaf].reward.unwrap_or(0.0)
    } else {
        match expand(s, leaf).await? {
            Some(child) => {
                let r = match s.ext.tree[child].kind {
                    NodeKind::SubQa => evaluate(s, child).await?,
                    _ => s.ext.tree[child].reward.unwrap_or(0.0),
                };
                backup(&mut s.ext.tree, child, r);
                s.ext.rollouts += 1;
                return next(
                    s,
                    &cfg,
                    format!("expanded node {leaf}, evaluated {child}: {r:.2}"),
                );
            }
            // Nothing new to propose: the leaf's own reward (the root's is 0).
            None => s.ext.tree[leaf].reward.unwrap_or(0.0),
        }
    };
    backup(&mut s.ext.tree, leaf, reward);
    s.ext.rollouts += 1;
    next(s, &cfg, format!("visited node {leaf}: {reward:.2}"))
}

fn next(s: &mut S, cfg: &MctsConfig, what: String) -> NodeResult {
    s.note = Some(format!("rollout {}: {what}", s.ext.rollouts));
    // Every node fully explored: nothing more to learn from further rollouts.
    let exhausted = s
        .ext
        .tree
        .iter()
        .all(|n| n.kind == NodeKind::FinalAnswer || (n.expanded() && n.visits > 0))
        && s.ext.tree.len() > 1;
    // A rollout makes an expansion (one call, or one per sample where the backend draws
    // one sample a call) and an evaluation, and the write one call more: stop while the
    // write still fits, so a tight budget ends with the best path written up.
    let short = !s.gw.room_for(expansion_calls(s, cfg) + 2);
    if s.ext.rollouts >= cfg.rollouts || exhausted || short {
        s.metrics
            .insert("stopped_short_of_budget".into(), f64::from(u8::from(short)));
        finish(s);
        if short {
            s.note = s.note.take().map(|n| format!("{n} (budget nearly spent)"));
        }
        return Ok(Transition::Goto(READ));
    }
    Ok(Transition::Goto(SEARCH))
}

/// Calls one expansion makes: one where the generator's backend draws several samples,
/// else one per sample.
fn expansion_calls(s: &S, cfg: &MctsConfig) -> u64 {
    if s.gw.capabilities_for("expand").samples {
        1
    } else {
        u64::from(cfg.branching)
    }
}

/// Rollouts to run at once: the generator role's concurrency (1 unless configured: the
/// local model answers one call at a time), no more than are left, and no more than the
/// budget holds with the write after them.
fn batch_width(s: &S, cfg: &MctsConfig) -> usize {
    let wide =
        s.gw.concurrency_for("expand")
            .min(cfg.rollouts.saturating_sub(s.ext.rollouts));
    let per = expansion_calls(s, cfg) + 1;
    (2..=wide)
        .rev()
        .find(|&w| s.gw.room_for(w as u64 * per + 1))
        .unwrap_or(1)
}

/// Adds `n` visits along the path from `from` to the root (a virtual loss while a batch
/// is chosen; `n` negative takes them back).
fn visit_path(tree: &mut [TreeNode], from: usize, n: i64) {
    let mut at = Some(from);
    while let Some(i) = at {
        tree[i].visits = (i64::from(tree[i].visits) + n).max(0) as u32;
        at = tree[i].parent;
    }
}

/// Up to `width` rollouts at once. The leaves are chosen by UCT with a virtual loss (each
/// chosen path counts a visit of reward 0 while the next is chosen, so the walks spread
/// over the tree); their expansions go to the generator together, then the extractions of
/// the new sub-questions to the extractor together, each up to its role's concurrency;
/// then every reward is backed up in the order the leaves were chosen. A leaf chosen twice
/// ends the batch early (the tree is too small to spread over).
async fn search_batch(s: &mut S, cfg: &MctsConfig, width: usize) -> NodeResult {
    let mut leaves = Vec::new();
    while leaves.len() < width {
        let leaf = select(&s.ext.tree, cfg.exploration);
        if leaves.contains(&leaf) {
            break;
        }
        visit_path(&mut s.ext.tree, leaf, 1);
        leaves.push(leaf);
    }
    for &leaf in &leaves {
        visit_path(&mut s.ext.tree, leaf, -1);
    }
    let expands: Vec<usize> = leaves
        .iter()
        .copied()
        .filter(|&l| {
            let n = &s.ext.tree[l];
            !(n.kind == NodeKind::FinalAnswer || (n.kind == NodeKind::SubQa && n.reward.is_none()))
        })
        .collect();
    let requests = expands
        .iter()
        .map(|&l| {
            let (request, seed) = expansion(s, l);
            request.samples(cfg.branching, cfg.temperature, seed)
        })
        .collect();
    let replies =
        s.gw.sample_many(SEARCH.as_str(), "expand", requests)
            .await?;
    // Each leaf's node to back up from: itself, or the first child its expansion added.
    let mut from: Vec<(usize, usize)> = Vec::new();
    let mut replies = replies.into_iter();
    for &leaf in &leaves {
        let at = if expands.contains(&leaf) {
            let texts = replies.next().unwrap_or_default();
            add_children(s, leaf, texts).unwrap_or(leaf)
        } else {
            leaf
        };
        from.push((leaf, at));
    }
    // The sub-questions to answer: searched one after another, asked together.
    let to_evaluate: Vec<usize> = from
        .iter()
        .map(|&(_, at)| at)
        .filter(|&at| s.ext.tree[at].kind == NodeKind::SubQa && s.ext.tree[at].reward.is_none())
        .collect();
    let mut asked = Vec::new();
    for &node in &to_evaluate {
        let sub = s.ext.tree[node].content.clone();
        asked.push(ask_fact(s, SEARCH, &sub, cfg.k_per_step).await?);
    }
    let requests = asked.iter().map(|a| a.request.clone()).collect();
    let called = s.gw.chat_many(SEARCH.as_str(), "extract", requests).await?;
    for ((node, a), c) in to_evaluate.iter().zip(&asked).zip(&called) {
        let fact = a.score(s, SEARCH, c);
        evaluated(s, *node, fact);
    }
    for &(_, at) in &from {
        let reward = s.ext.tree[at].reward.unwrap_or(0.0);
        backup(&mut s.ext.tree, at, reward);
        s.ext.rollouts += 1;
    }
    *s.metrics.entry("batched_rollouts".into()).or_insert(0.0) += from.len() as f64;
    let what = from
        .iter()
        .map(|&(leaf, at)| format!("{leaf}->{at}: {:.2}", s.ext.tree[at].reward.unwrap_or(0.0)))
        .collect::<Vec<_>>()
        .join(", ");
    next(s, cfg, format!("{} at once ({what})", from.len()))
}

/// Proposes the leaf's children (one sampled generator call); returns the first new
/// child to evaluate, or `None` when the samples proposed nothing new.
async fn expand(s: &mut S, leaf: usize) -> Result<Option<usize>, NodeError> {
    let cfg = s.ext.config.clone();
    let (request, seed) = expansion(s, leaf);
    let replies =
        s.gw.sample(
            SEARCH.as_str(),
            "expand",
            request,
            cfg.branching,
            cfg.temperature,
            seed,
        )
        .await?;
    Ok(add_children(s, leaf, replies))
}

/// The generator's request to expand `leaf`, and the seed of its first sample.
fn expansion(s: &S, leaf: usize) -> (metarag_core::ChatRequest, u64) {
    let cfg = &s.ext.config;
    let memory = &s.ext.tree[leaf].memory;
    // The root proposes from the question's sources; below it the path's facts are the
    // state (`sources_in_every_expansion`).
    let sources = if leaf == 0 || cfg.sources_in_every_expansion {
        &s.sources[..]
    } else {
        &[]
    };
    let request = decompose_prompt(&s.question, sources, memory, cfg.min_confidence);
    // The seed differs per node so siblings' expansions are not copies of each other, and
    // per visit so a node whose samples proposed nothing new gets other samples next time.
    let visits = u64::from(s.ext.tree[leaf].visits);
    let seed = cfg
        .seed
        .wrapping_add(leaf as u64 * 1_000)
        .wrapping_add(visits * 10);
    (request, seed)
}

/// Adds the children the generator's samples propose under `leaf`; returns the first new
/// one, or `None` when they proposed nothing new.
fn add_children(s: &mut S, leaf: usize, replies: Vec<String>) -> Option<usize> {
    let cfg = s.ext.config.clone();
    let memory = s.ext.tree[leaf].memory.clone();
    let depth = s.ext.tree[leaf].depth;
    let mut first = None;
    for text in replies {
        let Ok(reply) = parse_json::<DecomposeReply>(&text) else {
            continue;
        };
        // A placeholder ("...", the schema's example echoed) is no sub-question.
        let sub = crate::reasoning::meaningful(&reply.sub_question);
        let answer = reply.final_answer.trim().to_string();
        let siblings: Vec<String> = s.ext.tree[leaf]
            .children
            .iter()
            .map(|&c| s.ext.tree[c].content.to_lowercase())
            .collect();
        let (kind, content) = if !sub.is_empty() && depth < cfg.max_depth && !memory.asked(&sub) {
            (NodeKind::SubQa, sub)
        } else if !answer.is_empty() {
            (NodeKind::FinalAnswer, answer)
        } else {
            continue;
        };
        if siblings.contains(&content.to_lowercase()) {
            continue;
        }
        let id = s.ext.tree.len();
        let mut child_memory = memory.clone();
        let reward = (kind == NodeKind::FinalAnswer).then(|| {
            child_memory.candidates.push(Candidate {
                answer: content.clone(),
                confidence: 0.0,
            });
            let r = answer_reward(
                &content,
                &memory,
                &s.sources,
                cfg.min_confidence,
                cfg.unverified_confidence,
            );
            if let Some(c) = child_memory.candidates.last_mut() {
                c.confidence = r;
            }
            r
        });
        if kind == NodeKind::SubQa {
            child_memory.open.push(content.clone());
        }
        s.step(
            SEARCH.as_str(),
            if kind == NodeKind::SubQa {
                StepKind::SubQuestion
            } else {
                StepKind::Answer
            },
            format!("node {id} (child of {leaf}): {content}"),
        );
        s.ext.tree.push(TreeNode {
            id,
            parent: Some(leaf),
            kind,
            content,
            depth: depth + usize::from(kind == NodeKind::SubQa),
            visits: 0,
            value: 0.0,
            reward,
            children: Vec::new(),
            memory: child_memory,
        });
        s.ext.tree[leaf].children.push(id);
        first.get_or_insert(id);
    }
    first
}

/// Answers a `sub_qa` node's sub-question and scores the fact: its reward.
async fn evaluate(s: &mut S, node: usize) -> Result<f64, NodeError> {
    let k = s.ext.config.k_per_step;
    let sub = s.ext.tree[node].content.clone();
    let fact = extract_fact(s, SEARCH, &sub, k).await?;
    Ok(evaluated(s, node, fact))
}

/// Puts `fact` in `node`'s memory; its confidence is the node's reward.
fn evaluated(s: &mut S, node: usize, fact: crate::reasoning::Fact) -> f64 {
    let sub = s.ext.tree[node].content.clone();
    let reward = fact.confidence;
    let n = &mut s.ext.tree[node];
    n.memory.open.retain(|q| *q != sub);
    n.memory.facts.push(fact);
    n.reward = Some(reward);
    reward
}

/// The node the search trusts most: the final answer with the best reward (then the most
/// visits, then the oldest), else the end of the most visited path from the root.
pub fn best_node(tree: &[TreeNode]) -> usize {
    let best_final = tree
        .iter()
        .filter(|n| n.kind == NodeKind::FinalAnswer)
        .max_by(|a, b| {
            a.reward
                .unwrap_or(0.0)
                .total_cmp(&b.reward.unwrap_or(0.0))
                .then(a.visits.cmp(&b.visits))
                .then(b.id.cmp(&a.id))
        });
    match best_final {
        Some(n) => n.id,
        None => {
            let mut at = 0;
            while let Some(&c) = tree
                .get(at)
                .into_iter()
                .flat_map(|n| n.children.iter())
                .max_by(|&&a, &&b| tree[a].visits.cmp(&tree[b].visits).then(b.cmp(&a)))
            {
                at = c;
            }
            at
        }
    }
}

/// The best node's memory becomes the writer's notes; records the tree.
fn finish(s: &mut S) {
    let min = s.ext.config.min_confidence;
    let tree = &s.ext.tree;
    let chosen = best_node(tree);
    let memory = &tree[chosen].memory;
    let mut notes = memory.render(min);
    if let Some(c) = memory.candidates.last() {
        notes.push_str(&format!("Proposed answer: {}\n", c.answer));
    }
    let finals = tree
        .iter()
        .filter(|n| n.kind == NodeKind::FinalAnswer)
        .count();
    s.metrics
        .entry("stopped_short_of_budget".into())
        .or_insert(0.0);
    s.metrics.insert("tree_nodes".into(), tree.len() as f64);
    s.metrics.insert("rollouts".into(), s.ext.rollouts as f64);
    s.metrics.insert("final_answers".into(), finals as f64);
    s.metrics
        .insert("chosen_depth".into(), tree[chosen].depth as f64);
    s.metrics
        .insert("chosen_reward".into(), tree[chosen].reward.unwrap_or(0.0));
    s.note = Some(format!(
        "{} rollouts, {} nodes, {finals} final answers; chose node {chosen}",
        s.ext.rollouts,
        tree.len()
    ));
    s.records.insert(
        "tree".into(),
        serde_json::to_value(tree).unwrap_or(serde_json::Value::Null),
    );
    s.notes = Some(notes);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(id: usize, parent: Option<usize>, visits: u32, value: f64) -> TreeNode {
        TreeNode {
            id,
            parent,
            kind: NodeKind::SubQa,
            content: format!("q{id}"),
            depth: 1,
            visits,
            value,
            reward: Some(0.5),
            children: Vec::new(),
            memory: ReasoningMemory::default(),
        }
    }

    #[test]
    fn confidences_outside_zero_to_one_are_refused_naming_the_field() {
        let bad = |c: MctsConfig| Mcts::new(c).unwrap_err();
        let e = bad(MctsConfig {
            unverified_confidence: 1.5,
            ..MctsConfig::default()
        });
        assert!(e.starts_with("unverified_confidence 1.5"), "{e}");
        let e = bad(MctsConfig {
            min_confidence: -0.1,
            ..MctsConfig::default()
        });
        assert!(e.starts_with("min_confidence"), "{e}");
        assert!(
            Mcts::new(MctsConfig {
                unverified_confidence: 0.5,
                ..MctsConfig::default()
            })
            .is_ok()
        );
    }

    #[test]
    fn uct_prefers_unvisited_then_balances_value_and_exploration() {
        assert_eq!(uct(0.0, 0, 5, 1.0), f64::INFINITY);
        // Same mean, fewer visits: more exploration credit.
        assert!(uct(1.0, 2, 10, 1.0) > uct(4.0, 8, 10, 1.0));
        // Without exploration, the mean alone.
        assert_eq!(uct(3.0, 4, 10, 0.0), 0.75);
    }

    #[test]
    fn selection_descends_by_uct_and_backup_counts_every_ancestor() {
        let mut tree = vec![
            node(0, None, 3, 1.0),
            node(1, Some(0), 2, 0.2),
            node(2, Some(0), 1, 0.9),
        ];
        tree[0].kind = NodeKind::UserQuestion;
        tree[0].children = vec![1, 2];
        // Node 2: mean 0.9 with fewer visits beats node 1's 0.1; it is a visited leaf.
        assert_eq!(select(&tree, 1.0), 2);
        tree[2].children = vec![3];
        tree.push(node(3, Some(2), 0, 0.0));
        assert_eq!(select(&tree, 1.0), 3);
        backup(&mut tree, 3, 0.5);
        assert_eq!((tree[3].visits, tree[2].visits, tree[0].visits), (1, 2, 4));
        assert!((tree[0].value - 1.5).abs() < 1e-12);
    }
}
