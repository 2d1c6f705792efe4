//! `POST /v1/decide`: one samples line whose results came recorded, answered with the
//! record `plangate score` writes for it (the gate's `LineScorer`, as the CLI calls
//! it), or, for a line that is not a task, a 400 with the CLI's bad-line record.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use plangate_gate::score::{LineScorer, ScoreConfig, Scored, bad_line_record};

use crate::app::{App, error, json};

/// A line at most this long is decided on the runtime's worker that read it: the gate
/// decides it in microseconds, less than handing it to a blocking thread costs. With
/// `--out`, every line goes to a blocking thread, since appending may wait behind a sync.
const DECIDED_IN_PLACE: usize = 16 * 1024;

pub(crate) async fn decide(State(app): State<Arc<App>>, body: Body) -> Response {
    let line = match app.body(body).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    if line.len() <= DECIDED_IN_PLACE && app.out.is_none() {
        let (status, text) = app.decide_line(&line);
        return json(status, text);
    }
    let worker = app.clone();
    match tokio::task::spawn_blocking(move || worker.decide_line(&line)).await {
        Ok((status, text)) => json(status, text),
        Err(e) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            &format!("deciding failed: {e}"),
        ),
    }
}

impl App {
    /// Scores one line as `plangate score` does: the status and the record. A decision
    /// is counted and appended to `--out` before it is answered.
    fn decide_line(&self, line: &[u8]) -> (StatusCode, String) {
        let line = trim_line_end(line);
        let config = ScoreConfig {
            opts: self.decide,
            ..ScoreConfig::default()
        };
        let scored = LineScorer::new(&self.catalog, config).score(line);
        if let Scored::Decided(d) = &scored {
            self.metrics.decision("decide", &d.decision);
        }
        // A record is about as long as its line: one allocation, not a doubling series.
        let mut record = String::with_capacity(line.len());
        if scored.emit(&mut plangate_gate::record::Json::new(&mut record)) {
            if let Some(out) = &self.out {
                out.append(&record);
            }
            return (StatusCode::OK, record);
        }
        match scored {
            Scored::Bad(e) => (StatusCode::BAD_REQUEST, bad_line_record(1, &e)),
            // Only a shard's scorer passes a task over, and this one is not a shard's.
            _ => (StatusCode::INTERNAL_SERVER_ERROR, String::from("{}")),
        }
    }
}

/// The line without the newline a client may end its body with, as a samples file's
/// reader leaves it out.
pub(crate) fn trim_line_end(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// `GET /v1/health`: the epoch id and each tool's probe status, quarantine and
/// evidence as known now; a server that executes nothing reports its catalog's
/// declarations and no epoch.
pub(crate) async fn health(State(app): State<Arc<App>>) -> Response {
    let Some(epochs) = &app.epochs else {
        let tools: Vec<_> = plangate_gate::decide::tool_states(&app.catalog)
            .into_iter()
            .map(|(name, s)| {
                serde_json::json!({
                    "name": name,
                    "declared_deterministic": s.declared_deterministic,
                    "verified": s.verified,
                    "quarantined": s.quarantined,
                })
            })
            .collect();
        let body = serde_json::json!({"status": "ok", "epoch_id": null, "tools": tools});
        return json(StatusCode::OK, body.to_string());
    };
    let gate = epochs.peek();
    let report = gate.health();
    let body = serde_json::json!({
        "status": "ok",
        "epoch_id": gate.epoch_id(),
        "replaying": epochs.config().replay.is_some(),
        "epochs_pinned": epochs.pinned(),
        "tools": report.tools,
    });
    json(StatusCode::OK, body.to_string())
}
