//! Checking an answer against its sources, in code.
//!
//! Small models cannot grade themselves (asked "are the sources sufficient?", every local
//! model said yes with the needed paragraph removed), so every metric here is measured
//! from text: a claim is supported when its content terms occur in the sources it cites;
//! a needed fact counts as found when the model's quote for it really is in a source and
//! the value is stated there. The LLM judge's own scores enter faithfulness and
//! completeness with a small weight ([`crate::AgentConfig::judge_weight`]).
//!
//! Decision rules (documented in ARCHITECTURE.md):
//! - claim supported: recall of its content terms in the union of its cited sources (all
//!   sources if it cites none) >= `support_threshold`;
//! - citation correct: the claim is supported and the cited source alone holds at least
//!   half of `support_threshold` of its terms; citation precision = correct / all;
//! - fact verified: its quote's terms are >= 80% in some source, or each of its sentences'
//!   terms are in some source (a quote joining two paragraphs), and its value's terms
//!   are >= 50% in the sources the quote was found in (a yes/no value is a judgement: the
//!   quote suffices); the fact is in the answer when >= 2/3 of its value's terms are;
//! - faithfulness = (1 - w) * supported claims / claims + w * judge; a bare yes/no answer
//!   has no claims to check and rests on the facts: their verified share stands in for
//!   both the supported-claim share and citation precision;
//! - completeness = (1 - w) * (verified facts in the answer / facts needed; 0 for a refusal;
//!   0.5 when no facts were listed) + w * judge.

use crate::evidence::Source;
use crate::prompts::{FactsReply, JudgeReply};
use crate::text::{content_terms, is_refusal, recall, sentences};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;

/// The `[n]` citations in a text, with their byte ranges (`[1, 3]` yields two numbers for
/// one range).
pub fn citations(text: &str) -> Vec<(std::ops::Range<usize>, Vec<usize>)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'['
            && let Some(len) = text[i + 1..].find(']')
        {
            let inner = &text[i + 1..i + 1 + len];
            let nums: Option<Vec<usize>> = inner
                .split(',')
                .map(|p| p.trim().parse::<usize>().ok())
                .collect();
            if let Some(nums) = nums.filter(|n| !n.is_empty()) {
                out.push((i..i + len + 2, nums));
                i += len + 2;
                continue;
            }
        }
        i += 1;
    }
    out
}

/// Removes citations to sources that do not exist (`[0]`, or above `sources`), keeping
/// the valid numbers of a mixed group. Returns the cleaned text and how many were removed.
pub fn strip_invalid_citations(text: &str, sources: usize) -> (String, usize) {
    // A removal can join what surrounded it into a new marker ("[[9]5]" -> "[5]"), so
    // passes repeat until one removes nothing; each pass removes at least one number.
    let (mut text, mut removed) = strip_pass(text, sources);
    loop {
        let (next, more) = strip_pass(&text, sources);
        if more == 0 {
            return (text, removed);
        }
        text = next;
        removed += more;
    }
}

fn strip_pass(text: &str, sources: usize) -> (String, usize) {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    let mut removed = 0;
    for (range, nums) in citations(text) {
        out.push_str(&text[last..range.start]);
        let valid: Vec<String> = nums
            .iter()
            .filter(|&&n| n >= 1 && n <= sources)
            .map(|n| n.to_string())
            .collect();
        removed += nums.len() - valid.len();
        if !valid.is_empty() {
            out.push_str(&format!("[{}]", valid.join(", ")));
        } else if out.ends_with(' ') && text[range.end..].starts_with(['.', ',', ';', ':', ' ']) {
            out.pop();
        }
        last = range.end;
    }
    out.push_str(&text[last..]);
    (out, removed)
}

