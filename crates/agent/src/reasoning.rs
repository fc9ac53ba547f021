//! The explicit reasoning memory of seed `004`'s planners (State-Aware RAG): facts found,
//! each with the sources it came from and a confidence the code measured; sub-questions
//! open and answered; candidate final answers. The `cot` strategy grows one memory along
//! a chain; a tree planner keeps one per node.
//!
//! A fact's confidence comes from signals the code can check with a small model, never
//! from the model grading itself (a 1.5B model says "yes, correct" to most of its own
//! answers; docs/results/monitor.md): whether the cited passages contain the extracted
//! answer's words, and the extracted answer's token probabilities.

use crate::evidence::Passage;
use crate::program::exec::{ProgramRun, StepStatus};
use crate::text::content_terms;
use metarag_core::LogprobSummary;
use serde::{Deserialize, Serialize};

/// One sub-question and what the extractor found for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Fact {
    /// The sub-question it answers.
    pub sub_question: String,
    /// The extracted short answer ("unknown" when the passages do not say).
    pub answer: String,
    /// The sentence stating it, as the extractor wrote it (citations removed).
    pub statement: String,
    /// Titles of the passages it cites.
    pub sources: Vec<String>,
    /// How far the code trusts it, in `[0, 1]` (see [`fact_confidence`]).
    pub confidence: f64,
}

/// A candidate final answer with its confidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Candidate {
    /// The short answer.
    pub answer: String,
    /// How far the code trusts it, in `[0, 1]`.
    pub confidence: f64,
}

/// The reasoning state a planner carries from step to step.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReasoningMemory {
    /// Facts found, in the order they were asked for (unfound ones included, with
    /// confidence 0, so the planner does not ask the same thing again).
    pub facts: Vec<Fact>,
    /// Sub-questions proposed and not answered yet.
    pub open: Vec<String>,
    /// Final answers proposed so far.
    pub candidates: Vec<Candidate>,
}

impl ReasoningMemory {
    /// Whether this sub-question (or one with the same content words) was asked already.
    pub fn asked(&self, sub_question: &str) -> bool {
        let terms = content_terms(sub_question);
        self.facts
            .iter()
            .map(|f| f.sub_question.as_str())
            .chain(self.open.iter().map(String::as_str))
            .any(|q| q == sub_question || (!terms.is_empty() && content_terms(q) == terms))
    }

    /// The memory a question program's run leaves, so that a planner that keeps a memory
    /// starts where the program stopped: one fact per grounded read, asked as the read's
    /// question ("What is the director of Jaws?"), stated by the quote code found the value in, with
    /// confidence 1 since code checked it there. A read that did not ground is left out:
    /// the planner may look for it again in its own words.
    pub fn from_program(run: &ProgramRun, sources: &[crate::Source]) -> ReasoningMemory {
        let facts = run
            .steps
            .iter()
            .filter(|step| step.status == StepStatus::Grounded)
            .filter_map(|step| {
                Some(Fact {
                    sub_question: step.asks.clone()?,
                    answer: step.value.as_ref()?.display(),
                    statement: step.quote.clone().unwrap_or_default(),
                    sources: step
                        .source
                        .and_then(|n| sources.iter().find(|x| x.n == n))
                        .map(|x| x.passage.title.clone())
                        .into_iter()
                        .collect(),
                    confidence: 1.0,
                })
            })
            .collect();
        ReasoningMemory {
            facts,
            ..ReasoningMemory::default()
        }
    }

    /// Facts at or above `min_confidence`.
    pub fn trusted(&self, min_confidence: f64) -> impl Iterator<Item = &Fact> {
        self.facts
            .iter()
            .filter(move |f| f.confidence >= min_confidence)
    }

    /// How far the trusted facts and `sources` state a proposed answer's words (see
    /// [`fact_confidence`]).
    pub fn grounding(&self, answer: &str, sources: &[crate::Source], min_confidence: f64) -> f64 {
        let facts: Vec<Passage> = self
            .trusted(min_confidence)
            .map(|f| Passage::paragraph(f.sources.join("; "), f.statement.clone()))
            .collect();
        let mut cited: Vec<&Passage> = facts.iter().collect();
        cited.extend(sources.iter().map(|x| &x.passage));
        fact_confidence(answer, &cited, None)
    }

    /// The memory as the prompts show it: trusted facts with their sources, then what was
    /// looked for and not found.
    pub fn render(&self, min_confidence: f64) -> String {
        let mut out = String::new();
        for f in self.trusted(min_confidence) {
            out.push_str(&format!(
                "- {} {} (from: {})\n",
                f.sub_question,
                f.statement,
                f.sources.join("; ")
            ));
        }
        let missing: Vec<&str> = self
            .facts
            .iter()
            .filter(|f| f.confidence < min_confidence)
            .map(|f| f.sub_question.as_str())
            .collect();
        if !missing.is_empty() {
            out.push_str(&format!(
                "Not found in the sources: {}\n",
                missing.join(" ")
            ));
        }
        if out.is_empty() {
            "(nothing yet)\n".to_string()
        } else {
            out
        }
    }
}

