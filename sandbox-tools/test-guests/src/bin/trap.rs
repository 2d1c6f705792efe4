//! Traps: `unreachable` by default, a Rust panic when stdin says "panic".

use std::io::Read;

fn main() {
    let mut input = String::new();
    let _ = std::io::stdin().read_to_string(&mut input);
    if input.contains("panic") {
        panic!("the trap guest panics on request");
    }
    std::process::abort();
}
