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
//! Before the first write, the question's **program** ([`crate::program`]): the model
//! writes a small typed program over the question (find, follow, compare, same, all/any,
//! pick, count, intersect), each read grounded in a quote from a source about its subject
//! and every other op run in code. A program whose every step grounds is the answer,
//! "neither" included where no option of an "A or B" question is what the sources say; a
//! step that does not ground leaves the run to the write and the monitor, and the step's
//! missing fact is what a remediation search looks for.
//!
//! Over an index, a multi-hop plan searches the bridge entities of the question's relation
//! right after its first search (`agent.bridge_hop`), so the first answer is written over
//! both hops: the missing hop is found before the write, not diagnosed after it.

use crate::evidence::{self, Source};
use crate::graph::{Graph, NodeId, NodeResult, Transition};
use crate::monitor::{self, AnswerForm, MeasureInput, MonitorModel, agree, majority};
use crate::nodes::{self, PLAN, READ, RETRIEVE, WRITE};
use crate::program;
use crate::program::exec::{Outcome, ProgramRun, StepStatus};
use crate::prompts::{self, ShortReply};
use crate::registry::Strategy;
use crate::state::Run;
use crate::trace::{
    AbstainedBy, Abstention, Assessment, EvidenceMode, Remediation, RetrievalReason, Round,
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
/// Before a run that did not pass the monitor ends: answer, or decline (`[agent] abstain`).
pub const DECIDE: NodeId = NodeId("decide");
pub use crate::program::{PROGRAM, PROGRAM_RESOLVED};

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
    /// Over an index, an answer whose program stopped at a step or was invalid must pass
    /// the monitor's gate by this much, or the run declines (when declining is on; see
    /// [`UNSETTLED_MARGIN`] for the default's fit). 0 turns the check off.
    pub unsettled_margin: f64,
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
    /// Plan and run the question's program before the first write ([`crate::program`]):
    /// one planning call, one read per `find` / `follow`; a program whose every step
    /// grounds is the answer.
    pub program: bool,
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
            unsettled_margin: UNSETTLED_MARGIN,
            monitor: MonitorModel::default(),
            monitor_open: MonitorModel::default_open(),
            rewrite_open: false,
            program: true,
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
    /// The question's program and how it ran.
    program: Option<ProgramRun>,
    /// Why the run is ending, kept while [`DECIDE`] weighs declining.
    stopping: Option<String>,
    /// The search for a diagnosed missing hop that found nothing new about it.
    found_nothing: Option<String>,
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
        if !(0.0..=1.0).contains(&config.unsettled_margin) {
            return Err(format!(
                "unsettled_margin {} is not in [0, 1]",
                config.unsettled_margin
            ));
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
                &[
                    (READ, "first retrieval, or the hop is covered"),
                    (DECIDE, "the missing hop was not found"),
                ],
                |s| Box::pin(check(s)),
            )
            .node(READ, &[(PROGRAM, "")], |s| {
                Box::pin(nodes::read(s, Transition::Goto(PROGRAM)))
            })
            .node(
                PROGRAM,
                &[(WRITE, "no program, or a step unresolved")],
                |s| Box::pin(run_program(s)),
            )
            .node(WRITE, &[(ASSESS, "")], |s| {
                Box::pin(nodes::write(s, Transition::Goto(ASSESS)))
            })
            .node(
                ASSESS,
                &[
                    (DIAGNOSE, "not confident, rounds left"),
                    (DECIDE, "stopping, or a pass the program did not back"),
                ],
                |s| Box::pin(assess(s)),
            )
            .node(DIAGNOSE, &[(REMEDIATE, "")], |s| Box::pin(diagnose(s)))
            .node(
                REMEDIATE,
                &[
                    (RETRIEVE, "missing knowledge: search the missing hop"),
                    (ASSESS, "unanimous samples: take their answer"),
                    (WRITE, "rewrite aimed at the cause"),
                    (DECIDE, "no remedy"),
                ],
                |s| Box::pin(remediate(s)),
            )
            .node(DECIDE, &[], |s| Box::pin(decide(s)))
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
        s.ext.found_nothing = Some(query);
        return Ok(stop(s, "re-retrieval found nothing for the missing hop"));
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
    let next = if passed && !unchecked_verdict(s) && !thin_pass(s) {
        Transition::done("confident")
    } else if passed {
        stop(s, "confident")
    } else if index >= s.cfg().max_rounds {
        // The rounds limit is the agent's (`agent.max_rounds`, `ask --max-rounds`).
        stop(s, format!("max_rounds {}", s.cfg().max_rounds))
    } else if index > 0 && agree(&s.rounds[index - 1].short_answer, &short) {
        stop(s, "converged (same short answer)")
    } else {
        Transition::Goto(DIAGNOSE)
    };
    Ok(next)
}

