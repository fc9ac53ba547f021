//! What a client sees of a model call while it is generated: structured calls (a JSON
//! object, as the write node asks for) show the text of their `answer` field as it grows;
//! plain-text calls show their text.

/// The readable text of one call's output, fed piece by piece.
#[derive(Debug, Default)]
pub struct VisibleText {
    raw: String,
    shown: usize,
}

impl VisibleText {
    /// Adds a piece of output; returns the new readable text, if any.
    pub fn push(&mut self, piece: &str) -> Option<String> {
        self.raw.push_str(piece);
        let visible = visible(&self.raw);
        // The visible text only grows: a JSON string is decoded left to right and an
        // unfinished escape is held back until it completes.
        let new = visible.get(self.shown..).filter(|s| !s.is_empty())?;
        let new = new.to_string();
        self.shown = visible.len();
        Some(new)
    }
}

/// The readable part of `raw` so far.
fn visible(raw: &str) -> String {
    let trimmed = raw.trim_start();
    if !trimmed.starts_with('{') {
        return raw.to_string();
    }
    let Some(at) = trimmed.find("\"answer\"") else {
        return String::new();
    };
    let rest = trimmed[at + "\"answer\"".len()..].trim_start();
    let Some(rest) = rest.strip_prefix(':') else {
        return String::new();
    };
    let Some(body) = rest.trim_start().strip_prefix('"') else {
        return String::new();
    };
    decode_prefix(body)
}

/// Decodes a JSON string body up to its closing quote or the end of the input, leaving
/// out an escape that is not complete yet.
fn decode_prefix(body: &str) -> String {
    let mut out = String::new();
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => break,
            '\\' => {
                let Some(e) = chars.next() else { break };
                match e {
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    'r' => out.push('\r'),
                    'b' | 'f' => {}
                    'u' => {
                        let hex: String = chars.by_ref().take(4).collect();
                        if hex.len() < 4 {
                            break;
                        }
                        // Half a surrogate pair is nothing printable on its own.
                        if let Some(ch) =
                            u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32)
                        {
                            out.push(ch);
                        }
                    }
                    other => out.push(other),
                }
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(pieces: &[&str]) -> String {
        let mut v = VisibleText::default();
        pieces.iter().filter_map(|p| v.push(p)).collect()
    }

    #[test]
    fn shows_the_answer_field_of_json_as_it_grows() {
        let pieces = [
            "{\"ans",
            "wer\": \"Paris is ",
            "the capital \\",
            "\"city\\",
            "\" [1].\\n",
            "\\u00e9\", \"short_answer\": \"Paris\"}",
        ];
        assert_eq!(feed(&pieces), "Paris is the capital \"city\" [1].\né");
    }

    #[test]
    fn plain_text_passes_through_and_other_fields_stay_hidden() {
        assert_eq!(feed(&["Thought: ", "search X"]), "Thought: search X");
        assert_eq!(feed(&["{\"short_answer\": \"yes\"}"]), "");
    }
}
