//! Exits 0 with stdout that is not UTF-8 (a lone continuation byte, an overlong NUL, a
//! surrogate half), partly inside a JSON string, so every writer of results and evidence
//! meets bytes that no text type can hold.

use std::io::Write;

fn main() {
    let mut out = std::io::stdout().lock();
    out.write_all(b"{\"name\":\"\x80\xc0\x80\xed\xa0\x80\"}\xff\xfe")
        .expect("write stdout");
}
