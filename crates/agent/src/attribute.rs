//! Attributes read in code: which option a question's words describe, read off each
//! option's own page. "Which band formed in England, A or B?", "Which dog is based in
//! Switzerland, A or B?", "Are A and B both species of ferns?".
//!
//! A 1.5B writer answers these confidently and often wrongly: both options are in its
//! sources, both pages look relevant, its samples agree, so every signal the monitor
//! reads says "right" (HotpotQA open, tuning half: 14 of the 18 wrong first answers above
//! 0.6 confidence were "A or B" or yes/no comparisons). Yet the question's own words,
//! less the options, name what is asked ("band", "formed", "England"), and each option's
//! page either states them or does not. So the question is read here
//! ([`AttributeQuestion::of`]: the two things and the asked terms), each thing's page is
//! found by its title ([`page_of`]), the asked terms each page states are collected
//! ([`terms`]: stems, with countries read as their demonyms), and [`AttributeQuestion::decide`]
//! settles it: for a choice, the option whose page states strictly more of the asked
//! terms, every term the other states included; for "both", "yes" when both pages state
//! every asked term and "no" when one states a term the other does not. Anything else (a
//! thing without its own page, pages that state the same terms but not all of them)
//! decides nothing, and no model call is made either way.
//!
//! Comparisons of dates and quantities are not read here ([`crate::compare`],
//! [`crate::measure`] decide them from the values), nor relations between the two ("the
//! same country"), nor asked terms with digits ("formed before 2010": a page states a year,
//! not whether it is before another).

use crate::compare::{DateComparison, words};
use crate::evidence::Source;
use crate::measure::QuantityComparison;
use crate::monitor::AnswerForm;
use crate::parts::BothQuestion;
use crate::text::{is_stopword, tokens};
use std::collections::BTreeSet;
use std::sync::LazyLock;

/// The stop reason of a run whose options' pages confirmed the written answer (a
/// contradicted answer is recorded as a `Remediation::Attribute` instead).
pub const ATTRIBUTES_CONFIRM: &str = "the pages confirm the answer";

/// A question that asks which of two things has an attribute, or whether both have it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttributeQuestion {
    /// The two things, as the question names them.
    pub things: [String; 2],
    /// What is asked: "which of the two" or "both".
    pub kind: AttributeKind,
    /// The asked terms ([`terms`]): the question's content words less the things' own.
    pub asked: BTreeSet<String>,
    /// A [`AttributeKind::Nation`] question about the things' directors ("Are the
    /// directors of films A and B from the same country?"): each nation is read off the
    /// page of the person the film's page says directed it.
    pub via_director: bool,
}

/// The two forms of an attribute question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttributeKind {
    /// "Which band formed in England, A or B?": one option is the answer.
    Choice,
    /// "Are A and B both ferns?": yes or no.
    Both,
    /// "Were A and B of the same nationality?", "Are A and B located in the same
    /// country?": yes or no, from the nation each thing's page names first.
    Nation,
}

/// What decided an attribute question: the answer, and for each thing the asked terms
/// its page states and the page's source number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// The option, or "yes" / "no".
    pub answer: String,
    /// For each thing, the asked terms its own pages state.
    pub stated: [BTreeSet<String>; 2],
    /// For each thing, the number of its first own page among the sources.
    pub pages: [usize; 2],
}

/// Words of a choice question that compare rather than describe: such a question is a
/// comparison of values ("more", "older", "closer"), which the options' pages state both
/// of, so which one "states" the word says nothing.
const COMPARATIVES: &[&str] = &[
    "more", "most", "less", "least", "fewer", "fewest", "larger", "largest", "smaller", "smallest",
    "bigger", "biggest", "greater", "greatest", "longer", "longest", "shorter", "shortest",
    "higher", "highest", "lower", "lowest", "taller", "tallest", "older", "oldest", "younger",
    "youngest", "first", "earlier", "earliest", "later", "latest", "last", "newer", "newest",
    "recently", "further", "farther", "furthest", "closer", "closest", "nearer", "nearest",
    "deeper", "wider", "heavier", "faster", "before", "after", "many", "much", "better", "best",
    "worse", "worst",
];

/// Words that make the question a relation between the two things, not an attribute of
/// each.
const RELATIONAL: &[&str] = &[
    "same", "share", "shared", "common", "together", "related", "both", "either", "neither",
    "than", "between",
];

/// Question words that say nothing about the attribute ("which", "who" are stopwords
/// already; these are the nouns questions use to point at an option).
const POINTERS: &[&str] = &["one", "two", "options", "option", "following"];

