//! `metarag`: the metacognitive loop of seed `000` (after Yao et al. 2024), with a
//! monitor a small model can support.
//!
//! plan -> retrieve -> read -> write -> **assess** (the monitor: the answer's token
//! probabilities, agreement of short answers sampled over the same sources, the
//! closed-book probe (asked only when its answer could change the decision or a weak
//! answer is to be diagnosed), entity and answer grounding, answer form; combined into a
//! confidence by [`MonitorModel`]). A confident answer stops there: one write plus the
//! monitor. Otherwise **diagnose** (the seed's four knowledge categories and three error
//! types, decided in code from the signals) and **remediate** with the remedy aimed at the
//! cause: missing knowledge in open-domain -> re-retrieve for the hop the evidence does
//! not cover (or, when the model's own answer disagrees with the sources, for that
//! answer), and write again only when the new passages cover it; every sample agreeing on
//! another answer -> that answer, with the source sentence stating it; sufficient evidence
//! but disagreeing samples -> a rewrite told which answers the samples gave; an answer of
//! the wrong form -> a rewrite told the form. **Do no harm**: a later round replaces the answer
//! only when its confidence beats the kept one's by `margin`, a yes/no verdict is never
//! flipped by a rewrite, and over an index an "A or B" answer is never switched to the
//! other option.
//!
//! An "A or B" **date comparison** ("which came out first?") is decided in code after the
//! first assessment (`compare_dates`): the model reads each option's date, each is checked
//! against the source it cites, and the option the dates make the answer replaces a
//! written one that differs ([`crate::compare`]). A yes/no question about two things
//! ("are A and B both ferns?") can be decided part by part the same way (`check_parts`,
//! off by default: the default model answers "yes" to each part; [`crate::parts`]).
//! Without it, such a question, and a choice of the option an attribute describes ("which
//! band formed in England, A or B?"), is read off each thing's own page in code, with no
//! model call (`check_attributes`, [`crate::attribute`]). A question for what two things
//! share ("what profession do A and B share?") is confirmed when both things' own pages
//! state the written answer, also in code (`check_shared`, [`crate::shared`]).
//!
//! Over an index, a multi-hop plan searches the bridge entities of the question's relation
//! right after its first search (`agent.bridge_hop`), so the first answer is written over
//! both hops: the missing hop is found before the write, not diagnosed after it.

use crate::attribute::{self, AttributeQuestion};
use crate::compare::{self, DateComparison, SpanComparison};
use crate::evidence::{self, Source};
use crate::graph::{Graph, NodeId, NodeResult, Transition};
use crate::kin::{self, KinshipChain};
use crate::link::{self, LinkedQuestion};
use crate::measure::{self, QuantityComparison};
use crate::monitor::{self, AnswerForm, MeasureInput, MonitorModel, agree, majority, says};
use crate::nodes::{self, PLAN, READ, RETRIEVE, WRITE};
use crate::parts::{self, BothQuestion};
use crate::prompts::{self, ShortReply};
use crate::registry::Strategy;
use crate::shared::{self, SharedQuestion};
use crate::state::Run;
use crate::trace::{
    Assessment, EvidenceMode, KinLink, OptionDate, OptionValue, PartCheck, Remediation,
    RetrievalReason, ThingTerms,
};
use metarag_core::parse_json;
use serde::{Deserialize, Serialize};

/// The monitor: signals, confidence and the gate.
pub const ASSESS: NodeId = NodeId("assess");
/// Why the answer is weak (knowledge category, error types).
pub const DIAGNOSE: NodeId = NodeId("diagnose");
/// Re-retrieval for the missing hop, or a rewrite aimed at the cause.
pub const REMEDIATE: NodeId = NodeId("remediate");
/// After a re-retrieval: write again only if the new passages cover the missing hop.
pub const CHECK: NodeId = NodeId("check");
/// A date comparison ("which came out first, A or B?"): each option's date read from
/// the sources, the comparison made in code.
pub const COMPARE: NodeId = NodeId("compare");
/// A yes/no question about two things ("are A and B both ferns?"): each part answered
/// alone from a source about it, the conjunction made in code.
pub const PARTS: NodeId = NodeId("parts");
/// Decides a quantity comparison by its numbers ([`crate::measure`]).
pub const MEASURE: NodeId = NodeId("measure");
/// Follows a kinship question one relation at a time ([`crate::kin`]).
pub const KIN: NodeId = NodeId("kin");
/// Asks a question about a person named through a relation again of that person by name
/// ([`crate::link`]).
pub const LINK: NodeId = NodeId("link");
/// Reads an attribute question off each thing's own page ([`crate::attribute`]).
pub const ATTRIBUTE: NodeId = NodeId("attribute");
/// Checks the answer to a question for what two things share against both things' own
/// pages ([`crate::shared`]).
pub const SHARED: NodeId = NodeId("shared");

/// MetaRAG's settings (`[strategies.metarag]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MetaragConfig {
    /// Short answers sampled over the same sources for the agreement signal (0: none).
    pub samples: u32,
    /// Temperature of those samples.
    pub sample_temperature: f32,
    /// Ask the closed-book probe (one short call without sources) for the agreement
    /// signal and the internal-knowledge diagnosis.
    pub closed_book: bool,
    /// Ask it for every answer. Off (the default), it is asked only when its answer could
    /// change the gate's decision or a weak answer is to be diagnosed: an answer that
    /// passes even if the probe disagreed stops without it (the same decisions, one call
    /// fewer for most answers). On, every assessment records it, as fitting the monitor
    /// (`bench monitor --fit`) wants.
    pub closed_book_every_answer: bool,
    /// Ask for the short answer once more over the same sources in reverse order (one
    /// greedy call with a prompt of its own: a second evaluation of the sources) for the
    /// `reordered_agreement` signal. A small model that picks among its sources by
    /// position gives another answer when only their order changes. Off by default: a
    /// measurement for fitting the monitor on a tuning half (`bench monitor --fit`), which
    /// no default monitor weighs yet.
    pub reordered_probe: bool,
    /// A later round replaces the kept answer only when its confidence is higher by this.
    pub margin: f64,
    /// The monitor's weights and threshold over given context (gold paragraphs, pasted
    /// documents).
    pub monitor: MonitorModel,
    /// The monitor over an index (open domain), fitted on retrieved evidence: which
    /// signals carry information differs when the evidence may miss a hop.
    pub monitor_open: MonitorModel,
    /// Over an index, rewrite a weak answer that neither a search nor a vote repairs
    /// (told what the samples said, or the form asked for). Off by default: on HotpotQA
    /// open's tuning half such rewrites changed 2 of 8 answers, one up and one down, for a
    /// call each (docs/results/monitor.md); over given context they stay on.
    pub rewrite_open: bool,
    /// Decide "A or B" date comparisons in code: after the first answer is assessed, the
    /// model reads each option's date from the sources (two short calls over the write's
    /// prefix), each checked against the source it cites, and the option the dates make
    /// the answer replaces a written one that differs ([`crate::compare`]).
    pub compare_dates: bool,
    /// Decide "A or B" quantity comparisons in code ("more species", "taller", "the
    /// larger population") the same way: each option's number read alone and checked
    /// against a source about it, units converted where they convert, and the option the
    /// numbers make the answer replaces a written one that differs ([`crate::measure`]).
    pub compare_quantities: bool,
    /// Follow kinship questions ("Who is the paternal grandfather of X?") one relation at a
    /// time: after the first answer is assessed, the model names each link's relative (one
    /// short call per link over the write's sources; a parent asked with both parents'
    /// slots), each counting only from a source about the person asked of, and the relative
    /// the chain ends at replaces a written answer that differs ([`crate::kin`]).
    pub follow_kin: bool,
    /// Ask a question about a person named through a relation ("Where was the director of
    /// film X born?") in two steps after the first answer is assessed: the bridge alone
    /// (kept only from a source about X), then the question again of that person by name
    /// (its answer kept only from a source about them); that answer confirms or replaces a
    /// written one ([`crate::link`]).
    pub follow_links: bool,
    /// Decide yes/no questions about two things ("Are A and B both ferns?") part by part:
    /// after the first answer is assessed, the model answers each part alone (two short
    /// calls over the write's prefix), each verdict counting only from a source about its
    /// thing, and the answer the parts make replaces a written one that differs
    /// ([`crate::parts`]). Off by default: the default 1.5B model says "yes" to every part
    /// as it does to the whole (HotpotQA gold's tuning half: no part answered "no" in 23
    /// questions, 8 wrong answers confirmed; docs/results/monitor.md); a model that can
    /// tell a part from the whole is what it is for.
    pub check_parts: bool,
    /// Decide attribute questions from the things' own pages, in code and with no model
    /// call: "Which band formed in England, A or B?" (the option whose page states more of
    /// the question's own words) and "Are A and B both ferns?" ("yes" when both pages
    /// state every asked word, "no" when one states a word the other lacks); the answer
    /// they make confirms or replaces the written one ([`crate::attribute`]). A question
    /// the parts check takes (`check_parts`) is left to it.
    pub check_attributes: bool,
    /// Confirm the answer to a question for what two things share ("What profession do A
    /// and B share?") when both things' own pages state it, in code and with no model
    /// call ([`crate::shared`]). It only confirms: an answer the pages do not both state
    /// is left to the monitor.
    pub check_shared: bool,
}

