//! Typed question programs: one general reasoner in place of readers of particular
//! question wordings.
//!
//! The planner ([`plan`]) asks the model, through the JSON grammar, for the question's
//! program in slots (what it is about, the relations followed, the fact read, how the facts
//! combine), which compiles into steps; [`Program::validate`] types it (every reference points back, every
//! op gets values of the kinds it works on); the executor ([`exec`]) runs it: each `find`
//! and `follow` is a retrieval scoped to its subject and one model read of a typed value
//! with the sentence that states it, and the value counts only if code finds it stated
//! there (negation included); `compare`, `same`, `all`, `any`, `pick`, `count` and
//! `intersect` run in code on typed [`values`]. A step that cannot be grounded leaves the
//! program unresolved, and the strategy answers as standard RAG does, its trace naming the
//! step and the reason.
//!
//! Why these ops (from the questions of all three data sets' tuning halves, reworded ones,
//! and questions over documentation):
//! - `find(subject, property, kind)`: every question needs at least one fact read about
//!   one thing; a small model reads one fact well when asked for that fact alone.
//! - `follow(subject, relation)`: chains ("where was the director of X born", "the
//!   father's father", "the option the man page of tar refers to") name their next
//!   subject through a relation; its value is an entity a later step is asked about.
//! - `compare(a, b, by)`: "which was released earlier", "which has the larger default",
//!   "who held the post longer": an order of two typed values, which small models get
//!   wrong when asked whole.
//! - `same(a, b)`: "citizens of one country", "born in the same city", "the same default".
//! - `all` / `any`: "are both A and B ferns", "is either of them deprecated": a verdict
//!   over several yes/no steps, so that one "not" decides it.
//! - `pick(options, steps)`: "which of A or B ...": the option a verdict or a value picks,
//!   and "neither" with what the sources do say when no option is it.
//! - `count`: "how many of ...", a list's length.
//! - `intersect`: "what do A and B have in common": the items both lists hold.

pub mod exec;
pub mod plan;
pub mod values;

use crate::graph::NodeId;
use crate::monitor::AnswerForm;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
pub use values::{Date, Kind, Quantity, Value};

/// The node that plans and runs a question's program, in every strategy that has one.
pub const PROGRAM: NodeId = NodeId("program");
/// The stop reason of a run whose program resolved.
pub const PROGRAM_RESOLVED: &str = "the program resolved";

/// The most steps a program may have: the largest plan (three subjects, a chain of two
/// relations from each, a fact read at its end, one op over them) compiles to ten, and
/// every question of the tuning halves fits in seven.
pub const MAX_STEPS: usize = 10;

/// The order a `compare` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// The earlier date.
    Earlier,
    /// The later date.
    Later,
    /// The larger quantity.
    More,
    /// The smaller quantity.
    Less,
}

impl Order {
    /// Whether the smaller value wins.
    pub fn smaller_wins(self) -> bool {
        matches!(self, Order::Earlier | Order::Less)
    }
}

/// The op a raw step names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OpName {
    /// A typed value of a subject.
    Find,
    /// The entity a relation of a subject names.
    Follow,
    /// Which of two steps' subjects has the earlier / later / larger / smaller value.
    Compare,
    /// Whether two steps' values are the same.
    Same,
    /// Whether every yes/no step holds.
    All,
    /// Whether any yes/no step holds.
    Any,
    /// The option that steps' verdicts or value pick.
    Pick,
    /// How many items a list step holds.
    Count,
    /// The items two list steps share.
    Intersect,
}

