//! The monitor: how sure the agent may be that a written answer is right, from signals a
//! small local model can give about its own answer, combined by a logistic model fitted on
//! labelled benchmark runs.
//!
//! Asked whether its answer is right (or whether the sources suffice), a 1.5B model says
//! yes almost regardless (P(True) and verbalised confidence are near chance at this size;
//! `shared/research/small-model-monitor.md`). What carries information is measured, not
//! asked: the probability the model gave the tokens of its short answer, whether samples
//! of the short answer agree with it, whether the closed-book answer agrees, whether the
//! sources hold the answer's words and the question's entities, and whether the answer
//! has the shape the question asks for. [`Signals`] holds them; [`MonitorModel`] turns
//! them into a confidence in `[0, 1]`; [`MonitorModel::fit`] fits its weights by
//! regularised logistic regression on first answers labelled right (F1 >= 0.5) or wrong.
//! The weights in [`MonitorModel::default`] come from such a fit on the tuning half of
//! the dev data (see ARCHITECTURE.md and `docs/results/monitor.md`).

use crate::config::Complexity;
use crate::evidence::{Passage, Source};
use crate::metacog::{Category, Diagnosis, DiagnosisMethod, ErrorType};
use crate::program::values::option_quantity;
use crate::text::{
    AnswerType, answer_f1, answer_type, asks_about_time, content_terms, has_number_or_date,
    is_date_phrase, is_refusal, is_stopword, option_list, sentences, tokens,
};
use metarag_core::{LogprobSummary, TokenLogprob, logprob_summary};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};

/// What the monitor measured about one answer. Every field is cheap: the write call's own
/// log-probabilities, `k` short samples over the same (cached) prompt prefix, one short
/// closed-book call, and text checks in code.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Signals {
    /// Log-probabilities of the short answer's tokens in the write reply (mean, minimum).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub short_logprob: Option<LogprobSummary>,
    /// Log-probabilities of the answer field's tokens in the write reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_logprob: Option<LogprobSummary>,
    /// Share of sampled short answers (over the same sources) that agree with the short
    /// answer; `None` when no samples were drawn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_agreement: Option<f64>,
    /// Agreement of the closed-book answer with the short answer (1 or 0; 0 when the
    /// model says it does not know); `None` when no probe ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed_book_agreement: Option<f64>,
    /// Share of the question's named entities that the sources mention.
    pub entity_coverage: f64,
    /// Share of the short answer's content words found in the sources; `None` for a yes/no
    /// answer (its words are not in any source).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_in_sources: Option<f64>,
    /// The short answer has the form the question asks for (a date for "when", a number
    /// for "how many", yes/no, one of the options of "A or B").
    pub type_match: bool,
    /// The answer declines to answer.
    pub refusal: bool,
    /// Share of the short answer's content words that are the question's own (a small
    /// model often answers with an entity the question names); `None` for yes/no and
    /// "A or B" questions, whose answers are in the question by design. Absent from
    /// records before it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_in_question: Option<f64>,
    /// How many sources state the short answer (every content word in one source),
    /// as a share of three; `None` for yes/no answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_support: Option<f64>,
    /// Agreement (1 or 0) of a greedy short answer over the same sources in reverse order
    /// with the short answer: a small model whose answer moves when only the order of its
    /// sources does is choosing among them by position. `None` when that probe did not
    /// run (`[strategies.metarag] reordered_probe`, off by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reordered_agreement: Option<f64>,
}

/// The names of the features the model reads, in order. Each maps a [`Signals`] to a
/// number or `None` (missing: the feature contributes its mean, i.e. nothing).
pub const FEATURES: &[&str] = &[
    "short_logprob_mean",
    "short_logprob_min",
    "answer_logprob_mean",
    "answer_logprob_min",
    "sample_agreement",
    "closed_book_agreement",
    "entity_coverage",
    "answer_in_sources",
    "type_match",
    "refusal",
    "answer_in_question",
    "answer_is_question",
    "answer_support",
    "reordered_agreement",
];

impl Signals {
    /// Every content word of the short answer is the question's own ("What part did he
    /// play for Arsenal?" -> "Arsenal"): the answer restates the question instead of
    /// answering it. `None` where [`Signals::answer_in_question`] is not measured (yes/no
    /// and "A or B" questions). On the tuning halves measured (HotpotQA gold and open,
    /// 2Wiki open), 8 of 8 such first answers were wrong.
    pub fn answer_is_question(&self) -> Option<bool> {
        self.answer_in_question.map(|x| x >= 1.0)
    }

    /// The value of a feature named in [`FEATURES`].
    pub fn feature(&self, name: &str) -> Option<f64> {
        let b = |x: bool| if x { 1.0 } else { 0.0 };
        match name {
            "short_logprob_mean" => self.short_logprob.map(|s| s.mean),
            "short_logprob_min" => self.short_logprob.map(|s| s.min),
            "answer_logprob_mean" => self.answer_logprob.map(|s| s.mean),
            "answer_logprob_min" => self.answer_logprob.map(|s| s.min),
            "sample_agreement" => self.sample_agreement,
            "closed_book_agreement" => self.closed_book_agreement,
            "entity_coverage" => Some(self.entity_coverage),
            "answer_in_sources" => self.answer_in_sources,
            "type_match" => Some(b(self.type_match)),
            "refusal" => Some(b(self.refusal)),
            "answer_in_question" => self.answer_in_question,
            "answer_is_question" => self.answer_is_question().map(b),
            "answer_support" => self.answer_support,
            "reordered_agreement" => self.reordered_agreement,
            _ => None,
        }
    }
}