/// Countries, read as the demonym a page about a thing from there writes ("an American
/// rock band" answers "from the United States"). Multi-word names are joined first.
const DEMONYMS: &[(&str, &str)] = &[
    ("united states of america", "american"),
    ("united states", "american"),
    ("usa", "american"),
    ("us", "american"),
    ("america", "american"),
    ("united kingdom", "british"),
    ("uk", "british"),
    ("britain", "british"),
    ("great britain", "british"),
    ("england", "english"),
    ("scotland", "scottish"),
    ("wales", "welsh"),
    ("ireland", "irish"),
    ("germany", "german"),
    ("france", "french"),
    ("italy", "italian"),
    ("spain", "spanish"),
    ("portugal", "portuguese"),
    ("netherlands", "dutch"),
    ("holland", "dutch"),
    ("belgium", "belgian"),
    ("switzerland", "swiss"),
    ("austria", "austrian"),
    ("sweden", "swedish"),
    ("norway", "norwegian"),
    ("denmark", "danish"),
    ("finland", "finnish"),
    ("poland", "polish"),
    ("russia", "russian"),
    ("greece", "greek"),
    ("turkey", "turkish"),
    ("china", "chinese"),
    ("japan", "japanese"),
    ("korea", "korean"),
    ("india", "indian"),
    ("pakistan", "pakistani"),
    ("canada", "canadian"),
    ("mexico", "mexican"),
    ("brazil", "brazilian"),
    ("argentina", "argentine"),
    ("argentinian", "argentine"),
    ("australia", "australian"),
    ("new zealand", "zealander"),
    ("new zealander", "zealander"),
    ("egypt", "egyptian"),
    ("israel", "israeli"),
    ("iran", "iranian"),
    ("philippines", "filipino"),
    ("macedonia", "macedonian"),
    ("hungary", "hungarian"),
    ("czech republic", "czech"),
    ("romania", "romanian"),
    ("bulgaria", "bulgarian"),
    ("serbia", "serbian"),
    ("croatia", "croatian"),
    ("ukraine", "ukrainian"),
    ("iceland", "icelandic"),
    ("cuba", "cuban"),
    ("chile", "chilean"),
    ("colombia", "colombian"),
    ("peru", "peruvian"),
    ("taiwan", "taiwanese"),
    ("thailand", "thai"),
    ("vietnam", "vietnamese"),
    ("indonesia", "indonesian"),
    ("nigeria", "nigerian"),
    ("south africa", "south african"),
    ("tunisia", "tunisian"),
    ("algeria", "algerian"),
    ("morocco", "moroccan"),
    ("lebanon", "lebanese"),
    ("syria", "syrian"),
    ("iraq", "iraqi"),
    ("saudi arabia", "saudi"),
    ("bangladesh", "bangladeshi"),
    ("sri lanka", "sri lankan"),
    ("nepal", "nepalese"),
    ("malaysia", "malaysian"),
    ("singapore", "singaporean"),
    ("kenya", "kenyan"),
    ("ghana", "ghanaian"),
    ("ethiopia", "ethiopian"),
    ("venezuela", "venezuelan"),
    ("uruguay", "uruguayan"),
    ("bolivia", "bolivian"),
    ("ecuador", "ecuadorian"),
    ("estonia", "estonian"),
    ("latvia", "latvian"),
    ("lithuania", "lithuanian"),
    ("slovakia", "slovak"),
    ("slovenia", "slovenian"),
    ("albania", "albanian"),
    ("armenia", "armenian"),
    ("belarus", "belarusian"),
    ("luxembourg", "luxembourgish"),
    ("jamaica", "jamaican"),
    ("soviet union", "soviet"),
    ("yugoslavia", "yugoslav"),
    ("czechoslovakia", "czechoslovak"),
];

/// Plurals a stemmer does not reduce to their singular's stem.
const IRREGULAR: &[(&str, &str)] = &[
    ("genera", "genus"),
    ("people", "person"),
    ("women", "woman"),
    ("men", "man"),
    ("children", "child"),
    ("media", "medium"),
];

/// Regions that name their country.
const REGIONS: &[(&str, &str)] = &[
    ("new south wales", "australian"),
    ("queensland", "australian"),
    ("ontario", "canadian"),
    ("quebec", "canadian"),
];

