//! The ordered pipeline every line-by-line run shares (`plangate score` and
//! `plangate.score`): lines are read into chunks, worker threads decide the chunks, and
//! the results come back in input order. Memory stays flat however long the input is:
//! at most [`IN_FLIGHT_PER_JOB`] chunks per worker are out at a time, each carrying a
//! buffer that goes round (a spare is handed back once its chunk's result is taken).

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Lines handed to a worker at a time: enough to make the hand-over cheap, few enough
/// that the lines in flight stay a few megabytes however long the input is.
pub const CHUNK_LINES: usize = 256;

/// Bytes after which a chunk is handed over whatever its line count, so that long lines
/// do not multiply into gigabytes in flight (at most one line over this per chunk).
pub const CHUNK_BYTES: usize = 1 << 20;

/// Chunks in flight per worker: enough that no worker waits for the reader or the
/// writer, few enough that memory stays flat.
pub const IN_FLIGHT_PER_JOB: usize = 4;

/// Consecutive lines of an input in one buffer: each line's number, and its byte range
/// in `data` or why it is not there (`E`: a line over the length limit, say).
#[derive(Debug)]
pub struct Chunk<E> {
    /// The lines' bytes, one after another.
    pub data: Vec<u8>,
    /// Each line: its number in the input, and its range in `data` or why it is absent.
    pub lines: Vec<(usize, Result<Range<usize>, E>)>,
}

impl<E> Default for Chunk<E> {
    fn default() -> Self {
        Chunk {
            data: Vec::new(),
            lines: Vec::new(),
        }
    }
}

impl<E> Chunk<E> {
    /// Appends line `number`: its bytes, or why it is absent.
    pub fn push(&mut self, number: usize, line: Result<&[u8], E>) {
        let at = line.map(|line| {
            let start = self.data.len();
            self.data.extend_from_slice(line);
            start..self.data.len()
        });
        self.lines.push((number, at));
    }

    /// Whether the chunk holds enough to hand over ([`CHUNK_LINES`] lines or
    /// [`CHUNK_BYTES`] bytes).
    pub fn is_full(&self) -> bool {
        self.lines.len() >= CHUNK_LINES || self.data.len() >= CHUNK_BYTES
    }

    /// Empties the chunk, keeping its buffers' capacity for the next one.
    pub fn clear(&mut self) {
        self.data.clear();
        self.lines.clear();
    }
}

/// The workers stopped taking work (one panicked, or the receiving side is gone).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the worker threads stopped")]
pub struct Stopped;

/// The reading side: hands numbered work to the workers, one spare buffer per item.
pub struct WorkQueue<T> {
    work: SyncSender<(usize, T)>,
    spares: Receiver<T>,
    sent: usize,
}

impl<T> WorkQueue<T> {
    /// A spare item to fill, waiting until one is free: reading waits for the writing
    /// side, not only for the workers. [`Stopped`] when the other side is gone.
    pub fn spare(&self) -> Result<T, Stopped> {
        self.spares.recv().map_err(|_| Stopped)
    }

    /// A spare item if one is free now: `None` means as many items as the pipeline
    /// holds are out.
    pub fn try_spare(&self) -> Option<T> {
        self.spares.try_recv().ok()
    }

    /// Hands `item` to the workers, numbered after the one before.
    pub fn send(&mut self, item: T) -> Result<(), Stopped> {
        self.work.send((self.sent, item)).map_err(|_| Stopped)?;
        self.sent += 1;
        Ok(())
    }

    /// Items sent so far.
    pub fn sent(&self) -> usize {
        self.sent
    }
}

/// One item and what its worker made of it, handed back in input order.
pub type Done<T, R> = (T, R);

/// Why [`InOrder::next_within`] returned without an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotReady {
    /// The next item is not done yet.
    NotYet,
    /// Every worker stopped before item `0` came back: its lines would be missing.
    Lost(usize),
}

/// The writing side: the workers' results put back in input order.
pub struct InOrder<T, R> {
    done: Receiver<(usize, T, R)>,
    waiting: BTreeMap<usize, (T, R)>,
    next: usize,
    spares: SyncSender<T>,
}

