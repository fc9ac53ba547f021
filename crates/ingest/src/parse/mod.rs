//! Parsers: raw bytes of one file in, one or more [`ParsedDocument`]s out.

mod docx;
mod html;
mod json;
mod markdown;
mod pdf;
pub mod worker;

use crate::{Error, Result};
use metarag_core::{DocFormat, DocId};
use std::ops::Range;
use std::path::Path;

pub use json::CorpusMode;
pub use worker::{Isolation, Parsers, Worker};

/// A contiguous part of a document's text under one heading path (or on one page).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Section {
    /// Heading path from the root.
    pub path: Vec<String>,
    /// Page range for paged formats (1-based, inclusive).
    pub pages: Option<(u32, u32)>,
    /// Byte range inside [`ParsedDocument::text`].
    pub range: Range<usize>,
}

/// A document after parsing, before chunking.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ParsedDocument {
    /// Stable id.
    pub id: DocId,
    /// Title.
    pub title: String,
    /// File path or `file:LINE`.
    pub source: String,
    /// Parser used.
    pub format: DocFormat,
    /// The extracted text; sections and chunk offsets point into it.
    pub text: String,
    /// Sections in order; their ranges don't overlap.
    pub sections: Vec<Section>,
    /// Hash of the raw content (blake3 hex).
    pub raw_hash: String,
    /// Size of the raw content.
    pub bytes: u64,
    /// Date, if the source had one (Unix seconds).
    pub date: Option<i64>,
    /// Key-value metadata the source carried (a corpus record's `metadata` object).
    pub metadata: serde_json::Map<String, serde_json::Value>,
}

/// Which parser reads a file: by extension, or forced.
pub fn detect(path: &Path) -> Option<DocFormat> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    Some(match ext.as_str() {
        "pdf" => DocFormat::Pdf,
        "docx" => DocFormat::Docx,
        "html" | "htm" | "xhtml" => DocFormat::Html,
        "md" | "markdown" | "mdx" => DocFormat::Markdown,
        "txt" | "text" | "rst" | "log" => DocFormat::Text,
        "json" | "jsonl" | "ndjson" => DocFormat::Json,
        _ => return None,
    })
}

/// Longest a parser may spend on one file before the file is skipped with an error.
pub const PARSE_TIME_LIMIT: std::time::Duration = std::time::Duration::from_secs(120);

/// Stack of the parsing thread. Third-party parsers recurse over nested structures (PDF
/// objects, XML); a large stack (reserved, not committed, until used) keeps a deep but
/// legitimate file from overflowing.
const PARSE_STACK: usize = 256 << 20;

/// Parses one file. `id` is the document id for single-document formats; JSON(L) files
/// yield one document per record, each record error reported beside the good documents.
/// The parser runs on its own thread under [`PARSE_TIME_LIMIT`]: a file it cannot finish in
/// time is one error, and the run goes on (the thread is left to finish on its own).
pub fn parse_file(
    path: &Path,
    id: &DocId,
    bytes: &[u8],
    format: DocFormat,
    corpus: CorpusMode,
) -> Result<(Vec<ParsedDocument>, Vec<Error>)> {
    parse_file_within(path, id, bytes, format, corpus, PARSE_TIME_LIMIT)
}

/// [`parse_file`] with another time limit.
pub fn parse_file_within(
    path: &Path,
    id: &DocId,
    bytes: &[u8],
    format: DocFormat,
    corpus: CorpusMode,
    limit: std::time::Duration,
) -> Result<(Vec<ParsedDocument>, Vec<Error>)> {
    use std::sync::mpsc::RecvTimeoutError;
    let (tx, rx) = std::sync::mpsc::channel();
    let (p, i, b) = (path.to_path_buf(), id.clone(), bytes.to_vec());
    let spawned = std::thread::Builder::new()
        .name(PARSE_THREAD.into())
        .stack_size(PARSE_STACK)
        .spawn(move || {
            let _ = tx.send(parse_now(&p, &i, &b, format, corpus));
        });
    if spawned.is_err() {
        // No thread to be had (a process limit): parse here, unbounded, rather than fail.
        return parse_now(path, id, bytes, format, corpus);
    }
    match rx.recv_timeout(limit) {
        Ok(result) => result,
        Err(RecvTimeoutError::Timeout) => Err(Error::Parse {
            path: path.to_path_buf(),
            format: format.as_str(),
            reason: format!(
                "the parser did not finish within {} s; the file was skipped",
                limit.as_secs_f64()
            ),
        }),
        Err(RecvTimeoutError::Disconnected) => Err(Error::Parse {
            path: path.to_path_buf(),
            format: format.as_str(),
            reason: "the parser crashed on this file".into(),
        }),
    }
}

