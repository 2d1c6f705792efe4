//! `GET /metrics`: the server's counters in the Prometheus text format, every series
//! named `plangate_*`, through the Prometheus project's own Rust client.

use std::sync::atomic::AtomicU64;

use plangate_gate::decide::Decision;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

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
        Metrics { registry, ..m }
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
