//! `score`'s journal: how much of the decisions file is whole, through which input line,
//! and what the run had counted there, so `--resume` decides only the rest. Where the
//! journal lives and whether a run may continue it is [`crate::resume`]'s.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use plangate_harness::{Chain, Earlier, JournalHeader, Line};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::digest::RunDigest;
use crate::resume::{Notice, ResumeError, check_header, journal_path};

/// Where `score` got to: every input line through `through` is decided and written,
/// in the first `bytes` bytes of the partial decisions. `T` is what the command counts
/// (its tally), kept so a resumed run counts the lines it does not decide again.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct Checkpoint<T> {
    /// The last input line decided and written.
    pub through: usize,
    /// The decisions' bytes through it.
    pub bytes: u64,
    /// XXH3 of those bytes: a resumed run keeps them only if they still hash to it.
    pub bytes_hash: u64,
    /// A running hash of every input line through `through` ([`Prefix`]), so a
    /// samples file that changed anywhere before it is not resumed.
    pub prefix: Prefix,
    /// What the run counted through `through`.
    pub tally: T,
    /// With `--html`, the page's digest of the lines since the checkpoint before (of
    /// the lists, only the tasks the page kept): [`ScoreJournal::resume`] adds them up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<RunDigest>,
}

impl<T> Checkpoint<T> {
    /// Refuses samples that changed before the line the interrupted run got to:
    /// `prefix` is this run's running hash through line `through`.
    pub fn same_samples(&self, prefix: &Prefix) -> Result<(), ResumeError> {
        if *prefix == self.prefix {
            return Ok(());
        }
        Err(ResumeError::SamplesChanged {
            through: self.through,
        })
    }
}

/// The partial decisions file, opened for a run to write on ([`reopen_partial`]).
pub struct Partial {
    /// Positioned after the kept decisions.
    pub file: File,
    /// The bytes kept.
    pub written: u64,
    /// XXH3 of the bytes kept, to go on hashing what the run writes next.
    pub hash: Box<twox_hash::XxHash3_64>,
}

/// The partial decisions file a run writes through (`OUT.partial`): the first `keep.0`
/// bytes an interrupted run kept, cut there, and checked to end a line and hash to
/// `keep.1`; or a new, empty one. A run that kept nothing needs no partial file: one
/// killed between making its journal and making the partial file, or after its
/// decisions left the partial file ([`ScoreJournal::close`]), resumes from its first
/// line.
pub fn reopen_partial(partial: &Path, keep: Option<(u64, u64)>) -> Result<Partial, ResumeError> {
    let keep = keep.filter(|&(bytes, _)| bytes > 0);
    let mut hash = Box::new(twox_hash::XxHash3_64::new());
    let cannot_write = |source| ResumeError::PartialWrite {
        path: partial.to_path_buf(),
        source,
    };
    let Some((bytes, want)) = keep else {
        let file = File::create(partial).map_err(cannot_write)?;
        return Ok(Partial {
            file,
            written: 0,
            hash,
        });
    };
    match std::fs::metadata(partial).ok().filter(|m| m.is_file()) {
        None => {
            return Err(ResumeError::PartialMissing {
                path: partial.to_path_buf(),
            });
        }
        Some(m) if m.len() < bytes => {
            return Err(ResumeError::PartialCut {
                path: partial.to_path_buf(),
                have: m.len(),
                keep: bytes,
            });
        }
        Some(_) => {}
    }
    kept_part(partial, bytes, want, &mut hash)?;
    let mut file = (std::fs::OpenOptions::new().write(true).open(partial)).map_err(cannot_write)?;
    file.set_len(bytes)
        .and_then(|()| file.seek(SeekFrom::End(0)).map(drop))
        .map_err(cannot_write)?;
    Ok(Partial {
        file,
        written: bytes,
        hash,
    })
}

/// Checks an interrupted run's kept decisions, the first `bytes` of `partial`: they end
/// on a line boundary and hash to `want` (a torn file, or a journal edited to count other
/// bytes, would resume into a cut line). `hash` reads them, so it goes on from there.
fn kept_part(
    partial: &Path,
    bytes: u64,
    want: u64,
    hash: &mut twox_hash::XxHash3_64,
) -> Result<(), ResumeError> {
    let cannot = |why: String| ResumeError::PartialDiffers {
        path: partial.to_path_buf(),
        why,
    };
    let cannot_read = |source| ResumeError::PartialRead {
        path: partial.to_path_buf(),
        source,
    };
    let file = File::open(partial).map_err(cannot_read)?;
    let mut part = std::io::BufReader::with_capacity(1 << 16, file).take(bytes);
    let mut buf = vec![0u8; 1 << 16];
    let mut last = None;
    loop {
        let n = part.read(&mut buf).map_err(cannot_read)?;
        if n == 0 {
            break;
        }
        std::hash::Hasher::write(hash, &buf[..n]);
        last = Some(buf[n - 1]);
    }
    if last != Some(b'\n') {
        return Err(cannot(format!("byte {bytes} does not end a line")));
    }
    if std::hash::Hasher::finish(hash) != want {
        return Err(cannot(format!(
            "its first {bytes} bytes are not the bytes that run wrote"
        )));
    }
    Ok(())
}

