//! Peak memory of writing one large document into an embedded index, without a model:
//! the write phase of `metarag ingest` on a 60 MB file (issue 15), isolated so it runs in a
//! minute instead of the hour the embedding takes.
//!
//! ```sh
//! cargo run -p metarag-index --example write_memory -- 147641            # whole
//! cargo run -p metarag-index --example write_memory -- 147641 staged     # as ingest does now
//! ```
//!
//! Builds one document of N chunks (prose-like text of ~600 bytes each, unit vectors of
//! dimension 384 from a hash), reports the process's resident memory before the write and
//! its peak over the whole run (`VmHWM`, Linux), then reopens the index and checks it holds
//! N chunks. `whole`: every chunk with its vector in one update, as ingest wrote a document
//! before staging. `staged`: the chunks' vectors made 1,024 at a time and each slice handed
//! to `EmbeddedIndex::stage` (the chunk drafts are dropped as they go, as ingest's embedding
//! loop drops them), then one update claims the stage.

use metarag_core::{ChunkDraft, DocFormat, DocId, Document, DocumentUpdate};
use metarag_index::{EmbeddedIndex, IndexConfig};

const DIM: usize = 384;

fn status_kb(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap_or(0)
}

fn vector(i: usize) -> Vec<f32> {
    // A splitmix-style hash per coordinate: no two chunks alike, as real vectors.
    let mut v: Vec<f32> = (0..DIM)
        .map(|d| {
            let mut x = (i * DIM + d) as u64 ^ 0x9e37_79b9_7f4a_7c15;
            x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            ((x ^ (x >> 31)) as f64 / u64::MAX as f64 - 0.5) as f32
        })
        .collect();
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter_mut().for_each(|x| *x /= norm);
    v
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(147_641);
    let staged = match std::env::args().nth(2).as_deref() {
        None | Some("whole") => false,
        Some("staged") => true,
        Some(other) => return Err(format!("mode `{other}`: whole or staged").into()),
    };
    let dir = tempfile::tempdir()?;
    let sentence = "The river rises in the hills north of the town and was named for a family of \
                    millers who settled there in the seventeenth century. ";
    let mut text = String::new();
    let mut drafts = Vec::with_capacity(n);
    for i in 0..n {
        let start = text.len();
        text.push_str(&format!("Passage {i}. "));
        for _ in 0..4 {
            text.push_str(sentence);
        }
        drafts.push(ChunkDraft {
            ordinal: i as u32,
            section: vec![format!("Section {}", i / 50)],
            pages: None,
            bytes: start..text.len(),
            token_count: 130,
            text: text[start..].to_string(),
        });
    }
    let index = EmbeddedIndex::open(dir.path(), IndexConfig::new("hash-384", DIM))?;
    let doc = DocId::new("large.md")?;
    let mut stage = None;
    let chunks = if staged {
        let mut drafts = drafts.into_iter().enumerate();
        loop {
            let slice: Vec<_> = drafts
                .by_ref()
                .take(1024)
                .map(|(i, c)| (c, vector(i)))
                .collect();
            if slice.is_empty() {
                break;
            }
            stage = Some(index.stage(stage, &doc, slice)?);
        }
        Vec::new()
    } else {
        drafts
            .into_iter()
            .enumerate()
            .map(|(i, c)| (c, vector(i)))
            .collect()
    };
    let update = DocumentUpdate {
        document: Document {
            id: doc,
            title: "A large document".into(),
            source: "large.md".into(),
            format: DocFormat::Markdown,
            content_hash: "h".into(),
            bytes: text.len() as u64,
            date: None,
            ingested_at: 0,
            chunk_count: n as u32,
            metadata: Default::default(),
            collection: Default::default(),
            text: Some(text),
        },
        chunks,
        staged: stage,
    };
    let before = status_kb("VmRSS:");
    let started = std::time::Instant::now();
    index.apply(vec![update], Vec::new())?;
    let seconds = started.elapsed().as_secs_f64();
    let peak = status_kb("VmHWM:");
    drop(index);
    let reopened = EmbeddedIndex::open(dir.path(), IndexConfig::new("hash-384", DIM))?;
    let (bm25, dense) = reopened.engine_sizes()?;
    assert_eq!(
        (bm25, dense),
        (n, n),
        "the reopened index holds every chunk"
    );
    println!(
        "{{\"chunks\": {n}, \"mode\": \"{}\", \"rss_before_write_mb\": {}, \"peak_rss_mb\": {}, \"write_peak_over_before_mb\": {}, \"write_s\": {seconds:.1}}}",
        if staged { "staged" } else { "whole" },
        before / 1024,
        peak / 1024,
        peak.saturating_sub(before) / 1024
    );
    Ok(())
}
