//! The planner: the question in, a [`Plan`] out through the JSON grammar, compiled into the
//! step program ([`RawProgram`]) that [`RawProgram::validate`] types and the executor runs.
//!
//! The model fills fixed slots rather than writing steps: the things the question is about,
//! the relations followed from each, how their facts combine, the options, the fact read and
//! its kind. Asked for a free list of steps, the 1.5B model wrote one `find` for 7 of 12
//! two-hop comparisons and stopped (docs/results/program.md); slots it fills one by one, and
//! code turns them into steps, so a comparison over two chains is ten tokens of the model's
//! and five steps of the program. Every program of the step language that a question of the
//! three data sets' tuning halves, the reworded ones or the man-page set needed is one plan:
//! each subject's chain of relations, one read at its end, one op over the subjects' values.
//!
//! The examples use invented things and cover every way to combine once, so the model learns
//! the slots, not one benchmark's questions. The prompt holds no sources: the same prefix
//! (system prompt and examples) comes first in every question's plan, so a local model can
//! keep it evaluated, and the question comes last.

use super::{Invalid, Kind, OpName, Order, RawProgram, RawStep};
use crate::prompts::SYSTEM_CLOSED;
use crate::text::content_terms;
use metarag_core::{ChatRequest, Message, OutputSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How a plan's facts combine into the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Combine {
    /// One subject: its fact (or the chain's last entity) is the answer.
    None,
    /// Which subject's date is earlier.
    Earlier,
    /// Which subject's date is later.
    Later,
    /// Which subject's quantity is larger.
    More,
    /// Which subject's quantity is smaller.
    Less,
    /// Whether two subjects' values are the same.
    Same,
    /// Whether the statement holds for every subject.
    All,
    /// Whether it holds for any subject.
    Any,
    /// Which option: the subject the statement holds for, or the option one subject's
    /// value is.
    Pick,
    /// How many items one subject's list holds.
    Count,
    /// The items two subjects' lists share.
    Intersect,
}

impl Combine {
    /// How many subjects it combines: exactly one or two, or any number from one (`None`).
    pub fn subjects(self) -> Option<usize> {
        match self {
            Combine::None | Combine::Count => Some(1),
            Combine::Earlier
            | Combine::Later
            | Combine::More
            | Combine::Less
            | Combine::Same
            | Combine::Intersect => Some(2),
            Combine::All | Combine::Any | Combine::Pick => None,
        }
    }
}

/// A question's program in slots, as the model writes it. The JSON keys sort in the order
/// the plan is thought out (the grammar a local backend builds from the schema asks for the
/// keys in sorted order): what the question is about, the chain from it, how the answer
/// combines, the options, the fact, its kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Plan {
    /// The things the question names and asks about, as it writes them: one, or the ones
    /// it compares or combines.
    #[schemars(length(min = 1, max = 3))]
    pub about: Vec<String>,
    /// The relations followed from each of them, in order, to reach the thing the fact is
    /// about ("founder", then "mother"); empty when the fact is about them.
    #[serde(default)]
    #[schemars(length(max = 2))]
    pub chain: Vec<String>,
    /// How the facts combine into the answer.
    pub combine: Combine,
    /// `pick`: the options the question offers; empty otherwise.
    #[serde(default)]
    #[schemars(length(max = 3))]
    pub options: Vec<String>,
    /// The fact read at the chain's end ("date of birth", "deprecated"); empty when the
    /// chain's last entity is the answer. Short in the grammar (a small model otherwise
    /// writes a sentence until the token limit).
    #[serde(default)]
    #[schemars(length(max = 48))]
    pub read: String,
    /// The fact's kind. Where `combine` needs one kind (a date for earlier, a quantity
    /// for more, yes/no for all, a list for intersect), that kind is used.
    #[serde(rename = "type")]
    pub kind: Kind,
}