/// One feature's place in the model: its weight on the standardised value.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Weight {
    /// Weight of `(x - mean) / scale`.
    pub weight: f64,
    /// The feature's mean on the fitting data (a missing value counts as this).
    pub mean: f64,
    /// Its standard deviation there (at least a small floor).
    pub scale: f64,
}

impl Weight {
    /// A weight on `(x - mean) / scale`.
    const fn new(weight: f64, mean: f64, scale: f64) -> Self {
        Weight {
            weight,
            mean,
            scale,
        }
    }
}

/// The features both default monitors weigh by hand: constant on the tuning questions,
/// so fitted to nothing, and kept because a refusal or an answer of the wrong form is
/// wrong whatever else holds (the prior the fits started from); an answer that restates
/// the question was rare there (8 of ~250 first answers, every one wrong), with mean 0 so
/// that it moves no other answer's confidence.
const HAND_SET: [(&str, Weight); 3] = [
    ("type_match", Weight::new(0.6, 0.9, 0.3)),
    ("refusal", Weight::new(-1.0, 0.05, 0.2)),
    ("answer_is_question", Weight::new(-1.0, 0.0, 0.2)),
];

/// A fitted model's weights, with the hand-set ones.
fn weights(fitted: &[(&str, Weight)]) -> BTreeMap<String, Weight> {
    let all = fitted.iter().chain(&HAND_SET);
    all.map(|(name, w)| (name.to_string(), *w)).collect()
}

/// A logistic model over [`Signals`]: confidence = sigmoid(bias + sum of weighted,
/// standardised features). `threshold` is the confidence at or above which an answer
/// passes the gate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct MonitorModel {
    /// The intercept.
    pub bias: f64,
    /// Weights by feature name (see [`FEATURES`]); features not listed are not used.
    pub weights: BTreeMap<String, Weight>,
    /// Answers at or above this confidence pass.
    pub threshold: f64,
    /// Where the weights came from (a run and its split), for the record.
    pub fitted_on: String,
}

impl Default for MonitorModel {
    /// Fitted by `metarag bench monitor --fit` on the tuning half (98 first answers) of
    /// the HotpotQA gold run of the default local model (qwen2.5-1.5b-instruct, n = 200,
    /// seed 42; docs/results/monitor.md): AUROC 0.84 there, 0.72 on the reporting half.
    /// Sample agreement and the answer's words being in the sources carry most weight;
    /// features constant on those questions (form, refusal) got none.
    fn default() -> Self {
        let w = Weight::new;
        MonitorModel {
            bias: 0.6000,
            weights: weights(&[
                ("answer_in_sources", w(0.6326, 0.9607, 0.1877)),
                ("answer_logprob_mean", w(0.0781, -0.1906, 0.2031)),
                ("answer_logprob_min", w(-0.0236, -0.4324, 0.3510)),
                ("closed_book_agreement", w(0.2311, 0.1224, 0.3278)),
                ("entity_coverage", w(0.0503, 0.9915, 0.0601)),
                ("sample_agreement", w(1.0465, 0.7321, 0.3916)),
                ("short_logprob_mean", w(0.3026, -0.8327, 1.7510)),
                ("short_logprob_min", w(0.0928, -1.0483, 1.6973)),
            ]),
            threshold: 0.3826,
            fitted_on: "tuning half (98 first answers of metarag) of hotpotqa gold n200 s42, \
                        qwen2.5-1.5b-instruct; ridge 0.03 by 5-fold CV; type_match, refusal and answer_is_question hand-set"
                .into(),
        }
    }
}

impl MonitorModel {
    /// The monitor over an index (open domain). Fitted by `metarag bench monitor --fit`
    /// on the tuning half of HotpotQA open (100 first answers of metarag, with the
    /// closed-book probe on every answer; qwen2.5-1.5b-instruct, seed 42;
    /// docs/results/monitor.md): AUROC 0.78 there. How many sources state the answer and
    /// sample agreement carry most weight; whether the sources hold the question's
    /// entities matters here (it cannot over gold context, which always does).
    pub fn default_open() -> Self {
        let w = Weight::new;
        MonitorModel {
            bias: 0.1026,
            weights: weights(&[
                ("answer_in_question", w(-0.0959, 0.1113, 0.2478)),
                ("answer_in_sources", w(0.1786, 0.9655, 0.1660)),
                ("answer_logprob_mean", w(0.0497, -0.2426, 0.2582)),
                ("answer_logprob_min", w(0.0893, -0.5683, 0.4318)),
                ("answer_support", w(0.3411, 0.5900, 0.3184)),
                ("closed_book_agreement", w(0.2290, 0.1300, 0.3363)),
                ("entity_coverage", w(0.2605, 0.9650, 0.1638)),
                ("sample_agreement", w(0.4408, 0.6950, 0.3866)),
                ("short_logprob_mean", w(0.1176, -0.8142, 1.6458)),
                ("short_logprob_min", w(0.0534, -1.0208, 1.5943)),
            ]),
            threshold: 0.609,
            fitted_on: "tuning half (100 first answers of metarag) of hotpotqa open n100 s42, \
                        qwen2.5-1.5b-instruct, closed-book probe on every answer; ridge by 5-fold CV; \
                        type_match, refusal and answer_is_question hand-set"
                .into(),
        }
    }
}

fn sigmoid(z: f64) -> f64 {
    1.0 / (1.0 + (-z).exp())
}

impl MonitorModel {
    /// The confidence that the answer measured by `s` is right, in `[0, 1]`.
    pub fn confidence(&self, s: &Signals) -> f64 {
        sigmoid(self.logit(s))
    }

