//! The upstream model, as an OpenAI-compatible Chat Completions server: N choices asked
//! for with `n`, and the rest with concurrent requests where it returns fewer; and the
//! one POST both proxies send (`post_json`, which `/v1/messages` repeats N times). Every
//! failure is an [`UpstreamError`] the proxy answers with 502 or 504: a step is never
//! passed on unjudged. The key is sent, never logged.

use std::time::Duration;

use axum::http::StatusCode;
use serde_json::{Map, Value};
use tokio::task::JoinSet;

use crate::error::ServeError;

/// How the proxy reaches its upstream.
#[derive(Debug, Clone)]
pub struct UpstreamConfig {
    /// The base URL as OpenAI's clients take it (`https://api.openai.com/v1`); requests
    /// go to `{url}/chat/completions`.
    pub url: String,
    /// Choices judged per step (`--n`).
    pub n: usize,
    /// How long one upstream request may take.
    pub timeout: Duration,
    /// The key sent upstream (`--upstream-key-env`); without it, the client's own
    /// `Authorization` goes through when the server has no token of its own.
    pub key: Option<String>,
    /// What a reject answers.
    pub on_reject: OnReject,
    /// What a deferral answers.
    pub on_defer: OnDefer,
}

/// `--on-reject`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnReject {
    /// A well-formed assistant message without tool calls, saying why.
    Refuse,
    /// 422 with the record.
    Error,
}

/// `--on-defer`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnDefer {
    /// The modal choice, marked `x-plangate-decision: defer`.
    Pass,
    /// As for a reject.
    Refuse,
    /// 409 with the record.
    Error,
}

/// Why the upstream gave no usable answer.
#[derive(Debug, thiserror::Error)]
pub(crate) enum UpstreamError {
    /// It could not be reached.
    #[error("the upstream model could not be reached: {0}")]
    Unreachable(String),
    /// It took longer than `--upstream-timeout-ms`.
    #[error("the upstream model did not answer within {0} ms")]
    Timeout(u128),
    /// It answered with an error status.
    #[error("the upstream model answered {status}: {message}")]
    Status {
        /// Its status.
        status: u16,
        /// Its error message, or the start of its body.
        message: String,
    },
    /// It answered something that is not a chat completion.
    #[error("the upstream model answered something that is not its API's answer: {0}")]
    Garbage(String),
}

impl UpstreamError {
    /// The answer's status: 504 for a timeout, else 502.
    pub(crate) fn status(&self) -> StatusCode {
        match self {
            UpstreamError::Timeout(_) => StatusCode::GATEWAY_TIMEOUT,
            _ => StatusCode::BAD_GATEWAY,
        }
    }

    /// The kind, for the error's JSON and the metrics.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            UpstreamError::Unreachable(_) => "upstream_unreachable",
            UpstreamError::Timeout(_) => "upstream_timeout",
            UpstreamError::Status { .. } => "upstream_status",
            UpstreamError::Garbage(_) => "upstream_garbage",
        }
    }
}

/// The upstream's client, shared by every request.
#[derive(Debug)]
pub(crate) struct Upstream {
    pub(crate) config: UpstreamConfig,
    client: reqwest::Client,
    endpoint: String,
}

impl Upstream {
    pub(crate) fn new(config: UpstreamConfig) -> Result<Upstream, ServeError> {
        Upstream::at(config, "/chat/completions", "http://127.0.0.1:8000/v1")
    }

    /// A client for the endpoint `path` under the configured base URL; `example` is a
    /// base URL shown when the configured one is not a URL.
    pub(crate) fn at(
        config: UpstreamConfig,
        path: &str,
        example: &str,
    ) -> Result<Upstream, ServeError> {
        let client = reqwest::Client::builder()
            .timeout(config.timeout)
            .tcp_nodelay(true)
            .build()
            .map_err(|e| ServeError::Upstream(e.to_string()))?;
        let endpoint = format!("{}{path}", config.url.trim_end_matches('/'));
        if reqwest::Url::parse(&endpoint).is_err() {
            return Err(ServeError::Upstream(format!(
                "{} is not a URL such as {example}",
                config.url
            )));
        }
        Ok(Upstream {
            config,
            client,
            endpoint,
        })
    }

    /// One request: the completion's JSON object.
    async fn once(
        client: reqwest::Client,
        endpoint: String,
        auth: Option<String>,
        body: Value,
        timeout: Duration,
    ) -> Result<Map<String, Value>, UpstreamError> {
        let auth = auth.map(|a| (reqwest::header::AUTHORIZATION, a));
        match post(&client, &endpoint, auth.as_slice(), &body, timeout).await? {
            Value::Object(o) if o.get("choices").is_some_and(Value::is_array) => Ok(o),
            _ => Err(UpstreamError::Garbage(
                "no `choices` array in the answer".into(),
            )),
        }
    }