impl Plan {
    /// The plan with the slips a small model makes mended, each one that would otherwise
    /// leave the plan invalid or read a fact twice; the slots are otherwise as written:
    /// - a relation written among the subjects as well as in the chain, or among the
    ///   subjects only, where the way they combine takes fewer subjects
    ///   (`about: ["Quarry Bells", "director"]`, one subject's fact asked): it is a
    ///   relation, so it moves to the chain's front. A relation is told from a name by
    ///   having no capital letter: names are written capitalized, relations are not;
    /// - a name the question writes with a comma ("Anna Veltz, Countess of Orm") split
    ///   into two subjects where one is asked about: joined again;
    /// - two subjects of a fact about one thing, written a few words apart and not
    ///   coordinated ("Ivo" and "Salt Road" in "the actor who plays Ivo in Salt Road"):
    ///   that stretch of the question becomes the one subject;
    /// - a yes/no question offering two things as its options, planned as a verdict over
    ///   both ("same", "all", "any") though it writes no such word: which of them;
    /// - a yes/no question about several things planned with a combine that answers no
    ///   yes/no (none, pick, count, intersect): the question's "same", "both" or "either"
    ///   says which one does ("Is A or B ...?": which of them);
    /// - a question that is not yes/no asking what two things "share" or "both" do: the
    ///   intersection of their values;
    /// - relations written before the subject but listed in reading order ("the spouse of
    ///   the actor who played Ivo"): turned round, the nearest relation first;
    /// - a chain whose last relation is the fact read ("nationality", then "nationality of
    ///   the husband"): the relation goes, the read stays;
    /// - a fact read through a relation in the possessive ("director's birth date"): the
    ///   relation joins the chain's end, the rest is the fact;
    /// - an "A or B" question planned about one thing: options that are values are picked
    ///   among in code (a value that is neither is answered as itself), options that are
    ///   things, where the plan compares, become the things compared;
    /// - a comparison of one subject ("earlier" over the one thing asked about, written
    ///   when the fact is a date): nothing to compare, so its fact is the answer.
    pub fn repaired(mut self, question: &str) -> Plan {
        // A setting the question writes as one ("--maxwait", "StartLimit=",
        // "+limit") names a value of its subject, not a thing to follow to: a chain
        // through it reads the setting's page as if it were an entity's.
        let settings: Vec<String> = self
            .chain
            .iter()
            .filter(|r| written_as_setting(question, r))
            .cloned()
            .collect();
        self.chain.retain(|r| !settings.contains(r));
        if self.read.trim().is_empty()
            && let Some(first) = settings.first()
        {
            self.read = first.clone();
        }
        let takes = self.combine.subjects().unwrap_or(usize::MAX);
        let key = |s: &str| s.trim().to_lowercase();
        let chain: Vec<String> = self.chain.iter().map(|c| key(c)).collect();
        // The subjects the question names that are relations of the chain.
        self.about.retain(|a| !chain.contains(&key(a)));
        if self.about.len() > takes {
            let (names, relations): (Vec<String>, Vec<String>) = self
                .about
                .iter()
                .cloned()
                .partition(|a| a.chars().any(char::is_uppercase));
            if !names.is_empty() && !relations.is_empty() {
                self.about = names;
                let mut chain = relations;
                chain.append(&mut self.chain);
                self.chain = chain;
            }
        }
        // Neighbours the question writes joined by a comma are one name.
        let mut i = 0;
        while self.about.len() > takes && i + 1 < self.about.len() {
            let joined = format!("{}, {}", self.about[i].trim(), self.about[i + 1].trim());
            if question.contains(&joined) {
                self.about[i] = joined;
                self.about.remove(i + 1);
            } else {
                i += 1;
            }
        }
        // One thing named by two ("the character Ivo plays in Salt Road", "the timeout of
        // a unit under the stock configuration"): the slots have no relation with two
        // arguments, so the model writes both as subjects of a fact about one. Where the
        // question writes them a few words apart, not coordinated, that stretch of the
        // question is the subject, and a search for it finds what holds both.
        if self.about.len() > takes
            && takes == 1
            && let Some(span) = one_thing(question, &self.about)
        {
            self.about = vec![span];
        }
        // A yes/no question about several things, planned with a combine that does not
        // answer one (none, pick, count, intersect): the question's own word says how
        // their values combine ("Do A and B send the same signal?", "Are both A and B
        // deprecated?", "Does either A or B ...?").
        // A verdict over both ("same", "all", "any") where the question names no such
        // word and offers the two things as its options ("Is Orm or Velmora a county
        // town?") asks which of them, as a plan with no combine does.
        let verdict = matches!(self.combine, Combine::Same | Combine::All | Combine::Any);
        if self.about.len() > 1
            && (verdict
                || matches!(
                    self.combine,
                    Combine::None | Combine::Pick | Combine::Count | Combine::Intersect
                ))
            && crate::text::is_yes_no_question(question)
            && let Some(combine) = yes_no_combine(question, self.about.len())
            && (!verdict || (combine == Combine::Pick && self.offered_as_options(question)))
        {
            self.combine = combine;
            // Whether two values agree is decided in code: each read is the value itself
            // ("signal", not a verdict on "same signal").
            if combine == Combine::Same {
                self.read = self
                    .read
                    .split_whitespace()
                    .filter(|w| !w.eq_ignore_ascii_case("same"))
                    .collect::<Vec<_>>()
                    .join(" ");
                if self.kind == Kind::YesNo {
                    self.kind = Kind::Text;
                }
            }
        }
        // "Alfred Gell and Edmund Leach shared what nationality?", "Which prizes did A and
        // B both win?": not a yes/no question, two things, one fact of each, and the
        // question asks what they have in common: the items both values hold.
        if self.about.len() == 2
            && self.combine == Combine::None
            && !crate::text::is_yes_no_question(question)
            && crate::text::tokens(question).iter().any(|t| {
                matches!(
                    t.as_str(),
                    "both" | "share" | "shared" | "shares" | "common"
                )
            })
        {
            self.combine = Combine::Intersect;
            self.kind = Kind::List;
        }
        // "The spouse of the actor who played Ivo": relations written before the subject
        // apply from the nearest one out (the actor first, then the spouse). A chain
        // listed in the question's reading order instead is turned round.
        if let Some(order) = applied_order(question, &self.about, &self.chain) {
            self.chain = order;
        }
        if let Some((relation, fact)) = self.read.split_once("'s ")
            && !relation.trim().is_empty()
            && !relation.chars().any(char::is_uppercase)
            && !relation.contains(' ')
            && !fact.trim().is_empty()
        {
            let (relation, fact) = (relation.trim().to_string(), fact.trim().to_string());
            if self.chain.last().map(|c| key(c)) != Some(key(&relation)) {
                self.chain.push(relation);
            }
            self.read = fact;
        }
        // An "A or B" question planned about one thing ("Does xargs start one process per
        // CPU or as many as it can?", "In dig, which option has the bigger default,
        // +tries or +retry?"): options that are values (they hold a number) are checked
        // against the value read in code (`pick` with one value step), so a value that
        // is neither option is answered as itself rather than forced onto the nearer
        // one; options that are things, where the plan compares, are the things compared.
        if self.about.len() == 1
            && self.kind != Kind::YesNo
            && let Some(offered) = crate::text::option_list(question)
        {
            let compares = matches!(
                self.combine,
                Combine::Earlier | Combine::Later | Combine::More | Combine::Less
            );
            // A number in any option ("after 10", "a minute", "four spaces").
            let values = offered
                .iter()
                .any(|o| super::values::option_quantity(o).is_some());
            // `compare` orders two things: a list of three things to order is left as
            // planned.
            if compares && !values {
                if offered.len() == 2 {
                    self.about = offered;
                }
            } else if compares || self.combine == Combine::None {
                self.combine = Combine::Pick;
                self.options = offered;
            }
        }
        if self.about.len() == 1
            && matches!(
                self.combine,
                Combine::Earlier | Combine::Later | Combine::More | Combine::Less
            )
        {
            self.combine = Combine::None;
        }
        if let Some(last) = self.chain.last()
            && !self.read.trim().is_empty()
            && same_fact(last, &self.read)
        {
            self.chain.pop();
        }
        // Which of two dates a question wants is in its own words: the older, the first,
        // the earliest is the earlier date (an older film was released earlier, an older
        // person born earlier); the younger, the newest, the most recent the later. A
        // small planner writes the other order about as often as not ("later" for the
        // bigger age, "earlier" for "most recently"); a question with words of both
        // kinds ("whose first album came out later") keeps the planner's order.
        if matches!(self.combine, Combine::Earlier | Combine::Later)
            && let Some(earlier) = asks_earlier(question)
        {
            self.combine = if earlier {
                Combine::Earlier
            } else {
                Combine::Later
            };
        }
        // A question that negates its own predicate ("Is it right that rm won't delete
        // directories?") asks whether the negation holds, and a planner writes the
        // positive read ("delete directories"): the read's property carries the
        // negation, so that a source's "does not remove directories" answers yes.
        let yes_no_read = self.kind == Kind::YesNo
            || matches!(self.combine, Combine::All | Combine::Any)
            || (self.combine == Combine::Pick && self.about.len() > 1);
        if yes_no_read && negates_read(question, &self.read) {
            self.read = format!("not {}", self.read.trim());
        }
        self
    }