/// One format's parser on `bytes`, in this thread, with neither the time limit nor the
/// panic guard of [`parse_file`]: what the fuzz targets (`fuzz/`) and their regression
/// tests call, so that a panic or a runaway parse shows as what it is. Ingest never calls
/// this.
pub fn parse_unguarded(
    format: DocFormat,
    bytes: &[u8],
) -> Result<(Vec<ParsedDocument>, Vec<Error>)> {
    // JSON Lines are told from one JSON value by the file's extension.
    let path = Path::new(match format {
        DocFormat::CorpusLine => "fuzz-input.jsonl",
        _ => "fuzz-input",
    });
    let id = DocId::new("fuzz-input")?;
    parse_formats(path, &id, bytes, format, CorpusMode::Auto)
}

/// Panics unless `doc`'s sections are in order, do not overlap, and lie inside its text on
/// character boundaries: what chunking relies on. The fuzz targets and the parsers' tests
/// call it on every parsed document.
pub fn check_sections(doc: &ParsedDocument) {
    let mut end = 0;
    for s in &doc.sections {
        assert!(
            end <= s.range.start && s.range.start <= s.range.end && s.range.end <= doc.text.len(),
            "section {:?} of {} after {end} in a text of {} bytes",
            s.range,
            doc.id,
            doc.text.len()
        );
        assert!(doc.text.is_char_boundary(s.range.start) && doc.text.is_char_boundary(s.range.end));
        end = s.range.end;
    }
}

fn parse_formats(
    path: &Path,
    id: &DocId,
    bytes: &[u8],
    format: DocFormat,
    corpus: CorpusMode,
) -> Result<(Vec<ParsedDocument>, Vec<Error>)> {
    let one = |doc: Result<ParsedDocument>| doc.map(|d| (vec![d], Vec::new()));
    match format {
        DocFormat::Pdf => one(pdf::parse(path, id, bytes)),
        DocFormat::Docx => one(docx::parse(path, id, bytes)),
        DocFormat::Html => one(html::parse(path, id, bytes)),
        DocFormat::Markdown => one(markdown::parse(path, id, bytes)),
        DocFormat::Text => one(text(path, id, bytes)),
        DocFormat::Json | DocFormat::CorpusLine => json::parse(path, id, bytes, corpus),
    }
}

fn parse_now(
    path: &Path,
    id: &DocId,
    bytes: &[u8],
    format: DocFormat,
    corpus: CorpusMode,
) -> Result<(Vec<ParsedDocument>, Vec<Error>)> {
    // Third-party parsers can panic on hostile input; one bad file must not stop a run.
    let result = std::panic::catch_unwind(|| parse_formats(path, id, bytes, format, corpus));
    result.unwrap_or_else(|panic| {
        let said = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned());
        Err(Error::Parse {
            path: path.to_path_buf(),
            format: format.as_str(),
            reason: match said {
                Some(m) => format!("the parser crashed on this file ({m})"),
                None => "the parser crashed on this file".into(),
            },
        })
    })
}

/// Name of the thread every file is parsed on ([`parse_file`]).
pub const PARSE_THREAD: &str = "parse";

/// Keeps panics on the parsing thread off standard error: each is caught and becomes that
/// file's error (or, for the PDF fallback, a file without text), and the default hook's
/// "thread 'parse' panicked at ..." in the middle of an ingest reads as a crash of the
/// whole run. They are logged at debug level instead (`-vv`); panics elsewhere go to the
/// hook installed before. Binaries call this once at start; a library never does.
pub fn quiet_parser_panics() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if std::thread::current().name() == Some(PARSE_THREAD) {
            tracing::debug!(panic = %info, "a parser panicked; the file gets an error");
        } else {
            previous(info);
        }
    }));
}

/// Blake3 of raw bytes, hex.
pub(crate) fn hash(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}

/// The file name without extension: the title of last resort.
pub(crate) fn file_title(path: &Path) -> String {
    path.file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("untitled")
        .to_string()
}

