//! PDF: text per page with lopdf, pdf-extract as the fallback for files lopdf reads badly.
//!
//! A PDF's streams are compressed, and a 2 MB file whose page inflates to 2 GB once took
//! ingest to 6.5 GB of memory: every stream is measured with a cap before text extraction
//! decodes it ([`check_streams`]), as a DOCX archive's entries are.

use super::{ParsedDocument, TextBuilder, assemble, file_title};
use crate::{Error, Result};
use metarag_core::{DocFormat, DocId};
use std::io::Write;
use std::path::Path;

mod xref;

/// Most bytes one stream may decompress to (as a DOCX entry may).
pub const MAX_STREAM_BYTES: u64 = 128 << 20;
/// Most bytes all the streams text extraction may decode decompress to together.
pub const MAX_TOTAL_BYTES: u64 = 512 << 20;
/// Highest ratio of the streams' decompressed bytes to the file's size, once past
/// [`RATIO_FLOOR`] bytes (text PDFs compress their streams a few times, not a hundred).
pub const MAX_RATIO: u64 = 100;
const RATIO_FLOOR: u64 = 16 << 20;

/// The bounds [`check_streams`] holds a document to.
#[derive(Debug, Clone, Copy)]
struct Limits {
    stream: u64,
    total: u64,
    ratio: u64,
    ratio_floor: u64,
}

const LIMITS: Limits = Limits {
    stream: MAX_STREAM_BYTES,
    total: MAX_TOTAL_BYTES,
    ratio: MAX_RATIO,
    ratio_floor: RATIO_FLOOR,
};

/// The key [`cap_object_streams`] puts in an object stream it would not expand.
const PAST_LIMIT: &str = "MetaragDecompressesPastLimit";

pub fn parse(path: &Path, id: &DocId, bytes: &[u8]) -> Result<ParsedDocument> {
    let parse_err = |reason: String| Error::Parse {
        path: path.to_path_buf(),
        format: "pdf",
        reason,
    };
    xref::check(bytes, MAX_STREAM_BYTES).map_err(parse_err)?;
    let doc = match load::<MAX_STREAM_BYTES>(bytes) {
        Ok(d) => d,
        Err(lopdf::Error::Decryption(_)) => {
            return Err(Error::Encrypted {
                path: path.to_path_buf(),
            });
        }
        Err(e) => return Err(parse_err(e.to_string())),
    };
    check_streams(&doc, bytes.len(), LIMITS).map_err(parse_err)?;
    let pages: Vec<u32> = doc.get_pages().keys().copied().collect();
    let mut texts: Vec<String> = pages
        .iter()
        .map(|&p| doc.extract_text(&[p]).unwrap_or_default())
        .collect();
    if texts.iter().all(|t| t.trim().is_empty()) {
        if doc.is_encrypted() {
            return Err(Error::Encrypted {
                path: path.to_path_buf(),
            });
        }
        // lopdf misses text drawn through some font encodings; pdf-extract decodes more.
        // It also panics on some malformed files (fuzzing found an `expect` on a missing
        // object in its content-stream walk): its failure, returned or panicked, leaves the
        // file without text, reported as such, rather than failing as a crash. And it
        // follows a page's `/Parent` chain without a guard, so a cycle (a page that is its
        // own parent, also found by fuzzing) never returns: such a file skips it.
        if !parent_cycle(&doc)
            && let Ok(Ok(alt)) =
                std::panic::catch_unwind(|| pdf_extract::extract_text_from_mem_by_pages(bytes))
        {
            texts = alt;
        }
    }
    let title = info_title(&doc).unwrap_or_else(|| file_title(path));
    let mut b = TextBuilder::new();
    for (i, t) in texts.iter().enumerate() {
        let page = pages.get(i).copied().unwrap_or(i as u32 + 1);
        b.page(page);
        b.push(t.trim());
    }
    let (text, sections) = b.finish();
    if text.trim().is_empty() {
        // Only a file whose pages hold images is likely a scan; a broken or font-less one
        // is not helped by OCR, and the hint misled there.
        let scanned = doc.get_pages().values().any(|&p| {
            doc.get_page_images(p)
                .is_ok_and(|images| !images.is_empty())
        });
        return Err(Error::Empty {
            path: if scanned {
                format!(
                    "{} (its pages are images: a scanned PDF needs OCR first)",
                    path.display()
                )
            } else {
                path.display().to_string()
            },
        });
    }
    let mut parsed = assemble(path, id, title, DocFormat::Pdf, (text, sections), bytes);
    (parsed.metadata, parsed.date) = info_metadata(&doc);
    Ok(parsed)
}

