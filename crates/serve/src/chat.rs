//! `POST /v1/chat/completions`: the OpenAI-compatible proxy. A request with `tools`
//! goes upstream for N choices, which are judged as one task's samples; the answer is
//! one step, or none (docs/serve.md). A request without tools, and a step whose choices
//! call no tool, pass through as one choice.

use std::collections::BTreeSet;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use serde_json::{Map, Value, json};

use crate::app::{App, error, json};
use crate::judge::Judged;
use crate::reply::{answer, completion, refusal, with_headers};
use crate::step::{Answer, answer_for, decision_headers, sampling_notes, verdict_message};
use crate::upstream::{Upstream, UpstreamError, choices};

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
    let Some(mut request) = crate::step::request_object(&body) else {
        return error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            crate::step::NOT_A_REQUEST,
        );
    };
    let stream = request.remove("stream") == Some(Value::Bool(true));
    request.remove("stream_options");
    let auth = upstream_auth(&app, upstream, &headers);
    let notes = sampling_notes(&request);
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
pub(crate) fn offered_tools(request: &Map<String, Value>) -> BTreeSet<String> {
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
        let id = self.answer.get("id").and_then(Value::as_str);
        let judged = self.app.judge_choices(
            "chat_completions",
            id,
            &self.messages(),
            &self.offered,
            &self.conversation,
        )?;
        Ok((self, judged))
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
        headers.extend(decision_headers(&judged));
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
        match answer_for(judged.decision.verdict, &upstream.config) {
            Answer::Modal => modal(),
            Answer::Refuse => refuse_or(None),
            Answer::Status(status) => refuse_or(Some(status)),
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
    let message = verdict_message(judged);
    let body = json!({
        "error": {"kind": verdict, "type": format!("plangate_{verdict}"), "message": message},
        "plangate": record,
    });
    let mut response = json(status, body.to_string());
    with_headers(&mut response, headers);
    response
}