    /// Whether the question's two options are the plan's two subjects (any case).
    fn offered_as_options(&self, question: &str) -> bool {
        let Some((a, b)) = crate::text::options(question) else {
            return false;
        };
        let key = |s: &str| s.trim().to_lowercase();
        let about: Vec<String> = self.about.iter().map(|s| key(s)).collect();
        about.len() == 2 && about.contains(&key(&a)) && about.contains(&key(&b))
    }

    /// The step program: for each subject, a `follow` per relation of the chain and a
    /// `find` of the fact at its end; then the op that combines the subjects' values.
    /// Refused when the number of subjects does not fit the way they combine; whether the
    /// steps type is [`RawProgram::validate`]'s to say.
    pub fn compile(&self) -> Result<RawProgram, Invalid> {
        let n = self.about.len();
        if self.combine.subjects().map_or(n == 0, |want| n != want) {
            return Err(Invalid {
                step: 0,
                reason: format!(
                    "{n} subject{} for {}",
                    if n == 1 { "" } else { "s" },
                    serde_json::to_string(&self.combine).unwrap_or_default()
                ),
            });
        }
        let kind = match self.combine {
            Combine::Earlier | Combine::Later => Kind::Date,
            Combine::More | Combine::Less => Kind::Quantity,
            Combine::All | Combine::Any => Kind::YesNo,
            Combine::Count | Combine::Intersect => Kind::List,
            // Options that are the subjects themselves are picked by a verdict on each.
            Combine::Pick if self.about.len() > 1 => Kind::YesNo,
            Combine::Pick | Combine::None | Combine::Same => self.kind,
        };
        let step = |op: OpName| RawStep {
            op,
            subject: String::new(),
            property: String::new(),
            kind: None,
            args: Vec::new(),
            by: None,
            options: Vec::new(),
        };
        let mut steps: Vec<RawStep> = Vec::new();
        let mut leaves: Vec<String> = Vec::new();
        let read = self.read.trim();
        for name in &self.about {
            let before = steps.len();
            let mut of = name.trim().to_string();
            for relation in self.chain.iter().filter(|r| !r.trim().is_empty()) {
                steps.push(RawStep {
                    subject: of,
                    property: relation.trim().to_string(),
                    ..step(OpName::Follow)
                });
                of = format!("#{}", steps.len());
            }
            if !read.is_empty() || steps.len() == before {
                // With neither a chain nor a fact, the find has no property and does not
                // type: the plan asked nothing about this subject.
                steps.push(RawStep {
                    subject: of,
                    property: read.to_string(),
                    kind: Some(kind),
                    ..step(OpName::Find)
                });
            }
            leaves.push(format!("#{}", steps.len()));
        }
        let order = match self.combine {
            Combine::Earlier => Some(Order::Earlier),
            Combine::Later => Some(Order::Later),
            Combine::More => Some(Order::More),
            Combine::Less => Some(Order::Less),
            _ => None,
        };
        let op = match self.combine {
            Combine::None => None,
            Combine::Earlier | Combine::Later | Combine::More | Combine::Less => {
                Some(OpName::Compare)
            }
            Combine::Same => Some(OpName::Same),
            Combine::All => Some(OpName::All),
            Combine::Any => Some(OpName::Any),
            Combine::Pick => Some(OpName::Pick),
            Combine::Count => Some(OpName::Count),
            Combine::Intersect => Some(OpName::Intersect),
        };
        if let Some(op) = op {
            let options = if op == OpName::Pick && self.options.iter().all(|o| o.trim().is_empty())
            {
                self.about.clone()
            } else {
                self.options.clone()
            };
            steps.push(RawStep {
                args: leaves,
                by: order,
                options: if op == OpName::Pick {
                    options
                } else {
                    Vec::new()
                },
                ..step(op)
            });
        }
        Ok(RawProgram { steps })
    }
}