/// Cites the best-supporting source after every sentence that cites none, when a source
/// holds at least `threshold` of the sentence's content terms (small models often answer
/// correctly but forget to cite). Returns the text and how many citations were added.
pub fn attribute(text: &str, sources: &[Source], threshold: f64) -> (String, usize) {
    if sources.is_empty() {
        return (text.to_string(), 0);
    }
    let terms: Vec<HashSet<String>> = sources
        .iter()
        .map(|s| {
            let mut t = content_terms(&s.text());
            t.extend(content_terms(&s.passage.title));
            t
        })
        .collect();
    let mut out = String::with_capacity(text.len() + 8);
    let mut last = 0;
    let mut added = 0;
    for (a, b) in sentences(text) {
        let sentence = &text[a..b];
        out.push_str(&text[last..a]);
        last = b;
        let claim = content_terms(sentence);
        if !citations(sentence).is_empty() || claim.is_empty() {
            out.push_str(sentence);
            continue;
        }
        let best = terms
            .iter()
            .enumerate()
            .map(|(i, t)| (i + 1, recall(&claim, t)))
            .fold((0, 0.0), |acc, x| if x.1 > acc.1 { x } else { acc });
        if best.1 < threshold {
            out.push_str(sentence);
            continue;
        }
        let body = sentence.trim_end_matches(['.', '!', '?']);
        out.push_str(body);
        out.push_str(&format!(" [{}]", best.0));
        out.push_str(&sentence[body.len()..]);
        added += 1;
    }
    out.push_str(&text[last..]);
    (out, added)
}

/// Text without its citation markers.
pub fn without_citations(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (range, _) in citations(text) {
        out.push_str(text[last..range.start].trim_end());
        last = range.end;
    }
    out.push_str(&text[last..]);
    out.trim().to_string()
}

/// One claim of an answer (a sentence) and how the sources support it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Claim {
    /// The sentence without citations.
    pub text: String,
    /// The sources it cites.
    pub cited: Vec<usize>,
    /// Share of its content terms found in its cited sources (all sources if none cited).
    pub support: f64,
    /// Whether `support` reaches the threshold.
    pub supported: bool,
    /// The best single evidence sentence's share of its terms (evidence alignment).
    pub alignment: f64,
}

/// A needed fact the model listed, checked against the sources.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Fact {
    /// What must be known.
    pub need: String,
    /// The value the model found.
    pub value: String,
    /// The source the quote was found in (after checking; 0 if none).
    pub source: usize,
    /// The model's quote.
    pub quote: String,
    /// Whether the quote is in a source and the value is stated there.
    pub verified: bool,
    /// Whether the answer states the value.
    pub in_answer: bool,
}

/// An edge of the claim-to-source evidence graph.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SupportEdge {
    /// Index of the claim.
    pub claim: usize,
    /// Number of the source.
    pub source: usize,
    /// Share of the claim's terms in the source.
    pub weight: f64,
    /// Whether the claim cites this source.
    pub cited: bool,
}

/// Everything the verify step measured about one answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Verification {
    /// The answer's claims.
    pub claims: Vec<Claim>,
    /// Correct citations over all citations (0 when there are none).
    pub citation_precision: f64,
    /// Claims without support over all claims.
    pub unsupported_claim_rate: f64,
    /// Mean over claims of the best single evidence sentence's support.
    pub evidence_alignment: f64,
    /// The facts the question needs, checked.
    pub facts: Vec<Fact>,
    /// Why the facts could not be listed (model error, bad JSON), if so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub facts_error: Option<String>,
    /// The LLM judge's scores, if it answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<JudgeReply>,
    /// Why the judge did not answer, if so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_error: Option<String>,
    /// Share of the short answer's terms found in the sources.
    pub short_answer_support: f64,
    /// Whether the answer declines to answer.
    pub refusal: bool,
    /// Faithfulness, from supported claims and the judge.
    pub faithfulness: f64,
    /// Completeness, from facts in the answer and the judge.
    pub completeness: f64,
    /// The judge's confidence (or the mean of the two above when it did not answer).
    pub confidence: f64,
    /// Claim-to-source support edges with weight >= 0.3.
    pub evidence_graph: Vec<SupportEdge>,
}

impl Verification {
    /// True when the facts were listed and every one was found in the sources.
    pub fn facts_all_verified(&self) -> Option<bool> {
        (self.facts_error.is_none() && !self.facts.is_empty())
            .then(|| self.facts.iter().all(|f| f.verified))
    }
}

/// Inputs of [`verify`].
pub struct VerifyInput<'a> {
    /// The answer with citations.
    pub answer: &'a str,
    /// The short final answer.
    pub short_answer: &'a str,
    /// The numbered sources.
    pub sources: &'a [Source],
    /// The facts reply, or why there is none.
    pub facts: Result<&'a FactsReply, String>,
    /// The judge reply, or why there is none.
    pub judge: Result<JudgeReply, String>,
    /// See [`crate::AgentConfig::support_threshold`].
    pub support_threshold: f64,
    /// See [`crate::AgentConfig::judge_weight`].
    pub judge_weight: f64,
}

