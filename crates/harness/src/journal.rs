//! The journal of an eval run's executed calls, so that a run stopped at any point
//! (Ctrl-C, a kill, a crash) resumes where it stopped: a call the earlier run made is
//! replayed from the journal instead of executed again, in the same epoch, and the
//! resumed run decides exactly as an uninterrupted one would.
//!
//! The file is JSON lines: a [`JournalHeader`] (what run wrote it: its command fingerprint and
//! epoch manifest), then one [`CallEntry`] per executed call, appended as calls finish,
//! and each exchange a pinned network records, appended as it is recorded (before the
//! call it answers), so a resumed run is answered as the interrupted one was. A
//! line cut by a kill is dropped on reading; the calls it would have held run again.
//! Each line is sealed ([`Chain`]): a digest of it and of every line before it follows
//! its JSON, so an edited, reordered or spliced journal is refused, never replayed.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, BufWriter, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use plangate_sandbox::{CallRecord, EpochManifest, Exchange, NetworkLog, Outcome};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::HarnessError;

/// The journal format's version, in every header: a journal from another version is
/// not resumed. Version 3: pinned network exchanges are journalled too.
const VERSION: u32 = 3;

/// The digest chain that seals a journal's lines. A sealed line is its JSON, a space,
/// and 32 hex digits: the first 16 bytes of SHA-256 over the previous line's digest
/// (zeros before the first line) and this line's JSON. A line whose digest does not
/// match was edited, or follows lines that were; reading refuses it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Chain([u8; 16]);

impl Chain {
    fn next(&self, json: &[u8]) -> [u8; 16] {
        let mut h = Sha256::new();
        h.update(self.0);
        h.update(json);
        let mut d = [0u8; 16];
        d.copy_from_slice(&h.finalize()[..16]);
        d
    }

    /// `json` as a sealed line, newline included; the chain moves past it.
    pub fn seal(&mut self, json: &[u8]) -> Vec<u8> {
        self.0 = self.next(json);
        let mut line = Vec::with_capacity(json.len() + 34);
        line.extend_from_slice(json);
        line.push(b' ');
        line.extend_from_slice(plangate_sandbox::hex(&self.0).as_bytes());
        line.push(b'\n');
        line
    }

    /// The JSON of a sealed `line` (its newline taken off) when its digest follows this
    /// chain; the chain moves past it. None when it does not.
    pub fn open<'l>(&mut self, line: &'l [u8]) -> Option<&'l [u8]> {
        let at = line.len().checked_sub(33)?;
        let (json, seal) = line.split_at(at);
        let hex = seal.strip_prefix(b" ")?;
        let next = self.next(json);
        let want = plangate_sandbox::hex(&next);
        (hex == want.as_bytes()).then(|| {
            self.0 = next;
            json
        })
    }
}

/// Where a call sits in a batch: its input line, its sample, its place in the sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CallAt {
    /// The input line (1-based).
    pub line: usize,
    /// The sample's index in the task.
    pub sample: usize,
    /// The call's index in the sample.
    pub call: usize,
}

/// The journal's first line: which run it belongs to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JournalHeader {
    /// Always [`VERSION`].
    pub plangate_journal: u32,
    /// The command that wrote it (`eval`, `score`).
    pub command: String,
    /// A digest of everything besides the samples that decides the run's results
    /// (catalog bytes, flags): a resumed run must have the same.
    pub fingerprint: String,
    /// The epoch the calls ran in (`eval`); a resumed run replays it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epoch: Option<EpochManifest>,
}

impl JournalHeader {
    /// A header for a run of `command` with this fingerprint.
    pub fn new(command: &str, fingerprint: String, epoch: Option<EpochManifest>) -> Self {
        JournalHeader {
            plangate_journal: VERSION,
            command: command.into(),
            fingerprint,
            epoch,
        }
    }

    /// Why an earlier run's journal cannot be resumed by this run, if it cannot.
    pub fn mismatch(&self, this: &JournalHeader) -> Option<String> {
        if self.plangate_journal != this.plangate_journal {
            return Some(format!(
                "it is journal version {}, this plangate writes {}",
                self.plangate_journal, this.plangate_journal
            ));
        }
        if self.command != this.command {
            return Some(format!(
                "it was written by `plangate {}`, not `plangate {}`",
                self.command, this.command
            ));
        }
        (self.fingerprint != this.fingerprint).then(|| {
            "the catalog or a flag that changes results differs from the run that wrote it"
                .to_string()
        })
    }
}