    /// The confidence `s` is sure of whatever value in [0, 1] the missing feature `name`
    /// turns out to have (its least favourable end): when even that passes the gate, the
    /// probe that would measure it cannot change the decision.
    pub fn confidence_at_worst(&self, s: &Signals, name: &str) -> f64 {
        let own = s
            .feature(name)
            .zip(self.weights.get(name))
            .map_or(0.0, |(x, w)| w.weight * (x - w.mean) / w.scale);
        let worst = self.weights.get(name).map_or(0.0, |w| {
            let end = |x: f64| w.weight * (x - w.mean) / w.scale;
            end(0.0).min(end(1.0))
        });
        sigmoid(self.logit(s) - own + worst)
    }

    fn logit(&self, s: &Signals) -> f64 {
        self.bias
            + self
                .weights
                .iter()
                .map(|(name, w)| {
                    s.feature(name)
                        .map_or(0.0, |x| w.weight * (x - w.mean) / w.scale)
                })
                .sum::<f64>()
    }

    /// Checks the model, naming the field at fault.
    pub fn validate(&self) -> Result<(), String> {
        if !(0.0..=1.0).contains(&self.threshold) {
            return Err(format!(
                "monitor.threshold {} is not in [0, 1]",
                self.threshold
            ));
        }
        for (name, w) in &self.weights {
            if !FEATURES.contains(&name.as_str()) {
                return Err(format!(
                    "monitor.weights.{name}: unknown feature (known: {})",
                    FEATURES.join(", ")
                ));
            }
            if !w.scale.is_finite()
                || w.scale <= 0.0
                || !w.weight.is_finite()
                || !w.mean.is_finite()
            {
                return Err(format!(
                    "monitor.weights.{name}: weight and mean must be finite, scale > 0"
                ));
            }
        }
        Ok(())
    }

    /// Fits the weights of `features` by L2-regularised logistic regression on
    /// `(signals, right)` pairs (full-batch gradient descent on standardised features; a
    /// missing value is the feature's mean), then picks the threshold that classifies
    /// the same pairs best. The ridge strength is chosen by 5-fold cross-validated log
    /// loss on the same pairs (a hundred questions overfit ten features easily).
    /// Deterministic.
    pub fn fit(samples: &[(Signals, bool)], features: &[&str], fitted_on: &str) -> MonitorModel {
        const LAMBDAS: [f64; 5] = [0.003, 0.01, 0.03, 0.1, 0.3];
        let folds = 5.min(samples.len());
        let mut best = (f64::INFINITY, LAMBDAS[2]);
        if folds >= 2 {
            for lambda in LAMBDAS {
                let mut loss = 0.0;
                for k in 0..folds {
                    let train: Vec<(Signals, bool)> = samples
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| i % folds != k)
                        .map(|(_, x)| x.clone())
                        .collect();
                    let m = Self::fit_with(&train, features, lambda, "");
                    for (s, y) in samples.iter().skip(k).step_by(folds) {
                        let p = m.confidence(s).clamp(1e-6, 1.0 - 1e-6);
                        loss -= if *y { p.ln() } else { (1.0 - p).ln() };
                    }
                }
                if loss < best.0 {
                    best = (loss, lambda);
                }
            }
        }
        let mut m = Self::fit_with(samples, features, best.1, fitted_on);
        m.fitted_on = format!("{fitted_on}; ridge {} by 5-fold CV", best.1);
        m
    }

    /// [`MonitorModel::fit`] with a given ridge strength `lambda`.
    pub fn fit_with(
        samples: &[(Signals, bool)],
        features: &[&str],
        lambda: f64,
        fitted_on: &str,
    ) -> MonitorModel {
        let n = samples.len().max(1) as f64;
        let mut weights = BTreeMap::new();
        for &f in features {
            let xs: Vec<f64> = samples.iter().filter_map(|(s, _)| s.feature(f)).collect();
            if xs.is_empty() {
                continue;
            }
            let mean = xs.iter().sum::<f64>() / xs.len() as f64;
            let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / xs.len() as f64;
            weights.insert(f.to_string(), Weight::new(0.0, mean, var.sqrt().max(1e-3)));
        }
        let names: Vec<String> = weights.keys().cloned().collect();
        let rows: Vec<(Vec<f64>, f64)> = samples
            .iter()
            .map(|(s, y)| {
                let x = names
                    .iter()
                    .map(|f| {
                        let w = &weights[f];
                        s.feature(f).map_or(0.0, |x| (x - w.mean) / w.scale)
                    })
                    .collect();
                (x, if *y { 1.0 } else { 0.0 })
            })
            .collect();
        let positives = rows.iter().filter(|r| r.1 > 0.5).count() as f64;
        let prior = ((positives + 0.5) / (n + 1.0)).clamp(1e-3, 1.0 - 1e-3);
        let mut bias = (prior / (1.0 - prior)).ln();
        let mut w = vec![0.0; names.len()];
        let rate = 0.5;
        for _ in 0..3000 {
            let mut gb = 0.0;
            let mut gw = vec![0.0; w.len()];
            for (x, y) in &rows {
                let z = bias + x.iter().zip(&w).map(|(a, b)| a * b).sum::<f64>();
                let err = sigmoid(z) - y;
                gb += err;
                for (g, xi) in gw.iter_mut().zip(x) {
                    *g += err * xi;
                }
            }
            bias -= rate * gb / n;
            for (wi, g) in w.iter_mut().zip(&gw) {
                *wi -= rate * (g / n + lambda * *wi);
            }
        }
        for (name, wi) in names.iter().zip(&w) {
            weights.get_mut(name).expect("named above").weight = *wi;
        }
        let mut model = MonitorModel {
            bias,
            weights,
            threshold: 0.5,
            fitted_on: fitted_on.to_string(),
        };
        model.threshold = best_threshold(
            &samples
                .iter()
                .map(|(s, y)| (model.confidence(s), *y))
                .collect::<Vec<_>>(),
        );
        model
    }
}

