//! DOCX: paragraphs and tables in document order; `Heading N` / `Title` styles make sections.

use super::{ParsedDocument, TextBuilder, assemble, file_title};
use crate::{Error, Result};
use docx_rs::{
    DocumentChild, InsertChild, Paragraph, ParagraphChild, RunChild, Table, TableCellContent,
    TableChild, TableRowChild,
};
use metarag_core::{DocFormat, DocId};
use std::path::Path;

/// Most entries in the archive.
pub const MAX_ENTRIES: usize = 10_000;
/// Most bytes one entry may decompress to.
pub const MAX_ENTRY_BYTES: u64 = 128 << 20;
/// Most bytes the whole archive may decompress to.
pub const MAX_TOTAL_BYTES: u64 = 512 << 20;
/// Highest ratio of decompressed to compressed size, once past [`RATIO_FLOOR`] bytes.
pub const MAX_RATIO: u64 = 100;
const RATIO_FLOOR: u64 = 16 << 20;

/// The part holding the document's core properties (title, author, keywords, dates).
const CORE_PART: &str = "docProps/core.xml";
/// Most bytes of the core properties part read (it is a few hundred in practice).
const MAX_CORE_BYTES: u64 = 1 << 20;

/// Decompresses every entry with a cap before docx-rs sees the file, so a zip bomb (a small
/// file that inflates to gigabytes, or millions of entries) is one refused file instead of
/// an exhausted machine. The sizes are measured, not taken from the headers, which can lie.
/// Returns the core properties part, if the archive has one of sane size (docx-rs reads
/// but does not expose it), and the names of the archive's entries.
fn check_archive(path: &Path, bytes: &[u8]) -> Result<(Option<String>, Vec<String>)> {
    use std::io::Read;
    let refuse = |reason: String| Error::Parse {
        path: path.to_path_buf(),
        format: "docx",
        reason,
    };
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes))
        .map_err(|e| refuse(format!("not a zip archive ({e})")))?;
    if archive.len() > MAX_ENTRIES {
        return Err(refuse(format!(
            "{} entries in the archive, beyond the limit of {MAX_ENTRIES}",
            archive.len()
        )));
    }
    let mut total = 0u64;
    let mut core = None;
    let mut names = Vec::with_capacity(archive.len());
    for i in 0..archive.len() {
        let mut entry = archive
            .by_index(i)
            .map_err(|e| refuse(format!("entry {i}: {e}")))?;
        let name = entry.name().to_string();
        let mut capped = (&mut entry).take(MAX_ENTRY_BYTES + 1);
        let size = if name == CORE_PART {
            // Kept rather than discarded: the measured bytes are the part itself. A part
            // that is too big or not UTF-8 is left out; the properties are optional.
            let mut xml = Vec::new();
            capped
                .read_to_end(&mut xml)
                .map_err(|e| refuse(format!("{name}: {e}")))?;
            let size = xml.len() as u64;
            core = (size <= MAX_CORE_BYTES)
                .then(|| String::from_utf8(xml).ok())
                .flatten();
            size
        } else {
            std::io::copy(&mut capped, &mut std::io::sink())
                .map_err(|e| refuse(format!("{name}: {e}")))?
        };
        if size > MAX_ENTRY_BYTES {
            return Err(refuse(format!(
                "{name} decompresses to more than {} MiB",
                MAX_ENTRY_BYTES >> 20
            )));
        }
        names.push(name);
        total += size;
        if total > MAX_TOTAL_BYTES {
            return Err(refuse(format!(
                "the archive decompresses to more than {} MiB",
                MAX_TOTAL_BYTES >> 20
            )));
        }
    }
    let compressed = (bytes.len() as u64).max(1);
    if total > RATIO_FLOOR && total / compressed > MAX_RATIO {
        return Err(refuse(format!(
            "compression ratio {}:1, beyond {MAX_RATIO}:1 (a zip bomb?)",
            total / compressed
        )));
    }
    Ok((core, names))
}

