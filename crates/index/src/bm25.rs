//! BM25 over chunk titles and text, with tantivy.

use crate::{Error, Result};
use metarag_core::ChunkId;
use std::path::Path;
use std::sync::Mutex;
use tantivy::collector::TopDocs;
use tantivy::directory::MmapDirectory;
use tantivy::query::{BooleanQuery, BoostQuery, Occur, Query, TermQuery, TermSetQuery};
use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, STRING, Schema, TextFieldIndexing, TextOptions,
};
use tantivy::tokenizer::{
    AsciiFoldingFilter, Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer,
    StopWordFilter, TextAnalyzer,
};
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term};

const ANALYZER: &str = "metarag_en";

pub(crate) struct Bm25 {
    index: Index,
    reader: IndexReader,
    /// `None` when opened read-only.
    writer: Option<Mutex<IndexWriter>>,
    analyzer: Mutex<TextAnalyzer>,
    title_boost: f32,
    /// Most query terms scored (the rarest by document frequency); 0 for all.
    max_terms: usize,
    chunk_id: Field,
    doc_id: Field,
    title: Field,
    text: Field,
}

fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(40))
        .filter(LowerCaser)
        .filter(AsciiFoldingFilter)
        .filter(StopWordFilter::new(Language::English).expect("tantivy ships English stop words"))
        .filter(Stemmer::new(Language::English))
        .build()
}

fn schema() -> Schema {
    let mut b = Schema::builder();
    b.add_u64_field("chunk_id", INDEXED | FAST);
    b.add_text_field("doc_id", STRING);
    let text = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(ANALYZER)
            .set_index_option(IndexRecordOption::WithFreqs),
    );
    b.add_text_field("title", text.clone());
    b.add_text_field("text", text);
    b.build()
}

