# plangate.eval held equal to `plangate eval` on the seed world (examples/seed-world,
# its tools built by scripts/build-tools): the same records, bad lines in their place,
# the same tool health, and a replayed epoch deciding alike.
import json
import shutil
import subprocess

import pytest

import plangate

CASES = "tests/e2e/cases/eval"


@pytest.fixture(scope="session")
def world(repo):
    catalog = repo / "examples/seed-world/catalog.json"
    tool = repo / "sandbox-tools/target/wasm32-wasip1/release/get_user.wasm"
    if not tool.exists():
        pytest.fail(f"{tool} is missing: run scripts/build-tools first")
    return catalog


def test_eval_on_the_seed_world_equals_the_cli(repo, cli, world, tmp_path):
    samples = repo / CASES / "plans.jsonl"
    health = tmp_path / "health.json"
    code, want, stderr = cli("eval", "--catalog", world, "--samples", samples,
                             "--tool-health", health)
    assert code == 1, stderr
    run = plangate.eval(world, samples)
    assert run.decisions == want
    assert run.tool_health == json.loads(health.read_text())
    assert run.epoch_id == want[0]["epoch_id"]
    expect = json.loads((repo / CASES / "plans.expect.json").read_text())
    got = {d["task_id"]: {"decision": d["decision"], "reasons": d["reasons"]} for d in run.decisions}
    for task, e in expect.items():
        assert got[task]["decision"] == e["decision"], task
    assert run.stats["tasks"] == len(want)
    assert "search_index" not in run.quarantined or run.tool_health


def test_eval_from_dicts_with_bad_lines_and_a_replayed_epoch(repo, cli, world, tmp_path):
    samples = repo / CASES / "bad-line.jsonl"
    _, want, _ = cli("eval", "--catalog", world, "--samples", samples)
    assert any("error" in r for r in want) and any("decision" in r for r in want)
    lines = samples.read_text().splitlines()
    run = plangate.eval(str(world), lines, jobs=2)
    assert run.decisions == want
    again = plangate.eval(world, lines, epoch=run.epoch)
    assert again.epoch_id == run.epoch_id and again.decisions == run.decisions


def test_eval_says_foreign_fields_once_and_decides_as_without_them(repo, cli, world):
    lines = (repo / CASES / "plans.jsonl").read_text().splitlines()
    tasks = [json.loads(line) for line in lines if line.strip()]
    for task in tasks:
        task["reward"] = 1.0
    plain = plangate.eval(world, lines)
    with pytest.warns(UserWarning) as caught:
        run = plangate.eval(world, tasks)
    assert run.decisions == plain.decisions
    said = [str(w.message) for w in caught if "unknown field" in str(w.message)]
    assert said == [
        f'plangate.eval: unknown field "reward" in tasks passed over on {len(tasks)} lines '
        '(docs/inputs.md, "Unknown fields")'
    ]


def test_eval_setup_errors_raise_the_cli_message(repo, cli, tmp_path):
    catalog = tmp_path / "catalog.json"
    catalog.write_text('{"tools": [{"name": "t", "deterministic": false, "module": "missing.wasm"}]}')
    samples = repo / CASES / "plans.jsonl"
    code, _, stderr = cli("eval", "--catalog", catalog, "--samples", samples)
    assert code == 2
    with pytest.raises(plangate.PlangateError) as e:
        plangate.eval(catalog, samples)
    assert str(e.value) == stderr.strip().removeprefix("plangate: error: ")
    assert "missing.wasm does not exist" in str(e.value)