/// One executed call, as the journal keeps it.
#[derive(Debug, Serialize, Deserialize)]
pub struct CallEntry {
    line: usize,
    sample: usize,
    call: usize,
    tool: String,
    /// SHA-256 of the call's stdin, hex: a call replays only for the same input.
    stdin: String,
    #[serde(flatten)]
    outcome: Outcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    exit_code: Option<i32>,
    /// Base64.
    stdout: String,
    /// Base64.
    stderr: String,
    fuel_used: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    detail: Option<String>,
}

fn stdin_digest(stdin: &[u8]) -> String {
    plangate_sandbox::hex(&Sha256::digest(stdin))
}

impl CallEntry {
    fn record(&self) -> Option<CallRecord> {
        Some(CallRecord {
            outcome: self.outcome,
            exit_code: self.exit_code,
            stdout: B64.decode(&self.stdout).ok()?,
            stderr: B64.decode(&self.stderr).ok()?,
            fuel_used: self.fuel_used,
            // Wall time is a safety net, not evidence: nothing downstream reads it.
            wall: Duration::ZERO,
            detail: self.detail.clone(),
        })
    }
}

/// A line of `eval`'s journal after its header.
#[derive(Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub enum EvalEntry {
    /// An exchange a pinned network recorded.
    Exchange {
        /// The exchange, as a manifest keeps it.
        exchange: Exchange,
    },
    /// An executed call.
    Call(CallEntry),
}

/// A journal as an earlier run left it: its header, its complete lines after it (read
/// as `T`: `eval`'s calls and exchanges, `score`'s checkpoints), and how many bytes they
/// take.
pub struct Earlier<T = EvalEntry> {
    header: JournalHeader,
    entries: Vec<T>,
    /// Bytes of the file up to the end of its last complete line.
    complete: u64,
    /// The chain after its last complete line, which new lines continue.
    chain: Chain,
}

impl<T: serde::de::DeserializeOwned> Earlier<T> {
    /// Reads the journal at `path`: its header, and every complete entry after it. A
    /// last line a kill cut is dropped; a complete line whose seal does not hold, or
    /// that does not read, is damage, and the journal is refused.
    pub fn read(path: &Path) -> Result<Earlier<T>, HarnessError> {
        let bad = |message: String| HarnessError::Journal {
            path: path.to_path_buf(),
            message,
        };
        let file = File::open(path).map_err(|e| bad(format!("cannot open it: {e}")))?;
        let mut lines = BufReader::new(file);
        let mut buf = Vec::new();
        let mut complete = 0u64;
        let mut header: Option<JournalHeader> = None;
        let mut entries = Vec::new();
        let mut chain = Chain::default();
        for number in 1.. {
            buf.clear();
            let n = lines
                .read_until(b'\n', &mut buf)
                .map_err(|e| bad(format!("cannot read it: {e}")))?;
            // A last line without its newline was cut by a kill: it is not kept.
            if n == 0 || buf.last() != Some(&b'\n') {
                break;
            }
            let damaged = |why: &str| {
                bad(format!(
                    "line {number} is damaged ({why}): the journal was edited or is not \
                     plangate's; remove it to start over"
                ))
            };
            let json = chain
                .open(&buf[..n - 1])
                .ok_or_else(|| damaged("its digest does not match what the lines hold"))?;
            match &header {
                None => {
                    header = Some(serde_json::from_slice(json).map_err(|e| {
                        bad(format!("line 1 is not a plangate journal header: {e}"))
                    })?);
                }
                Some(_) => entries.push(
                    serde_json::from_slice::<T>(json)
                        .map_err(|e| damaged(&format!("it does not read: {e}")))?,
                ),
            }
            complete += n as u64;
        }
        let header = header.ok_or_else(|| bad("it has no header line".into()))?;
        Ok(Earlier {
            header,
            entries,
            complete,
            chain,
        })
    }

    /// The run that wrote it.
    pub fn header(&self) -> &JournalHeader {
        &self.header
    }

    /// Its entries, first one first.
    pub fn entries(&self) -> &[T] {
        &self.entries
    }

    /// The chain new lines continue.
    pub fn chain(&self) -> Chain {
        self.chain
    }

    /// The journal opened to go on: locked for this run, cut after its last complete
    /// line (a line a kill cut is dropped), positioned at its end.
    pub fn reopen(&self, path: &Path) -> Result<File, HarnessError> {
        let bad = |e: std::io::Error| HarnessError::Journal {
            path: path.to_path_buf(),
            message: format!("cannot append to it: {e}"),
        };
        let mut file = open_locked(path)?;
        file.set_len(self.complete).map_err(bad)?;
        file.seek(std::io::SeekFrom::End(0)).map_err(bad)?;
        Ok(file)
    }
}