impl Bm25 {
    /// Opens (creating if needed) for reading and writing, or, with `writer_memory`
    /// `None`, for reading only (no writer, so no tantivy writer lock is taken).
    pub fn open(
        dir: &Path,
        writer_memory: Option<usize>,
        title_boost: f32,
        max_terms: usize,
    ) -> Result<Self> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let mmap = MmapDirectory::open(dir).map_err(|e| Error::Tantivy(e.into()))?;
        let index = Index::open_or_create(mmap, schema())?;
        index.tokenizers().register(ANALYZER, analyzer());
        let schema = index.schema();
        let field = |name| schema.get_field(name).map_err(Error::Tantivy);
        let (chunk_id, doc_id, title, text) = (
            field("chunk_id")?,
            field("doc_id")?,
            field("title")?,
            field("text")?,
        );
        // One indexing thread: ingestion is bound by embedding, and a second tantivy thread
        // would only compete with candle for the same cores.
        let writer = match writer_memory {
            Some(m) => {
                let w: IndexWriter = index.writer_with_num_threads(1, m.max(15_000_000))?;
                // A writer killed mid-commit leaves files its last commit does not list
                // (found by `metarag bench crash`: a delete file of the next opstamp made the
                // following `docs rm` fail with FileAlreadyExists). Remove them before
                // writing; files of the committed state are kept.
                w.garbage_collect_files().wait()?;
                Some(Mutex::new(w))
            }
            None => None,
        };
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()?;
        Ok(Bm25 {
            index,
            reader,
            writer,
            analyzer: Mutex::new(analyzer()),
            title_boost,
            max_terms,
            chunk_id,
            doc_id,
            title,
            text,
        })
    }

    fn writer(&self) -> Result<&Mutex<IndexWriter>> {
        self.writer
            .as_ref()
            .ok_or_else(|| Error::Corrupt("a write reached the BM25 index opened read-only".into()))
    }

    /// The generation written with the last commit; 0 for a new index.
    pub fn generation(&self) -> Result<u64> {
        let metas = self.index.load_metas()?;
        Ok(metas
            .payload
            .as_deref()
            .and_then(|p| p.parse().ok())
            .unwrap_or(0))
    }

    pub fn num_docs(&self) -> Result<usize> {
        Ok(self.reader.searcher().num_docs() as usize)
    }

    /// Deletes every chunk of `touched` documents, adds `rows`, commits with `generation`.
    pub fn apply<'a, X: AsRef<str>>(
        &self,
        touched: impl Iterator<Item = &'a str>,
        rows: impl Iterator<Item = (ChunkId, &'a str, &'a str, X)>,
        generation: u64,
    ) -> Result<()> {
        let mut w = self.writer()?.lock().map_err(|_| Error::Poisoned)?;
        for d in touched {
            w.delete_term(Term::from_field_text(self.doc_id, d));
        }
        self.add_and_commit(&mut w, rows, generation)
    }

    /// Drops everything and re-adds `rows`.
    pub fn rebuild<'a>(
        &self,
        rows: impl Iterator<Item = (ChunkId, &'a str, &'a str, &'a str)>,
        generation: u64,
    ) -> Result<()> {
        let mut w = self.writer()?.lock().map_err(|_| Error::Poisoned)?;
        w.delete_all_documents()?;
        self.add_and_commit(&mut w, rows, generation)
    }

    /// The number of searchable segments (each search reads every one).
    pub fn segments(&self) -> Result<usize> {
        Ok(self.index.searchable_segment_ids()?.len())
    }

    /// Merges every searchable segment into one. tantivy's merge policy leaves a large
    /// index in many segments (18 after a million chunks written 1,024 at a time), and a
    /// query looks each of its terms up in every segment. The merged segment is committed
    /// by tantivy with the last commit's payload, so the generation SQLite is paired with
    /// does not move; a merge cut off leaves the old segments, still committed.
    pub fn merge_all(&self) -> Result<()> {
        let mut w = self.writer()?.lock().map_err(|_| Error::Poisoned)?;
        let ids = self.index.searchable_segment_ids()?;
        if ids.len() > 1 {
            w.merge(&ids).wait()?;
        }
        w.garbage_collect_files().wait()?;
        self.reader.reload()?;
        Ok(())
    }

    fn add_and_commit<'a, X: AsRef<str>>(
        &self,
        w: &mut IndexWriter,
        rows: impl Iterator<Item = (ChunkId, &'a str, &'a str, X)>,
        generation: u64,
    ) -> Result<()> {
        for (id, doc, title, text) in rows {
            let mut d = TantivyDocument::new();
            d.add_u64(self.chunk_id, id.0);
            d.add_text(self.doc_id, doc);
            d.add_text(self.title, title);
            d.add_text(self.text, text.as_ref());
            w.add_document(d)?;
        }
        let mut prepared = w.prepare_commit()?;
        prepared.set_payload(&generation.to_string());
        prepared.commit()?;
        self.reader.reload()?;
        Ok(())
    }

    /// The query's analyzed terms, de-duplicated, in order of first appearance.
    fn terms(&self, query: &str) -> Vec<String> {
        let mut analyzer = self.analyzer.lock().unwrap_or_else(|p| p.into_inner());
        let mut stream = analyzer.token_stream(query);
        let mut out: Vec<String> = Vec::new();
        while let Some(t) = stream.next() {
            if !out.iter().any(|o| o == &t.text) {
                out.push(t.text.clone());
            }
        }
        out
    }

    /// The `max_terms` rarest of `terms` by document frequency in the text field (title
    /// and text together for ties), in query order. A long question is a union of long
    /// posting lists; its common words add little to the ranking but most of the cost at
    /// a million chunks (`docs/results/performance.md`). Terms no chunk contains are
    /// dropped first: they match nothing.
    fn rarest(&self, searcher: &tantivy::Searcher, terms: Vec<String>) -> Result<Vec<String>> {
        let mut df: Vec<(usize, u64)> = Vec::with_capacity(terms.len());
        for (i, t) in terms.iter().enumerate() {
            let text = searcher.doc_freq(&Term::from_field_text(self.text, t))?;
            let title = searcher.doc_freq(&Term::from_field_text(self.title, t))?;
            df.push((i, text.max(title)));
        }
        df.retain(|&(_, f)| f > 0);
        df.sort_by_key(|&(i, f)| (f, i));
        df.truncate(self.max_terms);
        df.sort_by_key(|&(i, _)| i);
        Ok(df.into_iter().map(|(i, _)| terms[i].clone()).collect())
    }

    /// Top `n` chunks by BM25; `allowed` restricts to those documents.
    pub fn search(
        &self,
        query: &str,
        n: usize,
        allowed: Option<&[metarag_core::DocId]>,
    ) -> Result<Vec<(ChunkId, f32)>> {
        // The query is built from analyzed terms rather than parsed, so questions containing
        // `:`, quotes or parentheses are never read as query syntax.
        let mut terms = self.terms(query);
        if terms.is_empty() || n == 0 {
            return Ok(Vec::new());
        }
        let searcher = self.reader.searcher();
        if self.max_terms > 0 && terms.len() > self.max_terms {
            terms = self.rarest(&searcher, terms)?;
        }
        let mut should: Vec<(Occur, Box<dyn Query>)> = Vec::with_capacity(terms.len() * 2);
        for t in &terms {
            should.push((
                Occur::Should,
                Box::new(TermQuery::new(
                    Term::from_field_text(self.text, t),
                    IndexRecordOption::WithFreqs,
                )),
            ));
            should.push((
                Occur::Should,
                Box::new(BoostQuery::new(
                    Box::new(TermQuery::new(
                        Term::from_field_text(self.title, t),
                        IndexRecordOption::WithFreqs,
                    )),
                    self.title_boost,
                )),
            ));
        }
        let text_query: Box<dyn Query> = Box::new(BooleanQuery::new(should));
        let query: Box<dyn Query> = match allowed {
            None => text_query,
            Some(docs) => Box::new(BooleanQuery::new(vec![
                (Occur::Must, text_query),
                (
                    Occur::Must,
                    Box::new(TermSetQuery::new(
                        docs.iter()
                            .map(|d| Term::from_field_text(self.doc_id, d.as_str())),
                    )),
                ),
            ])),
        };
        let top = searcher.search(&query, &TopDocs::with_limit(n).order_by_score())?;
        let mut out = Vec::with_capacity(top.len());
        for (score, addr) in top {
            let seg = searcher.segment_reader(addr.segment_ord);
            let ids = seg.fast_fields().u64("chunk_id")?;
            let id = ids
                .first(addr.doc_id)
                .ok_or_else(|| Error::Corrupt(format!("BM25 document {addr:?} has no chunk id")))?;
            out.push((ChunkId(id), score));
        }
        Ok(out)
    }
}
