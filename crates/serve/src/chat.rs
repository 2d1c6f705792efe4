//! `POST /v1/chat/completions`: the OpenAI-compatible proxy. A request with `tools`
//! goes upstream for N choices, which are judged as one task's samples; the answer is
//! one step, or none (docs/serve.md). A request without tools, and a step whose choices
//! call no tool, pass through as one choice.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use plangate_gate::decide::Verdict;
use serde_json::{Map, Value, json};

use crate::app::{App, error, json};
use crate::judge::Judged;
use crate::reply::{answer, completion, refusal};
use crate::upstream::{OnDefer, OnReject, Upstream, UpstreamError, choices};

/// Steps proxied so far, for the task IDs of those the upstream gave no id.
static STEPS: AtomicU64 = AtomicU64::new(0);

/// The header that warns of `temperature: 0`.
const WARNING: &str = "x-plangate-warning";

pub(crate) async fn chat(State(app): State<Arc<App>>, headers: HeaderMap, body: Body) -> Response {
    let Some(upstream) = app.upstream.as_ref() else {
        return error(
            StatusCode::NOT_FOUND,
            "not_found",
            "this server has no --upstream: /v1/chat/completions is not served",
        );
    };
    let body = match app.body(body).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let mut request = match serde_json::from_slice::<Value>(&body) {
        Ok(Value::Object(o)) if o.get("messages").is_some_and(Value::is_array) => o,
        _ => {
            return error(
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                "the body must be a JSON object with a `messages` array",
            );
        }
    };
    let stream = request.remove("stream") == Some(Value::Bool(true));
    request.remove("stream_options");
    let auth = upstream_auth(&app, upstream, &headers);
    let mut notes: Vec<(&'static str, String)> = Vec::new();
    if request.get("temperature").and_then(Value::as_f64) == Some(0.0) {
        tracing::warn!(
            "a request with temperature 0: its N choices are alike by construction and measure nothing"
        );
        notes.push((
            WARNING,
            "temperature 0: the N choices measure nothing".into(),
        ));
    }
    let offered = offered_tools(&request);
    if offered.is_empty() {
        return match upstream.complete(Value::Object(request), auth).await {
            Ok(a) => answer(Value::Object(a), stream, &notes),
            Err(e) => upstream_failed(&app, &e),
        };
    }
    let conversation = request
        .get("messages")
        .map(Value::to_string)
        .unwrap_or_default();
    let sampled = match upstream.sample(request, auth).await {
        Ok(a) => a,
        Err(e) => return upstream_failed(&app, &e),
    };
    let step = Step {
        app: app.clone(),
        answer: sampled,
        offered,
        conversation,
    };
    let judged = tokio::task::spawn_blocking(move || step.judge()).await;
    match judged {
        Ok(Ok((step, judged))) => step.reply(judged, upstream, stream, notes),
        Ok(Err(garbage)) => upstream_failed(&app, &garbage),
        Err(e) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            &format!("judging failed: {e}"),
        ),
    }
}

/// The key sent upstream: `--upstream-key-env`'s, else the client's own when the server
/// has no token of its own (with one, the client's header carries the server's token).
fn upstream_auth(app: &App, upstream: &Upstream, headers: &HeaderMap) -> Option<String> {
    if let Some(key) = &upstream.config.key {
        return Some(format!("Bearer {key}"));
    }
    if app.has_token() {
        return None;
    }
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// The names of the functions the request offers.
fn offered_tools(request: &Map<String, Value>) -> BTreeSet<String> {
    request
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| {
            t.pointer("/function/name")
                .or_else(|| t.get("name"))
                .and_then(Value::as_str)
        })
        .map(str::to_string)
        .collect()
}

fn upstream_failed(app: &App, e: &UpstreamError) -> Response {
    app.metrics.upstream_error(e.kind());
    tracing::warn!("{e}");
    error(e.status(), e.kind(), &e.to_string())
}

/// A sampled step on its way to a decision.
struct Step {
    app: Arc<App>,
    answer: Map<String, Value>,
    offered: BTreeSet<String>,
    conversation: String,
}