/// The round whose answer the run would give: the chosen one, else the last.
fn kept_round(s: &S) -> Option<&Round> {
    s.chosen.and_then(|i| s.rounds.get(i)).or(s.rounds.last())
}

/// Whether the kept answer is a bare yes/no whose program stopped short (a fact no source
/// states, values that did not settle the op): the monitor weighs no "yes" against the
/// sources' words, and a small model says "yes" to what it could not check.
fn unchecked_verdict(s: &S) -> bool {
    let program = s.ext.program.as_ref().map(|r| &r.outcome);
    matches!(program, Some(Outcome::Unresolved { .. }))
        && kept_round(s).is_some_and(|r| AnswerForm::YesNo.matches(&r.short_answer))
}

/// The default of [`MetaragConfig::unsettled_margin`]: how far over the monitor's gate an
/// answer over an index must be to stand without a program that settled it. A program
/// that stopped at a step or did not type is the trace's plainest sign that the answer
/// was written without the facts it needs, and the monitor's confidence in such answers
/// barely tells right from wrong (medians 0.79 and 0.70 on the HotpotQA open tuning half,
/// 0.71 and 0.69 on the man pages'). Fitted on the tuning halves (HotpotQA open with and
/// without unanswerable questions, the man pages; docs/results/truthfulness.md, "A pass
/// the program did not back"): 0.1 is best pooled.
pub const UNSETTLED_MARGIN: f64 = 0.1;

/// Whether the kept answer passed the monitor by less than the `unsettled_margin` while the
/// question's program stopped at a step or was invalid, over an index (with the sources
/// given, an answer is there to find; the margin was fitted over indexes only).
fn thin_pass(s: &S) -> bool {
    let unsettled = matches!(
        s.ext.program.as_ref().map(|r| &r.outcome),
        Some(Outcome::Unresolved { .. } | Outcome::Invalid { .. })
    );
    let gate = monitor_of(s).threshold;
    let margin = s.ext.config.unsettled_margin;
    s.mode == EvidenceMode::Retrieval
        && margin > 0.0
        && unsettled
        && kept_round(s)
            .and_then(|r| r.assessment.as_ref())
            .is_some_and(|a| a.passed && a.confidence < gate + margin)
}

/// Ends a run whose answer did not pass the monitor: through [`DECIDE`], which weighs
/// declining first.
fn stop(s: &mut S, why: impl Into<String>) -> Transition {
    s.ext.stopping = Some(why.into());
    Transition::Goto(DECIDE)
}