impl Default for MetaragConfig {
    fn default() -> Self {
        MetaragConfig {
            samples: 4,
            sample_temperature: 0.7,
            closed_book: true,
            closed_book_every_answer: false,
            reordered_probe: false,
            margin: 0.1,
            monitor: MonitorModel::default(),
            monitor_open: MonitorModel::default_open(),
            rewrite_open: false,
            compare_dates: true,
            compare_quantities: true,
            follow_kin: true,
            follow_links: true,
            check_parts: false,
            check_attributes: true,
            check_shared: true,
        }
    }
}

/// The metacognitive strategy.
#[derive(Debug, Clone, Default)]
pub struct Metarag(MetaragConfig);

/// MetaRAG's own state: settings, and the probes that depend only on the question and the
/// evidence (asked once per evidence pool).
#[derive(Debug, Default)]
pub struct MetaragState {
    config: MetaragConfig,
    /// Sampled short answers and the sources version they were drawn over.
    samples: Option<(usize, Vec<String>)>,
    /// The closed-book answer (`None` inside: the probe failed).
    closed_book: Option<Option<String>>,
    /// The short answer over the sources in reverse order and the sources version it was
    /// drawn over (`None` inside: the probe failed).
    reordered: Option<(usize, Option<String>)>,
    /// The passage count before the last re-retrieval.
    pool_before: usize,
    /// Where the first assessment was going when it went to [`COMPARE`] or [`PARTS`]
    /// first.
    after_check: Option<Transition>,
}

impl Strategy for Metarag {
    const NAME: &'static str = "metarag";
    const DESCRIPTION: &'static str = "plan, retrieve, write, monitor confidence; diagnose and remedy only weak answers, keep a change only if it is more confident (seed 000, Yao et al. 2024)";
    type Config = MetaragConfig;
    type State = MetaragState;

    fn new(config: MetaragConfig) -> Result<Self, String> {
        config
            .monitor
            .validate()
            .map_err(|e| format!("monitor: {e}"))?;
        config
            .monitor_open
            .validate()
            .map_err(|e| format!("monitor_open: {e}"))?;
        if !(0.0..=1.0).contains(&config.margin) {
            return Err(format!("margin {} is not in [0, 1]", config.margin));
        }
        if !(0.0..=2.0).contains(&config.sample_temperature) {
            return Err(format!(
                "sample_temperature {} is not in [0, 2]",
                config.sample_temperature
            ));
        }
        if config.samples > metarag_core::MAX_SAMPLES {
            return Err(format!(
                "samples {} is over {}",
                config.samples,
                metarag_core::MAX_SAMPLES
            ));
        }
        Ok(Metarag(config))
    }

    fn state(&self) -> MetaragState {
        MetaragState {
            config: self.0.clone(),
            ..MetaragState::default()
        }
    }

    fn graph(&self) -> Graph<Run<MetaragState>> {
        Graph::new(PLAN)
            .node(PLAN, &[(RETRIEVE, "")], |s| {
                Box::pin(nodes::plan(s, Transition::Goto(RETRIEVE)))
            })
            .node(
                RETRIEVE,
                &[
                    (RETRIEVE, "coverage < threshold, hops left"),
                    (CHECK, "searched"),
                ],
                |s| Box::pin(nodes::retrieve(s, CHECK)),
            )
            .node(
                CHECK,
                &[(READ, "first retrieval, or the hop is covered")],
                |s| Box::pin(check(s)),
            )
            .node(READ, &[(WRITE, "")], |s| {
                Box::pin(nodes::read(s, Transition::Goto(WRITE)))
            })
            .node(WRITE, &[(ASSESS, "")], |s| {
                Box::pin(nodes::write(s, Transition::Goto(ASSESS)))
            })
            .node(
                ASSESS,
                &[
                    (COMPARE, "first answer to a date comparison"),
                    (MEASURE, "first answer to a quantity comparison"),
                    (KIN, "first answer to a kinship question"),
                    (LINK, "first answer to a question through a relation"),
                    (PARTS, "first answer to a yes/no question about two things"),
                    (ATTRIBUTE, "first answer to an attribute question"),
                    (
                        SHARED,
                        "first answer to a question for what two things share",
                    ),
                    (DIAGNOSE, "not confident, rounds left"),
                ],
                |s| Box::pin(assess(s)),
            )
            .node(
                COMPARE,
                &[(DIAGNOSE, "dates undecided, not confident, rounds left")],
                |s| Box::pin(compare(s)),
            )
            .node(
                MEASURE,
                &[(DIAGNOSE, "quantities undecided, not confident, rounds left")],
                |s| Box::pin(measure_quantities(s)),
            )
            .node(
                KIN,
                &[(DIAGNOSE, "chain not followed, not confident, rounds left")],
                |s| Box::pin(follow_kin(s)),
            )
            .node(
                LINK,
                &[(DIAGNOSE, "link not followed, not confident, rounds left")],
                |s| Box::pin(follow_link(s)),
            )
            .node(
                PARTS,
                &[(DIAGNOSE, "parts undecided, not confident, rounds left")],
                |s| Box::pin(parts(s)),
            )
            .node(
                ATTRIBUTE,
                &[(DIAGNOSE, "pages undecided, not confident, rounds left")],
                |s| Box::pin(read_attributes(s)),
            )
            .node(
                SHARED,
                &[(
                    DIAGNOSE,
                    "pages do not both state it, not confident, rounds left",
                )],
                |s| Box::pin(read_shared(s)),
            )
            .node(DIAGNOSE, &[(REMEDIATE, "")], |s| Box::pin(diagnose(s)))
            .node(
                REMEDIATE,
                &[
                    (RETRIEVE, "missing knowledge: search the missing hop"),
                    (ASSESS, "unanimous samples: take their answer"),
                    (WRITE, "rewrite aimed at the cause"),
                ],
                |s| Box::pin(remediate(s)),
            )
    }
}

type S = Run<MetaragState>;

async fn check(s: &mut S) -> NodeResult {
    let last = s.retrievals.last().map(|r| r.reason);
    if last != Some(RetrievalReason::Remediation) {
        return Ok(Transition::Goto(READ));
    }
    let before = s.ext.pool_before.min(s.pool.len());
    let new = &s.pool[before..];
    let query = s.queries.last().cloned().unwrap_or_default();
    let wanted = crate::text::content_terms(&query);
    let found = new.iter().any(|p| {
        let terms = crate::text::content_terms(&format!("{} {}", p.title, p.text));
        wanted.iter().any(|t| terms.contains(t))
    });
    if new.is_empty() || !found {
        s.note = Some(format!(
            "re-retrieval added {} passages, none covering {query:?}",
            new.len()
        ));
        return Ok(Transition::done(
            "re-retrieval found nothing for the missing hop",
        ));
    }
    s.note = Some(format!("{} new passages cover {query:?}", new.len()));
    Ok(Transition::Goto(READ))
}

/// Samples the short answer over the current sources (once per evidence pool).
async fn samples(s: &mut S) -> Result<Vec<String>, crate::graph::NodeError> {
    let k = s.ext.config.samples;
    if k == 0 || s.sources.is_empty() {
        return Ok(Vec::new());
    }
    if let Some((version, texts)) = &s.ext.samples
        && *version == s.sources_version
    {
        return Ok(texts.clone());
    }
    let request = prompts::short_answer(&s.question, &s.sources);
    let texts =
        s.gw.sample(
            ASSESS.as_str(),
            "sample",
            request,
            k,
            s.ext.config.sample_temperature,
            0,
        )
        .await?;
    let texts: Vec<String> = texts.iter().map(|t| short_of(t)).collect();
    s.ext.samples = Some((s.sources_version, texts.clone()));
    Ok(texts)
}

