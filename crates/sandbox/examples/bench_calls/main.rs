//! The in-process half of `scripts/bench`: per-call cost of the sandbox against the bare
//! wasmtime floor (for the JSON echo and for a seed-world tool reading its mount),
//! calls/s on 1 and 2 threads, and the seed-world tool as a WASM call against the same
//! tool built natively and spawned once per call. Each comparison alternates its two
//! sides round by round in one process, so the other builds sharing this machine's two
//! cores load both sides alike and only the ratio is trusted.
//!
//! With `--profile`, it prints instead where one call of the tool spends its time
//! (docs/benchmarks.md, "Where a seed-world call's time goes"): every WASI call it
//! makes, the host time in them, set-up and instantiation, and guest compute.
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

mod trace;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use plangate_sandbox::{Epoch, EpochMount, Limits, ModuleSpec, Sandbox, SandboxConfig, Tool};
use wasmtime::Module;

/// Same input as the criterion bench (`benches/call.rs`), so the two agree on the floor.
const ECHO_INPUT: &[u8] = br#"{"query":"ada lovelace","limit":10,"filters":{"active":true}}"#;

#[path = "../../benches/support/floor.rs"]
mod floor;
use floor::Bare;
use trace::{Tally, Tracer};

struct Opts {
    echo: PathBuf,
    /// The same echo built as a component (wasm32-wasip2, `wasi:cli/run`).
    component_echo: Option<PathBuf>,
    tool: PathBuf,
    native: Option<PathBuf>,
    world: PathBuf,
    args: String,
    rounds: usize,
    secs: f64,
    profile: bool,
    /// `--calls SIDE N`: only N calls of one side, for callgrind or perf to count.
    calls: Option<(String, usize)>,
}

fn parse_opts() -> Opts {
    let mut o = Opts {
        echo: PathBuf::new(),
        component_echo: None,
        tool: PathBuf::new(),
        native: None,
        world: PathBuf::new(),
        args: r#"{"user_id":"u_0001"}"#.into(),
        rounds: 15,
        secs: 2.0,
        profile: false,
        calls: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut val = || it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--echo" => o.echo = val().into(),
            "--component-echo" => o.component_echo = Some(val().into()),
            "--tool" => o.tool = val().into(),
            "--native" => o.native = Some(val().into()),
            "--world" => o.world = val().into(),
            "--args" => o.args = val(),
            "--rounds" => o.rounds = val().parse().expect("--rounds N"),
            "--secs" => o.secs = val().parse().expect("--secs S"),
            "--profile" => o.profile = true,
            "--calls" => {
                let side = val();
                o.calls = Some((side, val().parse().expect("--calls SIDE N")));
            }
            other => panic!("unknown flag {other}"),
        }
    }
    assert!(
        !o.echo.as_os_str().is_empty() && !o.tool.as_os_str().is_empty(),
        "--echo and --tool are required"
    );
    o
}

/// What a round is timed by.
#[derive(Clone, Copy)]
enum Clock {
    /// Wall time: what a caller waits, and all a spawned process's cost shows up in.
    Wall,
    /// CPU time of the calling thread, which runs the whole of an in-process call
    /// (blocking WASI on the current thread): on a shared machine, it leaves out the
    /// time other processes held the core, which wall time counts against either side.
    ThreadCpu,
}

impl Clock {
    fn now(self) -> Duration {
        match self {
            Clock::Wall => START.elapsed(),
            Clock::ThreadCpu => thread_cpu(),
        }
    }
}

static START: std::sync::LazyLock<Instant> = std::sync::LazyLock::new(Instant::now);

/// The calling thread's CPU time, from the kernel's schedstat (std has no thread clock,
/// and this crate links no libc bindings for one).
fn thread_cpu() -> Duration {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").expect("schedstat");
    let ns = text
        .split_whitespace()
        .next()
        .and_then(|f| f.parse().ok())
        .expect("schedstat starts with ns on cpu");
    Duration::from_nanos(ns)
}