/// One step as the model writes it: every field present (the grammar asks for all), the
/// ones an op does not use left empty. The JSON keys (`do`, `of`, `read`, `type`,
/// `versus`, `wins`, `with`) sort in the order a step is thought out, because the grammar
/// a local backend builds from the schema asks for the keys in sorted order: with the
/// field names, the 1.5B model had to write a step's arguments before its op, and wrote
/// nonsense.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RawStep {
    /// The op.
    #[serde(rename = "do")]
    pub op: OpName,
    /// `find` / `follow`: what the step is about: a name, or `#n` for step n's value.
    /// Required in the planner's grammar ([`plan::plan`]), empty for other ops.
    #[serde(default, rename = "of")]
    pub subject: String,
    /// `find`: the property read ("release date", "is deprecated"); `follow`: the
    /// relation ("director", "father"). Required in the planner's grammar, and short
    /// there (a small model otherwise writes a sentence until the token limit).
    #[serde(default, rename = "read")]
    #[schemars(length(max = 48))]
    pub property: String,
    /// `find`: the kind of value.
    #[serde(default, rename = "type")]
    pub kind: Option<Kind>,
    /// The steps an op works on, as `#n`.
    #[serde(default, rename = "with")]
    #[schemars(length(max = 4))]
    pub args: Vec<String>,
    /// `compare`: the order asked for.
    #[serde(default, rename = "wins")]
    pub by: Option<Order>,
    /// `pick`: the options the question offers.
    #[serde(default, rename = "versus")]
    #[schemars(length(max = 4))]
    pub options: Vec<String>,
}

/// A program as the model writes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RawProgram {
    /// The steps in order; the last one's value is the answer.
    #[schemars(length(min = 1, max = 10))]
    pub steps: Vec<RawStep>,
}

/// What a `find` or `follow` is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Subject {
    /// A thing the question names.
    Named(String),
    /// The entity an earlier step found (its index, from 0).
    Step(usize),
}

/// One typed step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", tag = "op")]
pub enum Op {
    /// A typed value of `subject`.
    Find {
        /// What it is about.
        subject: Subject,
        /// The property read.
        property: String,
        /// Its kind.
        kind: Kind,
    },
    /// The entity `subject`'s `relation` names.
    Follow {
        /// What it is about.
        subject: Subject,
        /// The relation.
        relation: String,
    },
    /// The root subject of `a` or `b` whose value comes first in `by`'s order.
    Compare {
        /// A step with a date or quantity.
        a: usize,
        /// Another, of the same kind.
        b: usize,
        /// The order asked for.
        by: Order,
    },
    /// Whether `a`'s and `b`'s values are the same.
    Same {
        /// A step.
        a: usize,
        /// Another.
        b: usize,
    },
    /// Whether every step holds.
    All {
        /// Yes/no steps.
        of: Vec<usize>,
    },
    /// Whether any step holds.
    Any {
        /// Yes/no steps.
        of: Vec<usize>,
    },
    /// The option the steps pick: with one yes/no step per option, the option whose
    /// verdict holds; with one value step, the option that is that value, else the value
    /// itself ("neither").
    Pick {
        /// The options.
        options: Vec<String>,
        /// The steps.
        of: Vec<usize>,
    },
    /// How many items a list step holds.
    Count {
        /// A list step.
        of: usize,
    },
    /// The items both list steps hold.
    Intersect {
        /// A list step.
        a: usize,
        /// Another.
        b: usize,
    },
}

/// A typed program: steps whose references all point back, the last step's value the
/// answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Program {
    /// The steps.
    pub steps: Vec<Op>,
}

/// What a step yields, known before it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Yields {
    /// A value of this kind.
    Kind(Kind),
    /// One of the program's options or subjects (a name).
    Name,
}

impl Yields {
    fn kind(self) -> Kind {
        match self {
            Yields::Kind(k) => k,
            Yields::Name => Kind::Text,
        }
    }
}

impl Op {
    /// The op's name as the planner writes it.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Find { .. } => "find",
            Op::Follow { .. } => "follow",
            Op::Compare { .. } => "compare",
            Op::Same { .. } => "same",
            Op::All { .. } => "all",
            Op::Any { .. } => "any",
            Op::Pick { .. } => "pick",
            Op::Count { .. } => "count",
            Op::Intersect { .. } => "intersect",
        }
    }

    /// The op as one line: `find("Jaws", "release date", date)`, `compare(#1, #2,
    /// earlier)`.
    pub fn display(&self) -> String {
        let subject = |s: &Subject| match s {
            Subject::Named(n) => format!("{n:?}"),
            Subject::Step(i) => format!("#{}", i + 1),
        };
        let refs = |v: &[usize]| {
            v.iter()
                .map(|i| format!("#{}", i + 1))
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self {
            Op::Find {
                subject: s,
                property,
                kind,
            } => format!("find({}, {property:?}, {})", subject(s), kind.as_str()),
            Op::Follow {
                subject: s,
                relation,
            } => format!("follow({}, {relation:?})", subject(s)),
            Op::Compare { a, b, by } => {
                format!("compare(#{}, #{}, {by:?})", a + 1, b + 1).to_lowercase()
            }
            Op::Same { a, b } => format!("same(#{}, #{})", a + 1, b + 1),
            Op::All { of } => format!("all({})", refs(of)),
            Op::Any { of } => format!("any({})", refs(of)),
            Op::Pick { options, of } => format!("pick({options:?}, {})", refs(of)),
            Op::Count { of } => format!("count(#{})", of + 1),
            Op::Intersect { a, b } => format!("intersect(#{}, #{})", a + 1, b + 1),
        }
    }
}