/// The short answer of a [`prompts::short_answer`] reply, without citations: the field of
/// a reply cut off by the token limit as far as it got, and the reply as it stands when
/// it is not the JSON asked for. (A cut reply read whole, braces and all, disagreed with
/// every other answer and read as doubt the model never had.)
fn short_of(reply: &str) -> String {
    let short = parse_json::<ShortReply>(reply)
        .map(|r| r.short_answer)
        .ok()
        .or_else(|| crate::text::truncated_string_field(reply, "short_answer"))
        .unwrap_or_else(|| reply.trim().to_string());
    crate::verify::without_citations(short.trim())
}

/// The short answer over the current sources in reverse order (once per evidence pool),
/// when [`MetaragConfig::reordered_probe`] is on. Each source keeps its number, so only
/// the order the model reads them in changes.
async fn reordered(s: &mut S) -> Result<Option<String>, crate::graph::NodeError> {
    if !s.ext.config.reordered_probe || s.sources.is_empty() {
        return Ok(None);
    }
    if let Some((version, text)) = &s.ext.reordered
        && *version == s.sources_version
    {
        return Ok(text.clone());
    }
    let reversed: Vec<_> = s.sources.iter().rev().cloned().collect();
    let request = prompts::short_answer(&s.question, &reversed);
    let c = s.gw.chat(ASSESS.as_str(), "reordered", request).await?;
    let text = c.text().ok().map(short_of);
    s.ext.reordered = Some((s.sources_version, text.clone()));
    Ok(text)
}

async fn closed_book(s: &mut S) -> Result<Option<String>, crate::graph::NodeError> {
    if !s.ext.config.closed_book {
        return Ok(None);
    }
    if let Some(cb) = &s.ext.closed_book {
        return Ok(cb.clone());
    }
    let c =
        s.gw.chat(
            ASSESS.as_str(),
            "closed_book",
            prompts::closed_book(&s.question),
        )
        .await?;
    let cb = c.text().ok().map(|t| t.trim().to_string());
    s.ext.closed_book = Some(cb.clone());
    Ok(cb)
}

/// The monitor's signals of the current round's answer.
fn measure(
    s: &S,
    samples: &[String],
    closed_book: Option<&str>,
    reordered: Option<&str>,
) -> monitor::Signals {
    let round = &s.rounds[s.rounds.len() - 1];
    let lp = round.logprobs;
    monitor::measure(MeasureInput {
        question: &s.question,
        answer: &round.answer,
        short_answer: &round.short_answer,
        sources: &s.sources,
        short_logprob: lp.and_then(|l| l.short_answer),
        answer_logprob: lp.and_then(|l| l.answer),
        samples,
        closed_book,
        reordered,
    })
}

/// The monitor for this run's evidence: retrieved, or given.
fn monitor_of(s: &S) -> &MonitorModel {
    if s.mode == EvidenceMode::Retrieval {
        &s.ext.config.monitor_open
    } else {
        &s.ext.config.monitor
    }
}

async fn assess(s: &mut S) -> NodeResult {
    // The reordered probe first, when on: the write's prompt it sets aside in a local
    // model's cache is found again by the samples, which share its prefix, and stays
    // there for the checks after the closed-book probe (the other order would leave the
    // reordered prompt cached in its place). Then the samples; the closed-book probe (no
    // sources) last.
    let reordered = reordered(s).await?;
    let samples = samples(s).await?;
    let without = measure(s, &samples, None, reordered.as_deref());
    let model = monitor_of(s);
    // The probe is asked when its answer could change the gate's decision (or the answer
    // is weak and will be diagnosed with it), once per question.
    let decisive = model.confidence_at_worst(&without, "closed_book_agreement") < model.threshold;
    let (signals, cb) =
        if s.ext.closed_book.is_some() || decisive || s.ext.config.closed_book_every_answer {
            let cb = closed_book(s).await?;
            (
                measure(s, &samples, cb.as_deref(), reordered.as_deref()),
                cb,
            )
        } else {
            (without, None)
        };
    let index = s.rounds.len() - 1;
    let model = monitor_of(s);
    let confidence = model.confidence(&signals);
    let passed = confidence >= model.threshold;
    let threshold = model.threshold;
    let short = s.rounds[index].short_answer.clone();
    let round = &mut s.rounds[index];
    round.assessment = Some(Assessment {
        signals,
        confidence,
        passed,
        samples,
        closed_book: cb,
        reordered,
    });
    // Do no harm: the first answer is kept unless a later one is clearly more confident,
    // and a rewrite never flips a yes/no verdict (no verified fact contradicts it here).
    let kept = s.chosen.unwrap_or(0);
    let mut why_kept = String::new();
    if index > 0 {
        let kept_round = &s.rounds[kept];
        let kept_conf = kept_round.assessment.as_ref().map_or(0.0, |a| a.confidence);
        let flips = AnswerForm::of(&s.question) == AnswerForm::YesNo
            && !agree(&kept_round.short_answer, &short);
        if flips {
            why_kept = format!("; kept round {kept}: a rewrite does not flip a yes/no verdict");
        } else if s.mode == EvidenceMode::Retrieval
            && switches_option(&s.question, &kept_round.short_answer, &short)
        {
            why_kept =
                format!("; kept round {kept}: over an index a repair does not switch options");
        } else if confidence > kept_conf + s.ext.config.margin {
            s.chosen = Some(index);
        } else {
            why_kept = format!(
                "; kept round {kept} ({kept_conf:.2}): not better by {}",
                s.ext.config.margin
            );
        }
    } else {
        s.chosen = Some(0);
    }
    s.note = Some(format!(
        "confidence {confidence:.2} (threshold {threshold:.2}){why_kept}"
    ));
    let next = if passed {
        Transition::done("confident")
    } else if index >= s.cfg().max_rounds {
        // The rounds limit is the agent's (`agent.max_rounds`, `ask --max-rounds`).
        Transition::done(format!("max_rounds {}", s.cfg().max_rounds))
    } else if index > 0 && agree(&s.rounds[index - 1].short_answer, &short) {
        Transition::done("converged (same short answer)")
    } else {
        Transition::Goto(DIAGNOSE)
    };
    // A date comparison is decided by its dates whatever the gate says: the gate cannot
    // tell a right option from a wrong one, and the first answer is assessed all the same.
    if index == 0
        && s.ext.config.compare_dates
        && (DateComparison::of(&s.question).is_some() || SpanComparison::of(&s.question).is_some())
    {
        s.ext.after_check = Some(next);
        return Ok(Transition::Goto(COMPARE));
    }
    // And a quantity comparison by its numbers.
    if index == 0
        && s.ext.config.compare_quantities
        && QuantityComparison::of(&s.question).is_some()
    {
        s.ext.after_check = Some(next);
        return Ok(Transition::Goto(MEASURE));
    }
    // And a kinship question by its links.
    if index == 0 && s.ext.config.follow_kin && KinshipChain::of(&s.question).is_some() {
        s.ext.after_check = Some(next);
        return Ok(Transition::Goto(KIN));
    }
    // And a question through a relation by its two lookups.
    if index == 0 && s.ext.config.follow_links && LinkedQuestion::of(&s.question).is_some() {
        s.ext.after_check = Some(next);
        return Ok(Transition::Goto(LINK));
    }
    // So is a yes/no question about two things by its parts: a small writer says "yes"
    // to the conjunction whatever its sources say.
    if index == 0 && s.ext.config.check_parts && BothQuestion::of(&s.question).is_some() {
        s.ext.after_check = Some(next);
        return Ok(Transition::Goto(PARTS));
    }
    // And an attribute question by the things' own pages, in code.
    if index == 0 && s.ext.config.check_attributes && AttributeQuestion::of(&s.question).is_some() {
        s.ext.after_check = Some(next);
        return Ok(Transition::Goto(ATTRIBUTE));
    }
    // And the answer to what two things share by both their pages.
    if index == 0 && s.ext.config.check_shared && SharedQuestion::of(&s.question).is_some() {
        s.ext.after_check = Some(next);
        return Ok(Transition::Goto(SHARED));
    }
    Ok(next)
}