/// The text of a file in whatever common encoding it is in: UTF-8 (with or without a
/// byte-order mark), UTF-16 (with a byte-order mark, or without one when its zero bytes
/// say which half of each unit they are), UTF-32 with a byte-order mark, or a legacy
/// single-byte encoding (Latin-1, Windows-1252 and the like) recognised by chardetng.
/// Binary data is refused with the reason, rather than decoded into noise: that includes
/// valid UTF-8 made mostly of NUL or other control characters (a file of zeros is valid
/// UTF-8, and so is UTF-16 without a byte-order mark read as bytes).
pub(crate) fn decode<'a>(
    path: &Path,
    bytes: &'a [u8],
    format: &'static str,
) -> Result<std::borrow::Cow<'a, str>> {
    use std::borrow::Cow;
    let refuse = |reason: String| Error::Parse {
        path: path.to_path_buf(),
        format,
        reason,
    };
    const BINARY: &str = "binary data, not text (neither UTF-8, UTF-16, UTF-32 with a byte-order mark, nor a legacy text encoding)";
    let text = if let Some((big_endian, bom)) = utf32_bom(bytes) {
        let name = if big_endian { "UTF-32BE" } else { "UTF-32LE" };
        Cow::Owned(utf32(&bytes[bom..], big_endian).ok_or_else(|| {
            refuse(format!(
                "it starts with a {name} byte-order mark but is not valid {name}"
            ))
        })?)
    } else if let Some((encoding, bom)) = encoding_rs::Encoding::for_bom(bytes) {
        let (text, had_errors) = encoding.decode_without_bom_handling(&bytes[bom..]);
        if had_errors {
            return Err(refuse(format!(
                "it starts with a {} byte-order mark but is not valid {}",
                encoding.name(),
                encoding.name()
            )));
        }
        text
    } else if let Some(encoding) = utf16_without_bom(bytes) {
        let (text, had_errors) = encoding.decode_without_bom_handling(bytes);
        if had_errors {
            return Err(refuse(BINARY.into()));
        }
        tracing::debug!(path = %path.display(), encoding = encoding.name(), "decoded UTF-16 without a byte-order mark");
        text
    } else if let Ok(s) = std::str::from_utf8(bytes) {
        Cow::Borrowed(s)
    } else {
        // Not UTF-8. Text in a legacy encoding has no NUL bytes (and few control
        // characters, checked below on the decoded text as for every encoding).
        if bytes.contains(&0) {
            return Err(refuse(BINARY.into()));
        }
        let mut detector = chardetng::EncodingDetector::new();
        detector.feed(bytes, true);
        let encoding = detector.guess(None, true);
        let (text, _, had_errors) = encoding.decode(bytes);
        if had_errors {
            return Err(refuse(format!(
                "not UTF-8, and not valid {} either",
                encoding.name()
            )));
        }
        tracing::debug!(path = %path.display(), encoding = encoding.name(), "decoded non-UTF-8 text");
        Cow::Owned(text.into_owned())
    };
    if mostly_controls(text.chars()) {
        return Err(refuse(BINARY.into()));
    }
    Ok(text)
}

/// Whether more than 1% of the characters are NUL or other control characters than
/// those text uses: line breaks, tabs, form and line feeds, and the escape and backspace
/// of terminal colours and overstruck man pages.
fn mostly_controls(chars: impl Iterator<Item = char>) -> bool {
    let (mut n, mut controls) = (0usize, 0usize);
    for c in chars {
        n += 1;
        if c.is_control()
            && !matches!(
                c,
                '\n' | '\r' | '\t' | '\u{0b}' | '\u{0c}' | '\u{1b}' | '\u{08}'
            )
        {
            controls += 1;
        }
    }
    controls * 100 > n
}

/// A UTF-32 byte-order mark: whether it is big-endian, and its length. Checked before
/// UTF-16's, whose little-endian mark is the first half of UTF-32's.
fn utf32_bom(bytes: &[u8]) -> Option<(bool, usize)> {
    match bytes {
        [0, 0, 0xFE, 0xFF, ..] => Some((true, 4)),
        [0xFF, 0xFE, 0, 0, ..] => Some((false, 4)),
        _ => None,
    }
}

/// UTF-32 code units as text; `None` when the length or a unit is not valid UTF-32.
fn utf32(bytes: &[u8], big_endian: bool) -> Option<String> {
    if !bytes.len().is_multiple_of(4) {
        return None;
    }
    bytes
        .chunks_exact(4)
        .map(|u| {
            let u = [u[0], u[1], u[2], u[3]];
            char::from_u32(if big_endian {
                u32::from_be_bytes(u)
            } else {
                u32::from_le_bytes(u)
            })
        })
        .collect()
}

