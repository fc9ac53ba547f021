//! The cross-reference pre-scan: refuses, before lopdf reads the file, a cross-reference
//! stream lopdf would read without a bound. lopdf decodes these first, outside the load
//! filter that caps object streams, and it takes any stream at a cross-reference offset
//! for one, whatever its `/Type`:
//!
//! - field widths (`/W`) no file can have: lopdf allocates each field's buffer at the width
//!   the file gives (fuzzing found `/W [14444444444444 4 2]`, a 14 TB allocation that aborts
//!   the process), and widths of all zero read nothing, so each of the `/Index` entries, as
//!   many as the file says, is added without consuming input. Offsets fit in 8 bytes.
//! - data that decompresses past the cap: lopdf inflates the whole stream into memory (a
//!   2 MB file held 2 GiB of zeros: 4.4 GB in-process), measured here as the other streams
//!   are, counting without keeping, all of them against one budget.
//!
//! The scan is lexical and linear in the file: names are read as lopdf reads them (`#xx`
//! escapes decoded, so `/XR#65f` is `/XRef`), and the objects looked at are those at every
//! offset lopdf could follow (each `startxref`, and each integer `/Prev` and `/XRefStm`,
//! a superset of the trailer chain lopdf walks, where an object header starts) and those
//! typed `/XRef`.

use super::{decoded_len, mib};
use std::collections::BTreeSet;

/// How far past its start, or around a `/XRef` marker, an object's dictionary is looked
/// for (a cross-reference stream's is a few hundred bytes).
const WINDOW: usize = 4 << 10;
/// Most distinct cross-reference offsets a file may name (one per revision in a real
/// file; a file of millions would make the scan quadratic).
const MAX_OFFSETS: usize = 4096;

/// Refuses a file whose cross-reference streams lopdf would read without a bound: widths
/// past 8 bytes or all zero, or data that decodes past `cap` bytes (all of them together).
pub(super) fn check(bytes: &[u8], cap: u64) -> std::result::Result<(), String> {
    // lopdf reads offsets from the first `%PDF-`.
    let base = find(bytes, b"%PDF-").unwrap_or(0);
    let mut markers = Vec::new();
    let mut offsets = BTreeSet::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'/' => {
                let (name, end) = name(bytes, i);
                match name.as_slice() {
                    b"XRef" => markers.push(i),
                    b"Prev" | b"XRefStm" => {
                        if let Some(at) = offset_after(bytes, end) {
                            offsets.insert(base.saturating_add(at));
                        }
                    }
                    _ => {}
                }
                i = end.max(i + 1);
            }
            b's' if bytes[i..].starts_with(b"startxref") => {
                let end = i + b"startxref".len();
                if let Some(at) = offset_after(bytes, end) {
                    offsets.insert(base.saturating_add(at));
                }
                i = end;
            }
            _ => i += 1,
        }
    }
    if offsets.len() > MAX_OFFSETS {
        return Err(format!(
            "the file names {} cross-reference offsets (/Prev, /XRefStm, startxref), more than {MAX_OFFSETS}",
            offsets.len()
        ));
    }
    let mut budget = Budget { left: cap, cap };
    let mut measured = BTreeSet::new();
    for &at in &offsets {
        let Some(rest) = bytes.get(at..) else {
            continue;
        };
        // A cross-reference table, or no object (lopdf fails there before allocating);
        // a position inside other data (an uncompressed attachment's own `startxref`)
        // is not taken for an object.
        if !object_header(rest) {
            continue;
        }
        let hi = (at + WINDOW).min(bytes.len());
        let ended = check_object(bytes, at..hi, at, &mut budget, &mut measured)?;
        // An object lopdf may read as cross-references whose end this scan cannot see
        // (padding or a long value before its data) would go unmeasured.
        if !ended && hi == at + WINDOW {
            return Err(format!(
                "the object at cross-reference offset {} does not end its dictionary within {} KiB",
                at - base,
                WINDOW >> 10
            ));
        }
    }
    // Each marker's window stops at the markers before and after it, so that a file made
    // of markers is scanned in linear time (4 KiB each way, per marker, took minutes).
    for (k, &at) in markers.iter().enumerate() {
        let lo = at
            .saturating_sub(WINDOW)
            .max(k.checked_sub(1).map_or(0, |j| markers[j] + 1));
        let hi = (at + WINDOW).min(markers.get(k + 1).copied().unwrap_or(bytes.len()));
        let start = rfind(&bytes[lo..at], b"obj").map_or(lo, |j| lo + j + 3);
        check_object(bytes, start..hi, at, &mut budget, &mut measured)?;
    }
    Ok(())
}

/// What is left of the bytes cross-reference streams may decode to.
struct Budget {
    left: u64,
    cap: u64,
}