/// The parts docx-rs cannot read a document without, at the places every word processor
/// writes them.
const REQUIRED_PARTS: [&str; 4] = [
    "[Content_Types].xml",
    "_rels/.rels",
    "word/document.xml",
    "word/_rels/document.xml.rels",
];

/// The core properties a user filters by: `dc:title` (returned apart: a fallback title),
/// `dc:creator` as `author`, `dc:subject`, `dc:description`, `cp:category`,
/// `cp:keywords` (a list, split at commas or semicolons) and the day of `dcterms:created`
/// as the date. A part that does not parse gives what was read before the fault.
fn core_properties(
    xml: &str,
) -> (
    Option<String>,
    serde_json::Map<String, serde_json::Value>,
    Option<i64>,
) {
    use quick_xml::events::Event;
    use serde_json::Value;
    let mut reader = quick_xml::Reader::from_str(xml);
    let (mut title, mut meta, mut date) = (None, serde_json::Map::new(), None);
    let mut current: Option<Vec<u8>> = None;
    let mut text = String::new();
    loop {
        match reader.read_event() {
            Ok(Event::Start(e)) => {
                current = Some(e.local_name().as_ref().to_vec());
                text.clear();
            }
            Ok(Event::Text(t)) if current.is_some() => {
                if let Ok(s) = t.xml10_content() {
                    text.push_str(&s);
                }
            }
            Ok(Event::GeneralRef(r)) if current.is_some() => {
                if let Ok(Some(c)) = r.resolve_char_ref() {
                    text.push(c);
                } else if let Ok(name) = r.decode()
                    && let Some(s) = quick_xml::escape::resolve_predefined_entity(&name)
                {
                    text.push_str(s);
                }
            }
            Ok(Event::End(_)) => {
                let value = super::collapse_ws(text.trim());
                match current.take().as_deref() {
                    _ if value.is_empty() => {}
                    Some(b"title") => title = Some(value),
                    Some(b"creator") => {
                        meta.insert("author".into(), Value::String(value));
                    }
                    Some(key @ (b"subject" | b"description" | b"category")) => {
                        let key = String::from_utf8_lossy(key).into_owned();
                        meta.insert(key, Value::String(value));
                    }
                    Some(b"keywords") => {
                        let words = super::keyword_list(&value);
                        if !words.is_empty() {
                            meta.insert("keywords".into(), Value::Array(words));
                        }
                    }
                    Some(b"created") => date = super::day_of(&value),
                    _ => {}
                }
                text.clear();
            }
            Ok(Event::Eof) | Err(_) => break,
            Ok(_) => {}
        }
    }
    (title, meta, date)
}

pub fn parse(path: &Path, id: &DocId, bytes: &[u8]) -> Result<ParsedDocument> {
    let (core, names) = check_archive(path, bytes)?;
    let (core_title, metadata, date) = core.as_deref().map(core_properties).unwrap_or_default();
    let docx = docx_rs::read_docx(bytes).map_err(|e| {
        // docx-rs says only "Failed to read from zip." when a part is missing: name it.
        let missing: Vec<&str> = REQUIRED_PARTS
            .into_iter()
            .filter(|p| !names.iter().any(|n| n == p))
            .collect();
        let reason = match (&e, missing.as_slice()) {
            (docx_rs::ReaderError::ZipError(_), [_, ..]) => {
                format!("the archive has no {}", missing.join(", no "))
            }
            _ => e.to_string(),
        };
        Error::Parse {
            path: path.to_path_buf(),
            format: "docx",
            reason,
        }
    })?;
    let mut b = TextBuilder::new();
    let mut title = None;
    for child in &docx.document.children {
        match child {
            DocumentChild::Paragraph(p) => paragraph(p, &mut b, &mut title),
            DocumentChild::Table(t) => table(t, &mut b, &mut title),
            _ => {}
        }
    }
    let (text, sections) = b.finish();
    // A `Title`/`Heading` paragraph names the document as readers see it; the core title
    // is often a template's leftover, so it comes second.
    let mut parsed = assemble(
        path,
        id,
        title.or(core_title).unwrap_or_else(|| file_title(path)),
        DocFormat::Docx,
        (text, sections),
        bytes,
    );
    parsed.metadata = metadata;
    parsed.date = date;
    Ok(parsed)
}