/// Checks the answer to a question for what two things share against both things' own
/// pages ([`crate::shared`]): both state it, and the run stops on it; otherwise the run
/// goes where the assessment was going, the answer unchanged. No model call.
async fn read_shared(s: &mut S) -> NodeResult {
    let after = s
        .ext
        .after_check
        .take()
        .unwrap_or(Transition::Goto(DIAGNOSE));
    let Some(q) = SharedQuestion::of(&s.question) else {
        return Ok(after);
    };
    let kept = s.chosen.unwrap_or(0);
    let written = s.rounds[kept].short_answer.clone();
    if let Some(c) = q.confirms(&written, &s.sources) {
        let terms = c.terms.iter().cloned().collect::<Vec<_>>().join(", ");
        let [a, b] = c.pages;
        s.note = Some(format!(
            "both pages state {written:?} ({terms}): {:?} [{a}], {:?} [{b}]",
            c.things[0], c.things[1]
        ));
        return Ok(Transition::done(shared::SHARED_CONFIRM));
    }
    s.note = Some(match q.things(&s.sources) {
        Some([a, b]) => format!("the pages of {a:?} and {b:?} do not both state {written:?}"),
        None => "no two pages the question joins with \"and\"".to_string(),
    });
    Ok(after)
}

/// Reads an attribute question off each thing's own page ([`crate::attribute`]) and,
/// where the pages settle it, takes the answer they make: a written answer that agrees
/// stops the run, one that differs is replaced (the pages' words are the verified fact
/// "do no harm" asks for before an answer changes); undecided, the run goes where the
/// assessment was going. No model call.
async fn read_attributes(s: &mut S) -> NodeResult {
    let after = s
        .ext
        .after_check
        .take()
        .unwrap_or(Transition::Goto(DIAGNOSE));
    let Some(q) = AttributeQuestion::of(&s.question) else {
        return Ok(after);
    };
    let asked = q.asked.iter().cloned().collect::<Vec<_>>().join(", ");
    let Some(d) = q.decide(&s.sources) else {
        s.note = Some(format!(
            "the pages of {:?} and {:?} do not settle it (asked: {asked})",
            q.things[0], q.things[1]
        ));
        return Ok(after);
    };
    let shown = (0..2)
        .map(|i| {
            let said = d.stated[i].iter().cloned().collect::<Vec<_>>().join(", ");
            format!("{} [{}]: {{{said}}}", q.things[i], d.pages[i])
        })
        .collect::<Vec<_>>()
        .join("; ");
    let kept = s.chosen.unwrap_or(0);
    let written = s.rounds[kept].short_answer.clone();
    if says(&written, &d.answer, &q.things) {
        s.note = Some(format!(
            "the pages confirm {:?} (asked: {asked}): {shown}",
            d.answer
        ));
        return Ok(Transition::done(attribute::ATTRIBUTES_CONFIRM));
    }
    s.note = Some(format!(
        "the pages make {:?} the answer, not {written:?} (asked: {asked}): {shown}",
        d.answer
    ));
    // The new round cites the page that decided it: the option's for a choice, both for
    // "yes", the page lacking a word for "no".
    let text = match q.kind {
        attribute::AttributeKind::Choice => {
            let i = usize::from(d.answer != q.things[0]);
            format!("{} [{}].", d.answer, d.pages[i])
        }
        attribute::AttributeKind::Both if d.answer == "yes" => {
            format!("Yes [{}] [{}].", d.pages[0], d.pages[1])
        }
        attribute::AttributeKind::Nation => {
            let nation = |i: usize| d.stated[i].iter().next().cloned().unwrap_or_default();
            if d.answer == "yes" {
                format!(
                    "Yes: both are {} [{}] [{}].",
                    nation(0),
                    d.pages[0],
                    d.pages[1]
                )
            } else {
                let whose = |i: usize| {
                    if q.via_director {
                        format!("the director of {}", q.things[i])
                    } else {
                        q.things[i].clone()
                    }
                };
                format!(
                    "No: {} is {} [{}], {} is {} [{}].",
                    whose(0),
                    nation(0),
                    d.pages[0],
                    whose(1),
                    nation(1),
                    d.pages[1]
                )
            }
        }
        attribute::AttributeKind::Both => {
            let lacking = usize::from(d.stated[1].len() < d.stated[0].len());
            format!(
                "No: the page on {} does not say so [{}].",
                q.things[lacking], d.pages[lacking]
            )
        }
    };
    let pages = (0..2)
        .map(|i| ThingTerms {
            thing: q.things[i].clone(),
            stated: d.stated[i].iter().cloned().collect(),
            source: d.pages[i],
        })
        .collect();
    s.current_round()?.remediation = Some(Remediation::Attribute {
        pages,
        answer: d.answer.clone(),
    });
    s.directive = None;
    let index = s.push_answer(text, d.answer);
    s.chosen = Some(index);
    Ok(Transition::done("decided by the pages"))
}

/// Answers each part of a yes/no question about two things alone and, where the parts
/// settle it, takes the answer they make. A written verdict that agrees stops the run; one
/// that differs is replaced (a part a source contradicts is the verified fact that "do no
/// harm" requires before a verdict changes); undecided, the run goes where the assessment
/// was going.
async fn parts(s: &mut S) -> NodeResult {
    let after = s
        .ext
        .after_check
        .take()
        .unwrap_or(Transition::Goto(DIAGNOSE));
    let Some(b) = BothQuestion::of(&s.question).map(|b| b.fit(&s.sources)) else {
        return Ok(after);
    };
    let (Some(p0), Some(p1)) = (b.part(0), b.part(1)) else {
        s.note = Some(format!(
            "no source names {:?} apart from what is asked of it",
            b.entities[1]
        ));
        return Ok(after);
    };
    let ask =
        |i: usize, part: &str| prompts::part_verdict(&s.question, &s.sources, &b.entities[i], part);
    let (first, second) = (ask(0, &p0), ask(1, &p1));
    let (x, y) =
        s.gw.chat2(PARTS.as_str(), ("parts", first, None), ("parts", second))
            .await?;
    let mut checks: Vec<Option<PartCheck>> = Vec::new();
    let mut why = Vec::new();
    for (i, called) in [x, y].iter().enumerate() {
        match read_part(called.text().ok(), &b, i, &s.sources) {
            Ok(check) => checks.push(Some(check)),
            Err(note) => {
                why.push(note);
                checks.push(None);
            }
        }
    }
    let shown = checks
        .iter()
        .flatten()
        .map(|c| {
            let v = if c.holds { "yes" } else { "no" };
            format!("{} {v} [{}]", c.entity, c.source)
        })
        .collect::<Vec<_>>()
        .join(", ");
    let verdicts = [
        checks[0].as_ref().map(|c| c.holds),
        checks[1].as_ref().map(|c| c.holds),
    ];
    let Some(answer) = parts::decide(verdicts) else {
        s.note = Some(format!("the parts do not settle it: {}", why.join("; ")));
        return Ok(after);
    };
    let kept = s.chosen.unwrap_or(0);
    let written = s.rounds[kept].short_answer.clone();
    if agree(&written, answer) {
        s.note = Some(format!("the parts confirm {answer:?}: {shown}"));
        return Ok(Transition::done(parts::PARTS_CONFIRM));
    }
    s.note = Some(format!(
        "the parts make {answer:?} the answer, not {written:?}: {shown}"
    ));
    // The sentence of the new round cites the part that decided it: the failed one for
    // "no", both for "yes".
    let deciding: Vec<&PartCheck> = checks
        .iter()
        .flatten()
        .filter(|c| answer == "yes" || !c.holds)
        .collect();
    let text = deciding
        .iter()
        .map(|c| {
            let v = if c.holds { "holds" } else { "does not hold" };
            format!("For {}, it {v} [{}].", c.entity, c.source)
        })
        .collect::<Vec<_>>()
        .join(" ");
    let text = format!("{}. {text}", capitalised(answer));
    s.current_round()?.remediation = Some(Remediation::Parts {
        verdicts: checks.into_iter().flatten().collect(),
        answer: answer.to_string(),
    });
    s.directive = None;
    let index = s.push_answer(text, answer.to_string());
    s.chosen = Some(index);
    Ok(Transition::done("decided by the parts"))
}

