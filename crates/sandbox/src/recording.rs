//! What a pinned network keeps (docs/design.md, "Network"): each request and the
//! answer it got, keyed by the request's bytes and by a digest of its credentials, never
//! by the credentials themselves, which no recording holds; the seal (`network_sha256`)
//! a manifest carries over its recording; and the checks a recording passes when a
//! manifest or a journal is loaded, so a bad one is refused naming its field.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::canonical::{hex, to_canonical_string};

/// Request headers whose value is a credential. Their values are never written to a
/// manifest or a journal; they take part in a recording's key only through
/// [`Exchange::credential_sha256`], so a request under other credentials (or none) never
/// gets an answer recorded for these. A tool's `network.secret_headers` adds its own.
pub const CREDENTIAL_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "cookie",
    "x-api-key",
    "api-key",
    "x-auth-token",
    "x-access-token",
    "x-goog-api-key",
    "x-amz-security-token",
    "private-token",
];

/// Query parameters (compared without case) whose value is a credential: written as
/// `REDACTED`, keyed like [`CREDENTIAL_HEADERS`].
pub const CREDENTIAL_PARAMS: &[&str] = &[
    "api_key",
    "apikey",
    "api-key",
    "key",
    "token",
    "access_token",
    "auth",
    "client_secret",
    "password",
    "secret",
    "signature",
    "sig",
    "x-amz-credential",
    "x-amz-signature",
    "x-amz-security-token",
];

/// What a credential's value is written as, in a URL.
pub const REDACTED: &str = "REDACTED";

/// Request headers the transport sets for itself: neither kept nor keyed.
const TRANSPORT: &[&str] = &["host", "content-length", "connection", "transfer-encoding"];

/// A header value's bytes, written as text when they are UTF-8 and as
/// `{"base64": ...}` when not, so that distinct bytes stay distinct.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(untagged)]
pub enum HeaderBytes {
    /// UTF-8 bytes, as text.
    Text(String),
    /// Other bytes.
    Bytes {
        /// The bytes, base64.
        base64: String,
    },
}

impl HeaderBytes {
    /// The value for `bytes`.
    pub fn of(bytes: &[u8]) -> HeaderBytes {
        match std::str::from_utf8(bytes) {
            Ok(s) => HeaderBytes::Text(s.to_owned()),
            Err(_) => HeaderBytes::Bytes {
                base64: B64.encode(bytes),
            },
        }
    }

    /// The bytes, or why there are none.
    pub fn bytes(&self) -> Result<Vec<u8>, String> {
        match self {
            HeaderBytes::Text(s) => Ok(s.as_bytes().to_vec()),
            HeaderBytes::Bytes { base64 } => B64.decode(base64).map_err(|e| e.to_string()),
        }
    }
}

/// One request and the answer it got, as a manifest and a journal keep it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Exchange {
    /// `GET`, `POST`, ...
    pub method: String,
    /// The whole URL, each credential query value (and any user info) `REDACTED`.
    pub url: String,
    /// The request headers that tell requests apart, sorted; credentials and transport
    /// headers left out.
    pub request_headers: Vec<(String, HeaderBytes)>,
    /// SHA-256 (hex) over the request's credentials (headers, query values, user
    /// info); absent when it had none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential_sha256: Option<String>,
    /// SHA-256 (hex) of the request body.
    pub request_body_sha256: String,
    /// The response status.
    pub status: u16,
    /// The response headers, in order; `Set-Cookie` and credentials left out.
    pub response_headers: Vec<(String, HeaderBytes)>,
    /// The response body, base64.
    pub response_body: String,
}

/// Appends `part` with its length, so no two sequences of parts give one key.
fn push(key: &mut Vec<u8>, part: &[u8]) {
    key.extend_from_slice(&(part.len() as u64).to_le_bytes());
    key.extend_from_slice(part);
}

impl Exchange {
    /// What identifies the request: method, URL, header bytes, credential digest, body.
    /// Values that do not decode key as their written form; a loaded recording is
    /// checked before it is keyed.
    pub(crate) fn key(&self) -> Vec<u8> {
        let mut key = self.key_without_credentials();
        push(
            &mut key,
            self.credential_sha256.as_deref().unwrap_or("").as_bytes(),
        );
        key
    }

    /// The key with the credentials left out: what tells "not recorded" from "not
    /// recorded under these credentials".
    pub(crate) fn key_without_credentials(&self) -> Vec<u8> {
        let mut key = Vec::new();
        push(&mut key, self.method.as_bytes());
        push(&mut key, self.url.as_bytes());
        for (name, value) in &self.request_headers {
            push(&mut key, name.as_bytes());
            match value.bytes() {
                Ok(b) => push(&mut key, &b),
                Err(_) => push(&mut key, format!("{value:?}").as_bytes()),
            }
        }
        push(&mut key, self.request_body_sha256.as_bytes());
        key
    }
}

/// Whether `name` (lower-case) names a credential header, for this tool.
fn credential_header(name: &str, secret: &[String]) -> bool {
    CREDENTIAL_HEADERS.contains(&name) || secret.iter().any(|s| s.eq_ignore_ascii_case(name))
}