/// Median seconds per call of each side, over `rounds` rounds that alternate A and B
/// (each round long enough to swamp timer overhead).
fn alternate(
    rounds: usize,
    per_round: usize,
    clock: Clock,
    mut a: impl FnMut(),
    mut b: impl FnMut(),
) -> (f64, f64) {
    let mut ta = Vec::with_capacity(rounds);
    let mut tb = Vec::with_capacity(rounds);
    for r in 0..rounds {
        // Alternate who goes first too, so neither side always runs on a warm cache.
        let run = |f: &mut dyn FnMut(), out: &mut Vec<f64>| {
            let t = clock.now();
            for _ in 0..per_round {
                f();
            }
            out.push((clock.now() - t).as_secs_f64() / per_round as f64);
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

/// The sandbox, its two tools, and their bare twins.
struct Bench {
    sandbox: Sandbox,
    echo: Tool,
    /// The echo as a component, when given.
    component_echo: Option<Tool>,
    tool: Tool,
    bare_echo: Bare,
    bare_tool: Bare,
    limits: Limits,
}

fn setup(o: &Opts) -> Bench {
    let mut builder = Epoch::builder().random_seed(0);
    if let Some(c) = &o.component_echo {
        builder = builder.module(c);
    }
    let epoch = builder
        .module(&o.echo)
        .module(&o.tool)
        .mount(EpochMount::pinned(&o.world, "/world"))
        .build()
        .expect("epoch");
    let sandbox = Sandbox::new(SandboxConfig::default(), epoch).expect("sandbox");
    let echo = sandbox.load_tool(&ModuleSpec::new(&o.echo)).expect("echo");
    let component_echo = (o.component_echo.as_ref()).map(|c| {
        sandbox
            .load_tool(&ModuleSpec::new(c))
            .expect("component echo")
    });
    let tool = sandbox
        .load_tool(&ModuleSpec::new(&o.tool).mount(&o.world, "/world"))
        .expect("tool");
    let module = |p: &PathBuf| Module::from_file(sandbox.engine(), p).expect("module");
    let bare_echo = Bare::new(sandbox.engine(), &module(&o.echo));
    // The same module over the same files (the epoch serves a copy of them).
    let bare_tool = Bare::new(sandbox.engine(), &module(&o.tool)).mount(&o.world, "/world");
    Bench {
        sandbox,
        echo,
        component_echo,
        tool,
        bare_echo,
        bare_tool,
        limits: Limits::default(),
    }
}

fn main() {
    let o = parse_opts();
    let b = setup(&o);
    let args = o.args.as_bytes();
    let wasm = b.sandbox.call(&b.tool, args, &b.limits);
    assert_eq!(
        wasm.exit_code,
        Some(0),
        "the WASM tool failed: {}",
        String::from_utf8_lossy(&wasm.stdout)
    );
    // Same bytes, or the floor did not do the same work.
    assert_eq!(
        b.bare_tool.call(args),
        wasm.stdout,
        "bare and sandbox differ"
    );
    if o.profile {
        profile(&b, args, o.rounds, wasm.fuel_used);
        return;
    }
    if let Some((side, n)) = &o.calls {
        for _ in 0..*n {
            match side.as_str() {
                "sandbox" => drop(b.sandbox.call(&b.tool, args, &b.limits)),
                "bare" => drop(b.bare_tool.call(args)),
                "setup" => b.bare_tool.setup_only(args),
                other => panic!("--calls {other}: sandbox, bare or setup"),
            }
        }
        return;
    }
    echo_figures(&b, &o);
    let (t_sandbox, t_bare) = alternate(
        o.rounds,
        300,
        Clock::ThreadCpu,
        || {
            std::hint::black_box(b.sandbox.call(&b.tool, args, &b.limits));
        },
        || {
            std::hint::black_box(b.bare_tool.call(args));
        },
    );
    println!("tool_sandbox_us {:.3}", t_sandbox * 1e6);
    println!("tool_bare_us {:.3}", t_bare * 1e6);
    println!("tool_ratio_sandbox_over_bare {:.3}", t_sandbox / t_bare);
    println!("tool_fuel {}", wasm.fuel_used);
    if let Some(native) = &o.native {
        native_figures(&b, native, args, &wasm.stdout, o.rounds);
    }
}

fn echo_figures(b: &Bench, o: &Opts) {
    assert_eq!(
        b.sandbox.call(&b.echo, ECHO_INPUT, &b.limits).stdout,
        ECHO_INPUT
    );
    assert_eq!(b.bare_echo.call(ECHO_INPUT), ECHO_INPUT);
    let (t_sandbox, t_bare) = alternate(
        o.rounds,
        2000,
        Clock::Wall,
        || {
            std::hint::black_box(b.sandbox.call(&b.echo, ECHO_INPUT, &b.limits));
        },
        || {
            std::hint::black_box(b.bare_echo.call(ECHO_INPUT));
        },
    );
    println!("echo_sandbox_us {:.3}", t_sandbox * 1e6);
    println!("echo_bare_us {:.3}", t_bare * 1e6);
    println!("echo_ratio {:.3}", t_sandbox / t_bare);
    for threads in [1, 2] {
        let cps = throughput(&b.sandbox, &b.echo, ECHO_INPUT, threads, o.secs);
        println!("echo_calls_per_s_{threads}t {cps:.0}");
    }
    if let Some(component) = &b.component_echo {
        // The same source built both ways: what a component costs over a core module.
        assert_eq!(
            b.sandbox.call(component, ECHO_INPUT, &b.limits).stdout,
            ECHO_INPUT
        );
        let (t_component, t_module) = alternate(
            o.rounds,
            500,
            Clock::Wall,
            || {
                std::hint::black_box(b.sandbox.call(component, ECHO_INPUT, &b.limits));
            },
            || {
                std::hint::black_box(b.sandbox.call(&b.echo, ECHO_INPUT, &b.limits));
            },
        );
        println!("component_echo_us {:.3}", t_component * 1e6);
        println!("module_echo_us {:.3}", t_module * 1e6);
        println!("component_ratio {:.3}", t_component / t_module);
    }
}

fn native_figures(b: &Bench, native: &PathBuf, args: &[u8], wasm_out: &[u8], rounds: usize) {
    let spawned = spawn_native(native, args);
    // Same bytes, or the native run did not read the same world and the timing lies.
    assert_eq!(
        spawned,
        wasm_out,
        "native and WASM outputs differ:\nnative: {}\nwasm:   {}",
        String::from_utf8_lossy(&spawned),
        String::from_utf8_lossy(wasm_out)
    );
    let (t_wasm, t_native) = alternate(
        rounds,
        100,
        Clock::Wall,
        || {
            std::hint::black_box(b.sandbox.call(&b.tool, args, &b.limits));
        },
        || {
            std::hint::black_box(spawn_native(native, args));
        },
    );
    println!("tool_wasm_us {:.3}", t_wasm * 1e6);
    println!("tool_native_spawn_us {:.3}", t_native * 1e6);
    println!("tool_ratio_native_over_wasm {:.3}", t_native / t_wasm);
}

/// Calls per profile round: enough that a round's median is not one scheduler hiccup.
const PROFILE_CALLS: usize = 300;

/// Per call: each span's count and median time, over `rounds` rounds of `PROFILE_CALLS` calls of `f` under the tracer. Medians,
/// because a span is wall time and a round the scheduler cut into is an outlier.
fn traced(tracer: &Tracer, rounds: usize, mut f: impl FnMut()) -> Vec<(String, Tally)> {
    let n = PROFILE_CALLS as u64;
    let mut times: BTreeMap<String, (u64, Vec<f64>)> = BTreeMap::new();
    for _ in 0..rounds {
        tracer.take();
        tracing::subscriber::with_default(tracer.clone(), || {
            for _ in 0..PROFILE_CALLS {
                f();
            }
        });
        let tallies = tracer.take();
        for (k, t) in tallies {
            let e = times.entry(k).or_default();
            e.0 = t.count / n;
            e.1.push(t.time.as_secs_f64() / n as f64);
        }
    }
    times
        .into_iter()
        .map(|(k, (count, mut v))| {
            let time = Duration::from_secs_f64(median(&mut v));
            (k, Tally { count, time })
        })
        .collect()
}

fn us(secs: f64) -> String {
    format!("{:.1}", secs * 1e6)
}

/// Prints where one call of the tool goes, bare and through the sandbox, as markdown.
/// Whole calls and the bare set-up are CPU time, medians of alternated rounds. The time
/// in WASI calls is the sum of each call's median from the tracer's spans (wall time,
/// but short: a round the scheduler cut into moves one call's median, not the sum).
fn profile(b: &Bench, args: &[u8], rounds: usize, fuel: u64) {
    let sandbox_call = || {
        std::hint::black_box(b.sandbox.call(&b.tool, args, &b.limits));
    };
    let bare_call = || {
        std::hint::black_box(b.bare_tool.call(args));
    };
    let (t_sandbox, t_bare) = alternate(
        rounds,
        PROFILE_CALLS,
        Clock::ThreadCpu,
        sandbox_call,
        bare_call,
    );
    let (t_setup, _) = alternate(
        rounds,
        PROFILE_CALLS,
        Clock::ThreadCpu,
        || b.bare_tool.setup_only(args),
        || {},
    );
    let tracer = Tracer::default();
    let sb_spans = traced(&tracer, rounds, sandbox_call);
    let bare_spans = traced(&tracer, rounds, bare_call);
    let wasi = |spans: &[(String, Tally)]| -> (u64, f64) {
        spans.iter().fold((0, 0.0), |(n, t), (_, s)| {
            (n + s.count, t + s.time.as_secs_f64())
        })
    };
    let (bare_n, bare_wasi) = wasi(&bare_spans);
    let (sb_n, sb_wasi) = wasi(&sb_spans);
    let bare_run = t_bare - t_setup;
    println!("| per call, µs | bare wasmtime + wasmtime-wasi | plangate `Sandbox::call` |");
    println!("|---|---|---|");
    println!("| whole call (CPU) | {} | {} |", us(t_bare), us(t_sandbox));
    println!(
        "| set-up: WASI context, store, instance (CPU) | {} | |",
        us(t_setup)
    );
    println!(
        "| `_start` (CPU, whole minus set-up) | {} | |",
        us(bare_run)
    );
    println!(
        "| of which in WASI host calls (traced) | {} in {bare_n} calls | {} in {sb_n} calls |",
        us(bare_wasi),
        us(sb_wasi)
    );
    println!(
        "| of which guest code ({fuel} fuel) | {} | |",
        us(bare_run - bare_wasi)
    );
    println!("| sandbox / bare | | {:.2}x |", t_sandbox / t_bare);
    println!();
    wasi_table(&bare_spans, &sb_spans);
}

/// Each WASI call a tool call makes, how often and how long, bare and in the sandbox.
fn wasi_table(bare: &[(String, Tally)], sandbox: &[(String, Tally)]) {
    println!("| WASI call (fd) | per call, bare | µs, bare | per call, sandbox | µs, sandbox |");
    println!("|---|---|---|---|---|");
    let mut names: Vec<&String> = bare.iter().chain(sandbox).map(|(k, _)| k).collect();
    names.sort();
    names.dedup();
    for name in names {
        let get = |spans: &[(String, Tally)]| {
            spans
                .iter()
                .find(|(k, _)| k == name)
                .map_or((0, 0.0), |(_, t)| (t.count, t.time.as_secs_f64()))
        };
        let (bc, bt) = get(bare);
        let (sc, st) = get(sandbox);
        println!("| `{name}` | {bc} | {} | {sc} | {} |", us(bt), us(st));
    }
}