/// Checks the object in `window` (its dictionary starting at the window's start, the
/// keyword ending it at or after `from`): its `/W` arrays, and its data if it is a stream
/// whose data starts at a position not `measured` yet. Whether the window held the
/// object's end (`stream` or `endobj`).
fn check_object(
    bytes: &[u8],
    window: std::ops::Range<usize>,
    from: usize,
    budget: &mut Budget,
    measured: &mut BTreeSet<usize>,
) -> std::result::Result<bool, String> {
    let start = window.start;
    let window = &bytes[window];
    let tail = &window[from - start..];
    // The object's own dictionary: up to its `stream` keyword, or its `endobj` when it is
    // no stream (so a later object's keys are not read as its own).
    let stream = find(tail, b"stream").map(|s| s + from - start);
    let endobj = find(tail, b"endobj").map(|e| e + from - start);
    let (dict, data_at) = match (stream, endobj) {
        (Some(s), e) if e.is_none_or(|e| s < e) => (&window[..s], Some(start + s + 6)),
        (_, Some(e)) => (&window[..e], None),
        _ => (window, None),
    };
    let mut filters = Vec::new();
    let mut i = 0;
    while i < dict.len() {
        if dict[i] != b'/' {
            i += 1;
            continue;
        }
        let (key, end) = name(dict, i);
        i = end.max(i + 1);
        let value = skip_space(dict, end);
        match key.as_slice() {
            b"W" if dict.get(value) == Some(&b'[') => check_widths(dict, value + 1)?,
            b"Filter" => filters = filter_names(dict, value),
            _ => {}
        }
    }
    let ended = stream.is_some() || endobj.is_some();
    let Some(data_at) = data_at else {
        return Ok(ended);
    };
    if filters.is_empty() || !measured.insert(data_at) {
        return Ok(true);
    }
    // The data starts after the keyword's end of line and runs, for the decoders, to the
    // end of their own encoding: measured on the rest of the file, which is what lopdf
    // decodes at most, whatever `/Length` or a stray `endstream` say.
    let data = &bytes[data_at..];
    let data = match data {
        [b'\r', b'\n', rest @ ..] | [b'\n' | b'\r', rest @ ..] => rest,
        _ => data,
    };
    // ASCII85 ends at `~>`; what is copied to decode it counts against the budget too.
    let data = if filters.first().is_some_and(|f| f == b"ASCII85Decode") {
        let end = find(data, b"~>").map_or(data.len(), |e| e + 2);
        budget.left = budget.left.saturating_sub(end as u64);
        &data[..end]
    } else {
        data
    };
    let size = decoded_len(&filters, true, data, budget.left).unwrap_or(0);
    if size > budget.left {
        return Err(if size > budget.cap {
            format!(
                "a cross-reference stream decompresses to more than {}",
                mib(budget.cap)
            )
        } else {
            format!(
                "the cross-reference streams decompress to more than {} together",
                mib(budget.cap)
            )
        });
    }
    budget.left -= size;
    Ok(true)
}

/// Refuses a `/W` array (its contents from `from`) that lopdf would use with a field past
/// 8 bytes or with all three at 0. lopdf refuses an array that holds anything but
/// integers, or fewer than three, or a negative one, before allocating: those pass here.
/// Numbers are read as lopdf reads them (`1+4` is 1 and +4).
fn check_widths(dict: &[u8], from: usize) -> std::result::Result<(), String> {
    let mut widths: Vec<i64> = Vec::new();
    let mut i = from;
    loop {
        i = skip_space(dict, i);
        let sign = usize::from(matches!(dict.get(i), Some(b'+' | b'-')));
        let digits = dict
            .get(i + sign..)
            .unwrap_or_default()
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        let end = i + sign + digits;
        if digits == 0 {
            // The end of the array, or something lopdf will not take for a width.
            if dict.get(i) != Some(&b']') {
                return Ok(());
            }
            break;
        }
        if dict.get(end) == Some(&b'.') {
            return Ok(());
        }
        let text = std::str::from_utf8(&dict[i..end]).unwrap_or("0");
        widths.push(text.parse().unwrap_or(i64::MAX));
        i = end;
    }
    match widths.get(..3) {
        Some(three) if three.iter().any(|&w| w < 0) => Ok(()),
        Some(three) if three.iter().any(|&w| w > 8) || three.iter().all(|&w| w == 0) => {
            Err(format!(
                "a cross-reference stream's field widths /W [{}] are not 0-8 bytes with one above 0",
                widths
                    .iter()
                    .map(i64::to_string)
                    .collect::<Vec<_>>()
                    .join(" ")
                    .chars()
                    .take(80)
                    .collect::<String>()
            ))
        }
        _ => Ok(()),
    }
}

/// The filter names of a `/Filter` value at `at`: one name, or an array of them.
fn filter_names(dict: &[u8], at: usize) -> Vec<Vec<u8>> {
    match dict.get(at) {
        Some(b'/') => vec![name(dict, at).0],
        Some(b'[') => {
            let mut names = Vec::new();
            let mut i = at + 1;
            loop {
                i = skip_space(dict, i);
                match dict.get(i) {
                    Some(b'/') => {
                        let (n, end) = name(dict, i);
                        names.push(n);
                        i = end;
                    }
                    _ => return names,
                }
            }
        }
        _ => Vec::new(),
    }
}

