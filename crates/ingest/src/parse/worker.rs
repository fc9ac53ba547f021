//! Parsing in a child process, for the parsers that are not ours to trust.
//!
//! A thread with a time limit catches a panic and gives up on a hang, but it cannot take
//! memory back, stop a loop or survive an abort: an encrypted PDF's object streams are
//! expanded by lopdf without the load filter that caps the others, a hang leaves a core busy
//! until the run ends, and a stack overflow kills the process. With [`Isolation::Process`]
//! the PDF, DOCX and HTML parsers run in a child process (the `metarag parse-worker` command, or
//! any program that calls [`serve_stdio`]) under an address-space limit, killed at the time
//! limit; whatever happens there is that one file's error.
//!
//! The protocol is private to this module: for each file the parent writes one JSON header
//! line and the file's bytes to the child's standard input, and the child answers with one
//! JSON reply line on its standard output; it exits when its input closes. One child
//! serves a run's files in turn ([`Parsers`]); when it ends on a file instead (a signal, a
//! non-zero exit, no reply), the exit status and the tail of its standard error say why,
//! and the next file gets a new child.

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
    /// PDF, DOCX and HTML files in a child process ([`Worker`]); the other formats, whose
    /// parsers are this crate's own or linear by design (pulldown-cmark), on a thread.
    Process(Worker),
}

impl Isolation {
    /// Whether files of `format` go to the child process.
    pub fn isolates(&self, format: DocFormat) -> bool {
        matches!(self, Isolation::Process(_)) && ISOLATED.contains(&format)
    }
}

/// The formats [`Isolation::Process`] parses in a child: third-party parsers that build
/// object graphs or trees from compressed containers or markup (lopdf, pdf-extract, zip,
/// docx-rs, html5ever; quadratic and deep-nesting cases of the last were found by hand).
pub const ISOLATED: [DocFormat; 3] = [DocFormat::Pdf, DocFormat::Docx, DocFormat::Html];

/// Default address-space limit of a parsing child: well above what a 64 MiB PDF legitimately
/// needs (a 54 MB one of 6,000 pages took 0.4 GB; streams are capped at 512 MiB decoded),
/// well below what hurts the machine. Address space, not resident memory: the program's
/// image, the parsing thread's 256 MiB stack (reserved, not used) and whatever its
/// allocator reserves ahead count too.
pub const DEFAULT_WORKER_MEMORY: u64 = 2 << 30;