/// Answers with the kept round, or declines (`[agent] abstain`): when the monitor's
/// confidence in it is under the threshold; when the monitor diagnosed missing knowledge
/// and the search for the missing hop found nothing about it; or when a read of the
/// question's program found no source for its fact and the monitor did not pass the
/// answer written without it, or the answer is a bare yes/no the program did not settle
/// ([`unchecked_verdict`], passed or not); or when the answer cites only sources about
/// other things than the one subject the question asks about, or cites none, and the
/// monitor did not pass it. What the sources do state (the program's grounded reads)
/// goes with the decline, and the answer held back stays in the trace.
async fn decide(s: &mut S) -> NodeResult {
    let why = s.ext.stopping.take().unwrap_or_else(|| "stopped".into());
    let Some(threshold) = s.cfg().abstain.threshold() else {
        return Ok(Transition::done(why));
    };
    let Some(kept) = s.chosen.or(s.rounds.len().checked_sub(1)) else {
        return Ok(Transition::done(why));
    };
    let round = &s.rounds[kept];
    // A writer that declined already is found by the trace itself.
    if crate::text::is_refusal(&round.short_answer) {
        return Ok(Transition::done(why));
    }
    let Some(a) = round.assessment.as_ref() else {
        return Ok(Transition::done(why));
    };
    let confidence = a.confidence;
    let gate = monitor_of(s).threshold;
    let program = s.ext.program.as_ref();
    // The most specific cause first: a search that found nothing, a program step no
    // source grounds; then the confidence alone.
    let (by, reason) = if let Some(query) = s.ext.found_nothing.as_deref()
        && !a.passed
    {
        (
            AbstainedBy::Search,
            format!(
                "the monitor diagnosed missing knowledge, and the search for it ({query:?}) \
                 found nothing new about it (confidence {confidence:.2} < {gate:.2})"
            ),
        )
    } else if let Some(read) = program.and_then(ProgramRun::missing_read)
        && !a.passed
    {
        let step = match program.map(|r| &r.outcome) {
            Some(Outcome::Unresolved { step, .. }) => *step,
            _ => 0,
        };
        (
            AbstainedBy::Program,
            format!(
                "no source states step {step}'s fact ({read:?}), and the monitor did not pass \
                 the answer written without it (confidence {confidence:.2} < {gate:.2})"
            ),
        )
    } else if let Some(Outcome::Unresolved { step, reason, .. }) =
        program.map(|r| &r.outcome).filter(|_| unchecked_verdict(s))
    {
        (
            AbstainedBy::Program,
            format!(
                "the answer is a bare yes/no, and step {step} of the program that was to \
                 decide it did not resolve ({reason}) (confidence {confidence:.2})"
            ),
        )
    } else if thin_pass(s) {
        let what = match program.map(|r| &r.outcome) {
            Some(Outcome::Unresolved { step, reason, .. }) => {
                format!("step {step} of the program did not resolve ({reason})")
            }
            Some(Outcome::Invalid { reason }) => format!("the program was invalid ({reason})"),
            _ => "the program did not settle it".into(),
        };
        let margin = s.ext.config.unsettled_margin;
        (
            AbstainedBy::Program,
            format!(
                "{what}, and the monitor passed the answer written without it by less than \
                 {margin} (confidence {confidence:.2} < {:.2})",
                gate + margin
            ),
        )
    } else if let Some(subject) = program
        .filter(|_| kept + 1 == s.rounds.len())
        .and_then(|r| r.off_subject(s.mode, &round.answer, &s.sources))
        && !a.passed
    {
        // Only the last round's citations number the sources the run holds now.
        (
            AbstainedBy::OffSubject,
            format!(
                "none of the sources the answer cites mentions {subject:?}, the one thing \
                 the question asks about, and the monitor did not pass it (confidence \
                 {confidence:.2} < {gate:.2})"
            ),
        )
    } else if s.mode == EvidenceMode::Retrieval
        && kept + 1 == s.rounds.len()
        && crate::verify::citations(&round.answer).is_empty()
        && !AnswerForm::YesNo.matches(&round.short_answer)
        && !a.passed
    {
        (
            AbstainedBy::Uncited,
            format!(
                "the answer cites no source and none supports it, and the monitor did not \
                 pass it (confidence {confidence:.2} < {gate:.2})"
            ),
        )
    } else if confidence < threshold {
        (
            AbstainedBy::Monitor,
            format!("the monitor's confidence {confidence:.2} is under abstain {threshold:.2}"),
        )
    } else {
        return Ok(Transition::done(why));
    };
    let sources_say = program
        .map(|r| {
            r.steps
                .iter()
                .filter(|st| st.status == StepStatus::Grounded)
                .filter_map(|st| Some(format!("{} [{}]", st.quote.as_deref()?.trim(), st.source?)))
                .collect()
        })
        .unwrap_or_default();
    s.note = Some(format!("declined: {reason}"));
    s.abstention = Some(Abstention {
        by,
        reason: reason.clone(),
        sources_say,
        withheld: Some(round.answer.clone()),
    });
    Ok(Transition::done(format!(
        "abstained ({}): {why}",
        by.as_str()
    )))
}

