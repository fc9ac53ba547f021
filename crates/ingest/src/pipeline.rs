//! The ingest run: find files, parse, chunk, embed in batches, write to the store.

use crate::chunk::Chunker;
use crate::parse::{self, CorpusMode, ParsedDocument};
use crate::{Error, Result};
use globset::{Glob, GlobSet, GlobSetBuilder};
use metarag_core::{CollectionId, DocFormat, DocId, Document, DocumentUpdate, Embedder, Store};
use serde::Serialize;
use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;
use tokio::sync::mpsc::UnboundedSender;

/// Most text one document may yield (256 MiB, some 60 million tokens: days of embedding on
/// a laptop). More is a decompression or parser blow-up, and is refused.
pub const MAX_TEXT_BYTES: usize = 256 << 20;

/// Refuses a document whose text is over `limit` bytes.
fn text_within(doc: &ParsedDocument, limit: usize) -> Result<()> {
    if doc.text.len() > limit {
        return Err(Error::TextTooLarge {
            path: doc.source.clone(),
            size: doc.text.len(),
            limit,
        });
    }
    Ok(())
}

/// Longest title kept, in characters. A title is embedded with every chunk of its
/// document, so a runaway one (a Markdown file whose first line is a table starting with
/// `#`, an HTML `<title>` holding a page) would leave no room for text and refuse the whole
/// file; it is cut at a word boundary instead.
pub const MAX_TITLE_CHARS: usize = 200;

/// The title cut to at most `max` characters, at the last space before the limit when
/// there is one, with an ellipsis; a title within the limit is returned as it is.
pub fn cap_title(title: &str, max: usize) -> String {
    if title.chars().count() <= max {
        return title.to_string();
    }
    let end = title
        .char_indices()
        .nth(max.saturating_sub(1))
        .map_or(title.len(), |(i, _)| i);
    let cut = &title[..end];
    let cut = match cut.rfind(char::is_whitespace) {
        Some(space) if space > end / 2 => &cut[..space],
        _ => cut,
    };
    format!("{}…", cut.trim_end())
}

/// Settings of an ingest run.
#[derive(Debug, Clone)]
pub struct IngestOptions {
    /// Only files matching one of these globs (relative to the directory walked); empty
    /// means every supported file.
    pub include: Vec<String>,
    /// Skip files matching any of these globs.
    pub exclude: Vec<String>,
    /// Files above this size are refused.
    pub max_file_bytes: u64,
    /// Parse every file with this parser instead of guessing from the extension.
    pub format: Option<DocFormat>,
    /// How JSON records are read.
    pub corpus: CorpusMode,
    /// Chunks embedded and written per batch: larger batches amortise index commits,
    /// smaller ones lose less work to an interruption.
    pub batch_chunks: usize,
    /// Metadata set on every document of this ingest, over the keys the source gives
    /// (`metarag ingest --meta team=ops`).
    pub metadata: serde_json::Map<String, serde_json::Value>,
    /// The collection every document of this ingest goes into.
    pub collection: CollectionId,
    /// Where the untrusted parsers run: a binary sets [`parse::Isolation::Process`] with
    /// its own parse worker; the default is a thread of this process.
    pub isolation: parse::Isolation,
}

impl Default for IngestOptions {
    fn default() -> Self {
        IngestOptions {
            include: Vec::new(),
            exclude: Vec::new(),
            max_file_bytes: 64 << 20,
            format: None,
            corpus: CorpusMode::Auto,
            batch_chunks: 1024,
            metadata: serde_json::Map::new(),
            collection: CollectionId::default(),
            isolation: parse::Isolation::Thread,
        }
    }
}

/// A file received over the network: its name (a label only, never a path on disk) and
/// its bytes.
#[derive(Debug, Clone)]
pub struct Upload {
    /// The file name as sent, which picks the parser by extension; it must be a plain name
    /// (see [`Upload::new`]).
    pub name: String,
    /// The content.
    pub bytes: Vec<u8>,
}

