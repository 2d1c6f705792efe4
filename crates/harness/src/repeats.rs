//! Repeated calls in a fully pinned epoch (docs/design.md, "The defer path"): a tool
//! whose clock, randomness and mounts are all pinned sees nothing but its module, its
//! stdin and the epoch, so once two executions of one call have answered alike, its
//! later copies take their record instead of running again. A retry then pays for each
//! distinct call twice, not for every sample's copy of it.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use plangate_sandbox::{CallRecord, Outcome};

use crate::health::WITNESS_KEEP_BYTES;
use crate::probe::same_output;

/// Executions of one call that must answer alike before its record is reused: as many
/// as the probe makes by default, so every reused call had its own determinism check
/// (and a pair that differs is still a determinism witness).
const AGREEING_RUNS: u8 = 2;

enum State {
    /// Executions started so far, and the record of the first one back.
    Running {
        started: u8,
        first: Option<Arc<CallRecord>>,
    },
    /// Two executions answered alike: later copies take this record.
    Agreed(Arc<CallRecord>),
    /// They differed, or ended abnormally: every later copy is executed, as without
    /// reuse.
    ExecuteAll,
}

/// A run's calls by witness key (tool, upstream stdin, stdin). A call is executed
/// exactly `min(copies, 2)` times when its two runs agree, whichever copies the workers
/// reach first, so the count is the same in every run of a batch. One entry per distinct
/// call, holding at most [`WITNESS_KEEP_BYTES`] of output, as the witness book does.
#[derive(Default)]
pub(crate) struct Repeats {
    calls: Mutex<HashMap<[u8; 32], State>>,
    settled: Condvar,
}

/// What to do with one call.
pub(crate) enum Take<'r> {
    /// Execute it, then give its record to the ticket.
    Execute(Ticket<'r>),
    /// Take this record: the call ran twice already and answered alike.
    Reuse(Arc<CallRecord>),
}

/// An execution [`Repeats`] waits for. Dropped without a record (a panicking worker),
/// it lets every later copy execute rather than wait forever.
pub(crate) struct Ticket<'r> {
    repeats: &'r Repeats,
    key: [u8; 32],
    settled: bool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// An ending that a third run would reach again: the guest exited. A timeout depends on
/// the machine, and a host failure on the host, so neither is reused. A longer output
/// is executed each time rather than held, so memory stays one small entry per call.
fn reusable(r: &CallRecord) -> bool {
    matches!(r.outcome, Outcome::Exit { .. })
        && r.stdout.len() + r.stderr.len() <= WITNESS_KEEP_BYTES
}

/// Whether two executions answered alike: what the probe compares, and stderr too, which
/// the gate quotes for a failing exit.
fn alike(a: &CallRecord, b: &CallRecord) -> bool {
    same_output(a, b) && a.stderr == b.stderr
}

impl Repeats {
    /// The call with witness key `key`: executed while fewer than two runs have
    /// started, reused once two answered alike. While both are still running it waits
    /// for them (a worker holding a ticket never waits, so this cannot deadlock).
    pub(crate) fn take(&self, key: [u8; 32]) -> Take<'_> {
        let ticket = || {
            Take::Execute(Ticket {
                repeats: self,
                key,
                settled: false,
            })
        };
        let mut calls = lock(&self.calls);
        loop {
            match calls.get_mut(&key) {
                None => {
                    calls.insert(
                        key,
                        State::Running {
                            started: 1,
                            first: None,
                        },
                    );
                    return ticket();
                }
                Some(State::Running { started, .. }) if *started < AGREEING_RUNS => {
                    *started += 1;
                    return ticket();
                }
                Some(State::Running { .. }) => {
                    calls = self.settled.wait(calls).unwrap_or_else(|e| e.into_inner());
                }
                Some(State::Agreed(r)) => return Take::Reuse(r.clone()),
                Some(State::ExecuteAll) => return ticket(),
            }
        }
    }

    fn settle(&self, key: [u8; 32], record: Option<&Arc<CallRecord>>) {
        let mut calls = lock(&self.calls);
        let Some(State::Running { first, .. }) = calls.get_mut(&key) else {
            return;
        };
        let next = match (record, first.as_ref()) {
            (Some(r), _) if !reusable(r) => State::ExecuteAll,
            (None, _) => State::ExecuteAll,
            (Some(r), None) => {
                *first = Some(Arc::clone(r));
                return;
            }
            (Some(r), Some(f)) if alike(f, r) => State::Agreed(f.clone()),
            (Some(_), Some(_)) => State::ExecuteAll,
        };
        calls.insert(key, next);
        drop(calls);
        self.settled.notify_all();
    }
}

