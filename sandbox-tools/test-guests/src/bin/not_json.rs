//! Exits 0 with stdout that looks like JSON and is not: a duplicate key, then a cut-off
//! object. The tool ABI says a result is JSON; the harness must record these bytes as
//! they are rather than fail the run.

fn main() {
    print!("{{\"id\":1,\"id\":2}}\n{{\"unterminated\":");
}
