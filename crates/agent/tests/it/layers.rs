//! The agent crate's foundation modules import one another one way only: a cycle among
//! them (prompts needing the monitor needing metacog needing prompts) is how a change to
//! one prompt ends up recompiling and re-reviewing every check.

use std::collections::{BTreeMap, BTreeSet};

/// The modules below the nodes and strategies, which must form no import cycle.
const FOUNDATION: [&str; 8] = [
    "config",
    "evidence",
    "injection",
    "metacog",
    "monitor",
    "prompts",
    "text",
    "verify",
];

/// The foundation modules each one names as `crate::module`, outside comments.
fn imports() -> BTreeMap<&'static str, BTreeSet<&'static str>> {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    FOUNDATION
        .iter()
        .map(|&m| {
            let text = std::fs::read_to_string(src.join(format!("{m}.rs")))
                .unwrap_or_else(|e| panic!("src/{m}.rs: {e}"));
            let code: String = text
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .collect::<Vec<_>>()
                .join("\n");
            let used = FOUNDATION
                .iter()
                .copied()
                .filter(|&o| o != m && code.contains(&format!("crate::{o}")))
                .collect();
            (m, used)
        })
        .collect()
}

#[test]
fn the_foundation_modules_import_one_another_without_a_cycle() {
    let graph = imports();
    // Kahn's algorithm: every module must come off once the ones it imports have.
    let mut left = graph.clone();
    let mut order = Vec::new();
    while let Some(&next) = left
        .iter()
        .find(|(_, deps)| deps.iter().all(|d| !left.contains_key(d)))
        .map(|(m, _)| m)
    {
        left.remove(next);
        order.push(next);
    }
    assert!(left.is_empty(), "an import cycle among {left:?}");
    assert_eq!(order.len(), FOUNDATION.len());
}
