//! Approximate nearest neighbours over chunk embeddings, with usearch (HNSW).

use crate::{Error, IndexConfig, Result};
use metarag_core::ChunkId;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::RwLock;
use usearch::{Index, IndexOptions, MetricKind, ScalarKind};

/// Below this many allowed chunks a filtered search scores them exactly instead of walking
/// the graph: a very selective filter makes HNSW return too few results.
const EXACT_FILTER_LIMIT: usize = 4096;

pub(crate) struct Dense {
    path: PathBuf,
    generation_path: PathBuf,
    options: IndexOptions,
    index: RwLock<Index>,
}

fn usearch_err(context: &str, e: impl std::fmt::Display) -> Error {
    Error::Usearch(format!("{context}: {e}"))
}

impl Dense {
    pub fn open(path: &Path, config: &IndexConfig) -> Result<Self> {
        let options = IndexOptions {
            dimensions: config.dimension,
            metric: MetricKind::Cos,
            quantization: ScalarKind::F32,
            connectivity: config.hnsw_m,
            expansion_add: config.hnsw_ef_construction,
            expansion_search: config.hnsw_ef_search,
            multi: false,
        };
        let index = Index::new(&options).map_err(|e| usearch_err("create", e))?;
        let generation_path = path.with_extension("usearch.generation");
        if path.exists() {
            let p = path
                .to_str()
                .ok_or_else(|| Error::Corrupt(format!("{}: path is not UTF-8", path.display())))?;
            index
                .load(p)
                .map_err(|e| usearch_err(&format!("load {}", path.display()), e))?;
            // Loading restores the saved search setting; the configured one wins.
            index.change_expansion_search(config.hnsw_ef_search);
        }
        Ok(Dense {
            path: path.to_path_buf(),
            generation_path,
            options,
            index: RwLock::new(index),
        })
    }

    /// The generation of the saved file, `None` if unknown (missing, or a save was cut off).
    pub fn generation(&self) -> Option<u64> {
        if !self.path.exists() {
            // No file and no generation: a new, empty index (generation 0). A generation
            // without its file means the file was lost: unknown, so it gets rebuilt.
            return (!self.generation_path.exists()).then_some(0);
        }
        std::fs::read_to_string(&self.generation_path)
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    pub fn len(&self) -> usize {
        self.index.read().map(|i| i.size()).unwrap_or(0)
    }

    pub fn apply<'a>(
        &self,
        removed: &[ChunkId],
        added: impl Iterator<Item = (ChunkId, &'a [f32])>,
        generation: u64,
    ) -> Result<()> {
        let index = self.index.write().map_err(|_| Error::Poisoned)?;
        for id in removed {
            index.remove(id.0).map_err(|e| usearch_err("remove", e))?;
        }
        let added: Vec<_> = added.collect();
        reserve(&index, added.len())?;
        for (id, v) in added {
            index.add(id.0, v).map_err(|e| usearch_err("add", e))?;
        }
        self.save(&index, generation)
    }

    pub fn rebuild(&self, vectors: &[(ChunkId, Vec<f32>)], generation: u64) -> Result<()> {
        let mut index = self.index.write().map_err(|_| Error::Poisoned)?;
        *index = Index::new(&self.options).map_err(|e| usearch_err("create", e))?;
        reserve(&index, vectors.len())?;
        for (id, v) in vectors {
            index.add(id.0, v).map_err(|e| usearch_err("add", e))?;
        }
        self.save(&index, generation)
    }

    /// Saves atomically: the generation file is removed first and written last, so a crash
    /// in between leaves "generation unknown", which forces a rebuild on the next open.
    fn save(&self, index: &Index, generation: u64) -> Result<()> {
        match std::fs::remove_file(&self.generation_path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(&self.generation_path, e)),
        }
        let tmp = self.path.with_extension("usearch.tmp");
        let tmp_str = tmp
            .to_str()
            .ok_or_else(|| Error::Corrupt(format!("{}: path is not UTF-8", tmp.display())))?;
        index.save(tmp_str).map_err(|e| usearch_err("save", e))?;
        std::fs::rename(&tmp, &self.path).map_err(|e| Error::io(&self.path, e))?;
        let gen_tmp = self.generation_path.with_extension("tmp");
        std::fs::write(&gen_tmp, generation.to_string()).map_err(|e| Error::io(&gen_tmp, e))?;
        std::fs::rename(&gen_tmp, &self.generation_path)
            .map_err(|e| Error::io(&self.generation_path, e))?;
        Ok(())
    }

    pub fn search(
        &self,
        query: &[f32],
        n: usize,
        allowed: Option<&HashSet<u64>>,
    ) -> Result<Vec<(ChunkId, f32)>> {
        let index = self.index.read().map_err(|_| Error::Poisoned)?;
        if n == 0 || index.size() == 0 {
            return Ok(Vec::new());
        }
        let matches = match allowed {
            None => index
                .search(query, n)
                .map_err(|e| usearch_err("search", e))?,
            Some(allowed) if allowed.len() <= EXACT_FILTER_LIMIT => {
                return exact(&index, query, n, allowed);
            }
            Some(allowed) => index
                .filtered_search(query, n, |key| allowed.contains(&key))
                .map_err(|e| usearch_err("filtered search", e))?,
        };
        Ok(matches
            .keys
            .into_iter()
            .zip(matches.distances)
            .map(|(k, d)| (ChunkId(k), 1.0 - d))
            .collect())
    }
}

fn reserve(index: &Index, extra: usize) -> Result<()> {
    let needed = index.size() + extra;
    if needed > index.capacity() {
        // Grow geometrically so a long ingest doesn't reallocate the graph every batch.
        let target = needed.max(index.capacity() * 2).max(1024);
        index
            .reserve(target)
            .map_err(|e| usearch_err("reserve", e))?;
    }
    Ok(())
}

/// Exact cosine scoring of the allowed keys (vectors are stored normalised by the
/// embedder, but we normalise anyway so a user-supplied model without a Normalize layer is
/// still ranked by cosine).
fn exact(
    index: &Index,
    query: &[f32],
    n: usize,
    allowed: &HashSet<u64>,
) -> Result<Vec<(ChunkId, f32)>> {
    let qn = norm(query);
    let mut buf = vec![0f32; query.len()];
    let mut scored = Vec::with_capacity(allowed.len());
    for &key in allowed {
        if index
            .get(key, &mut buf)
            .map_err(|e| usearch_err("get", e))?
            == 0
        {
            continue;
        }
        let dot: f32 = buf.iter().zip(query).map(|(a, b)| a * b).sum();
        let denom = norm(&buf) * qn;
        scored.push((ChunkId(key), if denom > 0.0 { dot / denom } else { 0.0 }));
    }
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    scored.truncate(n);
    Ok(scored)
}

fn norm(v: &[f32]) -> f32 {
    v.iter().map(|x| x * x).sum::<f32>().sqrt()
}
