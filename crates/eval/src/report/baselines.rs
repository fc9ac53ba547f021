//! The published numbers a report sets its own beside: seed `000`'s tables.

/// A published result to compare with (seed `000`'s tables, 500 questions, gold context).
#[derive(Debug, Clone, Copy)]
pub struct Baseline {
    /// Method.
    pub method: &'static str,
    /// EM, F1, precision, recall (percent).
    pub scores: [f64; 4],
}

/// The paper baselines for a data set, as seed `000` lists them (MetaRAG paper, GPT-3.5
/// turbo, and the seed's DeepSeek V3.2 implementation).
pub fn baselines(dataset: &str) -> &'static [Baseline] {
    const HOTPOT: &[Baseline] = &[
        Baseline {
            method: "Standard RAG",
            scores: [24.6, 33.0, 34.1, 34.5],
        },
        Baseline {
            method: "ReAct",
            scores: [24.8, 41.7, 42.6, 44.7],
        },
        Baseline {
            method: "Flare",
            scores: [29.2, 42.4, 42.8, 43.0],
        },
        Baseline {
            method: "IR-CoT",
            scores: [31.4, 40.3, 41.6, 41.2],
        },
        Baseline {
            method: "Self-Ask",
            scores: [28.2, 43.1, 43.4, 44.8],
        },
        Baseline {
            method: "Reflexion",
            scores: [30.0, 43.4, 43.2, 44.3],
        },
        Baseline {
            method: "MetaRAG (paper, GPT-3.5-turbo)",
            scores: [37.8, 49.9, 52.1, 50.9],
        },
        Baseline {
            method: "seed 000 MetaRAG (DeepSeek V3.2)",
            scores: [59.0, 75.1, 77.1, 78.2],
        },
    ];
    const WIKI: &[Baseline] = &[
        Baseline {
            method: "Standard RAG",
            scores: [18.8, 25.2, 25.6, 26.2],
        },
        Baseline {
            method: "ReAct",
            scores: [21.0, 28.0, 27.6, 30.0],
        },
        Baseline {
            method: "Flare",
            scores: [28.2, 39.8, 40.0, 40.8],
        },
        Baseline {
            method: "IR-CoT",
            scores: [30.8, 42.6, 42.3, 40.9],
        },
        Baseline {
            method: "Self-Ask",
            scores: [28.6, 37.5, 36.5, 42.8],
        },
        Baseline {
            method: "Reflexion",
            scores: [31.8, 41.7, 40.6, 44.2],
        },
        Baseline {
            method: "MetaRAG (paper, GPT-3.5-turbo)",
            scores: [42.8, 50.8, 50.7, 52.2],
        },
        Baseline {
            method: "seed 000 MetaRAG (DeepSeek V3.2)",
            scores: [66.2, 74.2, 72.7, 78.4],
        },
    ];
    match dataset {
        "hotpotqa" => HOTPOT,
        "2wikimultihopqa" => WIKI,
        _ => &[],
    }
}
