//! The in-process half of `scripts/bench`: per-call cost of the sandbox against the bare
//! wasmtime floor, calls/s on 1 and 2 threads, and a seed-world tool as a WASM call
//! against the same tool built natively and spawned once per call. Each comparison
//! alternates its two sides round by round in one process, so the other builds sharing
//! this machine's two cores load both sides alike and only the ratio is trusted.
//!
//! ```sh
//! cargo run --release -p plangate-sandbox --example bench_calls -- \
//!     --echo sandbox-tools/target/wasm32-wasip1/release/echo.wasm \
//!     --tool sandbox-tools/target/wasm32-wasip1/release/get_user.wasm \
//!     --native target/bench/native/x86_64-unknown-linux-gnu/release/get_user \
//!     --world examples/seed-world/data --args '{"user_id":"u_0001"}'
//! ```
//!
//! Prints one `key value` line per figure, for the script to tabulate.
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use plangate_sandbox::{Epoch, EpochMount, Limits, ModuleSpec, Sandbox, SandboxConfig, Tool};
use wasmtime::Module;

/// Same input as the criterion bench (`benches/call.rs`), so the two agree on the floor.
const ECHO_INPUT: &[u8] = br#"{"query":"ada lovelace","limit":10,"filters":{"active":true}}"#;

#[path = "../benches/support/floor.rs"]
mod floor;
use floor::Bare;

struct Opts {
    echo: PathBuf,
    tool: PathBuf,
    native: Option<PathBuf>,
    world: PathBuf,
    args: String,
    rounds: usize,
    secs: f64,
}

fn parse_opts() -> Opts {
    let mut o = Opts {
        echo: PathBuf::new(),
        tool: PathBuf::new(),
        native: None,
        world: PathBuf::new(),
        args: r#"{"user_id":"u_0001"}"#.into(),
        rounds: 15,
        secs: 2.0,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut val = || it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--echo" => o.echo = val().into(),
            "--tool" => o.tool = val().into(),
            "--native" => o.native = Some(val().into()),
            "--world" => o.world = val().into(),
            "--args" => o.args = val(),
            "--rounds" => o.rounds = val().parse().expect("--rounds N"),
            "--secs" => o.secs = val().parse().expect("--secs S"),
            other => panic!("unknown flag {other}"),
        }
    }
    assert!(
        !o.echo.as_os_str().is_empty() && !o.tool.as_os_str().is_empty(),
        "--echo and --tool are required"
    );
    o
}

/// Median seconds per call of each side, over `rounds` rounds that alternate A and B
/// (each round long enough to swamp timer overhead).
fn alternate(
    rounds: usize,
    per_round: usize,
    mut a: impl FnMut(),
    mut b: impl FnMut(),
) -> (f64, f64) {
    let mut ta = Vec::with_capacity(rounds);
    let mut tb = Vec::with_capacity(rounds);
    for r in 0..rounds {
        // Alternate who goes first too, so neither side always runs on a warm cache.
        let run = |f: &mut dyn FnMut(), out: &mut Vec<f64>| {
            let t = Instant::now();
            for _ in 0..per_round {
                f();
            }
            out.push(t.elapsed().as_secs_f64() / per_round as f64);
        };
        if r % 2 == 0 {
            run(&mut a, &mut ta);
            run(&mut b, &mut tb);
        } else {
            run(&mut b, &mut tb);
            run(&mut a, &mut ta);
        }
    }
    (median(&mut ta), median(&mut tb))
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Calls per second over `secs` with `threads` threads calling at once.
fn throughput(sandbox: &Sandbox, tool: &Tool, input: &[u8], threads: usize, secs: f64) -> f64 {
    let limits = Limits::default();
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    let start = Instant::now();
    let total: u64 = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut n = 0u64;
                    while Instant::now() < deadline {
                        for _ in 0..64 {
                            std::hint::black_box(sandbox.call(tool, input, &limits));
                        }
                        n += 64;
                    }
                    n
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().expect("worker")).sum()
    });
    total as f64 / start.elapsed().as_secs_f64()
}

fn spawn_native(bin: &PathBuf, input: &[u8]) -> Vec<u8> {
    let mut child = Command::new(bin)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {}: {e}", bin.display()));
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input)
        .expect("write args");
    child.wait_with_output().expect("wait").stdout
}

fn main() {
    let o = parse_opts();
    let limits = Limits::default();

    let epoch = Epoch::builder()
        .seed(0)
        .module(&o.echo)
        .module(&o.tool)
        .mount(EpochMount::pinned(&o.world, "/world"))
        .build()
        .expect("epoch");
    let sandbox = Sandbox::new(SandboxConfig::default(), epoch).expect("sandbox");
    let echo = sandbox.load_tool(&ModuleSpec::new(&o.echo)).expect("echo");
    let tool = sandbox
        .load_tool(&ModuleSpec::new(&o.tool).mount(&o.world, "/world"))
        .expect("tool");
    let module = Module::from_file(sandbox.engine(), &o.echo).expect("echo module");
    let bare = Bare::new(sandbox.engine(), &module);
    assert_eq!(sandbox.call(&echo, ECHO_INPUT, &limits).stdout, ECHO_INPUT);
    assert_eq!(bare.call(ECHO_INPUT), ECHO_INPUT);

    let (t_sandbox, t_bare) = alternate(
        o.rounds,
        2000,
        || {
            std::hint::black_box(sandbox.call(&echo, ECHO_INPUT, &limits));
        },
        || {
            std::hint::black_box(bare.call(ECHO_INPUT));
        },
    );
    println!("echo_sandbox_us {:.3}", t_sandbox * 1e6);
    println!("echo_bare_us {:.3}", t_bare * 1e6);
    println!("echo_ratio {:.3}", t_sandbox / t_bare);
    for threads in [1, 2] {
        let cps = throughput(&sandbox, &echo, ECHO_INPUT, threads, o.secs);
        println!("echo_calls_per_s_{threads}t {cps:.0}");
    }

    let args = o.args.as_bytes();
    let wasm = sandbox.call(&tool, args, &limits);
    assert_eq!(
        wasm.exit_code,
        Some(0),
        "the WASM tool failed: {}",
        String::from_utf8_lossy(&wasm.stdout)
    );
    let Some(native) = &o.native else {
        let (t, _) = alternate(
            o.rounds,
            500,
            || {
                std::hint::black_box(sandbox.call(&tool, args, &limits));
            },
            || {},
        );
        println!("tool_wasm_us {:.3}", t * 1e6);
        return;
    };
    let spawned = spawn_native(native, args);
    // Same bytes, or the native run did not read the same world and the timing lies.
    assert_eq!(
        spawned,
        wasm.stdout,
        "native and WASM outputs differ:\nnative: {}\nwasm:   {}",
        String::from_utf8_lossy(&spawned),
        String::from_utf8_lossy(&wasm.stdout)
    );
    let (t_wasm, t_native) = alternate(
        o.rounds,
        100,
        || {
            std::hint::black_box(sandbox.call(&tool, args, &limits));
        },
        || {
            std::hint::black_box(spawn_native(native, args));
        },
    );
    println!("tool_wasm_us {:.3}", t_wasm * 1e6);
    println!("tool_native_spawn_us {:.3}", t_native * 1e6);
    println!("tool_ratio_native_over_wasm {:.3}", t_native / t_wasm);
}
