//! `metarag`: the metacognitive loop of seed `000` (after Yao et al. 2024): plan,
//! retrieve (with further hops), read, write, then verify -> monitor -> converge ->
//! diagnose -> remediate -> write again, until the answer passes, converges, or runs out
//! of rounds.

use super::NoConfig;
use crate::evidence;
use crate::graph::{Graph, NodeId, NodeResult, Transition};
use crate::metacog::{self, DiagnoseInput};
use crate::nodes::{self, PLAN, READ, RETRIEVE, WRITE};
use crate::prompts::{self, FactsReply, JudgeReply};
use crate::registry::Strategy;
use crate::state::Run;
use crate::trace::{EvidenceMode, Remediation, RetrievalReason, Round};
use crate::verify::{VerifyInput, verify};

/// Checks the answer against the sources.
pub const VERIFY: NodeId = NodeId("verify");
/// The monitoring gate.
pub const MONITOR: NodeId = NodeId("monitor");
/// Stops when consecutive answers agree or rounds run out.
pub const CONVERGE: NodeId = NodeId("converge");
/// Why the answer is weak (knowledge category, error types).
pub const DIAGNOSE: NodeId = NodeId("diagnose");
/// Re-retrieval or a writing directive.
pub const REMEDIATE: NodeId = NodeId("remediate");

/// The metacognitive strategy.
#[derive(Debug, Clone, Default)]
pub struct Metarag;

/// MetaRAG's own state: the facts the question needs, asked once per evidence pool.
#[derive(Debug, Default)]
pub struct MetaragState {
    facts: Option<(usize, Result<FactsReply, String>)>,
}

impl Strategy for Metarag {
    const NAME: &'static str = "metarag";
    const DESCRIPTION: &'static str = "plan, retrieve, write, verify; diagnose and remediate weak answers until they pass or converge (seed 000, Yao et al. 2024)";
    // Its thresholds live in the shared [agent] section (seed 000's table).
    type Config = NoConfig;
    type State = MetaragState;

    fn new(_: NoConfig) -> Result<Self, String> {
        Ok(Metarag)
    }

    fn state(&self) -> MetaragState {
        MetaragState::default()
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
                    (READ, "enough evidence"),
                ],
                |s| Box::pin(nodes::retrieve(s, READ)),
            )
            .node(READ, &[(WRITE, "")], |s| {
                Box::pin(nodes::read(s, Transition::Goto(WRITE)))
            })
            .node(WRITE, &[(VERIFY, "")], |s| {
                Box::pin(nodes::write(s, Transition::Goto(VERIFY)))
            })
            .node(VERIFY, &[(MONITOR, "")], |s| Box::pin(verify_node(s)))
            .node(MONITOR, &[(CONVERGE, "gate failed")], |s| {
                Box::pin(monitor(s))
            })
            .node(CONVERGE, &[(DIAGNOSE, "not converged, rounds left")], |s| {
                Box::pin(converge(s))
            })
            .node(DIAGNOSE, &[(REMEDIATE, "")], |s| Box::pin(diagnose(s)))
            .node(
                REMEDIATE,
                &[
                    (RETRIEVE, "insufficient_knowledge"),
                    (WRITE, "writing directive"),
                ],
                |s| Box::pin(remediate(s)),
            )
    }
}

type S = Run<MetaragState>;

async fn verify_node(s: &mut S) -> NodeResult {
    let (answer, short) = {
        let r = s.current_round()?;
        (r.answer.clone(), r.short_answer.clone())
    };
    let need_facts = s
        .ext
        .facts
        .as_ref()
        .is_none_or(|(version, _)| *version != s.sources_version);
    let judge_req = prompts::judge(&s.question, &s.sources, &answer);
    // The facts depend only on the evidence, so they are asked once per evidence pool;
    // with an API backend the two calls run at the same time.
    let judge_call = if need_facts {
        let facts_req = prompts::facts(&s.question, &s.sources);
        let (f, j) =
            s.gw.chat2(
                VERIFY.as_str(),
                ("facts", facts_req, None),
                ("judge", judge_req),
            )
            .await?;
        s.ext.facts = Some((s.sources_version, f.parsed::<FactsReply>()));
        j
    } else {
        s.gw.chat(VERIFY.as_str(), "judge", judge_req).await?
    };
    let facts = match &s.ext.facts {
        Some((_, Ok(f))) => Ok(f),
        Some((_, Err(e))) => Err(e.clone()),
        None => Err("no facts".to_string()),
    };
    let v = verify(VerifyInput {
        answer: &answer,
        short_answer: &short,
        sources: &s.sources,
        facts,
        judge: judge_call.parsed::<JudgeReply>(),
        support_threshold: s.cfg().support_threshold,
        judge_weight: s.cfg().judge_weight,
    });
    s.note = Some(format!(
        "faithfulness {:.2}, completeness {:.2}, citation precision {:.2}, facts found {}/{}",
        v.faithfulness,
        v.completeness,
        v.citation_precision,
        v.facts.iter().filter(|f| f.verified).count(),
        v.facts.len()
    ));
    s.current_round()?.verification = Some(v);
    Ok(Transition::Goto(MONITOR))
}

