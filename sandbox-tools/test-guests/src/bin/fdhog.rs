//! Opens one file over and over, keeping every handle, until an open is refused (or
//! 100,000 are open), and prints how many it got and the refusal's errno. With `hold`
//! anywhere in its input it then keeps them all open and burns wall time until the
//! call's net ends it, so other calls can run while the host's fds are held.

use std::io::Read;

fn main() {
    let mut input = String::new();
    let _ = std::io::stdin().read_to_string(&mut input);
    let mut files = Vec::new();
    let refused = loop {
        if files.len() == 100_000 {
            break "none".to_string();
        }
        match std::fs::File::open("/world/data.txt") {
            Ok(f) => files.push(f),
            Err(e) => break format!("{} ({e})", e.raw_os_error().unwrap_or(-1)),
        }
    };
    println!("opened {} then errno {refused}", files.len());
    if input.contains("hold") {
        let mut buf = vec![0u8; 64 << 10];
        loop {
            test_guests::random_fill(&mut buf);
            std::hint::black_box(&mut buf);
        }
    }
}
