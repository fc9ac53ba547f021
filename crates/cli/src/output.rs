//! Printing and argument helpers.

use crate::app::UserError;
use anyhow::Result;
use serde::Serialize;

/// Prints pretty JSON on stdout.
pub fn print_json<T: Serialize + ?Sized>(value: &T) -> Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

/// Writes pretty JSON to `out`, if given (a benchmark's `--out FILE`).
pub fn write_json<T: Serialize + ?Sized>(out: Option<&std::path::Path>, value: &T) -> Result<()> {
    use anyhow::Context;
    if let Some(out) = out {
        std::fs::write(out, serde_json::to_string_pretty(value)?)
            .with_context(|| format!("writing {}", out.display()))?;
    }
    Ok(())
}

/// Shortens `s` to at most `max` characters, marking the cut.
pub fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Parses `YYYY-MM-DD` (UTC midnight) or Unix seconds.
pub fn parse_date(s: &str) -> Result<i64> {
    if let Ok(secs) = s.parse::<i64>() {
        return Ok(secs);
    }
    let bad = || {
        UserError(format!(
            "invalid date `{s}`: expected YYYY-MM-DD or Unix seconds"
        ))
    };
    let mut parts = s.split('-');
    let (Some(y), Some(m), Some(d), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad().into());
    };
    let (y, m, d): (i64, i64, i64) = (
        y.parse().map_err(|_| bad())?,
        m.parse().map_err(|_| bad())?,
        d.parse().map_err(|_| bad())?,
    );
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return Err(bad().into());
    }
    Ok(days_from_civil(y, m, d) * 86_400)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(parse_date("1970-01-01").unwrap(), 0);
        assert_eq!(parse_date("2000-03-01").unwrap(), 951_868_800);
        assert_eq!(parse_date("12345").unwrap(), 12345);
        assert!(parse_date("2020-13-01").is_err());
        assert!(parse_date("yesterday").is_err());
    }

    #[test]
    fn truncation_marks_the_cut() {
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(truncate("abc", 4), "abc");
    }
}
