//! The question-reading rules of `metarag_agent::text`, through its public API: what a
//! question asks for (its main clause, yes/no forms), the options it offers (names,
//! values, lists) and how a short answer is reconciled with its answer. Every question
//! is invented, in plain English, never a benchmark's template.

use metarag_agent::text::*;
use std::collections::HashSet;
#[test]
fn a_leading_condition_leaves_the_main_clause_to_say_what_is_asked() {
    // Questions over documentation often open with the situation.
    let q = "If I raise the scrollback limit while the server runs, do old panes keep theirs?";
    assert_eq!(main_clause(q), "do old panes keep theirs?");
    assert!(is_yes_no_question(q));
    assert_eq!(answer_type(q), AnswerType::YesNo);
    let q = "When I call the packer without a size, how many parts does it write?";
    assert_eq!(answer_type(q), AnswerType::Number);
    let q = "With the cache setting left alone, are entries kept after a restart?";
    assert_eq!(answer_type(q), AnswerType::YesNo);
    let q = "Out of the box, which port does the relay listen on?";
    assert_eq!(main_clause(q), "which port does the relay listen on?");
    assert_eq!(answer_type(q), AnswerType::Other);
    // A question word before an auxiliary opens the question itself, commas or not.
    let q = "When did the relay, a small daemon, first ship?";
    assert_eq!(main_clause(q), q);
    assert_eq!(answer_type(q), AnswerType::Date);
    let q = "Is the relay, by default, bound to localhost?";
    assert_eq!(answer_type(q), AnswerType::YesNo);
    // No comma before a question: the question as written.
    let q = "Tell me the relay's default port";
    assert_eq!(main_clause(q), q);
    // A statement-shaped question with an aside is not a condition and a question.
    let q = "The old school in the Orm market, or bazar, is located in which country?";
    assert_eq!(main_clause(q), q);
    assert_eq!(answer_type(q), AnswerType::Other);
    // A comma inside the condition that no question follows is passed over.
    let q = "After Ada, Bo and Cy left the band, who replaced them?";
    assert_eq!(main_clause(q), "who replaced them?");
    assert_eq!(answer_type(q), AnswerType::Other);
    // A negative contraction opens a yes/no question too, after a condition or not.
    for q in [
        "Isn't compression on by default in the packer?",
        "Doesn't the relay retry a failed send on its own?",
        "Without a config file, won't the relay bind to every interface?",
    ] {
        assert_eq!(answer_type(q), AnswerType::YesNo, "{q}");
    }
    // An auxiliary opens a yes/no question whatever it embeds.
    let q = "Is there a limit on how many tokens one client may hold?";
    assert_eq!(answer_type(q), AnswerType::YesNo);
    // A statement with a confirming tag asks to confirm it; a comma alone does not.
    for q in [
        "The ledger service is deprecated, isn't it?",
        "The relay retries three times, doesn't it?",
        "Neither the ledger nor the relay is deprecated, right?",
    ] {
        assert_eq!(answer_type(q), AnswerType::YesNo, "{q}");
    }
    let q = "The relay was retired in which year, by the way?";
    assert_ne!(answer_type(q), AnswerType::YesNo);
}

#[test]
fn content_terms_drop_stopwords_and_case() {
    let t = content_terms("Who directed the film Jaws, in 1975?");
    let mut v: Vec<_> = t.into_iter().collect();
    v.sort();
    assert_eq!(v, ["1975", "directed", "film", "jaws"]);
}

#[test]
fn sentences_split_at_marks_followed_by_capitals() {
    let text = "Jaws is a 1975 film. It was directed by Steven Spielberg! The U.S. Army was not involved.\nNew line";
    assert_eq!(sentences("Dr. Smith met J. R. Tolkien. Then.").len(), 2);
    let s: Vec<_> = sentences(text)
        .into_iter()
        .map(|(a, b)| &text[a..b])
        .collect();
    assert_eq!(
        s,
        [
            "Jaws is a 1975 film.",
            "It was directed by Steven Spielberg!",
            "The U.S. Army was not involved.",
            "New line"
        ]
    );
    assert!(sentences("  ").is_empty());
    assert_eq!(sentences("3.5 percent rose. Then.").len(), 2);
}

