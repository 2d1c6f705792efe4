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

    /// The length of the value as written.
    fn written_len(&self) -> usize {
        match self {
            HeaderBytes::Text(s) => s.len(),
            HeaderBytes::Bytes { base64 } => base64.len(),
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

    /// What keeping the exchange under `key` costs, in bytes: the key, its response
    /// headers and its response body as written.
    pub(crate) fn kept_bytes(&self, key: &[u8]) -> u64 {
        let headers: usize = (self.response_headers.iter())
            .map(|(k, v)| k.len() + v.written_len())
            .sum();
        (key.len() + headers + self.response_body.len()) as u64
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
        Some(seal) if seal != network_sha256(exchanges) => Err(
            "network_sha256 does not match the network recording: it was edited after it \
             was written"
                .to_string(),
        ),
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
    exchanges: Mutex<Kept>,
    /// Replayed from a manifest: a request not recorded is refused, never sent.
    pub(crate) replay_only: bool,
    log: OnceLock<Arc<dyn NetworkLog>>,
    /// The most bytes ([`Exchange::kept_bytes`]) the recording keeps in all; none when
    /// unset, as in a batch, whose manifest keeps every exchange.
    bound: OnceLock<u64>,
}

/// The exchanges by key, and the bytes they hold.
#[derive(Default)]
struct Kept {
    map: BTreeMap<Vec<u8>, Exchange>,
    bytes: u64,
    /// An answer did not fit: no request not yet recorded is sent from then on.
    refused: bool,
}

impl Kept {
    fn keep(&mut self, key: Vec<u8>, e: Exchange) {
        self.bytes += e.kept_bytes(&key);
        self.map.insert(key, e);
    }
}

/// A recording at its bound: the exchange was not kept, so the call fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RecordingFull {
    /// The bound, in bytes.
    pub(crate) bound: u64,
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
        let mut kept = Kept::default();
        for e in exchanges {
            kept.keep(e.key(), e.clone());
        }
        Recording {
            exchanges: Mutex::new(kept),
            replay_only: true,
            ..Recording::default()
        }
    }

    /// Adds what an interrupted run recorded, to answer from as it did.
    pub(crate) fn resume(&self, exchanges: Vec<Exchange>) {
        let mut kept = self.lock();
        for e in exchanges {
            let key = e.key();
            if !kept.map.contains_key(&key) {
                kept.keep(key, e);
            }
        }
    }

    /// Keeps at most `bytes` from now on (once): a first request past it is refused.
    pub(crate) fn bound(&self, bytes: u64) {
        let _ = self.bound.set(bytes);
    }

    /// [`RecordingFull`] when the recording holds its bound, or an answer did not fit in
    /// it: a request not recorded is then refused before it is sent.
    pub(crate) fn full(&self) -> Option<RecordingFull> {
        let bound = *self.bound.get()?;
        let kept = self.lock();
        (kept.refused || kept.bytes >= bound).then_some(RecordingFull { bound })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.exchanges.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sends every exchange recorded from now on to `log` (once).
    pub(crate) fn log_to(&self, log: Arc<dyn NetworkLog>) {
        let _ = self.log.set(log);
    }

    /// Every exchange so far, in key order: what a manifest written now keeps.
    pub(crate) fn exchanges(&self) -> Vec<Exchange> {
        self.lock().map.values().cloned().collect()
    }

    pub(crate) fn get(&self, e: &Exchange) -> Option<Exchange> {
        self.lock().map.get(&e.key()).cloned()
    }

    /// Whether the request is recorded under other credentials.
    pub(crate) fn under_other_credentials(&self, e: &Exchange) -> bool {
        let key = e.key_without_credentials();
        (self.lock().map.values()).any(|r| r.key_without_credentials() == key)
    }

    /// Keeps `e` unless an identical request was recorded meanwhile (two calls racing
    /// to be first): either way, the one kept is the answer every call gets. [`RecordingFull`]
    /// when keeping `e` would take the recording past its bound.
    pub(crate) fn first(&self, e: Exchange) -> Result<Exchange, RecordingFull> {
        let mut kept = self.lock();
        let key = e.key();
        if let Some(k) = kept.map.get(&key) {
            return Ok(k.clone());
        }
        if let Some(&bound) = self.bound.get()
            && kept.bytes + e.kept_bytes(&key) > bound
        {
            kept.refused = true;
            return Err(RecordingFull { bound });
        }
        // Logged under the lock: the log holds exchanges in the order they were kept.
        if let Some(log) = self.log.get() {
            log.recorded(&e);
        }
        kept.keep(key, e.clone());
        Ok(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::epoch::{Epoch, EpochManifest};
    use proptest::prelude::*;

    fn parts(uri: &str, headers: &[(&str, &[u8])]) -> http::request::Parts {
        let mut b = http::Request::builder().uri(uri);
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        b.body(()).expect("a request").into_parts().0
    }

    fn asked(uri: &str, headers: &[(&str, &[u8])], secret: &[String]) -> Exchange {
        Exchange::request(&parts(uri, headers), b"", secret)
    }

    #[test]
    fn credentials_key_by_digest_and_are_never_kept() {
        let url = "http://api.test:80/v1/x?q=1&API_KEY=k-alice";
        let alice = asked(url, &[("authorization", b"Bearer alice")], &[]);
        let again = asked(url, &[("authorization", b"Bearer alice")], &[]);
        let bob = asked(url, &[("authorization", b"Bearer bob")], &[]);
        let nobody = asked(url, &[], &[]);
        let other_key = asked(
            &url.replace("k-alice", "k-bob"),
            &[("authorization", b"Bearer alice")],
            &[],
        );
        assert_eq!(alice.key(), again.key());
        for other in [&bob, &nobody, &other_key] {
            assert_ne!(alice.key(), other.key());
            assert_eq!(
                alice.key_without_credentials(),
                other.key_without_credentials()
            );
        }
        assert_eq!(alice.url, "http://api.test:80/v1/x?q=1&API_KEY=REDACTED");
        let written = serde_json::to_string(&alice).expect("serializes");
        assert!(!written.contains("alice"), "{written}");
        assert!(alice.request_headers.is_empty(), "{written}");
        // User info in the URL, and a tool's own secret header.
        let secret = vec!["x-team".to_owned()];
        let e = asked(
            "http://u:pw@api.test/",
            &[("x-team", b"T1"), ("accept", b"a")],
            &secret,
        );
        assert_eq!(e.url, "http://REDACTED@api.test/");
        assert_eq!(
            e.request_headers,
            vec![("accept".to_owned(), HeaderBytes::Text("a".into()))]
        );
        let e2 = asked(
            "http://u:pw@api.test/",
            &[("x-team", b"T2"), ("accept", b"a")],
            &secret,
        );
        assert_ne!(e.key(), e2.key());
    }

    #[test]
    fn a_bounded_recording_keeps_what_fits_and_then_sends_nothing_new() {
        let answered = |i: usize| Exchange {
            response_body: "QUJD".repeat(10),
            ..asked(&format!("http://api.test:80/item/{i}"), &[], &[])
        };
        let rec = Recording::default();
        let one = answered(0).kept_bytes(&answered(0).key());
        rec.bound(2 * one + one / 2);
        assert!(rec.first(answered(0)).is_ok());
        assert!(rec.first(answered(1)).is_ok());
        assert_eq!(
            rec.full(),
            None,
            "room is left, though not for a whole exchange"
        );
        let bound = 2 * one + one / 2;
        assert_eq!(rec.first(answered(2)), Err(RecordingFull { bound }));
        assert_eq!(
            rec.full(),
            Some(RecordingFull { bound }),
            "refused once, full"
        );
        assert_eq!(
            rec.first(answered(0)),
            Ok(answered(0)),
            "a kept one still answers"
        );
        assert_eq!(rec.exchanges().len(), 2);
        let unbounded = Recording::default();
        for i in 0..100 {
            assert!(unbounded.first(answered(i)).is_ok());
        }
        assert_eq!(unbounded.full(), None);
    }

    #[test]
    fn header_values_key_by_their_bytes() {
        let ff = asked("http://a.test/", &[("x-sig", b"\xff A")], &[]);
        let fe = asked("http://a.test/", &[("x-sig", b"\xfe A")], &[]);
        assert_ne!(ff.key(), fe.key());
        let json = serde_json::to_string(&ff).expect("serializes");
        let back: Exchange = serde_json::from_str(&json).expect("reads");
        assert_eq!(back.request_headers[0].1.bytes().expect("bytes"), b"\xff A");
        assert_eq!(back.key(), ff.key());
    }

    fn answered(mut e: Exchange) -> Exchange {
        e.status = 200;
        e.response_body = B64.encode(b"{}");
        e
    }

    /// A way to spoil one exchange, and what refusing it must say.
    type Spoil = (&'static str, fn(&mut Exchange));

    #[test]
    fn a_bad_recording_is_refused_naming_its_field() {
        let good = answered(asked("http://a.test/", &[], &[]));
        assert_eq!(check_recording(std::slice::from_ref(&good), None), Ok(()));
        let cases: [Spoil; 6] = [
            ("network[0].status: 0 is not", |e| e.status = 0),
            ("network[0].response_body: not base64", |e| {
                e.response_body = "not base64!".into()
            }),
            ("network[0].method", |e| e.method = "G T".into()),
            ("network[0].url", |e| e.url = "/relative".into()),
            ("network[0].request_body_sha256", |e| {
                e.request_body_sha256 = "e3b0".into()
            }),
            (
                "network[0].response_headers[0]: the value is not base64",
                |e| {
                    e.response_headers = vec![(
                        "x".into(),
                        HeaderBytes::Bytes {
                            base64: "!!".into(),
                        },
                    )]
                },
            ),
        ];
        for (want, edit) in cases {
            let mut e = good.clone();
            edit(&mut e);
            let why = check_recording(&[e], None).expect_err(want);
            assert!(why.starts_with(want), "{want}: {why}");
        }
        let twice = check_recording(&[good.clone(), good.clone()], None);
        assert_eq!(
            twice,
            Err("network[1]: records the same request as network[0]".into())
        );
        let seal = network_sha256(std::slice::from_ref(&good));
        assert_eq!(
            check_recording(std::slice::from_ref(&good), Some(&seal)),
            Ok(())
        );
        let mut edited = good.clone();
        edited.response_body = B64.encode(b"[]");
        let why = check_recording(&[edited], Some(&seal)).expect_err("edited");
        assert!(why.starts_with("network_sha256 does not match"), "{why}");
    }

    fn manifest(network: Vec<Exchange>) -> EpochManifest {
        EpochManifest {
            network_sha256: Some(network_sha256(&network)),
            network: Some(network),
            ..crate::epoch::tests::bare_manifest()
        }
    }

    /// A manifest's bytes as read from a file: parsed, then checked as a replay would.
    fn load(bytes: &[u8]) -> Option<EpochManifest> {
        let m: EpochManifest = serde_json::from_slice(bytes).ok()?;
        Epoch::from_manifest(m.clone(), &[], None).ok()?;
        Some(m)
    }

    fn header_value() -> impl Strategy<Value = Vec<u8>> {
        // What a header value may hold: visible ASCII, space, tab, and obs-text.
        let byte = prop_oneof![0x20u8..0x7f, Just(b'\t'), 0x80u8..=0xff];
        proptest::collection::vec(byte, 0..12)
    }

    fn headers() -> impl Strategy<Value = Vec<(String, HeaderBytes)>> {
        let name = "[a-z][a-z0-9-]{0,8}";
        proptest::collection::vec((name, header_value()), 0..4).prop_map(|hs| {
            let mut hs: Vec<(String, HeaderBytes)> = (hs.into_iter())
                .map(|(k, v)| (k, HeaderBytes::of(&v)))
                .collect();
            hs.sort();
            hs
        })
    }

    fn exchange() -> impl Strategy<Value = Exchange> {
        let method = proptest::sample::select(vec!["GET", "POST", "PUT", "DELETE"]);
        let url = (
            "[a-z]{1,8}",
            "[a-z0-9/]{0,12}",
            proptest::option::of("[a-z]=[a-z0-9]{0,4}"),
        )
            .prop_map(|(host, path, q)| {
                let q = q.map_or(String::new(), |q| format!("?{q}"));
                format!("http://{host}.test:8080/{path}{q}")
            });
        let digest = proptest::array::uniform32(any::<u8>()).prop_map(|d| hex(&d));
        (
            method,
            url,
            headers(),
            proptest::option::of(digest.clone()),
            digest,
            100u16..1000,
            headers(),
            proptest::collection::vec(any::<u8>(), 0..64),
        )
            .prop_map(|(m, url, rq, cred, body_sha, status, rs, body)| Exchange {
                method: m.into(),
                url,
                request_headers: rq,
                credential_sha256: cred,
                request_body_sha256: body_sha,
                status,
                response_headers: rs,
                response_body: B64.encode(body),
            })
    }

    fn recording() -> impl Strategy<Value = Vec<Exchange>> {
        proptest::collection::vec(exchange(), 1..5).prop_map(|es| {
            let mut seen = std::collections::BTreeSet::new();
            es.into_iter().filter(|e| seen.insert(e.key())).collect()
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn any_recording_round_trips(network in recording()) {
            let m = manifest(network);
            let text = serde_json::to_string_pretty(&m).expect("serializes");
            prop_assert_eq!(load(text.as_bytes()), Some(m.clone()));
            // Replayed, every exchange answers its own request.
            let replay = Recording::replay(m.network.as_deref().unwrap_or_default());
            for e in m.network.iter().flatten() {
                prop_assert_eq!(replay.get(e), Some(e.clone()));
            }
        }

        #[test]
        fn a_flipped_byte_in_the_recording_is_refused(
            network in recording(),
            at in any::<prop::sample::Index>(),
            mask in 1u8..=255,
        ) {
            let m = manifest(network);
            let text = serde_json::to_string_pretty(&m).expect("serializes");
            let start = text.find("\"network\"").expect("a network section");
            let mut bytes = text.into_bytes();
            let i = start + at.index(bytes.len() - start);
            bytes[i] ^= mask;
            // Refused, unless the flip changed no value (whitespace for whitespace).
            match load(&bytes) {
                None => {}
                Some(loaded) => prop_assert_eq!(loaded, m),
            }
        }

        #[test]
        fn loading_never_panics(
            bytes in proptest::collection::vec(any::<u8>(), 0..256),
            status in any::<u16>(),
            body in ".{0,12}",
            value in ".{0,12}",
        ) {
            let _ = load(&bytes);
            let e = Exchange {
                method: value.clone(),
                url: value.clone(),
                request_headers: vec![(value.clone(), HeaderBytes::Bytes { base64: body.clone() })],
                credential_sha256: Some(body.clone()),
                request_body_sha256: body.clone(),
                status,
                response_headers: vec![(body.clone(), HeaderBytes::Text(value))],
                response_body: body,
            };
            let m = manifest(vec![e]);
            let _ = load(serde_json::to_string(&m).expect("serializes").as_bytes());
        }
    }
}
