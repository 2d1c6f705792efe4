//! The network inside the epoch (docs/design.md, "Network"): every wasi:http request a
//! component makes passes [`Hooks::send_request`], which denies it (the default), sends
//! it as it is (`live`), or answers it from the epoch's recording (`pinned`): the first
//! use of a request in an epoch goes out and is recorded, every later identical request
//! is answered with the same bytes, and an epoch replayed from its manifest answers
//! only from the recording, with no network at all.

use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use serde::{Deserialize, Serialize};
use wasmtime_wasi_http::{Error as HttpError, RequestOptions, WasiBody, WasiHttpHooks};

use crate::recording::{Exchange, Recording, RecordingFull, kept_response_headers, redacted_url};

/// What a tool may do on the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NetworkMode {
    /// Every request is a deterministic error that names its host.
    #[default]
    Denied,
    /// Requests to allowed hosts go out as they are.
    Live,
    /// Requests to allowed hosts are recorded on first use and replayed after.
    Pinned,
}

/// A tool's network: its mode, the `host:port`s it may reach, the headers it names
/// secret, and how big a body a pinned network keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkPolicy {
    /// Denied, live or pinned.
    pub mode: NetworkMode,
    /// `host:port` pairs a request may go to.
    pub allow: Vec<String>,
    /// Headers whose value is a credential, besides [`crate::CREDENTIAL_HEADERS`]: never
    /// written, keyed by digest.
    pub secret_headers: Vec<String>,
    /// The largest body, request or response, a pinned network keeps: past it the
    /// exchange is the call's error, read no further.
    pub max_body_bytes: u64,
}

/// [`NetworkPolicy::max_body_bytes`] unless the catalog says otherwise: 8 MiB.
pub const DEFAULT_MAX_BODY_BYTES: u64 = 8 << 20;

impl Default for NetworkPolicy {
    fn default() -> Self {
        NetworkPolicy {
            mode: NetworkMode::Denied,
            allow: Vec::new(),
            secret_headers: Vec::new(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
        }
    }
}

/// The hook one call's store hands wasi:http.
pub(crate) struct Hooks {
    pub(crate) policy: Arc<NetworkPolicy>,
    pub(crate) recording: Arc<Recording>,
}

type Done = Box<dyn Future<Output = Result<(), HttpError>> + Send>;

type Sent = Box<dyn Future<Output = Result<(http::Response<WasiBody>, Done), HttpError>> + Send>;

fn refused(message: String) -> Sent {
    Box::new(async move { Err(HttpError::InternalError(Some(message))) })
}

fn body(bytes: Bytes) -> WasiBody {
    Full::new(bytes)
        .map_err(|e: std::convert::Infallible| match e {})
        .boxed_unsync()
}

fn done() -> Done {
    Box::new(async { Ok(()) })
}

impl WasiHttpHooks for Hooks {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        fut: Done,
    ) -> Sent {
        drop(fut);
        let uri = request.uri().clone();
        // Credentials in the URL stay out of every message, as out of the recording.
        let what = format!("{} {}", request.method(), redacted_url(&uri));
        let https = uri.scheme() == Some(&http::uri::Scheme::HTTPS);
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        let target = format!("{}:{port}", uri.host().unwrap_or(""));
        match self.policy.mode {
            NetworkMode::Denied => {
                return refused(format!(
                    "network denied: {what}: the tool's network mode is `denied` (the \
                     default), so {target} cannot be reached"
                ));
            }
            _ if !self
                .policy
                .allow
                .iter()
                .any(|a| a.eq_ignore_ascii_case(&target)) =>
            {
                return refused(format!(
                    "network denied: {what}: {target} is not in the tool's network.allow"
                ));
            }
            NetworkMode::Live => {
                return Box::new(async move {
                    let (res, io) =
                        wasmtime_wasi_http::default_send_request(request, options).await?;
                    Ok((res.map(BodyExt::boxed_unsync), Box::new(io) as _))
                });
            }
            NetworkMode::Pinned => {}
        }
        pinned(
            request,
            options,
            self.policy.clone(),
            self.recording.clone(),
            what,
        )
    }
}