/// How to start a parsing child: a program and its arguments (for metarag,
/// `[current_exe, "parse-worker"]`), and the child's memory limit.
#[derive(Debug, Clone)]
pub struct Worker {
    program: PathBuf,
    args: Vec<OsString>,
    envs: Vec<(OsString, OsString)>,
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
            envs: Vec::new(),
            memory: Some(DEFAULT_WORKER_MEMORY),
        }
    }

    /// An environment variable set for the child (say, its allocator's settings).
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.envs.push((key.into(), value.into()));
        self
    }

    /// The child's address-space limit in bytes (`None`: no limit). Applied by the child
    /// itself before it reads the file, on Unix; elsewhere the child runs unlimited.
    pub fn memory_limit(mut self, bytes: Option<u64>) -> Self {
        self.memory = bytes;
        self
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

/// What a parse gives: the documents, and the errors of records that did not parse.
type Parsed = (Vec<ParsedDocument>, Vec<Error>);

/// How much of the child's standard error is kept for the message.
const STDERR_TAIL: usize = 4096;

/// The child's own time limit, a backstop only: the parent kills it at the real limit
/// (a thread given up on inside a child that lives on would keep a core busy).
const CHILD_TIME_LIMIT: Duration = Duration::from_secs(3600);

/// A child that has read a file this large is not given another: its heap keeps the
/// high-water mark of the parse, and a fresh child costs a few milliseconds.
const RETIRE_AFTER_BYTES: usize = 8 << 20;

/// The parsers of one ingest run, each file in this process or in the worker as
/// `isolation` says. One worker child serves the run's files in turn and is started
/// again after any file it failed on (a crash, a kill at the time limit, its memory
/// limit), or after a large file; it is stopped when this is dropped.
#[derive(Debug)]
pub struct Parsers {
    isolation: Isolation,
    session: std::sync::Mutex<Option<Session>>,
}

impl Parsers {
    /// Parsers for one run under `isolation` (no child starts before the first file
    /// that needs one).
    pub fn new(isolation: Isolation) -> Self {
        Parsers {
            isolation,
            session: std::sync::Mutex::new(None),
        }
    }

    /// Parses one file: the contract of [`super::parse_file`], with [`PARSE_TIME_LIMIT`](super::PARSE_TIME_LIMIT).
    pub fn parse(
        &self,
        path: &Path,
        id: &DocId,
        bytes: &[u8],
        format: DocFormat,
        corpus: CorpusMode,
    ) -> Result<(Vec<ParsedDocument>, Vec<Error>)> {
        self.parse_within(path, id, bytes, format, corpus, super::PARSE_TIME_LIMIT)
    }

    /// [`Parsers::parse`] with another time limit.
    pub fn parse_within(
        &self,
        path: &Path,
        id: &DocId,
        bytes: &[u8],
        format: DocFormat,
        corpus: CorpusMode,
        limit: Duration,
    ) -> Result<(Vec<ParsedDocument>, Vec<Error>)> {
        let worker = match &self.isolation {
            Isolation::Process(w) if self.isolation.isolates(format) => w,
            _ => return parse_file_within(path, id, bytes, format, corpus, limit),
        };
        // One file at a time per child: a poisoned lock only means a panic elsewhere
        // while the session was held, and the session itself is still sound or `None`.
        let mut slot = self
            .session
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut session = match slot.take() {
            Some(s) => s,
            None => Session::start(worker)?,
        };
        let (result, keep) = session.parse(worker, path, id, bytes, format, corpus, limit);
        if keep && bytes.len() < RETIRE_AFTER_BYTES {
            *slot = Some(session);
        }
        result
    }
}

/// The running child and the threads that drain its output.
#[derive(Debug)]
struct Session {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    /// One reply line per file; `None` once its standard output closed.
    replies: std::sync::mpsc::Receiver<Option<Vec<u8>>>,
    /// The tail of its standard error since the current file began.
    stderr: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
    stderr_done: std::sync::mpsc::Receiver<()>,
}

impl Session {
    fn start(worker: &Worker) -> Result<Session> {
        let mut child = Command::new(&worker.program)
            .args(&worker.args)
            .envs(worker.envs.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| worker_error(worker, format!("cannot be started: {e}")))?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(worker_error(worker, "started without its pipes"));
        };
        let (tx, replies) = std::sync::mpsc::channel();
        let spawned = std::thread::Builder::new()
            .name("parse-worker-out".into())
            .spawn(move || {
                let mut out = std::io::BufReader::new(stdout);
                loop {
                    let mut line = Vec::new();
                    match std::io::BufRead::read_until(&mut out, b'\n', &mut line) {
                        Ok(n) if n > 0 && line.ends_with(b"\n") => {
                            if tx.send(Some(line)).is_err() {
                                return;
                            }
                        }
                        // End of the stream (or a last line cut short by a crash).
                        _ => {
                            let _ = tx.send(None);
                            return;
                        }
                    }
                }
            });
        let err_tail = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (done_tx, stderr_done) = std::sync::mpsc::channel();
        let tail = err_tail.clone();
        let spawned_err = std::thread::Builder::new()
            .name("parse-worker-err".into())
            .spawn(move || {
                let mut from = stderr;
                let mut buf = [0u8; 8192];
                while let Ok(n) = from.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    let mut kept = tail
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    kept.extend_from_slice(&buf[..n]);
                    if kept.len() > 2 * STDERR_TAIL {
                        let cut = kept.len() - STDERR_TAIL;
                        kept.drain(..cut);
                    }
                }
                let _ = done_tx.send(());
            });
        if spawned.is_err() || spawned_err.is_err() {
            let _ = child.kill();
            let _ = child.wait();
            return Err(worker_error(
                worker,
                "could not start the threads that read it",
            ));
        }
        Ok(Session {
            child,
            stdin,
            replies,
            stderr: err_tail,
            stderr_done,
        })
    }

    /// One file through this child: the result, and whether the child may serve another.
    #[allow(clippy::too_many_arguments)]
    fn parse(
        &mut self,
        worker: &Worker,
        path: &Path,
        id: &DocId,
        bytes: &[u8],
        format: DocFormat,
        corpus: CorpusMode,
        limit: Duration,
    ) -> (Result<Parsed>, bool) {
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
            len: bytes.len() as u64,
        };
        let mut header = match serde_json::to_vec(&request) {
            Ok(h) => h,
            Err(e) => return (Err(worker_error(worker, e)), true),
        };
        header.push(b'\n');
        self.stderr
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clear();
        let stdin = &mut self.stdin;
        let replies = &self.replies;
        let child = &mut self.child;
        let reply = std::thread::scope(|scope| {
            // Written beside the wait: a child that dies or hangs before it has read the
            // file must not leave this side blocked on a full pipe past the time limit.
            scope.spawn(move || {
                // A child that exits early closes its end; what it said is read below.
                let _ = stdin
                    .write_all(&header)
                    .and_then(|()| stdin.write_all(bytes))
                    .and_then(|()| stdin.flush());
            });
            let reply = replies.recv_timeout(limit);
            if reply.is_err() {
                // Killed, not abandoned: a hung parser would otherwise hold a core (and its
                // memory) for the rest of the run; the kill also unblocks the writer.
                let _ = child.kill();
            }
            reply
        });
        let line = match reply {
            Ok(Some(line)) => line,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                self.stop();
                return (
                    Err(failed(format!(
                        "the parser did not finish within {} s; the file was skipped",
                        limit.as_secs_f64()
                    ))),
                    false,
                );
            }
            // Its output closed: it ended on this file. The status and its last words say how.
            Ok(None) | Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                let status = self.child.wait();
                // Its standard error closes as it exits; read what it said to the end.
                let _ = self.stderr_done.recv_timeout(Duration::from_secs(5));
                let said = String::from_utf8_lossy(
                    &self
                        .stderr
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner),
                )
                .into_owned();
                let reason = match status {
                    Ok(status) => ended_badly(status, &said, worker.memory),
                    Err(e) => format!("the parser process could not be waited for: {e}"),
                };
                return (Err(failed(reason)), false);
            }
        };
        match serde_json::from_slice::<Reply>(&line) {
            Ok(Reply::Parsed { docs, errors }) => (
                Ok((
                    docs,
                    errors
                        .into_iter()
                        .map(|e| e.into_error(path, format))
                        .collect(),
                )),
                true,
            ),
            Ok(Reply::Failed(e)) => (Err(e.into_error(path, format)), true),
            Err(e) => {
                self.stop();
                (
                    Err(worker_error(
                        worker,
                        format!("answered something that is not a reply ({e})"),
                    )),
                    false,
                )
            }
        }
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // Idle between files, so nothing is lost; a kill does not wait on the child.
        self.stop();
    }
}