/// Measures an answer against its sources.
pub fn verify(input: VerifyInput<'_>) -> Verification {
    let source_terms: Vec<HashSet<String>> = input
        .sources
        .iter()
        .map(|s| {
            let mut t = content_terms(&s.text());
            t.extend(content_terms(&s.passage.title));
            t
        })
        .collect();
    let sentence_terms: Vec<HashSet<String>> = input
        .sources
        .iter()
        .flat_map(|s| {
            let title = content_terms(&s.passage.title);
            s.spans.iter().map(move |span| {
                let mut t = content_terms(span);
                t.extend(title.iter().cloned());
                t
            })
        })
        .collect();
    let terms_of = |n: usize| source_terms.get(n.wrapping_sub(1));

    // Claims: the answer's sentences, with the citations in or right after them.
    let mut claims = Vec::new();
    let mut edges = Vec::new();
    let (mut citations_total, mut citations_ok) = (0usize, 0usize);
    for (a, b) in sentences(input.answer) {
        let raw = &input.answer[a..b];
        let cited: Vec<usize> = {
            let mut v: Vec<usize> = citations(raw).into_iter().flat_map(|(_, n)| n).collect();
            v.dedup();
            v
        };
        let text = without_citations(raw);
        let terms = content_terms(&text);
        if terms.is_empty() {
            continue;
        }
        let union: HashSet<String> = if cited.is_empty() {
            source_terms.iter().flatten().cloned().collect()
        } else {
            cited
                .iter()
                .filter_map(|&n| terms_of(n))
                .flatten()
                .cloned()
                .collect()
        };
        let support = recall(&terms, &union);
        let supported = support >= input.support_threshold;
        for &n in &cited {
            citations_total += 1;
            let alone = terms_of(n).map_or(0.0, |s| recall(&terms, s));
            if supported && alone >= input.support_threshold / 2.0 {
                citations_ok += 1;
            }
        }
        let index = claims.len();
        for (i, s) in source_terms.iter().enumerate() {
            let weight = recall(&terms, s);
            if weight >= 0.3 {
                edges.push(SupportEdge {
                    claim: index,
                    source: i + 1,
                    weight,
                    cited: cited.contains(&(i + 1)),
                });
            }
        }
        let alignment = sentence_terms
            .iter()
            .map(|s| recall(&terms, s))
            .fold(0.0, f64::max);
        claims.push(Claim {
            text,
            cited,
            support,
            supported,
            alignment,
        });
    }

    let answer_terms = content_terms(&without_citations(input.answer));
    let short_terms = content_terms(input.short_answer);
    let all_answer_terms: HashSet<String> = answer_terms.union(&short_terms).cloned().collect();
    let (facts, facts_error) = match input.facts {
        Ok(reply) => (
            reply
                .facts
                .iter()
                .take(6)
                .map(|f| check_fact(f, &source_terms, &all_answer_terms))
                .collect::<Vec<_>>(),
            None,
        ),
        Err(e) => (Vec::new(), Some(e)),
    };

    let refusal = is_refusal(input.short_answer) && is_refusal(input.answer)
        || input.answer.trim().is_empty();
    let n = claims.len().max(1) as f64;
    let supported = claims.iter().filter(|c| c.supported).count() as f64;
    // A bare "yes"/"no" has no content terms to check: it rests on the needed facts, and
    // their verified quotes stand in for its claims and citations.
    let verified_share = (!facts.is_empty())
        .then(|| facts.iter().filter(|f| f.verified).count() as f64 / facts.len() as f64);
    let bare_judgement = claims.is_empty() && !input.answer.trim().is_empty();
    let faithfulness_code = match (claims.is_empty(), bare_judgement, verified_share) {
        (false, _, _) => supported / n,
        (true, true, Some(share)) => share,
        _ => 0.0,
    };
    if bare_judgement
        && citations_total == 0
        && let Some(share) = verified_share
    {
        citations_total = facts.len();
        citations_ok = (share * facts.len() as f64).round() as usize;
    }
    let completeness_code = if refusal {
        0.0
    } else if facts.is_empty() {
        0.5
    } else {
        facts.iter().filter(|f| f.verified && f.in_answer).count() as f64 / facts.len() as f64
    };
    let w = input.judge_weight;
    let (judge, judge_error) = match input.judge {
        Ok(j) => (
            Some(JudgeReply {
                faithfulness: j.faithfulness.clamp(0.0, 1.0),
                completeness: j.completeness.clamp(0.0, 1.0),
                confidence: j.confidence.clamp(0.0, 1.0),
            }),
            None,
        ),
        Err(e) => (None, Some(e)),
    };
    let (faithfulness, completeness, confidence) = match &judge {
        Some(j) => (
            (1.0 - w) * faithfulness_code + w * j.faithfulness,
            (1.0 - w) * completeness_code + w * j.completeness,
            j.confidence,
        ),
        None => (
            faithfulness_code,
            completeness_code,
            (faithfulness_code + completeness_code) / 2.0,
        ),
    };
    Verification {
        citation_precision: if citations_total == 0 {
            0.0
        } else {
            citations_ok as f64 / citations_total as f64
        },
        unsupported_claim_rate: if claims.is_empty() {
            1.0
        } else {
            1.0 - supported / n
        },
        evidence_alignment: if claims.is_empty() {
            0.0
        } else {
            claims.iter().map(|c| c.alignment).sum::<f64>() / n
        },
        claims,
        facts,
        facts_error,
        judge,
        judge_error,
        short_answer_support: {
            let all: HashSet<String> = source_terms.iter().flatten().cloned().collect();
            recall(&short_terms, &all)
        },
        refusal,
        faithfulness,
        completeness,
        confidence,
        evidence_graph: edges,
    }
}

