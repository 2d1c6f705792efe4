# The calibration block from Python held equal to the CLI's summary: plangate.score with
# calibrate=True gives `plangate score --summary-json`'s block, plangate.eval gives
# `plangate eval --summary-json`'s, and its AUROC is the pairwise one over the records.
import json
import subprocess
import sys

import pytest

import plangate


@pytest.fixture(scope="session")
def labelled(repo, tmp_path_factory):
    """1,000 generated labelled tasks with their results, and their catalog."""
    d = tmp_path_factory.mktemp("labelled")
    catalog, tasks = d / "catalog.json", d / "tasks.jsonl"
    with open(tasks, "w") as out:
        subprocess.run(
            [sys.executable, repo / "scripts/bench.d/gen_tasks.py", "--format", "plangate",
             "--count", "1000", "--seed", "3", "--catalog-out", catalog],
            stdout=out, check=True,
        )
    return catalog, tasks


def pairwise_auroc(records):
    """AUROC of argument agreement by brute force: each (hallucinated, correct) pair
    scores 1 when the hallucinated task agrees less, 1/2 on a tie."""
    tasks = [(r["label"], r["arg_agreement"]["count"], r["arg_agreement"]["n"])
             for r in records if r.get("label") and r["n"] > 0]
    score = pairs = 0
    for _, hc, hn in (t for t in tasks if t[0] == "hallucinated"):
        for _, cc, cn in (t for t in tasks if t[0] == "correct"):
            pairs += 1
            score += 1 if hc * cn < cc * hn else 0.5 if hc * cn == cc * hn else 0
    return score / pairs


def test_score_calibrates_as_the_cli_summary(cli, labelled, tmp_path):
    catalog, tasks = labelled
    summary = tmp_path / "summary.json"
    code, want, stderr = cli("score", "--catalog", catalog, "--samples", tasks,
                             "--summary-json", summary)
    assert code in (0, 1), stderr
    block = json.loads(summary.read_text())["calibration"]

    scores = plangate.score(catalog, tasks, calibrate=True, jobs=2)
    assert scores.calibration is None
    records = list(scores)
    assert records == want
    assert scores.calibration == block
    assert block["tasks"]["correct"] + block["tasks"]["hallucinated"] == 1000
    assert block["auroc"] == pytest.approx(pairwise_auroc(records), abs=1e-12)
    assert block["naive_auroc"] is not None
    own = [row for row in block["sweep"] if row["run"]]
    assert len(own) == 2 and own[0]["rejected"] == sum(
        1 for r in records if r["decision"] == "reject")

    # Without calibrate=True nothing is counted.
    plain = plangate.score(catalog, tasks)
    assert list(plain) == want and plain.calibration is None


def test_eval_returns_the_cli_summarys_calibration(repo, cli, plangate_bin, tmp_path):
    world = repo / "examples/seed-world/catalog.json"
    samples = tmp_path / "demo.jsonl"
    # The demo's labelled batch (its table on stdout is no JSON: run it apart).
    demo = subprocess.run([plangate_bin, "demo", "--world", repo / "examples/seed-world",
                           "--no-driver", "--tasks", "60", "--write-samples", samples],
                          capture_output=True, text=True)
    assert samples.exists(), demo.stderr
    epoch = tmp_path / "epoch.json"
    code, _, stderr = cli("epoch", "--catalog", world, "--out", epoch)
    assert code == 0, stderr
    summary = tmp_path / "summary.json"
    code, want, stderr = cli("eval", "--catalog", world, "--samples", samples,
                             "--epoch", epoch, "--summary-json", summary)
    assert code in (0, 1), stderr
    run = plangate.eval(world, samples, epoch=epoch)
    assert run.decisions == want
    # The seed world's misdeclared tools answer differently from run to run, and the
    # naive scorer reads their answers: its agreements are the same tasks, not always
    # the same values. Everything the gate decides is the same.
    block = json.loads(summary.read_text())["calibration"]
    naive = ("naive_auroc", "naive_roc", "naive_agreements")
    assert {k: v for k, v in run.calibration.items() if k not in naive} == \
        {k: v for k, v in block.items() if k not in naive}
    tasks = lambda c: sum(b["correct"] + b["hallucinated"] for b in c["naive_agreements"])
    assert tasks(run.calibration) == tasks(block) == 60
    assert run.calibration["auroc"] == pytest.approx(pairwise_auroc(run.decisions), abs=1e-12)
    # An unlabelled batch has no calibration.
    unlabelled = [json.dumps({k: v for k, v in json.loads(line).items() if k != "label"})
                  for line in samples.read_text().splitlines()[:5]]
    assert plangate.eval(world, unlabelled, epoch=epoch).calibration is None