/// Loads the document; an object stream (which the loader expands to read the objects in
/// it) that decompresses past `CAP` bytes is left unexpanded and marked.
fn load<const CAP: u64>(bytes: &[u8]) -> std::result::Result<lopdf::Document, lopdf::Error> {
    lopdf::Document::load_mem_with_options(
        bytes,
        lopdf::LoadOptions {
            filter: Some(cap_object_streams::<CAP>),
            ..Default::default()
        },
    )
}

/// The loader's filter, called on every object as it is read and before an object stream
/// is expanded: an object stream that would decompress past `CAP` bytes loses its content
/// and gets the [`PAST_LIMIT`] key, which [`check_streams`] turns into the file's error.
/// lopdf hands the filter a `&mut` object and keeps what it returns, depending on where
/// the object stands, so the object is changed in place and returned as well. (An
/// encrypted file's object streams are expanded on another path, without the filter;
/// their regular streams are still measured after loading.)
fn cap_object_streams<const CAP: u64>(
    id: (u32, u16),
    object: &mut lopdf::Object,
) -> Option<((u32, u16), lopdf::Object)> {
    if let lopdf::Object::Stream(stream) = object
        && stream.dict.has_type(b"ObjStm")
        && decoded_size(stream, CAP).is_some_and(|n| n > CAP)
    {
        stream.dict.remove(b"Filter");
        stream.dict.remove(b"DecodeParms");
        stream
            .dict
            .set(PAST_LIMIT, lopdf::Object::Integer(CAP as i64));
        stream.set_content(Vec::new());
    }
    Some((id, object.clone()))
}

/// Refuses a document whose streams decompress past `limits`: one stream, all of them
/// together, or the ratio of their sum to the file's size. Each stream text extraction
/// could decode is measured by decompressing it with a cap and counting, never keeping
/// more than the cap; images are skipped (text extraction never decodes them). Filters
/// measured: FlateDecode (once or repeated), LZWDecode, either after ASCII85Decode;
/// streams under other filters are left alone, as lopdf cannot decode those.
fn check_streams(
    doc: &lopdf::Document,
    file_len: usize,
    limits: Limits,
) -> std::result::Result<(), String> {
    let mut total = 0u64;
    for (&(number, generation), object) in &doc.objects {
        let Ok(stream) = object.as_stream() else {
            continue;
        };
        let name = || format!("stream {number} {generation} R");
        if stream.dict.has(PAST_LIMIT.as_bytes()) {
            return Err(format!(
                "object {} decompresses to more than {}",
                name(),
                mib(limits.stream)
            ));
        }
        let image = stream
            .dict
            .get(b"Subtype")
            .and_then(lopdf::Object::as_name)
            .is_ok_and(|s| s == b"Image");
        if image {
            continue;
        }
        let size = match decoded_size(stream, limits.stream) {
            Some(n) => n,
            // Unfiltered content longer than the whole file was inflated while loading:
            // an encrypted file's object streams are expanded without the load filter
            // (the parse worker's memory limit bounds that expansion; this names it).
            None if stream.filters().is_err() && stream.content.len() > file_len => {
                stream.content.len() as u64
            }
            None => continue,
        };
        if size > limits.stream {
            return Err(format!(
                "{} decompresses to more than {}",
                name(),
                mib(limits.stream)
            ));
        }
        total += size;
        if total > limits.total {
            return Err(format!(
                "the file's streams decompress to more than {}",
                mib(limits.total)
            ));
        }
    }
    let compressed = (file_len as u64).max(1);
    if total > limits.ratio_floor && total / compressed > limits.ratio {
        return Err(format!(
            "compression ratio {}:1, beyond {}:1 (a decompression bomb?)",
            total / compressed,
            limits.ratio
        ));
    }
    Ok(())
}

fn mib(bytes: u64) -> String {
    format!("{} MiB", bytes >> 20)
}

/// How many bytes `stream` decodes to, counted up to just past `cap`; `None` for a stream
/// without a filter or under filters that are not measured (see [`check_streams`]).
fn decoded_size(stream: &lopdf::Stream, cap: u64) -> Option<u64> {
    let filters = stream.filters().ok()?;
    let early_change = stream
        .dict
        .get(b"DecodeParms")
        .and_then(lopdf::Object::as_dict)
        .and_then(|p| p.get(b"EarlyChange"))
        .and_then(lopdf::Object::as_i64)
        .map_or(true, |v| v != 0);
    decoded_len(&filters, early_change, &stream.content, cap)
}