#[test]
fn overlap_measures() {
    let a = content_terms("Steven Spielberg directed Jaws");
    let b = content_terms("Jaws was directed by Steven Spielberg in 1975");
    assert_eq!(recall(&a, &b), 1.0);
    assert!((jaccard(&a, &b) - 0.8).abs() < 1e-9);
    assert_eq!(jaccard(&HashSet::new(), &HashSet::new()), 1.0);
    assert!((answer_f1("Steven Spielberg", "Spielberg") - 2.0 / 3.0).abs() < 1e-9);
    assert_eq!(answer_f1("", "x"), 0.0);
}

#[test]
fn a_list_of_three_or_more_options_keeps_its_first_items() {
    let list = |q: &str| option_list(q).unwrap();
    assert_eq!(
        list("Which team runs the relay: platform, data, or billing?"),
        ["platform", "data", "billing"]
    );
    assert_eq!(
        list("Which compressor does the packer use, gzip, xz or zstd?"),
        ["gzip", "xz", "zstd"]
    );
    assert_eq!(
        list("Which is oldest: Alpha Station, Beta Works, or Gamma Lab?"),
        ["Alpha Station", "Beta Works", "Gamma Lab"]
    );
    assert_eq!(
        list("Does the relay log to syslog, to a file, or to stdout?"),
        ["to syslog", "to a file", "to stdout"]
    );
    assert_eq!(
        list("Is the default 1, 5 or 10 seconds?"),
        ["1 seconds", "5 seconds", "10 seconds"]
    );
    assert_eq!(
        list("Is the page limit 1,000, 32,000 or a million?"),
        ["1,000", "32,000", "a million"]
    );
    // Two options stay two: a stem before the pair, a title with a comma, a name the
    // stem ends with, a question word.
    assert_eq!(
        list("Which came first, Blue Quarry or Red Harbor?").len(),
        2
    );
    assert_eq!(
        list("Which film came out first, Romeo, Juliet And Dusk or Hello Mariner?").len(),
        2
    );
    assert_eq!(
        list("Which director advised Pellham Studios, Ada Lind or Bo Strand?").len(),
        2
    );
    assert_eq!(
        list("Out of the box, which redraws more often, pelt or brisk?"),
        ["pelt", "brisk"]
    );
    assert_eq!(
        list("Which film came out first, No, No, Marlow or Hello Mariner?").len(),
        2
    );
    assert_eq!(option_list("Which film came out first?"), None);
    assert_eq!(
        list("Between Ada Lind and Bo Strand, who was born first?"),
        ["Ada Lind", "Bo Strand"]
    );
}

