//! Structure-aware, token-bounded chunking.
//!
//! Sections (headings, pages) come from the parser; inside a section the `text-splitter`
//! crate cuts at the highest semantic level that fits (paragraphs, then sentences, then
//! words), measured in tokens of the embedder's own tokenizer. Every chunk is embedded with
//! a contextual header (title and section path, see [`metarag_core::embedding_input`]), so
//! the header's tokens are taken off the budget, and each chunk's final embedder input is
//! re-counted: no chunk is ever longer than the model reads.

use crate::parse::{ParsedDocument, Section};
use crate::{Error, Result};
use metarag_core::{ChunkDraft, DocFormat, embedding_input};
use text_splitter::{ChunkConfig, ChunkSizer, MarkdownSplitter, TextSplitter};
use tokenizers::Tokenizer;

/// Chunk size settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkSettings {
    /// Longest embedder input in tokens, special tokens and header included (the model's
    /// maximum sequence length by default).
    pub max_tokens: usize,
    /// Tokens shared by consecutive chunks of a section.
    pub overlap: usize,
}

/// Smallest body budget worth chunking for; below it the header is dropped to a shorter one.
const MIN_BODY_TOKENS: usize = 16;

/// Deepest nesting of lists and block quotes the Markdown splitter is given. Its semantic
/// levels grow with the nesting, and so does its time, faster than the text: a 250 KB
/// file of 500 nested list items took 95 s to chunk and one of 1,000 over 5 minutes (no
/// real document nests lists this deep). Deeper text is split as plain text, by
/// paragraphs, sentences and words, which took 1-4 s for the same files.
pub const MAX_MARKDOWN_NESTING: usize = 16;

/// Most bytes a chunk may hold per token of its budget. The tokenizer makes any
/// whitespace-free run longer than 100 characters one `[UNK]`, so by tokens alone a
/// 40 MB run without a space (base64, a minified file, an unspaced script) fits one
/// chunk of five tokens: it was stored, indexed and shown to the model whole, and
/// counting it took 62 s and 3.5 GB. Prose runs 3-6 bytes a token and no text the
/// tokenizer reads comes near 16, so this bound cuts only such runs, into chunks of at
/// most `16 x budget` bytes.
pub const MAX_BYTES_PER_TOKEN: usize = 16;

/// The splitter's measure: tokens, but never less than the bytes over
/// [`MAX_BYTES_PER_TOKEN`]. A piece already too long by bytes is not tokenized at all:
/// the splitter first measures the whole section, and tokenizing tens of megabytes costs
/// gigabytes of offsets.
struct Bounded<'a> {
    tokenizer: &'a Tokenizer,
    budget: usize,
}

impl ChunkSizer for Bounded<'_> {
    fn size(&self, chunk: &str) -> usize {
        let floor = chunk.len().div_ceil(MAX_BYTES_PER_TOKEN);
        if floor > self.budget {
            return floor;
        }
        floor.max(self.tokenizer.size(chunk))
    }
}

/// Splits parsed documents into [`ChunkDraft`]s. Cloning copies the tokenizer (a few MB):
/// an ingest run clones it once for its reading thread.
#[derive(Clone)]
pub struct Chunker {
    tokenizer: Tokenizer,
    settings: ChunkSettings,
}

impl Chunker {
    /// A chunker counting with `tokenizer`, which must not truncate (see
    /// `SentenceEmbedder::tokenizer`).
    pub fn new(mut tokenizer: Tokenizer, settings: ChunkSettings) -> Result<Self> {
        if settings.max_tokens < 2 * MIN_BODY_TOKENS {
            return Err(Error::Chunking(format!(
                "chunk size {} is too small (at least {})",
                settings.max_tokens,
                2 * MIN_BODY_TOKENS
            )));
        }
        if settings.overlap >= settings.max_tokens / 2 {
            return Err(Error::Chunking(format!(
                "overlap {} must be under half the chunk size {}",
                settings.overlap, settings.max_tokens
            )));
        }
        // Counting through a truncating tokenizer would make every text look short.
        tokenizer
            .with_truncation(None)
            .map_err(|e| Error::Tokenizer(e.to_string()))?;
        tokenizer.with_padding(None);
        Ok(Chunker {
            tokenizer,
            settings,
        })
    }