/// The text trimmed, or empty when it has no content word (a placeholder such as "..."
/// that a small model copies from the reply's example) or when it is the decompose prompt's
/// own instruction echoed back ("what is the next simple question to look up about one
/// person, ...", seen in an mcts tree): at least three content words, three in four of them
/// the instruction's. A real sub-question names its thing, which the instruction does not.
pub fn meaningful(text: &str) -> String {
    let t = text.trim();
    let terms = content_terms(t);
    if terms.is_empty() {
        return String::new();
    }
    let instruction = content_terms(crate::strategies::cot::DECOMPOSE_INSTRUCTION);
    let echoed = terms.iter().filter(|w| instruction.contains(*w)).count();
    if terms.len() >= 3 && echoed * 4 >= terms.len() * 3 {
        return String::new();
    }
    t.to_string()
}

/// A fact's confidence: the share of the answer's content words found in the passages it
/// cites (0 when it cites none or answers "unknown"), times the answer's mean token
/// probability when the backend reports log-probabilities.
pub fn fact_confidence(answer: &str, cited: &[&Passage], logprob: Option<LogprobSummary>) -> f64 {
    let wanted = content_terms(answer);
    if wanted.is_empty() || cited.is_empty() || crate::text::is_refusal(answer) {
        return 0.0;
    }
    if wanted.len() == 1 && wanted.contains("unknown") {
        return 0.0;
    }
    let mut found = std::collections::HashSet::new();
    for p in cited {
        found.extend(content_terms(&format!("{} {}", p.title, p.text)));
    }
    let grounded =
        wanted.iter().filter(|t| found.contains(*t)).count() as f64 / wanted.len() as f64;
    let probability = logprob.map_or(1.0, |l| l.mean.exp().clamp(0.0, 1.0));
    grounded * probability
}

#[cfg(test)]
mod tests {
    use super::*;

    fn passage(title: &str, text: &str) -> Passage {
        Passage::paragraph(title, text)
    }

    #[test]
    fn placeholders_and_the_instruction_echoed_are_no_sub_questions() {
        assert_eq!(meaningful("  ...  "), "");
        assert_eq!(
            meaningful(
                "what is the next simple question to look up about one person, place or thing"
            ),
            ""
        );
        // Questions that share a word or two with the instruction are kept.
        for q in [
            "Who directed the film Jaws?",
            "What is the next album of the Velvet Fog after Blue Lake?",
            "Which person founded the Quillmere Institute?",
        ] {
            assert_eq!(meaningful(q), q);
        }
    }

    #[test]
    fn a_fact_is_trusted_only_as_far_as_its_cited_passages_state_it() {
        let p = passage(
            "Zorblatt Tide",
            "Zorblatt Tide is a 1975 film directed by Anna Veltz.",
        );
        assert_eq!(fact_confidence("Anna Veltz", &[&p], None), 1.0);
        assert_eq!(fact_confidence("Anna Ormund", &[&p], None), 0.5);
        assert_eq!(fact_confidence("unknown", &[&p], None), 0.0);
        assert_eq!(fact_confidence("Anna Veltz", &[], None), 0.0);
        let unsure = LogprobSummary {
            mean: (0.5f64).ln(),
            min: (0.25f64).ln(),
            tokens: 3,
        };
        assert!((fact_confidence("Anna Veltz", &[&p], Some(unsure)) - 0.5).abs() < 1e-9);
    }

    #[test]
    fn the_memory_renders_trusted_facts_and_remembers_what_was_asked() {
        let mut m = ReasoningMemory::default();
        assert_eq!(m.render(0.5), "(nothing yet)\n");
        m.facts.push(Fact {
            sub_question: "Who directed Zorblatt Tide?".into(),
            answer: "Anna Veltz".into(),
            statement: "Zorblatt Tide was directed by Anna Veltz.".into(),
            sources: vec!["Zorblatt Tide".into()],
            confidence: 0.9,
        });
        m.facts.push(Fact {
            sub_question: "Where was Anna Veltz born?".into(),
            answer: "unknown".into(),
            statement: String::new(),
            sources: Vec::new(),
            confidence: 0.0,
        });
        let text = m.render(0.5);
        assert!(text.starts_with(
            "- Who directed Zorblatt Tide? Zorblatt Tide was directed by Anna Veltz. (from: Zorblatt Tide)\n"
        ));
        assert!(text.ends_with("Not found in the sources: Where was Anna Veltz born?\n"));
        assert!(m.asked("who directed zorblatt tide"));
        assert!(!m.asked("When was Zorblatt Tide released?"));
    }
}
