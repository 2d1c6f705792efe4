//! A price that depends on the hour of day (a surcharge from noon, UTC), declared
//! deterministic: honest within a day's morning, secretly wrong across the day. A probe
//! whose epochs all fall near midnight calls it verified.

use std::time::{SystemTime, UNIX_EPOCH};

fn main() {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("a clock after 1970")
        .as_secs();
    let hour = (now % 86_400) / 3_600;
    let price = if hour < 12 { 100 } else { 120 };
    println!("{{\"price_cents\":{price}}}");
}