impl Exchange {
    /// The request `parts` with `body`, its credentials digested and left out, and no
    /// answer yet: what a pinned network keys it by.
    pub(crate) fn request(
        parts: &http::request::Parts,
        body: &[u8],
        secret: &[String],
    ) -> Exchange {
        let mut credentials: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        let mut request_headers = Vec::new();
        for (name, value) in &parts.headers {
            let name = name.as_str();
            if TRANSPORT.contains(&name) {
                continue;
            }
            if credential_header(name, secret) {
                credentials.push((name.as_bytes().to_vec(), value.as_bytes().to_vec()));
            } else {
                request_headers.push((name.to_owned(), HeaderBytes::of(value.as_bytes())));
            }
        }
        request_headers.sort();
        let url = redact_url(&parts.uri, &mut credentials);
        credentials.sort();
        let credential_sha256 = (!credentials.is_empty()).then(|| {
            let mut h = Sha256::new();
            h.update(b"plangate credentials\0");
            for (name, value) in &credentials {
                let mut part = Vec::new();
                push(&mut part, name);
                push(&mut part, value);
                h.update(part);
            }
            hex(&h.finalize())
        });
        Exchange {
            method: parts.method.to_string(),
            url,
            request_headers,
            credential_sha256,
            request_body_sha256: hex(&Sha256::digest(body)),
            status: 0,
            response_headers: Vec::new(),
            response_body: String::new(),
        }
    }
}

/// `uri` with every credential query value and any user info replaced by
/// [`REDACTED`]; what it replaced goes to `credentials`.
fn redact_url(uri: &http::Uri, credentials: &mut Vec<(Vec<u8>, Vec<u8>)>) -> String {
    let mut out = String::new();
    if let Some(scheme) = uri.scheme_str() {
        out.push_str(scheme);
        out.push_str("://");
    }
    if let Some(authority) = uri.authority() {
        match authority.as_str().rsplit_once('@') {
            Some((info, host)) => {
                credentials.push((b"@userinfo".to_vec(), info.as_bytes().to_vec()));
                out.push_str(REDACTED);
                out.push('@');
                out.push_str(host);
            }
            None => out.push_str(authority.as_str()),
        }
    }
    out.push_str(uri.path());
    if let Some(query) = uri.query() {
        out.push('?');
        let pairs: Vec<String> = (query.split('&'))
            .map(|pair| match pair.split_once('=') {
                Some((name, value))
                    if CREDENTIAL_PARAMS
                        .iter()
                        .any(|c| c.eq_ignore_ascii_case(name)) =>
                {
                    let mut tag = b"?".to_vec();
                    tag.extend_from_slice(name.to_ascii_lowercase().as_bytes());
                    credentials.push((tag, value.as_bytes().to_vec()));
                    format!("{name}={REDACTED}")
                }
                _ => pair.to_owned(),
            })
            .collect();
        out.push_str(&pairs.join("&"));
    }
    out
}

/// `uri` as messages write it: its credentials [`REDACTED`].
pub(crate) fn redacted_url(uri: &http::Uri) -> String {
    redact_url(uri, &mut Vec::new())
}

/// The response headers a recording keeps: `Set-Cookie` and credentials left out.
pub(crate) fn kept_response_headers(
    headers: &http::HeaderMap,
    secret: &[String],
) -> Vec<(String, HeaderBytes)> {
    (headers.iter())
        .filter(|(k, _)| k.as_str() != "set-cookie" && !credential_header(k.as_str(), secret))
        .map(|(k, v)| (k.as_str().to_owned(), HeaderBytes::of(v.as_bytes())))
        .collect()
}

/// The seal a manifest carries over its recording: SHA-256 (hex) of the recording's
/// canonical JSON.
pub fn network_sha256(exchanges: &[Exchange]) -> String {
    let value = serde_json::to_value(exchanges).expect("a recording always serializes");
    hex(&Sha256::digest(to_canonical_string(&value).as_bytes()))
}

