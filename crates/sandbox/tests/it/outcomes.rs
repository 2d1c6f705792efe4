//! Each guest that misbehaves in one way ends in its own outcome, quickly, and a
//! well-behaved one exits with its code and output.

use std::time::Duration;

use plangate_sandbox::{EpochMode, Limits, ModuleSpec, Outcome, TrapKind};

use crate::guests::guest;
use crate::support::sandbox_with;

/// Generous for a debug-built host on a loaded 2-core machine; each case below takes
/// milliseconds when nothing is wrong.
const QUICK: Duration = Duration::from_secs(5);

fn limits() -> Limits {
    Limits {
        fuel: 200_000_000,
        memory_mb: 64,
        wall_ms: 3_000,
        output_bytes: 1 << 20,
    }
}

#[test]
fn infinite_loop_runs_out_of_fuel_deterministically() {
    let (sb, tools) = sandbox_with(&["spin"]);
    let a = sb.call(&tools[0], b"", &limits());
    assert_eq!(a.outcome, Outcome::OutOfFuel);
    assert_eq!(a.exit_code, None);
    assert!(a.wall < QUICK, "took {:?}", a.wall);
    assert_eq!(a.fuel_used, limits().fuel);
    let b = sb.call(&tools[0], b"", &limits());
    assert_eq!(b.fuel_used, a.fuel_used);
}

#[test]
fn infinite_loop_with_ample_fuel_times_out() {
    let (sb, tools) = sandbox_with(&["spin"]);
    let l = Limits {
        fuel: u64::MAX / 2,
        wall_ms: 300,
        ..limits()
    };
    let r = sb.call(&tools[0], b"", &l);
    assert_eq!(r.outcome, Outcome::Timeout);
    assert!(r.wall >= Duration::from_millis(300), "took {:?}", r.wall);
    assert!(r.wall < QUICK, "took {:?}", r.wall);
}

#[test]
fn memory_bomb_hits_the_memory_limit() {
    let (sb, tools) = sandbox_with(&["membomb"]);
    let r = sb.call(&tools[0], b"", &limits());
    assert_eq!(r.outcome, Outcome::MemoryLimit);
    assert!(r.wall < QUICK, "took {:?}", r.wall);
}

#[test]
fn deep_recursion_is_a_stack_overflow_trap() {
    let (sb, tools) = sandbox_with(&["recurse"]);
    let r = sb.call(&tools[0], b"", &limits());
    assert_eq!(
        r.outcome,
        Outcome::Trap {
            kind: TrapKind::StackOverflow
        }
    );
    assert!(r.wall < QUICK, "took {:?}", r.wall);
}

#[test]
fn output_flood_hits_the_output_limit_and_is_cut_at_it() {
    let (sb, tools) = sandbox_with(&["spew"]);
    let r = sb.call(&tools[0], b"", &limits());
    assert_eq!(r.outcome, Outcome::OutputLimit);
    assert_eq!(r.stdout.len(), limits().output_bytes);
    assert!(r.stdout.iter().all(|&b| b == b'x'));
    assert!(r.wall < QUICK, "took {:?}", r.wall);
}

#[test]
fn a_thirty_second_sleep_is_virtual() {
    let (sb, tools) = sandbox_with(&["sleepy"]);
    let r = sb.call(&tools[0], b"", &limits());
    assert_eq!(r.outcome, Outcome::Exit { code: 0 });
    let text = String::from_utf8(r.stdout).unwrap();
    let slept: u64 = text
        .trim()
        .strip_prefix("slept ")
        .and_then(|s| s.strip_suffix(" ns"))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("unexpected output {text:?}"));
    // The guest saw 30 s pass (plus a clock step or two), in far less real time.
    assert!(
        (30_000_000_000..30_001_000_000).contains(&slept),
        "slept {slept}"
    );
    assert!(r.wall < QUICK, "took {:?}", r.wall);
}

#[test]
fn a_real_sleep_with_a_live_clock_still_ends_at_the_wall_limit() {
    let (sb, _) = sandbox_with(&["sleepy"]);
    let tool = sb
        .load_tool(&ModuleSpec::new(guest("sleepy")).clock(EpochMode::Live))
        .unwrap();
    let l = Limits {
        wall_ms: 400,
        ..limits()
    };
    let r = sb.call(&tool, b"", &l);
    assert_eq!(r.outcome, Outcome::Timeout);
    assert!(r.wall >= Duration::from_millis(400), "took {:?}", r.wall);
    assert!(r.wall < QUICK, "took {:?}", r.wall);
}

#[test]
fn unreachable_and_panic_are_traps() {
    let (sb, tools) = sandbox_with(&["trap"]);
    for input in [&b"abort"[..], b"panic"] {
        let r = sb.call(&tools[0], input, &limits());
        assert_eq!(
            r.outcome,
            Outcome::Trap {
                kind: TrapKind::Unreachable
            },
            "input {:?}",
            String::from_utf8_lossy(input)
        );
        assert!(r.wall < QUICK);
    }
    let r = sb.call(&tools[0], b"panic", &limits());
    assert!(String::from_utf8_lossy(&r.stderr).contains("the trap guest panics on request"));
}

#[test]
fn exit_seven_is_an_exit_with_its_code_and_output() {
    let (sb, tools) = sandbox_with(&["exit7"]);
    let r = sb.call(&tools[0], b"", &limits());
    assert_eq!(r.outcome, Outcome::Exit { code: 7 });
    assert_eq!(r.exit_code, Some(7));
    assert_eq!(r.stdout, b"{\"about_to\":\"exit\"}\n");
    assert_eq!(r.stderr, b"exiting with 7\n");
    assert!(r.fuel_used > 0);
}

#[test]
fn echo_returns_stdin_and_exits_zero() {
    let (sb, tools) = sandbox_with(&["echo"]);
    let input = br#"{"user_id":"u_42","n":[1,2,3]}"#;
    let r = sb.call(&tools[0], input, &limits());
    assert_eq!(r.outcome, Outcome::Exit { code: 0 });
    assert_eq!(r.exit_code, Some(0));
    assert_eq!(r.stdout, input);
    assert!(r.stderr.is_empty());
}

#[test]
fn output_of_exactly_the_limit_is_not_cut() {
    let (sb, tools) = sandbox_with(&["echo"]);
    let input = vec![b'a'; 1000];
    let l = Limits {
        output_bytes: 1000,
        ..limits()
    };
    let r = sb.call(&tools[0], &input, &l);
    assert_eq!(r.outcome, Outcome::Exit { code: 0 });
    assert_eq!(r.stdout.len(), 1000);
    let r = sb.call(&tools[0], &vec![b'a'; 1001], &l);
    assert_eq!(r.outcome, Outcome::OutputLimit);
    assert_eq!(r.stdout.len(), 1000);
}

#[test]
fn a_module_outside_the_epoch_is_refused() {
    let (sb, _) = sandbox_with(&["echo"]);
    let err = sb.load_tool(&ModuleSpec::new(guest("exit7"))).unwrap_err();
    assert!(
        err.to_string().contains("is not in the epoch manifest"),
        "{err}"
    );
}