/// Heading level of a paragraph style id: `Title` is 0 (the root the headings nest under),
/// `Heading1` is 1, `Heading2` is 2...
fn heading_level(style: &str) -> Option<u8> {
    if style.eq_ignore_ascii_case("title") {
        return Some(0);
    }
    let rest = style
        .strip_prefix("Heading")
        .or_else(|| style.strip_prefix("heading"))?
        .trim();
    rest.parse::<u8>().ok().filter(|l| (1..=9).contains(l))
}

fn paragraph(p: &Paragraph, b: &mut TextBuilder, title: &mut Option<String>) {
    let mut text = String::new();
    for c in &p.children {
        paragraph_child(c, &mut text);
    }
    let text = text.trim();
    if text.is_empty() {
        return;
    }
    let style = p
        .property
        .style
        .as_ref()
        .map(|s| s.val.as_str())
        .unwrap_or("");
    if let Some(level) = heading_level(style) {
        if title.is_none() {
            *title = Some(text.to_string());
        }
        b.heading(level, text);
    }
    b.push(text);
    b.break_block();
}

fn paragraph_child(c: &ParagraphChild, out: &mut String) {
    match c {
        ParagraphChild::Run(r) => run(&r.children, out),
        ParagraphChild::Insert(i) => {
            for ic in &i.children {
                if let InsertChild::Run(r) = ic {
                    run(&r.children, out);
                }
            }
        }
        ParagraphChild::Hyperlink(h) => {
            for c in &h.children {
                paragraph_child(c, out);
            }
        }
        _ => {}
    }
}

fn run(children: &[RunChild], out: &mut String) {
    for c in children {
        match c {
            RunChild::Text(t) => out.push_str(&t.text),
            RunChild::Tab(_) | RunChild::PTab(_) => out.push('\t'),
            RunChild::Break(_) | RunChild::CarriageReturn(_) => out.push('\n'),
            _ => {}
        }
    }
}

