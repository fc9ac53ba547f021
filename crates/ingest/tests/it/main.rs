//! Integration tests: real files of every format through parsing, chunking with the real
//! embedder's tokenizer, embedding with the real model, and the embedded index.

use metarag_core::{DocFormat, DocId, Embedder, Filter, Store, StoreRead};
use metarag_index::{EmbeddedIndex, IndexConfig};
use metarag_ingest::{
    ChunkSettings, Chunker, CorpusMode, IngestOptions, Ingester, discover, parse,
};
use proptest::prelude::*;
use std::path::Path;

fn chunker(max_tokens: usize, overlap: usize) -> Chunker {
    let e = metarag_testkit::embedder();
    Chunker::new(
        e.tokenizer().clone(),
        ChunkSettings {
            max_tokens,
            overlap,
        },
    )
    .unwrap()
}

/// Ingests the files under `src` into a new index in `data` with the default options and
/// the real embedder (chunks of its sequence length, 32 tokens overlapping).
async fn ingest_folder(src: &Path, data: &Path) -> (EmbeddedIndex, metarag_ingest::IngestReport) {
    let embedder = metarag_testkit::embedder();
    let index = open_index(data);
    let chunker = chunker(embedder.max_tokens(), 32);
    let options = IngestOptions::default();
    let (files, _) = discover(&[src.to_path_buf()], &options).unwrap();
    let report = Ingester::new(&chunker, &embedder, &index, options)
        .run(&files, &|_| {})
        .await
        .unwrap();
    (index, report)
}

fn open_index(dir: &Path) -> EmbeddedIndex {
    let e = metarag_testkit::embedder();
    EmbeddedIndex::open(dir, IndexConfig::new(e.model_id(), e.dimension())).unwrap()
}