/// A running hash over the lines read so far, each with its number (a line too long
/// to read counts as its length): each step hashes the one before with the next line.
/// One number, so a checkpoint can keep it; it guards against a changed file, not
/// against an adversary. XXH3: every input line goes through it, so it must be fast,
/// and std's SipHash is several times slower.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Prefix(u64);

impl Prefix {
    /// Adds line `number`.
    pub fn add(&mut self, number: usize, line: Line<'_>) {
        let length;
        let (tag, bytes) = match line {
            Ok(bytes) => (0u8, bytes),
            Err(n) => {
                length = n.to_le_bytes();
                (u8::MAX, &length[..])
            }
        };
        let mut head = [0u8; 9];
        head[..8].copy_from_slice(&(number as u64).to_le_bytes());
        head[8] = tag;
        let seed = twox_hash::XxHash3_64::oneshot_with_seed(self.0, &head);
        self.0 = twox_hash::XxHash3_64::oneshot_with_seed(seed, bytes);
    }
}

/// `score`'s journal: a header, then a checkpoint per chunk written.
pub struct ScoreJournal<T> {
    path: PathBuf,
    file: std::fs::File,
    /// Seals each line, as `eval`'s journal does.
    chain: Chain,
    tally: PhantomData<T>,
}

/// A `score` journal as a run opens it ([`ScoreJournal::open`]).
pub struct Opened<T> {
    /// The journal, when the run can be resumed.
    pub journal: Option<ScoreJournal<T>>,
    /// Where the interrupted run got to (nothing, for a new journal).
    pub done: Checkpoint<T>,
    /// Whether this run continues an interrupted one.
    pub resumed: bool,
    /// What to say about it.
    pub notice: Option<Notice>,
}

impl<T: Serialize + DeserializeOwned + Default + Clone> ScoreJournal<T> {
    /// The journal beside `out` (a regular file): `earlier`, the interrupted run's
    /// ([`crate::resume::journal_to_resume`]), continued after its header is checked
    /// against `header`; else a new one. A journal that cannot be made costs the run its
    /// `--resume` (the notice says so), unless another run holds it.
    pub fn open(
        earlier: Option<PathBuf>,
        out: &Path,
        header: &JournalHeader,
    ) -> Result<Opened<T>, ResumeError> {
        if let Some(path) = earlier {
            let (journal, earlier, done) = Self::resume(&path)?;
            check_header(&path, &earlier, header)?;
            return Ok(Opened {
                journal: Some(journal),
                done,
                resumed: true,
                notice: None,
            });
        }
        let (journal, notice) = match Self::create(&journal_path(out), header) {
            Ok(j) => (Some(j), None),
            Err(e) if e.busy() => return Err(e),
            Err(e) => (None, Some(Notice::Unresumable(with_causes(&e)))),
        };
        Ok(Opened {
            journal,
            done: Checkpoint::default(),
            resumed: false,
            notice,
        })
    }

    /// Starts a journal at `path`.
    pub fn create(path: &Path, header: &JournalHeader) -> Result<Self, ResumeError> {
        let mut file = plangate_harness::open_locked(path)?;
        file.set_len(0).map_err(|source| ResumeError::Create {
            path: path.to_path_buf(),
            source,
        })?;
        let mut chain = Chain::default();
        file.write_all(&chain.seal(&serde_json::to_vec(header)?))
            .map_err(|source| ResumeError::Write {
                path: path.to_path_buf(),
                source,
            })?;
        Ok(ScoreJournal {
            path: path.to_path_buf(),
            file,
            chain,
            tally: PhantomData,
        })
    }

    /// Reads an interrupted run's journal: its header and its last whole checkpoint
    /// (none when it stopped before its first chunk), whose `page` is the page's
    /// digest of every line through it ([`pages_kept`]), then continues it.
    pub fn resume(path: &Path) -> Result<(Self, JournalHeader, Checkpoint<T>), ResumeError> {
        let earlier = Earlier::<Checkpoint<T>>::read(path)?;
        // Locked before anything is written, and cut after its last whole line.
        let file = earlier.reopen(path)?;
        let mut last = earlier.entries().last().cloned().unwrap_or_default();
        last.page = pages_kept(earlier.entries());
        Ok((
            ScoreJournal {
                path: path.to_path_buf(),
                file,
                chain: earlier.chain(),
                tally: PhantomData,
            },
            earlier.header().clone(),
            last,
        ))
    }

