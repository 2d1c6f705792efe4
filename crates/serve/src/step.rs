//! What both proxies (OpenAI's Chat Completions, Anthropic's Messages) do with a sampled
//! step once its N choices are read as assistant messages with `tool_calls`: judge them
//! as one task's samples, and pick the answer the verdict and the server's policies
//! give. Each proxy only writes that answer in its own API's shape.

use std::sync::atomic::{AtomicU64, Ordering};

use axum::http::StatusCode;
use plangate_gate::decide::Verdict;
use serde_json::{Map, Value};

use crate::app::App;
use crate::judge::Judged;
use crate::upstream::{OnDefer, OnReject, UpstreamConfig, UpstreamError};

/// Why a proxy's body is refused, in each front door's own error shape.
pub(crate) const NOT_A_REQUEST: &str = "the body must be a JSON object with a `messages` array";

/// A proxy's request body as both APIs take it: a JSON object with a `messages` array.
pub(crate) fn request_object(body: &[u8]) -> Option<Map<String, Value>> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(o)) if o.get("messages").is_some_and(Value::is_array) => Some(o),
        _ => None,
    }
}

/// Steps proxied so far, for the task IDs of those the upstream gave no id.
static STEPS: AtomicU64 = AtomicU64::new(0);

/// What a judged step is answered with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    /// The modal choice, as the upstream wrote it (accept, or a deferral passed on).
    Modal,
    /// A well-formed assistant message without tool calls, saying why.
    Refuse,
    /// An error status with the record.
    Status(StatusCode),
}

/// The answer a verdict gets under `--on-reject` and `--on-defer`.
pub(crate) fn answer_for(verdict: Verdict, config: &UpstreamConfig) -> Answer {
    match (verdict, config.on_reject, config.on_defer) {
        (Verdict::Accept, _, _) | (Verdict::Defer, _, OnDefer::Pass) => Answer::Modal,
        (Verdict::Reject, OnReject::Refuse, _) | (Verdict::Defer, _, OnDefer::Refuse) => {
            Answer::Refuse
        }
        (Verdict::Reject, OnReject::Error, _) => Answer::Status(StatusCode::UNPROCESSABLE_ENTITY),
        (Verdict::Defer, _, OnDefer::Error) => Answer::Status(StatusCode::CONFLICT),
    }
}

/// The header that warns of `temperature: 0`.
const WARNING: &str = "x-plangate-warning";

/// The headers a request's sampling parameters earn: with `temperature: 0` the N
/// choices are alike by construction and measure nothing (also said on stderr).
pub(crate) fn sampling_notes(request: &Map<String, Value>) -> Vec<(&'static str, String)> {
    if request.get("temperature").and_then(Value::as_f64) != Some(0.0) {
        return Vec::new();
    }
    tracing::warn!(
        "a request with temperature 0: its N choices are alike by construction and measure nothing"
    );
    vec![(
        WARNING,
        "temperature 0: the N choices measure nothing".into(),
    )]
}

/// The headers every judged answer carries: the verdict and its reasons.
pub(crate) fn decision_headers(judged: &Judged) -> [(&'static str, String); 2] {
    let reasons: Vec<&str> = judged.decision.reasons.iter().map(|r| r.as_str()).collect();
    [
        (
            "x-plangate-decision",
            judged.decision.verdict.as_str().into(),
        ),
        ("x-plangate-reasons", reasons.join(",")),
    ]
}

/// The message of an error status answered for a verdict (`--on-reject error`,
/// `--on-defer error`).
pub(crate) fn verdict_message(judged: &Judged) -> String {
    let reasons: Vec<&str> = judged.decision.reasons.iter().map(|r| r.as_str()).collect();
    format!(
        "plangate's verdict on this step is {} ({}); its tool calls were not made",
        judged.decision.verdict.as_str(),
        reasons.join(", ")
    )
}

impl App {
    /// Judges a step's choices, given as assistant messages with `tool_calls`, on the
    /// caller's (blocking) thread, and appends the record to `--out`; `None` when no
    /// choice calls a tool (the step passes through). `id` is the upstream's answer's
    /// id, the task's ID; `endpoint` labels the metrics.
    pub(crate) fn judge_choices(
        &self,
        endpoint: &'static str,
        id: Option<&str>,
        messages: &[&Value],
        offered: &std::collections::BTreeSet<String>,
        conversation: &str,
    ) -> Result<Option<Judged>, UpstreamError> {
        let calls_tools = messages.iter().any(|m| {
            m.get("tool_calls")
                .and_then(Value::as_array)
                .is_some_and(|c| !c.is_empty())
        });
        if !calls_tools {
            return Ok(None);
        }
        let task_id = match id {
            Some(id) => id.to_string(),
            None => format!("step-{}", STEPS.fetch_add(1, Ordering::Relaxed)),
        };
        let judged = self
            .judge_step(endpoint, &task_id, messages, offered, conversation)
            .map_err(|e| {
                UpstreamError::Garbage(format!(
                    "its choices are not tool calls plangate can read: {e}"
                ))
            })?;
        if let Some(out) = &self.out {
            out.append(&judged.record);
        }
        Ok(Some(judged))
    }
}