/// The threshold that classifies `(score, right)` pairs best (accuracy of "score >=
/// threshold" as "right"), the midpoint between neighbouring scores; ties go to the
/// lower threshold (fewer answers sent round the loop cost less).
pub fn best_threshold(scored: &[(f64, bool)]) -> f64 {
    let mut xs: Vec<(f64, bool)> = scored.to_vec();
    xs.sort_by(|a, b| a.0.total_cmp(&b.0));
    // Threshold below everything: every answer passes.
    let mut correct = xs.iter().filter(|x| x.1).count();
    let mut best = (correct, xs.first().map_or(0.5, |x| x.0 - 1e-9));
    for i in 0..xs.len() {
        // Move xs[i] to the failing side.
        if xs[i].1 {
            correct -= 1;
        } else {
            correct += 1;
        }
        let next = xs
            .get(i + 1)
            .map_or(xs[i].0 + 1e-9, |x| (xs[i].0 + x.0) / 2.0);
        if correct > best.0 {
            best = (correct, next);
        }
    }
    best.1.clamp(0.0, 1.0)
}

/// Mean and minimum log-probability of the tokens of one string field's value in a JSON
/// reply (`"short_answer": "..."`), from the reply's per-token log-probabilities. `None`
/// when the field is not found.
pub fn field_logprobs(tokens: &[TokenLogprob], field: &str) -> Option<LogprobSummary> {
    let mut text = String::new();
    let mut starts = Vec::with_capacity(tokens.len());
    for t in tokens {
        starts.push(text.len());
        text.push_str(&t.token);
    }
    let key = format!("\"{field}\"");
    let k = text.find(&key)? + key.len();
    let rest = &text[k..];
    let open = k + rest.find('"')? + 1;
    // The value ends at the next quote not escaped by a backslash.
    let bytes = text.as_bytes();
    let mut end = open;
    while end < bytes.len() && !(bytes[end] == b'"' && bytes[end - 1] != b'\\') {
        end += 1;
    }
    let picked: Vec<TokenLogprob> = tokens
        .iter()
        .zip(&starts)
        .filter(|&(t, &s)| {
            let e = s + t.token.len();
            // Overlaps the value and carries a letter or digit (not the closing quote).
            s < end && e > open && t.token.chars().any(char::is_alphanumeric)
        })
        .map(|(t, _)| t.clone())
        .collect();
    logprob_summary(&picked)
}

/// Runs of capitalised words in the question (its named entities: "Steven Spielberg",
/// "Jaws"), without a leading question word; digits count as name-like (years).
pub fn question_entities(question: &str) -> Vec<String> {
    const QUESTION_WORDS: &[&str] = &[
        "who", "what", "when", "where", "which", "why", "how", "whose", "whom", "is", "are", "was",
        "were", "do", "does", "did", "in", "the", "a", "an", "of", "both", "and",
    ];
    let mut out = Vec::new();
    let mut run: Vec<&str> = Vec::new();
    let words: Vec<&str> = question.split_whitespace().collect();
    for (i, raw) in words.iter().enumerate() {
        let w = raw.trim_matches(|c: char| !c.is_alphanumeric());
        let name = w
            .chars()
            .next()
            .is_some_and(|c| c.is_uppercase() || c.is_ascii_digit());
        let lead = i == 0 && QUESTION_WORDS.contains(&w.to_lowercase().as_str());
        // Lowercase joiners inside a name ("Bedknobs and Broomsticks", "Wenceslaus of
        // Niemodlin") keep the run going when a capital follows.
        let joiner = !run.is_empty()
            && [
                "of", "and", "the", "de", "van", "von", "la", "le", "du", "for",
            ]
            .contains(&w)
            && words
                .get(i + 1)
                .and_then(|n| n.chars().next())
                .is_some_and(char::is_uppercase);
        if (name && !lead && !w.is_empty()) || joiner {
            run.push(w);
        } else if !run.is_empty() {
            out.push(run.join(" "));
            run.clear();
        }
        if raw.ends_with([',', '?', ';', ':']) && !run.is_empty() {
            out.push(run.join(" "));
            run.clear();
        }
    }
    if !run.is_empty() {
        out.push(run.join(" "));
    }
    out.dedup();
    out
}

/// The content words of every source (titles included).
fn source_terms(sources: &[Source]) -> HashSet<String> {
    let mut all = HashSet::new();
    for s in sources {
        all.extend(content_terms(&s.passage.title));
        for span in &s.spans {
            all.extend(content_terms(span));
        }
    }
    all
}

/// Whether the terms mention an entity: at least two thirds of its content words are there
/// (`None` for an entity without content words).
fn entity_covered(entity: &str, all: &HashSet<String>) -> Option<bool> {
    let terms: Vec<String> = tokens(entity)
        .into_iter()
        .filter(|t| !is_stopword(t))
        .collect();
    if terms.is_empty() {
        return None;
    }
    let found = terms.iter().filter(|t| all.contains(*t)).count();
    Some(found * 3 >= terms.len() * 2)
}

/// Share of the question's entities the terms mention; 1 when the question names none.
fn coverage_in(question: &str, all: &HashSet<String>) -> f64 {
    let verdicts: Vec<bool> = question_entities(question)
        .iter()
        .filter_map(|e| entity_covered(e, all))
        .collect();
    if verdicts.is_empty() {
        1.0
    } else {
        verdicts.iter().filter(|&&c| c).count() as f64 / verdicts.len() as f64
    }
}