/// Why a raw program is not a program.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("step {step}: {reason}")]
pub struct Invalid {
    /// The step, from 1 (0: the program as a whole).
    pub step: usize,
    /// What is wrong.
    pub reason: String,
}

fn invalid(step: usize, reason: impl Into<String>) -> Invalid {
    Invalid {
        step: step + 1,
        reason: reason.into(),
    }
}

impl RawProgram {
    /// The typed program, or the first step that is not well formed: a reference to a
    /// step that is not earlier, an op given values of kinds it does not work on, a
    /// missing field.
    pub fn validate(&self) -> Result<Program, Invalid> {
        if self.steps.is_empty() {
            return Err(Invalid {
                step: 0,
                reason: "no steps".into(),
            });
        }
        if self.steps.len() > MAX_STEPS {
            return Err(Invalid {
                step: 0,
                reason: format!("{} steps, over {MAX_STEPS}", self.steps.len()),
            });
        }
        let mut yields: Vec<Yields> = Vec::new();
        let mut steps = Vec::new();
        for (i, raw) in self.steps.iter().enumerate() {
            let reference = |text: &str| -> Result<usize, Invalid> {
                let n: usize =
                    text.trim().trim_start_matches('#').parse().map_err(|_| {
                        invalid(i, format!("{text:?} is not a step reference like #1"))
                    })?;
                if n == 0 || n > i {
                    return Err(invalid(i, format!("#{n} is not an earlier step")));
                }
                Ok(n - 1)
            };
            let refs = |min: usize| -> Result<Vec<usize>, Invalid> {
                let r = raw
                    .args
                    .iter()
                    .map(|a| reference(a))
                    .collect::<Result<Vec<_>, _>>()?;
                if r.len() < min {
                    return Err(invalid(
                        i,
                        format!("{:?} needs {min} step references", raw.op),
                    ));
                }
                Ok(r)
            };
            let subject = || -> Result<Subject, Invalid> {
                let s = raw.subject.trim();
                if s.is_empty() {
                    return Err(invalid(i, "no subject"));
                }
                if s.starts_with('#') {
                    let r = reference(s)?;
                    if !yields[r].kind().is_entity() {
                        return Err(invalid(
                            i,
                            format!(
                                "#{} is a {}, not a thing to ask about",
                                r + 1,
                                yields[r].kind().as_str()
                            ),
                        ));
                    }
                    Ok(Subject::Step(r))
                } else {
                    Ok(Subject::Named(s.to_string()))
                }
            };
            let property = || -> Result<String, Invalid> {
                let p = raw.property.trim();
                if p.is_empty() {
                    Err(invalid(i, "no property"))
                } else {
                    Ok(p.to_string())
                }
            };
            let of_kind = |r: usize, want: &[Kind], what: &str| -> Result<(), Invalid> {
                if want.contains(&yields[r].kind()) {
                    Ok(())
                } else {
                    Err(invalid(
                        i,
                        format!("#{} is a {}, {what}", r + 1, yields[r].kind().as_str()),
                    ))
                }
            };
            let (op, y) = match raw.op {
                OpName::Find => {
                    let kind = raw.kind.unwrap_or(Kind::Text);
                    let op = Op::Find {
                        subject: subject()?,
                        property: property()?,
                        kind,
                    };
                    (op, Yields::Kind(kind))
                }
                OpName::Follow => (
                    Op::Follow {
                        subject: subject()?,
                        relation: property()?,
                    },
                    Yields::Kind(Kind::Text),
                ),
                OpName::Compare => {
                    let r = refs(2)?;
                    let by = raw.by.ok_or_else(|| invalid(i, "compare needs `by`"))?;
                    let kind = yields[r[0]].kind();
                    if !kind.is_ordered() || yields[r[1]].kind() != kind {
                        return Err(invalid(
                            i,
                            format!(
                                "compare needs two dates or two quantities, not a {} and a {}",
                                kind.as_str(),
                                yields[r[1]].kind().as_str()
                            ),
                        ));
                    }
                    let dated = matches!(by, Order::Earlier | Order::Later);
                    if dated != (kind == Kind::Date) {
                        return Err(invalid(
                            i,
                            format!("{by:?} does not order a {}", kind.as_str()).to_lowercase(),
                        ));
                    }
                    (
                        Op::Compare {
                            a: r[0],
                            b: r[1],
                            by,
                        },
                        Yields::Name,
                    )
                }
                OpName::Same => {
                    let r = refs(2)?;
                    (Op::Same { a: r[0], b: r[1] }, Yields::Kind(Kind::YesNo))
                }
                OpName::All | OpName::Any => {
                    let r = refs(1)?;
                    for &x in &r {
                        of_kind(x, &[Kind::YesNo], "not a yes/no step")?;
                    }
                    let op = if raw.op == OpName::All {
                        Op::All { of: r }
                    } else {
                        Op::Any { of: r }
                    };
                    (op, Yields::Kind(Kind::YesNo))
                }
                OpName::Pick => {
                    let r = refs(1)?;
                    let options: Vec<String> = raw
                        .options
                        .iter()
                        .map(|o| o.trim().to_string())
                        .filter(|o| !o.is_empty())
                        .collect();
                    if options.len() < 2 {
                        return Err(invalid(i, "pick needs two options"));
                    }
                    let verdicts = r.iter().all(|&x| yields[x].kind() == Kind::YesNo);
                    if !(verdicts && r.len() == options.len()) && r.len() != 1 {
                        return Err(invalid(
                            i,
                            "pick needs one yes/no step per option, or one value step",
                        ));
                    }
                    (Op::Pick { options, of: r }, Yields::Name)
                }
                OpName::Count => {
                    let r = refs(1)?;
                    of_kind(r[0], &[Kind::List], "not a list")?;
                    (Op::Count { of: r[0] }, Yields::Kind(Kind::Quantity))
                }
                OpName::Intersect => {
                    let r = refs(2)?;
                    for &x in &r[..2] {
                        of_kind(
                            x,
                            &[Kind::List, Kind::Text, Kind::Person, Kind::Place],
                            "not a list",
                        )?;
                    }
                    (Op::Intersect { a: r[0], b: r[1] }, Yields::Kind(Kind::List))
                }
            };
            steps.push(op);
            yields.push(y);
        }
        Ok(Program { steps })
    }
}

