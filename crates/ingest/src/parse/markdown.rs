//! Markdown: the raw text is kept as is; sections follow the heading hierarchy.

use super::{ParsedDocument, Section, assemble, decode, file_title};
use crate::Result;
use metarag_core::{DocFormat, DocId};
use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use std::path::Path;

pub fn parse(path: &Path, id: &DocId, bytes: &[u8]) -> Result<ParsedDocument> {
    let text = decode(path, bytes, "markdown")?;
    let (title, sections) = sections(&text);
    Ok(assemble(
        path,
        id,
        title.unwrap_or_else(|| file_title(path)),
        DocFormat::Markdown,
        (text.to_string(), sections),
        bytes,
    ))
}

/// Splits markdown at headings. Each section runs from its heading line to the next
/// heading, so a chunk keeps the heading it sits under. Returns the first level-1 heading
/// as the title.
pub(crate) fn sections(text: &str) -> (Option<String>, Vec<Section>) {
    let mut headings: Vec<(usize, u8, String)> = Vec::new(); // (start offset, level, text)
    let mut current: Option<(usize, u8, String)> = None;
    for (event, range) in Parser::new_ext(text, Options::all()).into_offset_iter() {
        match event {
            Event::Start(Tag::Heading { level, .. }) => {
                current = Some((range.start, level as u8, String::new()))
            }
            Event::Text(t) | Event::Code(t) => {
                if let Some((_, _, s)) = current.as_mut() {
                    s.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                if let Some((start, level, s)) = current.take() {
                    headings.push((start, level, s.trim().to_string()));
                }
            }
            _ => {}
        }
    }
    let title = headings.iter().find(|h| h.1 == 1).map(|h| h.2.clone());
    let mut out = Vec::new();
    let mut stack: Vec<(u8, String)> = Vec::new();
    let first = headings.first().map_or(text.len(), |h| h.0);
    if !text[..first].trim().is_empty() {
        out.push(Section {
            path: Vec::new(),
            pages: None,
            range: 0..first,
        });
    }
    for (i, (start, level, title)) in headings.iter().enumerate() {
        while stack.last().is_some_and(|(l, _)| l >= level) {
            stack.pop();
        }
        stack.push((*level, title.clone()));
        let end = headings.get(i + 1).map_or(text.len(), |h| h.0);
        if !text[*start..end].trim().is_empty() {
            out.push(Section {
                path: stack.iter().map(|(_, t)| t.clone()).collect(),
                pages: None,
                range: *start..end,
            });
        }
    }
    (title, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heading_paths_follow_levels() {
        let md = "intro\n\n# A\n\ntext a\n\n## B\n\ntext b\n\n# C\n\ntext c\n";
        let (title, s) = sections(md);
        assert_eq!(title.as_deref(), Some("A"));
        let paths: Vec<_> = s.iter().map(|s| s.path.join("/")).collect();
        assert_eq!(paths, ["", "A", "A/B", "C"]);
        assert_eq!(&md[s[2].range.clone()], "## B\n\ntext b\n\n");
        // Sections tile the text without gaps.
        assert_eq!(s.last().unwrap().range.end, md.len());
    }
}
