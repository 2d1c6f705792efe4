//! A price open on weekdays from 09:00 to 17:00 UTC, another price otherwise, declared
//! deterministic: honest at midnight and on a Saturday afternoon, wrong on a Tuesday
//! morning. A probe whose instants miss a weekday's working hours calls it verified.

use std::time::{SystemTime, UNIX_EPOCH};

fn main() {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("a clock after 1970")
        .as_secs();
    let hour = (now % 86_400) / 3_600;
    // 1970-01-01 was a Thursday: day 0 is weekday 3 counted from Monday = 0.
    let weekday = (now / 86_400 + 3) % 7;
    let open = weekday < 5 && (9..17).contains(&hour);
    let price = if open { 100 } else { 150 };
    println!(
        "{{\"price_cents\":{price},\"desk\":\"{}\"}}",
        if open { "open" } else { "closed" }
    );
}
