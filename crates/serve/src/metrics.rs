//! `GET /metrics`: the server's counters in the Prometheus text format, every series
//! named `plangate_*`, through the Prometheus project's own Rust client.

use std::sync::Mutex;
use std::sync::atomic::AtomicU64;

use plangate_gate::decide::Decision;
use plangate_harness::EvalStats;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::epochs::Epochs;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Request {
    endpoint: &'static str,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Endpoint {
    endpoint: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Verdict {
    endpoint: &'static str,
    verdict: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Reason {
    endpoint: &'static str,
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct UpstreamError {
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Call {
    tool: String,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Tool {
    tool: String,
}

type Latency = Family<Endpoint, Histogram, fn() -> Histogram>;

/// From 100 µs to about 6.5 s, doubling: a warm decision and a slow upstream on one scale.
fn latency() -> Histogram {
    Histogram::new(exponential_buckets(0.0001, 2.0, 17))
}

/// Every series the server keeps.
pub(crate) struct Metrics {
    registry: Registry,
    requests: Family<Request, Counter>,
    latency: Latency,
    verdicts: Family<Verdict, Counter>,
    reasons: Family<Reason, Counter>,
    upstream_errors: Family<UpstreamError, Counter>,
    rejected_busy: Counter<u64, AtomicU64>,
    calls: Family<Call, Counter>,
    probe_calls: Counter<u64, AtomicU64>,
    witnesses: Counter<u64, AtomicU64>,
    epochs: Counter<u64, AtomicU64>,
    quarantined: Family<Tool, Gauge>,
    /// The warm gate's counts as last added to the counters above.
    absorbed: Mutex<(EvalStats, u64)>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Metrics {
    pub(crate) fn new() -> Metrics {
        let mut registry = Registry::default();
        let m = Metrics {
            requests: Family::default(),
            latency: Family::new_with_constructor(latency),
            verdicts: Family::default(),
            reasons: Family::default(),
            upstream_errors: Family::default(),
            rejected_busy: Counter::default(),
            calls: Family::default(),
            probe_calls: Counter::default(),
            witnesses: Counter::default(),
            epochs: Counter::default(),
            quarantined: Family::default(),
            absorbed: Mutex::new((EvalStats::default(), 0)),
            registry: Registry::default(),
        };
        registry.register(
            "plangate_requests",
            "HTTP requests answered, by endpoint and status",
            m.requests.clone(),
        );
        registry.register(
            "plangate_request_duration_seconds",
            "Time from a request's arrival to its answer, by endpoint",
            m.latency.clone(),
        );
        registry.register(
            "plangate_verdicts",
            "Decisions answered, by endpoint and verdict",
            m.verdicts.clone(),
        );
        registry.register(
            "plangate_reasons",
            "Reason codes of the decisions answered, by endpoint",
            m.reasons.clone(),
        );
        registry.register(
            "plangate_upstream_errors",
            "Upstream model requests that failed, by kind (unreachable, timeout, status, garbage)",
            m.upstream_errors.clone(),
        );
        registry.register(
            "plangate_busy_rejections",
            "Requests refused with 503 because the queue was full",
            m.rejected_busy.clone(),
        );
        registry.register(
            "plangate_calls_executed",
            "Tool calls the warm gate executed for requests (probes excluded), by tool and outcome",
            m.calls.clone(),
        );
        registry.register(
            "plangate_probe_calls",
            "Probe calls the warm gate made",
            m.probe_calls.clone(),
        );
        registry.register(
            "plangate_witnesses",
            "Determinism witnesses the warm gate found",
            m.witnesses.clone(),
        );
        registry.register(
            "plangate_epochs_pinned",
            "Epochs the warm gate pinned or replayed",
            m.epochs.clone(),
        );
        registry.register(
            "plangate_quarantined",
            "1 for each tool quarantined in the current epoch, else 0",
            m.quarantined.clone(),
        );
        Metrics { registry, ..m }
    }

    /// Adds what the warm gate did since the last time to the counters, and sets each
    /// tool's quarantine as the current epoch knows it.
    pub(crate) fn absorb(&self, epochs: &Epochs) {
        let now = epochs.stats();
        let pinned = epochs.pinned();
        let mut last = self.absorbed.lock().unwrap_or_else(|e| e.into_inner());
        for (tool, outcomes) in &now.outcomes {
            for (outcome, n) in outcomes {
                let before = last.0.outcomes.get(tool).and_then(|o| o.get(outcome));
                let label = Call {
                    tool: tool.clone(),
                    outcome: outcome.clone(),
                };
                let delta = n.saturating_sub(before.copied().unwrap_or(0));
                self.calls.get_or_create(&label).inc_by(delta as u64);
            }
        }
        self.probe_calls
            .inc_by(now.probe_calls.saturating_sub(last.0.probe_calls) as u64);
        self.witnesses
            .inc_by(now.witnesses.saturating_sub(last.0.witnesses) as u64);
        self.epochs.inc_by(pinned.saturating_sub(last.1));
        for t in epochs.peek().health().tools {
            self.quarantined
                .get_or_create(&Tool { tool: t.name })
                .set(i64::from(t.quarantined));
        }
        *last = (now, pinned);
    }

    /// One request answered.
    pub(crate) fn request(&self, endpoint: &'static str, status: u16, seconds: f64) {
        self.requests
            .get_or_create(&Request { endpoint, status })
            .inc();
        self.latency
            .get_or_create(&Endpoint { endpoint })
            .observe(seconds);
    }

    /// One decision answered.
    pub(crate) fn decision(&self, endpoint: &'static str, d: &Decision) {
        self.verdicts
            .get_or_create(&Verdict {
                endpoint,
                verdict: d.verdict.as_str(),
            })
            .inc();
        for r in &d.reasons {
            self.reasons
                .get_or_create(&Reason {
                    endpoint,
                    reason: r.as_str(),
                })
                .inc();
        }
    }

    /// An upstream request that failed.
    pub(crate) fn upstream_error(&self, kind: &'static str) {
        self.upstream_errors
            .get_or_create(&UpstreamError { kind })
            .inc();
    }

    /// A request refused because the queue was full.
    pub(crate) fn busy(&self) {
        self.rejected_busy.inc();
    }

    /// The text format.
    pub(crate) fn encode(&self) -> String {
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
    }
}
