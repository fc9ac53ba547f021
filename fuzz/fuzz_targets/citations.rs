//! The citation parser on arbitrary text: every marker it returns lies inside the text, on
//! character boundaries, in order, and names sources by number.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let mut end = 0;
    for (range, sources) in metarag_agent::verify::citations(text) {
        assert!(range.start >= end && range.start < range.end && range.end <= text.len());
        assert!(text.is_char_boundary(range.start) && text.is_char_boundary(range.end));
        assert!(!sources.is_empty());
        end = range.end;
    }
    // After cleaning against three sources, no citation names another.
    let (cleaned, _) = metarag_agent::verify::strip_invalid_citations(text, 3);
    for (_, sources) in metarag_agent::verify::citations(&cleaned) {
        assert!(sources.iter().all(|&n| (1..=3).contains(&n)), "{cleaned:?}");
    }
});