/// The question's entities the passages do not mention (the missing hop to search for).
pub fn uncovered_entities(question: &str, passages: &[Passage]) -> Vec<String> {
    entity_coverage(question, passages).1
}

/// Share of the question's named entities the passages mention (1 when it names none),
/// and the ones they do not.
pub fn entity_coverage(question: &str, passages: &[Passage]) -> (f64, Vec<String>) {
    let mut all = HashSet::new();
    for p in passages {
        all.extend(content_terms(&p.title));
        all.extend(content_terms(&p.text));
    }
    let mut named = 0usize;
    let mut missing = Vec::new();
    for e in question_entities(question) {
        match entity_covered(&e, &all) {
            Some(true) => named += 1,
            Some(false) => {
                named += 1;
                missing.push(e);
            }
            None => {}
        }
    }
    let share = if named == 0 {
        1.0
    } else {
        (named - missing.len()) as f64 / named as f64
    };
    (share, missing)
}

/// The form of answer a question asks for, which the write node's schema enforces where
/// it can (yes/no) and the monitor checks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", tag = "form", content = "options")]
pub enum AnswerForm {
    /// "Is ...?", "Did ...?": yes or no.
    YesNo,
    /// "Who is older, A or B?": one of the options, or both, or neither. The options come
    /// first (two, or every item of a list: "platform, data, or billing"), then "both"
    /// and "neither" ([`AnswerForm::options`] reads the options alone).
    Choice(Vec<String>),
    /// "When ...?", "What year ...?": a date.
    Date,
    /// "How many ...?": a number.
    Number,
    /// "Who ...?", "Where ...?", "What nationality ...?": a name, a place or a thing, asked
    /// in words that never mention time, so a date is the wrong form ("Where was the
    /// director born?" answered "16 June 1942").
    Name,
    /// Anything else: a short phrase.
    Free,
}

impl AnswerForm {
    /// The form of the question's answer, from its wording.
    pub fn of(question: &str) -> AnswerForm {
        if let Some(mut offered) = option_list(question) {
            offered.extend(["both".into(), "neither".into()]);
            return AnswerForm::Choice(offered);
        }
        match answer_type(question) {
            AnswerType::YesNo => AnswerForm::YesNo,
            AnswerType::Date => AnswerForm::Date,
            AnswerType::Number => AnswerForm::Number,
            AnswerType::Other if !asks_about_time(question) => AnswerForm::Name,
            AnswerType::Other => AnswerForm::Free,
        }
    }

    /// The options an "A or B" (or "A, B or C") question offers, without the "both" and
    /// "neither" that follow them in [`AnswerForm::Choice`]; empty for other forms.
    pub fn options(&self) -> &[String] {
        match self {
            AnswerForm::Choice(o) => &o[..o.len().saturating_sub(2)],
            _ => &[],
        }
    }

    /// The values a constrained short answer may take (`None`: free text).
    pub fn allowed(&self) -> Option<Vec<String>> {
        match self {
            AnswerForm::YesNo => Some(vec!["yes".into(), "no".into()]),
            // An "A or B" answer may be neither option ("neither: C"), so it is not
            // constrained to them.
            _ => None,
        }
    }

    /// Whether a short answer has this form.
    pub fn matches(&self, short: &str) -> bool {
        let t = tokens(short);
        let verdict = t.len() == 1 && (t[0] == "yes" || t[0] == "no");
        match self {
            AnswerForm::YesNo => verdict,
            AnswerForm::Choice(o) => {
                let terms = content_terms(short);
                let names_option = !terms.is_empty()
                    && o.iter()
                        .any(|opt| content_terms(opt).iter().any(|w| terms.contains(w)));
                // "Neither: 10 seconds" for "..., a minute or an hour?": a value of the
                // options' kind is an answer to the question as asked.
                let same_kind = || {
                    let short = option_quantity(short);
                    self.options().iter().all(|opt| {
                        option_quantity(opt)
                            .zip(short.as_ref())
                            .is_some_and(|(q, s)| q.order(s).is_some())
                    })
                };
                names_option || same_kind()
            }
            AnswerForm::Date | AnswerForm::Number => has_number_or_date(short),
            AnswerForm::Name => {
                !t.is_empty() && !verdict && !is_refusal(short) && !is_date_phrase(short)
            }
            AnswerForm::Free => !t.is_empty() && !verdict && !is_refusal(short),
        }
    }
}

/// Whether two short answers say the same: the same yes/no verdict, or token F1 >= 0.5.
pub fn agree(a: &str, b: &str) -> bool {
    let (ta, tb) = (tokens(a), tokens(b));
    let verdict =
        |t: &[String]| (t.len() == 1 && (t[0] == "yes" || t[0] == "no")).then(|| t[0].clone());
    match (verdict(&ta), verdict(&tb)) {
        (Some(x), Some(y)) => x == y,
        (None, None) => answer_f1(a, b) >= 0.5,
        _ => false,
    }
}

/// Whether short answer `short` says `answer`, where `answer` may be one of a question's
/// two `options`: it [`agree`]s with it and, when it is an option, is closer to it by token
/// F1 than to the other option. Two options that share words ("Battle of Velm", "Battle of
/// Tinmouth"; "Zorb National Park", "Quen National Park") both agree with either name by F1
/// alone, so a check would confirm the option it found wrong.
pub fn says(short: &str, answer: &str, options: &[String]) -> bool {
    if !agree(short, answer) {
        return false;
    }
    let mut others = options.iter().filter(|o| o.as_str() != answer);
    let is_option = options.iter().any(|o| o == answer);
    !is_option || others.all(|o| answer_f1(short, answer) > answer_f1(short, o))
}