impl Upload {
    /// An upload named `name`, refused unless the name is a plain file name: no path
    /// separators, no `..`, no control characters, at most 255 bytes. An uploaded name
    /// never becomes a path, but a name that looks like one is a client mistake or a
    /// probe, and says so.
    pub fn new(name: &str, bytes: Vec<u8>) -> Result<Upload> {
        let bad = |reason: &str| Error::BadName {
            name: name.chars().take(80).collect(),
            reason: reason.to_string(),
        };
        if name.trim().is_empty() {
            return Err(bad("the file name is empty"));
        }
        if name.len() > 255 {
            return Err(bad("the file name is longer than 255 bytes"));
        }
        if name.contains(['/', '\\']) {
            return Err(bad(
                "path separators are not allowed; send the file name alone",
            ));
        }
        if name == "." || name == ".." || name.contains("..") {
            return Err(bad("`..` is not allowed in a file name"));
        }
        if name.chars().any(char::is_control) {
            return Err(bad("control characters are not allowed"));
        }
        Ok(Upload {
            name: name.to_string(),
            bytes,
        })
    }
}

/// One input of a run, owned so that the reading thread can hold it.
enum Source {
    /// A file on disk and its size when the run started.
    File(PathBuf, u64),
    /// An uploaded file.
    Upload(Upload),
}

impl Source {
    /// What errors and progress name it by.
    fn label(&self) -> &Path {
        match self {
            Source::File(p, _) => p,
            Source::Upload(u) => Path::new(&u.name),
        }
    }

    /// Its size in bytes: the unit progress is counted in.
    fn size(&self) -> u64 {
        match self {
            Source::File(_, size) => *size,
            Source::Upload(u) => u.bytes.len() as u64,
        }
    }
}

/// What happened to one input file.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq, schemars::JsonSchema)]
pub struct FileOutcome {
    /// New documents.
    pub added: usize,
    /// Changed documents, replaced.
    pub updated: usize,
    /// Documents whose content hash was unchanged.
    pub unchanged: usize,
    /// Records or the file that failed.
    pub failed: usize,
}

/// Progress events for a front end.
#[derive(Debug, Clone)]
pub enum IngestEvent<'a> {
    /// The files to read are known.
    Started {
        /// How many.
        files: usize,
        /// Their size in bytes. The `bytes` of the `File` and `Batch` events that follow
        /// add up to it by the end of the run, so a front end can show progress and an
        /// ETA in bytes whether the input is one large JSONL file or many small ones.
        bytes: u64,
    },
    /// A file was read, parsed and chunked (its documents may still be waiting for the
    /// embedder).
    File {
        /// The file.
        path: &'a Path,
        /// Its documents.
        outcome: &'a FileOutcome,
        /// The file's bytes that no document still to be written carries: markup,
        /// unchanged and failed documents, the whole file when nothing of it is new.
        bytes: u64,
    },
    /// Part of a batch was embedded (sent for each slice of `batch_chunks` chunks, so a
    /// document of many thousand chunks shows progress before it is written).
    Embedded {
        /// Chunks of the batch embedded so far.
        done: usize,
        /// Chunks in the batch.
        of: usize,
    },
    /// A batch was embedded and written.
    Batch {
        /// Chunks in the batch.
        chunks: usize,
        /// Their tokens.
        tokens: usize,
        /// The input bytes its documents came from.
        bytes: u64,
    },
    /// An error that skips a file or record; the run goes on.
    Failed(&'a Failure),
}

/// A file or record that could not be ingested.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, schemars::JsonSchema)]
pub struct Failure {
    /// The file (or `file:line`).
    pub source: String,
    /// Why.
    pub error: String,
}

/// Totals of an ingest run.
#[derive(Debug, Clone, Default, Serialize, schemars::JsonSchema)]
pub struct IngestReport {
    /// Files read.
    pub files: usize,
    /// New documents.
    pub added: usize,
    /// Replaced documents.
    pub updated: usize,
    /// Unchanged documents (no-op).
    pub unchanged: usize,
    /// Chunks written.
    pub chunks: usize,
    /// Tokens embedded.
    pub tokens: usize,
    /// Seconds spent embedding.
    pub embed_seconds: f64,
    /// Seconds for the whole run.
    pub seconds: f64,
    /// Files and records that failed.
    pub failures: Vec<Failure>,
}