impl<T, R> InOrder<T, R> {
    /// The next item in input order, waiting for it. `Ok(None)` once the feed is
    /// dropped and every item sent is taken; `Err(n)` when the workers stopped before
    /// item `n` came back.
    pub fn wait_next(&mut self) -> Result<Option<Done<T, R>>, usize> {
        self.next_by(|done| done.recv().map_err(|_| RecvTimeoutError::Disconnected))
            .map_err(|e| match e {
                NotReady::Lost(n) => n,
                // A wait without a timeout only ends in an item or a disconnection.
                NotReady::NotYet => unreachable!("recv() does not time out"),
            })
    }

    /// The next item in input order if it comes within `timeout`, so that a caller
    /// can look for an interrupt while it waits. `Ok(None)`: nothing more will come.
    pub fn next_within(&mut self, timeout: Duration) -> Result<Option<Done<T, R>>, NotReady> {
        self.next_by(|done| done.recv_timeout(timeout))
    }

    /// The next item in input order, taking results with `recv` until it is there.
    fn next_by(
        &mut self,
        mut recv: impl FnMut(&Receiver<(usize, T, R)>) -> Result<(usize, T, R), RecvTimeoutError>,
    ) -> Result<Option<Done<T, R>>, NotReady> {
        loop {
            if let Some(done) = self.waiting.remove(&self.next) {
                self.next += 1;
                return Ok(Some(done));
            }
            match recv(&self.done) {
                Ok((seq, item, result)) => {
                    self.waiting.insert(seq, (item, result));
                }
                Err(RecvTimeoutError::Timeout) => return Err(NotReady::NotYet),
                Err(RecvTimeoutError::Disconnected) if self.waiting.is_empty() => {
                    return Ok(None);
                }
                Err(RecvTimeoutError::Disconnected) => return Err(NotReady::Lost(self.next)),
            }
        }
    }

    /// Items taken so far.
    pub fn taken(&self) -> usize {
        self.next
    }

    /// Gives an emptied item back to the feed as a spare.
    pub fn recycle(&self, item: T) {
        // The feed may be gone (it was dropped at the end of the input): nothing waits.
        self.spares.send(item).ok();
    }
}

/// What the workers share: the work queue and where their results go.
struct Ends<T, R> {
    work: Mutex<Receiver<(usize, T)>>,
    done: SyncSender<(usize, T, R)>,
}

/// The channels of a pipeline of `jobs` workers, and its spares made.
fn channels<T: Default, R>(jobs: usize) -> (WorkQueue<T>, InOrder<T, R>, Ends<T, R>) {
    let in_flight = IN_FLIGHT_PER_JOB * jobs.max(1);
    let (work_tx, work_rx) = mpsc::sync_channel(in_flight);
    let (done_tx, done_rx) = mpsc::sync_channel(in_flight);
    let (spare_tx, spare_rx) = mpsc::sync_channel(in_flight);
    for _ in 0..in_flight {
        spare_tx.send(T::default()).ok();
    }
    let feed = WorkQueue {
        work: work_tx,
        spares: spare_rx,
        sent: 0,
    };
    let in_order = InOrder {
        done: done_rx,
        waiting: BTreeMap::new(),
        next: 0,
        spares: spare_tx,
    };
    let ends = Ends {
        work: Mutex::new(work_rx),
        done: done_tx,
    };
    (feed, in_order, ends)
}

/// A worker: takes items until there are no more, or no one takes the results.
fn serve<T, R>(ends: &Ends<T, R>, mut work: impl FnMut(&mut T) -> R) {
    loop {
        // The lock is held only to take the next item, not to work on it.
        let next = ends
            .work
            .lock()
            .map_err(drop)
            .and_then(|rx| rx.recv().map_err(drop));
        let Ok((seq, mut item)) = next else { return };
        let result = work(&mut item);
        if ends.done.send((seq, item, result)).is_err() {
            return;
        }
    }
}

