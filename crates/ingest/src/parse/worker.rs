//! Parsing in a child process, for the parsers that are not ours to trust.
//!
//! A thread with a time limit catches a panic and gives up on a hang, but it cannot take
//! memory back, stop a loop or survive an abort: an encrypted PDF's object streams are
//! expanded by lopdf without the load filter that caps the others, a hang leaves a core busy
//! until the run ends, and a stack overflow kills the process. With [`Isolation::Process`]
//! the PDF and DOCX parsers run in a child process (the `metarag parse-worker` command, or
//! any program that calls [`serve_stdio`]) under an address-space limit, killed at the time
//! limit; whatever happens there is that one file's error.
//!
//! The protocol is private to this module: the parent writes one JSON header line and the
//! file's bytes to the child's standard input; the child answers with one JSON reply on its
//! standard output and exits 0. Any other ending (a signal, a non-zero exit, no reply) is
//! read from the exit status and the tail of the child's standard error.

use super::{CorpusMode, ParsedDocument, parse_file_within};
use crate::{Error, Result};
use metarag_core::{DocFormat, DocId};
use serde::{Deserialize, Serialize};
use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, ExitStatus, Stdio};
use std::time::Duration;

/// Where files are parsed.
#[derive(Debug, Clone, Default)]
pub enum Isolation {
    /// On a thread of this process, under the time limit (what a library user gets unless
    /// they ask for more: it needs no program to run).
    #[default]
    Thread,
    /// PDF and DOCX files in a child process ([`Worker`]); the other formats, whose
    /// parsers are this crate's own and bounded, on a thread.
    Process(Worker),
}

impl Isolation {
    /// Whether files of `format` go to the child process.
    pub fn isolates(&self, format: DocFormat) -> bool {
        matches!(self, Isolation::Process(_)) && ISOLATED.contains(&format)
    }
}

/// The formats [`Isolation::Process`] parses in a child: third-party parsers over
/// compressed containers and object graphs (lopdf, pdf-extract, zip, docx-rs).
pub const ISOLATED: [DocFormat; 2] = [DocFormat::Pdf, DocFormat::Docx];

/// Default address-space limit of a parsing child: well above what a 64 MiB PDF legitimately
/// needs (its streams are capped at 512 MiB decoded), well below what hurts the machine.
pub const DEFAULT_WORKER_MEMORY: u64 = 3 << 30;

/// How to start a parsing child: a program and its arguments (for metarag,
/// `[current_exe, "parse-worker"]`), and the child's memory limit.
#[derive(Debug, Clone)]
pub struct Worker {
    program: PathBuf,
    args: Vec<OsString>,
    memory: Option<u64>,
}

impl Worker {
    /// A worker run as `program args...`, with [`DEFAULT_WORKER_MEMORY`].
    pub fn new(
        program: impl Into<PathBuf>,
        args: impl IntoIterator<Item = impl Into<OsString>>,
    ) -> Self {
        Worker {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            memory: Some(DEFAULT_WORKER_MEMORY),
        }
    }

    /// The child's address-space limit in bytes (`None`: no limit). Applied by the child
    /// itself before it reads the file, on Unix; elsewhere the child runs unlimited.
    pub fn memory_limit(mut self, bytes: Option<u64>) -> Self {
        self.memory = bytes;
        self
    }

    /// The program run.
    pub fn program(&self) -> &Path {
        &self.program
    }
}

/// What the parent tells the child before the file's bytes.
#[derive(Debug, Serialize, Deserialize)]
struct Request {
    format: DocFormat,
    id: DocId,
    source: PathBuf,
    corpus: CorpusMode,
    memory: Option<u64>,
    time_limit_ms: u64,
    len: u64,
}

/// The child's answer.
#[derive(Debug, Serialize, Deserialize)]
enum Reply {
    Parsed {
        docs: Vec<ParsedDocument>,
        errors: Vec<WireError>,
    },
    Failed(WireError),
}

/// The parsers' errors on the wire; the parent puts back the path and format it knows.
#[derive(Debug, Serialize, Deserialize)]
enum WireError {
    Parse {
        reason: String,
    },
    Encrypted,
    Empty {
        path: String,
    },
    TextTooLarge {
        path: String,
        size: usize,
        limit: usize,
    },
    Record {
        line: usize,
        reason: String,
    },
    Other {
        message: String,
    },
}