fn internal(message: String) -> HttpError {
    HttpError::InternalError(Some(message))
}

/// `body` whole, or an error naming `network.max_body_bytes` once it is past `max`: no
/// more of it is read.
async fn bounded_body(
    mut body: WasiBody,
    max: u64,
    what: &str,
    whose: &str,
) -> Result<Bytes, HttpError> {
    let mut bytes = Vec::new();
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame?.into_data() else {
            continue;
        };
        if (bytes.len() + data.len()) as u64 > max {
            return Err(internal(format!(
                "network: {what}: the {whose} body is longer than network.max_body_bytes \
                 ({max} bytes), the most a pinned network records"
            )));
        }
        bytes.extend_from_slice(&data);
    }
    Ok(Bytes::from(bytes))
}

/// A request under a pinned network: answered from the recording, or (on its first use
/// in an epoch that is not a replay) sent, recorded, then answered from the recording.
fn pinned(
    request: http::Request<WasiBody>,
    options: Option<RequestOptions>,
    policy: Arc<NetworkPolicy>,
    recording: Arc<Recording>,
    what: String,
) -> Sent {
    Box::new(async move {
        let (parts, request_body) = request.into_parts();
        let max = policy.max_body_bytes;
        let request_body = bounded_body(request_body, max, &what, "request").await?;
        let asked = Exchange::request(&parts, &request_body, &policy.secret_headers);
        let recorded = match recording.get(&asked) {
            Some(e) => e,
            None if recording.replay_only => {
                let under = if recording.under_other_credentials(&asked) {
                    " under these credentials"
                } else {
                    ""
                };
                return Err(internal(format!(
                    "network: {what} is not recorded{under} in this epoch (it was replayed \
                     from its manifest, with no network)"
                )));
            }
            None if let Some(full) = recording.full() => return Err(full_error(&what, full)),
            None => {
                let request = http::Request::from_parts(parts, body(request_body));
                let (res, io) = wasmtime_wasi_http::default_send_request(request, options).await?;
                // The connection makes progress only while polled.
                let connection = wasmtime_wasi::runtime::spawn(async move {
                    let _ = io.await;
                });
                let (head, res_body) = res.into_parts();
                let too_long = (head.headers.get(http::header::CONTENT_LENGTH))
                    .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
                    .is_some_and(|n| n > max);
                let bytes = if too_long {
                    Err(internal(format!(
                        "network: {what}: the response body is longer than \
                         network.max_body_bytes ({max} bytes), the most a pinned network \
                         records"
                    )))
                } else {
                    bounded_body(res_body.boxed_unsync(), max, &what, "response").await
                };
                drop(connection);
                recording
                    .first(Exchange {
                        status: head.status.as_u16(),
                        response_headers: kept_response_headers(
                            &head.headers,
                            &policy.secret_headers,
                        ),
                        response_body: B64.encode(&bytes?),
                        ..asked
                    })
                    .map_err(|full| full_error(&what, full))?
            }
        };
        answer(&recorded)
    })
}

/// A first request the recording has no room for: the call's error, never sent (or,
/// when the answer itself would overflow it, never kept).
fn full_error(what: &str, full: RecordingFull) -> HttpError {
    internal(format!(
        "network: {what}: this epoch's recording is full (its bound is {} bytes); a \
         fresh epoch records again",
        full.bound
    ))
}

/// The recorded answer as a response.
fn answer(recorded: &Exchange) -> Result<(http::Response<WasiBody>, Done), HttpError> {
    let mut response = http::Response::builder().status(recorded.status);
    for (k, v) in &recorded.response_headers {
        let value = v
            .bytes()
            .map_err(|e| internal(format!("a recorded header is not base64: {e}")))?;
        response = response.header(k, value);
    }
    let bytes = (B64.decode(&recorded.response_body))
        .map_err(|e| internal(format!("a recorded body is not base64: {e}")))?;
    let response = response
        .body(body(Bytes::from(bytes)))
        .map_err(|e| internal(e.to_string()))?;
    Ok((response, done()))
}