/// UTF-16 without a byte-order mark, told by its zero bytes: text in a Latin script
/// written as UTF-16 has a zero in the high byte of most units, so at least a third of
/// the units hold a zero byte and nearly all of those zeros sit at odd offsets
/// (little-endian) or at even ones (big-endian). Binary data has zeros on both.
fn utf16_without_bom(bytes: &[u8]) -> Option<&'static encoding_rs::Encoding> {
    // Every text file passes here: most have no zero byte, found at memchr speed.
    if bytes.len() < 4 || !bytes.len().is_multiple_of(2) || !bytes.contains(&0) {
        return None;
    }
    let (mut even, mut odd) = (0usize, 0usize);
    for (i, &b) in bytes.iter().enumerate() {
        if b == 0 {
            if i % 2 == 0 {
                even += 1;
            } else {
                odd += 1;
            }
        }
    }
    let units = bytes.len() / 2;
    let (zeros, stray) = (even.max(odd), even.min(odd));
    if zeros * 3 < units || stray * 20 > zeros {
        return None;
    }
    Some(if odd > even {
        encoding_rs::UTF_16LE
    } else {
        encoding_rs::UTF_16BE
    })
}

/// The day of a date or timestamp a source gives its document (`2024-03-05`,
/// `2024-03-05T10:00:00Z`) as Unix seconds at UTC midnight.
pub(crate) fn day_of(s: &str) -> Option<i64> {
    metarag_core::time::parse_day(s.trim().get(..10).unwrap_or(s.trim()))
}

/// A keyword list as written in document properties (`canal, locks; ships`): the
/// non-empty items between commas or semicolons, as JSON strings.
pub(crate) fn keyword_list(s: &str) -> Vec<serde_json::Value> {
    s.split([',', ';'])
        .map(str::trim)
        .filter(|w| !w.is_empty())
        .map(|w| serde_json::Value::String(w.to_string()))
        .collect()
}

/// Assembles a parsed file: source, hash and size come from the path and raw bytes.
pub(crate) fn assemble(
    path: &Path,
    id: &DocId,
    title: String,
    format: DocFormat,
    (text, sections): (String, Vec<Section>),
    raw: &[u8],
) -> ParsedDocument {
    ParsedDocument {
        id: id.clone(),
        title,
        source: path.display().to_string(),
        format,
        text,
        sections,
        raw_hash: hash(raw),
        bytes: raw.len() as u64,
        date: None,
        metadata: serde_json::Map::new(),
    }
}

/// A single-section document over `text`.
pub(crate) fn whole(
    path: &Path,
    id: &DocId,
    title: String,
    format: DocFormat,
    text: String,
    raw: &[u8],
) -> ParsedDocument {
    let section = Section {
        path: Vec::new(),
        pages: None,
        range: 0..text.len(),
    };
    assemble(path, id, title, format, (text, vec![section]), raw)
}

fn text(path: &Path, id: &DocId, bytes: &[u8]) -> Result<ParsedDocument> {
    let s = decode(path, bytes, "text")?;
    Ok(whole(
        path,
        id,
        file_title(path),
        DocFormat::Text,
        s.to_string(),
        bytes,
    ))
}

/// Builds a document's text section by section, keeping heading paths.
pub(crate) struct TextBuilder {
    text: String,
    sections: Vec<Section>,
    headings: Vec<(u8, String)>,
    section_start: usize,
    pages: Option<(u32, u32)>,
}

impl TextBuilder {
    pub fn new() -> Self {
        TextBuilder {
            text: String::new(),
            sections: Vec::new(),
            headings: Vec::new(),
            section_start: 0,
            pages: None,
        }
    }

    pub fn push(&mut self, s: &str) {
        self.text.push_str(s);
    }

    /// Ends the current paragraph: at most one blank line between blocks.
    pub fn break_block(&mut self) {
        let trimmed = self.text.trim_end_matches([' ', '\t']).len();
        self.text.truncate(trimmed);
        if self.text.is_empty() || self.text.ends_with("\n\n") {
            return;
        }
        self.text.push_str(if self.text.ends_with('\n') {
            "\n"
        } else {
            "\n\n"
        });
    }

    pub fn ends_with_space(&self) -> bool {
        self.text.is_empty() || self.text.ends_with(char::is_whitespace)
    }

    /// Closes the current section and opens one under a heading of `level` (1 = top).
    pub fn heading(&mut self, level: u8, title: &str) {
        self.close_section();
        while self.headings.last().is_some_and(|(l, _)| *l >= level) {
            self.headings.pop();
        }
        self.headings.push((level, title.to_string()));
    }

    /// Closes the current section and opens one for a page.
    pub fn page(&mut self, page: u32) {
        self.close_section();
        self.pages = Some((page, page));
    }

    fn close_section(&mut self) {
        self.break_block();
        let end = self.text.len();
        if self.text[self.section_start..end].trim().is_empty() {
            self.section_start = end;
            return;
        }
        self.sections.push(Section {
            path: self.headings.iter().map(|(_, t)| t.clone()).collect(),
            pages: self.pages,
            range: self.section_start..end,
        });
        self.section_start = end;
    }