/// The instructions and examples every plan starts with.
pub const PLAN_INSTRUCTIONS: &str = r##"Plan how to answer the question from documents by filling these fields:
- "about": the things the question names and asks about, as it writes them: one, or each of the ones it compares or combines.
- "chain": the relations to follow from each of them, in order, to reach the thing the fact is about: ["author"] for a book's author, ["husband", "mother"] for the mother of someone's husband; [] when the fact is about them.
- "combine": how their facts give the answer: "none" (one thing asked about), "earlier" or "later" (dates: older means earlier, younger means later), "more" or "less" (numbers), "same", "all" or "any" (whether a statement holds for all or any of them), "pick" (which of the question's options), "count" (how many items), "intersect" (what two lists share).
- "options": for "pick", the options the question offers; otherwise [].
- "read": the fact to read at the end of the chain: a date, a number, a place, a name, or a statement that holds or not; "" when the chain's last entity is itself the answer.
- "type": the fact's kind: person, place, date, quantity, yes_no, text or list.
Use the names as the question writes them.

Examples:
Q: Which was released first, Velmora or The Quill Lake?
{"about": ["Velmora", "The Quill Lake"], "chain": [], "combine": "earlier", "options": [], "read": "release date", "type": "date"}
Q: In which city was the founder of Tarnwick Press born?
{"about": ["Tarnwick Press"], "chain": ["founder"], "combine": "none", "options": [], "read": "city of birth", "type": "place"}
Q: Are the Orlo gateway and the Brandt queue both deprecated?
{"about": ["Orlo gateway", "Brandt queue"], "chain": [], "combine": "all", "options": [], "read": "deprecated", "type": "yes_no"}
Q: Does the Hessel service cache with Redis or with Memcached?
{"about": ["Hessel service"], "chain": [], "combine": "pick", "options": ["Redis", "Memcached"], "read": "cache it uses", "type": "text"}
Q: Of the novels Salt Road and The Amber Key, which one's author died earlier?
{"about": ["Salt Road", "The Amber Key"], "chain": ["author"], "combine": "earlier", "options": [], "read": "date of death", "type": "date"}
Q: Who is younger, Ansel Brody or Kip Moraine?
{"about": ["Ansel Brody", "Kip Moraine"], "chain": [], "combine": "later", "options": [], "read": "date of birth", "type": "date"}
Q: Is the Karn client's default timeout longer than the Vell client's?
{"about": ["Karn client", "Vell client"], "chain": [], "combine": "more", "options": [], "read": "default timeout", "type": "quantity"}
Q: What instrument do Pell Arno and Mira Sand both play?
{"about": ["Pell Arno", "Mira Sand"], "chain": [], "combine": "intersect", "options": [], "read": "instruments played", "type": "list"}
Q: Were the architects of Dorran Hall and the Kessel Tower citizens of one country?
{"about": ["Dorran Hall", "Kessel Tower"], "chain": ["architect"], "combine": "same", "options": [], "read": "nationality", "type": "place"}
Q: Which of the two bands, Frostgard and Kelpie Lane, formed in Norway?
{"about": ["Frostgard", "Kelpie Lane"], "chain": [], "combine": "pick", "options": ["Frostgard", "Kelpie Lane"], "read": "formed in Norway", "type": "yes_no"}
Q: Who was the mother of Queen Elsbet's husband?
{"about": ["Queen Elsbet"], "chain": ["husband", "mother"], "combine": "none", "options": [], "read": "", "type": "person"}
Q: How many languages does the Trell app support?
{"about": ["Trell app"], "chain": [], "combine": "count", "options": [], "read": "languages supported", "type": "list"}
Q: How long is the warranty on the Pexa 3 printer?
{"about": ["Pexa 3 printer"], "chain": [], "combine": "none", "options": [], "read": "warranty length", "type": "quantity"}
"##;

/// Asks for the plan of `question`.
pub fn plan(question: &str) -> ChatRequest {
    // The examples as turns of the conversation, each question the user's and its plan the
    // assistant's: a small model copies the shape of its own earlier replies far more
    // closely than examples inside one message (the 1.5B model, shown step programs
    // inline, wrote one-step programs with names where step references go).
    let (rules, examples) = PLAN_INSTRUCTIONS
        .split_once("\nExamples:\n")
        .unwrap_or((PLAN_INSTRUCTIONS, ""));
    let mut messages = vec![Message::system(format!("{SYSTEM_CLOSED}\n\n{rules}"))];
    let mut lines = examples.lines();
    while let (Some(q), Some(plan)) = (lines.next(), lines.next()) {
        messages.push(Message::user(q.trim_start_matches("Q: ").to_string()));
        messages.push(Message::assistant(plan.to_string()));
    }
    messages.push(Message::user(question.to_string()));
    let mut request = ChatRequest::new(messages);
    // Every field required: a grammar that let the 0.5B model leave one out let it write
    // plans with no fact to read.
    let mut schema = OutputSchema::of::<Plan>();
    if let Some(plan) = schema.schema.as_object_mut() {
        plan.insert(
            "required".into(),
            serde_json::json!(["about", "chain", "combine", "options", "read", "type"]),
        );
    }
    request.schema = Some(schema);
    // The instructions and examples come before every question's plan: a local model keeps
    // them evaluated across the questions (and the calls each one makes in between).
    request.keeping_prefix().max_tokens(160)
}

/// Whether a relation names the fact read: its words are all the read's ("nationality" and
/// "nationality of the husband"), or written as one word ("birthplace" and "place of
/// birth").
fn same_fact(relation: &str, read: &str) -> bool {
    let r = content_terms(relation);
    let f = content_terms(read);
    if r.is_empty() {
        return false;
    }
    if r.iter().all(|w| f.contains(w)) {
        return true;
    }
    let joined: String = relation
        .split_whitespace()
        .collect::<String>()
        .to_lowercase();
    let mut words: Vec<String> = f.into_iter().collect();
    words.sort_by_key(|w| std::cmp::Reverse(w.len()));
    // Every content word of the read inside the one-word relation, and nothing else.
    words.iter().all(|w| joined.contains(w.as_str()))
        && words.iter().map(|w| w.len()).sum::<usize>() == joined.len()
}

/// The chain in the order its relations apply, where the question writes every one of
/// them before every subject ("the spouse of the actor who played Ivo in Salt Road"): the
/// relation nearest the subject applies first, so the chain runs from the last written to
/// the first. `None` when the chain is already in that order, has fewer than two
/// relations, or a relation or subject is not written in the question (a possessive
/// chain, "Ivo's father's birthplace", is written in the order it applies, after the
/// subject, and is left alone).
fn applied_order(question: &str, about: &[String], chain: &[String]) -> Option<Vec<String>> {
    if chain.len() < 2 {
        return None;
    }
    let lower = question.to_lowercase();
    let find = |s: &str| {
        let s = s.trim().to_lowercase();
        (!s.is_empty()).then(|| lower.find(&s)).flatten()
    };
    let subject = about.iter().map(|a| find(a)).collect::<Option<Vec<_>>>()?;
    let first_subject = subject.into_iter().min()?;
    let at = chain.iter().map(|c| find(c)).collect::<Option<Vec<_>>>()?;
    if at.iter().any(|&p| p >= first_subject) {
        return None;
    }
    let mut order: Vec<(usize, String)> = at.into_iter().zip(chain.iter().cloned()).collect();
    order.sort_by_key(|o| std::cmp::Reverse(o.0));
    let order: Vec<String> = order.into_iter().map(|(_, c)| c).collect();
    (order != chain).then_some(order)
}

/// Whether `question` writes `name` as a setting: an option ("--name", "-name", "+name")
/// or an assignment ("name=").
fn written_as_setting(question: &str, name: &str) -> bool {
    let name = name
        .trim()
        .trim_start_matches(['-', '+'])
        .trim_end_matches('=');
    if name.is_empty() || name.contains(char::is_whitespace) {
        return false;
    }
    let (q, name) = (question.to_lowercase(), name.to_lowercase());
    let ends_word = |rest: &str| {
        rest.chars()
            .next()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '-' || c == '_'))
    };
    q.match_indices(name.as_str()).any(|(i, _)| {
        let head = &q[..i];
        let bare = head.trim_end_matches(['-', '+']);
        // "--name" opens a word; "pelt-name" is a hyphenated word.
        let flag = bare.len() < head.len()
            && bare
                .chars()
                .next_back()
                .is_none_or(|c| !c.is_alphanumeric());
        let rest = &q[i + name.len()..];
        (flag && ends_word(rest)) || rest.starts_with('=')
    })
}