impl Program {
    /// Whether the program does more than the write would: several steps, or a yes/no
    /// read (decided in code, negation included). A single `find` or `follow` of a name or
    /// a value is the question asked again, which the written answer already is.
    pub fn reasons(&self) -> bool {
        self.steps.len() > 1
            || matches!(
                self.steps.first(),
                Some(Op::Find {
                    kind: Kind::YesNo,
                    ..
                })
            )
    }

    /// The things the question names that the program reads about: the named subjects of
    /// its `find` and `follow` steps, each once, in order.
    pub fn named_subjects(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for op in &self.steps {
            if let Op::Find {
                subject: Subject::Named(n),
                ..
            }
            | Op::Follow {
                subject: Subject::Named(n),
                ..
            } = op
                && !out.contains(n)
            {
                out.push(n.clone());
            }
        }
        out
    }

    /// The kind of value the program answers with: its last step's.
    pub fn answer_kind(&self) -> Kind {
        match self.steps.last() {
            Some(Op::Find { kind, .. }) => *kind,
            Some(Op::Same { .. } | Op::All { .. } | Op::Any { .. }) => Kind::YesNo,
            Some(Op::Count { .. }) => Kind::Quantity,
            Some(Op::Intersect { .. }) => Kind::List,
            Some(Op::Follow { .. } | Op::Compare { .. } | Op::Pick { .. }) | None => Kind::Text,
        }
    }