impl WireError {
    fn from_error(e: Error) -> Self {
        match e {
            Error::Parse { reason, .. } => WireError::Parse { reason },
            Error::Encrypted { .. } => WireError::Encrypted,
            Error::Empty { path } => WireError::Empty { path },
            Error::TextTooLarge { path, size, limit } => {
                WireError::TextTooLarge { path, size, limit }
            }
            Error::Record { line, reason, .. } => WireError::Record { line, reason },
            other => WireError::Other {
                message: other.to_string(),
            },
        }
    }

    fn into_error(self, path: &Path, format: DocFormat) -> Error {
        match self {
            WireError::Parse { reason } => Error::Parse {
                path: path.to_path_buf(),
                format: format.as_str(),
                reason,
            },
            WireError::Encrypted => Error::Encrypted {
                path: path.to_path_buf(),
            },
            WireError::Empty { path } => Error::Empty { path },
            WireError::TextTooLarge { path, size, limit } => {
                Error::TextTooLarge { path, size, limit }
            }
            WireError::Record { line, reason } => Error::Record {
                path: path.to_path_buf(),
                line,
                reason,
            },
            WireError::Other { message } => Error::Parse {
                path: path.to_path_buf(),
                format: format.as_str(),
                reason: message,
            },
        }
    }
}

/// Longer the parent waits than the child's own time limit before it kills the child: the
/// child reports its own timeout as a clean error when it can.
const KILL_GRACE: Duration = Duration::from_secs(5);

/// How much of the child's standard error is kept for the message.
const STDERR_TAIL: usize = 4096;

