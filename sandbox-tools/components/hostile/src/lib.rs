//! A hostile component: each export attacks the sandbox where fuel and linear memory do
//! not reach, on the host's side of WASI 0.2. `stuck-body` blocks in a host write that
//! nothing will ever drain, `header-maps` makes the host hold header bytes, `draws`
//! shows what the pinned random stream gives a `u64` draw, and `request` sends the
//! headers a pinned network must not record or confuse, and reads a few bytes of an
//! answer the host must not hold whole.

wit_bindgen::generate!({ world: "hostile", path: "wit" });

use exports::plangate::hostile::attacks::Guest;
use wasi::http::outgoing_handler;
use wasi::http::types::{Fields, OutgoingBody, OutgoingRequest, Scheme};
use wasi::io::streams::StreamError;

struct Hostile;

impl Guest for Hostile {
    fn stuck_body(chunks: u32) -> u32 {
        let request = OutgoingRequest::new(Fields::new());
        let body = request.body().expect("the body, once");
        let stream = body.write().expect("the body's stream, once");
        let chunk = [b'x'; 4096];
        let mut written = 0;
        for _ in 0..chunks {
            // Nobody reads the body of a request that is never sent: once its buffer
            // is full, this waits on the host for good.
            if stream.blocking_write_and_flush(&chunk).is_err() {
                break;
            }
            written += 1;
        }
        drop(stream);
        let _ = OutgoingBody::finish(body, None);
        written
    }

    fn header_maps(maps: u32, bytes: u32) -> u32 {
        let value = vec![b'v'; 1000];
        let per_map = (bytes as usize).div_ceil(1000).max(1);
        let mut kept = Vec::with_capacity(maps as usize);
        for _ in 0..maps {
            let fields = Fields::new();
            for i in 0..per_map {
                if fields.append(&format!("x-h{i}"), &value).is_err() {
                    break;
                }
            }
            kept.push(fields);
        }
        kept.len() as u32
    }

    fn draws(n: u32) -> (Vec<u64>, Vec<u64>) {
        let secure = (0..n)
            .map(|_| wasi::random::random::get_random_u64())
            .collect();
        let insecure = (0..n)
            .map(|_| wasi::random::insecure::get_insecure_random_u64())
            .collect();
        (secure, insecure)
    }

    fn request(
        url: String,
        headers: Vec<(String, Vec<u8>)>,
        read: u64,
    ) -> Result<(u16, String), String> {
        let rest = (url.strip_prefix("http://")).ok_or_else(|| format!("{url}: not http://"))?;
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let fields = Fields::new();
        for (name, value) in &headers {
            fields
                .append(name, value)
                .map_err(|e| format!("header {name}: {e:?}"))?;
        }
        let request = OutgoingRequest::new(fields);
        request
            .set_scheme(Some(&Scheme::Http))
            .map_err(|()| "bad scheme")?;
        request
            .set_authority(Some(authority))
            .map_err(|()| format!("bad authority {authority}"))?;
        let path = if path.is_empty() { "/" } else { path };
        request
            .set_path_with_query(Some(path))
            .map_err(|()| format!("bad path {path}"))?;
        let pending = outgoing_handler::handle(request, None).map_err(|e| format!("{url}: {e}"))?;
        pending.subscribe().block();
        let response = (pending.get())
            .ok_or("no response")?
            .map_err(|()| "response taken twice")?
            .map_err(|e| format!("{url}: {e}"))?;
        let status = response.status();
        let body = response.consume().map_err(|()| "no body")?;
        let stream = body.stream().map_err(|()| "no body stream")?;
        let mut bytes = Vec::new();
        while (bytes.len() as u64) < read {
            match stream.blocking_read(read - bytes.len() as u64) {
                Ok(chunk) => bytes.extend_from_slice(&chunk),
                Err(StreamError::Closed) => break,
                Err(StreamError::LastOperationFailed(e)) => {
                    return Err(format!("{url}: {}", e.to_debug_string()));
                }
            }
        }
        Ok((status, String::from_utf8_lossy(&bytes).into_owned()))
    }
}

export!(Hostile);