/// Finds the files under `paths`: files given directly are always taken (and fail later if
/// unsupported); directories are walked recursively for supported files, skipping hidden
/// entries, filtered by the include/exclude globs.
pub fn discover(
    paths: &[PathBuf],
    options: &IngestOptions,
) -> Result<(Vec<PathBuf>, Vec<Failure>)> {
    let include = globs(&options.include)?;
    let exclude = globs(&options.exclude)?;
    let mut files = Vec::new();
    let mut failures = Vec::new();
    for root in paths {
        if root.is_file() {
            files.push(root.clone());
            continue;
        }
        if !root.exists() {
            failures.push(Failure {
                source: root.display().to_string(),
                error: "no such file or directory".into(),
            });
            continue;
        }
        if !root.is_dir() {
            // A FIFO, socket or device named on the command line: reading one could block
            // for ever or never end (/dev/zero). Inside a folder they are passed over, as
            // the walk takes regular files only.
            failures.push(Failure {
                source: root.display().to_string(),
                error: "not a regular file or a directory".into(),
            });
            continue;
        }
        let walker = walkdir::WalkDir::new(root)
            .sort_by_file_name()
            .into_iter()
            .filter_entry(|e| {
                e.depth() == 0 || !e.file_name().to_str().is_some_and(|n| n.starts_with('.'))
            });
        for entry in walker {
            let entry = match entry {
                Ok(e) => e,
                Err(e) => {
                    failures.push(Failure {
                        source: e.path().unwrap_or(root).display().to_string(),
                        error: e.to_string(),
                    });
                    continue;
                }
            };
            if !entry.file_type().is_file() {
                continue;
            }
            let rel = entry.path().strip_prefix(root).unwrap_or(entry.path());
            if options.format.is_none() && parse::detect(entry.path()).is_none() {
                continue;
            }
            if include.as_ref().is_some_and(|g| !g.is_match(rel)) {
                continue;
            }
            if exclude.as_ref().is_some_and(|g| g.is_match(rel)) {
                continue;
            }
            files.push(entry.into_path());
        }
    }
    Ok((files, failures))
}

fn globs(patterns: &[String]) -> Result<Option<GlobSet>> {
    if patterns.is_empty() {
        return Ok(None);
    }
    let mut b = GlobSetBuilder::new();
    for p in patterns {
        b.add(Glob::new(p).map_err(|e| Error::Glob {
            pattern: p.clone(),
            reason: e.to_string(),
        })?);
    }
    b.build().map(Some).map_err(|e| Error::Glob {
        pattern: patterns.join(","),
        reason: e.to_string(),
    })
}

/// Runs ingestion into a store with an embedder.
pub struct Ingester<'a, E, S> {
    chunker: &'a Chunker,
    embedder: &'a E,
    store: &'a S,
    options: IngestOptions,
}

struct Pending {
    doc: ParsedDocument,
    chunks: Vec<metarag_core::ChunkDraft>,
    content_hash: String,
    /// The input bytes this document accounts for in progress.
    bytes: u64,
}

/// A new or changed document after [`Reader::prepare`]: its chunks to embed.
struct Ready {
    doc: ParsedDocument,
    chunks: Vec<metarag_core::ChunkDraft>,
    content_hash: String,
    /// Whether it replaces a stored version.
    replaces: bool,
}

/// What the reading thread hands the embedding side, in input order.
enum Prepared {
    /// A document to embed, holding `reserved` chunks of the read-ahead allowance.
    Doc { pending: Pending, reserved: usize },
    /// A file or record that failed; the run goes on.
    Failed(Failure),
    /// An input was read to its end.
    Done {
        path: PathBuf,
        outcome: FileOutcome,
        bytes: u64,
    },
    /// Every input was read. A channel that closes without it means the thread died.
    End,
}

/// How far the reading thread may run ahead of the embedder, in chunks: one batch, so the
/// next batch is ready when the embedder asks for it, and memory holds at most one batch
/// more than a sequential run. A document larger than the whole allowance goes alone.
struct ReadAhead {
    limit: usize,
    /// Chunks sent and not yet taken, and whether the embedding side has stopped.
    state: Mutex<(usize, bool)>,
    freed: Condvar,
}

impl ReadAhead {
    fn new(limit: usize) -> Self {
        ReadAhead {
            limit: limit.max(1),
            state: Mutex::new((0, false)),
            freed: Condvar::new(),
        }
    }

