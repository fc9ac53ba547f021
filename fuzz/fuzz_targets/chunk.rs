//! Markdown and plain text parsed and chunked with the default embedder's tokenizer
//! (`METARAG_FUZZ_TOKENIZER`, a `tokenizer.json`): every chunk within the token budget and
//! the byte bound (`MAX_BYTES_PER_TOKEN` a token), its byte range inside the text and on
//! character boundaries, its text that slice.
#![no_main]

use libfuzzer_sys::fuzz_target;
use metarag_core::DocFormat;
use metarag_ingest::{ChunkSettings, Chunker};
use std::sync::OnceLock;

fn chunker() -> &'static Chunker {
    static CHUNKER: OnceLock<Chunker> = OnceLock::new();
    CHUNKER.get_or_init(|| {
        let path = std::env::var("METARAG_FUZZ_TOKENIZER")
            .expect("METARAG_FUZZ_TOKENIZER names the embedder's tokenizer.json");
        let tokenizer = tokenizers::Tokenizer::from_file(&path).expect("a tokenizer.json");
        Chunker::new(
            tokenizer,
            ChunkSettings {
                max_tokens: 64,
                overlap: 8,
            },
        )
        .expect("chunker settings")
    })
}

fuzz_target!(|data: &[u8]| {
    for format in [DocFormat::Markdown, DocFormat::Text] {
        let Ok((docs, _)) = metarag_ingest::parse::parse_unguarded(format, data) else {
            continue;
        };
        let chunker = chunker();
        for d in &docs {
            let Ok(chunks) = chunker.chunk(d) else {
                continue;
            };
            for (i, c) in chunks.iter().enumerate() {
                assert_eq!(c.ordinal as usize, i);
                assert!(c.token_count as usize <= 64, "{} tokens", c.token_count);
                let most = metarag_ingest::chunk::MAX_BYTES_PER_TOKEN * 64;
                assert!(c.text.len() <= most, "{} bytes", c.text.len());
                assert!(c.bytes.start <= c.bytes.end && c.bytes.end <= d.text.len());
                assert!(d.text.is_char_boundary(c.bytes.start));
                assert!(d.text.is_char_boundary(c.bytes.end));
                assert_eq!(&d.text[c.bytes.clone()], c.text);
            }
        }
    }
});