/// Starts `jobs` workers inside `scope`, each with its own worker made by `worker`
/// (state it keeps from item to item), which may borrow what the scope outlives.
pub fn start_scoped<'scope, 'env, T, R, F, W>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    jobs: usize,
    worker: &'scope F,
) -> (WorkQueue<T>, InOrder<T, R>)
where
    T: Default + Send + 'scope,
    R: Send + 'scope,
    F: Fn() -> W + Sync,
    W: FnMut(&mut T) -> R,
{
    let (feed, in_order, ends) = channels(jobs);
    let ends = Arc::new(ends);
    for _ in 0..jobs.max(1) {
        let ends = ends.clone();
        scope.spawn(move || serve(&ends, worker()));
    }
    (feed, in_order)
}

/// Starts `jobs` named worker threads that outlive the caller (they stop once the
/// feed is dropped and their last results are taken or dropped).
pub fn start<T, R, F, W>(
    name: &str,
    jobs: usize,
    worker: F,
) -> std::io::Result<(WorkQueue<T>, InOrder<T, R>)>
where
    T: Default + Send + 'static,
    R: Send + 'static,
    F: Fn() -> W + Send + Sync + 'static,
    W: FnMut(&mut T) -> R,
{
    let (feed, in_order, ends) = channels(jobs);
    let shared = Arc::new((ends, worker));
    for i in 0..jobs.max(1) {
        let shared = shared.clone();
        std::thread::Builder::new()
            .name(format!("{name}-{i}"))
            .spawn(move || serve(&shared.0, (shared.1)()))?;
    }
    Ok((feed, in_order))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every item comes back once, in input order, whatever order the workers finish
    /// in, and the spares bound what is out.
    #[test]
    fn results_come_back_in_input_order() {
        let worker = || {
            |n: &mut u64| {
                // Later items finish first.
                std::thread::sleep(Duration::from_micros(200 - (*n % 7) * 25));
                *n * 2
            }
        };
        let (mut feed, mut in_order) = start("test", 3, worker).unwrap();
        let taken = std::thread::spawn(move || {
            let mut got = Vec::new();
            while let Some((item, result)) = in_order.wait_next().unwrap() {
                got.push(result);
                in_order.recycle(item);
            }
            got
        });
        for n in 0..100u64 {
            let mut spare = feed.spare().unwrap();
            spare = n.max(spare);
            feed.send(spare).unwrap();
        }
        drop(feed);
        let got = taken.join().unwrap();
        assert_eq!(got, (0..100u64).map(|n| n * 2).collect::<Vec<_>>());
    }

    #[test]
    fn spares_bound_the_items_out() {
        let (mut feed, _in_order) = start::<u8, u8, _, _>("test", 2, || |x: &mut u8| *x).unwrap();
        let mut sent = 0;
        while let Some(s) = feed.try_spare() {
            feed.send(s).unwrap();
            sent += 1;
        }
        assert_eq!(sent, 2 * IN_FLIGHT_PER_JOB);
    }

    #[test]
    fn a_scoped_pipeline_borrows_its_state() {
        let factor = 3u32;
        let worker = || |n: &mut u32| *n * factor;
        let got = std::thread::scope(|s| {
            let (mut feed, mut in_order) = start_scoped(s, 2, &worker);
            for n in 1..=10 {
                feed.spare().unwrap();
                feed.send(n).unwrap();
                if n % 4 == 0 {
                    // Take some back so spares return.
                    while in_order.taken() < feed.sent() - 2 {
                        let (item, _) = in_order.wait_next().unwrap().unwrap();
                        in_order.recycle(item);
                    }
                }
            }
            drop(feed);
            let mut rest = Vec::new();
            while let Some((_, r)) = in_order.wait_next().unwrap() {
                rest.push(r);
            }
            rest
        });
        assert_eq!(got.last(), Some(&30));
    }

    #[test]
    fn chunks_fill_by_lines_or_bytes() {
        let mut c = Chunk::<u64>::default();
        for n in 0..CHUNK_LINES - 1 {
            c.push(n + 1, Ok(b"{}"));
        }
        assert!(!c.is_full());
        c.push(CHUNK_LINES, Err(9));
        assert!(c.is_full());
        c.clear();
        c.push(1, Ok(&vec![b' '; CHUNK_BYTES]));
        assert!(c.is_full());
        assert_eq!(c.lines, vec![(1, Ok(0..CHUNK_BYTES))]);
    }
}
