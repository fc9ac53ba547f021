//! Reading the pool into numbered sources, and writing a cited answer over them.

use super::WRITE;
use crate::evidence::{self, Source};
use crate::graph::{NodeResult, Transition};
use crate::monitor::field_logprobs;
use crate::prompts::{self, WriteReply};
use crate::state::Run;
use crate::text::{contradicted_option, is_refusal, reconcile_short_answer, sentences};
use crate::trace::{AnswerLogprobs, EvidenceMode};
use crate::verify::{attribute, strip_invalid_citations, without_citations};
use metarag_core::parse_json;

/// Turns the pool into numbered sources within the evidence budget, then goes to `next`.
pub async fn read<E: Send>(s: &mut Run<E>, next: Transition) -> NodeResult {
    s.sources = evidence::read(&s.queries, &s.pool, s.cfg().max_evidence_chars);
    s.sources_version += 1;
    let spans: usize = s.sources.iter().map(|x| x.spans.len()).sum();
    s.note = Some(format!("{} sources, {spans} sentences", s.sources.len()));
    Ok(next)
}

/// Writes an answer with `[n]` citations and a short answer over the sources (none when
/// closed-book), under the directive and with the notes in force; appends it as a round,
/// then goes to `next`.
pub async fn write<E: Send>(s: &mut Run<E>, next: Transition) -> NodeResult {
    let sources: Vec<Source> = if s.mode == EvidenceMode::ClosedBook {
        Vec::new()
    } else {
        s.sources.clone()
    };
    // The bridges the hop found, where the writer may otherwise answer with the subject's
    // own facts; beside any notes of the strategy.
    let bridge_note = s
        .cfg()
        .bridge_notes
        .then(|| evidence::bridge_note(&s.question, &s.bridges, &sources))
        .flatten();
    let notes = match (s.notes.as_deref(), bridge_note) {
        (Some(n), Some(b)) => Some(format!("{n}\n{b}")),
        (n, b) => b.or(n.map(str::to_string)),
    };
    let request = prompts::write(
        &s.question,
        &sources,
        notes.as_deref(),
        s.directive.as_deref(),
        s.cfg().answer_max_tokens,
        s.cfg().abstain.is_on(),
    );
    let n_sources = sources.len();
    let caps = s.gw.capabilities();
    // The answer's token probabilities are the monitor's cheapest signal; computing them
    // costs the backend almost nothing.
    let request = if caps.logprobs {
        request.logprobs()
    } else {
        request
    };
    let c = s.gw.chat(WRITE.as_str(), "write", request).await?;
    let text = c.text().map_err(|e| format!("write: {e}"))?.to_string();
    let logprobs = c
        .result
        .as_ref()
        .ok()
        .and_then(|done| done.logprobs.as_deref())
        .map(|lp| AnswerLogprobs {
            answer: field_logprobs(lp, "answer"),
            short_answer: field_logprobs(lp, "short_answer"),
        });
    let (answer, short, write_fallback) = match parse_json::<WriteReply>(&text) {
        Ok(r) => (r.answer, r.short_answer, None),
        // A reply cut off inside its JSON (the token limit) still holds its fields.
        Err(e) if salvage(&text).is_some() => {
            let (answer, short) = salvage(&text).unwrap_or_default();
            (
                answer,
                short,
                Some(format!("{e} (fields read from the cut reply)")),
            )
        }
        Err(e) => {
            // Use the raw text: an answer in the wrong wrapper is still an answer.
            let raw = text.trim().to_string();
            let first = sentences(&raw)
                .first()
                .map(|&(a, b)| without_citations(&raw[a..b]))
                .unwrap_or_default();
            (raw, first, Some(e.to_string()))
        }
    };
    let (answer, stripped) = strip_invalid_citations(answer.trim(), n_sources);
    let (answer, attributed) = attribute(&answer, &sources, s.cfg().support_threshold);
    let mut short = without_citations(short.trim());
    // A "short" answer longer than the answer itself is the model copying a passage.
    let answer_words = without_citations(&answer).split_whitespace().count();
    if short.split_whitespace().count() > 12 && answer_words < short.split_whitespace().count() {
        short = without_citations(&answer);
    }
    // A decline is the answer's to make: offered "unknown" for the short answer, the 1.5B
    // writer put it there beside an answer that answers ("1000 lines [2]" / "unknown",
    // "Yes" / "unknown") on nearly every question of the documentation set's tuning half.
    // Such a short answer comes from the answer, as an empty one does.
    if (short.is_empty() || is_refusal(&short)) && !is_refusal(&answer) {
        short = sentences(&answer)
            .first()
            .map(|&(a, b)| without_citations(&answer[a..b]))
            .unwrap_or_default();
    }
    if let Some(from_answer) = echo_repaired(&s.question, &answer, &short) {
        short = from_answer;
    }
    // An "A or B?" reply whose answer names one option and whose short answer names the
    // other contradicts itself; the answer is kept (see `contradicted_option` for why).
    // Constrained output does not prevent this: the schema limits the short answer to the
    // two options, not to the one the answer chose. The model's own short answer stays in
    // the note, and the count in the run's counters.
    let mut fixed = String::new();
    let plain_answer = without_citations(&answer);
    let contradicted = contradicted_option(&s.question, &plain_answer, &short);
    *s.metrics
        .entry("short_answer_contradicted".into())
        .or_insert(0.0) += f64::from(u8::from(contradicted.is_some()));
    // Small models also swap the two fields ("answer": "No", "short_answer": "They were
    // not ..."). A backend that constrains output to the schema cannot for yes/no and "A
    // or B" questions (the short answer is limited to their values there), so that repair
    // runs only for backends without constrained output or a reply that did not parse.
    if let Some(option) = contradicted {
        fixed = format!(" (model wrote {short:?}; the answer names {option:?})");
        tracing::info!(model = %short, answer = %option, "short answer named the other option");
        short = option;
    } else if let Some(value) = neither_value(&s.question, &plain_answer, &short) {
        fixed = format!(" (model wrote {short:?}; the answer says {value:?}, neither option)");
        tracing::info!(model = %short, answer = %value, "short answer forced onto an option");
        short = value;
    } else if (!caps.json_schema || write_fallback.is_some())
        && let Some((better, why)) = reconcile_short_answer(&s.question, &plain_answer, &short)
    {
        fixed = format!(" (model wrote {short:?}; repaired: {})", why.as_str());
        tracing::info!(model = %short, repaired = %better, "short answer repaired (no constrained output)");
        short = better;
    }
    let index = s.push_answer(answer, short.clone());
    let round = &mut s.rounds[index];
    round.stripped_citations = stripped;
    round.attributed_citations = attributed;
    round.write_fallback = write_fallback;
    round.logprobs = logprobs;
    s.note = Some(format!(
        "round {index}: {short:?}{fixed}; {stripped} invalid citations stripped, {attributed} attributed"
    ));
    Ok(next)
}

