//! Ctrl-C and SIGTERM: the first asks a running `eval` or `score` to stop cleanly (keep
//! what is decided, journal it for `--resume`, remove temporary files and snapshots);
//! the second stops at once, for a user who will not wait.

use std::sync::atomic::{AtomicBool, Ordering};

/// Set by the first SIGINT or SIGTERM.
pub(crate) static STOP: AtomicBool = AtomicBool::new(false);

/// Installs the handler. A command that cannot stop cleanly (`call`, `probe`) does not
/// call this and keeps the default: the signal ends it.
pub(crate) fn install() {
    let handler = || {
        if STOP.swap(true, Ordering::SeqCst) {
            eprintln!("plangate: stopped at once (second interrupt)");
            std::process::exit(i32::from(crate::exit::INTERRUPTED));
        }
        eprintln!(
            "plangate: stopping: finishing the calls under way (interrupt again to stop at once)"
        );
    };
    // Only fails when a handler is already set, which would be a bug here; the run
    // then keeps the default behaviour and still works.
    if let Err(e) = ctrlc::set_handler(handler) {
        tracing::warn!("cannot catch interrupts: {e}");
    }
}

/// Whether an interrupt asked the run to stop.
pub(crate) fn stopping() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// The error a reading loop stops with when [`stopping`]: not a failure, and told apart
/// from one by its type.
#[derive(Debug)]
pub(crate) struct Interrupted;

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("interrupted")
    }
}

impl std::error::Error for Interrupted {}