def test_the_defer_path_retries_a_changed_live_source_as_the_cli_does(repo, cli, tmp_path):
    """A live index that changed after the epoch was pinned defers both tasks; with
    retry_deferred they are executed again in a fully pinned epoch: the agreeing one is
    accepted, the fabricated one rejected, each keeping its first deferral, as
    `plangate eval --retry-deferred` records it."""
    world_dir = repo / "examples/seed-world"
    live = tmp_path / "live"
    for sub in ("index", "config", "cache"):
        shutil.copytree(world_dir / "live" / sub, live / sub)
    doc = json.loads((world_dir / "catalog.json").read_text())
    for tool in doc["tools"]:
        tool["module"] = str(world_dir / tool["module"])
        for m in tool.get("mounts", []):
            host = m["host"]
            m["host"] = str(live / host.removeprefix("live/")) if host.startswith("live/") \
                else str(world_dir / host)
    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps(doc))

    def task(task_id, query):
        calls = [[{"tool": "search_index", "arguments": {"query": query(i)}}] for i in range(10)]
        return json.dumps({"task_id": task_id, "samples": [{"calls": c} for c in calls]})

    samples = tmp_path / "samples.jsonl"
    samples.write_text(task("agree", lambda i: "refund policy") + "\n"
                       + task("fabricated", lambda i: f"topic {i}") + "\n")
    epoch = tmp_path / "epoch.json"
    code, _, stderr = cli("eval", "--catalog", catalog, "--samples", samples,
                          "--write-epoch", epoch)
    assert code <= 1, stderr
    subprocess.run([world_dir / "writer", "append-segment", live], check=True)

    summary = tmp_path / "summary.json"
    code, want, stderr = cli("eval", "--catalog", catalog, "--samples", samples, "--epoch",
                             epoch, "--retry-deferred", "--summary-json", summary)
    assert code == 1, stderr
    run = plangate.eval(catalog, samples, epoch=epoch, retry_deferred=1)
    assert run.decisions == want
    assert [d["decision"] for d in run.decisions] == ["accept", "reject"]
    for d in run.decisions:
        assert d["history"][0]["decision"] == "defer"
        assert "epoch_not_fixed" in d["history"][0]["reasons"]
        assert d["epoch_id"] != d["history"][0]["epoch_id"]
    assert run.retry == json.loads(summary.read_text())["retry"]
    assert run.retry["resolved"] == {"epoch_not_fixed": {"accept": 1, "reject": 1}}

    # Without it, both stay deferred and nothing says otherwise.
    plain = plangate.eval(catalog, samples.read_text().splitlines(), epoch=epoch)
    assert [d["decision"] for d in plain.decisions] == ["defer", "defer"]
    assert plain.retry is None and all("history" not in d for d in plain.decisions)


def test_eval_runs_a_component_tool_as_the_cli_does(repo, cli, tmp_path):
    """A WASI 0.2 component with typed exports (sandbox-tools/components/files) through
    plangate.eval: six agreeing reads accepted, six invented paths rejected, the CLI's
    records to the byte."""
    component = repo / "sandbox-tools/target/wasm32-wasip2/release/files_component.wasm"
    if not component.exists():
        pytest.fail(f"{component} is missing: run scripts/build-tools first")
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.md").write_text("alpha\n")
    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps({"tools": [{
        "name": "read-file", "module": str(component), "export": "read-file",
        "deterministic": True, "probe": [{"path": "/data/a.md"}],
        "mounts": [{"host": str(data), "guest": "/data", "mode": "pinned"}],
    }]}))

    def sample(path):
        return {"calls": [{"tool": "read-file", "arguments": {"path": path}}]}

    tasks = [
        {"task_id": "reads", "samples": [sample("/data/a.md")] * 6},
        {"task_id": "invents", "samples": [sample(f"/data/r{i}.md") for i in range(6)]},
    ]
    samples = tmp_path / "samples.jsonl"
    samples.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    code, want, stderr = cli("eval", "--catalog", catalog, "--samples", samples)
    assert code == 1, stderr
    run = plangate.eval(catalog, samples)
    assert run.decisions == want
    assert [(d["task_id"], d["decision"]) for d in run.decisions] == [
        ("reads", "accept"), ("invents", "reject")]