/// The name starting at `bytes[at]` (a `/`) as lopdf reads it, `#xx` escapes decoded (its
/// first 32 bytes: no name that matters here is longer), and the index past it.
fn name(bytes: &[u8], at: usize) -> (Vec<u8>, usize) {
    let mut out = Vec::new();
    let mut i = at + 1;
    while let Some(&c) = bytes.get(i) {
        let byte = if c == b'#' {
            match (
                bytes.get(i + 1).and_then(hex_digit),
                bytes.get(i + 2).and_then(hex_digit),
            ) {
                (Some(h), Some(l)) => {
                    i += 3;
                    h << 4 | l
                }
                _ => break,
            }
        } else if is_regular(c) {
            i += 1;
            c
        } else {
            break;
        };
        if out.len() < 32 {
            out.push(byte);
        }
    }
    (out, i)
}

fn hex_digit(c: &u8) -> Option<u8> {
    (*c as char).to_digit(16).map(|d| d as u8)
}

/// Whether `bytes` start with an indirect object's header (`12 0 obj`), after whitespace.
fn object_header(bytes: &[u8]) -> bool {
    let Some((_, end)) = integer(bytes, skip_space(bytes, 0)) else {
        return false;
    };
    let Some((_, end)) = integer(bytes, skip_space(bytes, end)) else {
        return false;
    };
    bytes[skip_space(bytes, end)..].starts_with(b"obj")
}

/// The non-negative integer after `at` (past whitespace and comments) when it is an
/// offset, not the object number of a reference (`/Prev 12 0 R` in an outline item).
fn offset_after(bytes: &[u8], at: usize) -> Option<usize> {
    let (value, end) = integer(bytes, skip_space(bytes, at))?;
    let reference = integer(bytes, skip_space(bytes, end)).is_some_and(|(_, e)| {
        let r = skip_space(bytes, e);
        bytes.get(r) == Some(&b'R') && bytes.get(r + 1).is_none_or(|&c| !is_regular(c))
    });
    (!reference).then_some(value)
}

/// An unsigned integer at `at` (a `+` allowed) ending at a non-regular byte, and the index
/// past it.
fn integer(bytes: &[u8], at: usize) -> Option<(usize, usize)> {
    let from = at + usize::from(bytes.get(at) == Some(&b'+'));
    let digits = bytes
        .get(from..)?
        .iter()
        .take_while(|c| c.is_ascii_digit())
        .count();
    let end = from + digits;
    if digits == 0 || digits > 18 || bytes.get(end).is_some_and(|&c| is_regular(c)) {
        return None;
    }
    let value = std::str::from_utf8(&bytes[from..end]).ok()?.parse().ok()?;
    Some((value, end))
}

/// The index past whitespace and comments from `at`.
fn skip_space(bytes: &[u8], mut at: usize) -> usize {
    while let Some(&c) = bytes.get(at) {
        if is_whitespace(c) {
            at += 1;
        } else if c == b'%' {
            at += bytes[at..]
                .iter()
                .position(|&c| c == b'\n' || c == b'\r')
                .unwrap_or(bytes.len() - at);
        } else {
            break;
        }
    }
    at
}

fn is_whitespace(c: u8) -> bool {
    b" \t\n\r\0\x0C".contains(&c)
}

fn is_regular(c: u8) -> bool {
    !is_whitespace(c) && !b"()<>[]{}/%".contains(&c)
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn rfind(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).rposition(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_read_with_their_escapes_and_end_at_a_delimiter() {
        assert_eq!(name(b"/XR#65f ", 0), (b"XRef".to_vec(), 7));
        assert_eq!(name(b"/W[1 2 1]", 0), (b"W".to_vec(), 2));
        assert_eq!(name(b"/Fl#61teDecode/X", 0), (b"FlateDecode".to_vec(), 14));
        // A `#` without two hex digits ends the name, as lopdf reads it.
        assert_eq!(name(b"/A#zz", 0), (b"A".to_vec(), 2));
    }

    #[test]
    fn an_object_header_is_two_integers_and_obj() {
        assert!(object_header(b"12 0 obj\n<<"));
        assert!(object_header(b"\n 12 0 obj<<"));
        assert!(!object_header(b"xref\n0 1"));
        assert!(!object_header(b"0 obj"));
        assert!(!object_header(b"\x89PNG 1 0 obj"));
    }

    #[test]
    fn an_offset_is_an_integer_and_a_reference_is_not_one() {
        assert_eq!(offset_after(b" 1234\n>>", 0), Some(1234));
        assert_eq!(offset_after(b" %note\n 99 >>", 0), Some(99));
        assert_eq!(offset_after(b" 12 0 R /Next", 0), None);
        assert_eq!(offset_after(b" 12.5", 0), None);
        assert_eq!(offset_after(b" -4", 0), None);
    }
}