impl Step {
    fn messages(&self) -> Vec<&Value> {
        choices(&self.answer)
            .iter()
            .map(|c| c.get("message").unwrap_or(&Value::Null))
            .collect()
    }

    /// Judges the N choices, on a blocking thread: deciding is CPU work, kept off the
    /// runtime's workers.
    fn judge(self) -> Result<(Step, Option<Judged>), UpstreamError> {
        let messages = self.messages();
        let calls_tools = messages.iter().any(|m| {
            m.get("tool_calls")
                .and_then(Value::as_array)
                .is_some_and(|c| !c.is_empty())
        });
        if !calls_tools {
            return Ok((self, None));
        }
        let task_id = match self.answer.get("id").and_then(Value::as_str) {
            Some(id) => id.to_string(),
            None => format!("step-{}", STEPS.fetch_add(1, Ordering::Relaxed)),
        };
        let judged = self
            .app
            .judge_step(&task_id, &messages, &self.offered, &self.conversation)
            .map_err(|e| {
                UpstreamError::Garbage(format!(
                    "its choices are not tool calls plangate can read: {e}"
                ))
            })?;
        if let Some(out) = &self.app.out {
            out.append(&judged.record);
        }
        Ok((self, Some(judged)))
    }

    /// The answer for a judged step, by its verdict and the server's policies.
    fn reply(
        self,
        judged: Option<Judged>,
        upstream: &Upstream,
        stream: bool,
        mut headers: Vec<(&'static str, String)>,
    ) -> Response {
        let messages = self.messages();
        let first = || {
            choices(&self.answer)
                .first()
                .cloned()
                .unwrap_or(Value::Null)
        };
        let Some(judged) = judged else {
            // No choice calls a tool: the first passes through as it is.
            return answer(completion(&self.answer, first(), None), stream, &headers);
        };
        let verdict = judged.decision.verdict;
        let reasons: Vec<&str> = judged.decision.reasons.iter().map(|r| r.as_str()).collect();
        headers.push(("x-plangate-decision", verdict.as_str().into()));
        headers.push(("x-plangate-reasons", reasons.join(",")));
        let refuse_or = |status: Option<StatusCode>| match status {
            None => answer(
                completion(
                    &self.answer,
                    refusal(&judged, &messages),
                    Some(&judged.record),
                ),
                stream,
                &headers,
            ),
            Some(status) => refused_with_status(status, &judged, &headers),
        };
        let modal = || {
            let choice = choices(&self.answer)
                .get(judged.modal)
                .cloned()
                .unwrap_or(Value::Null);
            answer(
                completion(&self.answer, choice, Some(&judged.record)),
                stream,
                &headers,
            )
        };
        match (verdict, upstream.config.on_reject, upstream.config.on_defer) {
            (Verdict::Accept, _, _) => modal(),
            (Verdict::Reject, OnReject::Refuse, _) => refuse_or(None),
            (Verdict::Reject, OnReject::Error, _) => {
                refuse_or(Some(StatusCode::UNPROCESSABLE_ENTITY))
            }
            (Verdict::Defer, _, OnDefer::Pass) => modal(),
            (Verdict::Defer, _, OnDefer::Refuse) => refuse_or(None),
            (Verdict::Defer, _, OnDefer::Error) => refuse_or(Some(StatusCode::CONFLICT)),
        }
    }
}

/// `--on-reject error` and `--on-defer error`: the status, an error the SDKs read, and
/// the record under `plangate`.
fn refused_with_status(
    status: StatusCode,
    judged: &Judged,
    headers: &[(&'static str, String)],
) -> Response {
    let record: Value = serde_json::from_str(&judged.record).unwrap_or(Value::Null);
    let verdict = judged.decision.verdict.as_str();
    let message = format!(
        "plangate's verdict on this step is {verdict} ({}); its tool calls were not made",
        judged
            .decision
            .reasons
            .iter()
            .map(|r| r.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let body = json!({
        "error": {"kind": verdict, "type": format!("plangate_{verdict}"), "message": message},
        "plangate": record,
    });
    let mut response = json(status, body.to_string());
    for (name, value) in headers {
        if let Ok(v) = axum::http::HeaderValue::from_str(value) {
            response.headers_mut().insert(*name, v);
        }
    }
    response
}