#[test]
fn value_alternatives_are_options_parallel_to_each_other() {
    let o = options;
    let pair = |a: &str, b: &str| Some((a.to_string(), b.to_string()));
    assert_eq!(
        o("Does the Kestrel client give up after 2 seconds or after 10?"),
        pair("after 2 seconds", "after 10")
    );
    assert_eq!(
        o("Does pelt wrap its lines at 72 columns or at 100 unless told otherwise?"),
        pair("at 72 columns", "at 100")
    );
    // A comma inside a number does not delimit; a scale word is a value.
    assert_eq!(
        o("Is the page limit of a quill archive 16,384 or a million?"),
        pair("16,384", "a million")
    );
    assert_eq!(
        o(
            "How far ahead may a token's clock be before the gateway rejects it, a minute or an hour?"
        ),
        pair("a minute", "an hour")
    );
    assert_eq!(
        o("When I call brisk without a mode, does it run fast or safe by default?"),
        pair("fast", "safe")
    );
    assert_eq!(
        o("Does the queue store a message once or once per consumer when it fans out?"),
        pair("once", "once per consumer")
    );
    assert_eq!(
        o(
            "If I start sprocket with no flags, does it spawn one worker per core or as many as it needs?"
        ),
        pair("one worker per core", "as many as it needs")
    );
    assert_eq!(
        o("Does the archiver compress with lz4 or with gzip when I pass no level?"),
        pair("with lz4", "with gzip")
    );
    assert_eq!(
        o("For how many desks does the quill daemon start a pager, is it 3 or is it 9?"),
        pair("3", "9")
    );
    // A clause is not an option: the pronoun, the auxiliary and the verb go.
    assert_eq!(
        o("Running mkarchive without -f, do I get tar or ZIP?"),
        pair("tar", "ZIP")
    );
    assert_eq!(
        o("When the vault seals a disk, does the key get the short profile or RAID6 by default?"),
        pair("the short profile", "RAID6")
    );
    assert_eq!(
        o(
            "Which is bigger by default: the block size mkquill picks or the page size brisk picks (on 4 KiB pages)?"
        ),
        pair("the block size mkquill picks", "the page size brisk picks")
    );
    // "..., or not?" asks yes or no; flags are options as they are written; a bare
    // conjunction shares the clause after the other.
    assert_eq!(o("Is compression on by default or not?"), None);
    assert_eq!(
        answer_type("Is compression on by default or not?"),
        AnswerType::YesNo
    );
    assert_eq!(
        o("Should I pass --force or -f to overwrite?"),
        pair("--force", "-f")
    );
    assert_eq!(
        o("Does the packer compress before or after it encrypts?"),
        pair("before it encrypts", "after it encrypts")
    );
    // A bare number shares the unit written after the other.
    assert_eq!(
        o("Does the pager keep three or five old copies?"),
        pair("three old copies", "five old copies")
    );
    assert_eq!(
        o("Does the relay give up after 2 or 10 seconds?"),
        pair("2 seconds", "10 seconds")
    );
    // Phrases of one kind: a preposition or conjunction opens both, a mirrored word
    // may sit further back, a focusing adverb opens the right one.
    assert_eq!(
        o("Should I snapshot the volume before the upload starts or after it ends?"),
        pair("before the upload starts", "after it ends")
    );
    assert_eq!(
        o("Does the sync tool match files by owner and mode or by hash unless told otherwise?"),
        pair("by owner and mode", "by hash")
    );
    assert_eq!(
        o("Is the quill cache written out when the daemon stops or only when I call flush?"),
        pair("when the daemon stops", "only when I call flush")
    );
    assert_eq!(
        o("Does the nightly export run at midnight or during the lunch break?"),
        pair("at midnight", "during the lunch break")
    );
    // The inverted question's opening, a serial comma, a second noun phrase after
    // the right option.
    assert_eq!(
        o("When a pelt worker dies, what happens to its jobs: are they requeued or lost?"),
        pair("requeued", "lost")
    );
    assert_eq!(
        o("Is signing mandatory, or optional?"),
        pair("mandatory", "optional")
    );
    assert_eq!(
        o("Who waits longer by default: brisk on a slow link, or pelt?"),
        pair("brisk on a slow link", "pelt")
    );
    assert_eq!(
        o("Is the ledger service or the export service the one that was retired?"),
        pair("the ledger service", "the export service")
    );
    // Not alternatives: a negated fact, a list the question counts, an earlier
    // sentence, a leading condition, a relation before a name.
    assert_eq!(
        o("Is it true that the cache doesn't keep the key or the value?"),
        None
    );
    assert_eq!(
        o("By default, how many read, write or admin tokens will the gateway issue per client?"),
        None
    );
    assert_eq!(
        o("I set none of QUILL_HOME, BRISK or PELT. Which folder does quill use?"),
        None
    );
    assert_eq!(
        o("If I pass neither -a or -b, how long does pelt wait?"),
        None
    );
    assert_eq!(
        o("Who is a son or daughter of the painter of Amber Fields?"),
        None
    );
    assert_eq!(
        o("Who is a son or daughter of the filmmaker behind the lost film Amber Fields?"),
        None
    );
    assert_eq!(
        o("The quill daemon reads the Amber Bazaar, or bazar, file at start. Which folder?"),
        None
    );
    // "..., or do I need -f?" asks a second question.
    assert_eq!(
        o("Does brisk overwrite the target by default, or do I need -f?"),
        None
    );
    // A value alternative is a choice, never a yes/no question.
    assert_eq!(
        answer_type("Does the Kestrel client give up after 2 seconds or after 10?"),
        AnswerType::Other
    );
    assert_eq!(
        answer_type("Is it true that the cache doesn't keep the key or the value?"),
        AnswerType::YesNo
    );
}

#[test]
fn the_last_sentence_ends_at_a_full_stop_after_a_word_not_an_abbreviation() {
    assert_eq!(
        last_sentence("I set none of them. Which one?"),
        "Which one?"
    );
    assert_eq!(
        last_sentence("Which case came first, Sellers v. Grant or Holm v. Dyer?"),
        "Which case came first, Sellers v. Grant or Holm v. Dyer?"
    );
    assert_eq!(last_sentence("Version 2.5 of quill. How big?"), "How big?");
}