/// Opens (or creates) a journal for writing, locked for this run alone: a second run
/// writing the same `--out` is refused before it truncates anything.
pub fn open_locked(path: &Path) -> Result<File, HarnessError> {
    use std::os::unix::fs::OpenOptionsExt as _;
    // Its owner's alone: it keeps what the tools were answered, as a manifest does.
    let file = OpenOptions::new()
        .mode(0o600)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| HarnessError::Journal {
            path: path.to_path_buf(),
            message: format!("cannot open it: {e}"),
        })?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(HarnessError::JournalBusy {
            path: path.to_path_buf(),
        }),
        Err(std::fs::TryLockError::Error(e)) => Err(HarnessError::Journal {
            path: path.to_path_buf(),
            message: format!("cannot lock it: {e}"),
        }),
    }
}

/// The calls of a run as they execute, and an earlier run's calls to replay.
pub struct Journal {
    path: PathBuf,
    earlier: HashMap<CallAt, CallEntry>,
    /// The earlier run's network exchanges, until the epoch takes them.
    network: Mutex<Vec<Exchange>>,
    /// Shared with the epoch, which logs its exchanges through it.
    writer: Arc<Writer>,
    replayed: AtomicUsize,
}

/// Where the journal's lines go, sealed in the order they are written.
struct Writer {
    out: Mutex<Option<(BufWriter<File>, Chain)>>,
    recorded: AtomicUsize,
    /// The first write error: the run goes on, but cannot be resumed past it.
    failed: Mutex<Option<String>>,
}

impl Writer {
    fn line(&self, json: &[u8]) -> bool {
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((w, chain)) = out.as_mut()
            && let Err(e) = w.write_all(&chain.seal(json))
        {
            *out = None;
            self.fail(e);
            return false;
        }
        out.is_some()
    }

    fn fail(&self, e: std::io::Error) {
        let mut failed = self.failed.lock().unwrap_or_else(|e| e.into_inner());
        failed.get_or_insert_with(|| e.to_string());
    }
}