    /// Waits until `chunks` more fit, and returns the allowance taken (at most the
    /// limit); `None` once the embedding side has stopped.
    fn reserve(&self, chunks: usize) -> Option<usize> {
        let n = chunks.min(self.limit);
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        while !state.1 && state.0 > 0 && state.0 + n > self.limit {
            state = self.freed.wait(state).unwrap_or_else(|p| p.into_inner());
        }
        if state.1 {
            return None;
        }
        state.0 += n;
        Some(n)
    }

    /// The embedding side took a document: its allowance is free again.
    fn release(&self, reserved: usize) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.0 = state.0.saturating_sub(reserved);
        self.freed.notify_all();
    }

    /// The embedding side stopped: the reader stops waiting, and stops.
    fn close(&self) {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).1 = true;
        self.freed.notify_all();
    }
}

/// Closes the read-ahead when the run ends, however it ends (an error, or the run's
/// future dropped by a caller that went away), so the reading thread does not wait on.
struct CloseOnDrop(Arc<ReadAhead>);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// Reads, parses and chunks the inputs on a thread of its own, one document at a time, so
/// that the embedder finds its next batch ready: parsing a PDF or an HTML page can cost as
/// much as embedding it.
struct Reader {
    chunker: Chunker,
    options: IngestOptions,
    /// Content hashes of the documents already stored: unchanged ones are skipped.
    /// Each stored document's content hash and collection.
    existing: HashMap<DocId, (String, CollectionId)>,
    fingerprint: String,
    /// The run's parsers: its worker process, when PDF, DOCX and HTML are isolated.
    parsers: parse::Parsers,
}

/// A document of a batch, embedded: its chunks with their vectors, or the stage they were
/// handed to the store under.
struct Embedded {
    pending: Pending,
    /// Chunks in the document.
    count: usize,
    chunks: Vec<(metarag_core::ChunkDraft, Vec<f32>)>,
    staged: Option<metarag_core::StageId>,
}

/// A batch's write to the store, running while the next batch is embedded; it yields the
/// batch's chunks and tokens for the report.
type Write<'s> = Pin<Box<dyn Future<Output = Result<(usize, usize, u64)>> + Send + 's>>;

impl Reader {
    /// Reads every input in order and sends what it finds; stops early when the embedding
    /// side has gone.
    fn run(self, sources: Vec<Source>, tx: &UnboundedSender<Prepared>, ahead: &ReadAhead) {
        for source in sources {
            if !self.input(source, tx, ahead) {
                return;
            }
        }
        let _ = tx.send(Prepared::End);
    }

    /// Reads one input and sends its documents, its failures and its outcome; false once
    /// the embedding side has gone.
    fn input(&self, source: Source, tx: &UnboundedSender<Prepared>, ahead: &ReadAhead) -> bool {
        let path = source.label().to_path_buf();
        let size = source.size();
        let mut outcome = FileOutcome::default();
        // Bytes of the input carried by the documents sent: a record's own bytes, never
        // more than the input's size in all.
        let mut carried = 0u64;
        let fail = |outcome: &mut FileOutcome, source: String, e: &Error| {
            outcome.failed += 1;
            tx.send(Prepared::Failed(Failure {
                source,
                error: e.to_string(),
            }))
            .is_ok()
        };
        let read = self.read(&source);
        // An upload's bytes are not needed once parsed.
        drop(source);
        match read {
            Err(e) => {
                if !fail(&mut outcome, path.display().to_string(), &e) {
                    return false;
                }
            }
            Ok((docs, errors)) => {
                for e in &errors {
                    if !fail(&mut outcome, path.display().to_string(), e) {
                        return false;
                    }
                }
                for doc in docs {
                    let source = doc.source.clone();
                    let ready = match self.prepare(doc) {
                        Err(e) => {
                            if !fail(&mut outcome, source, &e) {
                                return false;
                            }
                            continue;
                        }
                        Ok(None) => {
                            outcome.unchanged += 1;
                            continue;
                        }
                        Ok(Some(ready)) => ready,
                    };
                    if ready.replaces {
                        outcome.updated += 1;
                    } else {
                        outcome.added += 1;
                    }
                    let Some(reserved) = ahead.reserve(ready.chunks.len()) else {
                        return false;
                    };
                    let bytes = ready.doc.bytes.min(size - carried);
                    carried += bytes;
                    let pending = Pending {
                        doc: ready.doc,
                        chunks: ready.chunks,
                        content_hash: ready.content_hash,
                        bytes,
                    };
                    if tx.send(Prepared::Doc { pending, reserved }).is_err() {
                        return false;
                    }
                }
            }
        }
        tx.send(Prepared::Done {
            path,
            outcome,
            bytes: size - carried,
        })
        .is_ok()
    }