#[test]
fn refusals_and_question_shapes() {
    assert!(is_refusal("The sources do not mention it."));
    assert!(is_refusal(""));
    assert!(!is_refusal("American"));
    assert!(is_refusal("Unknown."));
    assert!(!is_refusal("Unknown Pleasures"));
    assert!(is_refusal(
        "The documents do not state which queue it uses [2]."
    ));
    assert!(is_yes_no_question(
        "Are Ed Wood and Scott Derrickson from the same country?"
    ));
    assert!(!is_yes_no_question(
        "Which country is the director of Jaws from?"
    ));
    assert_eq!(
        options("Who was born first, Alice Smith or Bob Jones?"),
        Some(("Alice Smith".into(), "Bob Jones".into()))
    );
    assert_eq!(
        options("Is Kessel Peak II or Varnhorn closest to the tallest mountain?"),
        Some(("Kessel Peak II".into(), "Varnhorn".into()))
    );
    // 2Wiki's disambiguated titles keep their brackets.
    assert_eq!(
        options("Which film came out first, Marrowfield (Film) or The Heron'S Wing?"),
        Some(("Marrowfield (Film)".into(), "The Heron'S Wing".into()))
    );
    assert_eq!(
        options("Which is older, The Goblin Winter Fair or Lanterns and Ladders?"),
        Some((
            "The Goblin Winter Fair".into(),
            "Lanterns and Ladders".into()
        ))
    );
    assert_eq!(options("Which film came out first?"), None);
    // A serial comma before " or ", and a name with a lowercase joining word.
    assert_eq!(
        options("Which choir has the most members, Tin Sparrow, or Velvet Lantern?"),
        Some(("Tin Sparrow".into(), "Velvet Lantern".into()))
    );
    assert_eq!(
        options("Which band has more members Order of Kestrels or Fen ?"),
        Some(("Order of Kestrels".into(), "Fen".into()))
    );
    assert_eq!(
        options("Which came first The Keeper of the Dunes or Fen?"),
        Some(("The Keeper of the Dunes".into(), "Fen".into()))
    );
    assert_eq!(
        options("Is the Quarrelwort or the Fenbrake the genus of more species?"),
        Some(("Quarrelwort".into(), "Fenbrake".into()))
    );
    assert_eq!(
        options("The old school in the Tansy Market, or market, is in which town?"),
        None
    );
    // A joining word after a lowercase word is not inside a name.
    assert_eq!(
        options("Who was older, the director of Quarry Bells or Tamsin Vale?"),
        Some(("Quarry Bells".into(), "Tamsin Vale".into()))
    );
    assert_eq!(
        options("Who directed the sequel of Quarry Bells or Tamsin Vale?"),
        Some(("Quarry Bells".into(), "Tamsin Vale".into()))
    );
    // Invented names: options with lowercase words, abbreviations and articles.
    let pair = |a: &str, b: &str| Some((a.to_string(), b.to_string()));
    assert_eq!(
        options("Which drink is served warm, Hot toddy or Frozen punch?"),
        pair("Hot toddy", "Frozen punch")
    );
    assert_eq!(
        options("Which case was decided first, Sellers v. Grant or Holm v. Dyer?"),
        pair("Sellers v. Grant", "Holm v. Dyer")
    );
    assert_eq!(
        options("Which came first, the album Blue Quarry or the film Red Harbor?"),
        pair("Blue Quarry", "Red Harbor")
    );
    assert_eq!(
        options("Which came out first, Blue Quarry or Hello, Mariner?"),
        pair("Blue Quarry", "Hello, Mariner")
    );
    assert_eq!(
        options("Between Marta Ilsen and Pavel Drummond, who directed more films?"),
        pair("Marta Ilsen", "Pavel Drummond")
    );
    // Two readings of "and": not guessed.
    assert_eq!(
        options("Between Salt and Pepper and Oil and Vinegar, which came first?"),
        None
    );
    assert_eq!(options("Between the two wars, what changed?"), None);
    assert_eq!(
        answer_type("When was the palace founded?"),
        AnswerType::Date
    );
    assert_eq!(
        answer_type("How many members did it have?"),
        AnswerType::Number
    );
    assert_eq!(
        answer_type("The ferry was run by a firm that owned how many boats?"),
        AnswerType::Number
    );
    assert_eq!(answer_type("Are both ferns?"), AnswerType::YesNo);
    assert_eq!(answer_type("Who is older, A or B?"), AnswerType::Other);
    assert!(has_number_or_date("the late 12th century") && !has_number_or_date("Spynie Palace"));
    assert!(is_date_phrase("16 June 1942") && is_date_phrase("December 19, 1974"));
    assert!(is_date_phrase("1872 – 20 July 1928") && is_date_phrase("c. 1190"));
    assert!(!is_date_phrase("44") && !is_date_phrase("Quillmoor, 1921"));
    assert!(!is_date_phrase("8,515") && !is_date_phrase("1.5"));
    assert!(!is_date_phrase("May Quillmoor") && !is_date_phrase(""));
    assert!(asks_about_time("What is the date of birth of Anna Veltz?"));
    assert!(asks_about_time("Which of the two was born on a Sunday?"));
    assert!(!asks_about_time(
        "Where was the director of Blue Quarry born?"
    ));
}