/// How many bytes `data` decodes to under `filters` (in decoding order), counted up to
/// just past `cap`; `None` without filters or under filters that are not measured:
/// FlateDecode (once or repeated), LZWDecode (`early_change` from its parameters), either
/// after ASCII85Decode.
fn decoded_len<F: AsRef<[u8]>>(
    filters: &[F],
    early_change: bool,
    data: &[u8],
    cap: u64,
) -> Option<u64> {
    let mut rest = filters;
    let mut data = std::borrow::Cow::Borrowed(data);
    if let [first, tail @ ..] = rest
        && first.as_ref() == b"ASCII85Decode"
        && !tail.is_empty()
    {
        // Text to bytes: at most four bytes for each character, so decoding it whole is
        // bounded by the data's own size.
        let ascii = lopdf::Stream::new(
            lopdf::dictionary! { "Filter" => "ASCII85Decode" },
            data.to_vec(),
        );
        data = std::borrow::Cow::Owned(ascii.decompressed_content().ok()?);
        rest = tail;
    }
    match rest {
        [] => None,
        [lzw] if lzw.as_ref() == b"LZWDecode" => Some(lzw_size(&data, cap, early_change)),
        flate if flate.iter().all(|f| f.as_ref() == b"FlateDecode") => {
            // Every layer but the last is kept (capped) to feed the next.
            for _ in 1..flate.len() {
                let mut next = Vec::new();
                let n = inflate_into(&data, cap, Some(&mut next));
                if n > cap {
                    return Some(n);
                }
                data = std::borrow::Cow::Owned(next);
            }
            Some(inflate_into(&data, cap, None))
        }
        _ => None,
    }
}

/// What `data` inflates to, counted (and kept in `kept`, if given) up to just past `cap`.
/// As lopdf does, a stream whose zlib wrapper is broken and gives nothing is read again as
/// raw deflate.
fn inflate_into(data: &[u8], cap: u64, kept: Option<&mut Vec<u8>>) -> u64 {
    let mut sink = Capped { n: 0, cap, kept };
    let _ = std::io::copy(&mut flate2::read::ZlibDecoder::new(data), &mut sink);
    if sink.n == 0 && data.len() > 2 {
        let _ = std::io::copy(
            &mut flate2::read::DeflateDecoder::new(&data[2..]),
            &mut sink,
        );
    }
    sink.n
}

/// How many bytes an LZW stream decodes to, counted up to just past `cap`.
fn lzw_size(data: &[u8], cap: u64, early_change: bool) -> u64 {
    use weezl::{BitOrder, decode::Decoder};
    // As lopdf decodes it: 9-bit codes to start, most significant bit first.
    let mut decoder = if early_change {
        Decoder::with_tiff_size_switch(BitOrder::Msb, 8)
    } else {
        Decoder::new(BitOrder::Msb, 8)
    };
    let mut sink = Capped {
        n: 0,
        cap,
        kept: None,
    };
    let _ = decoder.into_stream(&mut sink).decode_all(data);
    sink.n
}

/// Where a decoder writes while it is measured: counts the bytes, keeps them if asked, and
/// refuses more once past the cap, which ends the decoding (a write past it still counts,
/// so the count says the cap was passed).
struct Capped<'a> {
    n: u64,
    cap: u64,
    kept: Option<&'a mut Vec<u8>>,
}

