//! plangate's end-to-end tests: one test binary (the cli crate's `e2e` target) that runs
//! the built `plangate` binary against real WASM tools and fixtures.

/// plangate's exit codes, the binary's own (`plangate::exit`), as `ExitStatus::code`
/// reports them: a test names the code it expects and can match several in a pattern.
mod exit {
    use plangate::exit as code;

    pub(crate) const OK: i32 = code::OK as i32;
    pub(crate) const REJECT: i32 = code::REJECT as i32;
    pub(crate) const USAGE: i32 = code::USAGE as i32;
    pub(crate) const INTERRUPTED: i32 = code::INTERRUPTED as i32;
}

// The seed world's twelve tools through `plangate call`, driven by the catalog and
// tests/e2e/cases/tools/.
mod tools;
// `plangate call` itself: epoch replay, outcomes, escapes (the sandbox test guests).
mod call;
// `--help` held to the code: the subcommands clap dispatches, the catalog dialects read.
mod help;
// `plangate score --seed-compat` against the seed's own code, on 10,000 generated cases.
mod seed_diff;
// `plangate eval` over the seed world: formats, quarantine, chains, JUnit, exit codes,
// replay (cases in tests/e2e/cases/eval/).
mod eval;
// `plangate probe`: verified, drift and epoch-sensitive declarations.
mod probe;
// `plangate demo`: the seed's experiment on the seed world, with the world driver.
mod demo;
// Hostile guests (loops, bombs, floods, traps, escapes) as one `plangate eval` batch
// (cases in tests/e2e/cases/hostile/).
mod hostile;
// `plangate demo --html`: the report renders in headless Chromium (scripts/setup).
mod report;
// `--html` on `score` and `eval`: the run's page renders in headless Chromium, every
// section there, and stays small for 100,000 tasks.
mod page;
// Malformed input (JSONTestSuite), broken catalogs and manifests, and the exit codes of
// docs/errors.md, through the CLI.
mod malformed;
// `plangate score` on the README example, with the naive baseline in its summary.
mod score;
// Free text in arguments: the run's one warning about prose, and the hint it gives.
mod prose;
// Foreign fields in samples lines, passed over and named once per run, and misspelt
// ones refused, through `score` and `eval`.
mod fields;
// Outputs checked against inputs and each other, and written whole or not at all.
mod outputs;
// What a run refuses before the work (outputs on a module or in a mount, unwritable
// outputs, thresholds out of order), and a closed or full stdout as an error.
mod guards;
// Data nobody here wrote: BFCL catalogs in four dialects and its tasks in three shapes,
// and three real MCP servers' tools/list (tests/realworld/, from scripts/realworld).
mod realworld;
// Benchmark results files as published: tau-bench's trajectories (tests/realworld/tau-bench)
// and the same trials as a tau2-bench results object.
mod results_files;
// Published tau2-bench results from a fork, cut: invented references by model.
mod tau2_logs;
// Runs stopped by SIGKILL or SIGINT and resumed with --resume decide as an uninterrupted
// run does.
mod resume;
// Inputs too big to hold: long lines, endless catalogs; repeated task IDs.
mod limits;
// The module cache: the user's own private directory by default, and a refused one is
// one warning per run, never a failed run.
mod cache;
// The defer path: deferrals of a changed live source executed again in a pinned epoch.
mod retry;
// A tool written in C, through `plangate call` and `plangate probe --strict`.
mod ctool;
// WebAssembly components (Rust and Python): call, catalog --component, probe, eval, and
// the network inside the epoch.
mod components;
// Hostile components against the sandbox's limits and pinning: host-side waits, host
// memory, pinned u64 draws, directory sizes.
mod hostile_components;
// What a pinned network keeps and whom it answers: credentials, header bytes, the
// manifest's seal, bounded bodies, and a resumed run's recording.
mod network;
// Shards and `plangate merge`: whole and sharded runs decide alike, quarantine is
// global, and shards of different batches are refused.
mod shard;
// The Ray example: shards as Ray tasks on a local cluster, merged (needs Ray).
mod ray;
// The summary's calibration (AUROC, ROC, threshold sweep) against pairwise AUROCs and
// runs of the gate at the swept thresholds, from score, eval and merge.
mod calibration;
// `--junit` parsed by a validating XML reader, whatever characters the task ids hold.
mod junit;
// Typed component exports: an error that says not found, and interfaces whose short
// names collide.
mod typed;
// `plangate serve` on loopback: /v1/decide against score, limits, the token, metrics,
// a graceful stop, and the OpenAI-compatible proxy in front of a recorded upstream.
mod serve;
// `plangate serve --anthropic-upstream`: /v1/messages in front of a recorded Anthropic
// upstream, raw and through the official `anthropic` SDK.
mod serve_anthropic;
// An agent framework from PyPI (OpenAI's Agents SDK) running its own loop through
// `plangate serve --upstream`.
mod serve_agents;
// The warm gate behind `plangate serve`: /v1/eval held to `plangate eval --epoch`,
// fresh epochs, witnesses across requests, and the proxy executing a step's calls.
mod serve_warm;