    /// One parsed document made ready to embed: its title capped, its text size checked,
    /// the ingest's metadata laid over its own, its content hash compared with the stored
    /// one, and, when it is new or changed, chunked; `None` when it is stored unchanged.
    fn prepare(&self, mut doc: ParsedDocument) -> Result<Option<Ready>> {
        doc.title = cap_title(&doc.title, MAX_TITLE_CHARS);
        text_within(&doc, MAX_TEXT_BYTES)?;
        doc.metadata.extend(self.options.metadata.clone());
        // Metadata is part of what is stored: other metadata over the same bytes is a
        // change. (Left out when empty, so indexes written before metadata existed stay
        // unchanged.)
        let meta = if doc.metadata.is_empty() {
            String::new()
        } else {
            format!("|{}", serde_json::Value::Object(doc.metadata.clone()))
        };
        let content_hash =
            blake3::hash(format!("{}|{}{meta}", doc.raw_hash, self.fingerprint).as_bytes())
                .to_hex()
                .to_string();
        let previous = self.existing.get(&doc.id);
        if let Some((_, held)) = previous
            && *held != self.options.collection
        {
            return Err(Error::OtherCollection {
                path: doc.source,
                id: doc.id.to_string(),
                held: held.to_string(),
                wanted: self.options.collection.to_string(),
            });
        }
        let previous = previous.map(|(hash, _)| hash);
        if previous == Some(&content_hash) {
            return Ok(None);
        }
        let replaces = previous.is_some();
        let chunks = self.chunker.chunk(&doc)?;
        if chunks.is_empty() {
            return Err(Error::Empty { path: doc.source });
        }
        Ok(Some(Ready {
            doc,
            chunks,
            content_hash,
            replaces,
        }))
    }

    /// Reads and parses one input.
    fn read(&self, input: &Source) -> Result<(Vec<ParsedDocument>, Vec<Error>)> {
        match input {
            Source::File(path, _) => self.read_file(path),
            Source::Upload(u) => {
                let path = Path::new(&u.name);
                let format = self.format_of(path)?;
                self.check_size(path, u.bytes.len() as u64)?;
                // An upload is named by its file name alone, which two teams may share:
                // outside the default collection the name is the collection's.
                let c = &self.options.collection;
                let id = if c.is_default() {
                    DocId::new(format!("upload:{}", u.name))?
                } else {
                    DocId::new(format!("upload:{c}/{}", u.name))?
                };
                self.parsers
                    .parse(path, &id, &u.bytes, format, self.options.corpus)
            }
        }
    }

    fn format_of(&self, path: &Path) -> Result<DocFormat> {
        self.options
            .format
            .or_else(|| parse::detect(path))
            .ok_or_else(|| Error::Unsupported {
                path: path.to_path_buf(),
            })
    }

    fn check_size(&self, path: &Path, size: u64) -> Result<()> {
        if size > self.options.max_file_bytes {
            return Err(Error::TooLarge {
                path: path.to_path_buf(),
                size,
                limit: self.options.max_file_bytes,
            });
        }
        Ok(())
    }

    /// Reads and parses one file.
    fn read_file(&self, path: &Path) -> Result<(Vec<ParsedDocument>, Vec<Error>)> {
        let format = self.format_of(path)?;
        let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
        self.check_size(path, meta.len())?;
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        let canonical = std::fs::canonicalize(path).map_err(|e| Error::io(path, e))?;
        let id = DocId::new(canonical.display().to_string())?;
        self.parsers
            .parse(&canonical, &id, &bytes, format, self.options.corpus)
    }
}

impl<'a, E: Embedder, S: Store> Ingester<'a, E, S> {
    /// An ingester writing into `store`.
    pub fn new(
        chunker: &'a Chunker,
        embedder: &'a E,
        store: &'a S,
        options: IngestOptions,
    ) -> Self {
        Ingester {
            chunker,
            embedder,
            store,
            options,
        }
    }

    /// Identifies the chunking and embedding settings: a document ingested under other
    /// settings counts as changed and is re-chunked.
    fn fingerprint(&self) -> String {
        let s = self.chunker.settings();
        format!(
            "v1|{}|{}|{}",
            self.embedder.model_id(),
            s.max_tokens,
            s.overlap
        )
    }

