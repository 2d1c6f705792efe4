//! What every request shares (the catalog, the thresholds, the queue's places, the
//! metrics, `--out`, the upstream), what every handler reads a body with, and the JSON
//! answers they give.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use plangate_gate::catalog::Catalog;
use plangate_gate::decide::Options;
use subtle::ConstantTimeEq;
use tokio::sync::Semaphore;

use crate::metrics::Metrics;
use crate::out::Out;

/// What every request shares.
#[derive(Debug)]
pub(crate) struct App {
    pub(crate) catalog: Arc<Catalog>,
    pub(crate) decide: Options,
    pub(crate) max_body_bytes: usize,
    pub(crate) token: Option<String>,
    /// Places for requests in work or waiting: none left is a 503.
    pub(crate) admitted: Arc<Semaphore>,
    /// Places for requests in work.
    pub(crate) working: Arc<Semaphore>,
    pub(crate) metrics: Metrics,
    pub(crate) out: Option<Out>,
    pub(crate) upstream: Option<crate::upstream::Upstream>,
    /// The Anthropic upstream, for `/v1/messages`.
    pub(crate) anthropic: Option<crate::upstream::Upstream>,
    /// The warm gate's epochs, when every catalog tool has a module to execute.
    pub(crate) epochs: Option<crate::epochs::Epochs>,
    /// Why there is no warm gate (said by `/v1/eval` and `/v1/epoch`).
    pub(crate) cold_because: String,
}

impl App {
    /// Whether the server has a token of its own.
    pub(crate) fn has_token(&self) -> bool {
        self.token.is_some()
    }

    /// Whether the request carries the server's token, compared in constant time; any
    /// request does when the server has none.
    pub(crate) fn authorized(&self, headers: &HeaderMap) -> bool {
        let Some(token) = &self.token else {
            return true;
        };
        let given = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.as_bytes().strip_prefix(b"Bearer "))
            .unwrap_or_default();
        bool::from(given.ct_eq(token.as_bytes()))
    }

    /// The body, whole, or the answer for one too large (413) or cut off (400).
    pub(crate) async fn body(&self, body: Body) -> Result<bytes::Bytes, Response> {
        match axum::body::to_bytes(body, self.max_body_bytes).await {
            Ok(b) => Ok(b),
            Err(e) => {
                let too_large = std::error::Error::source(&e)
                    .is_some_and(|s| s.is::<http_body_util::LengthLimitError>());
                Err(if too_large {
                    error(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        "body_too_large",
                        &format!(
                            "the body is over --max-body-bytes ({} bytes)",
                            self.max_body_bytes
                        ),
                    )
                } else {
                    error(
                        StatusCode::BAD_REQUEST,
                        "body",
                        &format!("the body could not be read: {e}"),
                    )
                })
            }
        }
    }
}
/// A JSON error answer: `{"error": {"kind", "type", "message"}}` (`type` as OpenAI's
/// SDKs read it).
pub(crate) fn error(status: StatusCode, kind: &str, message: &str) -> Response {
    let body = serde_json::json!({"error": {"kind": kind, "type": kind, "message": message}});
    json(status, body.to_string())
}

/// A JSON answer from its text.
pub(crate) fn json(status: StatusCode, text: String) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        text,
    )
        .into_response()
}
