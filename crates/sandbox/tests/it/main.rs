//! plangate-sandbox's integration tests: one binary (as wasmtime's tests/all), each
//! module one concern, all running real guests built from sandbox-tools/test-guests.

mod guests;
mod support;

// Every way a call can end, and that each ends quickly.
mod outcomes;
// Same manifest, two copies of a fixture made differently: byte-identical observations.
mod determinism;
// A guest cannot write, read outside its mounts, follow symlinks out, or see host env.
mod escape;
// Many threads calling one sandbox at once.
mod concurrency;
// The module cache runs only artifacts it wrote, in a directory the user owns, and a
// cache that cannot be used never fails a load.
mod cache;
// What a mount holds besides content (FIFOs, sockets, symlinks swapped in mid-walk).
mod mounts;
// Per-call bounds on host resources: open files, poll subscriptions.
mod limits;
// A component's several memories held to one call's limit together.
mod memories;