    /// The settings in force.
    pub fn settings(&self) -> ChunkSettings {
        self.settings
    }

    /// Tokens of `text` as the embedder sees it, special tokens included.
    pub fn count(&self, text: &str) -> Result<usize> {
        Ok(self
            .tokenizer
            .encode_fast(text, true)
            .map_err(|e| Error::Tokenizer(e.to_string()))?
            .len())
    }

    /// Chunks a document, section by section.
    pub fn chunk(&self, doc: &ParsedDocument) -> Result<Vec<ChunkDraft>> {
        let mut out = Vec::new();
        for section in &doc.sections {
            self.chunk_section(doc, section, &mut out)?;
        }
        Ok(out)
    }

    fn chunk_section(
        &self,
        doc: &ParsedDocument,
        section: &Section,
        out: &mut Vec<ChunkDraft>,
    ) -> Result<()> {
        let body = &doc.text[section.range.clone()];
        if body.trim().is_empty() {
            return Ok(());
        }
        // Pick the longest header that leaves room for a body: full path, last heading, none.
        let mut candidates = vec![section.path.clone()];
        if section.path.len() > 1 {
            candidates.push(section.path[section.path.len() - 1..].to_vec());
        }
        candidates.push(Vec::new());
        let mut chosen = None;
        for path in candidates {
            let header = self.count(&embedding_input(&doc.title, &path, ""))?;
            if header + MIN_BODY_TOKENS <= self.settings.max_tokens {
                chosen = Some((path, self.settings.max_tokens - header));
                break;
            }
        }
        let Some((path, budget)) = chosen else {
            return Err(Error::Chunking(format!(
                "{}: the title alone is longer than the chunk size of {} tokens",
                doc.source, self.settings.max_tokens
            )));
        };
        let pieces = self.split(doc.format, body, budget)?;
        for (offset, text) in pieces {
            self.push_bounded(
                doc,
                section,
                &path,
                section.range.start + offset,
                text,
                budget,
                out,
            )?;
        }
        Ok(())
    }