fn table(t: &Table, b: &mut TextBuilder, title: &mut Option<String>) {
    for TableChild::TableRow(row) in &t.rows {
        for TableRowChild::TableCell(cell) in &row.cells {
            for content in &cell.children {
                match content {
                    TableCellContent::Paragraph(p) => paragraph(p, b, title),
                    TableCellContent::Table(t) => table(t, b, title),
                    _ => {}
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zip_of(entries: &[(&str, Vec<u8>)]) -> Vec<u8> {
        use std::io::Write;
        let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        for (name, data) in entries {
            w.start_file(*name, opts).unwrap();
            w.write_all(data).unwrap();
        }
        w.finish().unwrap().into_inner()
    }

    fn error_of(name: &str, bytes: &[u8]) -> String {
        parse(Path::new(name), &DocId::new(name).unwrap(), bytes)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn zip_bombs_are_refused_by_measured_size() {
        let bomb = zip_of(&[("word/document.xml", vec![b'a'; 200 << 20])]);
        assert!(bomb.len() < 1 << 20, "{}", bomb.len());
        let err = error_of("bomb.docx", &bomb);
        assert!(
            err.contains("bomb.docx") && err.contains("decompresses to more than"),
            "{err}"
        );
        let ratio = zip_of(&[("word/document.xml", vec![b'a'; 20 << 20])]);
        assert!(error_of("r.docx", &ratio).contains("compression ratio"));
        assert!(error_of("n.docx", b"not a zip").contains("not a zip archive"));
    }

    #[test]
    fn a_missing_part_is_named() {
        let body = br#"<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>No rels.</w:t></w:r></w:p></w:body></w:document>"#;
        let types = br#"<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="xml" ContentType="application/xml"/></Types>"#;
        let rels = br#"<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>"#;
        let no_rels = zip_of(&[
            ("[Content_Types].xml", types.to_vec()),
            ("_rels/.rels", rels.to_vec()),
            ("word/document.xml", body.to_vec()),
        ]);
        let err = error_of("norels.docx", &no_rels);
        assert!(
            err.contains("norels.docx")
                && err.contains("the archive has no word/_rels/document.xml.rels"),
            "{err}"
        );
        let bare = zip_of(&[("word/document.xml", body.to_vec())]);
        let err = error_of("bare.docx", &bare);
        assert!(
            err.contains("no [Content_Types].xml, no _rels/.rels, no word/_rels/document.xml.rels"),
            "{err}"
        );
    }

    const CORE: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:dcterms="http://purl.org/dc/terms/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<dc:title>Quarterly   plan</dc:title><dc:subject>Harbour &amp; docks</dc:subject>
<dc:creator>Ada Quillon</dc:creator><cp:keywords>ops; finance, q3</cp:keywords>
<dc:description></dc:description><cp:lastModifiedBy>someone</cp:lastModifiedBy>
<dcterms:created xsi:type="dcterms:W3CDTF">2024-03-05T10:20:00Z</dcterms:created>
</cp:coreProperties>"#;

    /// A real DOCX (docx-rs's writer) whose core properties part is `core`, or which has
    /// none.
    fn docx_with_core(heading: Option<&str>, core: Option<&str>) -> Vec<u8> {
        use std::io::{Read, Write};
        let mut doc = docx_rs::Docx::new();
        if let Some(h) = heading {
            doc = doc.add_paragraph(
                docx_rs::Paragraph::new()
                    .add_run(docx_rs::Run::new().add_text(h))
                    .style("Title"),
            );
        }
        doc = doc.add_paragraph(
            docx_rs::Paragraph::new()
                .add_run(docx_rs::Run::new().add_text("The docks open at six.")),
        );
        let mut packed = std::io::Cursor::new(Vec::new());
        doc.build().pack(&mut packed).unwrap();
        let mut archive = zip::ZipArchive::new(std::io::Cursor::new(packed.into_inner())).unwrap();
        let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let opts = zip::write::SimpleFileOptions::default();
        for i in 0..archive.len() {
            let mut e = archive.by_index(i).unwrap();
            let name = e.name().to_string();
            let mut data = Vec::new();
            e.read_to_end(&mut data).unwrap();
            if name == CORE_PART {
                match core {
                    Some(c) => data = c.as_bytes().to_vec(),
                    None => continue,
                }
            }
            w.start_file(name, opts).unwrap();
            w.write_all(&data).unwrap();
        }
        w.finish().unwrap().into_inner()
    }

    fn parse_bytes(bytes: &[u8]) -> ParsedDocument {
        parse(Path::new("plan.docx"), &DocId::new("plan").unwrap(), bytes).unwrap()
    }

    #[test]
    fn core_properties_give_metadata_the_date_and_a_fallback_title() {
        let d = parse_bytes(&docx_with_core(None, Some(CORE)));
        assert_eq!(
            d.title, "Quarterly plan",
            "no Title paragraph: the core title"
        );
        assert_eq!(
            serde_json::Value::Object(d.metadata.clone()),
            serde_json::json!({
                "author": "Ada Quillon",
                "subject": "Harbour & docks",
                "keywords": ["ops", "finance", "q3"],
            })
        );
        assert_eq!(d.date, Some(1_709_596_800));
        assert!(d.text.contains("The docks open at six."));

        // A Title paragraph names the document; the properties stay.
        let d = parse_bytes(&docx_with_core(Some("Harbour Plan 2024"), Some(CORE)));
        assert_eq!(d.title, "Harbour Plan 2024");
        assert_eq!(d.metadata["author"], "Ada Quillon");

        // No properties part, or a broken one: the text still goes in, with what parsed.
        let d = parse_bytes(&docx_with_core(None, None));
        assert!(d.metadata.is_empty() && d.date.is_none());
        assert_eq!(d.title, "plan");
        let broken = "<cp:coreProperties><dc:creator>Ada</dc:creator><dc:subject>unclosed";
        let d = parse_bytes(&docx_with_core(None, Some(broken)));
        assert_eq!(d.metadata["author"], "Ada");
        assert!(d.metadata.get("subject").is_none());
    }
}
