//! Markdown: the raw text is kept as is; sections follow the heading hierarchy. YAML
//! front matter (Hugo, Jekyll, Obsidian, Docusaurus) gives the title, the date and the
//! document's metadata.

use super::{ParsedDocument, Section, assemble, decode, file_title};
use crate::{Error, Result};
use metarag_core::{DocFormat, DocId};
use pulldown_cmark::{Event, MetadataBlockKind, Options, Parser, Tag, TagEnd};
use serde_json::{Map, Value};
use std::path::Path;
use yaml_rust2::{Yaml, YamlLoader};

pub fn parse(path: &Path, id: &DocId, bytes: &[u8]) -> Result<ParsedDocument> {
    let text = decode(path, bytes, "markdown")?;
    let (title, sections) = sections(&text);
    let mut metadata = match front_matter(&text) {
        Some(yaml) => front_matter_metadata(yaml).map_err(|reason| Error::Parse {
            path: path.to_path_buf(),
            format: "markdown",
            reason: format!("front matter: {reason}"),
        })?,
        None => Map::new(),
    };
    // `title` and `date` are the document's own fields, not metadata.
    let front_title = match metadata.remove("title") {
        Some(Value::String(t)) if !t.trim().is_empty() => Some(t.trim().to_string()),
        _ => None,
    };
    let date = metadata.remove("date").and_then(|d| match d {
        Value::String(s) => super::day_of(&s),
        Value::Number(n) => n.as_i64(),
        _ => None,
    });
    let mut doc = assemble(
        path,
        id,
        front_title.or(title).unwrap_or_else(|| file_title(path)),
        DocFormat::Markdown,
        (text.to_string(), sections),
        bytes,
    );
    doc.date = date;
    doc.metadata = metadata;
    Ok(doc)
}

/// The YAML of a front matter block (`---` lines around it at the top of the file).
fn front_matter(text: &str) -> Option<&str> {
    let mut in_block = false;
    for (event, range) in
        Parser::new_ext(text, Options::ENABLE_YAML_STYLE_METADATA_BLOCKS).into_offset_iter()
    {
        match event {
            Event::Start(Tag::MetadataBlock(MetadataBlockKind::YamlStyle)) => in_block = true,
            Event::Text(_) if in_block => return Some(&text[range]),
            _ => return None,
        }
    }
    None
}

/// Front matter as JSON metadata: a mapping of keys to scalars, lists and nested
/// mappings. Anything else (a list at the top, YAML that does not parse) is an error
/// naming the problem, so a typo does not silently drop the metadata a filter relies on.
fn front_matter_metadata(yaml: &str) -> std::result::Result<Map<String, Value>, String> {
    let docs = YamlLoader::load_from_str(yaml).map_err(|e| e.to_string())?;
    match docs.into_iter().next() {
        None | Some(Yaml::Null) => Ok(Map::new()),
        Some(Yaml::Hash(h)) => h
            .into_iter()
            .map(|(k, v)| match yaml_key(&k) {
                Some(key) => Ok((key, to_json(v))),
                None => Err(format!("key {k:?} is not a name")),
            })
            .collect(),
        Some(_) => Err("not a mapping of keys to values".into()),
    }
}

/// A mapping key as text (a string, number or boolean); `None` for a list or mapping.
fn yaml_key(k: &Yaml) -> Option<String> {
    match k {
        Yaml::String(s) | Yaml::Real(s) => Some(s.clone()),
        Yaml::Integer(i) => Some(i.to_string()),
        Yaml::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A YAML value as JSON (aliases and unparsable reals become null; entries of nested
/// mappings whose key is not a name are left out).
fn to_json(v: Yaml) -> Value {
    match v {
        Yaml::String(s) => Value::String(s),
        Yaml::Integer(i) => Value::from(i),
        Yaml::Real(r) => r
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map_or(Value::Null, Value::Number),
        Yaml::Boolean(b) => Value::Bool(b),
        Yaml::Array(a) => Value::Array(a.into_iter().map(to_json).collect()),
        Yaml::Hash(h) => Value::Object(
            h.into_iter()
                .filter_map(|(k, v)| Some((yaml_key(&k)?, to_json(v))))
                .collect(),
        ),
        Yaml::Alias(_) | Yaml::Null | Yaml::BadValue => Value::Null,
    }
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

    fn parsed(md: &str) -> Result<ParsedDocument> {
        parse(
            Path::new("/notes/post.md"),
            &DocId::new("post").unwrap(),
            md.as_bytes(),
        )
    }

    #[test]
    fn front_matter_gives_title_date_and_metadata() {
        let md = "---\ntitle: Lock maintenance\ndate: 2024-03-05T10:00:00Z\ntags: [canal, ops]\nteam: ops\nweight: 2.5\ndraft: false\nowner:\n  name: Ana\n---\n\n# Heading\n\nBody text.\n";
        let d = parsed(md).unwrap();
        assert_eq!(d.title, "Lock maintenance");
        assert_eq!(d.date, Some(1_709_596_800));
        assert_eq!(
            Value::Object(d.metadata),
            serde_json::json!({"tags": ["canal", "ops"], "team": "ops", "weight": 2.5, "draft": false, "owner": {"name": "Ana"}})
        );
        // The front matter is not taken for a heading.
        let paths: Vec<_> = d.sections.iter().map(|s| s.path.join("/")).collect();
        assert_eq!(paths, ["", "Heading"]);
        // Without front matter, nothing changes; a rule further down is not front matter.
        let d = parsed("# Title\n\n---\nkey: value\n---\n").unwrap();
        assert_eq!(d.title, "Title");
        assert!(d.metadata.is_empty() && d.date.is_none());
    }

    #[test]
    fn broken_front_matter_names_the_file() {
        for md in [
            "---\ntags: [unclosed\n---\n\ntext\n",
            "---\n- a\n- b\n---\n\ntext\n",
        ] {
            let e = parsed(md).unwrap_err().to_string();
            assert!(
                e.contains("/notes/post.md") && e.contains("front matter"),
                "{e}"
            );
        }
    }
}