/// Parses one file in a child process started from `worker`; the same contract as
/// [`super::parse_file_within`], plus a memory limit and a kill at `limit`.
pub(super) fn parse_in_child(
    worker: &Worker,
    path: &Path,
    id: &DocId,
    bytes: &[u8],
    format: DocFormat,
    corpus: CorpusMode,
    limit: Duration,
) -> Result<(Vec<ParsedDocument>, Vec<Error>)> {
    let failed = |reason: String| Error::Parse {
        path: path.to_path_buf(),
        format: format.as_str(),
        reason,
    };
    let request = Request {
        format,
        id: id.clone(),
        source: path.to_path_buf(),
        corpus,
        memory: worker.memory,
        time_limit_ms: limit.as_millis().try_into().unwrap_or(u64::MAX),
        len: bytes.len() as u64,
    };
    let mut header = serde_json::to_vec(&request).map_err(|e| worker_error(worker, e))?;
    header.push(b'\n');
    let mut child = Command::new(&worker.program)
        .args(&worker.args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| worker_error(worker, format!("cannot be started: {e}")))?;
    let (Some(mut stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(worker_error(worker, "started without its pipes"));
    };
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::scope(|scope| {
        // The request is written beside the reads: a child that dies early, or answers
        // before reading everything, must not leave this side blocked on a full pipe.
        scope.spawn(move || {
            // A child that exits early closes its end; what it said is read below.
            let _ = stdin
                .write_all(&header)
                .and_then(|()| stdin.write_all(bytes));
        });
        let err_tail = scope.spawn(move || tail(stderr, STDERR_TAIL));
        scope.spawn(move || {
            let mut out = Vec::new();
            let read = {
                let mut stdout = stdout;
                stdout.read_to_end(&mut out).map(|_| out)
            };
            let _ = tx.send(read);
        });
        let reply = match rx.recv_timeout(limit + KILL_GRACE) {
            Ok(read) => read.ok(),
            Err(_) => {
                // Killed, not abandoned: a hung parser would otherwise hold a core (and
                // its memory) for the rest of the run.
                let _ = child.kill();
                let _ = child.wait();
                return Err(failed(format!(
                    "the parser did not finish within {} s; the file was skipped",
                    limit.as_secs_f64()
                )));
            }
        };
        let status = child.wait().map_err(|e| worker_error(worker, e))?;
        let said = err_tail.join().unwrap_or_default();
        if !status.success() {
            return Err(failed(ended_badly(status, &said, worker.memory)));
        }
        let reply: Reply = reply
            .as_deref()
            .and_then(|r| serde_json::from_slice(r).ok())
            .ok_or_else(|| worker_error(worker, "exited without a readable reply"))?;
        match reply {
            Reply::Parsed { docs, errors } => Ok((
                docs,
                errors
                    .into_iter()
                    .map(|e| e.into_error(path, format))
                    .collect(),
            )),
            Reply::Failed(e) => Err(e.into_error(path, format)),
        }
    })
}

fn worker_error(worker: &Worker, reason: impl std::fmt::Display) -> Error {
    Error::Worker {
        program: worker.program.clone(),
        reason: reason.to_string(),
    }
}

/// The last `keep` bytes `from` writes, read to its end.
fn tail(mut from: impl Read, keep: usize) -> String {
    let mut kept = Vec::new();
    let mut buf = [0u8; 8192];
    while let Ok(n) = from.read(&mut buf) {
        if n == 0 {
            break;
        }
        kept.extend_from_slice(&buf[..n]);
        if kept.len() > 2 * keep {
            kept.drain(..kept.len() - keep);
        }
    }
    if kept.len() > keep {
        kept.drain(..kept.len() - keep);
    }
    String::from_utf8_lossy(&kept).into_owned()
}

/// Why a child that did not exit 0 failed, in the words a user can act on.
fn ended_badly(status: ExitStatus, stderr: &str, memory: Option<u64>) -> String {
    let last = stderr
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    if stderr.contains("memory allocation of") || stderr.contains("out of memory") {
        return match memory {
            Some(m) => format!(
                "the parser needed more than its memory limit of {} MiB; the file was skipped",
                m >> 20
            ),
            None => "the parser ran out of memory; the file was skipped".into(),
        };
    }
    if stderr.contains("has overflowed its stack") {
        return "the parser overflowed its stack on this file (nesting too deep)".into();
    }
    let how = signal_of(status)
        .map(|s| format!("killed by signal {s}"))
        .or_else(|| status.code().map(|c| format!("exit code {c}")))
        .unwrap_or_else(|| "ended".into());
    if last.is_empty() {
        format!("the parser crashed on this file ({how})")
    } else {
        format!("the parser crashed on this file ({how}: {last})")
    }
}

#[cfg(unix)]
fn signal_of(status: ExitStatus) -> Option<i32> {
    std::os::unix::process::ExitStatusExt::signal(&status)
}

#[cfg(not(unix))]
fn signal_of(_: ExitStatus) -> Option<i32> {
    None
}

/// The child's side: reads one request and file from standard input, parses it on the
/// parsing thread (panics caught, the time limit kept) under the requested memory limit,
/// writes the reply to standard output. A binary's hidden `parse-worker` command calls this
/// and nothing else; exit code 0 means a reply was written, whatever it says.
pub fn serve_stdio() -> ExitCode {
    match serve(std::io::stdin().lock(), std::io::stdout().lock()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("parse-worker: {e}");
            ExitCode::from(70)
        }
    }
}

fn serve(mut input: impl std::io::BufRead, mut output: impl Write) -> std::io::Result<()> {
    let mut line = Vec::new();
    input.read_until(b'\n', &mut line)?;
    let request: Request = serde_json::from_slice(&line).map_err(std::io::Error::other)?;
    limit_memory(request.memory)?;
    let mut bytes = Vec::with_capacity(request.len.min(1 << 30) as usize);
    input.take(request.len).read_to_end(&mut bytes)?;
    if bytes.len() as u64 != request.len {
        return Err(std::io::Error::other(format!(
            "expected {} bytes of the file, got {}",
            request.len,
            bytes.len()
        )));
    }
    let reply = match parse_file_within(
        &request.source,
        &request.id,
        &bytes,
        request.format,
        request.corpus,
        Duration::from_millis(request.time_limit_ms),
    ) {
        Ok((docs, errors)) => Reply::Parsed {
            docs,
            errors: errors.into_iter().map(WireError::from_error).collect(),
        },
        Err(e) => Reply::Failed(WireError::from_error(e)),
    };
    drop(bytes);
    serde_json::to_writer(&mut output, &reply).map_err(std::io::Error::other)?;
    output.flush()
}

/// Caps this process's address space, so that a decompression bomb fails an allocation
/// (and this child) instead of taking the machine's memory.
#[cfg(unix)]
fn limit_memory(bytes: Option<u64>) -> std::io::Result<()> {
    use rustix::process::{Resource, Rlimit, setrlimit};
    let Some(bytes) = bytes else { return Ok(()) };
    setrlimit(
        Resource::As,
        Rlimit {
            current: Some(bytes),
            maximum: Some(bytes),
        },
    )
    .map_err(std::io::Error::from)
}