fn is_hex64(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn check_headers(headers: &[(String, HeaderBytes)], field: &str) -> Result<(), String> {
    for (j, (name, value)) in headers.iter().enumerate() {
        if http::HeaderName::from_bytes(name.as_bytes()).is_err() {
            return Err(format!("{field}[{j}]: `{name}` is not a header name"));
        }
        let bytes = value
            .bytes()
            .map_err(|e| format!("{field}[{j}]: the value is not base64: {e}"))?;
        if http::HeaderValue::from_bytes(&bytes).is_err() {
            return Err(format!("{field}[{j}]: the value is not a header value"));
        }
    }
    Ok(())
}

/// Why `e` cannot be replayed, naming its field (`network[i].status`, ...), if so.
fn check_exchange(e: &Exchange, i: usize) -> Result<(), String> {
    let field = |f: &str| format!("network[{i}].{f}");
    if http::Method::from_bytes(e.method.as_bytes()).is_err() {
        return Err(format!(
            "{}: `{}` is not a method",
            field("method"),
            e.method
        ));
    }
    match e.url.parse::<http::Uri>() {
        Ok(u) if u.host().is_some() && matches!(u.scheme_str(), Some("http" | "https")) => {}
        _ => return Err(format!("{}: `{}` is not an http URL", field("url"), e.url)),
    }
    check_headers(&e.request_headers, &field("request_headers"))?;
    if let Some(c) = &e.credential_sha256
        && !is_hex64(c)
    {
        return Err(format!("{}: not 64 hex digits", field("credential_sha256")));
    }
    if !is_hex64(&e.request_body_sha256) {
        return Err(format!(
            "{}: not 64 hex digits",
            field("request_body_sha256")
        ));
    }
    if http::StatusCode::from_u16(e.status).is_err() {
        return Err(format!(
            "{}: {} is not an HTTP status (100 to 999)",
            field("status"),
            e.status
        ));
    }
    check_headers(&e.response_headers, &field("response_headers"))?;
    B64.decode(&e.response_body)
        .map(drop)
        .map_err(|err| format!("{}: not base64: {err}", field("response_body")))
}

/// Refuses a recording that cannot be replayed as it is, naming the field: a bad
/// exchange, a request recorded twice, or (with `seal`, the manifest's
/// `network_sha256`) one whose digest is not the seal's.
pub fn check_recording(exchanges: &[Exchange], seal: Option<&str>) -> Result<(), String> {
    let mut seen = BTreeMap::new();
    for (i, e) in exchanges.iter().enumerate() {
        check_exchange(e, i)?;
        if let Some(first) = seen.insert(e.key(), i) {
            return Err(format!(
                "network[{i}]: records the same request as network[{first}]"
            ));
        }
    }
    match seal {
        Some(seal) if seal != network_sha256(exchanges) => Err(format!(
            "network_sha256 does not match the network recording: it was edited after it \
             was written"
        )),
        _ => Ok(()),
    }
}

/// Where the exchanges an epoch records go as they are recorded (a run's journal), so
/// a run stopped part way resumes with them.
pub trait NetworkLog: Send + Sync {
    /// `exchange` was recorded, first of its key.
    fn recorded(&self, exchange: &Exchange);
}

/// The exchanges of one epoch, shared by every call in it.
#[derive(Default)]
pub(crate) struct Recording {
    exchanges: Mutex<BTreeMap<Vec<u8>, Exchange>>,
    /// Replayed from a manifest: a request not recorded is refused, never sent.
    pub(crate) replay_only: bool,
    log: OnceLock<Arc<dyn NetworkLog>>,
}

impl std::fmt::Debug for Recording {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recording")
            .field("replay_only", &self.replay_only)
            .finish_non_exhaustive()
    }
}

impl Recording {
    /// A recording to replay and nothing else.
    pub(crate) fn replay(exchanges: &[Exchange]) -> Recording {
        Recording {
            exchanges: Mutex::new(exchanges.iter().map(|e| (e.key(), e.clone())).collect()),
            replay_only: true,
            log: OnceLock::new(),
        }
    }

    /// Adds what an interrupted run recorded, to answer from as it did.
    pub(crate) fn resume(&self, exchanges: Vec<Exchange>) {
        let mut map = self.exchanges.lock().unwrap_or_else(|e| e.into_inner());
        for e in exchanges {
            map.entry(e.key()).or_insert(e);
        }
    }

    /// Sends every exchange recorded from now on to `log` (once).
    pub(crate) fn log_to(&self, log: Arc<dyn NetworkLog>) {
        let _ = self.log.set(log);
    }

    /// Every exchange so far, in key order: what a manifest written now keeps.
    pub(crate) fn exchanges(&self) -> Vec<Exchange> {
        let map = self.exchanges.lock().unwrap_or_else(|e| e.into_inner());
        map.values().cloned().collect()
    }

    pub(crate) fn get(&self, e: &Exchange) -> Option<Exchange> {
        let map = self.exchanges.lock().unwrap_or_else(|e| e.into_inner());
        map.get(&e.key()).cloned()
    }

    /// Whether the request is recorded under other credentials.
    pub(crate) fn under_other_credentials(&self, e: &Exchange) -> bool {
        let map = self.exchanges.lock().unwrap_or_else(|e| e.into_inner());
        let key = e.key_without_credentials();
        map.values().any(|r| r.key_without_credentials() == key)
    }

    /// Keeps `e` unless an identical request was recorded meanwhile (two calls racing
    /// to be first): either way, the one kept is the answer every call gets.
    pub(crate) fn first(&self, e: Exchange) -> Exchange {
        let mut map = self.exchanges.lock().unwrap_or_else(|e| e.into_inner());
        let key = e.key();
        if let Some(kept) = map.get(&key) {
            return kept.clone();
        }
        // Logged under the lock: the log holds exchanges in the order they were kept.
        if let Some(log) = self.log.get() {
            log.recorded(&e);
        }
        map.insert(key, e.clone());
        e
    }
}