impl NetworkLog for Writer {
    fn recorded(&self, exchange: &Exchange) {
        #[derive(Serialize)]
        struct Line<'e> {
            exchange: &'e Exchange,
        }
        let json = serde_json::to_vec(&Line { exchange }).expect("an exchange serializes");
        self.line(&json);
    }
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Journal")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl Journal {
    /// Starts a new journal at `path` (replacing any file there) with `header`.
    pub fn create(path: &Path, header: &JournalHeader) -> Result<Journal, HarnessError> {
        let mut file = open_locked(path)?;
        file.set_len(0).map_err(|e| HarnessError::Journal {
            path: path.to_path_buf(),
            message: format!("cannot create it: {e}"),
        })?;
        let mut chain = Chain::default();
        let line = chain.seal(&serde_json::to_vec(header).expect("a header serializes"));
        file.write_all(&line).map_err(|e| HarnessError::Journal {
            path: path.to_path_buf(),
            message: format!("cannot write it: {e}"),
        })?;
        Ok(Self::with(path, file, chain, HashMap::new()))
    }

    /// Continues an earlier run's journal: its calls are replayed, a line cut by a kill
    /// is cut off, and new calls are appended.
    pub fn resume(path: &Path, earlier: Earlier) -> Result<Journal, HarnessError> {
        let file = earlier.reopen(path)?;
        let chain = earlier.chain;
        let mut calls = HashMap::new();
        let mut network = Vec::new();
        for entry in earlier.entries {
            match entry {
                EvalEntry::Call(e) => {
                    let at = CallAt {
                        line: e.line,
                        sample: e.sample,
                        call: e.call,
                    };
                    calls.insert(at, e);
                }
                EvalEntry::Exchange { exchange } => network.push(exchange),
            }
        }
        let mut j = Self::with(path, file, chain, calls);
        j.network = Mutex::new(network);
        Ok(j)
    }

    fn with(path: &Path, file: File, chain: Chain, earlier: HashMap<CallAt, CallEntry>) -> Journal {
        Journal {
            path: path.to_path_buf(),
            earlier,
            network: Mutex::new(Vec::new()),
            writer: Arc::new(Writer {
                out: Mutex::new(Some((BufWriter::with_capacity(1 << 16, file), chain))),
                recorded: AtomicUsize::new(0),
                failed: Mutex::new(None),
            }),
            replayed: AtomicUsize::new(0),
        }
    }

    /// The network exchanges the earlier run recorded (once; none for a new journal):
    /// the resumed epoch answers from them ([`plangate_sandbox::Epoch::resume_network`]).
    pub fn take_network(&self) -> Vec<Exchange> {
        std::mem::take(&mut *self.network.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Where the epoch logs the exchanges it records
    /// ([`plangate_sandbox::Epoch::log_network`]): into this journal, each before the
    /// call that it answered.
    pub fn network_log(&self) -> Arc<dyn NetworkLog> {
        self.writer.clone()
    }

    /// The earlier run's record of the call at `at`, if it ran the same tool on the
    /// same input there.
    pub(crate) fn replay(&self, at: CallAt, tool: &str, stdin: &[u8]) -> Option<CallRecord> {
        let e = self.earlier.get(&at)?;
        if e.tool != tool || e.stdin != stdin_digest(stdin) {
            return None;
        }
        let record = e.record()?;
        // Not written again: the file still holds it, kept from the earlier run.
        self.replayed.fetch_add(1, Ordering::Relaxed);
        Some(record)
    }

    /// Appends an executed call.
    pub(crate) fn record(&self, at: CallAt, tool: &str, stdin: &[u8], r: &CallRecord) {
        let entry = CallEntry {
            line: at.line,
            sample: at.sample,
            call: at.call,
            tool: tool.into(),
            stdin: stdin_digest(stdin),
            outcome: r.outcome,
            exit_code: r.exit_code,
            stdout: B64.encode(&r.stdout),
            stderr: B64.encode(&r.stderr),
            fuel_used: r.fuel_used,
            detail: r.detail.clone(),
        };
        let json = serde_json::to_vec(&entry).expect("an entry serializes");
        if self.writer.line(&json) {
            self.writer.recorded.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Writes out what is buffered, so a stop after this loses nothing journalled.
    pub fn flush(&self) -> Result<(), HarnessError> {
        let w = &self.writer;
        let mut out = w.out.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((file, _)) = out.as_mut()
            && let Err(e) = file.flush()
        {
            *out = None;
            w.fail(e);
        }
        drop(out);
        match w.failed.lock().unwrap_or_else(|e| e.into_inner()).clone() {
            Some(message) => Err(HarnessError::Journal {
                path: self.path.clone(),
                message: format!("cannot write it: {message}"),
            }),
            None => Ok(()),
        }
    }

    /// Calls replayed from the earlier run.
    pub fn replayed(&self) -> usize {
        self.replayed.load(Ordering::Relaxed)
    }

    /// Calls this journal holds: replayed from the earlier run, and executed since.
    pub fn recorded(&self) -> usize {
        self.writer.recorded.load(Ordering::Relaxed) + self.replayed.load(Ordering::Relaxed)
    }

    /// The journal's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The run finished: the journal is no longer needed.
    pub fn remove(self) -> Result<(), HarnessError> {
        // The epoch may hold the writer still: nothing more is written through it.
        let out = self
            .writer
            .out
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        drop(out);
        std::fs::remove_file(&self.path).map_err(|e| HarnessError::Journal {
            path: self.path.clone(),
            message: format!("cannot remove it: {e}"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(stdout: &[u8]) -> CallRecord {
        CallRecord {
            outcome: Outcome::Exit { code: 0 },
            exit_code: Some(0),
            stdout: stdout.to_vec(),
            stderr: b"warn\n".to_vec(),
            fuel_used: 42,
            wall: Duration::from_millis(3),
            detail: None,
        }
    }

    fn at(line: usize) -> CallAt {
        CallAt {
            line,
            sample: 1,
            call: 0,
        }
    }

    #[test]
    fn a_cut_last_line_is_dropped_and_the_rest_replays() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("j");
        let header = JournalHeader::new("eval", "f".into(), None);
        let j = Journal::create(&path, &header).expect("create");
        j.record(at(1), "echo", b"{}", &rec(b"\x00\xffbytes"));
        j.record(at(2), "echo", b"{}", &rec(b"two"));
        j.flush().expect("flush");
        drop(j);
        // A kill in the middle of the last line.
        let len = std::fs::metadata(&path).expect("stat").len();
        let f = OpenOptions::new().write(true).open(&path).expect("open");
        f.set_len(len - 5).expect("cut");

        let earlier = Earlier::<EvalEntry>::read(&path).expect("read");
        assert_eq!(earlier.header(), &header);
        assert_eq!(earlier.entries.len(), 1);
        let j = Journal::resume(&path, earlier).expect("resume");
        let got = j.replay(at(1), "echo", b"{}").expect("replayed");
        assert_eq!(got.stdout, b"\x00\xffbytes");
        assert_eq!((got.fuel_used, got.stderr.as_slice()), (42, &b"warn\n"[..]));
        assert!(j.replay(at(2), "echo", b"{}").is_none(), "the cut call");
        assert!(
            j.replay(at(1), "echo", b"{\"a\":1}").is_none(),
            "other input"
        );
        assert!(j.replay(at(1), "other", b"{}").is_none(), "other tool");
        j.record(at(3), "echo", b"{}", &rec(b"three"));
        j.flush().expect("flush");
        drop(j);
        // The cut line is gone; the earlier call is kept once, the new one follows it.
        let again = Earlier::<EvalEntry>::read(&path).expect("read again");
        assert_eq!(again.entries.len(), 2);
        assert_eq!(
            again.complete,
            std::fs::metadata(&path).expect("stat").len()
        );
    }

    #[test]
    fn an_edited_or_spliced_journal_is_refused_naming_the_line() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("j");
        let j =
            Journal::create(&path, &JournalHeader::new("eval", "f".into(), None)).expect("create");
        j.record(at(1), "echo", b"{}", &rec(b"one"));
        j.record(at(2), "echo", b"{}", &rec(b"two"));
        j.flush().expect("flush");
        drop(j);
        let text = std::fs::read_to_string(&path).expect("read");
        let lines: Vec<&str> = text.lines().collect();
        let refused = |text: String, line: usize| {
            std::fs::write(&path, text).expect("write");
            let e = Earlier::<EvalEntry>::read(&path)
                .err()
                .expect("refused")
                .to_string();
            assert!(e.contains(&format!("line {line} is damaged")), "{e}");
        };
        // One result's bytes changed: a replay would decide on them.
        let edited = text.replacen(&B64.encode(b"two"), &B64.encode(b"owt"), 1);
        assert_ne!(edited, text);
        refused(edited, 3);
        // Two whole lines swapped, each sealed: the chain tells.
        refused(format!("{}\n{}\n{}\n", lines[0], lines[2], lines[1]), 2);
        // A line dropped from the middle.
        refused(format!("{}\n{}\n", lines[0], lines[2]), 2);
        // The seal taken off.
        refused(format!("{}\n", &lines[0][..lines[0].len() - 33]), 1);
    }

    #[test]
    fn network_exchanges_are_journalled_in_order_and_resumed() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("j");
        let exchange = |url: &str| Exchange {
            method: "GET".into(),
            url: url.into(),
            request_headers: vec![],
            credential_sha256: None,
            request_body_sha256: "0".repeat(64),
            status: 200,
            response_headers: vec![],
            response_body: B64.encode(url),
        };
        let j =
            Journal::create(&path, &JournalHeader::new("eval", "f".into(), None)).expect("create");
        assert!(j.take_network().is_empty(), "a new journal has none");
        let log = j.network_log();
        log.recorded(&exchange("http://a.test/1"));
        j.record(at(1), "fetch", b"{}", &rec(b"one"));
        log.recorded(&exchange("http://a.test/2"));
        j.flush().expect("flush");
        // The log shares the journal's file and its lock: both go before a resume.
        drop((j, log));
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&path).expect("stat").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let earlier = Earlier::<EvalEntry>::read(&path).expect("read");
        assert!(matches!(earlier.entries()[1], EvalEntry::Call(_)));
        let j = Journal::resume(&path, earlier).expect("resume");
        assert_eq!(
            j.take_network(),
            vec![exchange("http://a.test/1"), exchange("http://a.test/2")]
        );
        assert!(j.take_network().is_empty(), "taken once");
        assert!(j.replay(at(1), "fetch", b"{}").is_some());
    }

    #[test]
    fn headers_say_why_they_do_not_match() {
        let a = JournalHeader::new("eval", "f1".into(), None);
        assert_eq!(a.mismatch(&a.clone()), None);
        let b = JournalHeader::new("score", "f1".into(), None);
        assert!(a.mismatch(&b).expect("differs").contains("plangate eval"));
        let c = JournalHeader::new("eval", "f2".into(), None);
        assert!(a.mismatch(&c).expect("differs").contains("flag"));
    }
}
