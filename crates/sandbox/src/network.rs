//! The network inside the epoch (docs/design.md, "Network"): every wasi:http request a
//! component makes passes [`Hooks::send_request`], which denies it (the default), sends
//! it as it is (`live`), or answers it from the epoch's recording (`pinned`): the first
//! use of a request in an epoch goes out and is recorded, every later identical request
//! is answered with the same bytes, and an epoch replayed from its manifest answers
//! only from the recording, with no network at all.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use wasmtime_wasi_http::{Error as HttpError, RequestOptions, WasiBody, WasiHttpHooks};

use crate::canonical::hex;

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

/// A tool's network: its mode and the `host:port`s it may reach.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NetworkPolicy {
    /// Denied, live or pinned.
    pub mode: NetworkMode,
    /// `host:port` pairs a request may go to.
    pub allow: Vec<String>,
}

/// Request headers that never reach a key or a manifest: credentials, and what the
/// transport sets for itself.
const LEFT_OUT: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "cookie",
    "host",
    "content-length",
    "connection",
];

/// One request and the answer it got, as the epoch's manifest keeps it. Credentials
/// (`Authorization`, cookies) are never written: not in the request's headers, not as
/// a response's `Set-Cookie`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Exchange {
    /// `GET`, `POST`, ...
    pub method: String,
    /// The whole URL.
    pub url: String,
    /// The request headers that tell requests apart, lower-cased and sorted.
    pub request_headers: Vec<(String, String)>,
    /// SHA-256 (hex) of the request body.
    pub request_body_sha256: String,
    /// The response status.
    pub status: u16,
    /// The response headers, in order, `Set-Cookie` left out.
    pub response_headers: Vec<(String, String)>,
    /// The response body, base64.
    pub response_body: String,
}

impl Exchange {
    /// What identifies the request: method, URL, the headers that matter, the body.
    fn key(&self) -> String {
        let headers: Vec<String> = (self.request_headers.iter())
            .map(|(k, v)| format!("{k}: {v}"))
            .collect();
        format!(
            "{} {}\n{}\n{}",
            self.method,
            self.url,
            headers.join("\n"),
            self.request_body_sha256
        )
    }
}

/// The exchanges of one epoch, shared by every call in it.
#[derive(Debug, Default)]
pub(crate) struct Recording {
    exchanges: Mutex<BTreeMap<String, Exchange>>,
    /// Replayed from a manifest: a request not recorded is refused, never sent.
    replay_only: bool,
}

impl Recording {
    /// A recording to replay and nothing else.
    pub(crate) fn replay(exchanges: &[Exchange]) -> Recording {
        Recording {
            exchanges: Mutex::new(exchanges.iter().map(|e| (e.key(), e.clone())).collect()),
            replay_only: true,
        }
    }

    /// Every exchange so far, in key order: what a manifest written now keeps.
    pub(crate) fn exchanges(&self) -> Vec<Exchange> {
        let map = self.exchanges.lock().unwrap_or_else(|e| e.into_inner());
        map.values().cloned().collect()
    }

    fn get(&self, key: &str) -> Option<Exchange> {
        let map = self.exchanges.lock().unwrap_or_else(|e| e.into_inner());
        map.get(key).cloned()
    }

    /// Keeps `e` unless an identical request was recorded meanwhile (two calls racing
    /// to be first): either way, the one kept is the answer every call gets.
    fn first(&self, e: Exchange) -> Exchange {
        let mut map = self.exchanges.lock().unwrap_or_else(|e| e.into_inner());
        map.entry(e.key()).or_insert(e).clone()
    }
}

/// The hook one call's store hands wasi:http.
pub(crate) struct Hooks {
    pub(crate) policy: Arc<NetworkPolicy>,
    pub(crate) recording: Arc<Recording>,
}

type Sent = Box<
    dyn Future<
            Output = Result<
                (
                    http::Response<WasiBody>,
                    Box<dyn Future<Output = Result<(), HttpError>> + Send>,
                ),
                HttpError,
            >,
        > + Send,
>;

fn refused(message: String) -> Sent {
    Box::new(async move { Err(HttpError::InternalError(Some(message))) })
}

fn body(bytes: Bytes) -> WasiBody {
    Full::new(bytes)
        .map_err(|e: std::convert::Infallible| match e {})
        .boxed_unsync()
}

fn done() -> Box<dyn Future<Output = Result<(), HttpError>> + Send> {
    Box::new(async { Ok(()) })
}

impl WasiHttpHooks for Hooks {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        fut: Box<dyn Future<Output = Result<(), HttpError>> + Send>,
    ) -> Sent {
        drop(fut);
        let uri = request.uri().clone();
        let what = format!("{} {uri}", request.method());
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
        pinned(request, options, self.recording.clone(), what)
    }
}

/// A request under a pinned network: answered from the recording, or (on its first use
/// in an epoch that is not a replay) sent, recorded, then answered from the recording.
fn pinned(
    request: http::Request<WasiBody>,
    options: Option<RequestOptions>,
    recording: Arc<Recording>,
    what: String,
) -> Sent {
    Box::new(async move {
        let (parts, request_body) = request.into_parts();
        let request_body = request_body.collect().await?.to_bytes();
        let mut request_headers: Vec<(String, String)> = (parts.headers.iter())
            .filter(|(k, _)| !LEFT_OUT.contains(&k.as_str()))
            .map(|(k, v)| {
                (
                    k.as_str().to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        request_headers.sort();
        let mut exchange = Exchange {
            method: parts.method.to_string(),
            url: parts.uri.to_string(),
            request_headers,
            request_body_sha256: hex(&Sha256::digest(&request_body)),
            status: 0,
            response_headers: Vec::new(),
            response_body: String::new(),
        };
        let recorded = match recording.get(&exchange.key()) {
            Some(e) => e,
            None if recording.replay_only => {
                return Err(HttpError::InternalError(Some(format!(
                    "network: {what} is not recorded in this epoch (it was replayed from its \
                         manifest, with no network)"
                ))));
            }
            None => {
                let request = http::Request::from_parts(parts, body(request_body));
                let (res, io) = wasmtime_wasi_http::default_send_request(request, options).await?;
                // The connection makes progress only while polled.
                let connection = wasmtime_wasi::runtime::spawn(async move {
                    let _ = io.await;
                });
                let (head, res_body) = res.into_parts();
                let bytes = res_body.collect().await?.to_bytes();
                drop(connection);
                exchange.status = head.status.as_u16();
                exchange.response_headers = (head.headers.iter())
                    .filter(|(k, _)| k.as_str() != "set-cookie")
                    .map(|(k, v)| {
                        (
                            k.as_str().to_string(),
                            String::from_utf8_lossy(v.as_bytes()).into_owned(),
                        )
                    })
                    .collect();
                exchange.response_body = B64.encode(&bytes);
                recording.first(exchange)
            }
        };
        let mut response = http::Response::builder().status(recorded.status);
        for (k, v) in &recorded.response_headers {
            response = response.header(k, v);
        }
        let bytes = B64.decode(&recorded.response_body).map_err(|e| {
            HttpError::InternalError(Some(format!("a recorded body is not base64: {e}")))
        })?;
        let response = response
            .body(body(Bytes::from(bytes)))
            .map_err(|e| HttpError::InternalError(Some(e.to_string())))?;
        Ok((response, done()))
    })
}