    /// One request to this upstream's endpoint with these headers: its JSON answer.
    pub(crate) async fn post_json(
        &self,
        headers: &[(reqwest::header::HeaderName, String)],
        body: &Value,
    ) -> Result<Value, UpstreamError> {
        post(
            &self.client,
            &self.endpoint,
            headers,
            body,
            self.config.timeout,
        )
        .await
    }

    /// The completion for `body` as the client asked it (`n` left as given).
    pub(crate) async fn complete(
        &self,
        body: Value,
        auth: Option<String>,
    ) -> Result<Map<String, Value>, UpstreamError> {
        let (client, endpoint) = (self.client.clone(), self.endpoint.clone());
        Self::once(client, endpoint, auth, body, self.config.timeout).await
    }

    /// N choices for `body`: one request with `n`, then, where the upstream returned
    /// fewer (it ignores `n`, or caps it), one concurrent request per missing choice.
    /// The first answer carries the others' choices, renumbered.
    pub(crate) async fn sample(
        &self,
        mut body: Map<String, Value>,
        auth: Option<String>,
    ) -> Result<Map<String, Value>, UpstreamError> {
        let n = self.config.n;
        body.insert("n".into(), n.into());
        let first = self
            .complete(Value::Object(body.clone()), auth.clone())
            .await?;
        let mut answer = first;
        let got = choices(&answer).len();
        if got < n {
            body.insert("n".into(), 1.into());
            let mut more = JoinSet::new();
            for _ in got..n {
                let (client, endpoint) = (self.client.clone(), self.endpoint.clone());
                let (auth, body) = (auth.clone(), Value::Object(body.clone()));
                more.spawn(Self::once(
                    client,
                    endpoint,
                    auth,
                    body,
                    self.config.timeout,
                ));
            }
            let mut extra = Vec::new();
            while let Some(done) = more.join_next().await {
                let done = done.map_err(|e| UpstreamError::Unreachable(e.to_string()))??;
                extra.extend(choices(&done).iter().cloned());
            }
            if let Some(Value::Array(all)) = answer.get_mut("choices") {
                all.extend(extra);
                all.truncate(n);
                for (i, c) in all.iter_mut().enumerate() {
                    if let Value::Object(c) = c {
                        c.insert("index".into(), i.into());
                    }
                }
            }
        }
        Ok(answer)
    }
}

/// One POST of a JSON body: the answer's JSON when its status is a success; an error
/// status, a timeout, a refused connection or a body that is not JSON is an
/// [`UpstreamError`]. The headers (which carry the key) are sent, never logged.
async fn post(
    client: &reqwest::Client,
    endpoint: &str,
    headers: &[(reqwest::header::HeaderName, String)],
    body: &Value,
    timeout: Duration,
) -> Result<Value, UpstreamError> {
    let mut req = client
        .post(endpoint)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body.to_string());
    for (name, value) in headers {
        req = req.header(name, value);
    }
    let res = req.send().await.map_err(|e| sent_error(&e, timeout))?;
    let status = res.status();
    let text = res.bytes().await.map_err(|e| sent_error(&e, timeout))?;
    let value: Value = serde_json::from_slice(&text).map_err(|_| {
        if status.is_success() {
            UpstreamError::Garbage(start_of(&text))
        } else {
            UpstreamError::Status {
                status: status.as_u16(),
                message: start_of(&text),
            }
        }
    })?;
    if !status.is_success() {
        let message = value
            .pointer("/error/message")
            .and_then(Value::as_str)
            .map_or_else(|| start_of(&text), str::to_string);
        return Err(UpstreamError::Status {
            status: status.as_u16(),
            message,
        });
    }
    Ok(value)
}

/// A completion's choices.
pub(crate) fn choices(answer: &Map<String, Value>) -> &[Value] {
    answer
        .get("choices")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn sent_error(e: &reqwest::Error, timeout: Duration) -> UpstreamError {
    if e.is_timeout() {
        UpstreamError::Timeout(timeout.as_millis())
    } else {
        // The URL is the operator's; the key is in a header and never in the error.
        UpstreamError::Unreachable(e.to_string())
    }
}

/// The first 200 characters of a body, for an error message.
fn start_of(text: &[u8]) -> String {
    String::from_utf8_lossy(text).chars().take(200).collect()
}