#[test]
fn short_answer_takes_the_option_the_answer_named() {
    let fix = |q, a, s| reconcile_short_answer(q, a, s).map(|(s, why)| (s, why.as_str()));
    let q = "Who was born first, Piet Ormund or Anna Veltz?";
    assert_eq!(
        fix(q, "Piet Ormund", "1881"),
        Some(("Piet Ormund".into(), "option named in the answer"))
    );
    // A short answer that names an option stays, right or wrong.
    assert_eq!(fix(q, "Anna Veltz was born first.", "Veltz"), None);
    // An answer naming both options is ambiguous: keep the short answer.
    assert_eq!(
        fix(
            q,
            "Piet Ormund (1881) was born before Anna Veltz (1898).",
            "1881"
        ),
        None
    );
    // Shared words do not count as naming an option; a long answer gives the option.
    let q = "Which is closer to its town, Norbury International Airport or Castel Vey International Airport?";
    assert_eq!(
        fix(
            q,
            "Castel Vey International Airport, 5 miles from the town it serves, is closer by far.",
            "5 miles"
        )
        .unwrap()
        .0,
        "Castel Vey International Airport"
    );
    assert_eq!(
        fix(q, "The international airport is closer.", "5 miles"),
        None
    );
    let q = "Is Harlow University or Tamsin University public?";
    assert_eq!(
        fix(q, "Harlow University is public", "public").unwrap().0,
        "Harlow University"
    );
    assert_eq!(
        fix(
            q,
            "Harlow University, a public research university in Wessex",
            "public"
        )
        .unwrap()
        .0,
        "Harlow University"
    );
    let q = "Which band has more members Bell of Crows or Hum ?";
    assert_eq!(fix(q, "Bell of Crows", "4").unwrap().0, "Bell of Crows");
    // A disambiguator does not name an option.
    let q = "Which film came out first, Marrowfield (Film) or The Heron'S Wing?";
    assert_eq!(
        fix(q, "The Heron's Wing film came out first", "2016")
            .unwrap()
            .0,
        "The Heron'S Wing"
    );
    assert_eq!(
        fix(q, "The Heron's Wing", "1918").unwrap().0,
        "The Heron's Wing"
    );
    let q = "Is Harlow University or Tamsin University public?";
    // So are answers that are neither option.
    assert_eq!(fix(q, "Harlow University", "Both are public."), None);
    assert_eq!(fix(q, "Harlow University is older", "It depends"), None);
    // Refusals are left alone.
    assert_eq!(fix(q, "Harlow University", "unknown"), None);
}

#[test]
fn a_short_answer_naming_the_other_option_takes_the_answers() {
    let films = "Which film came out earlier, The Glass Harbour or Die Kleine Uhr?";
    let airports = "Which is older, Norbury Airport or Castel Vey Airport?";
    let cases: &[(&str, &str, &str, Option<&str>)] = &[
        // The answer names one option, the short answer the other: the answer's, as
        // the question writes it.
        (
            films,
            "Die kleine Uhr",
            "The Glass Harbour",
            Some("Die Kleine Uhr"),
        ),
        (
            films,
            "The Glass Harbour came out first.",
            "Die Kleine Uhr",
            Some("The Glass Harbour"),
        ),
        // Agreement, an answer naming both or neither, and a question without options
        // are left alone.
        (films, "Die Kleine Uhr", "Die Kleine Uhr", None),
        (
            films,
            "Die Kleine Uhr (1921) came out before The Glass Harbour (1950).",
            "The Glass Harbour",
            None,
        ),
        (films, "Both came out in 1950.", "The Glass Harbour", None),
        (
            "Who directed The Glass Harbour?",
            "Ada Wren",
            "Die Kleine Uhr",
            None,
        ),
        // Words the options share ("Airport") do not name either.
        (
            airports,
            "The airport at Norbury",
            "Castel Vey Airport",
            Some("Norbury Airport"),
        ),
        (airports, "The airport", "Castel Vey Airport", None),
        // Every option of a list: the first one too.
        (
            "Which compressor does the packer use: gzip, xz, or zstd?",
            "The packer uses gzip",
            "xz",
            Some("gzip"),
        ),
        (
            "Which compressor does the packer use: gzip, xz, or zstd?",
            "The packer uses xz",
            "xz",
            None,
        ),
    ];
    for &(q, answer, short, want) in cases {
        assert_eq!(
            contradicted_option(q, answer, short).as_deref(),
            want,
            "{answer:?} / {short:?}"
        );
    }
}

