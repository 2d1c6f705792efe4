//! `POST /v1/messages`: the proxy for Anthropic's Messages API. The API has no `n`, so
//! a request with `tools` goes upstream N times at once; the N messages' `tool_use`
//! blocks are judged as one task's samples, as the Chat Completions proxy judges its
//! choices, and the answer is one message, or a refusal, in Anthropic's own shapes
//! (docs/serve.md).

use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use reqwest::header::HeaderName;
use serde_json::Value;
use tokio::task::JoinSet;

use crate::anthropic::{answer, as_tool_calls, error, is_message, refusal, with_record};
use crate::app::App;
use crate::chat::offered_tools;
use crate::judge::Judged;
use crate::reply::{refusal_text, with_headers};
use crate::step::{Answer, answer_for, decision_headers, sampling_notes, verdict_message};
use crate::upstream::UpstreamError;

/// The client's headers passed upstream as they are; `x-api-key` is replaced by
/// `--anthropic-key-env`'s key when there is one.
const PASSED: [&str; 3] = ["x-api-key", "anthropic-version", "anthropic-beta"];

pub(crate) async fn messages(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    if app.anthropic.is_none() {
        return error(
            StatusCode::NOT_FOUND,
            "not_found_error",
            "this server has no --anthropic-upstream: /v1/messages is not served",
            None,
        );
    }
    let body = match app.body(body).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let Some(mut request) = crate::step::request_object(&body) else {
        return error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            crate::step::NOT_A_REQUEST,
            None,
        );
    };
    let stream = request.remove("stream") == Some(Value::Bool(true));
    let notes = sampling_notes(&request);
    let sent = upstream_headers(&app, &headers);
    let offered = offered_tools(&request);
    let conversation = request
        .get("messages")
        .map(Value::to_string)
        .unwrap_or_default();
    let times = if offered.is_empty() {
        1
    } else {
        app.anthropic.as_ref().map_or(1, |u| u.config.n)
    };
    let sampled = match sample(&app, Value::Object(request), sent, times).await {
        Ok(s) => s,
        Err(e) => return upstream_failed(&app, &e),
    };
    let worker = app.clone();
    let judged = tokio::task::spawn_blocking(move || {
        let calls: Vec<Value> = sampled.iter().map(as_tool_calls).collect();
        let refs: Vec<&Value> = calls.iter().collect();
        let id = sampled
            .first()
            .and_then(|m| m.get("id"))
            .and_then(Value::as_str);
        let judged = worker.judge_choices("messages", id, &refs, &offered, &conversation);
        judged.map(|j| (sampled, calls, j))
    })
    .await;
    match judged {
        Ok(Ok((sampled, calls, judged))) => reply(&app, &sampled, &calls, judged, stream, notes),
        Ok(Err(garbage)) => upstream_failed(&app, &garbage),
        Err(e) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "api_error",
            &format!("judging failed: {e}"),
            None,
        ),
    }
}

/// The headers sent upstream: the client's Anthropic headers (its key, unless the
/// server has one of its own), and its `Authorization` when the server has no token
/// (with one, that header carries the server's token).
fn upstream_headers(app: &App, headers: &HeaderMap) -> Vec<(HeaderName, String)> {
    let key = app.anthropic.as_ref().and_then(|u| u.config.key.clone());
    let mut sent: Vec<(HeaderName, String)> = PASSED
        .iter()
        .filter(|name| key.is_none() || **name != "x-api-key")
        .filter_map(|name| {
            let v = headers.get(*name)?.to_str().ok()?;
            Some((HeaderName::from_static(name), v.to_string()))
        })
        .collect();
    if let Some(key) = key {
        sent.push((HeaderName::from_static("x-api-key"), key));
    }
    if !app.has_token()
        && let Some(auth) = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
    {
        sent.push((reqwest::header::AUTHORIZATION, auth.to_string()));
    }
    sent
}

/// `times` messages for the request, asked for all at once; in the order asked, and
/// each an Anthropic message, or the first failure.
async fn sample(
    app: &Arc<App>,
    body: Value,
    headers: Vec<(HeaderName, String)>,
    times: usize,
) -> Result<Vec<Value>, UpstreamError> {
    let (body, headers) = (Arc::new(body), Arc::new(headers));
    let mut asked = JoinSet::new();
    for i in 0..times {
        let (app, body, headers) = (app.clone(), body.clone(), headers.clone());
        asked.spawn(async move {
            let Some(upstream) = app.anthropic.as_ref() else {
                return (i, Err(UpstreamError::Unreachable("no upstream".into())));
            };
            (i, upstream.post_json(&headers, &body).await)
        });
    }
    let mut got = vec![Value::Null; times];
    while let Some(done) = asked.join_next().await {
        let (i, message) = done.map_err(|e| UpstreamError::Unreachable(e.to_string()))?;
        let message = message?;
        if !is_message(&message) {
            return Err(UpstreamError::Garbage(
                "no `content` array in the answer".into(),
            ));
        }
        got[i] = message;
    }
    Ok(got)
}

/// The answer for the sampled messages, by the verdict and the server's policies.
fn reply(
    app: &App,
    sampled: &[Value],
    calls: &[Value],
    judged: Option<Judged>,
    stream: bool,
    mut headers: Vec<(&'static str, String)>,
) -> Response {
    let first = sampled.first().unwrap_or(&Value::Null);
    let Some(judged) = judged else {
        // No message uses a tool: the first passes through as it is.
        return answer(first, stream, &headers);
    };
    headers.extend(decision_headers(&judged));
    let record = Some(judged.record.as_str());
    let Some(config) = app.anthropic.as_ref().map(|u| &u.config) else {
        return answer(first, stream, &headers);
    };
    match answer_for(judged.decision.verdict, config) {
        Answer::Modal => {
            let modal = sampled.get(judged.modal).unwrap_or(first);
            answer(&with_record(modal, record), stream, &headers)
        }
        Answer::Refuse => {
            let refs: Vec<&Value> = calls.iter().collect();
            let text = refusal_text(&judged.decision, &refs);
            answer(
                &with_record(&refusal(first, text), record),
                stream,
                &headers,
            )
        }
        Answer::Status(status) => {
            let kind = format!("plangate_{}", judged.decision.verdict.as_str());
            let mut r = error(status, &kind, &verdict_message(&judged), record);
            with_headers(&mut r, &headers);
            r
        }
    }
}

fn upstream_failed(app: &App, e: &UpstreamError) -> Response {
    app.metrics.upstream_error(e.kind());
    tracing::warn!("{e}");
    error(e.status(), e.kind(), &e.to_string(), None)
}