/// The answer in place of a short answer that only restates the question: every content
/// word of `short` is the question's own ("how many sessions will sshd allow over one
/// connection?" / "sessions will sshd allow over one connection") while the answer, a
/// phrase of at most eight words, says something the question does not ("10 [1]"). The
/// 1.5B writer copied the question into the short answer beside a right answer on the
/// documentation set's tuning half. Yes/no and "A or B" questions are left alone: their
/// short answers are the verdict or an option, which the question may well write.
fn echo_repaired(question: &str, answer: &str, short: &str) -> Option<String> {
    use crate::program::values::stems;
    use crate::text::{AnswerType, answer_type, options};
    if is_refusal(short) || is_refusal(answer) || options(question).is_some() {
        return None;
    }
    if answer_type(question) == AnswerType::YesNo {
        return None;
    }
    let asked = stems(question);
    let short_terms = stems(short);
    if short_terms.is_empty() || !short_terms.is_subset(&asked) {
        return None;
    }
    let phrase = without_citations(answer);
    let phrase = phrase.trim().trim_end_matches('.').trim();
    let new = stems(phrase);
    (phrase.split_whitespace().count() <= 8 && !new.is_subset(&asked)).then(|| phrase.to_string())
}

/// The value the answer states in place of a short answer that is one of the question's
/// two value options when the answer states neither ("... can be up to 10 seconds in the
/// future [1]" beside "an hour" for "..., a minute or an hour?"): the 1.5B writer picks
/// an option for the short field even when its own answer, and the sources, say another
/// value. Only values with comparable units are compared; anything else is left alone.
fn neither_value(question: &str, answer: &str, short: &str) -> Option<String> {
    use crate::program::values::Quantity;
    use crate::program::values::option_quantity;
    let (a, b) = crate::text::options(question)?;
    let (qa, qb) = (option_quantity(&a)?, option_quantity(&b)?);
    let picked = option_quantity(short)?;
    if picked.same(&qa) != Some(true) && picked.same(&qb) != Some(true) {
        return None;
    }
    let said = Quantity::parse(answer)?;
    // The answer's value is a third one: comparable with both options and equal to neither.
    if said.same(&qa)? || said.same(&qb)? {
        return None;
    }
    Quantity::written_in(answer, said.value)
}