    /// Whether the program answers in the form the question asks for: a verdict for a
    /// yes/no question (a comparison answers one: whether the first named wins), a date for
    /// "when", a number for "how many", and no verdict otherwise. Checked before the
    /// program runs, so a plan that misread the question ("when did the city become a
    /// country?" planned as a comparison of two things) costs no reads.
    pub fn fits(&self, form: &AnswerForm) -> Result<(), Invalid> {
        let kind = self.answer_kind();
        let compares = matches!(self.steps.last(), Some(Op::Compare { .. }));
        let fits = match form {
            AnswerForm::YesNo => kind == Kind::YesNo || compares,
            AnswerForm::Date => kind == Kind::Date,
            AnswerForm::Number => kind == Kind::Quantity,
            AnswerForm::Name => !matches!(kind, Kind::YesNo | Kind::Date),
            AnswerForm::Choice(_) | AnswerForm::Free => kind != Kind::YesNo,
        };
        if fits {
            Ok(())
        } else {
            Err(Invalid {
                step: self.steps.len(),
                reason: format!(
                    "the program answers with a {}; the question asks for {}",
                    if compares { "name" } else { kind.as_str() },
                    match form {
                        AnswerForm::YesNo => "yes or no",
                        AnswerForm::Date => "a date",
                        AnswerForm::Number => "a number",
                        AnswerForm::Name => "a name",
                        AnswerForm::Choice(_) => "one of its options",
                        AnswerForm::Free => "a phrase",
                    }
                ),
            })
        }
    }

    /// The steps as lines, `#1 = find(...)`.
    pub fn display(&self) -> String {
        self.steps
            .iter()
            .enumerate()
            .map(|(i, s)| format!("#{} = {}", i + 1, s.display()))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(json: serde_json::Value) -> RawProgram {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn a_comparison_program_types_its_steps() {
        let p = raw(serde_json::json!({"steps": [
            {"do": "find", "of": "Velmora", "read": "release date", "type": "date", "with": [], "wins": null, "versus": []},
            {"do": "find", "of": "Quill Lake", "read": "release date", "type": "date", "with": [], "wins": null, "versus": []},
            {"do": "compare", "of": "", "read": "", "type": null, "with": ["#1", "#2"], "wins": "earlier", "versus": []}
        ]}))
        .validate()
        .unwrap();
        assert_eq!(p.steps.len(), 3);
        assert_eq!(
            p.display(),
            "#1 = find(\"Velmora\", \"release date\", date)\n#2 = find(\"Quill Lake\", \"release date\", date)\n#3 = compare(#1, #2, earlier)"
        );
    }

    #[test]
    fn references_forward_and_kinds_that_do_not_fit_are_refused() {
        let forward = raw(serde_json::json!({"steps": [
            {"do": "compare", "with": ["#1", "#2"], "wins": "earlier"}
        ]}));
        assert_eq!(forward.validate().unwrap_err().step, 1);
        let names = raw(serde_json::json!({"steps": [
            {"do": "follow", "of": "Velmora", "read": "director"},
            {"do": "follow", "of": "Quill Lake", "read": "director"},
            {"do": "compare", "with": ["#1", "#2"], "wins": "earlier"}
        ]}));
        let e = names.validate().unwrap_err();
        assert_eq!(e.step, 3);
        assert!(e.reason.contains("two dates or two quantities"), "{e}");
        let date_subject = raw(serde_json::json!({"steps": [
            {"do": "find", "of": "Velmora", "read": "release date", "type": "date"},
            {"do": "find", "of": "#1", "read": "director", "type": "person"}
        ]}));
        assert!(date_subject.validate().is_err());
        let one_option = raw(serde_json::json!({"steps": [
            {"do": "find", "of": "the analytics team", "read": "database", "type": "text"},
            {"do": "pick", "with": ["#1"], "versus": ["Postgres"]}
        ]}));
        assert!(one_option.validate().is_err());
    }

    #[test]
    fn a_chain_refers_to_the_entity_an_earlier_step_found() {
        let p = raw(serde_json::json!({"steps": [
            {"do": "follow", "of": "Velmora", "read": "director"},
            {"do": "find", "of": "#1", "read": "place of birth", "type": "place"}
        ]}))
        .validate()
        .unwrap();
        assert_eq!(
            p.steps[1],
            Op::Find {
                subject: Subject::Step(0),
                property: "place of birth".into(),
                kind: Kind::Place
            }
        );
        assert!(p.reasons());
    }
}