fn write_fixtures(dir: &Path) {
    std::fs::write(
        dir.join("guide.md"),
        "# Guide\n\nIntro text about zeppelins.\n\n## Mooring\n\nZeppelins moor at masts.\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("page.html"),
        "<html><head><title>Page</title><script>evil()</script></head><body><nav>menu</nav><h1>Kites</h1><p>Kites fly on strings.</p></body></html>",
    )
    .unwrap();
    std::fs::write(
        dir.join("notes.txt"),
        "Plain notes about gliders and thermals.",
    )
    .unwrap();
    std::fs::write(
        dir.join("item.json"),
        r#"{"name":"Balloon","specs":{"gas":"helium"}}"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("corpus.jsonl"),
        "{\"doc_id\":\"c1\",\"title\":\"Hang gliding\",\"text\":\"Hang gliders are foot-launched.\"}\n{\"doc_id\":\"c2\",\"title\":\"Paragliding\",\"text\":\"Paragliders have no rigid frame.\"}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("report.pdf"),
        metarag_testkit::pdf(
            "Airship Report",
            &["Page one mentions dirigibles.", "Page two mentions blimps."],
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("memo.docx"),
        metarag_testkit::docx(&[
            ("Title", "Memo"),
            ("Heading1", "Budget"),
            ("", "The hangar budget is tight."),
        ]),
    )
    .unwrap();
    std::fs::write(dir.join("broken.pdf"), b"%PDF-1.4 this is not really a pdf").unwrap();
    std::fs::write(dir.join("ignored.bin"), [0u8, 1, 2]).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn every_format_goes_in_and_a_corrupt_file_is_reported() {
    let src = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    write_fixtures(src.path());
    let embedder = metarag_testkit::embedder();
    let index = open_index(data.path());
    let chunker = chunker(embedder.max_tokens(), 32);
    let options = IngestOptions::default();
    let (files, missing) = discover(&[src.path().to_path_buf()], &options).unwrap();
    assert!(missing.is_empty());
    assert_eq!(
        files.len(),
        8,
        "the .bin file is not a supported type: {files:?}"
    );
    let ingester = Ingester::new(&chunker, &embedder, &index, options.clone());
    let report = ingester.run(&files, &|_| {}).await.unwrap();
    assert_eq!(report.failures.len(), 1, "{:?}", report.failures);
    assert!(report.failures[0].source.ends_with("broken.pdf"));
    assert!(
        report.failures[0].error.contains("not a valid pdf"),
        "{}",
        report.failures[0].error
    );
    // md, html, txt, json, 2 corpus lines, pdf, docx.
    assert_eq!(report.added, 8);

    let docs = StoreRead::documents(&index).await.unwrap();
    let by_format = |f: DocFormat| docs.iter().filter(|d| d.format == f).collect::<Vec<_>>();
    assert_eq!(by_format(DocFormat::CorpusLine).len(), 2);
    let pdf = by_format(DocFormat::Pdf)[0];
    assert_eq!(pdf.title, "Airship Report");
    let pdf_chunks = index.document_chunks(&pdf.id).unwrap();
    let pages: Vec<_> = pdf_chunks.iter().map(|c| c.draft.pages).collect();
    assert_eq!(pages, [Some((1, 1)), Some((2, 2))]);
    assert!(pdf_chunks[1].draft.text.contains("blimps"));
    let docx = by_format(DocFormat::Docx)[0];
    assert_eq!(docx.title, "Memo");
    let docx_chunks = index.document_chunks(&docx.id).unwrap();
    assert!(
        docx_chunks
            .iter()
            .any(|c| c.draft.section == ["Memo", "Budget"] && c.draft.text.contains("hangar"))
    );
    let html = by_format(DocFormat::Html)[0];
    let html_doc = StoreRead::document(&index, &html.id)
        .await
        .unwrap()
        .unwrap();
    assert!(!html_doc.text.unwrap().contains("evil"));
    let md = by_format(DocFormat::Markdown)[0];
    let md_chunks = index.document_chunks(&md.id).unwrap();
    assert!(
        md_chunks
            .iter()
            .any(|c| c.draft.section == ["Guide", "Mooring"])
    );
    // Byte offsets point into the stored text.
    let md_text = StoreRead::document(&index, &md.id)
        .await
        .unwrap()
        .unwrap()
        .text
        .unwrap();
    for c in &md_chunks {
        assert_eq!(&md_text[c.draft.bytes.clone()], c.draft.text);
    }

    // Re-ingesting unchanged files is a no-op.
    let again = ingester.run(&files, &|_| {}).await.unwrap();
    assert_eq!(
        (again.added, again.updated, again.unchanged, again.chunks),
        (0, 0, 8, 0)
    );
}

/// Progress in input bytes, as a front end sees it: the `Started` total, the bytes of
/// `File` and `Batch` events, and the batches' share.
#[derive(Default)]
struct Progress {
    total: u64,
    counted: u64,
    batches: u64,
    files: usize,
}

#[tokio::test(flavor = "multi_thread")]
async fn progress_bytes_add_up_to_the_inputs_first_time_and_again() {
    let src = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    write_fixtures(src.path());
    let embedder = metarag_testkit::embedder();
    let index = open_index(data.path());
    let chunker = chunker(embedder.max_tokens(), 32);
    // Small batches, so documents wait on the read-ahead and batches interleave with files.
    let options = IngestOptions {
        batch_chunks: 2,
        ..Default::default()
    };
    let (files, _) = discover(&[src.path().to_path_buf()], &options).unwrap();
    let size: u64 = files
        .iter()
        .map(|f| std::fs::metadata(f).unwrap().len())
        .sum();
    for run in 0..2 {
        let progress = std::sync::Mutex::new(Progress::default());
        let report = Ingester::new(&chunker, &embedder, &index, options.clone())
            .run(&files, &|e| {
                let mut p = progress.lock().unwrap();
                match e {
                    metarag_ingest::IngestEvent::Started { bytes, .. } => p.total = bytes,
                    metarag_ingest::IngestEvent::File { bytes, .. } => {
                        p.counted += bytes;
                        p.files += 1;
                    }
                    metarag_ingest::IngestEvent::Batch { bytes, .. } => {
                        p.counted += bytes;
                        p.batches += bytes;
                    }
                    _ => {}
                }
            })
            .await
            .unwrap();
        let p = progress.into_inner().unwrap();
        assert_eq!(p.total, size, "run {run}");
        assert_eq!(p.counted, size, "run {run}: progress must end at the total");
        assert_eq!(p.files, files.len());
        assert_eq!(report.failures.len(), 1, "{:?}", report.failures);
        if run == 0 {
            assert!(report.added >= 8, "{report:?}");
            assert!(
                p.batches > 0,
                "new documents carry their bytes to the batch"
            );
        } else {
            assert_eq!((report.added, report.updated, report.chunks), (0, 0, 0));
            assert_eq!(p.batches, 0, "nothing to write the second time");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_changed_file_replaces_all_of_its_chunks() {
    let src = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let embedder = metarag_testkit::embedder();
    let index = open_index(data.path());
    let chunker = chunker(embedder.max_tokens(), 32);
    let file = src.path().join("doc.md");
    let long: String = (0..120)
        .map(|i| format!("Sentence {i} talks about quokkas and wombats. "))
        .collect();
    std::fs::write(&file, format!("# Old\n\n{long}\n")).unwrap();
    let ingester = Ingester::new(&chunker, &embedder, &index, IngestOptions::default());
    ingester
        .run(std::slice::from_ref(&file), &|_| {})
        .await
        .unwrap();
    let id = DocId::new(std::fs::canonicalize(&file).unwrap().display().to_string()).unwrap();
    assert!(
        index.document_chunks(&id).unwrap().len() > 2,
        "long text spans several chunks"
    );

    std::fs::write(&file, "# New\n\nOnly platypuses now.\n").unwrap();
    let report = ingester
        .run(std::slice::from_ref(&file), &|_| {})
        .await
        .unwrap();
    assert_eq!(report.updated, 1);
    let chunks = index.document_chunks(&id).unwrap();
    assert_eq!(chunks.len(), 1);
    assert!(
        index
            .lexical("quokkas", 10, &Filter::default())
            .unwrap()
            .is_empty()
    );
    assert_eq!(index.engine_sizes().unwrap(), (1, 1));
    assert_eq!(StoreRead::documents(&index).await.unwrap()[0].title, "New");
}

#[tokio::test(flavor = "multi_thread")]
async fn oversized_files_are_refused_not_truncated() {
    let src = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let embedder = metarag_testkit::embedder();
    let index = open_index(data.path());
    let chunker = chunker(embedder.max_tokens(), 32);
    let big = src.path().join("big.txt");
    std::fs::write(&big, "word ".repeat(1000)).unwrap();
    let options = IngestOptions {
        max_file_bytes: 1000,
        ..Default::default()
    };
    let report = Ingester::new(&chunker, &embedder, &index, options)
        .run(&[big], &|_| {})
        .await
        .unwrap();
    assert_eq!(report.failures.len(), 1);
    assert!(
        report.failures[0]
            .error
            .contains("exceeds the ingest limit")
    );
    assert_eq!(index.stats().unwrap().chunks, 0);
}

#[test]
fn include_and_exclude_globs() {
    let src = tempfile::tempdir().unwrap();
    std::fs::create_dir(src.path().join("sub")).unwrap();
    std::fs::create_dir(src.path().join(".git")).unwrap();
    for f in ["a.md", "b.txt", "sub/c.md", "sub/draft.md", ".git/d.md"] {
        std::fs::write(src.path().join(f), "x").unwrap();
    }
    let options = IngestOptions {
        include: vec!["**/*.md".into()],
        exclude: vec!["**/draft*".into()],
        ..Default::default()
    };
    let (files, _) = discover(&[src.path().to_path_buf()], &options).unwrap();
    let names: Vec<_> = files
        .iter()
        .map(|f| f.strip_prefix(src.path()).unwrap().display().to_string())
        .collect();
    assert_eq!(names, ["a.md", "sub/c.md"]);
    let bad = IngestOptions {
        include: vec!["[".into()],
        ..Default::default()
    };
    assert!(
        discover(&[src.path().to_path_buf()], &bad)
            .unwrap_err()
            .to_string()
            .contains("invalid glob")
    );
}

/// A device or FIFO named on the command line is one clear failure, not a read that never
/// ends; inside a folder, FIFOs and symlinks are passed over (the walk takes regular files).
#[cfg(unix)]
#[test]
fn special_files_are_refused_by_name_and_passed_over_in_a_folder() {
    let src = tempfile::tempdir().unwrap();
    std::fs::write(src.path().join("a.md"), "x").unwrap();
    let fifo = src.path().join("pipe.txt");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    std::os::unix::fs::symlink("/dev/zero", src.path().join("zero.txt")).unwrap();
    let options = IngestOptions::default();
    let (files, failures) = discover(&[src.path().to_path_buf()], &options).unwrap();
    assert_eq!(files, [src.path().join("a.md")]);
    assert!(failures.is_empty(), "{failures:?}");
    for special in [fifo, "/dev/zero".into()] {
        let (files, failures) = discover(std::slice::from_ref(&special), &options).unwrap();
        assert!(files.is_empty());
        assert_eq!(failures.len(), 1);
        assert_eq!(failures[0].source, special.display().to_string());
        assert_eq!(failures[0].error, "not a regular file or a directory");
    }
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric()
}

fn check_invariants(
    chunker: &Chunker,
    title: &str,
    text: &str,
    format: DocFormat,
) -> Result<(), TestCaseError> {
    let path = Path::new("/t/doc.md");
    let id = DocId::new("t").unwrap();
    let ext = match format {
        DocFormat::Markdown => "md",
        _ => "txt",
    };
    let path = path.with_extension(ext);
    let (mut docs, _) =
        parse::parse_file(&path, &id, text.as_bytes(), format, CorpusMode::Auto).unwrap();
    let mut doc = docs.remove(0);
    doc.title = title.to_string();
    let chunks = chunker.chunk(&doc).unwrap();
    let max = chunker.settings().max_tokens;
    for c in &chunks {
        // Never more tokens than the embedder reads, counted on the real embedder input.
        let counted = chunker.count(&c.embedding_input(&doc.title)).unwrap();
        prop_assert_eq!(counted, c.token_count as usize);
        prop_assert!(counted <= max, "chunk of {} tokens > {}", counted, max);
        // Offsets point at the chunk text.
        prop_assert_eq!(&doc.text[c.bytes.clone()], c.text.as_str());
        // Never split inside a word.
        let before = doc.text[..c.bytes.start].chars().next_back();
        let first = c.text.chars().next();
        prop_assert!(
            !(before.is_some_and(is_word) && first.is_some_and(is_word)),
            "split before {:?}",
            &c.text[..c.text.len().min(20)]
        );
        let last = c.text.chars().next_back();
        let after = doc.text[c.bytes.end..].chars().next();
        prop_assert!(
            !(last.is_some_and(is_word) && after.is_some_and(is_word)),
            "split after ...{:?}",
            &c.text[c.text.len().saturating_sub(20)..]
        );
    }
    // Every word of the text is in some chunk (punctuation may sit at a chunk edge).
    let covered: String = chunks
        .iter()
        .map(|c| c.text.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    for w in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        prop_assert!(covered.contains(w), "word {:?} lost", w);
    }
    Ok(())
}

fn words() -> impl Strategy<Value = String> {
    let word = prop_oneof![
        "[a-z]{1,12}",
        "[A-Z][a-z]{2,10}",
        "[0-9]{1,6}",
        Just("antidisestablishmentarianism".to_string()),
        Just("Zürich".to_string()),
        Just("naïve".to_string()),
    ];
    let sep = prop_oneof![
        Just(" "),
        Just(" "),
        Just(", "),
        Just(". "),
        Just("\n"),
        Just("\n\n")
    ];
    proptest::collection::vec((word, sep), 1..600)
        .prop_map(|v| v.into_iter().map(|(w, s)| format!("{w}{s}")).collect())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn text_chunks_respect_the_token_bound(text in words(), max in 40usize..300, title in "[A-Za-z ]{0,40}") {
        let c = chunker(max, (max / 8).min(32));
        check_invariants(&c, &title, &text, DocFormat::Text)?;
    }

    #[test]
    fn markdown_chunks_respect_the_token_bound(sections in proptest::collection::vec(("[A-Za-z ]{1,30}", words()), 1..5)) {
        let md: String = sections.iter().enumerate().map(|(i, (h, body))| format!("{} {h}\n\n{body}\n\n", "#".repeat(i % 3 + 1))).collect();
        let c = chunker(128, 16);
        check_invariants(&c, "Doc", &md, DocFormat::Markdown)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// The byte bound on chunks moves no cut in ordinary text: the chunks are the ones
    /// tokens alone give (the splitter over the bare tokenizer, same budget and overlap).
    #[test]
    fn ordinary_text_is_cut_where_tokens_alone_cut_it(text in words(), max in 40usize..300) {
        let overlap = (max / 8).min(32);
        let c = chunker(max, overlap);
        let id = DocId::new("t").unwrap();
        let (mut docs, _) = parse::parse_file(Path::new("/t/doc.txt"), &id, text.as_bytes(), DocFormat::Text, CorpusMode::Auto).unwrap();
        let mut doc = docs.remove(0);
        // No title, so no header: the whole budget goes to the body, as in the bare splitter.
        doc.title = String::new();
        let budget = max - c.count(&metarag_core::embedding_input("", &[], "")).unwrap();
        let mut tokenizer = metarag_testkit::embedder().tokenizer().clone();
        tokenizer.with_truncation(None).unwrap();
        let config = text_splitter::ChunkConfig::new(budget)
            .with_sizer(&tokenizer)
            .with_overlap(overlap.min(budget / 2))
            .unwrap();
        let bare: Vec<_> = text_splitter::TextSplitter::new(config)
            .chunk_indices(&doc.text)
            .map(|(o, t)| o..o + t.len())
            .collect();
        let ours: Vec<_> = c.chunk(&doc).unwrap().into_iter().map(|ch| ch.bytes).collect();
        prop_assert_eq!(ours, bare);
    }
}

/// A run without whitespace is one `[UNK]` to the tokenizer however long it is: it is cut
/// by bytes (at most `MAX_BYTES_PER_TOKEN` a token of budget), not kept as one chunk of
/// five tokens, and the prose around it is chunked as before.
#[test]
fn a_run_without_spaces_is_cut_by_bytes() {
    let run = "q".repeat(300_000);
    let text = format!("Prose before the run, in words.\n\n{run}\n\nAnd prose after it.\n");
    let c = chunker(256, 32);
    let id = DocId::new("run").unwrap();
    let (docs, _) = parse::parse_file(
        Path::new("/t/run.txt"),
        &id,
        text.as_bytes(),
        DocFormat::Text,
        CorpusMode::Auto,
    )
    .unwrap();
    let chunks = c.chunk(&docs[0]).unwrap();
    let limit = metarag_ingest::chunk::MAX_BYTES_PER_TOKEN * 256;
    assert!(chunks.len() >= run.len() / limit, "{} chunks", chunks.len());
    let mut covered = vec![false; text.len()];
    for ch in &chunks {
        assert!(ch.text.len() <= limit, "a chunk of {} bytes", ch.text.len());
        assert!(ch.token_count <= 256);
        assert_eq!(&docs[0].text[ch.bytes.clone()], ch.text);
        covered[ch.bytes.clone()].iter_mut().for_each(|b| *b = true);
    }
    // Every byte of the run is in some chunk, and the prose's words are whole in one.
    let start = text.find('q').unwrap();
    assert!(covered[start..start + run.len()].iter().all(|&b| b));
    for w in ["before", "words", "after"] {
        assert!(
            chunks.iter().any(|ch| ch
                .text
                .split(|c: char| !c.is_alphanumeric())
                .any(|x| x == w)),
            "{w}"
        );
    }
}

/// Lists nested past what the Markdown splitter is given (a hostile file's shape: its time
/// grew faster than the text) are split as plain text, with the same guarantees, and every
/// list item's word is in some chunk.
#[test]
fn markdown_nested_past_the_limit_is_chunked_as_text_within_bounds() {
    let depth = 3 * metarag_ingest::chunk::MAX_MARKDOWN_NESTING;
    let md: String = (0..depth)
        .map(|i| format!("{}- item{i}\n", "  ".repeat(i)))
        .collect();
    assert!(metarag_ingest::chunk::nested_deeper(
        &md,
        metarag_ingest::chunk::MAX_MARKDOWN_NESTING
    ));
    let c = chunker(64, 8);
    check_invariants(&c, "Deep", &md, DocFormat::Markdown).unwrap();
    let id = DocId::new("deep").unwrap();
    let (docs, _) = parse::parse_file(
        Path::new("/t/deep.md"),
        &id,
        md.as_bytes(),
        DocFormat::Markdown,
        CorpusMode::Auto,
    )
    .unwrap();
    let chunks = c.chunk(&docs[0]).unwrap();
    for i in 0..depth {
        let word = format!("item{i}");
        assert!(
            chunks
                .iter()
                .any(|ch| ch.text.split_whitespace().any(|w| w == word))
        );
    }
}

#[tokio::test]
async fn hostile_and_legacy_files_each_get_their_outcome_and_the_rest_goes_in() {
    let src = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let n = 300_000;
    std::fs::write(
        src.path().join("deep.html"),
        format!(
            "<html><body>{}x{}</body></html>",
            "<div>".repeat(n),
            "</div>".repeat(n)
        ),
    )
    .unwrap();
    let latin = "Café au lait and a naïve façade in Zürich.";
    std::fs::write(
        src.path().join("latin1.txt"),
        encoding_rs::WINDOWS_1252.encode(latin).0,
    )
    .unwrap();
    std::fs::write(
        src.path().join("junk.txt"),
        (0..=255u8).cycle().take(4096).collect::<Vec<_>>(),
    )
    .unwrap();
    std::fs::write(src.path().join("fine.md"), "# Fine\n\nA normal file.\n").unwrap();
    std::fs::write(src.path().join("bomb.pdf"), pdf_bomb(200 << 20)).unwrap();
    // Valid UTF-8 that is no text: a file of zeros (a sparse or preallocated file).
    std::fs::write(src.path().join("zeros.txt"), vec![0u8; 1 << 16]).unwrap();
    // UTF-16 without a byte-order mark and UTF-32 with one: decoded, not stored as noise.
    let wide = "Wide text from Zürich.";
    let utf16: Vec<u8> = wide.encode_utf16().flat_map(u16::to_le_bytes).collect();
    std::fs::write(src.path().join("utf16.txt"), utf16).unwrap();
    let utf32: Vec<u8> = [0xff, 0xfe, 0, 0]
        .into_iter()
        .chain(wide.chars().flat_map(|c| (c as u32).to_le_bytes()))
        .collect();
    std::fs::write(src.path().join("utf32.txt"), utf32).unwrap();
    // 2 MB without a space: cut by bytes, not kept as one chunk of five tokens.
    let run = format!("A line first.\n\n{}\n", "z".repeat(2 << 20));
    std::fs::write(src.path().join("run.txt"), &run).unwrap();
    let (index, report) = ingest_folder(src.path(), data.path()).await;
    let mut failed: Vec<(&str, &str)> = report
        .failures
        .iter()
        .map(|f| {
            (
                f.source.rsplit('/').next().unwrap_or(&f.source),
                f.error.as_str(),
            )
        })
        .collect();
    failed.sort();
    assert_eq!(failed.len(), 4, "{failed:?}");
    assert_eq!(failed[0].0, "bomb.pdf");
    assert!(
        failed[0].1.contains("decompresses to more than 128 MiB"),
        "{}",
        failed[0].1
    );
    assert_eq!(failed[1].0, "deep.html");
    assert!(
        failed[1].1.contains("nested 300000 deep"),
        "{}",
        failed[1].1
    );
    assert_eq!(failed[2].0, "junk.txt");
    assert!(failed[2].1.contains("binary data"), "{}", failed[2].1);
    assert_eq!(failed[3].0, "zeros.txt");
    assert!(failed[3].1.contains("binary data"), "{}", failed[3].1);
    assert_eq!(report.added, 5);
    let docs = StoreRead::documents(&index).await.unwrap();
    for (title, text) in [("latin1", latin), ("utf16", wide), ("utf32", wide)] {
        let doc = docs.iter().find(|d| d.title == title).unwrap();
        let stored = StoreRead::document(&index, &doc.id).await.unwrap().unwrap();
        assert_eq!(stored.text.as_deref(), Some(text), "{title}");
    }
    let run_doc = docs.iter().find(|d| d.title == "run").unwrap();
    let limit = metarag_ingest::chunk::MAX_BYTES_PER_TOKEN * 256;
    assert!(
        run_doc.chunk_count as usize >= (2 << 20) / limit,
        "{}",
        run_doc.chunk_count
    );
}

/// A readable one-page PDF with a second content stream of `inflated` spaces compressed
/// to a few hundred kilobytes: a decompression bomb, as text extraction would decode it.
fn pdf_bomb(inflated: usize) -> Vec<u8> {
    use std::io::Write;
    let bytes = metarag_testkit::pdf("Bomb", &["An ordinary first line."]);
    let mut doc = lopdf::Document::load_mem(&bytes).unwrap();
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    let spaces = vec![b' '; 1 << 20];
    for _ in 0..inflated >> 20 {
        z.write_all(&spaces).unwrap();
    }
    let packed = z.finish().unwrap();
    let bomb = doc.add_object(lopdf::Stream::new(
        lopdf::dictionary! { "Filter" => "FlateDecode" },
        packed,
    ));
    let page = *doc.get_pages().values().next().unwrap();
    let dict = doc.get_object_mut(page).unwrap().as_dict_mut().unwrap();
    let first = dict.get(b"Contents").unwrap().clone();
    dict.set("Contents", vec![first, bomb.into()]);
    let mut out = Vec::new();
    doc.save_to(&mut out).unwrap();
    out
}

/// Every input under `fuzz/seeds/parse_*` and `fuzz/regressions/parse_*` (inputs that
/// once crashed a parser, kept when fixed) goes through its parser unguarded, with the
/// section invariant checked, and through chunking; a panic fails the test.
#[test]
fn fuzz_seeds_and_regressions_parse_without_panicking() {
    let fuzz = metarag_testkit::repo_dir().join("fuzz");
    let chunker = chunker(64, 8);
    let mut replayed = 0;
    for kind in ["seeds", "regressions"] {
        for (target, format) in [
            ("parse_pdf", DocFormat::Pdf),
            ("parse_docx", DocFormat::Docx),
            ("parse_html", DocFormat::Html),
            ("parse_markdown", DocFormat::Markdown),
            ("parse_text", DocFormat::Text),
            ("parse_json", DocFormat::Json),
            ("chunk", DocFormat::Markdown),
        ] {
            let Ok(dir) = std::fs::read_dir(fuzz.join(kind).join(target)) else {
                continue;
            };
            for entry in dir {
                let path = entry.unwrap().path();
                let bytes = std::fs::read(&path).unwrap();
                let formats = match format {
                    DocFormat::Json => vec![DocFormat::Json, DocFormat::CorpusLine],
                    f => vec![f],
                };
                let parsed: Vec<_> = formats
                    .into_iter()
                    .map(|f| parse::parse_unguarded(f, &bytes))
                    .collect();
                if kind == "seeds" {
                    assert!(
                        parsed
                            .iter()
                            .any(|p| p.as_ref().is_ok_and(|(d, _)| !d.is_empty())),
                        "{}: {parsed:?}",
                        path.display()
                    );
                }
                for doc in parsed
                    .into_iter()
                    .flat_map(|p| p.map(|(d, _)| d).unwrap_or_default())
                {
                    parse::check_sections(&doc);
                    if let Ok(chunks) = chunker.chunk(&doc) {
                        assert!(chunks.iter().all(|c| c.token_count <= 64));
                    }
                }
                replayed += 1;
            }
        }
    }
    assert!(replayed >= 8, "the fuzz seeds moved: {replayed} replayed");
}

/// A dump made by the index's own model goes in with its vectors and is found by dense
/// search; a dump from another model is refused before anything is written.
#[tokio::test(flavor = "multi_thread")]
async fn a_vector_dump_is_imported_with_its_vectors_and_a_foreign_one_refused() {
    use metarag_ingest::import::{ImportOptions, import_dump};
    let embedder = metarag_testkit::embedder();
    let texts = [
        (
            "tide",
            "Brannock Harbour floods twice a day when the spring tides come in.",
        ),
        (
            "bees",
            "The orchard keeps forty hives of black bees for its apple blossom.",
        ),
        (
            "kiln",
            "A wood-fired kiln needs three days to cool before it is opened.",
        ),
    ];
    let inputs: Vec<String> = texts.iter().map(|t| t.1.to_string()).collect();
    let vectors = embedder.embed(&inputs).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut good = String::new();
    for ((id, text), v) in texts.iter().zip(&vectors) {
        let rec = serde_json::json!({"id": id, "text": text, "embedding": v, "metadata": {"title": id.to_uppercase()}});
        good.push_str(&format!("{rec}\n"));
    }
    good.push_str("{\"id\": \"short\", \"text\": \"x\", \"embedding\": [0.5, 0.5]}\n");
    let good_path = dir.path().join("dump.jsonl");
    std::fs::write(&good_path, &good).unwrap();
    // The same records with each vector's coordinates reversed: the right dimension, the
    // wrong model.
    let mut foreign = String::new();
    for ((id, text), v) in texts.iter().zip(&vectors) {
        let rev: Vec<f32> = v.iter().rev().copied().collect();
        foreign.push_str(&format!(
            "{}\n",
            serde_json::json!({"id": id, "text": text, "embedding": rev})
        ));
    }
    let foreign_path = dir.path().join("foreign.jsonl");
    std::fs::write(&foreign_path, &foreign).unwrap();

    let index = EmbeddedIndex::open(
        dir.path().join("index"),
        IndexConfig::new(embedder.model_id(), embedder.dimension()),
    )
    .unwrap();
    let chunker = chunker(embedder.max_tokens(), 0);
    let options = ImportOptions::default();
    let err = import_dump(&foreign_path, &chunker, &embedder, &index, &options)
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("do not match the embedder"),
        "{err}"
    );
    assert!(StoreRead::documents(&index).await.unwrap().is_empty());

    let report = import_dump(&good_path, &chunker, &embedder, &index, &options)
        .await
        .unwrap();
    assert_eq!((report.added, report.chunks), (3, 3));
    assert_eq!(report.failures.len(), 1);
    assert!(
        report.failures[0].error.contains("dump.jsonl:4"),
        "{:?}",
        report.failures
    );
    let q = embedder
        .embed_query("when do the spring tides flood the harbour")
        .await
        .unwrap();
    let hits = index.nearest(&q, 1, &Filter::default()).unwrap();
    let chunk = &index.chunks(&[hits[0].id]).unwrap()[0];
    assert_eq!(chunk.title, "TIDE");
    // Imported again unchanged: nothing is rewritten.
    let again = import_dump(&good_path, &chunker, &embedder, &index, &options)
        .await
        .unwrap();
    assert_eq!((again.added, again.unchanged, again.chunks), (0, 3, 0));
}

/// A Markdown file whose first line is a long `#` heading (a table flattened into one
/// line, as in a MuSiQue passage) used to be refused whole: "the title alone is longer
/// than the chunk size". Its title is cut instead and every part of it goes in.
#[tokio::test]
async fn a_runaway_heading_title_is_cut_and_the_file_goes_in() {
    let src = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let row = "MG Ralph Canine USA 1952 -- 1956 Harry S. Truman Dwight D. Eisenhower ";
    let text = format!(
        "# Director Photo Service Term {}\n\nThe agency's directors served four-year terms.\n",
        row.repeat(40)
    );
    std::fs::write(src.path().join("directors.md"), &text).unwrap();
    let (index, report) = ingest_folder(src.path(), data.path()).await;
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    assert_eq!(report.added, 1);
    let doc = &StoreRead::documents(&index).await.unwrap()[0];
    assert!(
        doc.title
            .starts_with("Director Photo Service Term MG Ralph")
    );
    assert!(doc.title.chars().count() <= metarag_ingest::MAX_TITLE_CHARS);
    let found = StoreRead::lexical(&index, "four-year terms", 3, &Filter::default())
        .await
        .unwrap();
    assert!(!found.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn metadata_from_records_and_the_ingest_is_stored_filterable_and_part_of_the_hash() {
    let src = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let embedder = metarag_testkit::embedder();
    let index = open_index(data.path());
    let chunker = chunker(embedder.max_tokens(), 32);
    let file = src.path().join("notes.jsonl");
    std::fs::write(
        &file,
        concat!(
            r#"{"id": "n1", "title": "Pump", "text": "The pump was serviced.", "metadata": {"team": "ops", "tags": ["plant"]}}"#,
            "\n",
            r#"{"id": "n2", "title": "Valve", "text": "The valve was replaced.", "metadata": {"team": "eng"}}"#,
            "\n",
            r#"{"id": "n3", "title": "Bad", "text": "Metadata that is not an object.", "metadata": 3}"#,
            "\n",
        ),
    )
    .unwrap();
    let mut options = IngestOptions::default();
    options
        .metadata
        .insert("site".into(), serde_json::json!("north"));
    let report = Ingester::new(&chunker, &embedder, &index, options.clone())
        .run(std::slice::from_ref(&file), &|_| {})
        .await
        .unwrap();
    assert_eq!(report.added, 2);
    assert_eq!(report.failures.len(), 1);
    assert!(
        report.failures[0]
            .error
            .contains("`metadata` must be an object"),
        "{:?}",
        report.failures
    );
    let n1 = StoreRead::document(&index, &DocId::new("n1").unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        serde_json::Value::Object(n1.metadata),
        serde_json::json!({"team": "ops", "tags": ["plant"], "site": "north"})
    );
    let filter = Filter {
        metadata: [("team".to_string(), serde_json::json!("eng"))].into(),
        ..Default::default()
    };
    let hits = index.lexical("replaced serviced", 10, &filter).unwrap();
    assert_eq!(hits.len(), 1);

    // The same bytes again: unchanged; under other ingest metadata: updated.
    let again = Ingester::new(&chunker, &embedder, &index, options.clone())
        .run(std::slice::from_ref(&file), &|_| {})
        .await
        .unwrap();
    assert_eq!((again.unchanged, again.updated), (2, 0));
    options
        .metadata
        .insert("site".into(), serde_json::json!("south"));
    let moved = Ingester::new(&chunker, &embedder, &index, options)
        .run(std::slice::from_ref(&file), &|_| {})
        .await
        .unwrap();
    assert_eq!((moved.unchanged, moved.updated), (0, 2));
    let n2 = StoreRead::document(&index, &DocId::new("n2").unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(n2.metadata["site"], serde_json::json!("south"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_document_larger_than_a_batch_is_embedded_in_slices_and_written_whole() {
    let src = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let index = open_index(data.path());
    // What the index holds staged, and whether any of the document is visible, as each
    // slice's embedding begins.
    let seen = std::sync::Mutex::new(Vec::new());
    let watched = index.clone();
    let embedder = Hooked {
        inner: metarag_testkit::embedder(),
        calls: Default::default(),
        hook: |_| {
            let visible = watched.stats().unwrap().chunks;
            seen.lock()
                .unwrap()
                .push((watched.staged_chunks().unwrap(), visible));
            Ok(())
        },
    };
    let chunker = chunker(64, 0);
    let file = write_long_file(src.path());
    let options = IngestOptions {
        batch_chunks: 2,
        ..Default::default()
    };
    let progress = std::sync::Mutex::new(Vec::new());
    let report = Ingester::new(&chunker, &embedder, &index, options)
        .run(std::slice::from_ref(&file), &|e| {
            if let metarag_ingest::IngestEvent::Embedded { done, of } = e {
                progress.lock().unwrap().push((done, of));
            }
        })
        .await
        .unwrap();
    let progress = progress.into_inner().unwrap();
    let chunks = report.chunks;
    assert!(chunks > 4, "{chunks} chunks");
    // Slices of two, in order, ending with the whole document; one write.
    let done: Vec<usize> = progress.iter().map(|p| p.0).collect();
    let want: Vec<usize> = (1..=chunks.div_ceil(2))
        .map(|i| (2 * i).min(chunks))
        .collect();
    assert_eq!(done, want);
    assert!(progress.iter().all(|p| p.1 == chunks));
    // Each slice went to the store as soon as it was embedded (staged, so nothing of the
    // document was visible), and the write took them all.
    let staged: Vec<(usize, u64)> = seen.lock().unwrap().clone();
    let want: Vec<(usize, u64)> = (0..chunks.div_ceil(2)).map(|i| (2 * i, 0)).collect();
    assert_eq!(staged, want);
    assert_eq!(index.staged_chunks().unwrap(), 0);
    let id = DocId::new(std::fs::canonicalize(&file).unwrap().display().to_string()).unwrap();
    let stored = index.document_chunks(&id).unwrap();
    assert_eq!(stored.len(), chunks);
    let ordinals: Vec<u32> = stored.iter().map(|c| c.draft.ordinal).collect();
    assert_eq!(ordinals, (0..chunks as u32).collect::<Vec<_>>());
    // Each chunk got its own vector: the text of chunk i is found nearest to itself.
    for c in stored.iter().step_by(3) {
        let v = embedder
            .inner
            .embed(&[c.draft.embedding_input(&c.title)])
            .await
            .unwrap()
            .remove(0);
        let near = index.nearest(&v, 1, &Filter::default()).unwrap();
        assert_eq!(near[0].id, c.id);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_large_document_whose_embedding_fails_leaves_nothing_visible() {
    let src = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let file = write_long_file(src.path());
    let embedder = Hooked {
        inner: metarag_testkit::embedder(),
        calls: Default::default(),
        hook: |n| {
            if n == 3 {
                Err(metarag_core::Error::backend(
                    "embedder",
                    metarag_core::Fault::Internal,
                    "out of memory",
                ))
            } else {
                Ok(())
            }
        },
    };
    {
        let index = open_index(data.path());
        let options = IngestOptions {
            batch_chunks: 2,
            ..Default::default()
        };
        let err = Ingester::new(&chunker(64, 0), &embedder, &index, options)
            .run(std::slice::from_ref(&file), &|_| {})
            .await
            .unwrap_err();
        assert!(err.to_string().contains("out of memory"), "{err}");
        // Two slices were staged; none of the document is visible.
        assert_eq!(index.staged_chunks().unwrap(), 4);
        assert_eq!(index.stats().unwrap().chunks, 0);
        assert_eq!(index.engine_sizes().unwrap(), (0, 0));
    }
    // The next writer drops the stage nobody claimed.
    let index = open_index(data.path());
    assert_eq!(index.staged_chunks().unwrap(), 0);
    assert!(index.documents().unwrap().is_empty());
}

/// Writes `long.md` into `dir`: one section of 60 sentences, many chunks at 64 tokens.
fn write_long_file(dir: &Path) -> std::path::PathBuf {
    let file = dir.join("long.md");
    let long: String = (0..60)
        .map(|i| format!("Sentence {i} talks about quokkas and wombats at length. "))
        .collect();
    std::fs::write(&file, format!("# Long\n\n{long}\n")).unwrap();
    file
}

/// The real embedder, with a hook run at the start of each call (its number from 1).
struct Hooked<E, F> {
    inner: E,
    calls: std::sync::atomic::AtomicUsize,
    hook: F,
}

impl<E: Embedder, F: Fn(usize) -> metarag_core::Result<()> + Send + Sync> Embedder
    for Hooked<E, F>
{
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }
    fn dimension(&self) -> usize {
        self.inner.dimension()
    }
    fn max_tokens(&self) -> usize {
        self.inner.max_tokens()
    }
    async fn embed(&self, texts: &[String]) -> metarag_core::Result<Vec<Vec<f32>>> {
        let n = 1 + self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        (self.hook)(n)?;
        self.inner.embed(texts).await
    }
}

/// The embedded index, whose writes wait (up to 3 s) for the embedder's next call to
/// begin, and record whether it did: a pipeline that writes and then embeds never lets it.
struct WaitingStore {
    inner: EmbeddedIndex,
    embed_began: std::sync::Arc<tokio::sync::Notify>,
    overlapped: std::sync::Mutex<Vec<bool>>,
}

impl StoreRead for WaitingStore {
    async fn document(&self, id: &DocId) -> metarag_core::Result<Option<metarag_core::Document>> {
        StoreRead::document(&self.inner, id).await
    }
    async fn contains(&self, id: &DocId) -> metarag_core::Result<bool> {
        self.inner.contains(id).await
    }
    async fn documents(&self) -> metarag_core::Result<Vec<metarag_core::Document>> {
        StoreRead::documents(&self.inner).await
    }
    async fn chunks(
        &self,
        ids: &[metarag_core::ChunkId],
    ) -> metarag_core::Result<Vec<metarag_core::Chunk>> {
        StoreRead::chunks(&self.inner, ids).await
    }
    async fn document_chunks(&self, id: &DocId) -> metarag_core::Result<Vec<metarag_core::Chunk>> {
        StoreRead::document_chunks(&self.inner, id).await
    }
    async fn stats(&self) -> metarag_core::Result<metarag_core::StoreStats> {
        StoreRead::stats(&self.inner).await
    }
    async fn collections(&self) -> metarag_core::Result<Vec<metarag_core::CollectionInfo>> {
        StoreRead::collections(&self.inner).await
    }
    async fn audit_events(
        &self,
        query: &metarag_core::AuditQuery,
    ) -> metarag_core::Result<Vec<metarag_core::AuditEvent>> {
        StoreRead::audit_events(&self.inner, query).await
    }
    async fn lexical(
        &self,
        q: &str,
        n: usize,
        f: &Filter,
    ) -> metarag_core::Result<Vec<metarag_core::ScoredChunk>> {
        StoreRead::lexical(&self.inner, q, n, f).await
    }
    async fn nearest(
        &self,
        v: &[f32],
        n: usize,
        f: &Filter,
    ) -> metarag_core::Result<Vec<metarag_core::ScoredChunk>> {
        StoreRead::nearest(&self.inner, v, n, f).await
    }
}

impl Store for WaitingStore {
    async fn apply(
        &self,
        updates: Vec<metarag_core::DocumentUpdate>,
        removals: Vec<DocId>,
    ) -> metarag_core::Result<()> {
        let began = tokio::time::timeout(
            std::time::Duration::from_secs(3),
            self.embed_began.notified(),
        )
        .await
        .is_ok();
        self.overlapped.lock().unwrap().push(began);
        Store::apply(&self.inner, updates, removals).await
    }
    async fn stage(
        &self,
        stage: Option<metarag_core::StageId>,
        doc: &DocId,
        chunks: Vec<(metarag_core::ChunkDraft, Vec<f32>)>,
    ) -> metarag_core::Result<metarag_core::StageId> {
        Store::stage(&self.inner, stage, doc, chunks).await
    }
    async fn create_collection(
        &self,
        c: &metarag_core::CollectionId,
    ) -> metarag_core::Result<bool> {
        Store::create_collection(&self.inner, c).await
    }
    async fn rename_collection(
        &self,
        from: &metarag_core::CollectionId,
        to: &metarag_core::CollectionId,
    ) -> metarag_core::Result<()> {
        Store::rename_collection(&self.inner, from, to).await
    }
    async fn delete_collection(&self, c: &metarag_core::CollectionId) -> metarag_core::Result<u64> {
        Store::delete_collection(&self.inner, c).await
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_batch_is_written_while_the_next_is_embedded() {
    let src = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    for i in 0..4 {
        std::fs::write(
            src.path().join(format!("note{i}.md")),
            format!("# Note {i}\n\nNote {i} is about the harbour of Pellmoor and its ferries.\n"),
        )
        .unwrap();
    }
    let began = std::sync::Arc::new(tokio::sync::Notify::new());
    let signal = began.clone();
    let embedder = Hooked {
        inner: metarag_testkit::embedder(),
        calls: Default::default(),
        hook: move |n| {
            // Call n embeds batch n, so it is the one write n - 1 waits for (`notify_one`
            // keeps a permit when the write is not waiting yet).
            if n > 1 {
                signal.notify_one();
            }
            Ok(())
        },
    };
    let store = WaitingStore {
        inner: open_index(data.path()),
        embed_began: began,
        overlapped: Default::default(),
    };
    let options = IngestOptions {
        batch_chunks: 1,
        ..Default::default()
    };
    let (files, _) = discover(&[src.path().to_path_buf()], &options).unwrap();
    let report = Ingester::new(&chunker(64, 0), &embedder, &store, options)
        .run(&files, &|_| {})
        .await
        .unwrap();
    assert_eq!((report.added, report.chunks), (4, 4));
    // Four batches: each of the first three writes saw the next batch's embedding begin
    // (written then embedded, all four would wait in vain); the last has none to see.
    let overlapped = store.overlapped.into_inner().unwrap();
    assert_eq!(overlapped, [true, true, true, false]);
    assert_eq!(store.inner.documents().unwrap().len(), 4);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_embedding_stops_the_run_after_the_batch_being_written_is_written() {
    let src = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    for i in 0..3 {
        std::fs::write(
            src.path().join(format!("note{i}.md")),
            format!("# Note {i}\n\nNote {i} is about the lighthouse of Quarrow.\n"),
        )
        .unwrap();
    }
    let embedder = Hooked {
        inner: metarag_testkit::embedder(),
        calls: Default::default(),
        hook: |n| {
            if n == 3 {
                Err(metarag_core::Error::backend(
                    "embedder",
                    metarag_core::Fault::Internal,
                    "out of memory",
                ))
            } else {
                Ok(())
            }
        },
    };
    let index = open_index(data.path());
    let options = IngestOptions {
        batch_chunks: 1,
        ..Default::default()
    };
    let (files, _) = discover(&[src.path().to_path_buf()], &options).unwrap();
    let err = Ingester::new(&chunker(64, 0), &embedder, &index, options)
        .run(&files, &|_| {})
        .await
        .unwrap_err();
    assert!(err.to_string().contains("out of memory"), "{err}");
    // The second batch's write was under way while the third was embedded: it is kept.
    let stored: Vec<String> = index
        .documents()
        .unwrap()
        .into_iter()
        .map(|d| d.title)
        .collect();
    assert_eq!(stored, ["Note 0", "Note 1"]);
}
