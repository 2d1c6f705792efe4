//! Allocates without bound: the memory limit must end it.

fn main() {
    let mut hoard: Vec<Vec<u8>> = Vec::new();
    loop {
        let mut chunk = vec![0u8; 16 << 20];
        // Touch the pages so nothing is optimized away.
        chunk[0] = 1;
        hoard.push(std::hint::black_box(chunk));
    }
}
