//! Allocates without bound: the memory limit must end it.
//!
//! Each chunk is reserved, not zeroed: growing linear memory is what the limit
//! watches, and writing every page would only make the call race its wall-time net
//! on a loaded machine, where it can time out beside other tests.

fn main() {
    let mut hoard: Vec<Vec<u8>> = Vec::new();
    loop {
        let mut chunk: Vec<u8> = Vec::with_capacity(16 << 20);
        // One byte per chunk keeps the allocation alive and observable.
        chunk.push(1);
        hoard.push(std::hint::black_box(chunk));
    }
}
