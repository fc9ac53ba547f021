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
    let mut parsed = assemble(path, id, title, DocFormat::Pdf, (text, sections), bytes);
    (parsed.metadata, parsed.date) = info_metadata(&doc);
    Ok(parsed)
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

/// The document information dictionary, if the trailer has a readable one.
fn info_dict(doc: &lopdf::Document) -> Option<&lopdf::Dictionary> {
    match doc.trailer.get(b"Info").ok()? {
        lopdf::Object::Reference(r) => doc.get_object(*r).ok()?.as_dict().ok(),
        lopdf::Object::Dictionary(d) => Some(d),
        _ => None,
    }
}

/// An entry of the information dictionary as text (PDFDocEncoding or UTF-16), if it is a
/// non-empty string.
fn info_text(doc: &lopdf::Document, key: &[u8]) -> Option<String> {
    let raw = info_dict(doc)?.get(key).ok()?.as_str().ok()?;
    let text = lopdf::decode_text_string(&lopdf::Object::String(
        raw.to_vec(),
        lopdf::StringFormat::Literal,
    ))
    .ok()
    .unwrap_or_else(|| String::from_utf8_lossy(raw).into_owned());
    let text = super::collapse_ws(&text);
    (!text.is_empty()).then_some(text)
}

/// The `/Title` of the document information dictionary, if it is a readable string.
fn info_title(doc: &lopdf::Document) -> Option<String> {
    info_text(doc, b"Title")
}

/// `/Author`, `/Subject` and `/Keywords` (a list, split at commas or semicolons) as
/// metadata, and the day of `/CreationDate` (`D:YYYYMMDD...`) as the date.
fn info_metadata(
    doc: &lopdf::Document,
) -> (serde_json::Map<String, serde_json::Value>, Option<i64>) {
    use serde_json::Value;
    let mut out = serde_json::Map::new();
    if let Some(a) = info_text(doc, b"Author") {
        out.insert("author".into(), Value::String(a));
    }
    if let Some(s) = info_text(doc, b"Subject") {
        out.insert("subject".into(), Value::String(s));
    }
    if let Some(k) = info_text(doc, b"Keywords") {
        let words = super::keyword_list(&k);
        if !words.is_empty() {
            out.insert("keywords".into(), Value::Array(words));
        }
    }
    let date = info_text(doc, b"CreationDate").and_then(|d| {
        let digits = d.strip_prefix("D:").unwrap_or(&d);
        let day = digits.get(..8)?;
        if !day.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        super::day_of(&format!("{}-{}-{}", &day[..4], &day[4..6], &day[6..8]))
    });
    (out, date)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_information_dictionary_gives_metadata_and_the_date() {
        let bytes = metarag_testkit::pdf("Airship Report", &["Zeppelins are rigid airships."]);
        let mut doc = lopdf::Document::load_mem(&bytes).unwrap();
        let info = doc.trailer.get(b"Info").unwrap().as_reference().unwrap();
        let dict = doc.get_object_mut(info).unwrap().as_dict_mut().unwrap();
        for (k, v) in [
            ("Author", "Ana  Ruiz"),
            ("Subject", "Airships"),
            ("Keywords", "zeppelin; blimp, , rigid"),
            ("CreationDate", "D:20240305101500+01'00'"),
        ] {
            dict.set(k, lopdf::Object::string_literal(v));
        }
        let mut out = Vec::new();
        doc.save_to(&mut out).unwrap();
        let id = DocId::new("report").unwrap();
        let d = parse(Path::new("report.pdf"), &id, &out).unwrap();
        assert_eq!(d.title, "Airship Report");
        assert_eq!(
            serde_json::Value::Object(d.metadata),
            serde_json::json!({"author": "Ana Ruiz", "subject": "Airships",
                "keywords": ["zeppelin", "blimp", "rigid"]})
        );
        assert_eq!(d.date, Some(1_709_596_800));
        // Only a title: no metadata, no date.
        let d = parse(Path::new("report.pdf"), &id, &bytes).unwrap();
        assert!(d.metadata.is_empty() && d.date.is_none());
    }
}