/// Inputs of [`measure`].
#[derive(Debug, Clone, Copy)]
pub struct MeasureInput<'a> {
    /// The question.
    pub question: &'a str,
    /// The answer with citations.
    pub answer: &'a str,
    /// The short answer.
    pub short_answer: &'a str,
    /// The sources the answer was written over.
    pub sources: &'a [Source],
    /// Log-probabilities of the short answer's tokens in the write reply.
    pub short_logprob: Option<LogprobSummary>,
    /// Log-probabilities of the answer field's tokens.
    pub answer_logprob: Option<LogprobSummary>,
    /// Sampled short answers over the same sources (may be empty).
    pub samples: &'a [String],
    /// The closed-book answer, when the probe ran.
    pub closed_book: Option<&'a str>,
    /// The short answer over the sources in reverse order, when that probe ran.
    pub reordered: Option<&'a str>,
}

/// Measures the signals of one answer.
pub fn measure(input: MeasureInput<'_>) -> Signals {
    let form = AnswerForm::of(input.question);
    let terms = source_terms(input.sources);
    let short_terms = content_terms(input.short_answer);
    let answer_in_sources =
        (!matches!(form, AnswerForm::YesNo) && !short_terms.is_empty()).then(|| {
            short_terms.iter().filter(|t| terms.contains(*t)).count() as f64
                / short_terms.len() as f64
        });
    let sample_agreement = (!input.samples.is_empty()).then(|| {
        input
            .samples
            .iter()
            .filter(|s| agree(s, input.short_answer))
            .count() as f64
            / input.samples.len() as f64
    });
    let closed_book_agreement = input.closed_book.map(|cb| {
        let unknown = tokens(cb).iter().any(|t| t == "unknown") || is_refusal(cb);
        if !unknown && agree(cb, input.short_answer) {
            1.0
        } else {
            0.0
        }
    });
    let answer_in_question = (matches!(
        form,
        AnswerForm::Free | AnswerForm::Name | AnswerForm::Date | AnswerForm::Number
    ) && !short_terms.is_empty())
    .then(|| {
        let asked = content_terms(input.question);
        short_terms.iter().filter(|t| asked.contains(*t)).count() as f64 / short_terms.len() as f64
    });
    let answer_support = answer_in_sources.map(|_| {
        let stating = input
            .sources
            .iter()
            .filter(|src| {
                let mut own = content_terms(&src.passage.title);
                for span in &src.spans {
                    own.extend(content_terms(span));
                }
                short_terms.iter().all(|t| own.contains(t))
            })
            .count();
        stating.min(3) as f64 / 3.0
    });
    let reordered_agreement = input
        .reordered
        .map(|r| f64::from(u8::from(agree(r, input.short_answer))));
    Signals {
        answer_in_question,
        answer_support,
        reordered_agreement,
        short_logprob: input.short_logprob,
        answer_logprob: input.answer_logprob,
        sample_agreement,
        closed_book_agreement,
        entity_coverage: coverage_in(input.question, &terms),
        answer_in_sources,
        type_match: form.matches(input.short_answer),
        refusal: is_refusal(input.answer) || is_refusal(input.short_answer),
    }
}

/// The most frequent sampled answer (grouped by [`agree`]) and its share of the samples,
/// when one exists.
pub fn majority(samples: &[String]) -> Option<(String, f64)> {
    let mut best: Option<(&String, usize)> = None;
    for s in samples {
        if tokens(s).is_empty() {
            continue;
        }
        let count = samples.iter().filter(|o| agree(s, o)).count();
        if best.is_none_or(|(_, c)| count > c) {
            best = Some((s, count));
        }
    }
    best.map(|(s, c)| (s.trim().to_string(), c as f64 / samples.len() as f64))
}

