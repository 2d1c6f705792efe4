//! Writes 200 MB to stdout: the output cap must end it.

use std::io::Write;

fn main() {
    let chunk = vec![b'x'; 64 << 10];
    let mut out = std::io::stdout().lock();
    for _ in 0..(200_000_000 / chunk.len() + 1) {
        out.write_all(&chunk).expect("write stdout");
    }
}
