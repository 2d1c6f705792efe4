//! An HTTP GET tool over wasi:http, as a tool author would write it: the network is the
//! one input the epoch pins by recording (`"network": {"mode": "pinned"}`), and the
//! tests point it at a server on loopback.

wit_bindgen::generate!({ world: "fetch", path: "wit" });

use wasi::http::outgoing_handler;
use wasi::http::types::{Fields, Method, OutgoingRequest, Scheme};
use wasi::io::streams::StreamError;

struct Fetch;

impl Guest for Fetch {
    fn fetch(url: String) -> Result<String, String> {
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| format!("{url}: only http:// URLs are fetched"))?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let request = OutgoingRequest::new(Fields::new());
        request
            .set_method(&Method::Get)
            .map_err(|()| "bad method")?;
        request
            .set_scheme(Some(&Scheme::Http))
            .map_err(|()| "bad scheme")?;
        request
            .set_authority(Some(authority))
            .map_err(|()| format!("bad authority {authority}"))?;
        request
            .set_path_with_query(Some(path))
            .map_err(|()| format!("bad path {path}"))?;
        let pending = outgoing_handler::handle(request, None).map_err(|e| format!("{url}: {e}"))?;
        pending.subscribe().block();
        let response = pending
            .get()
            .ok_or("no response")?
            .map_err(|()| "response taken twice")?
            .map_err(|e| format!("{url}: {e}"))?;
        let status = response.status();
        let body = response.consume().map_err(|()| "no body")?;
        let stream = body.stream().map_err(|()| "no body stream")?;
        let mut bytes = Vec::new();
        loop {
            match stream.blocking_read(64 << 10) {
                Ok(chunk) => bytes.extend_from_slice(&chunk),
                Err(StreamError::Closed) => break,
                Err(StreamError::LastOperationFailed(e)) => {
                    return Err(format!("{url}: {}", e.to_debug_string()));
                }
            }
        }
        let text = String::from_utf8_lossy(&bytes).into_owned();
        if (200..300).contains(&status) {
            Ok(text)
        } else {
            Err(format!("{url}: HTTP {status}: {text}"))
        }
    }
}

export!(Fetch);
