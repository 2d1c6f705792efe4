//! Burns wall time on the host side while spending almost no fuel (large `random_get`
//! calls in a loop), so only the wall-time net can end it: the one way to a `timeout`
//! that fuel does not pre-empt.

fn main() {
    loop {
        std::hint::black_box(test_guests::random_bytes(4 << 20));
    }
}
