//! plangate's sandbox: one WASI preview1 tool call in wasmtime under a pinned *epoch*
//! (docs/design.md, "The sandbox epoch"). It knows nothing of plans; the harness drives it.
//!
//! # What is pinned
//!
//! A guest observes more than its bytes. Under a pinned epoch, all of these are fixed:
//!
//! - **clocks**: the wall clock starts at the epoch instant and the monotonic clock at a
//!   constant; both move by `clock_step_ns` per read (0 freezes them) and by the
//!   duration of any sleep, which is virtual and returns at once;
//! - **randomness**: `random_get` serves a SHA-256 keystream of the epoch seed, one byte
//!   per draw, so the bytes do not depend on how wasmtime samples its RNG; a
//!   component's `u64` draw is the next 8 bytes;
//! - **environment and argv**: exactly the manifest's, nothing inherited;
//! - **pinned mounts**: a private read-only snapshot copied at epoch start and
//!   digested, walked by directory handle; symlinks that leave the mount are neither
//!   followed nor copied, and a FIFO, socket or device refuses the epoch; stat
//!   times, dev/ino, nlink and directory sizes are pinned and readdir is sorted by name
//!   (for live mounts too: their contents are live, their metadata never is, so the
//!   content digest covers all a guest can see of them);
//! - **the engine**: fuel, NaN canonicalization, deterministic relaxed SIMD.
//!
//! The [`EpochManifest`] records it all, plus every module's sha256 and the plangate and
//! wasmtime versions; the epoch id is the sha256 of its canonical JSON.
//! [`Epoch::from_manifest`] replays it on another machine and refuses a pinned mount
//! whose content digest differs.
//!
//! # Use
//!
//! ```no_run
//! use plangate_sandbox::{Epoch, EpochMount, Limits, ModuleSpec, Sandbox, SandboxConfig};
//!
//! # fn main() -> Result<(), plangate_sandbox::Error> {
//! let epoch = Epoch::builder()
//!     .random_seed(42)
//!     .mount(EpochMount::pinned("fixtures/world", "/world"))
//!     .module("tools/get_user.wasm")
//!     .build()?; // snapshots and digests /world, hashes the module
//! println!("epoch {}", epoch.id());
//!
//! // One sandbox per run: Send + Sync, share it with every worker thread.
//! let sandbox = Sandbox::new(SandboxConfig::default(), epoch)?;
//! // Compiled once (cached on disk), linked once; the handle is a cheap clone.
//! let tool = sandbox.load_tool(
//!     &ModuleSpec::new("tools/get_user.wasm").mount("fixtures/world", "/world"),
//! )?;
//! // A fresh store per call; callable from many threads at once.
//! let record = sandbox.call(&tool, br#"{"user_id":"u_42"}"#, &Limits::default());
//! println!("{} {:?}", record.outcome.as_str(), String::from_utf8_lossy(&record.stdout));
//! # Ok(()) }
//! ```
//!
//! # Outcomes, not errors
//!
//! [`Sandbox::call`] never fails: exit (with its code), `out_of_fuel`, `timeout`,
//! `memory_limit`, `output_limit` and `trap` (with a [`TrapKind`]; `host` when the host
//! side failed, e.g. the module could not be instantiated) are all [`Outcome`]s in the
//! returned [`CallRecord`]. Only setup (engine, epoch, loading a tool) returns [`Error`].
//!
//! # Per-call host limits
//!
//! What a call takes of the host is bounded per call, so one tool cannot change
//! another's results: at most [`MAX_OPEN_FILES`] open files besides its mounts (`mfile`
//! past it), at most [`MAX_POLL_SUBSCRIPTIONS`] per `poll_oneoff` (`inval`), and no
//! open of a FIFO, socket or device in a live mount (`nxio`: the host would block in
//! `openat`, where epoch interruption cannot reach it). The guest sees an ordinary
//! WASI error. Call [`raise_fd_limit`] once at process start, so that the calls in
//! flight together stay inside the process's fd limit.
//!
//! # Concurrency
//!
//! [`SandboxConfig::max_concurrent_calls`] bounds the calls in flight (excess callers
//! wait), and the pooling allocator has exactly that many slots, so it is never
//! exhausted. Run calls on plain threads or `spawn_blocking`, never directly on a tokio
//! worker: wasmtime-wasi's synchronous preview1 blocks on its own runtime.

mod bounded;
mod cache;
mod canonical;
mod component;
mod describe;
mod epoch;
mod error;
mod host;
mod network;
mod pinned;
mod recording;
mod sandbox;
mod scrub;
mod store;
mod walk;
pub mod wit;

pub use canonical::hex;
pub use describe::{ComponentTools, FunctionTool, describe};
pub use epoch::{
    DEFAULT_CLOCK_STEP_NS, DEFAULT_INSTANT_UNIX_NS, Epoch, EpochBuilder, EpochManifest, EpochMode,
    EpochMount, LiveCheck, MANIFEST_FORMAT, MountMismatch, MountRecord, PLANGATE_VERSION,
    WASMTIME_VERSION, digest_tree,
};
pub use error::{Error, Result};
pub use host::raise_fd_limit;
pub use network::{DEFAULT_MAX_BODY_BYTES, NetworkMode, NetworkPolicy};
pub use recording::{
    CREDENTIAL_HEADERS, CREDENTIAL_PARAMS, Exchange, HeaderBytes, NetworkLog, REDACTED,
    check_recording, network_sha256,
};
pub use sandbox::{
    CallRecord, Limits, ModuleSpec, Outcome, Sandbox, SandboxConfig, Tool, TrapKind, build_engine,
};
pub use scrub::{MAX_OPEN_FILES, MAX_POLL_SUBSCRIPTIONS};
