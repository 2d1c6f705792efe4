//! Opens every absolute path named in its input (`{"path":"/world/x"}`, or paths
//! separated by spaces) and prints, per path, what it read or the errno of the refusal.
//! Exits 0 when every open worked and 3 otherwise, so a refused open is still the
//! guest's own ending. With `slow` in its input it first burns a fixed amount of fuel
//! (about 20 ms), so a batch of its calls spans a while.

use std::io::Read;

fn main() {
    let mut input = String::new();
    let _ = std::io::stdin().read_to_string(&mut input);
    if input.contains("slow") {
        let mut x: u64 = 1;
        for _ in 0..10_000_000u32 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
    let paths: Vec<&str> = input
        .split(|c: char| c == '"' || c.is_whitespace())
        .filter(|t| t.starts_with('/'))
        .collect();
    let mut failed = false;
    for p in paths {
        match std::fs::read(p) {
            Ok(bytes) => println!("{p}: ok {}", String::from_utf8_lossy(&bytes).trim()),
            Err(e) => {
                failed = true;
                println!("{p}: errno {} ({e})", e.raw_os_error().unwrap_or(-1));
            }
        }
    }
    std::process::exit(if failed { 3 } else { 0 });
}
