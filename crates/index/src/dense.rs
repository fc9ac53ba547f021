//! Approximate nearest neighbours over chunk embeddings, with usearch (HNSW).
//!
//! Persistence is a snapshot plus a journal. `dense.usearch` is the graph as of the
//! generation in `dense.usearch.generation`; `dense.journal` holds every change since, one
//! checksummed record per [`Dense::apply`] (the chunks removed and the vectors added, with
//! the change's generation). A write appends one record, O(batch), where saving the whole
//! graph each time made ingest quadratic (a 1M-chunk index rewrote ~1.5 GB per batch). The
//! snapshot is rewritten only when the journal would hold a quarter of the graph (at least
//! [`SNAPSHOT_MIN`] vectors) and when a writer closes, so the total written stays linear in
//! the index size; the write that reaches that size is written as the snapshot alone, not
//! as a record first (one large document's record is as large as its vectors).
//!
//! On open, the journal's records after the snapshot are replayed in generation order up to
//! SQLite's generation. A record past it is a change SQLite never committed (killed between
//! the journal append and the commit): replay stops there and a writer cuts it off. A torn
//! or corrupt record, or a gap in the generations, also stops the replay; the engine then
//! lags SQLite and is rebuilt from it, as before.
//!
//! With nothing to replay, the snapshot is memory-mapped (usearch's `view`) rather than
//! read into memory: opening a million-vector index costs milliseconds instead of a
//! second and a half-gigabyte copy, and processes reading one index share its pages. A
//! mapped graph is immutable, so a writer reads the file into memory before its first
//! change. Snapshots are written to a temporary file and renamed over the old one, so a
//! mapping made earlier keeps the file it mapped.

use crate::{Error, IndexConfig, Result};
use metarag_core::ChunkId;
use std::collections::HashSet;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, RwLock};
use usearch::{Index, IndexOptions, MetricKind, ScalarKind};

/// Below this many allowed chunks a filtered search scores them exactly instead of walking
/// the graph: a very selective filter makes HNSW return too few results.
const EXACT_FILTER_LIMIT: usize = 4096;

/// Fewest journalled vectors that trigger a snapshot (beside a quarter of the graph): small
/// indexes live in the journal until they close.
pub(crate) const SNAPSHOT_MIN: usize = 16_384;

/// First bytes of every journal record.
const RECORD_MAGIC: [u8; 4] = *b"MRJ1";
/// Magic, generation, removed count, added count, dimension.
const HEADER_LEN: usize = 4 + 8 + 4 + 4 + 4;

pub(crate) struct Dense {
    path: PathBuf,
    generation_path: PathBuf,
    journal_path: PathBuf,
    options: IndexOptions,
    index: RwLock<Index>,
    /// Whether this process may write the files (it holds the writer lock).
    writable: bool,
    /// Whether `index` is the snapshot memory-mapped (read-only) rather than loaded.
    mapped: AtomicBool,
    state: Mutex<State>,
}

struct State {
    /// The generation the in-memory graph is at; `None`: unknown (rebuild needed).
    generation: Option<u64>,
    /// Vectors added or removed by journal records since the snapshot.
    journalled: usize,
}

fn usearch_err(context: &str, e: impl std::fmt::Display) -> Error {
    Error::Usearch(format!("{context}: {e}"))
}

