//! The warm gate on the seed world (examples/seed-world, its tools built by
//! scripts/build-tools): a task executed and classified at once decides as a batch
//! eval of that task alone, in the same epoch; and one gate decides task after task
//! without pinning or probing again.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use plangate_gate::catalog::Catalog;
use plangate_gate::decide::Verdict;
use plangate_gate::record;
use plangate_gate::task::{Task, parse_task_line};
use plangate_harness::{
    Eval, EvalOptions, LineOutcome, WarmGate, World, WorldOptions, read_catalog,
};

fn world_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/seed-world")
}

fn catalog() -> Arc<Catalog> {
    let tool = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../sandbox-tools/target/wasm32-wasip1/release/get_user.wasm");
    assert!(
        tool.exists(),
        "{} is missing: run scripts/build-tools",
        tool.display()
    );
    Arc::new(read_catalog(&world_dir().join("catalog.json")).expect("the seed world catalog"))
}

fn world(catalog: &Catalog) -> Arc<World> {
    let opts = WorldOptions {
        random_seed: 7,
        ..WorldOptions::default()
    };
    Arc::new(World::build(catalog, &world_dir(), opts).expect("pins"))
}

fn tasks() -> Vec<Task> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/e2e/cases/eval/plans.jsonl");
    std::fs::read_to_string(path)
        .expect("plans")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| parse_task_line(l.as_bytes()).expect("a task"))
        .collect()
}

/// The batch's decision on `task` alone.
fn batch_alone(catalog: &Arc<Catalog>, task: Task) -> String {
    let eval = Eval::start(world(catalog), catalog.clone(), EvalOptions::default());
    eval.execute(&|_, _| None, |feeder| feeder.push(1, task));
    let finished = eval.finish().expect("finishes");
    let lines: Vec<_> = finished.lines().map(|l| l.expect("reads back")).collect();
    match &lines[..] {
        [LineOutcome::Task(d)] => record::json(&d.decision),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_task_decided_at_once_is_a_batch_of_one() {
    let catalog = catalog();
    for task in tasks() {
        let gate = WarmGate::start(world(&catalog), catalog.clone(), EvalOptions::default());
        let executed = gate.execute(task.clone());
        let at_once = record::json(&gate.classify(&executed, &BTreeSet::new()));
        assert_eq!(
            at_once,
            batch_alone(&catalog, task.clone()),
            "{}",
            task.task_id
        );
    }
}

#[test]
fn one_gate_decides_task_after_task_in_one_epoch() {
    let catalog = catalog();
    let gate = WarmGate::start(world(&catalog), catalog.clone(), EvalOptions::default());
    let epoch = gate.epoch_id().to_string();
    let probed = gate.stats().probe_calls;
    assert!(
        probed > 0,
        "the seed world's deterministic tools have probe arguments"
    );
    let tasks = tasks();
    let mut verdicts = Vec::new();
    for round in 0..2 {
        for task in &tasks {
            let executed = gate.execute(task.clone());
            verdicts.push((round, gate.classify(&executed, &BTreeSet::new()).verdict));
        }
    }
    assert_eq!(gate.epoch_id(), epoch);
    let stats = gate.stats();
    assert_eq!(stats.tasks, 2 * tasks.len());
    // Probing again happens once per tool, on its first plain call, never per task.
    let per_tool = catalog.tools().iter().filter(|t| t.deterministic).count();
    assert!(
        stats.probe_calls <= probed + 2 * per_tool,
        "{} > {probed} + 2 x {per_tool}",
        stats.probe_calls
    );
    // The second round decides as the first: nothing the first learned moved a tool
    // whose answers are the epoch's.
    let first: Vec<Verdict> = verdicts
        .iter()
        .filter(|(r, _)| *r == 0)
        .map(|(_, v)| *v)
        .collect();
    let second: Vec<Verdict> = verdicts
        .iter()
        .filter(|(r, _)| *r == 1)
        .map(|(_, v)| *v)
        .collect();
    assert_eq!(first.len(), tasks.len());
    let quarantined: Vec<String> = gate.health().quarantined().map(str::to_string).collect();
    if quarantined.is_empty() {
        assert_eq!(first, second);
    }
    assert!(
        first.contains(&Verdict::Accept) && first.contains(&Verdict::Reject),
        "{first:?}"
    );
}

/// `plangate call`'s way in: one tool in an epoch pinned for it alone, through a gate
/// that probes nothing; its answer is the answer the whole world's gate gets.
#[test]
fn one_call_runs_in_an_epoch_of_its_own_tool_with_no_probe() {
    let catalog = catalog();
    let base = world_dir();
    let tool = catalog
        .get("get_user")
        .expect("the seed world has get_user");
    let module = base.join(tool.module.as_ref().expect("a module"));
    let mut epoch = plangate_sandbox::Epoch::builder()
        .random_seed(7)
        .module(&module);
    for m in &tool.mounts {
        epoch = epoch.mount(plangate_harness::epoch_mount(m, &base));
    }
    let alone = World::of_tool(
        plangate_sandbox::SandboxConfig::default(),
        epoch.build().expect("pins"),
        "get_user",
        &plangate_harness::module_spec(tool, &module, &base),
        Vec::new(),
        plangate_sandbox::Limits::default(),
    )
    .expect("loads");
    let gate = WarmGate::start(
        Arc::new(alone),
        Arc::new(Catalog::default()),
        EvalOptions {
            probe_runs: 0,
            ..EvalOptions::default()
        },
    );
    let args = br#"{"user_id":"u_0001"}"#;
    let record = gate.execute_call("get_user", args).expect("its tool");
    let whole = world(&catalog).call("get_user", args).expect("its tool");
    assert_eq!(record.outcome, whole.outcome);
    assert_eq!(record.stdout, whole.stdout);
    assert!(String::from_utf8_lossy(&record.stdout).contains("u_0001"));
    let stats = gate.stats();
    assert_eq!((stats.probe_calls, stats.calls_executed), (0, 1));
    let manifest = gate.world().epoch().manifest();
    assert_eq!(manifest.modules.len(), 1, "only the called tool is pinned");
    assert!(gate.execute_call("resolve_user", args).is_none());
}
