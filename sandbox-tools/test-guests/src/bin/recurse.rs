//! Recurses without bound: the wasm stack limit must end it.

fn down(n: u64, pad: [u64; 8]) -> u64 {
    let pad = std::hint::black_box(pad);
    // Never true; it keeps the function honest without letting the optimizer see an end.
    if n == u64::MAX {
        return 0;
    }
    std::hint::black_box(down(n + 1, pad)) + pad[(n % 8) as usize]
}

fn main() {
    println!("{}", down(0, [1; 8]));
}
