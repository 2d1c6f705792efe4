//! What one call's wasmtime store carries: the WASI context, the memory limiter and the
//! state the scrub keeps between host calls (sorted listings, the files the guest has
//! open). Its own module because both the
//! sandbox (which builds a store per call) and the scrub (whose host functions read and
//! update it) need it, and neither should have to reach into the other.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Instant;

use wasmtime::ResourceLimiter;
use wasmtime_wasi::p1::WasiP1Ctx;

use crate::pinned::VirtualTime;

/// Per-store state.
pub(crate) struct Ctx {
    pub(crate) wasi: WasiP1Ctx,
    pub(crate) limiter: Limiter,
    /// The call's virtual time; `None` when the tool's clock is live.
    pub(crate) time: Option<Arc<VirtualTime>>,
    /// What the metadata scrub writes into every timestamp.
    pub(crate) instant_ns: u64,
    /// The sorted listing of each directory fd the guest is reading (see `scrub`).
    pub(crate) readdir: Vec<(u32, Vec<DirEntry>)>,
    /// When the call's wall time is up; a live sleep never runs past it.
    pub(crate) deadline: Instant,
    /// The fds the guest opened with `path_open` and has not closed: what the per-call
    /// bound on open files counts (stdio and mounts are not in it).
    pub(crate) open_files: BTreeSet<u32>,
    /// Whether the tool sees a live mount, where `path_open` must refuse special files
    /// (see `scrub::refuse_special`); its pinned snapshots hold none.
    pub(crate) live_mounts: bool,
}

impl Ctx {
    /// The guest closed `fd`: it no longer counts, and its cached listing (if a
    /// directory) must not be served to whatever opens under that number next.
    pub(crate) fn closed(&mut self, fd: u32) {
        self.open_files.remove(&fd);
        self.readdir.retain(|(f, _)| *f != fd);
    }

    /// `from` moved to `to`, closing what was at `to`.
    pub(crate) fn renumbered(&mut self, from: u32, to: u32) {
        if from == to {
            return;
        }
        self.closed(to);
        if self.open_files.remove(&from) {
            self.open_files.insert(to);
        }
        for (fd, _) in &mut self.readdir {
            if *fd == from {
                *fd = to;
            }
        }
    }
}

/// One directory entry as the guest will see it: type and name only.
#[derive(Clone)]
pub(crate) struct DirEntry {
    pub(crate) d_type: u8,
    pub(crate) name: Vec<u8>,
}

/// Refuses growth past the call's limit with an error of its own, so the outcome says
/// `memory_limit` rather than the trap a guest makes of a failed allocation. The limit
/// holds for the call as a whole: every linear memory it has (a component may have
/// several) and the bytes the host holds for it (a component's header maps) together.
pub(crate) struct Limiter {
    pub(crate) memory_bytes: usize,
    /// The call's linear memories, together.
    linear_bytes: usize,
    /// What the host holds for the guest (see `bounded`), charged as it is made.
    host_bytes: usize,
    pub(crate) hit: bool,
}

impl Limiter {
    /// A limit of `memory_bytes` for one call, nothing used yet.
    pub(crate) fn new(memory_bytes: usize) -> Limiter {
        Limiter {
            memory_bytes,
            linear_bytes: 0,
            host_bytes: 0,
            hit: false,
        }
    }

    /// Counts `bytes` the host holds for the guest; over the limit, the call ends.
    pub(crate) fn charge_host(&mut self, bytes: usize) -> wasmtime::Result<()> {
        self.host_bytes = self.host_bytes.saturating_add(bytes);
        if self.linear_bytes.saturating_add(self.host_bytes) > self.memory_bytes {
            self.hit = true;
            return Err(wasmtime::Error::new(MemoryLimitHit));
        }
        Ok(())
    }
}

#[derive(Debug)]
pub(crate) struct MemoryLimitHit;

impl std::fmt::Display for MemoryLimitHit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the call's memory limit was reached")
    }
}

impl std::error::Error for MemoryLimitHit {}

impl ResourceLimiter for Limiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        // Called for each memory as it is made (`current` 0) and as it grows: the sum
        // of every memory's last approved size is the call's linear memory.
        let linear = (self.linear_bytes.saturating_sub(current)).saturating_add(desired);
        if linear.saturating_add(self.host_bytes) > self.memory_bytes {
            self.hit = true;
            return Err(wasmtime::Error::new(MemoryLimitHit));
        }
        self.linear_bytes = linear;
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        // Tables are small in real tools; the pool caps them anyway. Refuse quietly.
        Ok(desired <= 1 << 20)
    }
}
