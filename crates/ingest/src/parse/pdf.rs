//! PDF: text per page with lopdf, pdf-extract as the fallback for files lopdf reads badly.

use super::{ParsedDocument, TextBuilder, assemble, file_title};
use crate::{Error, Result};
use metarag_core::{DocFormat, DocId};
use std::path::Path;

pub fn parse(path: &Path, id: &DocId, bytes: &[u8]) -> Result<ParsedDocument> {
    let parse_err = |reason: String| Error::Parse {
        path: path.to_path_buf(),
        format: "pdf",
        reason,
    };
    let doc = match lopdf::Document::load_mem(bytes) {
        Ok(d) => d,
        Err(lopdf::Error::Decryption(_)) => {
            return Err(Error::Encrypted {
                path: path.to_path_buf(),
            });
        }
        Err(e) => return Err(parse_err(e.to_string())),
    };
    let pages: Vec<u32> = doc.get_pages().keys().copied().collect();
    let mut texts: Vec<String> = pages
        .iter()
        .map(|&p| doc.extract_text(&[p]).unwrap_or_default())
        .collect();
    if texts.iter().all(|t| t.trim().is_empty()) {
        if doc.is_encrypted() {
            return Err(Error::Encrypted {
                path: path.to_path_buf(),
            });
        }
        // lopdf misses text drawn through some font encodings; pdf-extract decodes more.
        // It also panics on some malformed files (fuzzing found an `expect` on a missing
        // object in its content-stream walk): its failure, returned or panicked, leaves the
        // file without text, reported as such, rather than failing as a crash. And it
        // follows a page's `/Parent` chain without a guard, so a cycle (a page that is its
        // own parent, also found by fuzzing) never returns: such a file skips it.
        if !parent_cycle(&doc)
            && let Ok(Ok(alt)) =
                std::panic::catch_unwind(|| pdf_extract::extract_text_from_mem_by_pages(bytes))
        {
            texts = alt;
        }
    }
    let title = info_title(&doc).unwrap_or_else(|| file_title(path));
    let mut b = TextBuilder::new();
    for (i, t) in texts.iter().enumerate() {
        let page = pages.get(i).copied().unwrap_or(i as u32 + 1);
        b.page(page);
        b.push(t.trim());
    }
    let (text, sections) = b.finish();
    if text.trim().is_empty() {
        return Err(Error::Empty {
            path: format!("{} (a scanned PDF needs OCR first)", path.display()),
        });
    }
    Ok(assemble(
        path,
        id,
        title,
        DocFormat::Pdf,
        (text, sections),
        bytes,
    ))
}

/// Whether following `/Parent` from some page comes back to an object already passed.
fn parent_cycle(doc: &lopdf::Document) -> bool {
    doc.get_pages().values().any(|&page| {
        let mut seen = std::collections::HashSet::new();
        let mut id = page;
        while seen.insert(id) {
            match doc
                .get_dictionary(id)
                .and_then(|d| d.get(b"Parent"))
                .and_then(|p| p.as_reference())
            {
                Ok(parent) => id = parent,
                Err(_) => return false,
            }
        }
        true
    })
}

/// The `/Title` of the document information dictionary, if it is a readable string.
fn info_title(doc: &lopdf::Document) -> Option<String> {
    let info = doc.trailer.get(b"Info").ok()?;
    let dict = match info {
        lopdf::Object::Reference(r) => doc.get_object(*r).ok()?.as_dict().ok()?,
        lopdf::Object::Dictionary(d) => d,
        _ => return None,
    };
    let raw = dict.get(b"Title").ok()?.as_str().ok()?;
    let title = lopdf::decode_text_string(&lopdf::Object::String(
        raw.to_vec(),
        lopdf::StringFormat::Literal,
    ))
    .ok()
    .unwrap_or_else(|| String::from_utf8_lossy(raw).into_owned());
    let title = title.trim().to_string();
    (!title.is_empty()).then_some(title)
}
