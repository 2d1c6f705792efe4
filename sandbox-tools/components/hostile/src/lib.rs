//! A hostile component: each export attacks the sandbox where fuel and linear memory do
//! not reach, on the host's side of WASI 0.2. `stuck-body` blocks in a host write that
//! nothing will ever drain, `header-maps` makes the host hold header bytes, and `draws`
//! shows what the pinned random stream gives a `u64` draw.

wit_bindgen::generate!({ world: "hostile", path: "wit" });

use exports::plangate::hostile::attacks::Guest;
use wasi::http::types::{Fields, OutgoingBody, OutgoingRequest};

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
}

export!(Hostile);
