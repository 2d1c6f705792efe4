//! Calls `poll_oneoff` claiming far more subscriptions than it passes (u32::MAX, then
//! just past the sandbox's bound), then an honest one-subscription sleep, and prints the
//! errno of each. A host that sized a buffer from the claim before checking it would
//! try to allocate hundreds of GiB and abort the whole process.

use test_guests::{clock_subscription, poll_claiming};

fn main() {
    let one = clock_subscription(7, 1_000);
    for claim in [u32::MAX, 4097, 1] {
        let (errno, events) = poll_claiming(&one, claim);
        println!("poll nsubs={claim}: errno {errno} events {events}");
    }
}
