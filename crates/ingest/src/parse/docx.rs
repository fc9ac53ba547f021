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

/// Decompresses every entry with a cap before docx-rs sees the file, so a zip bomb (a small
/// file that inflates to gigabytes, or millions of entries) is one refused file instead of
/// an exhausted machine. The sizes are measured, not taken from the headers, which can lie.
fn check_archive(path: &Path, bytes: &[u8]) -> Result<()> {
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
    for i in 0..archive.len() {
        let entry = archive
            .by_index(i)
            .map_err(|e| refuse(format!("entry {i}: {e}")))?;
        let name = entry.name().to_string();
        let size = std::io::copy(&mut entry.take(MAX_ENTRY_BYTES + 1), &mut std::io::sink())
            .map_err(|e| refuse(format!("{name}: {e}")))?;
        if size > MAX_ENTRY_BYTES {
            return Err(refuse(format!(
                "{name} decompresses to more than {} MiB",
                MAX_ENTRY_BYTES >> 20
            )));
        }
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
    Ok(())
}

pub fn parse(path: &Path, id: &DocId, bytes: &[u8]) -> Result<ParsedDocument> {
    check_archive(path, bytes)?;
    let docx = docx_rs::read_docx(bytes).map_err(|e| Error::Parse {
        path: path.to_path_buf(),
        format: "docx",
        reason: e.to_string(),
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
    Ok(assemble(
        path,
        id,
        title.unwrap_or_else(|| file_title(path)),
        DocFormat::Docx,
        (text, sections),
        bytes,
    ))
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
}
