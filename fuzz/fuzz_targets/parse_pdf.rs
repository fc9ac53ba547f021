//! The pdf parser on arbitrary bytes: it may refuse them, never panic, hang or blow up.
#![no_main]

use libfuzzer_sys::fuzz_target;
use metarag_core::DocFormat;

fuzz_target!(|data: &[u8]| {
    if let Ok((docs, _)) = metarag_ingest::parse::parse_unguarded(DocFormat::Pdf, data) {
        for d in &docs {
            metarag_ingest::parse::check_sections(d);
        }
    }
});