#[cfg(not(unix))]
fn limit_memory(_: Option<u64>) -> std::io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shell(script: &str) -> Worker {
        Worker::new("sh", ["-c", script]).memory_limit(None)
    }

    fn run(worker: &Worker, limit: Duration) -> Result<(Vec<ParsedDocument>, Vec<Error>)> {
        let id = DocId::new("/t/a.pdf").unwrap();
        parse_in_child(
            worker,
            Path::new("/t/a.pdf"),
            &id,
            b"%PDF-1.4 not really",
            DocFormat::Pdf,
            CorpusMode::Auto,
            limit,
        )
    }

    #[test]
    fn a_child_killed_by_a_signal_is_that_files_error() {
        let e = run(
            &shell("cat >/dev/null; kill -9 $$"),
            Duration::from_secs(30),
        )
        .unwrap_err();
        let text = e.to_string();
        assert!(
            text.starts_with("/t/a.pdf: not a valid pdf file: the parser crashed"),
            "{text}"
        );
        assert!(text.contains("signal 9"), "{text}");
    }

    #[test]
    fn a_child_out_of_memory_says_so_with_the_limit() {
        let w = Worker::new(
            "sh",
            ["-c", "cat >/dev/null; echo 'memory allocation of 1073741824 bytes failed' >&2; kill -6 $$"],
        )
        .memory_limit(Some(512 << 20));
        let e = run(&w, Duration::from_secs(30)).unwrap_err().to_string();
        assert!(e.contains("more than its memory limit of 512 MiB"), "{e}");
    }

    #[test]
    fn a_hung_child_is_killed_at_the_limit() {
        let started = std::time::Instant::now();
        // No output and never exits on its own; KILL_GRACE is added to the limit.
        let e = run(&shell("exec sleep 600"), Duration::from_millis(100)).unwrap_err();
        assert!(e.to_string().contains("did not finish within 0.1 s"), "{e}");
        assert!(started.elapsed() < Duration::from_secs(60));
    }

    #[test]
    fn a_child_without_a_reply_is_our_fault_not_the_files() {
        let e = run(
            &shell("cat >/dev/null; echo garbage"),
            Duration::from_secs(30),
        )
        .unwrap_err();
        assert!(matches!(e, Error::Worker { .. }), "{e}");
        assert_eq!(e.fault(), metarag_core::Fault::Internal);
        let missing = Worker::new("/nonexistent/metarag", ["parse-worker"]);
        let e = run(&missing, Duration::from_secs(30))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("/nonexistent/metarag") && e.contains("cannot be started"),
            "{e}"
        );
    }

    #[test]
    fn the_protocol_round_trips_a_document_and_an_error() {
        // The child's side, in-process: a text file goes through `serve` and back.
        let text = b"Zeppelins are rigid airships.";
        let request = Request {
            format: DocFormat::Text,
            id: DocId::new("/t/z.txt").unwrap(),
            source: PathBuf::from("/t/z.txt"),
            corpus: CorpusMode::Auto,
            memory: None,
            time_limit_ms: 30_000,
            len: text.len() as u64,
        };
        let mut input = serde_json::to_vec(&request).unwrap();
        input.push(b'\n');
        input.extend_from_slice(text);
        let mut out = Vec::new();
        serve(&input[..], &mut out).unwrap();
        let Reply::Parsed { docs, errors } = serde_json::from_slice(&out).unwrap() else {
            panic!("not parsed: {}", String::from_utf8_lossy(&out));
        };
        assert!(errors.is_empty());
        assert_eq!(docs[0].text, "Zeppelins are rigid airships.");
        assert_eq!(docs[0].id.as_str(), "/t/z.txt");
        // An error keeps its kind across the wire.
        let e = WireError::from_error(Error::Encrypted {
            path: PathBuf::from("x"),
        });
        let back: WireError = serde_json::from_str(&serde_json::to_string(&e).unwrap()).unwrap();
        assert!(matches!(
            back.into_error(Path::new("/t/a.pdf"), DocFormat::Pdf),
            Error::Encrypted { .. }
        ));
    }
}