fn check_fact(
    f: &crate::prompts::FactReply,
    source_terms: &[HashSet<String>],
    answer_terms: &HashSet<String>,
) -> Fact {
    let value = content_terms(&f.value);
    // The model may cite the wrong number: look for the quote in every source, preferring
    // the one it named.
    let named = f.source as usize;
    let best_source = |text: &str| {
        let terms = content_terms(text);
        let mut best: Option<(usize, f64)> = None;
        for (i, s) in source_terms.iter().enumerate() {
            let r = recall(&terms, s) + if i + 1 == named { 1e-6 } else { 0.0 };
            if best.is_none_or(|(_, b)| r > b) {
                best = Some((i + 1, r));
            }
        }
        best.unwrap_or((0, 0.0))
    };
    let (source, quote_recall) = best_source(&f.quote);
    // The sources the quote was found in. A comparison's two facts sit in two paragraphs,
    // and the model often quotes both in one string: such a quote counts as found when
    // each of its sentences is in some source.
    let found_in: Vec<usize> = if quote_recall >= 0.8 {
        vec![source]
    } else {
        let parts: Vec<(usize, f64)> = sentences(&f.quote)
            .into_iter()
            .map(|(a, b)| best_source(&f.quote[a..b]))
            .collect();
        if parts.len() > 1 && parts.iter().all(|&(_, r)| r >= 0.8) {
            let mut found: Vec<usize> = parts.into_iter().map(|(s, _)| s).collect();
            found.dedup();
            found
        } else {
            Vec::new()
        }
    };
    let found_terms: HashSet<String> = found_in
        .iter()
        .filter_map(|&i| source_terms.get(i.wrapping_sub(1)))
        .flatten()
        .cloned()
        .collect();
    // A yes/no value is a judgement drawn from the quote, not words a source states.
    let judgement = matches!(
        crate::text::tokens(&f.value).first().map(String::as_str),
        Some("yes" | "no" | "true" | "false")
    );
    let verified = (!value.is_empty() || judgement)
        && !is_refusal(&f.value)
        && !found_in.is_empty()
        && (judgement || recall(&value, &found_terms) >= 0.5);
    Fact {
        need: f.need.clone(),
        value: f.value.clone(),
        source: found_in.first().copied().unwrap_or(0),
        quote: f.quote.clone(),
        verified,
        in_answer: verified && recall(&value, answer_terms) >= 0.66,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::evidence::{Passage, Source};
    use crate::prompts::FactReply;

    pub(crate) fn sources() -> Vec<Source> {
        vec![
            Source {
                n: 1,
                passage: Passage::paragraph("Jaws (film)", ""),
                spans: vec![
                    "Jaws is a 1975 American thriller film directed by Steven Spielberg.".into(),
                ],
            },
            Source {
                n: 2,
                passage: Passage::paragraph("Steven Spielberg", ""),
                spans: vec![
                    "Steven Spielberg is an American film director born in Cincinnati.".into(),
                ],
            },
        ]
    }

    #[test]
    fn citations_are_found_and_invalid_ones_stripped() {
        let text = "Jaws was directed by Spielberg [1][7]. He is American [2, 9]. Odd [0].";
        let c = citations(text);
        assert_eq!(c.len(), 4);
        assert_eq!(c[2].1, [2, 9]);
        let (clean, removed) = strip_invalid_citations(text, 2);
        assert_eq!(removed, 3);
        assert_eq!(
            clean,
            "Jaws was directed by Spielberg [1]. He is American [2]. Odd."
        );
        assert_eq!(without_citations("A [1] b [2, 3]."), "A b.");
        assert!(citations("an [array] of [1a]").is_empty());
        // A removal that joins its surroundings into a new invalid marker removes that too.
        assert_eq!(
            strip_invalid_citations("x [[9]5] y", 2),
            ("x y".to_string(), 2)
        );
        assert_eq!(
            strip_invalid_citations("x [[9]2] y", 2),
            ("x [2] y".to_string(), 1)
        );
    }

    /// The citation fuzz target's seeds and kept crashers (`fuzz/*/citations`), replayed
    /// with its invariants: markers inside the text, in order, and none naming a source
    /// that does not exist once cleaned.
    #[test]
    fn fuzz_inputs_of_the_citation_parser_keep_its_invariants() {
        let fuzz = metarag_testkit::repo_dir().join("fuzz");
        let mut replayed = 0;
        for kind in ["seeds", "regressions"] {
            let Ok(dir) = std::fs::read_dir(fuzz.join(kind).join("citations")) else {
                continue;
            };
            for entry in dir {
                let bytes = std::fs::read(entry.unwrap().path()).unwrap();
                let text = String::from_utf8_lossy(&bytes);
                let mut end = 0;
                for (range, nums) in citations(&text) {
                    assert!(end <= range.start && range.end <= text.len() && !nums.is_empty());
                    end = range.end;
                }
                let (clean, _) = strip_invalid_citations(&text, 3);
                for (_, nums) in citations(&clean) {
                    assert!(nums.iter().all(|n| (1..=3).contains(n)), "{clean:?}");
                }
                replayed += 1;
            }
        }
        assert!(replayed >= 1, "the citation fuzz seeds moved");
    }

    #[test]
    fn uncited_supported_sentences_get_their_best_source() {
        let s = sources();
        let (text, added) = attribute(
            "Jaws was directed by Steven Spielberg. He was born in Cincinnati! Bananas are yellow. Cited [1].",
            &s,
            0.6,
        );
        assert_eq!(
            text,
            "Jaws was directed by Steven Spielberg [1]. He was born in Cincinnati [2]! Bananas are yellow. Cited [1]."
        );
        assert_eq!(added, 2);
        assert_eq!(attribute("Iran", &s, 0.6).1, 0);
    }

    fn facts(v1: &str, q1: &str) -> FactsReply {
        FactsReply {
            facts: vec![
                FactReply {
                    need: "director of Jaws".into(),
                    value: v1.into(),
                    source: 1,
                    quote: q1.into(),
                },
                FactReply {
                    need: "nationality of the director".into(),
                    value: "American".into(),
                    source: 1, // wrong number: the quote is in source 2
                    quote: "Steven Spielberg is an American film director".into(),
                },
            ],
        }
    }

    #[test]
    fn a_cited_supported_answer_scores_high() {
        let s = sources();
        let f = facts("Steven Spielberg", "directed by Steven Spielberg");
        let v = verify(VerifyInput {
            answer: "Jaws was directed by Steven Spielberg [1]. Spielberg is American [2].",
            short_answer: "American",
            sources: &s,
            facts: Ok(&f),
            judge: Ok(JudgeReply {
                faithfulness: 1.0,
                completeness: 1.0,
                confidence: 0.9,
            }),
            support_threshold: 0.6,
            judge_weight: 0.25,
        });
        assert_eq!(v.claims.len(), 2);
        assert!(v.claims.iter().all(|c| c.supported));
        assert_eq!(v.citation_precision, 1.0);
        assert_eq!(v.unsupported_claim_rate, 0.0);
        assert_eq!(v.facts_all_verified(), Some(true));
        assert_eq!(v.facts[1].source, 2);
        assert!(v.facts.iter().all(|f| f.in_answer));
        assert!((v.faithfulness - 1.0).abs() < 1e-9);
        assert!((v.completeness - 1.0).abs() < 1e-9);
        assert!(
            v.evidence_graph
                .iter()
                .any(|e| e.claim == 1 && e.source == 2 && e.cited)
        );
    }

    #[test]
    fn a_quote_joining_two_sources_is_found_sentence_by_sentence() {
        let s = sources();
        let fact = |value: &str, quote: &str| {
            let reply = FactsReply {
                facts: vec![FactReply {
                    need: "are both American".into(),
                    value: value.into(),
                    source: 1,
                    quote: quote.into(),
                }],
            };
            let v = verify(VerifyInput {
                answer: "Yes [1][2].",
                short_answer: "yes",
                sources: &s,
                facts: Ok(&reply),
                judge: Err("n/a".into()),
                support_threshold: 0.6,
                judge_weight: 0.25,
            });
            (v.facts[0].verified, v.facts[0].source)
        };
        let both = "Jaws is a 1975 American thriller film directed by Steven Spielberg. \
                    Steven Spielberg is an American film director born in Cincinnati.";
        assert_eq!(fact("Yes, both are American.", both), (true, 1));
        // A value stated in either of the quoted sources.
        assert!(fact("Cincinnati", both).0);
        // Every sentence must be in some source.
        let invented = "Jaws is a 1975 American thriller film directed by Steven Spielberg. \
                        Spielberg was raised by wolves in Alaska.";
        assert_eq!(fact("Yes", invented), (false, 0));
    }

    #[test]
    fn wrong_citations_invented_quotes_and_refusals_score_low() {
        let s = sources();
        let f = facts("George Lucas", "Jaws was made by George Lucas in 1975");
        let v = verify(VerifyInput {
            answer: "Jaws was directed by George Lucas [2]. He was born in Modesto [1].",
            short_answer: "George Lucas",
            sources: &s,
            facts: Ok(&f),
            judge: Err("bad JSON".into()),
            support_threshold: 0.6,
            judge_weight: 0.25,
        });
        assert_eq!(v.citation_precision, 0.0);
        assert_eq!(v.unsupported_claim_rate, 1.0);
        assert_eq!(v.facts_all_verified(), Some(false));
        assert!(!v.facts[0].verified);
        assert_eq!(v.faithfulness, 0.0);
        assert!(v.judge.is_none() && v.judge_error.is_some());

        // A yes/no fact rests on its quote alone.
        let yes = FactsReply {
            facts: vec![FactReply {
                need: "is Spielberg a director".into(),
                value: "Yes".into(),
                source: 2,
                quote: "Steven Spielberg is an American film director".into(),
            }],
        };
        let v = verify(VerifyInput {
            answer: "Yes [2].",
            short_answer: "yes",
            sources: &s,
            facts: Ok(&yes),
            judge: Err("n/a".into()),
            support_threshold: 0.6,
            judge_weight: 0.25,
        });
        assert_eq!(v.facts_all_verified(), Some(true));
        let v = verify(VerifyInput {
            answer: "Yes.",
            short_answer: "yes",
            sources: &s,
            facts: Ok(&yes),
            judge: Err("n/a".into()),
            support_threshold: 0.6,
            judge_weight: 0.25,
        });
        assert!(v.claims.is_empty());
        assert_eq!((v.faithfulness, v.citation_precision), (1.0, 1.0));

        let v = verify(VerifyInput {
            answer: "The sources do not mention it.",
            short_answer: "unknown",
            sources: &s,
            facts: Err("timeout".into()),
            judge: Err("timeout".into()),
            support_threshold: 0.6,
            judge_weight: 0.25,
        });
        assert!(v.refusal);
        assert_eq!(v.completeness, 0.0);
        assert_eq!(v.facts_all_verified(), None);
    }
}
