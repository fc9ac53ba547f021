//! Typed values (`metarag_agent::program::values`) through their public API: dates at
//! the precision written, quantities with units that convert, negation read in the
//! clause that states a predicate.

use metarag_agent::program::values::*;
use std::cmp::Ordering;

#[test]
fn dates_are_read_as_precisely_as_written_and_ordered_only_as_far_as_that_goes() {
    let d = Date::parse("born on 12 March 1949 in Ohio").unwrap();
    assert_eq!(d.to_string(), "12 March 1949");
    assert_eq!(Date::parse("March 12, 1949").unwrap(), d);
    let y = Date::parse("1949").unwrap();
    assert_eq!(y.order(&d), None);
    assert!(d.agrees_with(&y));
    assert_eq!(
        Date::parse("1950").unwrap().order(&d),
        Some(Ordering::Greater)
    );
    assert_eq!(Date::all("from 1901 to 12 May 1950").len(), 2);
}

#[test]
fn quantities_convert_between_units_that_convert() {
    let m = Quantity::parse("7,885 metres").unwrap();
    let ft = Quantity::parse("25,869 ft").unwrap();
    assert_eq!(m.order(&ft), Some(Ordering::Greater));
    let s = Quantity::parse("about 900 species").unwrap();
    assert_eq!(
        s.order(&Quantity::parse("1,200").unwrap()),
        Some(Ordering::Less)
    );
    assert_eq!(s.order(&m), None);
    assert_eq!(Quantity::parse("1.2 million").unwrap().value, 1_200_000.0);
    assert_eq!(Quantity::parse("three species").unwrap().value, 3.0);
    assert_eq!(
        numbers("level 3 of 19, 1,500 more"),
        vec![3.0, 19.0, 1500.0]
    );
}

#[test]
fn countries_meet_their_demonyms_and_other_names() {
    assert_eq!(nation("American"), nation("United States"));
    assert_eq!(nation("Cincinnati, Ohio, United States"), Some("US"));
    assert_eq!(nation("a German film director"), Some("DE"));
    assert!(same_name("British", "United Kingdom"));
    assert!(!same_name("French", "Belgian"));
    assert!(same_name("Steven Spielberg", "Spielberg"));
    assert!(!same_name("Postgres", "ClickHouse"));
}

#[test]
fn negation_is_read_in_the_clause_that_states_the_predicate() {
    let p = stems("deprecated");
    assert!(negated("The billing service is not deprecated.", &p));
    assert!(negated("The search service is not deprecated either", &p));
    assert!(negated("It isn't deprecated, but it is frozen", &p));
    assert!(!negated(
        "The old API is deprecated, but it is not removed",
        &p
    ));
    assert!(!negated(
        "Not only is it fast, it is deprecated",
        &stems("fast")
    ));
    assert!(!negated("The ledger is deprecated since 2021", &p));
    let follows = stems("follows symbolic links");
    assert!(negated(
        "By default, find does not follow symbolic links.",
        &follows
    ));
    let resize = stems("resize a mounted volume");
    assert!(negated("The tool can't resize a mounted volume.", &resize));
    assert!(negated("It no longer resizes a mounted volume.", &resize));
    assert!(!negated(
        "It can resize a mounted volume in T seconds.",
        &resize
    ));
}

#[test]
fn a_quantity_is_written_as_its_quote_writes_it() {
    let q = "Brown County had a population of 9,984 at the 2010 census.";
    assert_eq!(Quantity::written_in(q, 9984.0).as_deref(), Some("9,984"));
    assert_eq!(
        Quantity::written_in("It covers 16 km of coast.", 16.0).as_deref(),
        Some("16 km")
    );
    assert_eq!(
        Quantity::written_in("About 1.2 million people live there.", 1.2e6).as_deref(),
        Some("1.2 million")
    );
    assert_eq!(Quantity::written_in("No numbers here.", 3.0), None);
    // A unit follows its number: a word after a comma or an equals sign is not one.
    let table = "suffixes: c=1, w=2, b=512, kB=1000, K=1024";
    assert_eq!(Quantity::written_in(table, 512.0).as_deref(), Some("512"));
    assert_eq!(Quantity::parse("512, kB=1000").unwrap().unit, None);
    assert_eq!(
        Quantity::parse("a 4096-bit key").unwrap().unit.as_deref(),
        Some("bit")
    );
    assert_eq!(Quantity::parse("16km").unwrap().unit.as_deref(), Some("km"));
}
