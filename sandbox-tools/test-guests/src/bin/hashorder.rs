//! Lists the keys of its arguments in a `HashSet`'s iteration order, declared
//! deterministic: std seeds its hasher from WASI randomness, so the order is stable
//! within a pinned epoch and changes with the epoch's seed. With one key it looks
//! honest; with two or more the probe's second epoch shows it.

use std::collections::HashSet;
use std::io::Read;

fn main() {
    let mut input = String::new();
    std::io::stdin()
        .read_to_string(&mut input)
        .expect("read stdin");
    // Keys of a flat JSON object, without a JSON library: "k":... pairs.
    let keys: HashSet<&str> = input
        .split('"')
        .enumerate()
        .filter(|(i, _)| i % 2 == 1)
        .map(|(_, k)| k)
        .collect();
    let listed: Vec<String> = keys.iter().map(|k| format!("\"{k}\"")).collect();
    println!("{{\"keys\":[{}]}}", listed.join(","));
}
