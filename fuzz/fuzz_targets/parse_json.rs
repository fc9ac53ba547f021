//! The JSON and JSON Lines parsers on arbitrary bytes: they may refuse them, never panic,
//! hang or blow up.
#![no_main]

use libfuzzer_sys::fuzz_target;
use metarag_core::DocFormat;

fuzz_target!(|data: &[u8]| {
    for format in [DocFormat::Json, DocFormat::CorpusLine] {
        if let Ok((docs, _)) = metarag_ingest::parse::parse_unguarded(format, data) {
            for d in &docs {
                metarag_ingest::parse::check_sections(d);
            }
        }
    }
});
