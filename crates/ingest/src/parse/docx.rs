//! DOCX: paragraphs and tables in document order; `Heading N` / `Title` styles make sections.

use super::{ParsedDocument, TextBuilder, assemble, file_title};
use crate::{Error, Result};
use docx_rs::{
    DocumentChild, InsertChild, Paragraph, ParagraphChild, RunChild, Table, TableCellContent,
    TableChild, TableRowChild,
};
use metarag_core::{DocFormat, DocId};
use std::path::Path;

pub fn parse(path: &Path, id: &DocId, bytes: &[u8]) -> Result<ParsedDocument> {
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
