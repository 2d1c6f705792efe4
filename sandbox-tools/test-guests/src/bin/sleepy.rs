//! Sleeps 30 s, then says so: with a pinned clock the sleep is virtual and returns at once.

fn main() {
    let t0 = std::time::Instant::now();
    std::thread::sleep(std::time::Duration::from_secs(30));
    println!("slept {} ns", t0.elapsed().as_nanos());
}