/// Which nation a text names ("an American film director" -> "american"): the earliest
/// demonym in it ([`DEMONYMS`]), or on a text with none the earliest country or region
/// ([`REGIONS`]), the longer name where two start together ("New South Wales" before "Wales"). "us" is skipped (lowercased,
/// the pronoun is the country), and so are continents ("South America"). A hyphenated
/// compound of demonyms is its last part ("a German-American composer" -> "american"),
/// as English writes an origin before a nationality, and so is a birthplace before one
/// ("a Hungarian-born American director" -> "american").
pub fn first_nation(text: &str) -> Option<&'static str> {
    // "a Hungarian- American director": some corpora space a hyphen's second half.
    static SPACED_HYPHEN: LazyLock<regex::Regex> =
        LazyLock::new(|| regex::Regex::new(r"(\p{L})- (\p{Lu})").expect("a valid pattern"));
    let text = SPACED_HYPHEN.replace_all(text, "$1-$2");
    let text = last_of_compound_demonyms(&text.replace("U.S.", "American"));
    let mut spaced = format!(" {} ", words(&text));
    // A continent is no nation ("tropical South America", "a North American tour").
    for continent in [
        "south america",
        "north america",
        "latin america",
        "central america",
    ] {
        for form in [continent.to_string(), format!("{continent}n")] {
            spaced = spaced.replace(&format!(" {form} "), " ");
        }
    }
    let named = |(name, demonym): &(&'static str, &'static str)| {
        spaced
            .find(&format!(" {name} "))
            .map(|at| (at, std::cmp::Reverse(name.len()), *demonym))
    };
    // A nationality is an adjective ("is a Tunisian writer"); a country named before it is
    // more often a birthplace ("born in Korba, Tunisia, is a ..."), so the first demonym
    // wins and a country counts only on a page that names no demonym ("a school in Sydney,
    // New South Wales").
    let demonym = DEMONYMS
        .iter()
        .map(|(_, d)| (*d, *d))
        .filter_map(|e| named(&e))
        .min();
    let country = || {
        DEMONYMS
            .iter()
            .filter(|(c, _)| *c != "us")
            .chain(REGIONS)
            .filter_map(named)
            .min()
    };
    demonym.or_else(country).map(|(_, _, demonym)| demonym)
}

