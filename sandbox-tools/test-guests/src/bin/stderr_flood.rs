//! Floods stderr (200 MB) and writes nothing to stdout: the stderr cap must end it as
//! `output_limit`, just as stdout's does, so a chatty tool cannot fill the host's memory.

use std::io::Write;

fn main() {
    let chunk = vec![b'e'; 64 << 10];
    let mut err = std::io::stderr().lock();
    for _ in 0..(200_000_000 / chunk.len() + 1) {
        err.write_all(&chunk).expect("write stderr");
    }
}