/// Whether `question` negates the predicate of `read` where `read` does not: in the
/// question's main clause, a negating word before the first of the read's words ("won't
/// delete directories", "does it not skip blank lines"). A negative auxiliary that opens
/// the question ("Isn't compression on by default?", "Doesn't it retry?") asks about the
/// positive and does not count, nor does a negation in a leading condition ("If I don't
/// pass -u, is the file still there?").
fn negates_read(question: &str, read: &str) -> bool {
    use super::values::{negated, predicate_stems};
    let predicate = predicate_stems(read);
    if predicate.is_empty() || negated(read, &predicate) {
        return false;
    }
    let clause = crate::text::main_clause(question).trim();
    let opening = clause.split_whitespace().next().unwrap_or("");
    let opening = opening.to_lowercase();
    let clause = if opening.ends_with("n't") || opening.ends_with("n\u{2019}t") {
        clause[clause.find(char::is_whitespace).unwrap_or(clause.len())..].trim_start()
    } else {
        clause
    };
    negated(clause, &predicate)
}

/// How a yes/no question over `n` things combines their values, by its own words:
/// "same" (two things) asks whether they agree, "both", "all", "each" or "every" whether
/// it holds for all, "either" or "any" whether for one, and two things written as options
/// ("Is A or B ...?") which of them it holds for; `None` when it says none of these.
fn yes_no_combine(question: &str, n: usize) -> Option<Combine> {
    let words = crate::text::tokens(question);
    let has = |w: &[&str]| words.iter().any(|t| w.contains(&t.as_str()));
    if n == 2 && has(&["same"]) {
        Some(Combine::Same)
    } else if has(&["both", "all", "each", "every"]) {
        Some(Combine::All)
    } else if has(&["either", "any"]) {
        Some(Combine::Any)
    } else if n == 2 && crate::text::options(question).is_some() {
        // "Is Orm or Velmora a county town?" asks which of the two it is.
        Some(Combine::Pick)
    } else {
        None
    }
}

/// The stretch of `question` from the first of `subjects` to the last, where it writes
/// every one of them (any case) and at most four words between neighbours, none of them a
/// coordinator ("and", "or", "versus", a comma), a relative pronoun, a subordinating word
/// ("while", "if") or an auxiliary verb: "Ivo in Salt Road"
/// from "Who plays Ivo in Salt Road?", not "Orm and Velmora" (two things, for a combine
/// that takes two). Quotation marks inside the stretch are dropped.
fn one_thing(question: &str, subjects: &[String]) -> Option<String> {
    let lower = question.to_lowercase();
    let mut spans: Vec<(usize, usize)> = Vec::with_capacity(subjects.len());
    for s in subjects {
        let s = s.trim().to_lowercase();
        if s.is_empty() {
            return None;
        }
        let start = lower.find(&s)?;
        spans.push((start, start + s.len()));
    }
    spans.sort_unstable();
    for w in spans.windows(2) {
        let ((_, end), (start, _)) = (w[0], w[1]);
        if start < end {
            return None;
        }
        let gap = &lower[end..start];
        let words = crate::text::tokens(gap);
        if words.len() > 4
            || gap.contains(',')
            || gap.contains(';')
            || words.iter().any(|t| {
                matches!(
                    t.as_str(),
                    "and" | "or" | "nor" | "versus" | "vs"
                    // A relative clause between them is a chain ("the host of X in the
                    // country that Y's creator is from"), not one thing.
                    | "that" | "which" | "who" | "whom" | "whose" | "where" | "when"
                    // So is a subordinate clause or a finite auxiliary ("history-limit
                    // while tmux is running": a setting and a program, not one thing).
                    | "while" | "if" | "because" | "since" | "unless" | "until" | "after"
                    | "before" | "although" | "though" | "whereas" | "whether"
                ) || crate::text::AUX.contains(&t.as_str())
            })
        {
            return None;
        }
    }
    let (first, last) = (spans.first()?.0, spans.last()?.1);
    // Lower-casing keeps byte offsets for the text questions are written in; where it
    // does not, the question is not cut.
    question
        .get(first..last)
        .filter(|_| lower.len() == question.len())
        .map(|s| s.replace(['"', '“', '”'], "").trim().to_string())
}