    /// Splits `body` into pieces of at most `budget` tokens (specials excluded) and
    /// `MAX_BYTES_PER_TOKEN x budget` bytes. A whitespace-free run longer than that is
    /// cut into pieces of that many bytes first, each split on its own: the splitter
    /// falls back to graphemes inside a run and scans the rest of its text for every
    /// chunk it makes, so a 40 MB run given to it whole never finished.
    fn split<'a>(
        &self,
        format: DocFormat,
        body: &'a str,
        budget: usize,
    ) -> Result<Vec<(usize, &'a str)>> {
        let limit = MAX_BYTES_PER_TOKEN * budget;
        let mut out = Vec::new();
        let mut from = 0;
        for run in long_runs(body, limit) {
            self.split_text(format, body, from..run.start, budget, &mut out)?;
            let mut at = run.start;
            while at < run.end {
                let mut end = (at + limit).min(run.end);
                while !body.is_char_boundary(end) {
                    end -= 1;
                }
                self.split_text(DocFormat::Text, body, at..end, budget, &mut out)?;
                at = end;
            }
            from = run.end;
        }
        self.split_text(format, body, from..body.len(), budget, &mut out)?;
        Ok(out)
    }

    /// The splitter over `body[range]`, its pieces' offsets into `body` added to `out`.
    fn split_text<'a>(
        &self,
        format: DocFormat,
        body: &'a str,
        range: std::ops::Range<usize>,
        budget: usize,
        out: &mut Vec<(usize, &'a str)>,
    ) -> Result<()> {
        let text = &body[range.clone()];
        if text.trim().is_empty() {
            return Ok(());
        }
        let overlap = self.settings.overlap.min(budget / 2);
        let config = ChunkConfig::new(budget)
            .with_sizer(Bounded {
                tokenizer: &self.tokenizer,
                budget,
            })
            .with_overlap(overlap)
            .map_err(|e| Error::Chunking(e.to_string()))?;
        let pieces: Vec<(usize, &'a str)> =
            if format == DocFormat::Markdown && !nested_deeper(text, MAX_MARKDOWN_NESTING) {
                MarkdownSplitter::new(config).chunk_indices(text).collect()
            } else {
                TextSplitter::new(config).chunk_indices(text).collect()
            };
        out.extend(pieces.into_iter().map(|(o, t)| (range.start + o, t)));
        Ok(())
    }

    /// Re-counts the real embedder input and splits again in the rare case that joining
    /// header and body tokenizes longer than the parts did.
    #[allow(clippy::too_many_arguments)]
    fn push_bounded(
        &self,
        doc: &ParsedDocument,
        section: &Section,
        path: &[String],
        start: usize,
        text: &str,
        budget: usize,
        out: &mut Vec<ChunkDraft>,
    ) -> Result<()> {
        let tokens = self.count(&embedding_input(&doc.title, path, text))?;
        if tokens > self.settings.max_tokens {
            let excess = tokens - self.settings.max_tokens;
            let smaller = budget.saturating_sub(excess.max(1));
            if smaller < MIN_BODY_TOKENS {
                return Err(Error::Chunking(format!(
                    "{}: could not fit a chunk into {} tokens",
                    doc.source, self.settings.max_tokens
                )));
            }
            for (offset, piece) in self.split(doc.format, text, smaller)? {
                self.push_bounded(doc, section, path, start + offset, piece, smaller, out)?;
            }
            return Ok(());
        }
        out.push(ChunkDraft {
            ordinal: out.len() as u32,
            section: path.to_vec(),
            pages: section.pages,
            bytes: start..start + text.len(),
            token_count: tokens as u32,
            text: text.to_string(),
        });
        Ok(())
    }
}

/// The byte ranges of `text`'s whitespace-free runs longer than `limit` bytes.
fn long_runs(text: &str, limit: usize) -> Vec<std::ops::Range<usize>> {
    let mut runs = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        match (c.is_whitespace(), start) {
            (false, None) => start = Some(i),
            (true, Some(s)) => {
                if i - s > limit {
                    runs.push(s..i);
                }
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start
        && text.len() - s > limit
    {
        runs.push(s..text.len());
    }
    runs
}

/// Whether lists and block quotes in the Markdown `text` nest more than `limit` deep
/// (one pass of the parser, stopped at the first level past the limit).
pub fn nested_deeper(text: &str, limit: usize) -> bool {
    use pulldown_cmark::{Event, Parser, Tag, TagEnd};
    let mut depth = 0usize;
    for event in Parser::new(text) {
        match event {
            Event::Start(Tag::List(_) | Tag::BlockQuote(_)) => {
                depth += 1;
                if depth > limit {
                    return true;
                }
            }
            Event::End(TagEnd::List(_) | TagEnd::BlockQuote(_)) => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_is_measured_over_lists_and_block_quotes() {
        let list = |n: usize| {
            (0..n)
                .map(|i| format!("{}- x\n", "  ".repeat(i)))
                .collect::<String>()
        };
        assert!(!nested_deeper("# Title\n\nPlain text.\n", 0));
        assert!(!nested_deeper(&list(3), 3));
        assert!(nested_deeper(&list(4), 3));
        assert!(nested_deeper(&list(500), MAX_MARKDOWN_NESTING));
        assert!(!nested_deeper("> quoted\n>> twice\n", 2));
        assert!(nested_deeper("> > > three\n", 2));
        // A quote inside a list inside a quote counts every level.
        assert!(nested_deeper("> - > quoted in a list\n", 2));
    }
}
