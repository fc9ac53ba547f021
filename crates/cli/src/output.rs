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
    metarag_core::time::parse_day(s).ok_or_else(|| {
        UserError(format!(
            "invalid date `{s}`: expected YYYY-MM-DD or Unix seconds"
        ))
        .into()
    })
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
