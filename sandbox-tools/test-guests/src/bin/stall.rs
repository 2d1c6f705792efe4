//! Burns wall time on the host side while spending almost no fuel (`random_get` into one
//! reused buffer, in a loop), so only the wall-time net can end it: the one way to a
//! `timeout` that fuel does not pre-empt, however fast the host.

fn main() {
    let mut buf = vec![0u8; 64 << 10];
    loop {
        test_guests::random_fill(&mut buf);
        std::hint::black_box(&mut buf);
    }
}
