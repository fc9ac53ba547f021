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

/// Deepest element nesting accepted. Browsers stop nesting at a few hundred levels; real
/// pages stay far below this, and the HTML parser's work grows with depth times elements,
/// so a file nested hundreds of thousands deep would take minutes: it is refused instead.
pub const MAX_DEPTH: usize = 4096;

/// Most attributes one tag may carry. The HTML parser checks each new attribute against
/// the tag's others, so its time grows with their square: one tag of 200,000 attributes
/// (2.3 MB) took 25 s, and a 64 MB file of them would take hours. Real tags carry tens.
pub const MAX_ATTRIBUTES: usize = 1024;

pub fn parse(path: &Path, id: &DocId, bytes: &[u8]) -> Result<ParsedDocument> {
    let source = super::decode(path, bytes, "html")?;
    let refuse = |reason: String| crate::Error::Parse {
        path: path.to_path_buf(),
        format: "html",
        reason,
    };
    let shape = shape(&source);
    if shape.depth > MAX_DEPTH {
        return Err(refuse(format!(
            "elements nested {} deep, beyond the limit of {MAX_DEPTH} (a broken or hostile file)",
            shape.depth
        )));
    }
    if shape.attributes > MAX_ATTRIBUTES {
        return Err(refuse(format!(
            "a tag with {} attributes, beyond the limit of {MAX_ATTRIBUTES} (a broken or hostile file)",
            shape.attributes
        )));
    }
    let html = Html::parse_document(&source);
    let title = Selector::parse("title")
        .ok()
        .and_then(|s| html.select(&s).next())
        .map(|t| collapse_ws(&t.text().collect::<String>()))
        .filter(|t| !t.is_empty());
    let mut b = TextBuilder::new();
    let mut first_h1 = None;
    walk(html.root_element(), &mut b, &mut first_h1);
    let (text, sections) = b.finish();
    let mut doc = assemble(
        path,
        id,
        title.or(first_h1).unwrap_or_else(|| file_title(path)),
        DocFormat::Html,
        (text, sections),
        bytes,
    );
    (doc.metadata, doc.date) = head_metadata(&html);
    Ok(doc)
}

/// The page's `<meta>` tags that describe it: `author`, `description` and `keywords` (a
/// list) by `name`, and the Open Graph / article properties `og:type`,
/// `og:site_name` and `article:section` / `article:tag`; the date from
/// `article:published_time`, `date` or `dc.date` (its day).
fn head_metadata(html: &Html) -> (serde_json::Map<String, serde_json::Value>, Option<i64>) {
    use serde_json::Value;
    let mut out = serde_json::Map::new();
    let mut date = None;
    let Ok(meta) = Selector::parse("meta[content]") else {
        return (out, date);
    };
    let mut tags: Vec<Value> = Vec::new();
    for el in html.select(&meta) {
        let e = el.value();
        let Some(key) = e.attr("name").or_else(|| e.attr("property")) else {
            continue;
        };
        let content = collapse_ws(e.attr("content").unwrap_or(""));
        if content.is_empty() {
            continue;
        }
        match key.to_ascii_lowercase().as_str() {
            "author" => {
                out.insert("author".into(), Value::String(content));
            }
            "description" | "og:description" => {
                out.entry("description").or_insert(Value::String(content));
            }
            "keywords" => {
                out.insert(
                    "keywords".into(),
                    Value::Array(super::keyword_list(&content)),
                );
            }
            "og:type" => {
                out.insert("type".into(), Value::String(content));
            }
            "og:site_name" => {
                out.insert("site".into(), Value::String(content));
            }
            "article:section" => {
                out.insert("section".into(), Value::String(content));
            }
            "article:tag" => tags.push(Value::String(content)),
            "article:published_time" | "date" | "dc.date" | "dcterms.date" => {
                date = date.or_else(|| super::day_of(&content));
            }
            _ => {}
        }
    }
    if !tags.is_empty() {
        out.insert("tags".into(), Value::Array(tags));
    }
    (out, date)
}