impl Ticket<'_> {
    /// The execution's record (kept as it is, not copied, when it is the first).
    pub(crate) fn done(mut self, record: &Arc<CallRecord>) {
        self.settled = true;
        self.repeats.settle(self.key, Some(record));
    }
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        if !self.settled {
            self.repeats.settle(self.key, None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::test_record;

    fn exit0(stdout: &str) -> Arc<CallRecord> {
        Arc::new(test_record(Outcome::Exit { code: 0 }, stdout))
    }

    /// Runs a call through `r` as a worker would: `Some(stdout)` when it was executed
    /// (answering `answer`), `None` when reused.
    fn run(r: &Repeats, key: [u8; 32], answer: Arc<CallRecord>) -> Option<Vec<u8>> {
        match r.take(key) {
            Take::Execute(t) => {
                t.done(&answer);
                Some(answer.stdout.clone())
            }
            Take::Reuse(_) => None,
        }
    }

    #[test]
    fn a_call_is_reused_after_two_runs_that_agree() {
        let r = Repeats::default();
        let k = [1; 32];
        assert!(run(&r, k, exit0("a")).is_some());
        assert!(run(&r, k, exit0("a")).is_some());
        match r.take(k) {
            Take::Reuse(rec) => assert_eq!(rec.stdout, b"a"),
            Take::Execute(_) => panic!("the third copy should be reused"),
        }
        // Another key is its own call.
        assert!(run(&r, [2; 32], exit0("a")).is_some());
    }

    #[test]
    fn runs_that_differ_or_end_abnormally_keep_every_copy_executed() {
        let r = Repeats::default();
        let (k, t) = ([1; 32], [2; 32]);
        assert!(run(&r, k, exit0("a")).is_some());
        assert!(run(&r, k, exit0("b")).is_some());
        for _ in 0..3 {
            assert!(run(&r, k, exit0("a")).is_some(), "they differed");
        }
        let timeout = || Arc::new(test_record(Outcome::Timeout, ""));
        assert!(run(&r, t, timeout()).is_some());
        for _ in 0..3 {
            assert!(run(&r, t, timeout()).is_some());
        }
        // An output too long to hold is executed each time.
        let (l, long) = ([4; 32], "x".repeat(WITNESS_KEEP_BYTES + 1));
        for _ in 0..4 {
            assert!(run(&r, l, exit0(&long)).is_some());
        }
        // stderr counts: the gate quotes it for a failing exit.
        let u = [3; 32];
        let mut e1 = test_record(Outcome::Exit { code: 2 }, "");
        e1.stderr = b"one".to_vec();
        let mut e2 = e1.clone();
        e2.stderr = b"two".to_vec();
        assert!(run(&r, u, Arc::new(e1.clone())).is_some());
        assert!(run(&r, u, Arc::new(e2)).is_some());
        assert!(run(&r, u, Arc::new(e1)).is_some());
    }

    #[test]
    fn a_third_copy_waits_for_the_two_runs_in_flight_and_a_lost_run_releases_it() {
        let r = Repeats::default();
        let k = [1; 32];
        let (Take::Execute(a), Take::Execute(b)) = (r.take(k), r.take(k)) else {
            panic!("the first two copies execute");
        };
        std::thread::scope(|s| {
            let third = s.spawn(|| matches!(r.take(k), Take::Reuse(_)));
            std::thread::sleep(std::time::Duration::from_millis(50));
            assert!(!third.is_finished(), "it waits while both runs are out");
            a.done(&exit0("x"));
            b.done(&exit0("x"));
            assert!(third.join().expect("no panic"), "then it is reused");
        });
        let k2 = [2; 32];
        let (Take::Execute(a), Take::Execute(b)) = (r.take(k2), r.take(k2)) else {
            panic!("the first two copies execute");
        };
        std::thread::scope(|s| {
            let third = s.spawn(|| matches!(r.take(k2), Take::Execute(_)));
            a.done(&exit0("x"));
            drop(b);
            assert!(
                third.join().expect("no panic"),
                "a lost run executes the rest"
            );
        });
    }
}
