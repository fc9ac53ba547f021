//! HTML: visible text with headings as sections; scripts, styles and navigation dropped.

use super::{ParsedDocument, TextBuilder, assemble, collapse_ws, file_title};
use crate::Result;
use metarag_core::{DocFormat, DocId};
use scraper::{ElementRef, Html, Node, Selector};
use std::path::Path;

/// Elements whose content is never document text.
const SKIP: &[&str] = &[
    "script", "style", "noscript", "nav", "header", "footer", "aside", "form", "svg", "template",
    "iframe", "button", "select", "head",
];

/// Elements that end a block of text.
const BLOCK: &[&str] = &[
    "p",
    "div",
    "section",
    "article",
    "main",
    "li",
    "ul",
    "ol",
    "table",
    "tr",
    "pre",
    "blockquote",
    "br",
    "hr",
    "dd",
    "dt",
    "figure",
    "figcaption",
    "td",
    "th",
];

pub fn parse(path: &Path, id: &DocId, bytes: &[u8]) -> Result<ParsedDocument> {
    let html = Html::parse_document(&String::from_utf8_lossy(bytes));
    let title = Selector::parse("title")
        .ok()
        .and_then(|s| html.select(&s).next())
        .map(|t| collapse_ws(&t.text().collect::<String>()))
        .filter(|t| !t.is_empty());
    let mut b = TextBuilder::new();
    let mut first_h1 = None;
    walk(html.root_element(), &mut b, &mut first_h1, false);
    let (text, sections) = b.finish();
    Ok(assemble(
        path,
        id,
        title.or(first_h1).unwrap_or_else(|| file_title(path)),
        DocFormat::Html,
        (text, sections),
        bytes,
    ))
}

fn walk(el: ElementRef<'_>, b: &mut TextBuilder, first_h1: &mut Option<String>, pre: bool) {
    let name = el.value().name();
    if SKIP.contains(&name) {
        return;
    }
    if let Some(level) = heading_level(name) {
        let title = collapse_ws(&el.text().collect::<String>());
        if !title.is_empty() {
            if level == 1 && first_h1.is_none() {
                *first_h1 = Some(title.clone());
            }
            b.heading(level, &title);
            b.push(&title);
            b.break_block();
        }
        return;
    }
    let block = BLOCK.contains(&name);
    if block {
        b.break_block();
    }
    let pre = pre || name == "pre";
    for child in el.children() {
        match child.value() {
            Node::Text(t) => {
                if pre {
                    b.push(t);
                } else {
                    let collapsed = collapse_ws(t);
                    if collapsed.is_empty() {
                        continue;
                    }
                    // Keep the word boundary the source had between inline elements.
                    if t.starts_with(char::is_whitespace) && !b.ends_with_space() {
                        b.push(" ");
                    }
                    b.push(&collapsed);
                    if t.ends_with(char::is_whitespace) {
                        b.push(" ");
                    }
                }
            }
            Node::Element(_) => {
                if let Some(child) = ElementRef::wrap(child) {
                    walk(child, b, first_h1, pre);
                }
            }
            _ => {}
        }
    }
    if block {
        b.break_block();
    }
}

fn heading_level(name: &str) -> Option<u8> {
    match name {
        "h1" => Some(1),
        "h2" => Some(2),
        "h3" => Some(3),
        "h4" => Some(4),
        "h5" => Some(5),
        "h6" => Some(6),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_scripts_and_nav_keeps_headings() {
        let html = br#"<html><head><title>Locks</title><script>var x=1;</script></head>
<body><nav>Home | About</nav><h1>Panama Canal</h1><p>The <b>locks</b> were designed by
engineers.</p><h2>History</h2><p>Built 1904&ndash;1914.</p><footer>(c) site</footer></body></html>"#;
        let id = DocId::new("x").unwrap();
        let d = parse(Path::new("x.html"), &id, html).unwrap();
        assert_eq!(d.title, "Locks");
        assert!(!d.text.contains("var x"));
        assert!(!d.text.contains("Home | About"));
        assert!(!d.text.contains("(c) site"));
        assert!(
            d.text.contains("The locks were designed by engineers."),
            "{}",
            d.text
        );
        let paths: Vec<_> = d.sections.iter().map(|s| s.path.join("/")).collect();
        assert_eq!(paths, ["Panama Canal", "Panama Canal/History"]);
        assert!(d.text[d.sections[1].range.clone()].contains("1904–1914"));
    }
}
