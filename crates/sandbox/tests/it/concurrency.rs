//! One sandbox, many threads: every call gets its own store, and the concurrency bound
//! keeps the pooling allocator from running out of slots.

use plangate_sandbox::{Limits, Outcome, SandboxConfig};

use crate::support::sandbox_with;

#[test]
fn many_threads_share_one_sandbox_with_more_callers_than_slots() {
    let (sb, tools) = sandbox_with(&["echo", "exit7"]);
    let slots = SandboxConfig::default().max_concurrent_calls as usize;
    let threads = slots + 4;
    std::thread::scope(|s| {
        for t in 0..threads {
            let (sb, tools) = (&sb, &tools);
            s.spawn(move || {
                for i in 0..50 {
                    let input = format!("{{\"thread\":{t},\"i\":{i}}}");
                    let r = sb.call(&tools[0], input.as_bytes(), &Limits::default());
                    assert_eq!(r.outcome, Outcome::Exit { code: 0 });
                    assert_eq!(r.stdout, input.as_bytes());
                    let r = sb.call(&tools[1], b"", &Limits::default());
                    assert_eq!(r.exit_code, Some(7));
                }
            });
        }
    });
}
