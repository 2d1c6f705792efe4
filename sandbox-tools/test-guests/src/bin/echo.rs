//! The JSON-echo tool: stdin to stdout, byte for byte. The smallest real tool call, used
//! to measure the per-call cost of the sandbox.

use std::io::{Read, Write};

fn main() {
    let mut input = Vec::new();
    std::io::stdin()
        .read_to_end(&mut input)
        .expect("read stdin");
    std::io::stdout().write_all(&input).expect("write stdout");
}