fn worker_error(worker: &Worker, reason: impl std::fmt::Display) -> Error {
    Error::Worker {
        program: worker.program.clone(),
        reason: reason.to_string(),
    }
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

/// The child's side: reads requests and files from standard input until it closes, parses
/// each on the parsing thread (panics caught) under the memory limit the first request
/// names, and writes one reply line for each to standard output. A binary's hidden
/// `parse-worker` command calls this and nothing else; it exits 0 when its input ends, 70
/// on a request it cannot read.
pub fn serve_stdio() -> ExitCode {
    // Killed with the thread that started it: a parent that dies mid-parse (SIGKILL, a
    // crash) would otherwise leave this child parsing, unseen, up to its own time limit.
    #[cfg(target_os = "linux")]
    let _ = rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL));
    match serve(std::io::stdin().lock(), std::io::stdout().lock()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("parse-worker: {e}");
            ExitCode::from(70)
        }
    }
}

fn serve(mut input: impl std::io::BufRead, mut output: impl Write) -> std::io::Result<()> {
    let mut limited = false;
    loop {
        let mut line = Vec::new();
        if input.read_until(b'\n', &mut line)? == 0 {
            return Ok(());
        }
        let request: Request = serde_json::from_slice(&line).map_err(std::io::Error::other)?;
        if !limited {
            // Once, and before the first file is read: the limit can only come down.
            limit_memory(request.memory)?;
            limited = true;
        }
        let mut bytes = Vec::with_capacity(request.len.min(1 << 30) as usize);
        (&mut input).take(request.len).read_to_end(&mut bytes)?;
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
            CHILD_TIME_LIMIT,
        ) {
            Ok((docs, errors)) => Reply::Parsed {
                docs,
                errors: errors.into_iter().map(WireError::from_error).collect(),
            },
            Err(e) => Reply::Failed(WireError::from_error(e)),
        };
        drop(bytes);
        // One line: serde_json escapes every newline inside strings.
        serde_json::to_writer(&mut output, &reply).map_err(std::io::Error::other)?;
        output.write_all(b"\n")?;
        output.flush()?;
    }
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
        run_on(&Parsers::new(Isolation::Process(worker.clone())), limit)
    }

    fn run_on(parsers: &Parsers, limit: Duration) -> Result<(Vec<ParsedDocument>, Vec<Error>)> {
        let id = DocId::new("/t/a.pdf").unwrap();
        parsers.parse_within(
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
            &shell("head -c 1 >/dev/null; kill -9 $$"),
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
            ["-c", "head -c 1 >/dev/null; echo 'memory allocation of 1073741824 bytes failed' >&2; kill -6 $$"],
        )
        .memory_limit(Some(512 << 20));
        let e = run(&w, Duration::from_secs(30)).unwrap_err().to_string();
        assert!(e.contains("more than its memory limit of 512 MiB"), "{e}");
    }

    #[test]
    fn a_hung_child_is_killed_at_the_limit() {
        let started = std::time::Instant::now();
        let e = run(&shell("exec sleep 600"), Duration::from_millis(200)).unwrap_err();
        assert!(e.to_string().contains("did not finish within 0.2 s"), "{e}");
        assert!(started.elapsed() < Duration::from_secs(30));
    }

    #[test]
    fn a_child_without_a_reply_is_our_fault_not_the_files() {
        let e = run(
            &shell("head -c 1 >/dev/null; echo garbage; sleep 600"),
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
    fn one_child_serves_files_in_turn_and_a_new_one_follows_a_crash() {
        // A child that answers every request with a failure reply, and says its pid on
        // standard error; after the third request it dies.
        let reply = serde_json::to_string(&Reply::Failed(WireError::Parse {
            reason: "pid $$".into(),
        }))
        .unwrap();
        let script = format!(
            "for i in 1 2 3; do IFS= read -r header; head -c 19 >/dev/null; echo \"{}\"; done; kill -9 $$",
            reply.replace('"', "\\\"")
        );
        let parsers = Parsers::new(Isolation::Process(shell(&script)));
        let limit = Duration::from_secs(30);
        let pid = |r: Result<(Vec<ParsedDocument>, Vec<Error>)>| {
            let e = r.unwrap_err().to_string();
            e.rsplit("pid ").next().unwrap().to_string()
        };
        let first = pid(run_on(&parsers, limit));
        assert_eq!(pid(run_on(&parsers, limit)), first, "the same child");
        assert_eq!(pid(run_on(&parsers, limit)), first);
        let crashed = run_on(&parsers, limit).unwrap_err().to_string();
        assert!(crashed.contains("signal 9"), "{crashed}");
        assert_ne!(
            pid(run_on(&parsers, limit)),
            first,
            "a new child after the crash"
        );
        // Formats the worker does not take stay in this process.
        let id = DocId::new("/t/n.txt").unwrap();
        let (docs, _) = parsers
            .parse(
                Path::new("/t/n.txt"),
                &id,
                b"plain",
                DocFormat::Text,
                CorpusMode::Auto,
            )
            .unwrap();
        assert_eq!(docs[0].text, "plain");
    }

    #[test]
    fn the_protocol_round_trips_documents_and_errors() {
        // The child's side, in-process: two text files through one `serve`, then the end.
        let mut input = Vec::new();
        for (name, text, format) in [
            ("/t/z.txt", "Zeppelins are rigid airships.", DocFormat::Text),
            ("/t/e.pdf", "not a pdf", DocFormat::Pdf),
        ] {
            let request = Request {
                format,
                id: DocId::new(name).unwrap(),
                source: PathBuf::from(name),
                corpus: CorpusMode::Auto,
                memory: None,
                len: text.len() as u64,
            };
            input.extend(serde_json::to_vec(&request).unwrap());
            input.push(b'\n');
            input.extend_from_slice(text.as_bytes());
        }
        let mut out = Vec::new();
        serve(&input[..], &mut out).unwrap();
        let lines: Vec<&[u8]> = out
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .collect();
        assert_eq!(lines.len(), 2);
        let Reply::Parsed { docs, errors } = serde_json::from_slice(lines[0]).unwrap() else {
            panic!("not parsed: {}", String::from_utf8_lossy(lines[0]));
        };
        assert!(errors.is_empty());
        assert_eq!(docs[0].text, "Zeppelins are rigid airships.");
        assert_eq!(docs[0].id.as_str(), "/t/z.txt");
        let Reply::Failed(e) = serde_json::from_slice(lines[1]).unwrap() else {
            panic!("a broken PDF parsed");
        };
        let e = e
            .into_error(Path::new("/t/e.pdf"), DocFormat::Pdf)
            .to_string();
        assert!(e.starts_with("/t/e.pdf: not a valid pdf file: "), "{e}");
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
