//! `--resume`: where a run's journal lives (beside `--out`), whether a run continues an
//! interrupted one (the catalog and every flag that changes results must match, and no
//! other run may hold the journal), and how `eval`'s journal of executed calls is opened
//! and closed. `score`'s checkpoints are [`crate::checkpoints`]; the journal's format is
//! plangate-harness's. What a run should say about its journal comes back as a
//! [`Notice`], so the command alone prints.

use std::fmt;
use std::path::{Path, PathBuf};

use plangate_harness::{Earlier, EpochManifest, HarnessError, Journal, JournalHeader, World};
use sha2::{Digest, Sha256};

use crate::files::{real_path, replaced};

/// Why a run cannot resume, or cannot keep its journal.
#[derive(Debug, thiserror::Error)]
pub enum ResumeError {
    /// `--resume` without `--out`.
    #[error("--resume needs --out FILE: the journal is kept beside it")]
    NoOut,
    /// `--resume` with an `--out` that is not a regular file (a device, a pipe).
    #[error("--resume needs --out FILE, a regular file: the journal is kept beside it")]
    NotAFile,
    /// The catalog could not be read for the run's fingerprint.
    #[error("failed to read catalog {}", .path.display())]
    Catalog {
        /// The catalog.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The journal was written by a run this one cannot continue.
    #[error("cannot resume from {}: {why}; run the command it was written by, or remove the journal to start over", .path.display())]
    Mismatch {
        /// The journal.
        path: PathBuf,
        /// What differs.
        why: String,
    },
    /// An `eval` journal that records no epoch.
    #[error("cannot resume from {}: it records no epoch", .path.display())]
    NoEpoch {
        /// The journal.
        path: PathBuf,
    },
    /// `--epoch` names another epoch than the interrupted run's.
    #[error("cannot resume from {}: --epoch is not the epoch the interrupted run used", .path.display())]
    OtherEpoch {
        /// The journal.
        path: PathBuf,
    },
    /// The journal's recorded network exchanges cannot be replayed.
    #[error("cannot resume from {}", .path.display())]
    Network {
        /// The journal.
        path: PathBuf,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// `score`'s journal could not be created.
    #[error("cannot create journal {}", .path.display())]
    Create {
        /// The journal.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// `score`'s journal could not be written.
    #[error("cannot write journal {}", .path.display())]
    Write {
        /// The journal.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// `score`'s finished journal could not be removed.
    #[error("cannot remove journal {}", .path.display())]
    Remove {
        /// The journal.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// `score`'s samples changed before the line the interrupted run got to.
    #[error(
        "cannot resume: the samples through line {through} are not the lines the interrupted run decided (the file changed, or --max-line-bytes did); remove the journal to start over"
    )]
    SamplesChanged {
        /// The last line the interrupted run decided.
        through: usize,
    },
    /// The decisions an interrupted `score` kept are gone.
    #[error("cannot resume: {} (the decisions the interrupted run kept) is missing; remove the journal to start over", .path.display())]
    PartialMissing {
        /// The partial decisions.
        path: PathBuf,
    },
    /// The decisions an interrupted `score` kept are fewer than its journal counts.
    #[error("cannot resume: {} holds {have} bytes, fewer than the {keep} its journal counts (it was cut); remove the journal to start over", .path.display())]
    PartialCut {
        /// The partial decisions.
        path: PathBuf,
        /// Bytes there.
        have: u64,
        /// Bytes the journal counts.
        keep: u64,
    },
    /// The decisions an interrupted `score` kept are not the ones its journal counts.
    #[error("cannot resume: {} does not hold the decisions its journal counts ({why}); remove the journal to start over", .path.display())]
    PartialDiffers {
        /// The partial decisions.
        path: PathBuf,
        /// How they differ.
        why: String,
    },
    /// The partial decisions could not be read.
    #[error("cannot read {}", .path.display())]
    PartialRead {
        /// The partial decisions.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The partial decisions could not be made or written.
    #[error("cannot write {}", .path.display())]
    PartialWrite {
        /// The partial decisions.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// An output failed once every call had run: the journal keeps the calls.
    #[error("{error}; every call of the run is kept in {}: mend the output and run the same command with --resume to write the outputs without executing the calls again", .journal.display())]
    AfterTheWork {
        /// The output's error, with its causes.
        error: String,
        /// The journal.
        journal: PathBuf,
    },
    /// A checkpoint could not be put as JSON.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// The journal itself: busy, unreadable, or not written.
    #[error(transparent)]
    Harness(#[from] HarnessError),
}

impl ResumeError {
    /// Whether another run holds the journal (an error, unlike a journal that cannot be
    /// written at all, which only costs the run its `--resume`).
    pub fn busy(&self) -> bool {
        matches!(self, ResumeError::Harness(HarnessError::JournalBusy { .. }))
    }
}

/// What a run says about its journal, on its way.
#[derive(Debug)]
pub enum Notice {
    /// `--resume`, but no journal beside `--out`: the run starts from the beginning.
    NoJournal(PathBuf),
    /// A journal beside `--out` without `--resume`: it is replaced.
    StartsOver(PathBuf),
    /// The journal could not be made; the run goes on without one.
    Unresumable(String),
    /// A resumed run finished, having replayed this many calls from the journal.
    Replayed {
        /// Calls replayed.
        calls: usize,
        /// The journal.
        journal: PathBuf,
    },
    /// An interrupted `eval`: the calls made are kept in the journal, if there is one.
    Interrupted {
        /// Input lines read.
        lines: usize,
        /// The calls kept, and where.
        kept: Option<(usize, PathBuf)>,
    },
}

impl fmt::Display for Notice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Notice::NoJournal(journal) => write!(
                f,
                "--resume: no journal at {} (the run finished, or never started with this --out); starting from the beginning",
                journal.display()
            ),
            Notice::StartsOver(journal) => write!(
                f,
                "warning: {} holds an interrupted run; this run starts over (run the same command with --resume to continue it instead)",
                journal.display()
            ),
            Notice::Unresumable(why) => {
                write!(f, "warning: {why}: this run cannot be resumed")
            }
            Notice::Replayed { calls, journal } => write!(
                f,
                "resumed: {calls} calls replayed from {}",
                journal.display()
            ),
            Notice::Interrupted {
                lines,
                kept: Some((calls, journal)),
            } => write!(
                f,
                "interrupted after reading {lines} lines: {calls} calls are kept in {}; run the same command with --resume to go on from there",
                journal.display()
            ),
            Notice::Interrupted { lines, kept: None } => write!(
                f,
                "interrupted after reading {lines} lines; nothing was decided (with --out FILE, a journal would keep the calls made for --resume)"
            ),
        }
    }
}

/// Appends `suffix` to the file name of the file `out` names.
fn beside(out: &Path, suffix: &str) -> PathBuf {
    // Two runs writing one file through two spellings must meet at one journal.
    let real = real_path(out).unwrap_or_else(|| out.to_path_buf());
    let mut name = real.into_os_string();
    name.push(suffix);
    PathBuf::from(name)
}

/// The journal of a run writing `out`.
pub fn journal_path(out: &Path) -> PathBuf {
    beside(out, ".journal")
}

/// The decisions `score` has written so far, kept to resume.
pub fn partial_path(out: &Path) -> PathBuf {
    beside(out, ".partial")
}

/// A digest of what decides a run's results besides its samples: plangate's version, the
/// command, the catalog's bytes, and `flags` (every flag that changes a result, as the
/// command prints them). A run resumes only a journal with the same.
pub fn fingerprint(command: &str, catalog: &Path, flags: &str) -> Result<String, ResumeError> {
    let bytes = std::fs::read(catalog).map_err(|source| ResumeError::Catalog {
        path: catalog.to_path_buf(),
        source,
    })?;
    let mut h = Sha256::new();
    for part in [
        env!("CARGO_PKG_VERSION").as_bytes(),
        command.as_bytes(),
        &bytes,
        flags.as_bytes(),
    ] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part);
    }
    Ok(plangate_harness::hex(&h.finalize()))
}

/// The header of a journal of `command`, with its [`fingerprint`] and the epoch its
/// calls run in (`eval`).
pub fn header(
    command: &str,
    catalog: &Path,
    flags: &str,
    epoch: Option<EpochManifest>,
) -> Result<JournalHeader, ResumeError> {
    let fingerprint = fingerprint(command, catalog, flags)?;
    Ok(JournalHeader::new(command, fingerprint, epoch))
}

/// Whether this run continues an interrupted one: with `--resume`, and a journal beside
/// `--out`. Without `--resume`, a journal left there is announced and replaced.
pub fn journal_to_resume(
    resume: bool,
    out: Option<&Path>,
) -> Result<(Option<PathBuf>, Option<Notice>), ResumeError> {
    let Some(out) = out else {
        if resume {
            return Err(ResumeError::NoOut);
        }
        return Ok((None, None));
    };
    let journal = journal_path(out);
    Ok(match (resume, journal.exists()) {
        (true, true) => (Some(journal), None),
        (true, false) => (None, Some(Notice::NoJournal(journal))),
        (false, true) => (None, Some(Notice::StartsOver(journal))),
        (false, false) => (None, None),
    })
}

/// The `--out` a journal can be kept beside: a regular file (or one not there yet).
/// None when there is none, which `--resume` refuses.
pub fn resumable_out(resume: bool, out: Option<&Path>) -> Result<Option<&Path>, ResumeError> {
    match out.filter(|o| matches!(replaced(o), Ok(Some(_)))) {
        Some(out) => Ok(Some(out)),
        None if resume => Err(ResumeError::NotAFile),
        None => Ok(None),
    }
}

/// Refuses an earlier run's journal that this run cannot continue, saying why.
pub fn check_header(
    path: &Path,
    earlier: &JournalHeader,
    this: &JournalHeader,
) -> Result<(), ResumeError> {
    match earlier.mismatch(this) {
        Some(why) => Err(ResumeError::Mismatch {
            path: path.to_path_buf(),
            why,
        }),
        None => Ok(()),
    }
}

/// An interrupted `eval`'s journal, read before its epoch is pinned again.
pub type EarlierEval = (PathBuf, Earlier);

/// The journal an `eval` run continues (`--resume`, and one beside `--out`), read.
pub fn earlier_eval(
    resume: bool,
    out: Option<&Path>,
) -> Result<(Option<EarlierEval>, Option<Notice>), ResumeError> {
    let (path, notice) = journal_to_resume(resume, out)?;
    let earlier = path
        .map(|path| Earlier::read(&path).map(|e| (path, e)))
        .transpose()?;
    Ok((earlier, notice))
}

/// The epoch manifest an `eval` run replays: an interrupted run's (from its journal,
/// which `--epoch`, when `given`, must equal), else `given`, else none (a new epoch).
pub fn epoch_to_replay(
    given: Option<EpochManifest>,
    earlier: Option<&EarlierEval>,
) -> Result<Option<EpochManifest>, ResumeError> {
    let Some((path, earlier)) = earlier else {
        return Ok(given);
    };
    if earlier.header().command != "eval" {
        return Err(ResumeError::Mismatch {
            path: path.clone(),
            why: format!(
                "it was written by `plangate {}`, not `plangate eval`",
                earlier.header().command
            ),
        });
    }
    let Some(journalled) = earlier.header().epoch.clone() else {
        return Err(ResumeError::NoEpoch { path: path.clone() });
    };
    if given.as_ref().is_some_and(|g| *g != journalled) {
        return Err(ResumeError::OtherEpoch { path: path.clone() });
    }
    Ok(Some(journalled))
}

/// The journal of an `eval` run's calls, beside `--out` when it is a regular file: the
/// interrupted run's, continued (`--resume`), or a new one. A journal that cannot be
/// made costs the run its `--resume` (the notice says so), unless another run holds it.
pub fn open_eval_journal(
    resume: bool,
    out: Option<&Path>,
    header: &JournalHeader,
    earlier: Option<EarlierEval>,
) -> Result<(Option<Journal>, Option<Notice>), ResumeError> {
    if let Some((path, earlier)) = earlier {
        check_header(&path, earlier.header(), header)?;
        return Ok((Some(Journal::resume(&path, earlier)?), None));
    }
    let Some(out) = resumable_out(resume, out)? else {
        return Ok((None, None));
    };
    match Journal::create(&journal_path(out), header) {
        Ok(j) => Ok((Some(j), None)),
        Err(e @ HarnessError::JournalBusy { .. }) => Err(e.into()),
        Err(e) => Ok((None, Some(Notice::Unresumable(e.to_string())))),
    }
}

/// Joins a journal to the epoch it ran in: a resumed run is answered as the interrupted
/// one was, and what this run records is kept for the next resume.
pub fn join_epoch(journal: &Journal, world: &World) -> Result<(), ResumeError> {
    (world.epoch().resume_network(journal.take_network())).map_err(|e| ResumeError::Network {
        path: journal.path().to_path_buf(),
        source: Box::new(e),
    })?;
    world.epoch().log_network(journal.network_log());
    Ok(())
}

/// The run is whole: its journal goes, after saying what it replayed.
pub fn close_eval_journal(journal: Journal) -> Result<Option<Notice>, ResumeError> {
    let notice = (journal.replayed() > 0).then(|| Notice::Replayed {
        calls: journal.replayed(),
        journal: journal.path().to_path_buf(),
    });
    journal.remove()?;
    Ok(notice)
}

/// An interrupt stopped an `eval` run before every call ran: the journal keeps the calls
/// made, and the notice says how to go on.
pub fn interrupted_eval(journal: Option<&Journal>, lines: usize) -> Result<Notice, ResumeError> {
    let kept = match journal {
        Some(j) => {
            j.flush()?;
            Some((j.recorded(), j.path().to_path_buf()))
        }
        None => None,
    };
    Ok(Notice::Interrupted { lines, kept })
}

/// An output that failed once every call had run (outputs are tried before the work,
/// but a disk fills and a device refuses): with a journal, the error says how to write
/// the outputs without executing the calls again. `error` is the output's error with
/// its causes.
pub fn after_the_work(error: String, journal: &Journal) -> ResumeError {
    ResumeError::AfterTheWork {
        error,
        journal: journal.path().to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn made_by(command: &str, fingerprint: &str) -> JournalHeader {
        JournalHeader::new(command, fingerprint.into(), None)
    }

    #[test]
    fn a_journal_and_partial_file_sit_beside_the_real_out() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("d.jsonl");
        let real = real_path(&out).unwrap();
        assert_eq!(
            journal_path(&out).file_name().unwrap(),
            "d.jsonl.journal",
            "{out:?}"
        );
        assert_eq!(journal_path(&out).parent(), real.parent());
        assert_eq!(partial_path(&out).file_name().unwrap(), "d.jsonl.partial");
        // Another spelling of the same file meets the same journal.
        let again = dir.path().join(".").join("d.jsonl");
        assert_eq!(journal_path(&again), journal_path(&out));
    }

    #[test]
    fn a_fingerprint_changes_with_the_command_catalog_and_flags() {
        let dir = tempfile::tempdir().unwrap();
        let catalog = dir.path().join("c.json");
        std::fs::write(&catalog, "{}").unwrap();
        let base = fingerprint("score", &catalog, "a").unwrap();
        assert_eq!(base.len(), 64);
        assert_eq!(base, fingerprint("score", &catalog, "a").unwrap());
        assert_ne!(base, fingerprint("eval", &catalog, "a").unwrap());
        assert_ne!(base, fingerprint("score", &catalog, "b").unwrap());
        std::fs::write(&catalog, "{ }").unwrap();
        assert_ne!(base, fingerprint("score", &catalog, "a").unwrap());
        let e = fingerprint("score", &dir.path().join("gone.json"), "a").unwrap_err();
        assert!(e.to_string().starts_with("failed to read catalog "), "{e}");
    }

    #[test]
    fn resume_continues_a_journal_only_when_asked_and_one_is_there() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("d.jsonl");
        assert!(matches!(
            journal_to_resume(true, None),
            Err(ResumeError::NoOut)
        ));
        assert!(matches!(journal_to_resume(false, None), Ok((None, None))));
        let (path, notice) = journal_to_resume(true, Some(&out)).unwrap();
        assert!(path.is_none());
        assert!(
            notice
                .unwrap()
                .to_string()
                .starts_with("--resume: no journal at ")
        );
        assert!(matches!(
            journal_to_resume(false, Some(&out)),
            Ok((None, None))
        ));
        std::fs::write(journal_path(&out), "").unwrap();
        let (path, notice) = journal_to_resume(true, Some(&out)).unwrap();
        assert_eq!(path, Some(journal_path(&out)));
        assert!(notice.is_none());
        let (path, notice) = journal_to_resume(false, Some(&out)).unwrap();
        assert!(path.is_none());
        assert!(
            notice
                .unwrap()
                .to_string()
                .contains("holds an interrupted run")
        );
    }