/// One step of the document walk. The walk keeps its own stack rather than recursing, so a
/// file nested a few hundred thousand elements deep is text like any other instead of a
/// stack overflow that takes the whole run down.
enum Step<'a> {
    /// Visit an element (inside `<pre>` or not).
    Enter(ElementRef<'a>, bool),
    /// A text node (inside `<pre>` or not).
    Text(&'a str, bool),
    /// Leave an element; `true` if it was a block.
    Leave(bool),
}

fn walk(root: ElementRef<'_>, b: &mut TextBuilder, first_h1: &mut Option<String>) {
    let mut stack = vec![Step::Enter(root, false)];
    while let Some(step) = stack.pop() {
        match step {
            Step::Leave(block) => {
                if block {
                    b.break_block();
                }
            }
            Step::Text(t, pre) => {
                if pre {
                    b.push(t);
                    continue;
                }
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
            Step::Enter(el, pre) => {
                let name = el.value().name();
                if SKIP.contains(&name) {
                    continue;
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
                    continue;
                }
                let block = BLOCK.contains(&name);
                if block {
                    b.break_block();
                }
                let pre = pre || name == "pre";
                stack.push(Step::Leave(block));
                // Reversed, so the children come off the stack in document order.
                for child in el.children().rev() {
                    match child.value() {
                        Node::Text(t) => stack.push(Step::Text(t, pre)),
                        Node::Element(_) => {
                            if let Some(child) = ElementRef::wrap(child) {
                                stack.push(Step::Enter(child, pre));
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
    }
}

/// Elements that never have content.
const VOID: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
    "track", "wbr",
];

/// Elements whose end tag may be left out (`<p>`, `<li>`, table cells): not counted, so a page
/// of unclosed paragraphs does not look deep.
const OPTIONAL_END: &[&str] = &[
    "p", "li", "dt", "dd", "tr", "td", "th", "option", "optgroup", "thead", "tbody", "tfoot",
    "colgroup", "caption", "rb", "rt", "rp", "rtc", "html", "head", "body",
];

/// Elements whose content is raw text, skipped to their end tag.
const RAW_TEXT: &[&str] = &[
    "script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes",
];

/// What the pre-scan measures of a page before the parser builds its tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// The deepest nesting of elements: an estimate that errs high only for end tags left
    /// out of elements not in [`OPTIONAL_END`].
    pub depth: usize,
    /// The most attributes on one tag.
    pub attributes: usize,
}

/// Nesting depth and the most attributes on a tag, in one pass over the tags, without
/// building the tree.
pub fn shape(html: &str) -> Shape {
    let b = html.as_bytes();
    let (mut i, mut depth, mut max, mut attributes) = (0, 0usize, 0usize, 0usize);
    while let Some(off) = b[i..].iter().position(|&c| c == b'<') {
        i += off + 1;
        if b[i..].starts_with(b"!--") {
            i = html[i..].find("-->").map_or(b.len(), |e| i + e + 3);
            continue;
        }
        let closing = b.get(i) == Some(&b'/');
        let start = i + usize::from(closing);
        let end = start
            + b[start..]
                .iter()
                .take_while(|c| c.is_ascii_alphanumeric() || **c == b'-')
                .count();
        if end == start || !b[start].is_ascii_alphabetic() {
            continue;
        }
        let name = html[start..end].to_ascii_lowercase();
        let tag_end = b[end..]
            .iter()
            .position(|&c| c == b'>')
            .map_or(b.len(), |e| end + e);
        let self_closing = tag_end > end && b[tag_end - 1] == b'/';
        attributes = attributes.max(attribute_count(&b[end..tag_end]));
        i = tag_end.min(b.len());
        if VOID.contains(&name.as_str()) || OPTIONAL_END.contains(&name.as_str()) {
            continue;
        }
        if closing {
            depth = depth.saturating_sub(1);
        } else if !self_closing {
            if RAW_TEXT.contains(&name.as_str()) {
                i = raw_text_end(b, i, name.as_bytes());
                continue;
            }
            depth += 1;
            max = max.max(depth);
        }
    }
    Shape {
        depth: max,
        attributes,
    }
}

/// The attributes in a tag's text after its name: names that start after whitespace,
/// outside quoted values, and are not a value after `=`.
fn attribute_count(tag: &[u8]) -> usize {
    let (mut n, mut quote, mut spaced, mut after_eq) = (0, None, true, false);
    for &c in tag {
        if let Some(q) = quote {
            if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            b'"' | b'\'' => {
                quote = Some(c);
                spaced = false;
                after_eq = false;
            }
            b'=' => {
                after_eq = true;
                spaced = false;
            }
            b'/' => spaced = true,
            c if c.is_ascii_whitespace() => spaced = true,
            _ => {
                if spaced && !after_eq {
                    n += 1;
                }
                spaced = false;
                after_eq = false;
            }
        }
    }
    n
}

/// Where the raw-text element `name` (script, style...) that opened before `from` ends:
/// just past its end tag `</name ...>`, in any case, or the end of the text. The end tag
/// is skipped with the element: counted as a closing tag, it took a level off that its
/// start never added, so scripts between nested elements hid their depth. Compared in
/// place: a lowercased copy of the rest of the page for every such element made a page
/// of many scripts quadratic.
fn raw_text_end(b: &[u8], from: usize, name: &[u8]) -> usize {
    let mut i = from;
    while let Some(off) = b[i..].windows(2).position(|w| w == b"</") {
        let at = i + off;
        let tag = &b[at + 2..];
        if tag.len() >= name.len() && tag[..name.len()].eq_ignore_ascii_case(name) {
            let close = at + 2 + name.len();
            return b[close..]
                .iter()
                .position(|&c| c == b'>')
                .map_or(b.len(), |e| close + e + 1);
        }
        i = at + 2;
    }
    b.len()
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

    fn depth(html: &str) -> usize {
        shape(html).depth
    }

    #[test]
    fn nesting_depth_counts_real_nesting_not_unclosed_paragraphs() {
        assert_eq!(depth("<div><div><span>x</span></div></div>"), 3);
        assert_eq!(depth("<p>a<p>b<p>c<li>d<br><img src=x>"), 0);
        assert_eq!(
            depth("<div><script>if (a<b) { '<div><div>' }</script><!-- <div><div> --></div>"),
            1
        );
        let deep = format!("{}x{}", "<div>".repeat(10_000), "</div>".repeat(10_000));
        assert_eq!(depth(&deep), 10_000);
        // A raw-text element closes in any case, and never on another tag's end.
        assert_eq!(
            depth("<div><SCRIPT>'</div><div>'</Script><div>x</div></div>"),
            2
        );
        assert_eq!(depth("<div><style>a</div>"), 1);
        // Scripts between nested elements do not hide the nesting.
        let hidden = format!("{}x", "<div><script></script>".repeat(5_000));
        assert_eq!(depth(&hidden), 5_000);
    }

    #[test]
    fn attributes_are_counted_per_tag_and_too_many_refuse_the_file() {
        let count = |t: &str| shape(t).attributes;
        assert_eq!(
            count(r#"<p class="a b" id=x hidden data-v = 'q r'>t</p>"#),
            4
        );
        assert_eq!(count(r#"<img src="a.png" alt="x=y z"/><br/>"#), 2);
        assert_eq!(count("<p>no attributes</p>"), 0);
        let many: String = (0..MAX_ATTRIBUTES + 1)
            .map(|i| format!(" a{i}=\"1\""))
            .collect();
        let page = format!("<html><body><p{many}>text</p></body></html>");
        let err = parse(
            Path::new("attrs.html"),
            &DocId::new("a").unwrap(),
            page.as_bytes(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("attrs.html") && err.contains("a tag with 1025 attributes"),
            "{err}"
        );
    }

    #[test]
    fn a_file_nested_beyond_the_limit_is_one_clear_error_before_the_tree_is_built() {
        let n = 300_000;
        let deep = format!(
            "<html><body>{}deep{}</body></html>",
            "<div>".repeat(n),
            "</div>".repeat(n)
        );
        let err = parse(
            Path::new("deep.html"),
            &DocId::new("d").unwrap(),
            deep.as_bytes(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("deep.html") && err.contains("nested 300000 deep"),
            "{err}"
        );
        // Nesting under the limit is parsed, without recursion.
        let ok = format!(
            "{}text{}",
            "<div>".repeat(MAX_DEPTH),
            "</div>".repeat(MAX_DEPTH)
        );
        let d = parse(
            Path::new("ok.html"),
            &DocId::new("o").unwrap(),
            ok.as_bytes(),
        )
        .unwrap();
        assert_eq!(d.text.trim(), "text");
    }

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
        assert!(d.metadata.is_empty() && d.date.is_none());
    }

    #[test]
    fn meta_tags_become_metadata_and_the_date() {
        let html = br#"<html><head><title>Locks</title>
<meta name="author" content="Ana  Ruiz"><meta name="keywords" content="canal, locks ,, ships">
<meta name="description" content="How the locks work."><meta property="og:type" content="article">
<meta property="article:tag" content="engineering"><meta property="article:tag" content="history">
<meta property="article:published_time" content="2024-03-05T10:00:00Z">
<meta name="viewport" content="width=device-width"><meta charset="utf-8"></head>
<body><p>Text.</p></body></html>"#;
        let d = parse(Path::new("x.html"), &DocId::new("x").unwrap(), html).unwrap();
        assert_eq!(
            serde_json::Value::Object(d.metadata),
            serde_json::json!({"author": "Ana Ruiz", "keywords": ["canal", "locks", "ships"],
                "description": "How the locks work.", "type": "article",
                "tags": ["engineering", "history"]})
        );
        assert_eq!(d.date, Some(1_709_596_800));
    }
}
