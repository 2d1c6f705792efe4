# plangate.Gate, the warm gate in-process, on the seed world (examples/seed-world, its
# tools built by scripts/build-tools): each task decided at once equals what `plangate
# eval --epoch M` writes for it alone, recorded tasks equal `plangate score` (a
# catalog without modules executes nothing, and decides), four
# threads decide as one, and a quarantine found by one task holds for the next.
import json
import shutil
import subprocess
import threading

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


def test_gate_eval_equals_the_cli_on_each_task_alone(repo, cli, world, tmp_path):
    manifest = tmp_path / "epoch.json"
    code, _, stderr = cli("epoch", "--catalog", world, "--out", manifest)
    assert code == 0, stderr
    gate = plangate.Gate(world, epoch=manifest)
    lines = [l for l in (repo / CASES / "plans.jsonl").read_text().splitlines() if l.strip()]
    for i, line in enumerate(lines):
        one = tmp_path / f"one-{i}.jsonl"
        one.write_text(line + "\n")
        _, want, stderr = cli("eval", "--catalog", world, "--samples", one, "--epoch", manifest)
        assert len(want) == 1, stderr
        # A dict and the line itself are the same task.
        assert gate.eval(json.loads(line)) == want[0]
    assert gate.epoch_id == want[0]["epoch_id"]
    bad = gate.eval('{"task_id":"t","samples":[{"calls":[{"tool":7,"arguments":{}}]}]}')
    assert bad["line"] == 1 and bad["error"]["kind"] == "input"
    health = gate.health()
    assert health["epoch_id"] == gate.epoch_id
    assert {t["name"] for t in health["tools"]} >= {"get_user", "search_index"}


def test_gate_decide_equals_score(repo, cli):
    catalog = repo / "examples/score/catalog.json"
    samples = repo / "examples/score/samples.jsonl"
    _, want, _ = cli("score", "--catalog", catalog, "--samples", samples)
    # The example's tools have no modules: the gate decides, and executes nothing.
    gate = plangate.Gate(catalog)
    assert gate.epoch_id is None
    lines = [l for l in samples.read_text().splitlines() if l.strip()]
    assert [gate.decide(l) for l in lines] == want
    with pytest.raises(plangate.PlangateError, match="module"):
        gate.eval(lines[0])


def test_four_threads_decide_as_one(repo, world):
    lines = [l for l in (repo / CASES / "plans.jsonl").read_text().splitlines() if l.strip()]
    one = plangate.Gate(world)
    want = [one.eval(l) for l in lines]
    shared = plangate.Gate(world)
    got = [None] * len(lines) * 4
    def work(k):
        for i, line in enumerate(lines):
            got[k * len(lines) + i] = shared.eval(line)
    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == want * 4


def test_a_quarantine_holds_for_later_tasks(repo, world, tmp_path):
    live = tmp_path / "live"
    shutil.copytree(repo / "examples/seed-world/live", live,
                    ignore=shutil.ignore_patterns("baseline"))
    doc = json.loads(world.read_text())
    base = world.parent
    for t in doc["tools"]:
        t["module"] = str(base / t["module"])
        for m in t["mounts"]:
            m["host"] = str(live / "index") if t["name"] == "search_index" else str(base / m["host"])
    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps(doc))
    gate = plangate.Gate(catalog)

    def search(task_id, query):
        call = {"calls": [{"tool": "search_index", "arguments": {"query": query}}]}
        return {"task_id": task_id, "samples": [call] * 5}

    first = gate.eval(search("before", "refund"))
    assert first["decision"] == "accept", first
    subprocess.run([base / "writer", "append-segment", live], check=True)
    assert gate.eval(search("after", "refund"))["decision"] == "defer"
    assert gate.eval(search("later", "shipping"))["decision"] == "defer"
    tool = next(t for t in gate.health()["tools"] if t["name"] == "search_index")
    assert tool["quarantined"], tool