/// The seed's diagnosis (four knowledge categories, three error types) decided in code
/// from the monitor's signals: the sources suffice when they mention the question's
/// entities and the answer's words; the model's own knowledge suffices when its
/// closed-book answer agrees with the answer. `suggested_query` is the missing hop:
/// the question's entities the evidence does not mention, else a next-hop query.
pub fn diagnose(
    question: &str,
    answer: &str,
    signals: &Signals,
    closed_book: Option<&str>,
    missing_hop: Option<String>,
    complexity: Complexity,
) -> Diagnosis {
    let mut reasons = Vec::new();
    let grounded = signals.answer_in_sources.is_none_or(|g| g >= 0.5);
    let external = signals.entity_coverage >= 0.5 && grounded && !signals.refusal;
    if signals.entity_coverage < 0.5 {
        reasons.push(format!(
            "the sources mention {:.0}% of the question's entities",
            signals.entity_coverage * 100.0
        ));
    }
    if !grounded {
        reasons.push("the sources do not contain the short answer's words".into());
    }
    if signals.refusal {
        reasons.push("the answer declines to answer".into());
    }
    let internal = signals.closed_book_agreement.is_some_and(|a| a >= 0.5);
    if internal {
        reasons.push("the closed-book answer agrees".into());
    }
    let mut error_types = Vec::new();
    if !signals.type_match {
        error_types.push(ErrorType::AmbiguityUnderstanding);
        reasons.push("the short answer does not have the form the question asks for".into());
    }
    if signals.answer_is_question() == Some(true) {
        if !error_types.contains(&ErrorType::AmbiguityUnderstanding) {
            error_types.push(ErrorType::AmbiguityUnderstanding);
        }
        reasons.push("the short answer only repeats the question's words".into());
    }
    if signals.sample_agreement.is_some_and(|a| a < 0.5) {
        error_types.push(ErrorType::IncompleteReasoning);
        reasons.push("most samples over the same sources disagree".into());
    }
    let spans = sentences(answer);
    let sents: Vec<HashSet<String>> = spans
        .iter()
        .map(|&(a, b)| content_terms(&answer[a..b]))
        .collect();
    let repeated = (0..sents.len())
        .any(|i| (i + 1..sents.len()).any(|j| crate::text::jaccard(&sents[i], &sents[j]) >= 0.8));
    if repeated {
        error_types.push(ErrorType::AnswerRedundance);
        reasons.push("the answer repeats itself".into());
    }
    if complexity == Complexity::MultiHop && !external && missing_hop.is_some() {
        reasons.push("a hop of the question is not covered".into());
    }
    Diagnosis {
        category: Category::of(internal, external),
        error_types,
        internal_sufficient: internal,
        external_sufficient: external,
        suggested_query: missing_hop.unwrap_or_else(|| question.to_string()),
        method: DiagnosisMethod::Signals,
        closed_book_answer: closed_book.map(str::to_string),
        critic: None,
        critic_error: None,
        reasons,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_says_the_option_it_is_closest_to() {
        let options = [
            "Battle of Velm".to_string(),
            "Battle of Tinmouth".to_string(),
        ];
        assert!(
            agree("Battle of Tinmouth", "Battle of Velm"),
            "F1 alone: 0.5"
        );
        assert!(!says("Battle of Tinmouth", "Battle of Velm", &options));
        assert!(says("Battle of Tinmouth", "Battle of Tinmouth", &options));
        assert!(says(
            "the Battle of Tinmouth",
            "Battle of Tinmouth",
            &options
        ));
        assert!(!says("both", "Battle of Tinmouth", &options));
        // Not an option: agreement alone.
        assert!(says("yes", "yes", &options));
        assert!(!says("no", "yes", &options));
    }

    fn lp(pieces: &[(&str, f32)]) -> Vec<TokenLogprob> {
        pieces
            .iter()
            .map(|(t, p)| TokenLogprob {
                token: t.to_string(),
                logprob: *p,
            })
            .collect()
    }

    #[test]
    fn field_logprobs_read_only_the_fields_value() {
        let t = lp(&[
            ("{\"", -0.01),
            ("answer", -0.01),
            ("\":", -0.01),
            (" \"", -0.01),
            ("Qu", -0.5),
            ("ill", -0.2),
            (" [1]", -0.1),
            ("\",", -0.01),
            (" \"short_answer", -0.01),
            ("\": \"", -0.01),
            ("Qu", -0.05),
            ("ill", -3.0),
            ("\"}", -0.01),
        ]);
        let s = field_logprobs(&t, "short_answer").unwrap();
        assert_eq!(s.tokens, 2);
        assert!((s.min + 3.0).abs() < 1e-6);
        let a = field_logprobs(&t, "answer").unwrap();
        assert_eq!(a.tokens, 3);
        assert!((a.min + 0.5).abs() < 1e-6);
        assert!(field_logprobs(&t, "missing").is_none());
    }

    #[test]
    fn entities_are_capitalised_runs_without_the_question_word() {
        assert_eq!(
            question_entities("Which country is the director of Zorblatt Tide from?"),
            ["Zorblatt Tide"]
        );
        assert_eq!(
            question_entities("Who is older, Anna Veltz or Piet of Ormund?"),
            ["Anna Veltz", "Piet of Ormund"]
        );
        assert_eq!(
            question_entities("When was the Glass Harbor Bridge opened in 1921?"),
            ["Glass Harbor Bridge", "1921"]
        );
    }

    #[test]
    fn forms_follow_the_question() {
        assert_eq!(
            AnswerForm::of("Is the Quillmoor river longer than the Tessa?"),
            AnswerForm::YesNo
        );
        let choice = AnswerForm::of("Who was born first, Anna Veltz or Piet Ormund?");
        // Not constrained: the sources may say it is neither option.
        assert_eq!(choice.allowed(), None);
        assert!(choice.matches("Piet Ormund"));
        assert!(!choice.matches("1921"));
        // A value that is neither of two value options answers the question as asked.
        let values = AnswerForm::of("How far ahead may the clock run, a minute or an hour?");
        assert!(values.matches("10 seconds"));
        assert!(values.matches("an hour"));
        assert!(!values.matches("3 tokens"));
        assert!(AnswerForm::of("When did Zorblatt open?").matches("May 1921"));
        assert!(!AnswerForm::of("When did Zorblatt open?").matches("Quillmoor"));
        assert!(!AnswerForm::of("Who founded Zorblatt?").matches("yes"));
        // A question that never mentions time is not answered by a date.
        let place = AnswerForm::of("Where was the founder of Zorblatt born?");
        assert_eq!(place, AnswerForm::Name);
        assert!(place.matches("Quillmoor") && !place.matches("16 June 1942"));
        let birth = AnswerForm::of("What is the date of birth of the founder of Zorblatt?");
        assert!(birth.matches("16 June 1942"));
    }

    #[test]
    fn agreement_compares_verdicts_and_words() {
        assert!(agree("Yes", "yes."));
        assert!(!agree("yes", "no"));
        assert!(agree("Anna Veltz", "Veltz"));
        assert!(!agree("Anna Veltz", "Piet Ormund"));
        assert!(!agree("yes", "Anna Veltz"));
        let (m, share) = majority(&[
            "Piet Ormund".into(),
            "Anna Veltz".into(),
            "Piet Ormund".into(),
        ])
        .unwrap();
        assert_eq!(m, "Piet Ormund");
        assert!((share - 2.0 / 3.0).abs() < 1e-9);
    }

    #[test]
    fn the_fit_separates_right_from_wrong_and_the_threshold_sits_between() {
        let sig = |agreement: f64, junk: f64| Signals {
            sample_agreement: Some(agreement),
            entity_coverage: junk,
            type_match: true,
            ..Signals::default()
        };
        let mut data = Vec::new();
        for i in 0..40 {
            let junk = f64::from(i % 5) / 4.0;
            data.push((sig(0.8 + 0.05 * f64::from(i % 4), junk), true));
            data.push((sig(0.2 + 0.05 * f64::from(i % 4), junk), false));
        }
        let m = MonitorModel::fit(&data, FEATURES, "test");
        m.validate().unwrap();
        assert!(m.weights["sample_agreement"].weight > 1.0);
        // A feature unrelated to the label gets (almost) nothing.
        assert!(m.weights["entity_coverage"].weight.abs() < 0.2);
        assert!(m.confidence(&sig(0.9, 0.5)) >= m.threshold);
        assert!(m.confidence(&sig(0.2, 0.5)) < m.threshold);
        // Features missing from every sample are left out.
        assert!(!m.weights.contains_key("short_logprob_min"));
    }

    #[test]
    fn the_best_threshold_maximises_accuracy() {
        let t = best_threshold(&[(0.1, false), (0.3, false), (0.6, true), (0.9, true)]);
        assert!(t > 0.3 && t <= 0.6);
        // All right: everything passes.
        assert!(best_threshold(&[(0.2, true), (0.4, true)]) <= 0.2);
    }

    #[test]
    fn an_unknown_feature_is_a_config_error_naming_it() {
        let mut m = MonitorModel::default();
        m.validate().unwrap();
        m.weights.insert("vibes".into(), Weight::new(1.0, 0.0, 1.0));
        assert!(m.validate().unwrap_err().contains("monitor.weights.vibes"));
    }

    #[test]
    fn signals_of_a_grounded_answer_of_the_right_form() {
        let src = Source {
            n: 1,
            passage: Passage {
                title: "Zorblatt Tide".into(),
                section: vec![],
                pages: None,
                chunk_id: None,
                doc: "z".into(),
                text: String::new(),
            },
            spans: vec!["Zorblatt Tide is a 1975 film directed by Anna Veltz.".into()],
        };
        let s = measure(MeasureInput {
            question: "Who directed Zorblatt Tide?",
            answer: "Zorblatt Tide was directed by Anna Veltz [1].",
            short_answer: "Anna Veltz",
            sources: std::slice::from_ref(&src),
            short_logprob: None,
            answer_logprob: None,
            samples: &["Anna Veltz".into(), "Piet Ormund".into()],
            closed_book: Some("unknown"),
            reordered: Some("Piet Ormund"),
        });
        assert_eq!(s.entity_coverage, 1.0);
        assert_eq!(s.answer_in_sources, Some(1.0));
        assert_eq!(s.sample_agreement, Some(0.5));
        assert_eq!(s.closed_book_agreement, Some(0.0));
        // The answer over the sources in reverse order names someone else.
        assert_eq!(s.reordered_agreement, Some(0.0));
        assert!(s.type_match && !s.refusal);
        // One source states the answer; none of its words are the question's.
        assert_eq!(s.answer_support, Some(1.0 / 3.0));
        assert_eq!(s.answer_in_question, Some(0.0));
        // An answer that names the question's own entity.
        let echo = measure(MeasureInput {
            short_answer: "Zorblatt Tide",
            ..MeasureInput {
                question: "Who directed Zorblatt Tide?",
                answer: "Zorblatt Tide [1].",
                short_answer: "",
                sources: std::slice::from_ref(&src),
                short_logprob: None,
                answer_logprob: None,
                samples: &[],
                closed_book: None,
                reordered: None,
            }
        });
        assert_eq!(echo.answer_in_question, Some(1.0));
        assert_eq!(echo.answer_is_question(), Some(true));
        assert_eq!(s.answer_is_question(), Some(false));
        // Both monitors fail an echo that every other signal would pass, and the
        // diagnosis says why.
        let confident = Signals {
            sample_agreement: Some(1.0),
            closed_book_agreement: Some(1.0),
            answer_support: Some(1.0),
            ..echo.clone()
        };
        for model in [MonitorModel::default(), MonitorModel::default_open()] {
            let passed = Signals {
                answer_in_question: Some(0.0),
                ..confident.clone()
            };
            assert!(model.confidence(&passed) >= model.threshold);
            assert!(model.confidence(&confident) < model.threshold);
        }
        let d = diagnose(
            "Who directed Zorblatt Tide?",
            "Zorblatt Tide [1].",
            &echo,
            None,
            None,
            Complexity::Simple,
        );
        assert!(d.reasons.iter().any(|r| r.contains("repeats the question")));
        assert_eq!(d.error_types, [ErrorType::AmbiguityUnderstanding]);
        // Yes/no and "A or B" answers are in the question by design: not measured.
        let verdict = measure(MeasureInput {
            question: "Did Anna Veltz direct Zorblatt Tide?",
            answer: "Yes [1].",
            short_answer: "yes",
            sources: std::slice::from_ref(&src),
            short_logprob: None,
            answer_logprob: None,
            samples: &[],
            closed_book: None,
            reordered: Some("Yes"),
        });
        // A verdict agrees with the same verdict however it is cased.
        assert_eq!(verdict.reordered_agreement, Some(1.0));
        assert_eq!(
            (verdict.answer_in_question, verdict.answer_support),
            (None, None)
        );
        let d = diagnose(
            "Who directed Zorblatt Tide?",
            "Zorblatt Tide was directed by Anna Veltz [1].",
            &s,
            Some("unknown"),
            None,
            Complexity::Simple,
        );
        assert_eq!(d.category, Category::ExternalKnowledgeOnly);
    }
}
