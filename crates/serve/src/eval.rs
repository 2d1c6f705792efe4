//! `POST /v1/eval`: one samples line whose calls are executed in the warm gate's epoch,
//! answered with the record `plangate eval` writes for it (with its epoch id); and
//! `POST /v1/epoch`, which pins a fresh epoch. Both run on blocking threads: a sandbox
//! call, a probe and a pin never run on the runtime's workers.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;

use crate::app::{App, error, json};
use crate::decide::trim_line_end;
use crate::epochs::RenewError;

pub(crate) async fn eval(State(app): State<Arc<App>>, body: Body) -> Response {
    if app.epochs.is_none() {
        return app.cold();
    }
    let line = match app.body(body).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let worker = app.clone();
    match tokio::task::spawn_blocking(move || worker.eval_line(&line)).await {
        Ok((status, text)) => json(status, text),
        Err(e) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            &format!("executing failed: {e}"),
        ),
    }
}

pub(crate) async fn epoch(State(app): State<Arc<App>>) -> Response {
    if app.epochs.is_none() {
        return app.cold();
    }
    let worker = app.clone();
    let renewed = tokio::task::spawn_blocking(move || {
        let epochs = worker.epochs.as_ref().expect("checked above");
        let retired = epochs.peek().epoch_id().to_string();
        epochs.renew().map(|gate| (retired, gate))
    })
    .await;
    match renewed {
        Ok(Ok((retired, gate))) => {
            let body = serde_json::json!({
                "epoch_id": gate.epoch_id(),
                "retired": retired,
                "probe_calls": gate.stats().probe_calls,
            });
            json(StatusCode::OK, body.to_string())
        }
        Ok(Err(e @ RenewError::Replaying(_))) => {
            error(StatusCode::CONFLICT, "replaying_epoch", &e.to_string())
        }
        Ok(Err(e @ RenewError::Failed(_))) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "epoch",
            &format!("no fresh epoch was pinned, the current one goes on: {e}"),
        ),
        Err(e) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            &format!("pinning failed: {e}"),
        ),
    }
}

impl App {
    /// The answer of a server without a warm gate to what needs one.
    fn cold(&self) -> Response {
        error(
            StatusCode::NOT_FOUND,
            "no_warm_gate",
            &format!(
                "this server executes nothing, so /v1/eval and /v1/epoch are not served: {}",
                self.cold_because
            ),
        )
    }

    /// Executes one line in the current epoch and decides it at once, as `plangate
    /// eval` writes it: the status and the record. A decision is counted and appended to
    /// `--out` before it is answered. Blocks.
    fn eval_line(&self, line: &[u8]) -> (StatusCode, String) {
        let Some(epochs) = &self.epochs else {
            return (StatusCode::NOT_FOUND, String::from("{}"));
        };
        let gate = epochs.gate();
        let (decision, text) = match gate.eval_line(trim_line_end(line)) {
            Ok(decided) => decided,
            Err(bad) => return (StatusCode::BAD_REQUEST, bad),
        };
        self.metrics.decision("eval", &decision);
        if let Some(out) = &self.out {
            out.append(&text);
        }
        (StatusCode::OK, text)
    }
}