/// `text` with each hyphenated word whose parts are all demonyms ("German-American")
/// replaced by its last part, and a birthplace before a nationality ("Irish-born
/// American") dropped; "Irish-born" alone stays.
fn last_of_compound_demonyms(text: &str) -> String {
    let is_demonym = |part: &str| {
        let part = part.to_lowercase();
        DEMONYMS.iter().any(|(_, d)| *d == part && !d.contains(' '))
    };
    let words: Vec<&str> = text.split(' ').collect();
    words
        .iter()
        .enumerate()
        .map(|(i, word)| {
            let core = word.trim_matches(|c: char| !c.is_alphanumeric() && c != '-');
            let parts: Vec<&str> = core.split('-').collect();
            if parts.len() > 1 && parts.iter().all(|p| is_demonym(p)) {
                word.replacen(core, parts[parts.len() - 1], 1)
            } else if parts.len() == 2
                && is_demonym(parts[0])
                && parts[1].eq_ignore_ascii_case("born")
                && words.get(i + 1).is_some_and(|next| {
                    is_demonym(next.trim_matches(|c: char| !c.is_alphanumeric()))
                })
            {
                // "a Hungarian-born American director": born in one, a national of the
                // next; the birthplace alone ("a Dutch-born painter") stays.
                word.replacen(core, "", 1)
            } else {
                word.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

static STEMMER: LazyLock<frostem::Stemmer> =
    LazyLock::new(|| frostem::Stemmer::new(frostem::Algorithm::English));

/// The terms `text` states, as attributes are matched: lowercase words less stopwords,
/// countries as their demonyms ([`DEMONYMS`]), irregular plurals as their singulars, each
/// stemmed (Snowball English, so
/// "flowering" meets "flower" and "ferns" meets "fern").
pub fn terms(text: &str) -> BTreeSet<String> {
    let mut spaced = format!(" {} ", words(&text.replace("U.S.", "US")));
    for (country, demonym) in DEMONYMS.iter().filter(|(c, _)| c.contains(' ')) {
        spaced = spaced.replace(&format!(" {country} "), &format!(" {demonym} "));
    }
    tokens(&spaced)
        .into_iter()
        .filter(|t| !is_stopword(t))
        .map(|t| {
            let t = DEMONYMS
                .iter()
                .chain(IRREGULAR)
                .find(|(c, _)| *c == t)
                .map_or(t.as_str(), |(_, d)| d);
            STEMMER.stem(t).into_owned()
        })
        .collect()
}

/// A title or name as compared for a page: its words, less a trailing disambiguation
/// ("Pieris (plant)") and a leading article.
pub(crate) fn bare(name: &str) -> String {
    let name = name.trim();
    let name = match name.rfind(" (") {
        Some(i) if name.ends_with(')') => &name[..i],
        _ => name,
    };
    let w = words(name);
    let w = w.trim();
    w.strip_prefix("the ").unwrap_or(w).to_string()
}

/// Whether `source` is `thing`'s own page: its title, less a disambiguation and an
/// article, is the thing's name.
pub fn page_of(source: &Source, thing: &str) -> bool {
    let t = bare(thing);
    !t.is_empty() && bare(&source.passage.title) == t
}

impl AttributeQuestion {
    /// Reads `question` as an attribute question, or `None`: a choice ("A or B") that is
    /// no comparison of values, or a yes/no question about two things ([`BothQuestion`])
    /// that is no relation between them, whose asked terms are not empty and hold no
    /// digit.
    pub fn of(question: &str) -> Option<AttributeQuestion> {
        if DateComparison::of(question).is_some() || QuantityComparison::of(question).is_some() {
            return None;
        }
        if let Some(things) = directors_nation(question) {
            return Some(AttributeQuestion {
                things,
                kind: AttributeKind::Nation,
                asked: BTreeSet::from(["nationality".to_string()]),
                via_director: true,
            });
        }
        if let Some(things) = same_nation(question) {
            return Some(AttributeQuestion {
                things,
                kind: AttributeKind::Nation,
                asked: BTreeSet::from(["nationality".to_string()]),
                via_director: false,
            });
        }
        let (things, kind, rest) = match AnswerForm::of(question) {
            AnswerForm::Choice(options) => {
                let [a, b, ..] = options.as_slice() else {
                    return None;
                };
                // What is asked is the question less its options, wherever they stand
                // ("Which musician, A or B, is a member of Fuel?").
                let rest = question.replacen(a.as_str(), " ", 1);
                let rest = rest.replacen(b.as_str(), " ", 1);
                ([a.clone(), b.clone()], AttributeKind::Choice, rest)
            }
            AnswerForm::YesNo => {
                let both = BothQuestion::of(question)?;
                let rest = both.predicate.clone();
                (both.entities, AttributeKind::Both, rest)
            }
            _ => return None,
        };
        let lower = words(&rest);
        let said = |list: &[&str]| list.iter().any(|w| lower.contains(&format!(" {w} ")));
        if said(RELATIONAL)
            || (kind == AttributeKind::Choice && said(COMPARATIVES))
            || rest.chars().any(|c| c.is_ascii_digit())
        {
            return None;
        }
        let own: BTreeSet<String> = things.iter().flat_map(|t| terms(t)).collect();
        let pointers: BTreeSet<String> = POINTERS.iter().flat_map(|p| terms(p)).collect();
        let asked: BTreeSet<String> = terms(&rest)
            .into_iter()
            .filter(|t| !own.contains(t) && !pointers.contains(t))
            .collect();
        (!asked.is_empty()).then_some(AttributeQuestion {
            things,
            kind,
            asked,
            via_director: false,
        })
    }

    /// The asked terms thing `i`'s own pages state (for a [`AttributeKind::Nation`]
    /// question, the nation they name first), and its first page's number; `None` when no
    /// source is its page.
    pub fn stated(&self, i: usize, sources: &[Source]) -> Option<(BTreeSet<String>, usize)> {
        let pages: Vec<&Source> = if self.via_director {
            director_pages(&self.things[i], sources)
        } else {
            sources
                .iter()
                .filter(|s| page_of(s, &self.things[i]))
                .collect()
        };
        let first = pages.first()?.n;
        if self.kind == AttributeKind::Nation {
            let nation = pages
                .iter()
                .find_map(|s| first_nation(&s.passage.text))
                .map(str::to_string);
            return Some((nation.into_iter().collect(), first));
        }
        let said: BTreeSet<String> = pages
            .iter()
            .flat_map(|s| terms(&format!("{} {}", s.passage.title, s.passage.text)))
            .collect();
        Some((self.asked.intersection(&said).cloned().collect(), first))
    }

    /// The answer the two pages make, when they settle it ([`AttributeQuestion`]'s rule).
    pub fn decide(&self, sources: &[Source]) -> Option<Decision> {
        let (a, pa) = self.stated(0, sources)?;
        let (b, pb) = self.stated(1, sources)?;
        let answer = match self.kind {
            AttributeKind::Choice if a.is_superset(&b) && a.len() > b.len() => {
                self.things[0].clone()
            }
            AttributeKind::Choice if b.is_superset(&a) && b.len() > a.len() => {
                self.things[1].clone()
            }
            AttributeKind::Choice => return None,
            AttributeKind::Both if a == self.asked && b == self.asked => "yes".into(),
            AttributeKind::Both if a != b => "no".into(),
            AttributeKind::Both => return None,
            AttributeKind::Nation if a.is_empty() || b.is_empty() => return None,
            AttributeKind::Nation if a == b => "yes".into(),
            AttributeKind::Nation => "no".into(),
        };
        Some(Decision {
            answer,
            stated: [a, b],
            pages: [pa, pb],
        })
    }
}

/// The two films of a question about their directors' nationality: "Are (both) (the)
/// directors of films A and B (both) from the same country?", "Do both (films(:|,)) A and
/// B(,) (films) have the directors (who are) from the same country?", "Do director of film
/// A and director of film B have the same nationality?", "Do both directors of films A and
/// B share the same nationality?". The two names are split at a lowercase " and " (a
/// title's "And" is capitalised) and end where the question's lowercase frame resumes.
fn directors_nation(question: &str) -> Option<[String; 2]> {
    static DIRECTORS: LazyLock<regex::Regex> = LazyLock::new(|| {
        regex::Regex::new(
            r"^(?i:are|were|do|did|does)\s+(?:both\s+)?(?:the\s+)?(?:directors?\s+of\s+(?:the\s+)?films?\s+|films?[:,]?\s+)?(.+?)\s+and\s+(?:director\s+of\s+film\s+)?(.+?),?\s+(?:films\s+)?(?:both\s+)?(?:have|share|from|are|were)\b(.*)$",
        )
        .expect("a valid pattern")
    });
    let q = question.trim().trim_end_matches('?').trim();
    let c = DIRECTORS.captures(q)?;
    let frame = format!("{} {}", &q[..c.get(1)?.start()], &c[3]).to_lowercase();
    let about_directors = frame.contains("director");
    let same = frame.contains("same nationality") || frame.contains("same country");
    let (a, b) = (c[1].trim().to_string(), c[2].trim().to_string());
    (about_directors && same && !a.contains(',') && !b.contains(',')).then_some([a, b])
}

/// The pages of the person `film`'s own page says directed it: those titled with the
/// name, or, for a surname alone ("directed by Katz" after "written by Aaron Katz"), the
/// one page whose title ends with it.
fn director_pages<'a>(film: &str, sources: &'a [Source]) -> Vec<&'a Source> {
    let directors: Vec<String> = sources
        .iter()
        .filter(|s| page_of(s, film))
        .filter_map(|s| director_of(&s.passage.text))
        .collect();
    let exact: Vec<&Source> = sources
        .iter()
        .filter(|s| directors.iter().any(|d| page_of(s, d)))
        .collect();
    if !exact.is_empty() {
        return exact;
    }
    let by_surname: Vec<&Source> = sources
        .iter()
        .filter(|s| {
            let title = bare(&s.passage.title);
            directors
                .iter()
                .map(|d| bare(d))
                .any(|d| !d.contains(' ') && title.ends_with(&format!(" {d}")))
        })
        .collect();
    if by_surname.len() == 1 {
        by_surname
    } else {
        Vec::new()
    }
}

/// The person a film's page says directed it: the capitalised name after "directed by"
/// ("... a 2010 American film directed by Aaron Katz.", "directed and written by Nina
/// Companeez"), joining words inside it ("Jean de Velm") kept.
pub fn director_of(text: &str) -> Option<String> {
    // "directed by X", "directed and written by X", "directed, produced, and written by X".
    let verb = text.find("directed")? + "directed".len();
    let window = &text[verb..];
    let by = window
        .char_indices()
        .take_while(|&(i, _)| i <= 40)
        .find(|&(i, _)| window[i..].starts_with(" by "))?
        .0;
    let at = verb + by + " by ".len();
    let mut name: Vec<&str> = Vec::new();
    for w in text[at..].split_whitespace() {
        let bare = w.trim_end_matches([',', '.', ';', ':', ')']);
        let capital = crate::text::name_like(bare) && !bare.is_empty();
        let joiner = !name.is_empty() && crate::text::NAME_JOINERS.contains(&bare);
        if !(capital || joiner) {
            break;
        }
        // A name ends at its punctuation, save an initial's dot ("Aaron J. Katz").
        let initial = bare.chars().count() <= 2 && w.ends_with('.');
        if initial {
            name.push(&w[..bare.len() + 1]);
            continue;
        }
        name.push(bare);
        if bare.len() < w.len() {
            break;
        }
    }
    while name
        .last()
        .is_some_and(|w| crate::text::NAME_JOINERS.contains(w))
    {
        name.pop();
    }
    (!name.is_empty()).then(|| name.join(" "))
}

/// The two things of "AUX (both) (the KIND(,)) A and B(,) [verb] of / from / in the same
/// nationality / country?" ("Were Ann Zorb and Bo Quen of the same nationality?", "Are Zorb
/// College and Quen School located in the same country?", "Are both stations, Zorb Halt
/// and Quen Junction, located in the same country?", "Do the movies Blue Harbour and Glass
/// Fox, originate from the same country?"). A lowercase kind before the first name is not
/// part of it.
fn same_nation(question: &str) -> Option<[String; 2]> {
    static SAME: LazyLock<regex::Regex> = LazyLock::new(|| {
        regex::Regex::new(
            r"(?i)^(?:are|were|is|was|do|did)\s+(?:both\s+)?(?:the\s+)?(?:(?-i:[a-z]+),?\s+)?(.+?)\s+and\s+(.+?),?\s+(?:both\s+)?(?-i:[a-z]+\s+){0,2}?(?:of|from|in)\s+the\s+same\s+(?:nationality|country)\s*\??\s*$",
        )
        .expect("a valid pattern")
    });
    let c = SAME.captures(question.trim())?;
    let name = |i: usize| {
        let n = c[i].trim();
        n.strip_prefix("the ").unwrap_or(n).to_string()
    };
    let (a, b) = (name(1), name(2));
    (!a.is_empty() && !b.is_empty() && !a.contains(',') && !b.contains(',')).then_some([a, b])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::Passage;

    fn source(n: usize, title: &str, text: &str) -> Source {
        Source {
            n,
            passage: Passage {
                title: title.into(),
                section: vec![],
                pages: None,
                chunk_id: None,
                doc: title.into(),
                text: text.into(),
            },
            spans: vec![text.into()],
        }
    }

    fn set(words: &[&str]) -> BTreeSet<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn terms_are_stems_with_countries_as_demonyms() {
        assert_eq!(terms("flowering plants"), set(&["flower", "plant"]));
        assert_eq!(terms("from the United States"), set(&["american"]));
        assert_eq!(terms("an American band"), set(&["american", "band"]));
        assert_eq!(terms("a U.S. magazine"), terms("an American magazine"));
        assert!(terms("an English band formed").is_superset(&terms("formed in England")));
    }

    #[test]
    fn a_choice_asks_the_words_around_its_options() {
        let q =
            AttributeQuestion::of("Which band formed in Scotland, Zorblatt or Quenlin?").unwrap();
        assert_eq!(q.kind, AttributeKind::Choice);
        assert_eq!(q.things, ["Zorblatt".to_string(), "Quenlin".to_string()]);
        assert_eq!(q.asked, terms("band formed Scotland"));
    }

    #[test]
    fn comparisons_relations_and_years_are_not_attributes() {
        for q in [
            "Which band has more members, Zorblatt or Quenlin?",
            "Who was born first, Ann Zorblatt or Bo Quenlin?",
            "Which peak is higher, Mount Zorb or Mount Quen?",
            "Are Zorblatt and Quenlin both produced by the same company?",
            "Were Zorblatt and Quenlin both formed before 2010?",
            "Who directed the film Zorblatt?",
        ] {
            assert_eq!(AttributeQuestion::of(q), None, "{q}");
        }
    }

    #[test]
    fn the_option_whose_page_states_more_of_the_asked_terms_is_the_answer() {
        let q =
            AttributeQuestion::of("Which band formed in Scotland, Zorblatt or Quenlin?").unwrap();
        let sources = [
            source(1, "Zorblatt", "Zorblatt is an American band from Ohio."),
            source(
                2,
                "Quenlin (band)",
                "Quenlin is a band formed in Glasgow, Scotland.",
            ),
        ];
        let d = q.decide(&sources).unwrap();
        assert_eq!(d.answer, "Quenlin");
        assert_eq!(d.pages, [1, 2]);
        assert_eq!(d.stated[0], terms("band"));
        // The same terms on both pages decide nothing.
        let even = [
            source(1, "Zorblatt", "Zorblatt is a band."),
            source(2, "Quenlin", "Quenlin is a band."),
        ];
        assert_eq!(q.decide(&even), None);
        // Each page stating a term the other lacks decides nothing either.
        let crossed = [
            source(1, "Zorblatt", "Zorblatt formed in Ohio."),
            source(2, "Quenlin", "Quenlin is a Scottish duo."),
        ];
        assert_eq!(q.decide(&crossed), None);
    }

    #[test]
    fn a_thing_without_its_own_page_decides_nothing() {
        let q =
            AttributeQuestion::of("Which band formed in Scotland, Zorblatt or Quenlin?").unwrap();
        // A page that only mentions Quenlin is not Quenlin's page.
        let sources = [
            source(1, "Zorblatt", "Zorblatt is an American band."),
            source(2, "Glasgow", "Quenlin formed in Glasgow, Scotland."),
        ];
        assert_eq!(q.decide(&sources), None);
    }

    #[test]
    fn the_first_nation_a_page_names_is_its_nationality() {
        assert_eq!(
            first_nation("Ann Zorb (born 1950) is an American director from Ohio."),
            Some("american")
        );
        assert_eq!(
            first_nation("A school in Sydney, New South Wales."),
            Some("australian")
        );
        assert_eq!(first_nation("He told us of France."), Some("french"));
        assert_eq!(first_nation("A quiet village."), None);
        assert_eq!(
            first_nation("A genus from tropical South America, grown in Italy."),
            Some("italian")
        );
        // An origin before a nationality; a hyphenated word that is not all demonyms
        // keeps its nation.
        assert_eq!(
            first_nation("Oto Vemm was a Dutch-Canadian painter."),
            Some("canadian")
        );
        assert_eq!(
            first_nation("Oto Vemm was a Dutch-born painter in Canada."),
            Some("dutch")
        );
        assert_eq!(
            first_nation("Oto Vemm was a Hungarian-born American film director."),
            Some("american")
        );
        assert_eq!(
            first_nation("Oto Vemm was a Hungarian- American film director."),
            Some("american")
        );
        assert_eq!(
            first_nation("Oto Vemm, born in 1948 in Korba, Tunisia, is a writer."),
            Some("tunisian")
        );
        // A birthplace's country before the nationality.
        assert_eq!(
            first_nation("Oto Vemm (born in Lyon, France) is an American actor."),
            Some("american")
        );
    }

    #[test]
    fn same_nationality_is_read_from_each_page() {
        let q =
            AttributeQuestion::of("Were Ann Zorb and Bo Quen of the same nationality?").unwrap();
        assert_eq!(q.kind, AttributeKind::Nation);
        assert_eq!(q.things, ["Ann Zorb".to_string(), "Bo Quen".to_string()]);
        let differ = [
            source(1, "Ann Zorb", "Ann Zorb is an American director."),
            source(
                2,
                "Bo Quen (actor)",
                "Bo Quen is a British actor who works in France.",
            ),
        ];
        let d = q.decide(&differ).unwrap();
        assert_eq!(d.answer, "no");
        assert_eq!(d.stated[1], set(&["british"]));
        let same = [
            source(1, "Ann Zorb", "Ann Zorb is an American director."),
            source(
                2,
                "Bo Quen",
                "Bo Quen is a director from the United States.",
            ),
        ];
        assert_eq!(q.decide(&same).unwrap().answer, "yes");
        let unknown = [
            source(1, "Ann Zorb", "Ann Zorb is an American director."),
            source(2, "Bo Quen", "Bo Quen is a director."),
        ];
        assert_eq!(q.decide(&unknown), None);
        let q =
            AttributeQuestion::of("Are Zorb College and Quen School located in the same country?")
                .unwrap();
        assert_eq!(
            q.things,
            ["Zorb College".to_string(), "Quen School".to_string()]
        );
        // The kind named before the things, and a comma closing the second.
        for (question, a, b) in [
            (
                "Are both stations, Zorb Halt and Quen Junction, located in the same country?",
                "Zorb Halt",
                "Quen Junction",
            ),
            (
                "Do the movies Blue Harbour and The Glass Fox (1922 Film), originate from the same country?",
                "Blue Harbour",
                "The Glass Fox (1922 Film)",
            ),
            (
                "Did the films Blue Harbour and Glass Fox originate from the same country?",
                "Blue Harbour",
                "Glass Fox",
            ),
            (
                "Were the Zorb Quartet and Quen from the same country?",
                "Zorb Quartet",
                "Quen",
            ),
        ] {
            let q = AttributeQuestion::of(question).unwrap();
            assert_eq!(q.kind, AttributeKind::Nation, "{question}");
            assert_eq!(q.things, [a.to_string(), b.to_string()], "{question}");
        }
        // A comma inside a name is not read as one.
        assert!(
            AttributeQuestion::of("Are Zorb, Quen and Velm Halt from the same country?")
                .is_none_or(|q| q.kind != AttributeKind::Nation)
        );
    }

    #[test]
    fn directors_nationality_is_read_off_each_directors_page() {
        for (question, a, b) in [
            (
                "Are the directors of films Blue Harbour and Cold Fox both from the same country?",
                "Blue Harbour",
                "Cold Fox",
            ),
            (
                "Are both directors of films Blue Harbour (Film) and Cold Fox from the same country?",
                "Blue Harbour (Film)",
                "Cold Fox",
            ),
            (
                "Do both films: Blue Harbour and Cold Fox (Film) have the directors from the same country?",
                "Blue Harbour",
                "Cold Fox (Film)",
            ),
            (
                "Do both Blue Harbour and The Glass And The Fox films have the directors from the same country?",
                "Blue Harbour",
                "The Glass And The Fox",
            ),
            (
                "Do director of film Blue Harbour and director of film Cold Fox have the same nationality?",
                "Blue Harbour",
                "Cold Fox",
            ),
            (
                "Do both directors of films Blue Harbour and Cold Fox share the same nationality?",
                "Blue Harbour",
                "Cold Fox",
            ),
            (
                "Do both films, Blue Harbour and Cold Fox, have the directors who are from the same country?",
                "Blue Harbour",
                "Cold Fox",
            ),
        ] {
            let q = AttributeQuestion::of(question).unwrap();
            assert_eq!(
                (q.kind, q.via_director),
                (AttributeKind::Nation, true),
                "{question}"
            );
            assert_eq!(q.things, [a.to_string(), b.to_string()], "{question}");
        }
        // About the things themselves, not their directors.
        let q =
            AttributeQuestion::of("Are Blue Harbour and Cold Fox from the same country?").unwrap();
        assert!(!q.via_director);

        let q = AttributeQuestion::of(
            "Are the directors of films Blue Harbour and Cold Fox both from the same country?",
        )
        .unwrap();
        let sources = [
            source(
                1,
                "Blue Harbour",
                "Blue Harbour is a 1962 Velmish drama film directed by Ilse de Marrow.",
            ),
            source(
                2,
                "Cold Fox",
                "Cold Fox is a 1958 American film directed by Tomas J. Reyl, starring Ann Zorb.",
            ),
            source(
                3,
                "Ilse de Marrow",
                "Ilse de Marrow (1920 - 1990) was a French director.",
            ),
            source(
                4,
                "Tomas J. Reyl",
                "Tomas J. Reyl was an American director.",
            ),
            source(5, "Ann Zorb", "Ann Zorb is a French actress."),
        ];
        let d = q.decide(&sources).unwrap();
        assert_eq!(d.answer, "no");
        assert_eq!(d.pages, [3, 4]);
        assert_eq!(d.stated[0], set(&["french"]));
        // No page for a director: nothing decided.
        assert_eq!(q.decide(&sources[..3]), None);
        // A director named by surname, a page titled with the full name and its accent.
        let sources = [
            source(
                1,
                "Blue Harbour",
                "Blue Harbour is a film written by Ilse Marrow and directed by Marrow.",
            ),
            source(2, "Cold Fox", "Cold Fox is a film directed by Tomas Réyl."),
            source(
                3,
                "Ilse Marrow (filmmaker)",
                "Ilse Marrow is an American filmmaker.",
            ),
            source(4, "Tomas Reyl", "Tomas Reyl was an American director."),
        ];
        let d = q.decide(&sources).unwrap();
        assert_eq!((d.answer.as_str(), d.pages), ("yes", [3, 4]));
    }

    #[test]
    fn a_films_page_names_its_director() {
        for (text, name) in [
            (
                "Cold Fox is a 2010 film directed by Aaron Katz.",
                Some("Aaron Katz"),
            ),
            (
                "Cold Fox is a film written and directed by Orson Welles, starring him.",
                Some("Orson Welles"),
            ),
            (
                "Cold Fox (1958) directed by Tomas J. Reyl and produced by Ann Zorb.",
                Some("Tomas J. Reyl"),
            ),
            (
                "Cold Fox is a film directed by Jean de Velm of Tessa.",
                Some("Jean de Velm of Tessa"),
            ),
            (
                "Cold Fox is a film directed and written by Nina Velm.",
                Some("Nina Velm"),
            ),
            (
                "Cold Fox is a 1977 film directed, produced, and written by John Reyl.",
                Some("John Reyl"),
            ),
            ("Cold Fox is a film directed by an unknown hand.", None),
            ("Cold Fox is a film.", None),
        ] {
            assert_eq!(director_of(text).as_deref(), name, "{text}");
        }
    }

    #[test]
    fn both_holds_when_each_page_states_every_asked_term() {
        let q = AttributeQuestion::of("Are Zorbia and Quenlia both genera of ferns?").unwrap();
        assert_eq!(q.kind, AttributeKind::Both);
        let yes = [
            source(
                1,
                "Zorbia",
                "Zorbia is a genus of ferns in the family Polypodiaceae.",
            ),
            source(2, "Quenlia", "Quenlia is a small genus of ferns."),
        ];
        assert_eq!(q.decide(&yes).unwrap().answer, "yes");
        let no = [
            source(1, "Zorbia", "Zorbia is a genus of ferns."),
            source(
                2,
                "Quenlia (plant)",
                "Quenlia is a genus of flowering plants.",
            ),
        ];
        let d = q.decide(&no).unwrap();
        assert_eq!(d.answer, "no");
        assert_eq!(d.stated[1], terms("genus"));
    }
}