/// Plans the question's program and runs it (once, before the first write): resolved,
/// its answer is the run's; otherwise the write answers as standard RAG does, the trace
/// naming the step that did not ground.
async fn run_program(s: &mut S) -> NodeResult {
    if !s.ext.config.program
        || s.ext.program.is_some()
        || !s.rounds.is_empty()
        || s.mode == EvidenceMode::ClosedBook
        || s.sources.is_empty()
    {
        return Ok(Transition::Goto(WRITE));
    }
    let run = program::exec::solve(s, PROGRAM.as_str()).await?;
    if let Some(subject) = run.unmentioned.clone()
        && s.cfg().abstain.is_on()
    {
        // Nothing the documents say is about it: any answer would be made up, however
        // sure the model sounds (the monitor passed "60 seconds" for a tool the corpus
        // never names). Declined before the write, which saves its call.
        let reason = format!(
            "no document mentions {subject:?}: no source read names it, and a word search \
             of the index for it found none that does"
        );
        s.note = Some(format!("declined: {reason}\n{}", run.program));
        s.abstention = Some(Abstention {
            by: AbstainedBy::Unmentioned,
            reason,
            sources_say: Vec::new(),
            withheld: None,
        });
        s.ext.program = Some(run);
        return Ok(Transition::done(format!(
            "abstained ({})",
            AbstainedBy::Unmentioned.as_str()
        )));
    }
    let next = match &run.outcome {
        Outcome::Resolved {
            answer,
            short_answer,
            neither,
        } => {
            let i = s.push_answer(answer.clone(), short_answer.clone());
            s.chosen = Some(i);
            s.note = Some(format!(
                "{short_answer:?}{}: every step grounded\n{}",
                if *neither { " (neither option)" } else { "" },
                run.program
            ));
            Transition::done(PROGRAM_RESOLVED)
        }
        Outcome::Unresolved { step, reason, .. } => {
            s.note = Some(format!(
                "step {step} unresolved: {reason}; the write answers\n{}",
                run.program
            ));
            Transition::Goto(WRITE)
        }
        Outcome::Invalid { reason } => {
            s.note = Some(format!("no program: {reason}"));
            Transition::Goto(WRITE)
        }
        Outcome::Skipped => {
            s.note = Some(format!(
                "one plain read, left to the write: {}",
                run.program
            ));
            Transition::Goto(WRITE)
        }
    };
    s.ext.program = Some(run);
    Ok(next)
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
        // The fact the program could not find is the missing hop, named by the step that
        // needed it; else the diagnosis' query.
        Category::InsufficientKnowledge => Some(
            s.ext
                .program
                .as_ref()
                .and_then(|r| r.missing_fact().map(str::to_string))
                .unwrap_or_else(|| d.suggested_query.clone()),
        ),
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
        return Ok(stop(s, "no remedy for the diagnosed cause"));
    }
    let Some(text) = directive else {
        s.note = Some("no remedy would change the answer".into());
        return Ok(stop(s, "no remedy for the diagnosed cause"));
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
    let form = AnswerForm::of(question);
    let which = |answer: &str| form.options().iter().position(|o| agree(o, answer));
    matches!((which(from), which(to)), (Some(a), Some(b)) if a != b)
}

/// The source sentence that states `answer` best (most of its content words, at least
/// half), with the source's number.
fn stating_sentence(sources: &[Source], answer: &str) -> Option<(usize, String)> {
    let wanted = crate::text::content_terms(answer);
    if wanted.is_empty() {
        return None;
    }
    // A value is stated only where its number is ("24 hour time" does not state "an
    // hour").
    let value = crate::program::values::option_quantity(answer);
    let states_value = |span: &str| {
        value
            .as_ref()
            .is_none_or(|q| crate::program::values::Quantity::written_in(span, q.value).is_some())
    };
    let mut best: Option<(usize, usize, String)> = None;
    for src in sources {
        for span in src.spans.iter().filter(|s| states_value(s)) {
            let terms = crate::text::content_terms(span);
            let found = wanted.iter().filter(|t| terms.contains(*t)).count();
            if found * 2 >= wanted.len() && best.as_ref().is_none_or(|b| found > b.0) {
                best = Some((found, src.n, span.trim().to_string()));
            }
        }
    }
    best.map(|(_, n, sentence)| (n, sentence))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::test_source;

    #[test]
    fn a_value_is_stated_only_by_a_sentence_with_its_number() {
        let mut clock = test_source(1, "clockd(8)", "");
        clock.spans = vec!["24 hour time may be used in place of am/pm.".into()];
        let mut token = test_source(2, "gatekeeper(5)", "");
        token.spans = vec!["A token may be dated up to 1 hour ahead.".into()];
        assert_eq!(
            stating_sentence(std::slice::from_ref(&clock), "an hour"),
            None
        );
        assert_eq!(
            stating_sentence(&[clock, token], "an hour"),
            Some((2, "A token may be dated up to 1 hour ahead.".into()))
        );
    }
}
