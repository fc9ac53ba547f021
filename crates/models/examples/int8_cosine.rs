//! int8 against f32 vectors on passages of a corpus JSONL (`title` and `text` fields, as the
//! embedder bench formats them): the mean, 1st percentile and lowest cosine, and how many
//! passages fall below the 0.999. How `OUTLIER_CHANNELS` (bert.rs) was chosen.
//!
//! `cargo run -p metarag-models --example int8_cosine -- MODEL_DIR CORPUS.jsonl [SKIP] [N]`
use metarag_models::{Precision, SentenceEmbedder};
use std::io::BufRead;

fn main() {
    let a: Vec<String> = std::env::args().collect();
    if a.len() < 3 {
        eprintln!("usage: int8_cosine MODEL_DIR CORPUS.jsonl [SKIP] [N]");
        std::process::exit(2);
    }
    let dir = std::path::PathBuf::from(&a[1]);
    let skip: usize = a.get(3).map_or(0, |s| s.parse().unwrap());
    let n: usize = a.get(4).map_or(500, |s| s.parse().unwrap());
    let texts: Vec<String> = std::io::BufReader::new(std::fs::File::open(&a[2]).unwrap())
        .lines()
        .skip(skip)
        .take(n)
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(&l.unwrap()).unwrap();
            format!(
                "{}\n{}",
                v["title"].as_str().unwrap_or(""),
                v["text"].as_str().unwrap_or("")
            )
        })
        .collect();
    let name = dir.file_name().unwrap().to_string_lossy().to_string();
    let f = SentenceEmbedder::load_with(&dir, &name, None, Precision::F32).unwrap();
    let q = SentenceEmbedder::load_with(&dir, &name, None, Precision::Int8).unwrap();
    let x = f.embed_blocking(&texts).unwrap();
    let t = std::time::Instant::now();
    let y = q.embed_blocking(&texts).unwrap();
    let secs = t.elapsed().as_secs_f64();
    let mut cos: Vec<f32> = x
        .iter()
        .zip(&y)
        .map(|(a, b)| a.iter().zip(b).map(|(p, q)| p * q).sum())
        .collect();
    cos.sort_by(f32::total_cmp);
    let mean = cos.iter().sum::<f32>() / cos.len() as f32;
    let below = cos.iter().filter(|&&c| c < 0.999).count();
    println!(
        "n {} mean {mean:.6} p1 {:.6} min {:.6} below0.999 {below} ({:.1}%) int8 {secs:.1}s",
        cos.len(),
        cos[cos.len() / 100],
        cos[0],
        100.0 * below as f32 / cos.len() as f32
    );
}