impl Write for Capped<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.n > self.cap {
            return Err(std::io::Error::other("past the cap"));
        }
        self.n += buf.len() as u64;
        if let Some(kept) = self.kept.as_mut() {
            kept.extend_from_slice(buf);
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Whether following `/Parent` from some page comes back to an object already passed.
fn parent_cycle(doc: &lopdf::Document) -> bool {
    doc.get_pages().values().any(|&page| {
        let mut seen = std::collections::HashSet::new();
        let mut id = page;
        while seen.insert(id) {
            match doc
                .get_dictionary(id)
                .and_then(|d| d.get(b"Parent"))
                .and_then(|p| p.as_reference())
            {
                Ok(parent) => id = parent,
                Err(_) => return false,
            }
        }
        true
    })
}

/// The document information dictionary, if the trailer has a readable one.
fn info_dict(doc: &lopdf::Document) -> Option<&lopdf::Dictionary> {
    match doc.trailer.get(b"Info").ok()? {
        lopdf::Object::Reference(r) => doc.get_object(*r).ok()?.as_dict().ok(),
        lopdf::Object::Dictionary(d) => Some(d),
        _ => None,
    }
}

/// An entry of the information dictionary as text (PDFDocEncoding or UTF-16), if it is a
/// non-empty string.
fn info_text(doc: &lopdf::Document, key: &[u8]) -> Option<String> {
    let raw = info_dict(doc)?.get(key).ok()?.as_str().ok()?;
    let text = lopdf::decode_text_string(&lopdf::Object::String(
        raw.to_vec(),
        lopdf::StringFormat::Literal,
    ))
    .ok()
    .unwrap_or_else(|| String::from_utf8_lossy(raw).into_owned());
    let text = super::collapse_ws(&text);
    (!text.is_empty()).then_some(text)
}

/// The `/Title` of the document information dictionary, if it is a readable string.
fn info_title(doc: &lopdf::Document) -> Option<String> {
    info_text(doc, b"Title")
}

/// `/Author`, `/Subject` and `/Keywords` (a list, split at commas or semicolons) as
/// metadata, and the day of `/CreationDate` (`D:YYYYMMDD...`) as the date.
fn info_metadata(
    doc: &lopdf::Document,
) -> (serde_json::Map<String, serde_json::Value>, Option<i64>) {
    use serde_json::Value;
    let mut out = serde_json::Map::new();
    if let Some(a) = info_text(doc, b"Author") {
        out.insert("author".into(), Value::String(a));
    }
    if let Some(s) = info_text(doc, b"Subject") {
        out.insert("subject".into(), Value::String(s));
    }
    if let Some(k) = info_text(doc, b"Keywords") {
        let words = super::keyword_list(&k);
        if !words.is_empty() {
            out.insert("keywords".into(), Value::Array(words));
        }
    }
    let date = info_text(doc, b"CreationDate").and_then(|d| {
        let digits = d.strip_prefix("D:").unwrap_or(&d);
        let day = digits.get(..8)?;
        if !day.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        super::day_of(&format!("{}-{}-{}", &day[..4], &day[4..6], &day[6..8]))
    });
    (out, date)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lopdf::{Object, Stream, dictionary};

    const TEST_LIMITS: Limits = Limits {
        stream: 1 << 20,
        total: 3 << 20,
        ratio: 100,
        ratio_floor: 1 << 20,
    };

    fn zlib(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    /// A one-page document whose page is drawn by `streams` (already encoded, with their
    /// dictionaries), saved and read back through the capped loader and the check.
    fn checked(streams: Vec<Stream>) -> std::result::Result<lopdf::Document, String> {
        let bytes = saved(streams);
        let doc = load::<{ 1 << 20 }>(&bytes).map_err(|e| e.to_string())?;
        check_streams(&doc, bytes.len(), TEST_LIMITS).map(|()| doc)
    }

    fn saved(streams: Vec<Stream>) -> Vec<u8> {
        saved_page(streams, None)
    }

    /// One page drawn by `streams`, with `image` as its XObject `Im1` when given.
    fn saved_page(streams: Vec<Stream>, image: Option<Stream>) -> Vec<u8> {
        let mut doc = lopdf::Document::with_version("1.5");
        let pages_id = doc.new_object_id();
        let contents: Vec<Object> = streams
            .into_iter()
            .map(|s| doc.add_object(s).into())
            .collect();
        let mut page =
            dictionary! { "Type" => "Page", "Parent" => pages_id, "Contents" => contents };
        if let Some(image) = image {
            let im = doc.add_object(image);
            page.set(
                "Resources",
                dictionary! { "XObject" => dictionary! { "Im1" => im } },
            );
        }
        let page = doc.add_object(page);
        doc.objects.insert(
            pages_id,
            Object::Dictionary(
                dictionary! { "Type" => "Pages", "Kids" => vec![page.into()], "Count" => 1 },
            ),
        );
        let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
        doc.trailer.set("Root", catalog);
        let mut out = Vec::new();
        doc.save_to(&mut out).unwrap();
        out
    }

    fn flate(content: &[u8]) -> Stream {
        Stream::new(dictionary! { "Filter" => "FlateDecode" }, zlib(content))
    }

    #[test]
    fn a_stream_that_inflates_past_the_cap_is_refused_naming_it() {
        let text = b"BT (fine) Tj ET ".repeat(1000);
        assert!(checked(vec![flate(&text)]).is_ok());
        // 2 MiB of spaces from a few kilobytes: past the 1 MiB cap.
        let e = checked(vec![flate(&text), flate(&vec![b' '; 2 << 20])]).unwrap_err();
        assert!(
            e.starts_with("stream ") && e.ends_with("decompresses to more than 1 MiB"),
            "{e}"
        );
        // Compressed twice over: each layer is measured.
        let twice = Stream::new(
            dictionary! { "Filter" => vec!["FlateDecode".into(), "FlateDecode".into()] },
            zlib(&zlib(&vec![b' '; 2 << 20])),
        );
        assert!(
            checked(vec![twice])
                .unwrap_err()
                .contains("more than 1 MiB")
        );
    }

    #[test]
    fn streams_past_the_total_or_the_ratio_are_refused() {
        // Three streams of 0.9 MiB, each under the cap and 2.7 MiB together, under the
        // total; but from a file of a few kilobytes. Four are past the total.
        let page = |b: u8| flate(&vec![b; 900 << 10]);
        let e = checked(vec![page(b' '), page(b'\n'), page(b'\t')]).unwrap_err();
        assert!(
            e.contains("compression ratio") && e.contains("beyond 100:1"),
            "{e}"
        );
        let e = checked((0..4).map(|i| page(b'a' + i)).collect()).unwrap_err();
        assert_eq!(e, "the file's streams decompress to more than 3 MiB");
    }

    /// A one-page document drawing `content`, with a one-pixel image when `image` is set.
    fn one_page(content: &[u8], image: bool) -> Vec<u8> {
        let image = image.then(|| {
            Stream::new(
                dictionary! { "Type" => "XObject", "Subtype" => "Image", "Width" => 1, "Height" => 1,
                    "ColorSpace" => "DeviceGray", "BitsPerComponent" => 8 },
                vec![0],
            )
        });
        saved_page(vec![Stream::new(dictionary! {}, content.to_vec())], image)
    }

    #[test]
    fn only_a_file_of_images_is_called_a_scan() {
        let id = DocId::new("s").unwrap();
        let scan = one_page(b"q 100 0 0 100 0 0 cm /Im1 Do Q", true);
        let err = parse(Path::new("scan.pdf"), &id, &scan)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("scan.pdf") && err.contains("OCR") && err.contains("no text"),
            "{err}"
        );
        let blank = one_page(b"0 0 m 10 10 l S", false);
        let err = parse(Path::new("blank.pdf"), &id, &blank)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("blank.pdf") && err.contains("no text") && !err.contains("OCR"),
            "{err}"
        );
    }

    #[test]
    fn images_and_unmeasured_filters_are_left_alone() {
        let image = Stream::new(
            dictionary! { "Type" => "XObject", "Subtype" => "Image", "Filter" => "FlateDecode" },
            zlib(&vec![0; 2 << 20]),
        );
        let plain = Stream::new(dictionary! {}, b"BT (plain) Tj ET".to_vec());
        assert!(checked(vec![image, plain]).is_ok());
    }

    #[test]
    fn an_lzw_stream_is_measured_as_it_decodes() {
        // LZW of one repeated byte, as lopdf would decode it (weezl, 8-bit symbols, MSB).
        let mut encoder = weezl::encode::Encoder::with_tiff_size_switch(weezl::BitOrder::Msb, 8);
        let encoded = encoder.encode(&vec![b' '; 2 << 20]).unwrap();
        let stream = Stream::new(dictionary! { "Filter" => "LZWDecode" }, encoded.clone());
        assert!(decoded_size(&stream, u64::MAX) == Some(2 << 20));
        assert!(
            checked(vec![stream])
                .unwrap_err()
                .contains("more than 1 MiB")
        );
        let small = weezl::encode::Encoder::with_tiff_size_switch(weezl::BitOrder::Msb, 8)
            .encode(b"BT (lzw) Tj ET")
            .unwrap();
        let stream = Stream::new(dictionary! { "Filter" => "LZWDecode" }, small);
        assert_eq!(decoded_size(&stream, 1 << 20), Some(14));
    }

    /// A PDF written by hand (lopdf's writer drops object streams it did not make): a
    /// page, and an object stream holding one small dictionary after `padding` bytes of
    /// spaces, which the loader would expand whole to read the dictionary.
    fn with_object_stream(padding: usize) -> Vec<u8> {
        let mut body = b"9 0 << /Padding true >>".to_vec();
        body.extend(std::iter::repeat_n(b' ', padding));
        let packed = zlib(&body);
        let content = b"BT (page) Tj ET";
        let stream = |dict: String, data: &[u8]| {
            let mut o = format!("<< {dict} /Length {} >>\nstream\n", data.len()).into_bytes();
            o.extend_from_slice(data);
            o.extend_from_slice(b"\nendstream");
            o
        };
        let objects = [
            b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
            b"<< /Type /Page /Parent 2 0 R /Contents 4 0 R >>".to_vec(),
            stream(String::new(), content),
            stream(
                "/Type /ObjStm /N 1 /First 4 /Filter /FlateDecode".into(),
                &packed,
            ),
        ];
        let mut out = b"%PDF-1.5\n".to_vec();
        let mut offsets = Vec::new();
        for (i, o) in objects.iter().enumerate() {
            offsets.push(out.len());
            out.extend_from_slice(format!("{} 0 obj\n", i + 1).as_bytes());
            out.extend_from_slice(o);
            out.extend_from_slice(b"\nendobj\n");
        }
        let xref = out.len();
        out.extend_from_slice(
            format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes(),
        );
        for o in offsets {
            out.extend_from_slice(format!("{o:010} 00000 n \n").as_bytes());
        }
        out.extend_from_slice(
            format!(
                "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
                objects.len() + 1
            )
            .as_bytes(),
        );
        out
    }

    #[test]
    fn an_object_stream_past_the_cap_is_not_expanded_and_refuses_the_file() {
        let marked = |o: &Object| {
            o.as_stream()
                .is_ok_and(|s| s.dict.has(PAST_LIMIT.as_bytes()))
        };
        // 2 MiB of padding: past the 1 MiB cap, left packed and marked.
        let bytes = with_object_stream(2 << 20);
        let doc = load::<{ 1 << 20 }>(&bytes).unwrap();
        assert!(doc.objects.values().any(marked));
        assert!(!doc.objects.contains_key(&(9, 0)), "not expanded");
        let e = check_streams(&doc, bytes.len(), TEST_LIMITS).unwrap_err();
        assert_eq!(e, "object stream 5 0 R decompresses to more than 1 MiB");
        // Under the cap it is expanded as before, and the file goes through.
        let bytes = with_object_stream(1000);
        let doc = load::<{ 1 << 20 }>(&bytes).unwrap();
        assert!(!doc.objects.values().any(marked));
        assert!(
            doc.objects.contains_key(&(9, 0)),
            "the object inside was read"
        );
        assert!(check_streams(&doc, bytes.len(), TEST_LIMITS).is_ok());
    }

    /// A file whose cross-reference stream (object 2) has the dictionary entries `dict`
    /// and the data `data`, after a stream keyword ended by `eol`, found through
    /// `startxref` as lopdf finds it.
    fn with_xref_stream(dict: &str, data: &[u8], eol: &str) -> Vec<u8> {
        let mut f = b"%PDF-1.5\n1 0 obj\n<< /Type /Catalog >>\nendobj\n".to_vec();
        let at = f.len();
        f.extend_from_slice(
            format!(
                "2 0 obj\n<< /Root 1 0 R /Size 3 {dict} /Length {} >>stream{eol}",
                data.len()
            )
            .as_bytes(),
        );
        f.extend_from_slice(data);
        f.extend_from_slice(format!("\nendstream\nendobj\nstartxref\n{at}\n%%EOF\n").as_bytes());
        f
    }

    #[test]
    fn a_cross_reference_stream_that_inflates_past_the_cap_is_refused_before_lopdf_reads_it() {
        // lopdf inflates a cross-reference stream whole, before any object is read: 2 KiB
        // of zlib holding 2 MiB of zeros, under a 1 MiB cap here (128 MiB in use).
        const CAP: u64 = 1 << 20;
        let bomb = zlib(&vec![0; 2 << 20]);
        assert!(bomb.len() < 4096);
        for dict in [
            "/Type /XRef /W [1 2 1] /Filter /FlateDecode",
            "/Type/XRef/W[1 2 1]/Filter/FlateDecode",
            "/Type /XRef /W [1 2 1] /Filter [/FlateDecode]",
            "/Type /XRef /DecodeParms << /Columns 4 >> /W [1 2 1] /Filter [ /FlateDecode ]",
            // lopdf reads any stream at a cross-reference offset as one, and reads names
            // with their escapes: neither the type nor the spelling may hide it.
            "/W [1 2 1] /Filter /FlateDecode",
            "/Type /XR#65f /W [1 2 1] /Filter /Fl#61teDecode",
        ] {
            for eol in ["\n", "\r\n"] {
                let e = xref::check(&with_xref_stream(dict, &bomb, eol), CAP).unwrap_err();
                assert_eq!(
                    e, "a cross-reference stream decompresses to more than 1 MiB",
                    "{dict}"
                );
            }
        }
        // Twice deflated counts the inner layer too.
        let twice = zlib(&bomb);
        let twice = with_xref_stream(
            "/W [1 2 1] /Filter [/FlateDecode /FlateDecode]",
            &twice,
            "\n",
        );
        assert!(xref::check(&twice, CAP).is_err());
        // A stray `endstream` in the data (stored deflate blocks: the word, then 2 MiB)
        // does not end what is measured: lopdf reads by `/Length`.
        let mut hidden = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::none());
        hidden.write_all(b"endstream").unwrap();
        hidden.write_all(&vec![0; 2 << 20]).unwrap();
        let hidden = hidden.finish().unwrap();
        assert!(hidden.windows(9).any(|w| w == b"endstream"));
        let e = xref::check(
            &with_xref_stream("/W [1 2 1] /Filter /FlateDecode", &hidden, "\n"),
            CAP,
        )
        .unwrap_err();
        assert!(e.contains("more than 1 MiB"), "{e}");
        // Reached through a trailer's /Prev from a cross-reference table, untyped.
        let mut chained = with_xref_stream("/W [1 2 1] /Filter /FlateDecode", &bomb, "\n");
        let at = String::from_utf8_lossy(&chained)
            .rsplit("startxref\n")
            .next()
            .and_then(|t| t.lines().next())
            .unwrap()
            .to_string();
        let table = chained.len();
        chained.extend_from_slice(
            format!("xref\n0 1\n0000000000 65535 f \ntrailer\n<< /Size 3 /Root 1 0 R /Prev {at} >>\nstartxref\n{table}\n%%EOF\n")
                .as_bytes(),
        );
        // (The first startxref stays in the file; drop it to leave only the /Prev path.)
        let first = chained.windows(9).position(|w| w == b"startxref").unwrap();
        chained.splice(first..first + 9, *b"         ");
        assert!(xref::check(&chained, CAP).is_err());
        // Padding that hides the data from the scan is refused where lopdf would read it.
        let padded = with_xref_stream(
            &format!("/W [1 2 1] {} /Filter /FlateDecode", " ".repeat(5000)),
            &bomb,
            "\n",
        );
        let e = xref::check(&padded, CAP).unwrap_err();
        assert!(
            e.contains("does not end its dictionary within 4 KiB"),
            "{e}"
        );
        // So is a file naming more offsets than revisions any file has.
        let mut many = b"%PDF-1.5\n".to_vec();
        for k in 0..5000 {
            many.extend_from_slice(format!("/Prev {k} ").as_bytes());
        }
        let e = xref::check(&many, CAP).unwrap_err();
        assert!(e.contains("5000 cross-reference offsets"), "{e}");
        // Many streams under the cap each are held to it together.
        let half = zlib(&vec![0; 600 << 10]);
        let mut two = with_xref_stream("/W [1 2 1] /Filter /FlateDecode", &half, "\n");
        let second = two.len();
        two.extend_from_slice(b"9 0 obj\n<< /W [1 2 1] /Filter /FlateDecode >>stream\n");
        two.extend_from_slice(&half);
        two.extend_from_slice(
            format!("\nendstream\nendobj\ntrailer << /Prev {second} >>\n").as_bytes(),
        );
        assert_eq!(
            xref::check(&two, CAP).unwrap_err(),
            "the cross-reference streams decompress to more than 1 MiB together"
        );
        // An ordinary one (three entries) and unfiltered data pass; so does an unmeasured
        // filter, which lopdf cannot decode either, and an outline item's /Prev (a
        // reference, not an offset).
        let fine = zlib(&[1, 0, 0, 0, 1, 0, 9, 0, 1, 0, 40, 0]);
        let ok = |dict: &str, data: &[u8]| xref::check(&with_xref_stream(dict, data, "\n"), CAP);
        assert!(ok("/Type /XRef /W [1 2 1] /Filter /FlateDecode", &fine).is_ok());
        assert!(ok("/Type /XRef /W [1 2 1]", &[1, 0, 9, 0]).is_ok());
        assert!(ok("/W [1 2 1] /Filter /RunLengthDecode", &bomb).is_ok());
        let mut outline = b"%PDF-1.5\n".to_vec();
        outline.extend_from_slice(b"3 0 obj\n<< /Title (x) /Prev 9 0 R /Next 4 0 R >>\nendobj\n");
        outline.extend_from_slice(b"9 0 obj\n<< /Length 9 /Filter /FlateDecode >>stream\n");
        outline.extend_from_slice(&bomb);
        outline.extend_from_slice(b"\nendstream\nendobj\n");
        assert!(xref::check(&outline, CAP).is_ok());
        // And parse names it as the file's error, in place of lopdf's allocation.
        let path = Path::new("xref-bomb.pdf");
        let doc_id = DocId::new("xref-bomb").unwrap();
        let mut past = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        for _ in 0..130 {
            past.write_all(&[0; 1 << 20]).unwrap();
        }
        let file = with_xref_stream(
            "/W [1 2 1] /Filter /FlateDecode",
            &past.finish().unwrap(),
            "\n",
        );
        let e = parse(path, &doc_id, &file).unwrap_err().to_string();
        assert!(
            e.contains("xref-bomb.pdf")
                && e.contains("a cross-reference stream decompresses to more than 128 MiB"),
            "{e}"
        );
    }

    #[test]
    fn impossible_cross_reference_stream_widths_refuse_the_file_before_lopdf_reads_it() {
        const CAP: u64 = 1 << 20;
        let xref = |w: &str| with_xref_stream(&format!("/Type /XRef {w} /Index [0 3]"), b"", "\n");
        let e = xref::check(&xref("/W[14444444444444 4 2]"), CAP).unwrap_err();
        assert!(e.contains("/W [14444444444444 4 2]"), "{e}");
        assert!(
            xref::check(&xref("/W [0 0 0]"), CAP).is_err(),
            "reads nothing"
        );
        assert!(xref::check(&xref("/W [1+9 2]"), CAP).is_err(), "1 and +9");
        // What lopdf refuses itself before allocating passes: a negative width, fewer
        // than three, anything but integers; so do PDF whitespace and extra widths.
        for fine in [
            "/W [1 4 2]",
            "/W[0 3 1]",
            "/W [ 1 8 2 ]",
            "/W [1\x004\x0c2\x00]",
            "/W [1 4 2 99]",
            "/W [1 -4 2]",
            "/W [1 99]",
            "/W [1 99.5 2]",
            "/W [1 4 2/Index[1 10]",
            "/W [1 9 2 /Extra]",
        ] {
            assert!(xref::check(&xref(fine), CAP).is_ok(), "{fine}");
        }
        // Untyped, or typed with an escape, the widths are still read.
        let untyped = with_xref_stream("/W [1 99 2]", b"", "\n");
        assert!(xref::check(&untyped, CAP).is_err());
        let escaped = with_xref_stream("/Type /XR#65f /#57 [1 99 2]", b"", "\n");
        assert!(xref::check(&escaped, CAP).is_err());
        // A CID font's widths (/W with large numbers and nested arrays) in another object,
        // and a trailer's keys beside a hybrid file's /XRefStm, are not a cross-reference
        // stream's.
        let mut font =
            b"%PDF-1.5\n1 0 obj\n<< /Type /Font /W [1 [500 600] 3 10 1000] >>\nendobj\n".to_vec();
        let at = font.len();
        font.extend_from_slice(
            b"2 0 obj\n<< /Type /XRef /Size 2 /W [1 2 1] /Length 0 >>stream\n\nendstream\nendobj\n",
        );
        font.extend_from_slice(format!("trailer << /XRefStm {at} /W [99] >>\n").as_bytes());
        assert!(xref::check(&font, CAP).is_ok());
        // And the file the fuzzer found is refused by name rather than aborting.
        let found = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fuzz/regressions/parse_pdf/xref-width-14tb.pdf"
        ))
        .unwrap();
        assert!(xref::check(&found, CAP).is_err());
    }

    #[test]
    fn an_encrypted_files_expanded_object_stream_is_measured_after_loading() {
        // Under the cap the file reads, page text decrypted.
        let bytes = metarag_testkit::encrypted_pdf("sealed page text", 1000);
        let doc = load::<{ 1 << 20 }>(&bytes).unwrap();
        assert!(
            doc.objects.contains_key(&(7, 0)),
            "the object inside was read"
        );
        assert!(check_streams(&doc, bytes.len(), TEST_LIMITS).is_ok());
        assert!(doc.extract_text(&[1]).unwrap().contains("sealed page text"));
        // Past it: lopdf expanded it anyway (the filter is not called on this path), and
        // the check names it. The parse worker's memory limit is what bounds the expansion.
        let bytes = metarag_testkit::encrypted_pdf("sealed page text", 2 << 20);
        let doc = load::<{ 1 << 20 }>(&bytes).unwrap();
        let e = check_streams(&doc, bytes.len(), TEST_LIMITS).unwrap_err();
        assert_eq!(e, "stream 6 0 R decompresses to more than 1 MiB");
    }

    #[test]
    fn the_information_dictionary_gives_metadata_and_the_date() {
        let bytes = metarag_testkit::pdf("Airship Report", &["Zeppelins are rigid airships."]);
        let mut doc = lopdf::Document::load_mem(&bytes).unwrap();
        let info = doc.trailer.get(b"Info").unwrap().as_reference().unwrap();
        let dict = doc.get_object_mut(info).unwrap().as_dict_mut().unwrap();
        for (k, v) in [
            ("Author", "Ana  Ruiz"),
            ("Subject", "Airships"),
            ("Keywords", "zeppelin; blimp, , rigid"),
            ("CreationDate", "D:20240305101500+01'00'"),
        ] {
            dict.set(k, lopdf::Object::string_literal(v));
        }
        let mut out = Vec::new();
        doc.save_to(&mut out).unwrap();
        let id = DocId::new("report").unwrap();
        let d = parse(Path::new("report.pdf"), &id, &out).unwrap();
        assert_eq!(d.title, "Airship Report");
        assert_eq!(
            serde_json::Value::Object(d.metadata),
            serde_json::json!({"author": "Ana Ruiz", "subject": "Airships",
                "keywords": ["zeppelin", "blimp", "rigid"]})
        );
        assert_eq!(d.date, Some(1_709_596_800));
        // Only a title: no metadata, no date.
        let d = parse(Path::new("report.pdf"), &id, &bytes).unwrap();
        assert!(d.metadata.is_empty() && d.date.is_none());
    }
}