async fn monitor(s: &mut S) -> NodeResult {
    let cfg = s.config.clone();
    let round = s.current_round()?;
    let v = round
        .verification
        .as_ref()
        .ok_or("the answer was not verified")?;
    let m = metacog::monitor(v, &cfg);
    round.monitor = Some(m);
    s.note = Some(if m.passed {
        "gate passed".into()
    } else {
        "gate failed".into()
    });
    Ok(if m.passed {
        Transition::done(if m.fast_path {
            "passed (fast path)"
        } else {
            "passed"
        })
    } else {
        Transition::Goto(CONVERGE)
    })
}

async fn converge(s: &mut S) -> NodeResult {
    let (max_rounds, threshold) = (s.cfg().max_rounds, s.cfg().convergence_threshold);
    let n = s.rounds.len();
    let similarity = (n >= 2)
        .then(|| metacog::answer_similarity(&s.rounds[n - 2].answer, &s.rounds[n - 1].answer));
    s.current_round()?.similarity_to_previous = similarity;
    if n > max_rounds {
        return Ok(Transition::done(format!("max_rounds {max_rounds}")));
    }
    if let Some(j) = similarity
        && j >= threshold
    {
        return Ok(Transition::done(format!("converged (jaccard {j:.2})")));
    }
    Ok(Transition::Goto(DIAGNOSE))
}

/// What the checks found, in words, for the critic.
fn findings(round: &Round) -> Vec<String> {
    let Some(v) = &round.verification else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let unsupported = v.claims.iter().filter(|c| !c.supported).count();
    if unsupported > 0 {
        out.push(format!(
            "{unsupported} of {} claims are not supported by the sources they cite",
            v.claims.len()
        ));
    }
    if v.citation_precision < 1.0 {
        out.push(format!("citation precision is {:.2}", v.citation_precision));
    }
    for f in v.facts.iter().filter(|f| !f.verified) {
        out.push(format!("needed fact not found in the sources: {}", f.need));
    }
    for f in v.facts.iter().filter(|f| f.verified && !f.in_answer) {
        out.push(format!("the answer does not use: {} = {}", f.need, f.value));
    }
    if v.refusal {
        out.push("the answer declines to answer".into());
    }
    out
}

async fn diagnose(s: &mut S) -> NodeResult {
    let cfg = s.config.clone();
    let round = s.current_round()?.clone();
    let v = round
        .verification
        .clone()
        .ok_or("the answer was not verified")?;
    let critic_req = prompts::critic(&s.question, &s.sources, &round.answer, &findings(&round));
    // The critic goes first: it shares the evidence prefix with the calls before it, so a
    // local model reuses that prefix (the closed-book probe would evict it).
    let (critic, cb) =
        s.gw.chat2(
            DIAGNOSE.as_str(),
            ("critic", critic_req, Some(cfg.critic_timeout)),
            ("closed_book", prompts::closed_book(&s.question)),
        )
        .await?;
    let closed_book = cb.text().map(|t| t.trim().to_string());
    let coverage = evidence::diagnose_pool(&s.question, &s.pool).query_coverage;
    let fallback_query = evidence::next_hop_query(&s.question, &s.pool);
    let d = metacog::diagnose(
        DiagnoseInput {
            question: &s.question,
            answer: &round.answer,
            short_answer: &round.short_answer,
            complexity: s.complexity,
            verification: &v,
            coverage,
            closed_book,
            critic: critic.parsed(),
            fallback_query,
        },
        &cfg,
    );
    s.note = Some(format!(
        "{} {:?} ({:?})",
        d.category.as_str(),
        d.error_types,
        d.method
    ));
    s.current_round()?.diagnosis = Some(d);
    Ok(Transition::Goto(REMEDIATE))
}

async fn remediate(s: &mut S) -> NodeResult {
    let can_retrieve = s.mode == EvidenceMode::Retrieval;
    let round = s.current_round()?;
    let d = round.diagnosis.clone().ok_or("no diagnosis")?;
    let (remediation, next, directive, pending) = match metacog::directive(&d) {
        None if can_retrieve => (
            Remediation::Retrieve {
                category: d.category,
                query: d.suggested_query.clone(),
            },
            RETRIEVE,
            None,
            Some((d.suggested_query.clone(), RetrievalReason::Remediation)),
        ),
        None => (
            Remediation::Directive {
                category: d.category,
                text: metacog::DIRECTIVE_REREAD.into(),
            },
            WRITE,
            Some(metacog::DIRECTIVE_REREAD.to_string()),
            None,
        ),
        Some(text) => (
            Remediation::Directive {
                category: d.category,
                text: text.clone(),
            },
            WRITE,
            Some(text),
            None,
        ),
    };
    let note = match &remediation {
        Remediation::Retrieve { query, .. } => format!("re-retrieve with {query:?}"),
        Remediation::Directive { text, .. } => format!("directive: {text}"),
    };
    round.remediation = Some(remediation);
    s.note = Some(note);
    s.directive = directive;
    s.pending = pending;
    Ok(Transition::Goto(next))
}