    pub fn finish(mut self) -> (String, Vec<Section>) {
        self.close_section();
        (self.text, self.sections)
    }
}

/// Collapses runs of whitespace to single spaces.
pub(crate) fn collapse_ws(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(bytes: &[u8]) -> Result<String> {
        decode(Path::new("f.txt"), bytes, "text").map(|c| c.into_owned())
    }

    #[test]
    fn a_parser_past_its_time_limit_fails_that_file_only() {
        let depth = html::MAX_DEPTH;
        let slow = format!("{}x{}", "<div>".repeat(depth), "</div>".repeat(depth));
        let id = DocId::new("s").unwrap();
        let err = parse_file_within(
            Path::new("slow.html"),
            &id,
            slow.as_bytes(),
            DocFormat::Html,
            CorpusMode::Auto,
            std::time::Duration::ZERO,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("slow.html") && err.contains("did not finish"),
            "{err}"
        );
        let (docs, _) = parse_file(
            Path::new("ok.html"),
            &id,
            slow.as_bytes(),
            DocFormat::Html,
            CorpusMode::Auto,
        )
        .unwrap();
        assert_eq!(docs[0].text.trim(), "x");
    }

    #[test]
    fn legacy_and_utf16_text_is_decoded_and_binary_is_refused() {
        let s = "Café au lait, naïve façade: the Müller résumé costs 5 €.";
        let (cp1252, _, _) = encoding_rs::WINDOWS_1252.encode(s);
        assert_eq!(read(&cp1252).unwrap(), s);
        let mut utf16 = vec![0xff, 0xfe];
        utf16.extend(s.encode_utf16().flat_map(u16::to_le_bytes));
        assert_eq!(read(&utf16).unwrap(), s);
        let mut bom8 = vec![0xef, 0xbb, 0xbf];
        bom8.extend(s.as_bytes());
        assert_eq!(read(&bom8).unwrap(), s);
        assert_eq!(read(s.as_bytes()).unwrap(), s);
        let binary: Vec<u8> = (0..=255u8).cycle().take(2560).collect();
        let err = read(&binary).unwrap_err().to_string();
        assert!(
            err.contains("f.txt") && err.contains("binary data"),
            "{err}"
        );
    }

    #[test]
    fn utf32_and_utf16_without_a_mark_are_decoded() {
        let s = "Plain text from Zürich, 5 €, naïve.\n";
        let le: Vec<u8> = [0xff, 0xfe, 0, 0]
            .into_iter()
            .chain(s.chars().flat_map(|c| (c as u32).to_le_bytes()))
            .collect();
        assert_eq!(read(&le).unwrap(), s);
        let be: Vec<u8> = [0, 0, 0xfe, 0xff]
            .into_iter()
            .chain(s.chars().flat_map(|c| (c as u32).to_be_bytes()))
            .collect();
        assert_eq!(read(&be).unwrap(), s);
        // A unit past U+10FFFF, or a length that is not whole units, is not UTF-32.
        let mut bad = le.clone();
        bad.extend([0, 0, 0x11, 0]);
        let err = read(&bad).unwrap_err().to_string();
        assert!(err.contains("not valid UTF-32LE"), "{err}");
        assert!(read(&le[..le.len() - 1]).is_err());
        // UTF-16 with no byte-order mark, as some Windows tools write it: it is valid
        // UTF-8 byte for byte (ASCII with NULs between), and was stored that way.
        let u16le: Vec<u8> = s.encode_utf16().flat_map(u16::to_le_bytes).collect();
        assert_eq!(read(&u16le).unwrap(), s);
        let u16be: Vec<u8> = s.encode_utf16().flat_map(u16::to_be_bytes).collect();
        assert_eq!(read(&u16be).unwrap(), s);
    }

    #[test]
    fn valid_utf8_made_of_control_characters_is_binary() {
        for junk in [vec![0u8; 4096], b"\x01\x02\x03\x04 text".repeat(100)] {
            let err = read(&junk).unwrap_err().to_string();
            assert!(err.contains("binary data"), "{err}");
        }
        // Terminal colours, overstruck man pages and a stray NUL are still text.
        let coloured = "\x1b[1mbold\x1b[0m and N\x08NA\x08AM\x08ME, and one\0 stray NUL in a long enough line of text: a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t, u, v, w, x, y, z.\n";
        let coloured = coloured.repeat(3);
        assert_eq!(read(coloured.as_bytes()).unwrap(), coloured);
    }
}
