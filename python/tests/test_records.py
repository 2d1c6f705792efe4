# One declaration per record: every record plangate.score and plangate.eval return is
# json.loads of the line the CLI writes for it, field for field, key order and
# int-or-float included, on every samples fixture the repository holds (tau-bench's
# published results file among them).
import json

import pytest

import plangate

SCORED = [
    ("examples/score/catalog.json", "examples/score/samples.jsonl"),
    ("tests/realworld/tau-bench/catalog.json", "tests/realworld/tau-bench/gpt-4o-airline.json"),
]

EVALUATED = sorted(
    name for name in [
        "bad-line.jsonl", "chains.jsonl", "consistent.jsonl", "defers.jsonl",
        "misdeclared.jsonl", "plans.anthropic.jsonl", "plans.jsonl", "plans.mcp.jsonl",
        "plans.openai.jsonl",
    ]
)


def _same(got, want, where):
    assert len(got) == len(want), where
    for i, (g, w) in enumerate(zip(got, want)):
        # Text equality holds key order and 1 against 1.0, which `==` would not.
        assert json.dumps(g) == json.dumps(w), f"{where}: record {i}"


@pytest.mark.parametrize("catalog,samples", SCORED)
def test_score_records_are_the_clis_lines(repo, cli, catalog, samples):
    code, want, err = cli("score", "--catalog", repo / catalog, "--samples", repo / samples)
    assert code in (0, 1), err
    assert want, err
    _same(plangate.score_list(repo / catalog, repo / samples), want, samples)


def test_tau_bench_records_keep_their_outcomes(repo, cli):
    catalog, samples = SCORED[1]
    got = plangate.score_list(repo / catalog, repo / samples)
    assert len(got) == 50
    assert all(len(r["outcomes"]) == r["n"] for r in got)


@pytest.mark.parametrize("name", EVALUATED)
def test_eval_records_are_the_clis_lines(repo, cli, name):
    catalog = repo / "examples/seed-world/catalog.json"
    samples = repo / "tests/e2e/cases/eval" / name
    _, want, err = cli("eval", "--catalog", catalog, "--samples", samples)
    assert want, err
    _same(plangate.eval(catalog, samples).decisions, want, name)


def test_every_gate_case_file_scores_as_the_cli(repo, cli, tmp_path):
    cases = repo / "crates/gate/tests/cases"
    tried = 0
    for path in sorted(cases.glob("*.json")):
        case = json.loads(path.read_text())
        if not isinstance(case, dict) or "task" not in case or "resolver" in case \
                or "tool_states" in case:
            continue
        samples = tmp_path / f"{path.stem}.jsonl"
        samples.write_text(json.dumps(case["task"]) + "\n")
        for flags in ([], ["--seed-compat", "gate"]):
            kw = {"seed_compat": "gate"} if flags else {}
            _, want, err = cli("score", "--catalog", cases / case["catalog"], "--samples",
                               samples, *flags)
            assert len(want) == 1, (path.name, err)
            _same(plangate.score_list(cases / case["catalog"], samples, **kw), want, path.name)
        tried += 1
    assert tried >= 30
