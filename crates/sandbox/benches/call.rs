//! Per-call cost of the JSON-echo guest through `Sandbox::call`, next to the bare
//! wasmtime floor (same engine, a fresh WASI context, store and instance, no epoch
//! work), measured in the same run; and calls/s on 1 and 2 threads.
//!
//! `cargo bench -p plangate-sandbox --bench call`. Goals (as `scripts/bench` rows 2a and
//! 2c): at most 2x the floor, at least 100k calls/s on 2 threads.
#![expect(
    missing_docs,
    reason = "criterion_group! generates an undocumented function"
)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use plangate_sandbox::{Epoch, Limits, ModuleSpec, Sandbox, SandboxConfig};
use wasmtime::Module;

#[path = "../tests/it/guests.rs"]
mod guests;
// The floor, shared with examples/bench_calls.rs.
#[path = "support/floor.rs"]
mod floor;
use floor::Bare;

const INPUT: &[u8] = br#"{"query":"ada lovelace","limit":10,"filters":{"active":true}}"#;

fn bench(c: &mut Criterion) {
    let echo = guests::guest("echo");
    let epoch = Epoch::builder().module(&echo).build().expect("epoch");
    let sandbox = Sandbox::new(SandboxConfig::default(), epoch).expect("sandbox");
    let tool = sandbox.load_tool(&ModuleSpec::new(&echo)).expect("tool");
    let limits = Limits::default();
    let module = Module::from_file(sandbox.engine(), &echo).expect("module");
    let bare = Bare::new(sandbox.engine(), &module);
    assert_eq!(sandbox.call(&tool, INPUT, &limits).stdout, INPUT);
    assert_eq!(bare.call(INPUT), INPUT);

    let mut g = c.benchmark_group("echo_per_call");
    g.throughput(Throughput::Elements(1));
    g.bench_function("bare_wasmtime_floor", |b| {
        b.iter(|| black_box(bare.call(INPUT)))
    });
    g.bench_function("sandbox_call", |b| {
        b.iter(|| black_box(sandbox.call(&tool, INPUT, &limits)))
    });
    g.finish();

    let mut g = c.benchmark_group("echo_throughput");
    g.throughput(Throughput::Elements(1));
    for threads in [1usize, 2] {
        g.bench_function(format!("sandbox_call_{threads}_threads"), |b| {
            b.iter_custom(|iters| {
                let per_thread = iters.div_ceil(threads as u64);
                let start = Instant::now();
                std::thread::scope(|s| {
                    for _ in 0..threads {
                        s.spawn(|| {
                            for _ in 0..per_thread {
                                black_box(sandbox.call(&tool, INPUT, &limits));
                            }
                        });
                    }
                });
                // Time per call as criterion counts them: total calls made / elapsed.
                let made = per_thread * threads as u64;
                Duration::from_secs_f64(start.elapsed().as_secs_f64() * iters as f64 / made as f64)
            })
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(4)).warm_up_time(Duration::from_secs(1));
    targets = bench
}
criterion_main!(benches);