/// Entity `i`'s verdict from its part call's reply, kept only when the cited source is
/// about the entity and states the quote ([`BothQuestion::belongs`], [`parts::quoted`]).
/// The error is the node's note on why nothing was read.
fn read_part(
    reply: Option<&str>,
    b: &BothQuestion,
    i: usize,
    sources: &[Source],
) -> std::result::Result<PartCheck, String> {
    let entity = &b.entities[i];
    let r = reply
        .and_then(|t| parse_json::<prompts::PartReply>(t).ok())
        .ok_or_else(|| format!("no verdict read for {entity:?}"))?;
    if r.verdict == prompts::PartVerdict::Unknown {
        return Err(format!("{entity:?}: unknown"));
    }
    let source = sources.iter().find(|src| src.n == r.source as usize);
    if !source.is_some_and(|src| b.belongs(i, src) && parts::quoted(&r.quote, src)) {
        return Err(format!(
            "{entity:?}: {:?} from [{}], a source not about {entity:?} or not stating {:?}",
            r.verdict, r.source, r.quote
        ));
    }
    Ok(PartCheck {
        entity: entity.clone(),
        holds: r.verdict == prompts::PartVerdict::Yes,
        source: r.source as usize,
    })
}

fn capitalised(word: &str) -> String {
    let mut c = word.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// Reads each option's date and, where the dates settle the comparison, takes the option
/// they make the answer. A written answer that agrees stops the run; one that differs is
/// replaced (a verified fact contradicts it, the case in which "do no harm" lets an option
/// change); undecided, the run goes where the assessment was going.
async fn compare(s: &mut S) -> NodeResult {
    let after = s
        .ext
        .after_check
        .take()
        .unwrap_or(Transition::Goto(DIAGNOSE));
    let Some(c) = DateComparison::of(&s.question) else {
        return match SpanComparison::of(&s.question) {
            Some(c) => compare_spans(s, c, after).await,
            None => Ok(after),
        };
    };
    let ask = |i: usize| prompts::option_date(&s.question, &s.sources, &c.asked_for(i));
    let (first, second) = (ask(0), ask(1));
    let (a, b) =
        s.gw.chat2(
            COMPARE.as_str(),
            ("compare", first, None),
            ("compare", second),
        )
        .await?;
    let mut read = Vec::new();
    for (i, called) in [a, b].iter().enumerate() {
        match read_date(called.text().ok(), &c.options[i], &s.sources) {
            Ok(r) => read.push(r),
            Err(note) => {
                s.note = Some(note);
                return Ok(after);
            }
        }
    }
    // One date from one source for both options: the model read one passage twice. The
    // source belongs to one option (names it, or is linked from its page); the other's
    // date is read again without it.
    if read[0].0 == read[1].0 && read[0].1.source == read[1].1.source {
        let shared = read[0].1.source;
        let owner = s
            .sources
            .iter()
            .find(|src| src.n == shared)
            .and_then(|src| compare::owner_of_shared(&c.options, src, &s.sources));
        if let Some(owner) = owner {
            let other = 1 - owner;
            let rest: Vec<Source> = s
                .sources
                .iter()
                .filter(|src| src.n != shared)
                .cloned()
                .collect();
            let request = prompts::option_date(&s.question, &rest, &c.asked_for(other));
            let called = s.gw.chat(COMPARE.as_str(), "compare", request).await?;
            let Ok(reread) = read_date(called.text().ok(), &c.options[other], &rest) else {
                s.note = Some(format!(
                    "{:?} and {:?} read from [{shared}] alone; no other source dates {:?}",
                    c.options[0], c.options[1], c.options[other]
                ));
                return Ok(after);
            };
            read[other] = reread;
        }
    }
    // A date stated by a page that is not the option's (a namesake's, another film's
    // director's) is another thing's date, however well its source states it.
    for (i, (_, o)) in read.iter().enumerate() {
        let source = s.sources.iter().find(|src| src.n == o.source);
        if !source.is_some_and(|src| c.belongs(i, src, &s.sources)) {
            s.note = Some(format!(
                "{:?}: date {:?} read from [{}], a page that is not {:?}'s",
                c.options[i], o.date, o.source, c.options[i]
            ));
            return Ok(after);
        }
    }
    let dates = [read[0].0, read[1].0];
    let read: Vec<OptionDate> = read.into_iter().map(|(_, o)| o).collect();
    let shown = read
        .iter()
        .map(|o| format!("{} {} [{}]", o.option, o.date, o.source))
        .collect::<Vec<_>>()
        .join(", ");
    let Some(winner) = compare::decide(c.direction, dates) else {
        s.note = Some(format!("dates do not settle it: {shown}"));
        return Ok(after);
    };
    let kept = s.chosen.unwrap_or(0);
    let written = s.rounds[kept].short_answer.clone();
    let answer = c.options[winner].clone();
    if says(&written, &answer, &c.options) {
        s.note = Some(format!("the dates confirm {answer:?}: {shown}"));
        return Ok(Transition::done(compare::DATES_CONFIRM));
    }
    s.note = Some(format!(
        "the dates make {answer:?} the answer, not {written:?}: {shown}"
    ));
    let (w, l) = (&read[winner], &read[1 - winner]);
    let text = format!(
        "{} ({} [{}]; {}: {} [{}]).",
        w.option, w.date, w.source, l.option, l.date, l.source
    );
    // As with every remedy, the round it repairs records it.
    s.current_round()?.remediation = Some(Remediation::Compare {
        dates: read,
        answer: answer.clone(),
    });
    s.directive = None;
    let index = s.push_answer(text, answer);
    s.chosen = Some(index);
    Ok(Transition::done("decided by the dates"))
}

/// Reads each option's two dates (birth and death, or start and end) and, where the lengths
/// settle the comparison, takes the option they make the answer, as [`compare`] does with
/// one date each: a written answer that agrees stops the run, one that differs is replaced.
async fn compare_spans(s: &mut S, c: SpanComparison, after: Transition) -> NodeResult {
    let events = c.kind.events();
    let mut spans: Vec<[(compare::Date, OptionDate); 2]> = Vec::new();
    for i in 0..2 {
        // A person's (or a battle's) dates are on their own page, so each option's are read
        // over the pages naming it (all of them when none does): a small model asked for
        // one person's death beside the other's page copies the other's.
        let own: Vec<Source> = s
            .sources
            .iter()
            .filter(|src| c.belongs(i, src))
            .cloned()
            .collect();
        let option_date = |e: usize, date: compare::Date, source: usize| OptionDate {
            option: c.options[i].clone(),
            date: date.to_string(),
            source,
            event: Some(events[e].to_string()),
        };
        // A page about the option whose first sentence states both dates (in parentheses
        // after the name; for a duration, "from X to Y" too): read in code, no call.
        let stated = own.iter().find_map(|src| {
            if !compare::names(&compare::words(&src.passage.title), &c.options[i]) {
                return None;
            }
            let [start, end] = compare::stated_span(&src.passage.text, c.kind)?;
            Some([
                (start, option_date(0, start, src.n)),
                (end, option_date(1, end, src.n)),
            ])
        });
        if let Some(span) = stated {
            spans.push(span);
            continue;
        }
        let pool = if own.is_empty() {
            s.sources.clone()
        } else {
            own
        };
        let ask = |e: usize| prompts::option_date(&s.question, &pool, &c.asked_for(i, e));
        let (first, second) = (ask(0), ask(1));
        let (start, end) =
            s.gw.chat2(
                COMPARE.as_str(),
                ("compare", first, None),
                ("compare", second),
            )
            .await?;
        let read = |e: usize, called: &crate::gateway::Called| {
            let (date, mut o) = read_date(called.text().ok(), &c.options[i], &pool)?;
            // One read off another page is another person's.
            let source = pool.iter().find(|src| src.n == o.source);
            if !source.is_some_and(|src| c.belongs(i, src)) {
                return Err(format!(
                    "{:?}: {} {:?} read from [{}], a page that is not {:?}'s",
                    c.options[i], events[e], o.date, o.source, c.options[i]
                ));
            }
            o.event = Some(events[e].to_string());
            Ok((date, o))
        };
        match (read(0, &start), read(1, &end)) {
            (Ok(start), Ok(end)) => spans.push([start, end]),
            (Err(note), _) | (_, Err(note)) => {
                s.note = Some(note);
                return Ok(after);
            }
        }
    }
    // The same date from the same source for both options: one passage read twice.
    for (e, (a, b)) in spans[0].iter().zip(&spans[1]).enumerate() {
        if a.0 == b.0 && a.1.source == b.1.source {
            s.note = Some(format!(
                "{:?} and {:?}: one {} {:?} read from [{}] for both",
                c.options[0], c.options[1], events[e], a.1.date, a.1.source
            ));
            return Ok(after);
        }
    }
    let [from, to] = c.kind.verbs();
    let shown = |span: &[(compare::Date, OptionDate); 2]| {
        format!(
            "{from} {} [{}], {to} {} [{}]",
            span[0].1.date, span[0].1.source, span[1].1.date, span[1].1.source
        )
    };
    let summary = format!(
        "{}: {}; {}: {}",
        c.options[0],
        shown(&spans[0]),
        c.options[1],
        shown(&spans[1])
    );
    let dates = [0, 1].map(|i| [spans[i][0].0, spans[i][1].0]);
    let Some(winner) = compare::decide_spans(c.longer, dates) else {
        s.note = Some(format!(
            "the {} do not settle it: {summary}",
            c.kind.label()
        ));
        return Ok(after);
    };
    let kept = s.chosen.unwrap_or(0);
    let written = s.rounds[kept].short_answer.clone();
    let answer = c.options[winner].clone();
    if says(&written, &answer, &c.options) {
        s.note = Some(format!(
            "the {} confirm {answer:?}: {summary}",
            c.kind.label()
        ));
        return Ok(Transition::done(compare::DATES_CONFIRM));
    }
    s.note = Some(format!(
        "the {} make {answer:?} the answer, not {written:?}: {summary}",
        c.kind.label()
    ));
    let text = format!(
        "{answer} ({}; {}: {}).",
        shown(&spans[winner]),
        c.options[1 - winner],
        shown(&spans[1 - winner])
    );
    s.current_round()?.remediation = Some(Remediation::Compare {
        dates: spans.into_iter().flatten().map(|(_, o)| o).collect(),
        answer: answer.clone(),
    });
    s.directive = None;
    let index = s.push_answer(text, answer);
    s.chosen = Some(index);
    Ok(Transition::done("decided by the dates"))
}

/// One option's date from the compare call's reply: the date, and where it was read,
/// kept only if a source among `sources` states it ([`compare::verified_date`]). The error
/// is the node's note on why nothing was read.
fn read_date(
    reply: Option<&str>,
    option: &str,
    sources: &[Source],
) -> std::result::Result<(compare::Date, OptionDate), String> {
    let reply = reply
        .and_then(|t| parse_json::<prompts::DateReply>(t).ok())
        .ok_or_else(|| format!("no date read for {option:?}"))?;
    let (date, source) = compare::verified_date(&reply.date, reply.source as usize, sources)
        .ok_or_else(|| {
            format!(
                "{option:?}: date {:?} stated by no source ([{}] cited)",
                reply.date, reply.source
            )
        })?;
    let read = OptionDate {
        option: option.to_string(),
        date: reply.date.trim().to_string(),
        source,
        event: None,
    };
    Ok((date, read))
}

/// Reads each option's quantity and, where the numbers settle the comparison, takes the
/// option they make the answer: as [`compare`] does with dates. A written answer that
/// agrees stops the run; one that differs is replaced; undecided, the run goes where the
/// assessment was going.
async fn measure_quantities(s: &mut S) -> NodeResult {
    let after = s
        .ext
        .after_check
        .take()
        .unwrap_or(Transition::Goto(DIAGNOSE));
    let Some(c) = QuantityComparison::of(&s.question) else {
        return Ok(after);
    };
    let ask = |i: usize| prompts::option_quantity(&s.question, &s.sources, &c.asked_for(i));
    let (first, second) = (ask(0), ask(1));
    let (a, b) =
        s.gw.chat2(
            MEASURE.as_str(),
            ("measure", first, None),
            ("measure", second),
        )
        .await?;
    let mut read = Vec::new();
    for (i, called) in [a, b].iter().enumerate() {
        let option = &c.options[i];
        let reply = called
            .text()
            .ok()
            .and_then(|t| parse_json::<prompts::QuantityReply>(t).ok());
        let Some(reply) = reply else {
            s.note = Some(format!("no quantity read for {option:?}"));
            return Ok(after);
        };
        let Some((q, source)) =
            measure::verified_quantity(&reply.value, reply.source as usize, &s.sources)
        else {
            s.note = Some(format!(
                "{option:?}: {:?} stated by no source ([{}] cited)",
                reply.value, reply.source
            ));
            return Ok(after);
        };
        // A number stated by a page that is not the option's is another thing's.
        let src = s.sources.iter().find(|src| src.n == source);
        if !src.is_some_and(|src| c.belongs(i, src, &s.sources)) {
            s.note = Some(format!(
                "{option:?}: {:?} read from [{source}], a page that is not {option:?}'s",
                reply.value
            ));
            return Ok(after);
        }
        let value = OptionValue {
            option: option.clone(),
            value: reply.value.trim().to_string(),
            source,
        };
        read.push((q, value));
    }
    let shown = read
        .iter()
        .map(|(_, o)| format!("{} {} [{}]", o.option, o.value, o.source))
        .collect::<Vec<_>>()
        .join(", ");
    // One number from one source for both: the model read one passage twice.
    if read[0].1.source == read[1].1.source && read[0].0.value == read[1].0.value {
        s.note = Some(format!("one number read for both options: {shown}"));
        return Ok(after);
    }
    let Some(winner) = measure::decide(c.extreme, [&read[0].0, &read[1].0]) else {
        s.note = Some(format!("the numbers do not settle it: {shown}"));
        return Ok(after);
    };
    let kept = s.chosen.unwrap_or(0);
    let written = s.rounds[kept].short_answer.clone();
    let answer = c.options[winner].clone();
    if says(&written, &answer, &c.options) {
        s.note = Some(format!("the quantities confirm {answer:?}: {shown}"));
        return Ok(Transition::done(measure::QUANTITIES_CONFIRM));
    }
    s.note = Some(format!(
        "the quantities make {answer:?} the answer, not {written:?}: {shown}"
    ));
    let (w, l) = (&read[winner].1, &read[1 - winner].1);
    let text = format!(
        "{} ({} [{}]; {}: {} [{}]).",
        w.option, w.value, w.source, l.option, l.value, l.source
    );
    let values: Vec<OptionValue> = read.into_iter().map(|(_, o)| o).collect();
    s.current_round()?.remediation = Some(Remediation::Measure {
        values,
        answer: answer.clone(),
    });
    s.directive = None;
    let index = s.push_answer(text, answer);
    s.chosen = Some(index);
    Ok(Transition::done("decided by the quantities"))
}

/// Follows a kinship question's links one call at a time over the write's sources (each
/// link needs the one before, so the calls are sequential), each relative counting only
/// from a source about the person asked of. The relative the chain ends at confirms the
/// written answer (the run stops) or replaces it; a link not stated decides nothing and
/// the run goes where the assessment was going.
async fn follow_kin(s: &mut S) -> NodeResult {
    let after = s
        .ext
        .after_check
        .take()
        .unwrap_or(Transition::Goto(DIAGNOSE));
    let Some(chain) = KinshipChain::of(&s.question) else {
        return Ok(after);
    };
    let mut person = chain.person.clone();
    let mut links: Vec<KinLink> = Vec::new();
    for relation in chain.links {
        let (name, source) =
            match read_link(s, KIN, &person, relation.as_str(), Some(relation)).await? {
                Ok(read) => read,
                Err(why) => {
                    s.note = Some(why);
                    return Ok(after);
                }
            };
        // A chain that comes back to a person already on it has misread a page.
        if links.iter().any(|l| kin::same_person(&l.name, &name))
            || kin::same_person(&chain.person, &name)
        {
            s.note = Some(format!("the chain comes back to {name:?}"));
            return Ok(after);
        }
        links.push(KinLink {
            person: person.clone(),
            relation: relation.as_str().to_string(),
            name: name.clone(),
            source,
        });
        person = name;
    }
    let shown = links
        .iter()
        .map(|l| format!("{} of {}: {} [{}]", l.relation, l.person, l.name, l.source))
        .collect::<Vec<_>>()
        .join("; ");
    let kept = s.chosen.unwrap_or(0);
    let written = s.rounds[kept].short_answer.clone();
    let answer = person;
    if kin::same_person(&written, &answer) {
        s.note = Some(format!("the chain confirms {answer:?}: {shown}"));
        return Ok(Transition::done(kin::KIN_CONFIRM));
    }
    s.note = Some(format!(
        "the chain makes {answer:?} the {}, not {written:?}: {shown}",
        chain.relation
    ));
    let (first, last) = (&links[0], &links[links.len() - 1]);
    let text = format!(
        "{} is the {} of {} [{}], whose {} is {} [{}].",
        first.name,
        first.relation,
        first.person,
        first.source,
        last.relation,
        last.name,
        last.source
    );
    s.current_round()?.remediation = Some(Remediation::Kin {
        links,
        answer: answer.clone(),
    });
    s.directive = None;
    let index = s.push_answer(text, answer);
    s.chosen = Some(index);
    Ok(Transition::done("decided by the relation chain"))
}

/// Asks a question about a person named through a relation in its two lookups over the
/// write's sources: the bridge alone (a relative with the kin node's prompts, anyone else
/// by [`prompts::relative`]), kept only from a source about what the question names; then
/// the question again of that person by name ([`prompts::linked`]), its answer kept only
/// from a source about them. That answer confirms the written one (the run stops) or
/// replaces it; anything unsure decides nothing and the run goes where the assessment was
/// going.
async fn follow_link(s: &mut S) -> NodeResult {
    let after = s
        .ext
        .after_check
        .take()
        .unwrap_or(Transition::Goto(DIAGNOSE));
    let Some(linked) = LinkedQuestion::of(&s.question) else {
        return Ok(after);
    };
    let entity = linked.entity.clone();
    let (name, bridge_source) =
        match read_link(s, LINK, &entity, linked.relation, linked.kin).await? {
            Ok(read) => read,
            Err(why) => {
                s.note = Some(why);
                return Ok(after);
            }
        };
    if kin::same_person(&entity, &name) {
        s.note = Some(format!(
            "the {} of {entity:?} read as itself",
            linked.relation
        ));
        return Ok(after);
    }
    if !page_for(s, &name).await? {
        s.note = Some(format!("no page about {name:?} among the sources"));
        return Ok(after);
    }
    let question = linked.about(&name);
    let read = match linked.asks {
        Some(relation) => read_relative(s, LINK, &name, relation).await?,
        None => {
            let called =
                s.gw.chat(
                    LINK.as_str(),
                    LINK.as_str(),
                    prompts::linked(&s.sources, &question, &name),
                )
                .await?;
            let reply = called
                .text()
                .ok()
                .and_then(|t| parse_json::<prompts::LinkedReply>(t).ok());
            match reply.filter(|r| !r.answer.trim().is_empty()) {
                Some(r) => Ok((r.answer.trim().to_string(), r.source as usize)),
                None => Err(format!("no answer to {question:?} read")),
            }
        }
    };
    let (answer, cited) = match read {
        Ok(read) => read,
        Err(why) => {
            s.note = Some(why);
            return Ok(after);
        }
    };
    let answer = answer.trim().trim_end_matches('.').trim().to_string();
    if !link::fits(&question, &answer) {
        s.note = Some(format!(
            "{question:?} answered with {answer:?}, not the kind it asks for"
        ));
        return Ok(after);
    }
    // The bridge or what it was found from is no answer about the bridge.
    if kin::same_person(&answer, &name) || kin::same_person(&answer, &entity) {
        s.note = Some(format!("{question:?} answered with {answer:?}"));
        return Ok(after);
    }
    let Some(source) = kin::stated(&answer, cited, &name, &s.sources) else {
        s.note = Some(format!(
            "{question:?}: {answer:?} stated by no source about {name:?} ([{cited}] cited)"
        ));
        return Ok(after);
    };
    let answer = written_in(s, source, &answer).unwrap_or(answer);
    let bridge = KinLink {
        person: entity.clone(),
        relation: linked.relation.to_string(),
        name: name.clone(),
        source: bridge_source,
    };
    let kept = s.chosen.unwrap_or(0);
    let written = s.rounds[kept].short_answer.clone();
    let shown = format!(
        "{} of {entity}: {name} [{bridge_source}]; {question} {answer} [{source}]",
        linked.relation
    );
    if link::same_answer(&written, &answer) {
        s.note = Some(format!("the link confirms {answer:?}: {shown}"));
        return Ok(Transition::done(link::LINK_CONFIRM));
    }
    s.note = Some(format!(
        "the link makes {answer:?} the answer, not {written:?}: {shown}"
    ));
    let text = format!(
        "{answer} [{source}] ({name} is the {} of {entity} [{bridge_source}]).",
        linked.relation
    );
    s.current_round()?.remediation = Some(Remediation::Link {
        bridge,
        question,
        answer: answer.clone(),
        source,
    });
    s.directive = None;
    let index = s.push_answer(text, answer);
    s.chosen = Some(index);
    Ok(Transition::done("decided by the linked question"))
}

/// One link of a chain: who `person`'s `relation` is (a kinship with the kin prompts, any
/// other relation by [`prompts::relative`]), searched for over an index when no source is
/// about `person`, and kept only if a source about `person` states it. The name comes back
/// as that source writes it, with the source's number, or why there is none.
async fn read_link(
    s: &mut S,
    node: NodeId,
    person: &str,
    relation: &str,
    kinship: Option<kin::Relation>,
) -> Result<Result<(String, usize), String>, crate::graph::NodeError> {
    if !page_for(s, person).await? {
        return Ok(Err(format!("no page about {person:?} among the sources")));
    }
    let read = match kinship {
        Some(kinship) => read_relative(s, node, person, kinship).await?,
        None => read_named(s, node, person, relation).await?,
    };
    let (name, cited) = match read {
        Ok(read) => read,
        Err(why) => return Ok(Err(why)),
    };
    let name = kin::bare_name(&name).to_string();
    let Some(source) = kin::stated(&name, cited, person, &s.sources) else {
        return Ok(Err(format!(
            "the {relation} of {person:?}: {name:?} stated by no source about {person:?} ([{cited}] cited)"
        )));
    };
    // The name as the source writes it: a small model's copy loses hyphens and accents.
    let name = written_in(s, source, &name).unwrap_or(name);
    Ok(Ok((name, source)))
}

/// `text` as source `n` writes it ([`kin::as_written`]), if that source names it.
fn written_in(s: &S, n: usize, text: &str) -> Option<String> {
    s.sources.iter().find(|src| src.n == n).and_then(|src| {
        let shown = format!("{}\n{}", src.passage.title, src.text());
        kin::as_written(&shown, text).map(str::to_string)
    })
}

/// The model's reading of who `entity`'s `relation` is ("the director of" a film, a
/// spouse) by [`prompts::relative`], with the source it cites, or why there is none.
async fn read_named(
    s: &mut S,
    node: NodeId,
    entity: &str,
    relation: &str,
) -> Result<Result<(String, usize), String>, crate::graph::NodeError> {
    let called =
        s.gw.chat(
            node.as_str(),
            node.as_str(),
            prompts::relative(&s.sources, entity, relation),
        )
        .await?;
    let reply = called
        .text()
        .ok()
        .and_then(|t| parse_json::<prompts::RelativeReply>(t).ok());
    Ok(match reply.filter(|r| !r.name.trim().is_empty()) {
        Some(r) => Ok((r.name, r.source as usize)),
        None => Err(format!("no {relation} of {entity:?} read")),
    })
}

/// The model's reading of `person`'s `relation` over the sources, with the source it
/// cites, or why there is none. A parent is asked with both parents' slots
/// ([`prompts::parents`]), a spouse alone ([`prompts::relative`]).
async fn read_relative(
    s: &mut S,
    node: NodeId,
    person: &str,
    relation: kin::Relation,
) -> Result<Result<(String, usize), String>, crate::graph::NodeError> {
    let what = relation.as_str();
    if relation == kin::Relation::Spouse {
        return read_named(s, node, person, what).await;
    }
    let called =
        s.gw.chat(
            node.as_str(),
            node.as_str(),
            prompts::parents(&s.sources, person),
        )
        .await?;
    let Some(reply) = called
        .text()
        .ok()
        .and_then(|t| parse_json::<prompts::ParentsReply>(t).ok())
    else {
        return Ok(Err(format!("no parents of {person:?} read")));
    };
    if !reply.father.trim().is_empty() && kin::same_person(&reply.father, &reply.mother) {
        return Ok(Err(format!(
            "one name for both parents of {person:?}: {:?}",
            reply.father
        )));
    }
    let name = if relation == kin::Relation::Father {
        reply.father
    } else {
        reply.mother
    };
    Ok(if name.trim().is_empty() {
        Err(format!("no {what} of {person:?} read"))
    } else {
        Ok((name, reply.source as usize))
    })
}

/// Whether a source is about `person`, searching for their page over an index when none
/// is theirs: a link's person (the father, found on the child's page) is a hop the first
/// retrieval often missed. The pool grows and the sources are read again; the pool only
/// appends, so a source number read before stays the same passage.
async fn page_for(s: &mut S, person: &str) -> Result<bool, crate::graph::NodeError> {
    let has_page = |s: &S| s.sources.iter().any(|src| kin::page_of(src, person));
    if s.mode == EvidenceMode::Retrieval && !has_page(s) {
        nodes::gather(s, person, s.cfg().bridge_k.max(1)).await?;
        s.sources = evidence::read(&s.queries, &s.pool, s.cfg().max_evidence_chars);
        s.sources_version += 1;
    }
    // Without a page of their own, a source that names the person may still state it.
    Ok(s.sources.iter().any(|src| kin::about(src, person)))
}

async fn diagnose(s: &mut S) -> NodeResult {
    let round = s.current_round()?.clone();
    let a = round
        .assessment
        .as_ref()
        .ok_or("the answer was not assessed")?;
    let uncovered = monitor::uncovered_entities(&s.question, &s.pool);
    let missing_hop = if uncovered.is_empty() {
        evidence::next_hop_query(&s.question, &s.pool)
    } else {
        Some(uncovered.join(" "))
    };
    let d = monitor::diagnose(
        &s.question,
        &round.answer,
        &a.signals,
        a.closed_book.as_deref(),
        missing_hop,
        s.complexity,
    );
    s.note = Some(format!(
        "{} {:?}: {}",
        d.category.as_str(),
        d.error_types,
        d.reasons.join("; ")
    ));
    s.current_round()?.diagnosis = Some(d);
    Ok(Transition::Goto(REMEDIATE))
}

async fn remediate(s: &mut S) -> NodeResult {
    use crate::metacog::Category;
    let can_retrieve = s.mode == EvidenceMode::Retrieval;
    let round = s.current_round()?.clone();
    let d = round.diagnosis.clone().ok_or("no diagnosis")?;
    let a = round.assessment.clone().ok_or("not assessed")?;
    let searched_already = |q: &str| s.queries.iter().any(|x| x == q);
    // Missing knowledge: search for the hop the evidence does not cover; when the model's
    // own (closed-book) answer disagrees with the sources, search for that answer so the
    // sources can confirm or refute it.
    let query = match d.category {
        Category::InsufficientKnowledge => Some(d.suggested_query.clone()),
        Category::InternalKnowledgeOnly => a
            .closed_book
            .as_ref()
            .map(|cb| format!("{} {cb}", s.question)),
        _ => None,
    };
    if can_retrieve
        && let Some(query) = query.filter(|q| !q.trim().is_empty() && !searched_already(q))
    {
        s.note = Some(format!("re-retrieve the missing hop with {query:?}"));
        s.current_round()?.remediation = Some(Remediation::Retrieve {
            category: d.category,
            query: query.clone(),
        });
        s.ext.pool_before = s.pool.len();
        // Missing knowledge is a missing hop: follow the bridge entities first.
        s.follow_bridge = d.category == Category::InsufficientKnowledge;
        s.pending = Some((query, RetrievalReason::Remediation));
        return Ok(Transition::Goto(RETRIEVE));
    }
    // Every sample over the same sources gave one answer, not the written one: take it,
    // answered by the source sentence that states it. Decided on the tuning half of HotpotQA
    // gold: rewrites told what the samples said often repeated the first answer, and
    // adopting unanimous samples was +4.7 F1 there (7 answers up, 1 down;
    // docs/results/monitor.md).
    if a.samples.len() >= 3
        && let Some((top, share)) = majority(&a.samples)
        && share >= 1.0
        && !agree(&top, &round.short_answer)
        && !(can_retrieve && switches_option(&s.question, &round.short_answer, &top))
        && let Some((n, sentence)) = stating_sentence(&s.sources, &top)
    {
        s.note = Some(format!(
            "all {} samples say {top:?}: taken, as stated by source [{n}]",
            a.samples.len()
        ));
        s.current_round()?.remediation = Some(Remediation::Vote {
            category: d.category,
            answer: top.clone(),
            samples: a.samples.len(),
        });
        s.directive = None;
        s.push_answer(format!("{sentence} [{n}]"), top);
        return Ok(Transition::Goto(ASSESS));
    }
    // Sufficient evidence (or nothing to search): tell the writer what the samples over
    // the same sources said, or what form the question asks for.
    let form = AnswerForm::of(&s.question);
    let directive = if let Some((top, share)) = majority(&a.samples)
        && !agree(&top, &round.short_answer)
    {
        let mut counts: Vec<(String, usize)> = Vec::new();
        for x in &a.samples {
            match counts.iter_mut().find(|(y, _)| agree(y, x)) {
                Some((_, c)) => *c += 1,
                None => counts.push((x.clone(), 1)),
            }
        }
        let listed = counts
            .iter()
            .map(|(x, c)| format!("\"{x}\" ({c} of {})", a.samples.len()))
            .collect::<Vec<_>>()
            .join(", ");
        Some(format!(
            "Reading the sources several times gave these answers: {listed}; your first answer was \"{}\". \
             Check which one the sources state{}, and answer with it.",
            round.short_answer,
            if share > 0.5 {
                " (most readings agree)"
            } else {
                ""
            }
        ))
    } else if !a.signals.type_match {
        Some(match form {
            AnswerForm::Date => "The question asks when: the short_answer must be a date or a year.".into(),
            AnswerForm::Number => "The question asks how many or how much: the short_answer must be a number.".into(),
            AnswerForm::Name => "The question asks who, where or what, not when: the short_answer must be a name, a place or a thing, not a date.".into(),
            _ => "The short_answer must name the answer itself (a name, a place, a thing), not yes or no and not a sentence.".into(),
        })
    } else {
        None
    };
    if directive.is_some() && can_retrieve && !s.ext.config.rewrite_open {
        s.note = Some("a rewrite is the only remedy left; off over an index (rewrite_open)".into());
        return Ok(Transition::done("no remedy for the diagnosed cause"));
    }
    let Some(text) = directive else {
        s.note = Some("no remedy would change the answer".into());
        return Ok(Transition::done("no remedy for the diagnosed cause"));
    };
    s.note = Some(format!("directive: {text}"));
    s.current_round()?.remediation = Some(Remediation::Directive {
        category: d.category,
        text: text.clone(),
    });
    s.directive = Some(text);
    Ok(Transition::Goto(WRITE))
}

/// Whether `to` names the other option of an "A or B" question than `from` does.
///
/// Over an index, neither a vote nor a rewrite switches one named option for the other:
/// the sentence a vote cites for an option names the option, not the comparison, and
/// retrieved evidence often lacks one side's fact, so the samples guess. On 2Wiki open's
/// tuning half such switches were 0 right and 2 wrong (over gold paragraphs, where both
/// sides' facts are given, 4 right and 0 wrong on the tuning halves: there they stay;
/// docs/results/monitor.md). Moving from "both", "neither" or a non-option to an option
/// is not a switch.
fn switches_option(question: &str, from: &str, to: &str) -> bool {
    let AnswerForm::Choice(allowed) = AnswerForm::of(question) else {
        return false;
    };
    // The first two values are the options; "both" and "neither" follow.
    let which = |answer: &str| allowed.iter().take(2).position(|o| agree(o, answer));
    matches!((which(from), which(to)), (Some(a), Some(b)) if a != b)
}

/// The source sentence that states `answer` best (most of its content words, at least
/// half), with the source's number.
fn stating_sentence(sources: &[Source], answer: &str) -> Option<(usize, String)> {
    let wanted = crate::text::content_terms(answer);
    if wanted.is_empty() {
        return None;
    }
    let mut best: Option<(usize, usize, String)> = None;
    for src in sources {
        for span in &src.spans {
            let terms = crate::text::content_terms(span);
            let found = wanted.iter().filter(|t| terms.contains(*t)).count();
            if found * 2 >= wanted.len() && best.as_ref().is_none_or(|b| found > b.0) {
                best = Some((found, src.n, span.trim().to_string()));
            }
        }
    }
    best.map(|(_, n, sentence)| (n, sentence))
}