impl Dense {
    /// Opens the graph: the snapshot, then the journal's records up to `target` (SQLite's
    /// generation). `writable`: this process holds the writer lock and may cut off a stale
    /// journal tail and write snapshots.
    pub fn open(path: &Path, config: &IndexConfig, target: u64, writable: bool) -> Result<Self> {
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
        let journal_path = path.with_extension("journal");
        let snapshot = snapshot_generation(path, &generation_path);
        let mut mapped = false;
        if path.exists() {
            // Records to replay change the graph, which a mapping cannot take.
            let journal_empty = std::fs::metadata(&journal_path).map_or(true, |m| m.len() == 0);
            if journal_empty && snapshot.is_some() {
                index
                    .view(utf8(path)?)
                    .map_err(|e| usearch_err(&format!("map {}", path.display()), e))?;
                index.change_expansion_search(config.hnsw_ef_search);
                mapped = true;
            } else {
                load(&index, path, config.hnsw_ef_search)?;
            }
        }
        let (generation, journalled) = match snapshot {
            // The journal was empty when the snapshot was mapped; a record another process
            // appended since is a write this reader does not see, as with any record past
            // the generation it opened at.
            Some(g0) if mapped => (Some(g0), 0),
            Some(g0) => {
                let replay = replay(&journal_path, &index, g0, target, config.dimension)?;
                if writable && replay.file_len > replay.valid_len {
                    tracing::warn!(
                        journal = %journal_path.display(),
                        "cutting off {} journal bytes past the committed state",
                        replay.file_len - replay.valid_len
                    );
                    truncate(&journal_path, replay.valid_len)?;
                }
                (Some(replay.generation), replay.journalled)
            }
            None => (None, 0),
        };
        Ok(Dense {
            path: path.to_path_buf(),
            generation_path,
            journal_path,
            options,
            index: RwLock::new(index),
            writable,
            mapped: AtomicBool::new(mapped),
            state: Mutex::new(State {
                generation,
                journalled,
            }),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // State is two numbers written together; a panic can't leave it half-updated.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The generation the graph is at, `None` if unknown (the snapshot is missing its
    /// generation file, or a save was cut off).
    pub fn generation(&self) -> Option<u64> {
        self.state().generation
    }

    pub fn len(&self) -> usize {
        self.index.read().map(|i| i.size()).unwrap_or(0)
    }

    /// Removes `removed`, adds `added` and records the change at `generation` (a journal
    /// record, or a snapshot when the journal would reach its limit). The vectors are
    /// taken a slice at a time, so a caller may read them from disk as they go (a staged
    /// document); the record is then written from the graph's own copy of them.
    pub fn apply<V: AsRef<[f32]>>(
        &self,
        removed: &[ChunkId],
        added: impl Iterator<Item = (ChunkId, V)>,
        generation: u64,
    ) -> Result<()> {
        let mut index = self.index.write().map_err(|_| Error::Poisoned)?;
        self.load_mapped(&mut index)?;
        for id in removed {
            index.remove(id.0).map_err(|e| usearch_err("remove", e))?;
        }
        let mut added = added.peekable();
        let mut ids = Vec::new();
        while added.peek().is_some() {
            let slice: Vec<(ChunkId, V)> = added.by_ref().take(ADD_SLICE).collect();
            reserve(&index, slice.len())?;
            add_all(
                &index,
                slice.iter().map(|(id, v)| (id.0, v.as_ref())).collect(),
            )?;
            ids.extend(slice.iter().map(|(id, _)| *id));
        }
        let mut state = self.state();
        let journalled = state.journalled + ids.len() + removed.len();
        if journalled >= SNAPSHOT_MIN.max(index.size() / 4) {
            // The record would be folded into a snapshot at once: write the snapshot
            // alone. A write of one large document (150k vectors) would otherwise be
            // written twice, its record first (as large as its vectors).
            self.snapshot(&index, generation)?;
            state.journalled = 0;
        } else {
            append_record(
                &self.journal_path,
                generation,
                removed,
                &ids,
                |id, out| match index.get(id.0, out) {
                    Ok(1) => Ok(()),
                    Ok(_) => Err(std::io::Error::other(format!(
                        "chunk {id} was added but the graph does not hold it"
                    ))),
                    Err(e) => Err(std::io::Error::other(e.to_string())),
                },
                self.options.dimensions,
            )?;
            state.journalled = journalled;
        }
        state.generation = Some(generation);
        Ok(())
    }

    pub fn rebuild(&self, vectors: &[(ChunkId, Vec<f32>)], generation: u64) -> Result<()> {
        let mut index = self.index.write().map_err(|_| Error::Poisoned)?;
        *index = Index::new(&self.options).map_err(|e| usearch_err("create", e))?;
        self.mapped.store(false, Ordering::Release);
        reserve(&index, vectors.len())?;
        add_all(
            &index,
            vectors.iter().map(|(id, v)| (id.0, v.as_slice())).collect(),
        )?;
        self.snapshot(&index, generation)?;
        let mut state = self.state();
        state.generation = Some(generation);
        state.journalled = 0;
        Ok(())
    }

    /// Replaces a memory-mapped snapshot with the same graph read into memory, which
    /// takes changes: once per process, before its first write.
    fn load_mapped(&self, index: &mut Index) -> Result<()> {
        if !self.mapped.load(Ordering::Acquire) {
            return Ok(());
        }
        let _span = tracing::info_span!("dense.load_mapped", vectors = index.size()).entered();
        let loaded = Index::new(&self.options).map_err(|e| usearch_err("create", e))?;
        load(&loaded, &self.path, self.options.expansion_search)?;
        *index = loaded;
        self.mapped.store(false, Ordering::Release);
        Ok(())
    }

    /// Writes the snapshot at `generation`, then empties the journal.
    fn snapshot(&self, index: &Index, generation: u64) -> Result<()> {
        self.save(index, generation)?;
        // A kill between the save and this truncation leaves records at or below the
        // snapshot's generation, which replay skips.
        truncate(&self.journal_path, 0)
    }

    /// Saves atomically: the generation file is removed first and written last, so a crash
    /// in between leaves "generation unknown", which forces a rebuild on the next open.
    fn save(&self, index: &Index, generation: u64) -> Result<()> {
        let _span = tracing::info_span!("dense.snapshot", vectors = index.size()).entered();
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

impl Drop for Dense {
    /// A writer that closes folds its journal into the snapshot, so that the next open
    /// loads one file instead of replaying changes.
    fn drop(&mut self) {
        if !self.writable {
            return;
        }
        let (generation, journalled) = {
            let s = self.state();
            (s.generation, s.journalled)
        };
        let (Some(generation), true) = (generation, journalled > 0) else {
            return;
        };
        let Ok(index) = self.index.read() else {
            return;
        };
        if let Err(e) = self.snapshot(&index, generation) {
            // Nothing is lost: the journal still holds the changes and is replayed next time.
            tracing::warn!(error = %e, "could not write the vector snapshot on close");
        }
    }
}

/// The generation of the saved snapshot: 0 for a new index (no file, no generation),
/// `None` if unknown (a generation without its file means the file was lost; a file
/// without a readable generation means a save was cut off).
fn snapshot_generation(path: &Path, generation_path: &Path) -> Option<u64> {
    if !path.exists() {
        return (!generation_path.exists()).then_some(0);
    }
    std::fs::read_to_string(generation_path)
        .ok()?
        .trim()
        .parse()
        .ok()
}

fn truncate(path: &Path, len: u64) -> Result<()> {
    match std::fs::OpenOptions::new().write(true).open(path) {
        Ok(f) => f.set_len(len).map_err(|e| Error::io(path, e)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// One journal record: header, removed ids, added `(id, vector)` pairs, then a CRC-32 of
/// everything before it.
/// Appends one record to the journal at `path`, streamed through a buffer: a record is as
/// large as its vectors, which the caller already holds once.
fn append_record(
    path: &Path,
    generation: u64,
    removed: &[ChunkId],
    added: &[ChunkId],
    vector_of: impl FnMut(ChunkId, &mut [f32]) -> std::io::Result<()>,
    dim: usize,
) -> Result<()> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| Error::io(path, e))?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
    write_record(&mut out, generation, removed, added, vector_of, dim)
        .and_then(|()| out.flush())
        .map_err(|e| Error::io(path, e))
}

/// Writes one journal record: the header, the removed ids, the added ids and vectors
/// (each vector fetched by `vector_of` into a buffer of `dim`), and a CRC-32 of all of it.
fn write_record(
    out: &mut impl Write,
    generation: u64,
    removed: &[ChunkId],
    added: &[ChunkId],
    mut vector_of: impl FnMut(ChunkId, &mut [f32]) -> std::io::Result<()>,
    dim: usize,
) -> std::io::Result<()> {
    let mut crc = crc32fast::Hasher::new();
    let mut put = |bytes: &[u8]| {
        crc.update(bytes);
        out.write_all(bytes)
    };
    put(&RECORD_MAGIC)?;
    put(&generation.to_le_bytes())?;
    put(&(removed.len() as u32).to_le_bytes())?;
    put(&(added.len() as u32).to_le_bytes())?;
    put(&(dim as u32).to_le_bytes())?;
    for id in removed {
        put(&id.0.to_le_bytes())?;
    }
    let mut vector = vec![0f32; dim];
    let mut entry = Vec::with_capacity(8 + 4 * dim);
    for &id in added {
        vector_of(id, &mut vector)?;
        entry.clear();
        entry.extend_from_slice(&id.0.to_le_bytes());
        for x in &vector {
            entry.extend_from_slice(&x.to_le_bytes());
        }
        put(&entry)?;
    }
    out.write_all(&crc.finalize().to_le_bytes())
}

/// What a journal replay reached.
struct Replay {
    /// The generation the graph is at after it.
    generation: u64,
    /// Bytes of the journal that hold applied (or already snapshotted) records.
    valid_len: u64,
    /// The journal file's length.
    file_len: u64,
    /// Vectors added or removed by the applied records.
    journalled: usize,
}

/// Applies the journal's records after `from` to `index`, in order, up to `target`.
fn replay(path: &Path, index: &Index, from: u64, target: u64, dim: usize) -> Result<Replay> {
    let mut out = Replay {
        generation: from,
        valid_len: 0,
        file_len: 0,
        journalled: 0,
    };
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(Error::io(path, e)),
    };
    out.file_len = file.metadata().map_err(|e| Error::io(path, e))?.len();
    let mut reader = std::io::BufReader::with_capacity(1 << 20, file);
    let mut offset = 0u64;
    loop {
        let mut header = [0u8; HEADER_LEN];
        if reader.read_exact(&mut header).is_err() || header[..4] != RECORD_MAGIC {
            break;
        }
        let u32_at = |i: usize| u32::from_le_bytes(header[i..i + 4].try_into().unwrap_or_default());
        let generation = u64::from_le_bytes(header[4..12].try_into().unwrap_or_default());
        let (n_removed, n_added, record_dim) = (u32_at(12) as u64, u32_at(16) as u64, u32_at(20));
        if record_dim as usize != dim {
            break;
        }
        let body_len = n_removed * 8 + n_added * (8 + 4 * dim as u64) + 4;
        // A length beyond what is left of the file is a torn record (or garbage).
        if offset + HEADER_LEN as u64 + body_len > out.file_len {
            break;
        }
        let mut body = vec![0u8; body_len as usize];
        if reader.read_exact(&mut body).is_err() {
            break;
        }
        let (payload, crc) = body.split_at(body.len() - 4);
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(&header);
        hasher.update(payload);
        if hasher.finalize().to_le_bytes() != crc {
            break;
        }
        let end = offset + HEADER_LEN as u64 + body_len;
        if generation <= out.generation {
            // Already in the snapshot (a kill between snapshot and truncation).
            out.valid_len = end;
            offset = end;
            continue;
        }
        if generation != out.generation + 1 || generation > target {
            // A gap, or a change SQLite never committed.
            break;
        }
        let removed = payload[..n_removed as usize * 8]
            .chunks_exact(8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default()));
        for id in removed {
            index.remove(id).map_err(|e| usearch_err("remove", e))?;
        }
        let added = &payload[n_removed as usize * 8..];
        reserve(index, n_added as usize)?;
        let vectors: Vec<(u64, Vec<f32>)> = added
            .chunks_exact(8 + 4 * dim)
            .map(|entry| {
                let id = u64::from_le_bytes(entry[..8].try_into().unwrap_or_default());
                let v = entry[8..]
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes(b.try_into().unwrap_or_default()))
                    .collect();
                (id, v)
            })
            .collect();
        add_all(
            index,
            vectors.iter().map(|(id, v)| (*id, v.as_slice())).collect(),
        )?;
        out.generation = generation;
        out.journalled += (n_removed + n_added) as usize;
        out.valid_len = end;
        offset = end;
    }
    Ok(out)
}

fn reserve(index: &Index, extra: usize) -> Result<()> {
    let needed = index.size() + extra;
    if needed > index.capacity() {
        // Grow geometrically so a long ingest doesn't reallocate the graph every batch.
        let target = needed.max(index.capacity() * 2).max(1024);
        index
            .reserve_capacity_and_threads(target, threads())
            .map_err(|e| usearch_err("reserve", e))?;
    }
    Ok(())
}

fn utf8(path: &Path) -> Result<&str> {
    path.to_str()
        .ok_or_else(|| Error::Corrupt(format!("{}: path is not UTF-8", path.display())))
}

/// Reads the snapshot at `path` into `index`, with the configured search breadth and room
/// for [`threads`] writers.
fn load(index: &Index, path: &Path, ef_search: usize) -> Result<()> {
    index
        .load(utf8(path)?)
        .map_err(|e| usearch_err(&format!("load {}", path.display()), e))?;
    // Loading restores the saved search setting; the configured one wins.
    index.change_expansion_search(ef_search);
    // A loaded graph has room for one writing thread; `add_all` uses more.
    index
        .reserve_capacity_and_threads(index.capacity().max(1024), threads())
        .map_err(|e| usearch_err("reserve", e))
}

/// Threads that insert into the graph at once: one per core.
fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Below this many vectors one thread inserts them; above, [`threads`] share the work
/// (usearch's graph takes concurrent inserts once that many threads are reserved).
const PARALLEL_ADD_MIN: usize = 256;

/// Vectors taken from the caller and inserted at a time: the most a write holds of vectors
/// it reads from disk.
const ADD_SLICE: usize = 8192;

/// Inserts `items` into the graph (capacity already reserved), on every core. Building
/// the graph is ~75% of writing a large index, nearly all of it distance computations.
///
/// usearch's concurrent `add` can strand a node: stored, but with no edge that a search
/// follows to it, so no query ever finds it (unum-cloud/USearch#735, open in 2.26: a node
/// becomes reachable through its upper-level links while its level-0 list is still empty,
/// and a concurrent insert that descends onto it attaches by one edge that pruning then
/// drops). Which nodes strand depends on how the threads interleave, so it differs from
/// run to run and from machine to machine; a page named exactly by a query fell out of a
/// hybrid search's top 5 that way. Every node inserted in parallel is therefore looked up
/// by its own vector afterwards, and one the search does not return is removed and
/// inserted again alone, as a serial insert links it ([`relink_stranded`]).
fn add_all(index: &Index, items: Vec<(u64, &[f32])>) -> Result<()> {
    add_with(index, items, threads())
}

/// [`add_all`] with `n` inserting threads.
fn add_with(index: &Index, items: Vec<(u64, &[f32])>, n: usize) -> Result<()> {
    if items.len() < PARALLEL_ADD_MIN || n == 1 {
        for (id, v) in items {
            index.add(id, v).map_err(|e| usearch_err("add", e))?;
        }
        return Ok(());
    }
    insert_parallel(index, &items, n)?;
    let relinked = relink_stranded(index, &items, n)?;
    if relinked > 0 {
        tracing::debug!(
            relinked,
            of = items.len(),
            "dense: re-inserted stranded nodes"
        );
    }
    Ok(())
}

/// `f` over `items` split into `n` parts, one thread each; the parts' results in order.
fn on_threads<'a, T: Sync, R: Send>(
    items: &'a [T],
    n: usize,
    what: &str,
    f: impl Fn(&'a [T]) -> Result<R> + Sync,
) -> Result<Vec<R>> {
    let per = items.len().div_ceil(n).max(1);
    std::thread::scope(|scope| {
        let workers: Vec<_> = items
            .chunks(per)
            .map(|part| scope.spawn(|| f(part)))
            .collect();
        workers
            .into_iter()
            .map(|w| {
                w.join()
                    .map_err(|_| usearch_err(what, "a worker thread panicked"))?
            })
            .collect()
    })
}

/// `items` inserted by `n` threads at once (no check: see [`add_all`]).
fn insert_parallel(index: &Index, items: &[(u64, &[f32])], n: usize) -> Result<()> {
    on_threads(items, n, "add", |part| {
        for &(id, v) in part {
            index.add(id, v).map_err(|e| usearch_err("add", e))?;
        }
        Ok(())
    })?;
    Ok(())
}

/// How many results a node's search for its own vector may hold before it counts as not
/// found: room for a few exact duplicates ranked ahead of it.
const SELF_SEARCH_K: usize = 8;

/// Rounds of re-inserting stranded nodes. A serial insert links a node in every case the
/// tests have seen; the bound keeps a pathological graph from looping.
const RELINK_ROUNDS: usize = 3;

/// The items of `items` that a search for their own vector does not return, searched by
/// `n` threads (searches share the graph safely).
fn stranded<'a>(
    index: &Index,
    items: &[(u64, &'a [f32])],
    n: usize,
) -> Result<Vec<(u64, &'a [f32])>> {
    let parts = on_threads(items, n, "search", |part| {
        let mut lost = Vec::new();
        for &(id, v) in part {
            let found = index
                .search(v, SELF_SEARCH_K)
                .map_err(|e| usearch_err("search", e))?;
            if !found.keys.contains(&id) {
                lost.push((id, v));
            }
        }
        Ok(lost)
    })?;
    Ok(parts.into_iter().flatten().collect())
}

/// Re-inserts, one at a time, the nodes of `items` that no search reaches; returns how
/// many were re-inserted (0 for a well-linked graph). After each round every item is
/// searched for again, not only the re-inserted ones: removing a node takes its edges
/// with it, and a node another search reached only through them is stranded in turn (CI
/// once found one such node out of 2,000 after a round that checked the re-inserted ones
/// alone).
fn relink_stranded(index: &Index, items: &[(u64, &[f32])], n: usize) -> Result<usize> {
    let mut lost = stranded(index, items, n)?;
    let mut relinked = 0;
    for _ in 0..RELINK_ROUNDS {
        if lost.is_empty() {
            break;
        }
        for &(id, v) in &lost {
            index.remove(id).map_err(|e| usearch_err("remove", e))?;
            index.add(id, v).map_err(|e| usearch_err("add", e))?;
        }
        relinked += lost.len();
        lost = stranded(index, items, n)?;
    }
    Ok(relinked)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> IndexConfig {
        IndexConfig::new("test", 4)
    }

    fn v(i: usize) -> Vec<f32> {
        let x = i as f32;
        vec![x.sin(), x.cos(), (x * 0.37).sin(), 1.0]
    }

    #[test]
    fn the_journal_is_folded_into_a_snapshot_past_a_quarter_of_the_graph() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dense.usearch");
        let dense = Dense::open(&path, &config(), 0, true).unwrap();
        let batch = 5000;
        let vectors: Vec<Vec<f32>> = (0..4 * batch).map(v).collect();
        for b in 0..4 {
            let added =
                (b * batch..(b + 1) * batch).map(|i| (ChunkId(i as u64), vectors[i].as_slice()));
            dense.apply(&[], added, b as u64 + 1).unwrap();
            let journal = std::fs::metadata(path.with_extension("journal"))
                .unwrap()
                .len();
            if (b + 1) * batch < SNAPSHOT_MIN {
                // Below the threshold: only the journal grows, the snapshot is not written.
                assert!(journal > 0 && !path.exists());
            } else {
                assert_eq!(journal, 0);
                assert!(path.exists());
            }
        }
        // A removal is journalled too; a reopen replays it onto the snapshot.
        dense
            .apply(&[ChunkId(7)], std::iter::empty::<(ChunkId, &[f32])>(), 5)
            .unwrap();
        std::mem::forget(dense); // a kill: no snapshot on close
        let reopened = Dense::open(&path, &config(), 5, true).unwrap();
        assert_eq!(reopened.generation(), Some(5));
        assert_eq!(reopened.len(), 4 * batch - 1);
        // Reading up to an older target stops before the removal (no close of the writer:
        // it would fold the removal into the snapshot).
        std::mem::forget(reopened);
        let reader = Dense::open(&path, &config(), 4, false).unwrap();
        assert_eq!(reader.generation(), Some(4));
    }

    #[test]
    fn one_write_past_the_threshold_is_written_as_a_snapshot_without_a_record() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dense.usearch");
        let journal = path.with_extension("journal");
        let dense = Dense::open(&path, &config(), 0, true).unwrap();
        let small: Vec<Vec<f32>> = (0..10).map(v).collect();
        dense
            .apply(
                &[],
                small
                    .iter()
                    .enumerate()
                    .map(|(i, x)| (ChunkId(i as u64), x.as_slice())),
                1,
            )
            .unwrap();
        assert!(std::fs::metadata(&journal).unwrap().len() > 0);
        let n = SNAPSHOT_MIN + 10;
        let large: Vec<Vec<f32>> = (10..10 + n).map(v).collect();
        dense
            .apply(
                &[ChunkId(3)],
                large
                    .iter()
                    .enumerate()
                    .map(|(i, x)| (ChunkId(10 + i as u64), x.as_slice())),
                2,
            )
            .unwrap();
        // The journal is emptied by the snapshot, and the large write never went to it.
        assert_eq!(std::fs::metadata(&journal).unwrap().len(), 0);
        std::mem::forget(dense); // a kill: no snapshot on close
        let reopened = Dense::open(&path, &config(), 2, true).unwrap();
        assert_eq!(reopened.generation(), Some(2));
        assert_eq!(reopened.len(), 10 - 1 + n);
        // SQLite one generation behind (killed before its commit): the snapshot is ahead,
        // so the engine reports a generation SQLite does not have and is rebuilt.
        std::mem::forget(reopened);
        let ahead = Dense::open(&path, &config(), 1, true).unwrap();
        assert_ne!(ahead.generation(), Some(1));
    }

    fn nearest(dense: &Dense, i: usize) -> ChunkId {
        dense.search(&v(i), 1, None).unwrap()[0].0
    }

    #[test]
    fn a_snapshot_with_nothing_to_replay_is_mapped_and_read_into_memory_before_a_write() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dense.usearch");
        let vectors: Vec<Vec<f32>> = (0..200).map(v).collect();
        let first = |range: std::ops::Range<usize>| {
            range
                .map(|i| (ChunkId(i as u64), vectors[i].clone()))
                .collect::<Vec<_>>()
        };
        let dense = Dense::open(&path, &config(), 0, true).unwrap();
        assert!(!dense.mapped.load(Ordering::Acquire), "nothing to map yet");
        dense.apply(&[], first(0..100).into_iter(), 1).unwrap();
        drop(dense); // the writer closes: its journal goes into the snapshot

        // A reader and a writer both map the snapshot, and search it as loaded.
        let reader = Dense::open(&path, &config(), 1, false).unwrap();
        assert!(reader.mapped.load(Ordering::Acquire));
        assert_eq!((reader.generation(), reader.len()), (Some(1), 100));
        assert_eq!(nearest(&reader, 42), ChunkId(42));
        let writer = Dense::open(&path, &config(), 1, true).unwrap();
        assert!(writer.mapped.load(Ordering::Acquire));

        // The writer's first change reads the graph into memory; the change is kept.
        writer
            .apply(&[ChunkId(42)], first(100..150).into_iter(), 2)
            .unwrap();
        assert!(!writer.mapped.load(Ordering::Acquire));
        assert_eq!(writer.len(), 149);
        assert_eq!(nearest(&writer, 120), ChunkId(120));
        assert_ne!(nearest(&writer, 42), ChunkId(42));
        // The reader's mapping keeps the snapshot it opened, whatever the writer saves.
        drop(writer);
        assert_eq!((reader.len(), nearest(&reader, 42)), (100, ChunkId(42)));

        // A journal with records is replayed, so that open reads the file instead.
        let writer = Dense::open(&path, &config(), 2, true).unwrap();
        writer.apply(&[], first(150..160).into_iter(), 3).unwrap();
        std::mem::forget(writer); // a kill: the record stays in the journal
        let replayed = Dense::open(&path, &config(), 3, false).unwrap();
        assert!(!replayed.mapped.load(Ordering::Acquire));
        assert_eq!((replayed.generation(), replayed.len()), (Some(3), 159));
    }

    /// The stranded nodes of usearch's concurrent insert (see `add_all`) are found and
    /// relinked: every vector of graphs built by 8 threads (more contention than the
    /// machine's cores, so the interleavings vary) is returned by a search for itself.
    /// Measured while fixing it (2,000 random 64-dimensional vectors, 20 builds): serial
    /// builds stranded none, 2 threads 1 to 5 nodes a build, 8 threads 5 to 47.
    #[test]
    fn every_vector_inserted_in_parallel_is_found_by_its_own_search() {
        let dim = 64;
        let mut seed = 42u64;
        let mut rnd = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 33) as f32 / (1u64 << 31) as f32) - 0.5
        };
        let vectors: Vec<Vec<f32>> = (0..2000)
            .map(|_| (0..dim).map(|_| rnd()).collect())
            .collect();
        let items: Vec<(u64, &[f32])> = vectors
            .iter()
            .enumerate()
            .map(|(i, v)| (i as u64, v.as_slice()))
            .collect();
        let options = IndexOptions {
            dimensions: dim,
            metric: MetricKind::Cos,
            quantization: ScalarKind::F32,
            connectivity: 16,
            expansion_add: 128,
            expansion_search: 128,
            multi: false,
        };
        for _ in 0..3 {
            let index = Index::new(&options).unwrap();
            index.reserve_capacity_and_threads(4096, 8).unwrap();
            add_with(&index, items.clone(), 8).unwrap();
            assert_eq!(index.size(), items.len());
            let lost: Vec<u64> = stranded(&index, &items, 2)
                .unwrap()
                .iter()
                .map(|(id, _)| *id)
                .collect();
            assert!(lost.is_empty(), "no search reaches {lost:?}");
        }
    }
}