    /// Records a checkpoint (after the decisions it counts were flushed).
    pub fn checkpoint(&mut self, c: &Checkpoint<T>) -> Result<(), ResumeError> {
        let line = self.chain.seal(&serde_json::to_vec(c)?);
        self.file
            .write_all(&line)
            .map_err(|source| ResumeError::Write {
                path: self.path.clone(),
                source,
            })
    }

    /// The run is whole: `place` puts the decisions in place, and the journal goes.
    /// Before the decisions leave the partial file, the last checkpoint becomes one that
    /// kept nothing, so a kill before the journal is removed leaves a journal the next
    /// `--resume` starts over from (it needs no partial file) instead of one whose kept
    /// decisions were renamed away. The journal stays locked until `place` is done, so
    /// no second run on this `--out` can start in between.
    pub fn close<E: From<ResumeError>>(
        mut self,
        place: impl FnOnce() -> Result<(), E>,
    ) -> Result<(), E> {
        self.checkpoint(&Checkpoint::default())?;
        place()?;
        Ok(self.remove()?)
    }

    /// The run finished: the journal is no longer needed.
    pub fn remove(self) -> Result<(), ResumeError> {
        drop(self.file);
        std::fs::remove_file(&self.path).map_err(|source| ResumeError::Remove {
            path: self.path,
            source,
        })
    }

    /// The journal file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// An error and its causes, as one line.
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut line = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        line.push_str(&format!(": {c}"));
        cause = c.source();
    }
    line
}