    #[test]
    fn a_journal_of_another_run_is_refused_saying_why() {
        let p = Path::new("d.jsonl.journal");
        check_header(p, &made_by("score", "f"), &made_by("score", "f")).unwrap();
        let e = check_header(p, &made_by("score", "f"), &made_by("score", "g")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "cannot resume from d.jsonl.journal: the catalog or a flag that changes results differs from the run that wrote it; run the command it was written by, or remove the journal to start over"
        );
        let e = check_header(p, &made_by("eval", "f"), &made_by("score", "f")).unwrap_err();
        assert!(
            e.to_string()
                .contains("`plangate eval`, not `plangate score`"),
            "{e}"
        );
    }

    #[test]
    fn a_second_run_on_one_out_is_refused_while_the_first_holds_its_journal() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("d.jsonl");
        let h = made_by("eval", "f");
        let (first, notice) = open_eval_journal(false, Some(&out), &h, None).unwrap();
        assert!(first.is_some() && notice.is_none());
        let e = open_eval_journal(false, Some(&out), &h, None).unwrap_err();
        assert!(e.busy(), "{e}");
        // Closed, the journal goes and the next run starts afresh.
        assert!(close_eval_journal(first.unwrap()).unwrap().is_none());
        assert!(!journal_path(&out).exists());
    }

    #[test]
    fn an_eval_run_resumes_only_an_eval_journal_with_an_epoch() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("d.jsonl");
        let earlier_of = |by: &JournalHeader| -> EarlierEval {
            let (j, _) = open_eval_journal(false, Some(&out), by, None).unwrap();
            drop(j);
            let path = journal_path(&out);
            let earlier = Earlier::read(&path).unwrap();
            (path, earlier)
        };
        let e = epoch_to_replay(None, Some(&earlier_of(&made_by("score", "f")))).unwrap_err();
        assert!(
            e.to_string()
                .contains("it was written by `plangate score`, not `plangate eval`"),
            "{e}"
        );
        let e = epoch_to_replay(None, Some(&earlier_of(&made_by("eval", "f")))).unwrap_err();
        assert!(e.to_string().ends_with(": it records no epoch"), "{e}");
        assert!(epoch_to_replay(None, None).unwrap().is_none());
    }
}