#[test]
fn a_comparison_sentence_gives_its_subject() {
    let fix = |q, a, s| reconcile_short_answer(q, a, s).map(|(s, why)| (s, why.as_str()));
    let q = "Who is younger, Mart Van Duren or Madeleine Simms?";
    let sentence = "Mart Van Duren is younger than Madeleine Simms.";
    assert_eq!(
        fix(q, sentence, sentence),
        Some(("Mart Van Duren".into(), "subject of the comparison"))
    );
    // The question's comparative only: "older" does not answer "who is younger".
    let older = "Madeleine Simms is older than Mart Van Duren.";
    assert_eq!(fix(q, older, older), None);
    let negated = "Madeleine Simms is not younger than Mart Van Duren.";
    assert_eq!(fix(q, negated, negated), None);
    // Naming both without a comparison stays.
    let both = "Mart Van Duren and Madeleine Simms";
    assert_eq!(fix(q, both, both), None);
    let q = "Which band has more members, Bell of Crows or Hum?";
    let s = "Hum has more members than Bell of Crows.";
    assert_eq!(fix(q, s, s).unwrap().0, "Hum");
}

#[test]
fn yes_no_questions_get_a_verdict_only_from_what_the_answer_says() {
    let fix = |q, a, s| reconcile_short_answer(q, a, s).map(|(s, _)| s);
    let q = "Were the Zorblatt 9 and the Veltz K-200 made in the same country?";
    assert_eq!(
        fix(
            q,
            "No",
            "The Zorblatt 9 and the Veltz K-200 were not made in the same country."
        ),
        Some("no".into())
    );
    assert_eq!(fix(q, "They weren't.", "They weren't."), Some("no".into()));
    // No guessing: "different" is not read as "no", and a verdict-less answer is not
    // "yes" by default.
    assert_eq!(
        fix(
            q,
            "They come from different countries.",
            "different countries"
        ),
        None
    );
    assert_eq!(fix(q, "Both are Ruritanian.", "Both are Ruritanian."), None);
    assert_eq!(fix(q, "Yes", "yes"), None);
    // An open question answered "yes" takes the answer's phrase.
    let q = "Both Pelmet Harbour and The Last Otters are what type of films?";
    assert_eq!(fix(q, "documentary", "yes"), Some("documentary".into()));
    assert_eq!(fix(q, "Yes, they are documentaries.", "yes"), None);
    assert_eq!(
        fix("Who directed Zorblatt Tide?", "Anna Veltz", "Veltz"),
        None
    );
}

#[test]
fn a_cut_json_reply_gives_the_field_read_so_far() {
    assert_eq!(
        truncated_string_field(
            r#"{"short_answer": "Brindle Hall is a covered mark"#,
            "short_answer"
        ),
        Some("Brindle Hall is a covered mark".to_string())
    );
    assert_eq!(
        truncated_string_field(
            "{\n  \"short_answer\": \"Velm \\\"the Old\\\" Bridge\", \"x\": 1",
            "short_answer"
        ),
        Some("Velm \"the Old\" Bridge".to_string())
    );
    // Cut inside an escape.
    assert_eq!(
        truncated_string_field(r#"{"short_answer": "Tinmouth \"#, "short_answer"),
        Some("Tinmouth ".to_string())
    );
    assert_eq!(
        truncated_string_field(r#"{"short_answer": "Caf\u00"#, "short_answer"),
        Some("Caf".to_string())
    );
    assert_eq!(
        truncated_string_field(r#"{"short_answer": "#, "short_answer"),
        None
    );
    assert_eq!(truncated_string_field("Tinmouth", "short_answer"), None);
    assert_eq!(
        truncated_string_field(r#"{"answer": "Tinmouth"#, "short_answer"),
        None
    );
}