/// Whether the question asks for the earlier (`Some(true)`) or the later (`Some(false)`)
/// of two dates, by its own words; `None` when it writes neither or both.
fn asks_earlier(question: &str) -> Option<bool> {
    let words = crate::text::tokens(question);
    let has = |set: &[&str]| words.iter().any(|w| set.contains(&w.as_str()));
    let earlier = [
        "older", "oldest", "elder", "eldest", "first", "earlier", "earliest",
    ];
    let later = [
        "younger", "youngest", "newer", "newest", "later", "latest", "recent", "recently",
    ];
    match (has(&earlier), has(&later)) {
        (true, false) => Some(true),
        (false, true) => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::Op;

    #[test]
    fn the_questions_own_words_set_the_order_of_dates_whatever_the_planner_wrote() {
        use Combine::{Earlier, Later};
        let check = |q: &str, read: &str, planned: Combine, want: Combine| {
            let mut plan = examples().remove(0);
            (plan.combine, plan.read, plan.kind) = (planned, read.into(), Kind::Date);
            assert_eq!(plan.repaired(q).combine, want, "{q}");
        };
        let (birth, opened) = ("date of birth", "opening date");
        let q = "Between Ada Quill and Bo Renn, who is the older one?";
        check(q, birth, Later, Earlier);
        let q = "Which of the two was born first and so is the elder: Ada Quill or Bo Renn?";
        check(q, birth, Later, Earlier);
        check(
            "Ada Quill and Bo Renn: which is the younger person?",
            birth,
            Earlier,
            Later,
        );
        check(
            "Who was born later, Ada Quill or Bo Renn?",
            birth,
            Later,
            Later,
        );
        let q = "Which is older, Ada Quill's bridge or Bo Renn's tower?";
        check(q, "completion date", Later, Earlier);
        let q = "Of Ada Quill's two novels, which one came out most recently?";
        check(q, "publication date", Earlier, Later);
        let q = "Was the Quill lighthouse or the Renn pier the newer structure?";
        check(q, opened, Earlier, Later);
        let q = "Which opened to the public first, the Quill gallery or the Renn museum?";
        check(q, opened, Later, Earlier);
        // Words of both kinds: the planner's order stands.
        let q = "Whose first album came out later, Ada Quill's or Bo Renn's?";
        check(q, "first album's release date", Later, Later);
        check(q, "first album's release date", Earlier, Earlier);
    }

    fn examples() -> Vec<Plan> {
        PLAN_INSTRUCTIONS
            .lines()
            .filter(|l| l.starts_with('{'))
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[test]
    fn every_example_is_a_valid_program_and_every_combine_is_shown() {
        let plans = examples();
        assert_eq!(plans.len(), 13);
        let mut shown = std::collections::BTreeSet::new();
        for p in &plans {
            p.compile().unwrap().validate().unwrap();
            shown.insert(serde_json::to_string(&p.combine).unwrap());
        }
        // Every way to combine but the mirror images of one shown ("less" of "more", "any"
        // of "all").
        for c in [
            "none",
            "earlier",
            "more",
            "same",
            "all",
            "pick",
            "count",
            "intersect",
        ] {
            assert!(shown.contains(&format!("{c:?}")), "{c} is not shown");
        }
    }

    #[test]
    fn an_example_written_out_again_is_the_line_the_model_was_shown() {
        // The examples are shown as assistant turns verbatim: each must be exactly what
        // the grammar lets the model write (every key, in the grammar's order).
        for line in PLAN_INSTRUCTIONS.lines().filter(|l| l.starts_with('{')) {
            let p: Plan = serde_json::from_str(line).unwrap();
            let again = serde_json::to_string(&p).unwrap();
            let spaced = again.replace("\":", "\": ").replace(",\"", ", \"");
            assert_eq!(spaced, line);
        }
    }

    fn plan(json: serde_json::Value) -> Result<crate::program::Program, Invalid> {
        serde_json::from_value::<Plan>(json)
            .unwrap()
            .compile()?
            .validate()
    }

    #[test]
    fn a_comparison_over_chains_compiles_to_follows_finds_and_a_compare() {
        let p = plan(serde_json::json!({"about": ["Salt Road", "The Amber Key"],
            "chain": ["author"], "combine": "earlier", "options": [],
            "read": "date of death", "type": "text"}))
        .unwrap();
        assert_eq!(
            p.display(),
            "#1 = follow(\"Salt Road\", \"author\")\n\
             #2 = find(#1, \"date of death\", date)\n\
             #3 = follow(\"The Amber Key\", \"author\")\n\
             #4 = find(#3, \"date of death\", date)\n\
             #5 = compare(#2, #4, earlier)"
        );
    }

    #[test]
    fn a_chain_to_an_entity_ends_with_the_follow() {
        let p = plan(serde_json::json!({"about": ["Queen Elsbet"],
            "chain": ["husband", "mother"], "combine": "none", "options": [],
            "read": "", "type": "person"}))
        .unwrap();
        assert_eq!(p.steps.len(), 2);
        assert!(matches!(p.steps[1], Op::Follow { .. }));
    }

    #[test]
    fn a_setting_the_question_writes_is_no_relation_to_follow() {
        let repaired = |q: &str, chain: &[&str], read: &str| {
            serde_json::from_value::<Plan>(serde_json::json!({"about": ["pelt"],
                "chain": chain, "combine": "none", "options": [], "read": read,
                "type": "quantity"}))
            .unwrap()
            .repaired(q)
        };
        let p = repaired(
            "With --maxwait not given, how long does pelt back off between retries?",
            &["maxwait"],
            "longest backoff",
        );
        assert!(p.chain.is_empty());
        assert_eq!(p.read, "longest backoff");
        let p = repaired(
            "My unit doesn't set StartLimit=. How many starts does pelt allow?",
            &["StartLimit"],
            "",
        );
        assert!(p.chain.is_empty());
        assert_eq!(p.read, "StartLimit");
        // A relation the question writes as a word stays ("the author of pelt").
        let p = repaired(
            "Where was the author of pelt born?",
            &["author"],
            "birthplace",
        );
        assert_eq!(p.chain, ["author"]);
        assert!(!written_as_setting(
            "Is the pelt-maxwait daemon up?",
            "maxwait"
        ));
    }

    #[test]
    fn a_question_that_negates_its_predicate_reads_the_negation() {
        let repaired = |q: &str, read: &str| {
            serde_json::from_value::<Plan>(serde_json::json!({"about": ["pelt"],
                "chain": [], "combine": "none", "options": [], "read": read,
                "type": "yes_no"}))
            .unwrap()
            .repaired(q)
            .read
        };
        let q = "Is it right that plain pelt, with no flags, won't delete folders?";
        assert_eq!(repaired(q, "delete folders"), "not delete folders");
        let q = "Does pelt not skip blank lines when it merges?";
        assert_eq!(repaired(q, "skip blank lines"), "not skip blank lines");
        // Already negated, or asking about the positive: left alone.
        assert_eq!(repaired(q, "not skip blank lines"), "not skip blank lines");
        let q = "Is it right that pelt won't delete folders?";
        assert_eq!(
            repaired(q, "pelt won't delete folders"),
            "pelt won't delete folders"
        );
        let q = "Isn't compression on by default in pelt?";
        assert_eq!(
            repaired(q, "compression on by default"),
            "compression on by default"
        );
        let q = "If I don't pass -u, does pelt keep the file?";
        assert_eq!(repaired(q, "keep the file"), "keep the file");
        let q = "Does pelt delete folders with no flags?";
        assert_eq!(repaired(q, "delete folders"), "delete folders");
        // A negation on another clause's words, or words the question does not write.
        let q = "Does pelt commit files that I never added?";
        assert_eq!(repaired(q, "commit files"), "commit files");
        let q = "Is it right that pelt won't delete folders?";
        assert_eq!(repaired(q, "remove directories"), "remove directories");
        // A verdict over several things carries it too: "neither ... nor".
        let both = serde_json::from_value::<Plan>(serde_json::json!({
            "about": ["ledger", "relay"], "chain": [], "combine": "all", "options": [],
            "read": "deprecated", "type": "yes_no"}))
        .unwrap()
        .repaired("Is it true that neither the ledger nor the relay is deprecated?");
        assert_eq!(both.read, "not deprecated");
    }

    #[test]
    fn options_that_are_the_subjects_are_picked_by_a_verdict_on_each() {
        let p = plan(serde_json::json!({"about": ["Frostgard", "Kelpie Lane"],
            "chain": [], "combine": "pick", "options": [],
            "read": "formed in Norway", "type": "text"}))
        .unwrap();
        assert_eq!(
            p.steps.last(),
            Some(&Op::Pick {
                options: vec!["Frostgard".into(), "Kelpie Lane".into()],
                of: vec![0, 1]
            })
        );
    }

    #[test]
    fn subjects_that_do_not_fit_the_combine_are_refused() {
        for (about, combine) in [
            (vec!["A", "B"], "none"),
            (vec!["A"], "earlier"),
            (vec!["A", "B", "C"], "same"),
            (vec!["A", "B"], "count"),
        ] {
            let e = plan(
                serde_json::json!({"about": about, "chain": [], "combine": combine,
                "options": [], "read": "x", "type": "text"}),
            )
            .unwrap_err();
            assert_eq!(e.step, 0, "{e}");
        }
        // Nothing to read and no chain: the find has no property.
        assert!(
            plan(
                serde_json::json!({"about": ["A"], "chain": [], "combine": "none",
                "options": [], "read": "", "type": "text"})
            )
            .is_err()
        );
    }

    fn repaired(json: serde_json::Value, question: &str) -> Plan {
        serde_json::from_value::<Plan>(json)
            .unwrap()
            .repaired(question)
    }

    #[test]
    fn a_relation_written_as_a_subject_moves_to_the_chain() {
        let q = "Where does the director of Quarry Bells work?";
        let p = repaired(
            serde_json::json!({"about": ["Quarry Bells", "director"], "chain": ["employer"],
                "combine": "none", "options": [], "read": "", "type": "text"}),
            q,
        );
        assert_eq!(p.about, ["Quarry Bells"]);
        assert_eq!(p.chain, ["director", "employer"]);
        // Written in both, it is dropped from the subjects.
        let p = repaired(
            serde_json::json!({"about": ["Quarry Bells", "director"], "chain": ["director"],
                "combine": "none", "options": [], "read": "birthplace", "type": "place"}),
            q,
        );
        assert_eq!((p.about.len(), p.chain.len()), (1, 1));
        // Lower-case subjects of a combine that takes them all stay.
        let p = repaired(
            serde_json::json!({"about": ["billing service", "search service"], "chain": [],
                "combine": "all", "options": [], "read": "deprecated", "type": "yes_no"}),
            "Are the billing service and the search service both deprecated?",
        );
        assert_eq!(p.about.len(), 2);
    }

    #[test]
    fn a_name_with_a_comma_is_joined_again() {
        let p = repaired(
            serde_json::json!({"about": ["Anna Veltz", "Countess of Orm"], "chain": ["son"],
                "combine": "none", "options": [], "read": "", "type": "person"}),
            "Who was the son of Anna Veltz, Countess of Orm?",
        );
        assert_eq!(p.about, ["Anna Veltz, Countess of Orm"]);
        p.compile().unwrap().validate().unwrap();
    }

    #[test]
    fn two_names_of_one_thing_are_one_subject() {
        let q = "Who is married to the actor who plays Ivo in Salt Road?";
        let p = repaired(
            serde_json::json!({"about": ["Salt Road", "Ivo"], "chain": ["actor", "spouse"],
                "combine": "none", "options": [], "read": "", "type": "person"}),
            q,
        );
        assert_eq!(p.about, ["Ivo in Salt Road"]);
        let program = p.compile().unwrap().validate().unwrap();
        assert_eq!(program.steps.len(), 2);
        // Coordinated, far apart or in two clauses, they are two things: left for the check
        // to refuse.
        for (q, about) in [
            (
                "Which signal do timeout and kill send?",
                ["timeout", "kill"],
            ),
            (
                "In Salt Road, who plays the wife of the man who wrote the score for Velmora?",
                ["Salt Road", "Velmora"],
            ),
            (
                "If I raise Orm's limit while Velmora is running, what happens to old panes?",
                ["Orm", "Velmora"],
            ),
        ] {
            let p = repaired(
                serde_json::json!({"about": about, "chain": [], "combine": "none",
                    "options": [], "read": "signal", "type": "text"}),
                q,
            );
            assert_eq!(p.about.len(), 2, "{q}");
            assert!(p.compile().is_err(), "{q}");
        }
        // A subject the question does not write is not cut from it.
        assert_eq!(
            one_thing("Who plays Ivo in Salt Road?", &["Ivo".into(), "Orm".into()]),
            None
        );
    }

    #[test]
    fn a_one_thing_read_of_an_either_or_question_picks_among_its_options() {
        let q = "When I start the packer without -j, does it run one worker per core or as many as it can?";
        let p = repaired(
            serde_json::json!({"about": ["the packer"], "chain": [], "combine": "none",
                "options": [], "read": "workers started", "type": "quantity"}),
            q,
        );
        assert_eq!(p.combine, Combine::Pick);
        assert_eq!(p.options.len(), 2);
        assert!(
            p.options[0].ends_with("one worker per core"),
            "{:?}",
            p.options
        );
        assert_eq!(p.options[1], "as many as it can");
        let program = p.compile().unwrap().validate().unwrap();
        assert!(program.reasons());
        assert!(matches!(program.steps.last(), Some(Op::Pick { .. })));
        // A comparison planned about one thing where the options are things: the options
        // are the things compared.
        let p = repaired(
            serde_json::json!({"about": ["the packer"], "chain": [], "combine": "more",
                "options": [], "read": "default value", "type": "quantity"}),
            "In the packer, which flag has the bigger default, --jobs or --retries?",
        );
        assert_eq!(p.about, ["--jobs", "--retries"]);
        assert_eq!(p.combine, Combine::More);
        // A question without options, or one counting a list: as planned.
        for q in [
            "How many workers does the packer start without -j?",
            "By default, how many shell, login or batch workers will the packer start?",
        ] {
            let p = repaired(
                serde_json::json!({"about": ["the packer"], "chain": [], "combine": "none",
                    "options": [], "read": "workers started", "type": "quantity"}),
                q,
            );
            assert_eq!(p.combine, Combine::None, "{q}");
        }
    }

    #[test]
    fn what_two_things_have_in_common_is_what_both_values_hold() {
        for q in [
            "The painters Ada Orm and Bo Velmora shared what nationality?",
            "Which prizes did Ada Orm and Bo Velmora both win?",
        ] {
            let p = repaired(
                serde_json::json!({"about": ["Ada Orm", "Bo Velmora"], "chain": [],
                    "combine": "none", "options": [], "read": "nationality", "type": "place"}),
                q,
            );
            assert_eq!((p.combine, p.kind), (Combine::Intersect, Kind::List), "{q}");
            assert!(p.compile().is_ok(), "{q}");
        }
        // A yes/no question is left to the yes/no repair; one without such a word, as planned.
        let p = repaired(
            serde_json::json!({"about": ["Ada Orm", "Bo Velmora"], "chain": [],
                "combine": "none", "options": [], "read": "nationality", "type": "place"}),
            "What nationality were Ada Orm and Bo Velmora?",
        );
        assert_eq!(p.combine, Combine::None);
    }

    #[test]
    fn relations_written_before_the_subject_apply_from_the_nearest_out() {
        let chain = |q: &str, chain: &[&str]| {
            repaired(
                serde_json::json!({"about": ["Ivo in Salt Road"], "chain": chain,
                    "combine": "none", "options": [], "read": "", "type": "person"}),
                q,
            )
            .chain
        };
        let q = "Who was the spouse of the actor who played Ivo in Salt Road?";
        assert_eq!(chain(q, &["spouse", "actor"]), ["actor", "spouse"]);
        // Already in the order they apply: as written.
        assert_eq!(chain(q, &["actor", "spouse"]), ["actor", "spouse"]);
        // A relation after the subject, or one the question does not write: left alone.
        let q = "The actor who played Ivo in Salt Road has a sister. Who is she?";
        assert_eq!(chain(q, &["actor", "sister"]), ["actor", "sister"]);
        let q = "Whom did the actor who played Ivo in Salt Road marry?";
        assert_eq!(chain(q, &["husband", "actor"]), ["husband", "actor"]);
    }

    #[test]
    fn a_yes_no_question_about_two_things_combines_them_by_its_own_word() {
        for (q, combine, want) in [
            (
                "Do timeout and kill send the same signal?",
                "none",
                Combine::Same,
            ),
            (
                "Are the billing service and the search service both deprecated?",
                "pick",
                Combine::All,
            ),
            (
                "Is either the billing service or the search service deprecated?",
                "intersect",
                Combine::Any,
            ),
        ] {
            let p = repaired(
                serde_json::json!({"about": ["billing service", "search service"], "chain": [],
                    "combine": combine, "options": [], "read": "deprecated",
                    "type": "yes_no"}),
                q,
            );
            assert_eq!(p.combine, want, "{q}");
            assert!(p.compile().is_ok(), "{q}");
        }
        // Two values compared in code: each read is the value, not a verdict on "same".
        let p = repaired(
            serde_json::json!({"about": ["timeout", "kill"], "chain": [], "combine": "none",
                "options": [], "read": "same signal", "type": "yes_no"}),
            "Do timeout and kill send the same signal when none is named?",
        );
        assert_eq!(
            (p.combine, p.read.as_str(), p.kind),
            (Combine::Same, "signal", Kind::Text)
        );
        // Two options: which of them it holds for.
        let p = repaired(
            serde_json::json!({"about": ["Orm", "Velmora"], "chain": [], "combine": "none",
                "options": [], "read": "county town", "type": "yes_no"}),
            "Is Orm or Velmora a county town?",
        );
        assert_eq!(p.combine, Combine::Pick);
        let program = p.compile().unwrap().validate().unwrap();
        assert!(
            program
                .fits(&crate::monitor::AnswerForm::of(
                    "Is Orm or Velmora a county town?"
                ))
                .is_ok()
        );
        // Planned as a verdict over both ("same", "all") though the question offers the
        // two as its options and writes no such word: which of them, too. With the word,
        // or options that are not the subjects, the verdict stays.
        for planned in ["same", "all", "any"] {
            let p = repaired(
                serde_json::json!({"about": ["Orm", "Velmora"], "chain": [],
                    "combine": planned, "options": [], "read": "county town", "type": "yes_no"}),
                "Is Orm or Velmora a county town?",
            );
            assert_eq!(p.combine, Combine::Pick, "{planned}");
        }
        let kept = |q: &str, planned: &str| {
            repaired(
                serde_json::json!({"about": ["Orm", "Velmora"], "chain": [],
                    "combine": planned, "options": [], "read": "county town", "type": "yes_no"}),
                q,
            )
            .combine
        };
        assert_eq!(
            kept("Are both Orm and Velmora county towns?", "all"),
            Combine::All
        );
        assert_eq!(
            kept(
                "Are Orm and Velmora in the same county, Kell or Brae?",
                "same"
            ),
            Combine::Same
        );
        assert_eq!(
            kept("Is Orm a county town or a village?", "any"),
            Combine::Any
        );
        // No word that says how: left as planned (a question that is not yes/no is the
        // in-common repair's).
        let p = repaired(
            serde_json::json!({"about": ["timeout", "kill"], "chain": [],
                "combine": "none", "options": [], "read": "signal", "type": "text"}),
            "Do timeout and kill send signals?",
        );
        assert_eq!(p.combine, Combine::None);
    }

    #[test]
    fn a_chain_ending_in_the_fact_read_reads_it_once() {
        for (relation, read) in [
            ("nationality", "nationality of the husband"),
            ("birthplace", "place of birth"),
            ("place of burial", "place of burial"),
        ] {
            let p = repaired(
                serde_json::json!({"about": ["Ilse Varga"], "chain": ["husband", relation],
                    "combine": "none", "options": [], "read": read, "type": "place"}),
                "?",
            );
            assert_eq!(p.chain, ["husband"], "{relation}");
        }
        // A relation that is not the fact stays.
        assert!(!same_fact("director", "place of birth"));
        assert!(!same_fact("birth", "birthplace of the father"));
    }

    #[test]
    fn a_possessive_fact_reads_through_its_relation() {
        let p = repaired(
            serde_json::json!({"about": ["Salt Road", "The Amber Key"], "chain": [],
                "combine": "earlier", "options": [], "read": "author's birth date",
                "type": "date"}),
            "Of Salt Road and The Amber Key, whose author was born first?",
        );
        assert_eq!(
            (p.chain.as_slice(), p.read.as_str()),
            (&["author".to_string()][..], "birth date")
        );
        // A name's possessive is not a relation.
        let p = repaired(
            serde_json::json!({"about": ["Velmora"], "chain": [], "combine": "none",
                "options": [], "read": "Velmora's release date", "type": "date"}),
            "When was Velmora released?",
        );
        assert!(p.chain.is_empty());
    }

    #[test]
    fn one_subject_compared_is_its_fact_read() {
        let p = repaired(
            serde_json::json!({"about": ["Salt Road"], "chain": ["author"],
                "combine": "earlier", "options": [], "read": "date of death", "type": "date"}),
            "When did the author of Salt Road die?",
        );
        assert_eq!(p.combine, Combine::None);
        // Neighbours joined by a comma in the question are one name, where the combine
        // takes fewer subjects than written.
        let p = repaired(
            serde_json::json!({"about": ["Orm", "Velmora", "North Tessa"], "chain": [],
                "combine": "same", "options": [], "read": "country", "type": "place"}),
            "Are Orm and Velmora, North Tessa in one country?",
        );
        assert_eq!(p.about, ["Orm", "Velmora, North Tessa"]);
    }
}
