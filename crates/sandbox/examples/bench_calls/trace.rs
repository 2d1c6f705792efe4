//! Which WASI calls a tool call makes and the host time in each, read from tracing
//! spans: wasmtime-wasi opens one span per preview1 host function (`#[instrument]` on
//! each), whether wiggle's glue or the sandbox's scrub calls it. This subscriber counts
//! them and adds up the wall time inside them, so a per-call profile names each WASI
//! call without patching wasmtime.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// Count and inclusive wall time of one span name.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Tally {
    pub(crate) count: u64,
    pub(crate) time: Duration,
}

#[derive(Default)]
struct State {
    next: u64,
    /// Open spans and their keys.
    names: BTreeMap<u64, String>,
    /// Entered spans, innermost last, with when they were entered.
    stack: Vec<(u64, Instant)>,
    tallies: BTreeMap<String, Tally>,
}

/// Counts spans by name. WASI calls on stdio and files are told apart by their `fd`
/// field (`fd_read(0)` is stdin), because one per-call figure mixes two costs otherwise.
#[derive(Clone, Default)]
pub(crate) struct Tracer {
    state: Arc<Mutex<State>>,
}

impl Tracer {
    /// The tallies so far, and starts over.
    pub(crate) fn take(&self) -> BTreeMap<String, Tally> {
        std::mem::take(&mut self.state.lock().expect("tracer").tallies)
    }
}

/// Reads the `fd` field of a span, if it has one.
#[derive(Default)]
struct FdField(Option<String>);

impl Visit for FdField {
    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        if field.name() == "fd" {
            let text = format!("{value:?}");
            // `Fd(3)` -> `3`
            let digits: String = text.chars().filter(char::is_ascii_digit).collect();
            self.0 = Some(digits);
        }
    }
}

impl Subscriber for Tracer {
    fn enabled(&self, meta: &Metadata<'_>) -> bool {
        // wiggle's own "wiggle abi" span wraps the instrumented call (only where wiggle's
        // glue calls it, not the scrub): counted once, at the call.
        meta.is_span() && meta.target().starts_with("wasmtime_wasi") && meta.name() != "wiggle abi"
    }

    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        let meta = attrs.metadata();
        let mut fd = FdField::default();
        attrs.record(&mut fd);
        let key = match fd.0 {
            Some(fd) if meta.name().starts_with("fd_") => format!("{}({fd})", meta.name()),
            _ => meta.name().to_owned(),
        };
        let mut s = self.state.lock().expect("tracer");
        s.next += 1;
        let id = s.next;
        s.tallies.entry(key.clone()).or_default().count += 1;
        s.names.insert(id, key);
        Id::from_u64(id)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, _: &Event<'_>) {}

    fn enter(&self, id: &Id) {
        self.state
            .lock()
            .expect("tracer")
            .stack
            .push((id.into_u64(), Instant::now()));
    }

    fn exit(&self, id: &Id) {
        let now = Instant::now();
        let mut s = self.state.lock().expect("tracer");
        let Some(pos) = s.stack.iter().rposition(|(i, _)| *i == id.into_u64()) else {
            return;
        };
        let (_, at) = s.stack.remove(pos);
        if let Some(key) = s.names.get(&id.into_u64()).cloned() {
            s.tallies.entry(key).or_default().time += now - at;
        }
    }

    fn try_close(&self, id: Id) -> bool {
        self.state
            .lock()
            .expect("tracer")
            .names
            .remove(&id.into_u64());
        true
    }
}