    /// Ingests the files, reporting progress to `on_event`. Per-file and per-record errors
    /// are collected in the report; an embedder or store failure stops the run (batches
    /// already written stay).
    pub async fn run(
        &self,
        files: &[PathBuf],
        on_event: &(dyn Fn(IngestEvent<'_>) + Sync),
    ) -> Result<IngestReport> {
        // A file that cannot be read counts 0 bytes here and fails when it is read.
        let sources = files
            .iter()
            .map(|p| Source::File(p.clone(), std::fs::metadata(p).map_or(0, |m| m.len())))
            .collect();
        self.run_sources(sources, on_event).await
    }

    /// Ingests uploaded files (the server's): each is parsed from its bytes under its
    /// name, which is a label and never touches the filesystem. Its document id is
    /// `upload:NAME`, so uploading a file of the same name again replaces it.
    pub async fn run_uploads(
        &self,
        uploads: Vec<Upload>,
        on_event: &(dyn Fn(IngestEvent<'_>) + Sync),
    ) -> Result<IngestReport> {
        self.run_sources(uploads.into_iter().map(Source::Upload).collect(), on_event)
            .await
    }

    /// The run: a reading thread parses and chunks the inputs in order ([`Reader`]) while
    /// this task gathers their documents into batches, embeds a batch, and writes it to
    /// the store while the next one is embedded. Documents leave in input order, so a
    /// run's batches are the same as a sequential run's.
    async fn run_sources(
        &self,
        sources: Vec<Source>,
        on_event: &(dyn Fn(IngestEvent<'_>) + Sync),
    ) -> Result<IngestReport> {
        let _span = tracing::info_span!("ingest", files = sources.len()).entered();
        let started = Instant::now();
        let mut report = IngestReport {
            files: sources.len(),
            ..Default::default()
        };
        on_event(IngestEvent::Started {
            files: sources.len(),
            bytes: sources.iter().map(Source::size).sum(),
        });
        let existing: HashMap<DocId, (String, CollectionId)> = self
            .store
            .documents()
            .await?
            .into_iter()
            .map(|d| (d.id, (d.content_hash, d.collection)))
            .collect();
        let batch_chunks = self.options.batch_chunks.max(1);
        let ahead = Arc::new(ReadAhead::new(batch_chunks));
        let _close = CloseOnDrop(ahead.clone());
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let reader = Reader {
            chunker: self.chunker.clone(),
            options: self.options.clone(),
            existing,
            fingerprint: self.fingerprint(),
            parsers: parse::Parsers::new(self.options.isolation.clone()),
        };
        let span = tracing::info_span!("ingest.read");
        let allowance = ahead.clone();
        std::thread::Builder::new()
            .name("ingest-read".into())
            .spawn(move || {
                let _entered = span.enter();
                reader.run(sources, &tx, &allowance);
            })
            .map_err(|e| Error::Reader(format!("could not start: {e}")))?;
        let mut pending: Vec<Pending> = Vec::new();
        let mut pending_chunks = 0;
        // At most one batch is being written while the next is embedded (the two run on
        // blocking threads, so a write no longer leaves the embedder idle).
        let mut writing: Option<Write<'_>> = None;
        let mut finished = false;
        while let Some(message) = rx.recv().await {
            match message {
                Prepared::Doc {
                    pending: doc,
                    reserved,
                } => {
                    ahead.release(reserved);
                    pending_chunks += doc.chunks.len();
                    pending.push(doc);
                    if pending_chunks >= batch_chunks {
                        self.flush(
                            std::mem::take(&mut pending),
                            &mut writing,
                            &mut report,
                            on_event,
                        )
                        .await?;
                        pending_chunks = 0;
                    }
                }
                Prepared::Failed(f) => {
                    on_event(IngestEvent::Failed(&f));
                    report.failures.push(f);
                }
                Prepared::Done {
                    path,
                    outcome,
                    bytes,
                } => {
                    report.added += outcome.added;
                    report.updated += outcome.updated;
                    report.unchanged += outcome.unchanged;
                    on_event(IngestEvent::File {
                        path: &path,
                        outcome: &outcome,
                        bytes,
                    });
                }
                Prepared::End => finished = true,
            }
        }
        if !finished {
            // The batch being written is finished first: what was written stays written.
            if let Some(write) = writing.take() {
                Self::written(write.await?, &mut report, on_event);
            }
            return Err(Error::Reader(
                "stopped before reading every input (a panic, printed above)".into(),
            ));
        }
        self.flush(pending, &mut writing, &mut report, on_event)
            .await?;
        if let Some(write) = writing.take() {
            Self::written(write.await?, &mut report, on_event);
        }
        report.seconds = started.elapsed().as_secs_f64();
        Ok(report)
    }

    /// Embeds a batch while the previous batch's write finishes, then starts the batch's
    /// own write and leaves it in `writing`. The previous write is awaited even when the
    /// embedding fails, so a batch that was being written is written (or fails) before the
    /// run stops.
    async fn flush<'s>(
        &'s self,
        batch: Vec<Pending>,
        writing: &mut Option<Write<'s>>,
        report: &mut IngestReport,
        on_event: &(dyn Fn(IngestEvent<'_>) + Sync),
    ) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let _span = tracing::info_span!("ingest.batch", documents = batch.len()).entered();
        let chunks: usize = batch.iter().map(|p| p.chunks.len()).sum();
        let tokens: usize = batch
            .iter()
            .flat_map(|p| &p.chunks)
            .map(|c| c.token_count as usize)
            .sum();
        let bytes: u64 = batch.iter().map(|p| p.bytes).sum();
        let previous = writing.take();
        let (embedded, written) = tokio::join!(self.embed(batch, chunks, on_event), async {
            match previous {
                Some(write) => Some(write.await),
                None => None,
            }
        });
        if let Some(written) = written {
            Self::written(written?, report, on_event);
        }
        let (embedded, seconds) = embedded?;
        report.embed_seconds += seconds;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        let collection = &self.options.collection;
        let updates: Vec<DocumentUpdate> = embedded
            .into_iter()
            .map(|e| {
                let p = e.pending;
                DocumentUpdate {
                    document: Document {
                        id: p.doc.id,
                        title: p.doc.title,
                        source: p.doc.source,
                        format: p.doc.format,
                        content_hash: p.content_hash,
                        bytes: p.doc.bytes,
                        date: p.doc.date,
                        ingested_at: now,
                        chunk_count: e.count as u32,
                        metadata: p.doc.metadata,
                        collection: collection.clone(),
                        text: Some(p.doc.text),
                    },
                    chunks: e.chunks,
                    staged: e.staged,
                }
            })
            .collect();
        let store = self.store;
        *writing = Some(Box::pin(async move {
            store.apply(updates, Vec::new()).await?;
            Ok((chunks, tokens, bytes))
        }));
        Ok(())
    }

    /// Embeds a batch's chunks, and the seconds it took. A document of more than
    /// `batch_chunks` chunks is handed to the store a slice at a time as it is embedded
    /// ([`Store::stage`]), its chunks and vectors dropped from memory slice by slice: one
    /// 60 MB file (150k chunks) would otherwise hold every chunk and vector until its
    /// write (docs/results/reliability.md). The other documents' chunks are embedded a
    /// slice at a time across documents and kept for the write.
    async fn embed(
        &self,
        batch: Vec<Pending>,
        chunks: usize,
        on_event: &(dyn Fn(IngestEvent<'_>) + Sync),
    ) -> Result<(Vec<Embedded>, f64)> {
        let t = Instant::now();
        let step = self.options.batch_chunks.max(1);
        let mut done = 0;
        let mut progress = |n: usize| {
            done += n;
            if chunks > step {
                on_event(IngestEvent::Embedded { done, of: chunks });
            }
        };
        let (large, small): (Vec<Pending>, Vec<Pending>) =
            batch.into_iter().partition(|p| p.chunks.len() > step);
        // Small documents: the embedder's inputs are made a slice at a time across them.
        let mut vectors = Vec::with_capacity(small.iter().map(|p| p.chunks.len()).sum());
        {
            let mut flat = small.iter().flat_map(|p| {
                p.chunks
                    .iter()
                    .map(move |c| c.embedding_input(&p.doc.title))
            });
            loop {
                let inputs: Vec<String> = flat.by_ref().take(step).collect();
                if inputs.is_empty() {
                    break;
                }
                vectors.extend(self.embedder.embed(&inputs).await?);
                progress(inputs.len());
            }
        }
        let mut vectors = vectors.into_iter();
        let mut out: Vec<Embedded> = small
            .into_iter()
            .map(|mut p| {
                let drafts = std::mem::take(&mut p.chunks);
                let chunks: Vec<_> = drafts
                    .into_iter()
                    .map(|c| (c, vectors.next().unwrap_or_default()))
                    .collect();
                Embedded {
                    count: chunks.len(),
                    chunks,
                    staged: None,
                    pending: p,
                }
            })
            .collect();
        for mut p in large {
            let count = p.chunks.len();
            let mut drafts = std::mem::take(&mut p.chunks).into_iter();
            let mut stage = None;
            loop {
                let slice: Vec<_> = drafts.by_ref().take(step).collect();
                if slice.is_empty() {
                    break;
                }
                let inputs: Vec<String> = slice
                    .iter()
                    .map(|c| c.embedding_input(&p.doc.title))
                    .collect();
                let embedded = self.embedder.embed(&inputs).await?;
                drop(inputs);
                let n = slice.len();
                let rows = slice.into_iter().zip(embedded).collect();
                stage = Some(self.store.stage(stage, &p.doc.id, rows).await?);
                progress(n);
            }
            out.push(Embedded {
                count,
                chunks: Vec::new(),
                staged: stage,
                pending: p,
            });
        }
        Ok((out, t.elapsed().as_secs_f64()))
    }

    /// A batch's write finished: counted, and reported.
    fn written(
        (chunks, tokens, bytes): (usize, usize, u64),
        report: &mut IngestReport,
        on_event: &(dyn Fn(IngestEvent<'_>) + Sync),
    ) {
        report.chunks += chunks;
        report.tokens += tokens;
        on_event(IngestEvent::Batch {
            chunks,
            tokens,
            bytes,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_read_ahead_waits_for_room_lets_a_large_document_alone_and_stops_when_closed() {
        let ahead = Arc::new(ReadAhead::new(10));
        assert_eq!(ahead.reserve(4), Some(4));
        assert_eq!(ahead.reserve(6), Some(6));
        // Full: the next document waits until the embedding side takes one.
        let waiter = {
            let a = ahead.clone();
            std::thread::spawn(move || a.reserve(3))
        };
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(!waiter.is_finished(), "a full read-ahead let a document in");
        ahead.release(4);
        assert_eq!(waiter.join().unwrap(), Some(3));
        ahead.release(6);
        ahead.release(3);
        // Larger than the whole allowance: it goes alone, holding the whole allowance.
        assert_eq!(ahead.reserve(25), Some(10));
        let waiter = {
            let a = ahead.clone();
            std::thread::spawn(move || a.reserve(1))
        };
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(!waiter.is_finished());
        // The embedding side stopped: the waiting reader is told to stop.
        ahead.close();
        assert_eq!(waiter.join().unwrap(), None);
        assert_eq!(ahead.reserve(1), None);
    }

    #[test]
    fn long_titles_are_cut_at_a_word_short_ones_kept() {
        assert_eq!(cap_title("Panama Canal", 200), "Panama Canal");
        let long = "Director Photo Service Term President served under ".repeat(10);
        let cut = cap_title(&long, 60);
        assert!(cut.chars().count() <= 60, "{cut}");
        assert!(cut.ends_with('…'));
        assert!(long.starts_with(cut.trim_end_matches('…')));
        assert!(!cut.trim_end_matches('…').ends_with(' '));
        // No space to cut at, and characters of several bytes: cut on a boundary.
        let cut = cap_title(&"é".repeat(300), 10);
        assert_eq!(cut, format!("{}…", "é".repeat(9)));
    }

    #[test]
    fn text_beyond_the_limit_is_refused_naming_the_file() {
        let id = DocId::new("d").unwrap();
        let (docs, _) = parse::parse_file(
            Path::new("big.txt"),
            &id,
            &vec![b'a'; 2000],
            DocFormat::Text,
            CorpusMode::Auto,
        )
        .unwrap();
        let err = text_within(&docs[0], 1000).unwrap_err().to_string();
        assert!(
            err.contains("big.txt") && err.contains("2000 bytes of extracted text"),
            "{err}"
        );
        assert!(text_within(&docs[0], 2000).is_ok());
    }
}
