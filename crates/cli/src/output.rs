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

/// Parses `KEY=VALUE` metadata given to `flag`: a value that reads as a JSON number,
/// boolean or string (`2020`, `true`, `"2020"`) is that; anything else is the text as
/// written.
pub fn parse_meta(s: &str, flag: &str) -> Result<(String, serde_json::Value)> {
    let Some((key, value)) = s.split_once('=') else {
        return Err(UserError(format!("{flag} `{s}`: expected KEY=VALUE")).into());
    };
    let key = key.trim();
    if key.is_empty() {
        return Err(UserError(format!("{flag} `{s}`: the key is empty")).into());
    }
    let value = match serde_json::from_str::<serde_json::Value>(value) {
        Ok(v @ (serde_json::Value::Number(_) | serde_json::Value::Bool(_))) => v,
        Ok(v @ serde_json::Value::String(_)) => v,
        _ => serde_json::Value::String(value.to_string()),
    };
    Ok((key.to_string(), value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_flags_read_numbers_booleans_and_text() {
        let v = |s| parse_meta(s, "--meta").unwrap().1;
        assert_eq!(v("year=2020"), serde_json::json!(2020));
        assert_eq!(v("draft=true"), serde_json::json!(true));
        assert_eq!(v("year=\"2020\""), serde_json::json!("2020"));
        assert_eq!(v("team=ops=core"), serde_json::json!("ops=core"));
        assert_eq!(v("tags=[1,2]"), serde_json::json!("[1,2]"));
        assert_eq!(parse_meta(" team =ops", "--meta").unwrap().0, "team");
        for bad in ["team", "=ops"] {
            let e = parse_meta(bad, "--where").unwrap_err().to_string();
            assert!(e.contains("--where"), "{e}");
        }
    }

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
