//! The pdf parser on arbitrary bytes: it may refuse them, never panic, hang or blow up.
#![no_main]

use libfuzzer_sys::fuzz_target;
use metarag_core::DocFormat;

fuzz_target!(|data: &[u8]| {
    // libfuzzer-sys aborts on every panic, even one the parser catches itself: the pdf
    // parser catches its fallback extractor's (pdf-extract), so the hook only reports. A
    // panic that leaves the parser still aborts the run (libfuzzer-sys's own catch).
    static QUIET: std::sync::Once = std::sync::Once::new();
    QUIET.call_once(|| std::panic::set_hook(Box::new(|info| eprintln!("caught? {info}"))));
    if let Ok((docs, _)) = metarag_ingest::parse::parse_unguarded(DocFormat::Pdf, data) {
        for d in &docs {
            metarag_ingest::parse::check_sections(d);
        }
    }
});