/// The `answer` and `short_answer` strings of a reply that is JSON cut off before its end
/// (`{"answer": "X [1].", "short_an`): the complete string fields it holds, the answer
/// standing in for a missing short answer. `None` when it is not such a reply.
fn salvage(text: &str) -> Option<(String, String)> {
    let t = text.trim_start();
    if !t.starts_with('{') {
        return None;
    }
    let field = |name: &str| {
        let key = format!("\"{name}\"");
        let rest = &t[t.find(&key)? + key.len()..];
        let rest = rest
            .trim_start()
            .strip_prefix(':')?
            .trim_start()
            .strip_prefix('"')?;
        // The string up to its closing quote, escapes kept whole.
        let mut out = String::new();
        let mut chars = rest.chars();
        while let Some(c) = chars.next() {
            match c {
                '"' => return Some(out),
                '\\' => out.push(chars.next()?),
                c => out.push(c),
            }
        }
        None
    };
    let answer = field("answer")?;
    let short = field("short_answer").unwrap_or_else(|| without_citations(&answer));
    Some((answer, short))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_cut_inside_its_json_keeps_its_complete_fields() {
        assert_eq!(
            salvage(r#"{"answer": "Adrian Edmondson [2].", "short_an"#),
            Some(("Adrian Edmondson [2].".into(), "Adrian Edmondson.".into()))
        );
        assert_eq!(
            salvage(r#"{"answer": "He said \"no\" [1].", "short_answer": "no"#),
            Some((r#"He said "no" [1]."#.into(), r#"He said "no"."#.into()))
        );
        assert_eq!(
            salvage(r#"{"answer": "A [1].", "short_answer": "A", "#),
            Some(("A [1].".into(), "A".into()))
        );
        assert_eq!(salvage(r#"{"answer": "cut in the mid"#), None);
        assert_eq!(salvage("Plain text answer."), None);
    }

    #[test]
    fn a_short_answer_forced_onto_an_option_gives_way_to_the_value_the_answer_states() {
        let q = "How far ahead may a token's clock run before the gateway refuses it, a minute or an hour?";
        let said = "A token's clock may run up to 10 seconds ahead before the gateway refuses it.";
        assert_eq!(neither_value(q, said, "an hour"), Some("10 seconds".into()));
        // The answer agreeing with an option, a short answer of its own, or units that do
        // not compare: left alone.
        let agrees = "A token may run up to one hour ahead.";
        assert_eq!(neither_value(q, agrees, "an hour"), None);
        assert_eq!(neither_value(q, said, "10 seconds"), None);
        assert_eq!(
            neither_value(q, "Up to 3 tokens may be early.", "a minute"),
            None
        );
        // Names are not values.
        let names = "Which database does the billing team use, Postgres or MySQL?";
        assert_eq!(
            neither_value(names, "It uses ClickHouse 23 since 2023.", "MySQL"),
            None
        );
    }

    #[test]
    fn a_short_answer_that_restates_the_question_gives_way_to_the_answer() {
        let q = "By default, how many lanterns will the Quell daemon keep lit over one night?";
        assert_eq!(
            echo_repaired(q, "12 [1]", "lanterns will the Quell daemon keep lit"),
            Some("12".into())
        );
        // A short answer with a word of its own stays, right or wrong.
        assert_eq!(echo_repaired(q, "12 [1]", "14 lanterns"), None);
        // So does an echo beside an answer that only echoes too, or a long answer.
        assert_eq!(
            echo_repaired(q, "The Quell daemon keeps lanterns lit [1].", "lanterns"),
            None
        );
        assert_eq!(
            echo_repaired(
                q,
                "It keeps twelve of them lit on a normal night, more in winter [1].",
                "lanterns"
            ),
            None
        );
        // Yes/no and "A or B" questions are decided elsewhere.
        let yn = "Does the Quell daemon keep lanterns lit?";
        assert_eq!(echo_repaired(yn, "Yes, twelve [1].", "lanterns lit"), None);
        let ab = "Which keeps more lanterns lit, Quell or Orm?";
        assert_eq!(echo_repaired(ab, "Twelve [1].", "Quell"), None);
        // A decline is not repaired into an answer.
        assert_eq!(echo_repaired(q, "unknown", "lanterns"), None);
    }
}