/// The page's digest of every line the checkpoints cover: the sum of each one's part
/// since the last that kept nothing (a finished run's, which a next run starts over
/// from); None when one of them kept no part (its run had no `--html`).
fn pages_kept<T>(checkpoints: &[Checkpoint<T>]) -> Option<RunDigest> {
    let mut sum = Some(RunDigest::default());
    for c in checkpoints {
        if c.through == 0 {
            sum = Some(RunDigest::default());
            continue;
        }
        sum = match (sum, &c.page) {
            (Some(mut sum), Some(part)) => {
                let _ = sum.absorb(part.clone());
                Some(sum)
            }
            _ => None,
        };
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;

    type Counted = Checkpoint<u32>;

    #[test]
    fn pages_kept_add_up_since_the_last_reset_and_need_every_part() {
        let part = |through: usize, page: bool| Counted {
            through,
            page: page.then(RunDigest::default),
            ..Counted::default()
        };
        assert_eq!(pages_kept::<u32>(&[]), Some(RunDigest::default()));
        assert_eq!(
            pages_kept(&[part(5, true), part(9, true)]),
            Some(RunDigest::default())
        );
        assert_eq!(pages_kept(&[part(5, false), part(9, true)]), None);
        // A finished run's reset, then a run with --html: its parts alone count.
        assert_eq!(
            pages_kept(&[part(5, false), part(0, false), part(3, true)]),
            Some(RunDigest::default())
        );
    }

    fn after(lines: &[(usize, Line<'_>)]) -> u64 {
        let mut p = Prefix::default();
        for (number, line) in lines {
            p.add(*number, *line);
        }
        p.0
    }

    #[test]
    fn a_prefix_is_the_same_in_every_build_and_tells_lines_apart() {
        // Kept in journals and compared by later runs: the value is pinned, so a hash
        // that changes with the build (std's SipHash promises nothing across releases)
        // fails here rather than refusing to resume a run of the same version. The value
        // is XXH3 as Python's `xxhash` package computes it.
        assert_eq!(after(&[(1, Ok(b"{}"))]), 0xf0ad_1f8d_4e6c_f1aa);
        // A line past XXH3's 240 bytes takes the long path, whose SIMD is picked at run
        // time; the value is xxhash-rust's, a second implementation of the same XXH3.
        let long = format!("{{\"k\":\"{}\"}}", "a".repeat(1000));
        assert_eq!(after(&[(1, Ok(long.as_bytes()))]), 0x267d_4a32_03b6_d0db);
        let base = after(&[(1, Ok(b"a")), (2, Ok(b"b"))]);
        for other in [
            after(&[(1, Ok(b"a")), (2, Ok(b"c"))]),
            after(&[(1, Ok(b"a")), (3, Ok(b"b"))]),
            after(&[(1, Ok(b"b")), (2, Ok(b"a"))]),
            after(&[(1, Ok(b"a")), (2, Err(1))]),
            after(&[(1, Ok(b"a"))]),
        ] {
            assert_ne!(base, other);
        }
    }

    #[test]
    fn a_resumed_journal_gives_back_its_last_checkpoint_and_goes_on() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("d.jsonl");
        let header = JournalHeader::new("score", "f".into(), None);
        let mut first = ScoreJournal::<u32>::open(None, &out, &header).unwrap();
        assert!(!first.resumed && first.notice.is_none());
        let j = first.journal.as_mut().unwrap();
        j.checkpoint(&Counted {
            through: 7,
            bytes: 70,
            tally: 3,
            ..Counted::default()
        })
        .unwrap();
        // Held by this run: a second one on the same --out is refused.
        let busy = ScoreJournal::<u32>::open(None, &out, &header)
            .err()
            .unwrap();
        assert!(busy.busy(), "{busy}");
        drop(first);

        let again = ScoreJournal::<u32>::open(Some(journal_path(&out)), &out, &header).unwrap();
        assert!(again.resumed);
        assert_eq!(
            (again.done.through, again.done.bytes, again.done.tally),
            (7, 70, 3)
        );
        // Stopped while its decisions are put in place: the next run starts over.
        let stopped = again.journal.unwrap().close(|| Err(ResumeError::NoOut));
        assert!(matches!(stopped, Err(ResumeError::NoOut)));
        let after = ScoreJournal::<u32>::open(Some(journal_path(&out)), &out, &header).unwrap();
        assert!(after.resumed);
        assert_eq!(
            (after.done.through, after.done.bytes, after.done.tally),
            (0, 0, 0)
        );
        let mut placed = false;
        (after.journal.unwrap())
            .close(|| {
                placed = true;
                Ok::<_, ResumeError>(())
            })
            .unwrap();
        assert!(placed && !journal_path(&out).exists());

        // A journal of other flags is refused.
        drop(ScoreJournal::<u32>::open(None, &out, &header).unwrap());
        let other = JournalHeader::new("score", "g".into(), None);
        let e = ScoreJournal::<u32>::open(Some(journal_path(&out)), &out, &other)
            .err()
            .unwrap();
        assert!(e.to_string().starts_with("cannot resume from "), "{e}");
    }

    #[test]
    fn kept_decisions_are_kept_only_whole_and_as_written() {
        use std::hash::Hasher as _;
        let dir = tempfile::tempdir().unwrap();
        let partial = dir.path().join("d.jsonl.partial");
        let kept = b"{\"a\":1}\n{\"b\":2}\n";
        let hash = twox_hash::XxHash3_64::oneshot(kept);
        let keep = Some((kept.len() as u64, hash));
        let said = |r: Result<Partial, ResumeError>| r.err().unwrap().to_string();
        assert!(said(reopen_partial(&partial, keep)).contains("is missing"));
        std::fs::write(&partial, &kept[..5]).unwrap();
        assert!(said(reopen_partial(&partial, keep)).contains("holds 5 bytes, fewer than the 16"));
        std::fs::write(&partial, kept).unwrap();
        let cut = Some((5, twox_hash::XxHash3_64::oneshot(&kept[..5])));
        assert!(said(reopen_partial(&partial, cut)).contains("byte 5 does not end a line"));
        let other = Some((kept.len() as u64, hash ^ 1));
        assert!(said(reopen_partial(&partial, other)).contains("are not the bytes that run wrote"));

        // Bytes past the kept ones (written after the last checkpoint) are cut off, and
        // the hash goes on from the kept ones.
        std::fs::write(&partial, [&kept[..], b"{\"c\""].concat()).unwrap();
        let mut p = reopen_partial(&partial, keep).unwrap();
        assert_eq!(p.written, kept.len() as u64);
        assert_eq!(p.hash.finish(), hash);
        p.file.write_all(b"{}\n").unwrap();
        let whole = std::fs::read(&partial).unwrap();
        assert_eq!(whole, [&kept[..], b"{}\n"].concat());

        // Nothing kept: a new, empty file.
        let p = reopen_partial(&partial, Some((0, 0))).unwrap();
        assert_eq!(
            (p.written, std::fs::metadata(&partial).unwrap().len()),
            (0, 0)
        );
    }

    #[test]
    fn samples_that_changed_before_the_checkpoint_are_refused() {
        let mut prefix = Prefix::default();
        prefix.add(1, Ok(b"{}"));
        let done = Counted {
            through: 1,
            prefix,
            ..Counted::default()
        };
        done.same_samples(&prefix).unwrap();
        let e = done.same_samples(&Prefix::default()).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("cannot resume: the samples through line 1 "),
            "{e}"
        );
    }
}
