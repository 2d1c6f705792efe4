# Published multi-trial agent logs for scripts/realworld: tau-bench's historical
# trajectories (a results list per model and domain, four trials per task, OpenAI
# conversations with tool results and a reward per trial), read by `plangate score`
# as published, with a catalog made from tau-bench's own tool definitions.
"""tau-bench's logs: the catalog from a checkout, the fixture, and the figures."""
import collections
import json
import os
import re
import subprocess
import sys
import types

DOMAIN = "airline"
LOG = "historical_trajectories/gpt-4o-airline.json"
# Parameters whose values are prose (text for a person or a log, not a claim about the
# world): marked so agreement compares only their presence.
PROSE = {("transfer_to_human_agents", "summary"), ("think", "thought")}


def catalog_from_checkout(repo):
    """The OpenAI tools array of tau-bench's airline tools, from each tool's get_info(),
    loaded with a stand-in for tau_bench.envs.tool.Tool (the only import they need)."""
    tools_dir = os.path.join(repo, "tau_bench", "envs", DOMAIN, "tools")
    stub = types.ModuleType("tau_bench.envs.tool")

    class Tool:
        pass

    stub.Tool = Tool
    for name in ("tau_bench", "tau_bench.envs"):
        sys.modules.setdefault(name, types.ModuleType(name))
    sys.modules["tau_bench.envs.tool"] = stub
    tools = []
    for fname in sorted(os.listdir(tools_dir)):
        if not fname.endswith(".py") or fname == "__init__.py":
            continue
        ns = {}
        with open(os.path.join(tools_dir, fname), encoding="utf-8") as f:
            exec(compile(f.read(), fname, "exec"), ns)  # noqa: S102 - tau-bench's own tool definitions
        for v in ns.values():
            if isinstance(v, type) and issubclass(v, Tool) and v is not Tool:
                tools.append(v.get_info())
    return sorted(tools, key=lambda t: t["function"]["name"])


def with_prose_hints(tools):
    """The same tools with the prose parameters marked (x-plangate canon prose)."""
    out = json.loads(json.dumps(tools))
    for t in out:
        f = t["function"]
        for p, schema in f["parameters"].get("properties", {}).items():
            if (f["name"], p) in PROSE:
                schema["x-plangate"] = {"canon": ["prose"]}
    return out


def trimmed(trials):
    """The published list with each system message cut to its first line (the agent
    policy, the same in every trial, is most of the file's size)."""
    out = json.loads(json.dumps(trials))
    for t in out:
        for m in t.get("traj", []):
            if m.get("role") == "system" and isinstance(m.get("content"), str):
                m["content"] = m["content"].split("\n", 1)[0]
    return out


def score(plangate, catalog, results, out, extra=()):
    cmd = [plangate, "score", "--catalog", catalog, "--samples", results, "--out", out, *extra]
    p = subprocess.run(cmd, capture_output=True, text=True)
    decisions = []
    if os.path.exists(out):
        with open(out, encoding="utf-8") as f:
            decisions = [json.loads(line) for line in f if line.strip()]
    return p.returncode, p.stderr, decisions


def outcome_group(outcomes):
    known = [x for x in outcomes if x is not None]
    good = sum(1 for x in known if x >= 1 - 1e-6)
    if not known:
        return None
    return "all_succeeded" if good == len(known) else "all_failed" if good == 0 else "some_failed"


def figures(code, stderr, decisions):
    """What a run of `plangate score` on the results file said."""
    read = re.search(r"(\d+) trials of (\d+) tasks", stderr)
    ids = re.search(r"warning: (\d+) tool results found their call by a call id other calls carry", stderr)
    by = collections.defaultdict(collections.Counter)
    reasons = collections.defaultdict(collections.Counter)
    divergent = collections.Counter()
    for d in decisions:
        if "decision" not in d:
            continue
        g = outcome_group(d.get("outcomes") or [])
        by[g][d["decision"]] += 1
        for r in d["reasons"]:
            reasons[g][r] += 1
        for p in d.get("divergent_paths", []):
            divergent[re.sub(r"\[\d+\]", "[]", p["path"])] += 1
    return {
        "exit": code,
        "error": stderr.strip().splitlines()[-1] if code == 2 and not decisions else None,
        "trials_read": int(read.group(1)) if read else None,
        "tasks_read": int(read.group(2)) if read else None,
        "skipped": sum(1 for d in decisions if "error" in d),
        "reused_id_results": int(ids.group(1)) if ids else 0,
        "by_outcome": {g: dict(c) for g, c in by.items()},
        "reasons_by_outcome": {g: dict(c) for g, c in reasons.items()},
        "top_divergent_paths": divergent.most_common(8),
    }


def run(plangate, results, work, catalog_tools):
    """Scores the results file at the default --min-samples and at 4 (the trials per
    task), without and with the prose hints."""
    os.makedirs(work, exist_ok=True)
    report = {}
    for hints in ("plain", "prose"):
        tools = with_prose_hints(catalog_tools) if hints == "prose" else catalog_tools
        catalog = os.path.join(work, f"catalog-{hints}.json")
        with open(catalog, "w", encoding="utf-8") as f:
            json.dump(tools, f, indent=1)
        for min_samples in (5, 4):
            out = os.path.join(work, f"decisions-{hints}-{min_samples}.jsonl")
            extra = ["--min-samples", str(min_samples)]
            report[f"{hints}_min{min_samples}"] = figures(*score(plangate, catalog, results, out, extra))
    return report


def print_report(report, log_name):
    print(f"\n== tau-bench {log_name}, read as published")
    for key, f in report.items():
        print(f"  {key}: exit {f['exit']}, {f['trials_read']} trials of {f['tasks_read']} tasks read, "
              f"{f['skipped']} skipped, {f['reused_id_results']} results matched by a reused call id")
        for g in ("all_succeeded", "some_failed", "all_failed"):
            print(f"    {g:<14} {f['by_outcome'].get(g, {})}  reasons {f['reasons_by_outcome'].get(g, {})}")
        print(f"    top divergent paths: {f['top_divergent_paths'][:4]}")


def write_fixture(dest, repo, catalog_tools, trials, commit):
    os.makedirs(dest, exist_ok=True)
    with open(os.path.join(dest, "gpt-4o-airline.json"), "w", encoding="utf-8") as f:
        json.dump(trimmed(trials), f, indent=1)
        f.write("\n")
    with open(os.path.join(dest, "catalog.json"), "w", encoding="utf-8") as f:
        json.dump(with_prose_hints(catalog_tools), f, indent=1)
        f.write("\n")
    with open(os.path.join(repo, "LICENSE"), encoding="utf-8") as f:
        license_text = f.read()
    with open(os.path.join(dest, "LICENSE-MIT"), "w", encoding="utf-8") as f:
        f.write(license_text)
    with open(os.path.join(dest, "NOTICE.md"), "w", encoding="utf-8") as f:
        f.write(f"""<!-- Why this file exists: this folder holds data copied from tau-bench; this says where
from, under which license, and how it was changed. scripts/realworld writes it. -->

# tests/realworld/tau-bench: sources and license

From tau-bench (https://github.com/sierra-research/tau-bench), commit `{commit}`,
MIT License (Copyright (c) 2024 Sierra; the text is in `LICENSE-MIT`).

- `gpt-4o-airline.json`: `{LOG}` as published (gpt-4o on the airline domain, 50 tasks x 4
  trials, each `{{task_id, trial, reward, info, traj}}`), with one change: each system
  message's content (the agent policy, the same in all 200 trials) is cut to its first line,
  and the file is indented by one space instead of two.
- `catalog.json`: the OpenAI tools array of the 14 tools in `tau_bench/envs/airline/tools/`
  (each tool's `get_info()`), with `"x-plangate": {{"canon": ["prose"]}}` added to
  `transfer_to_human_agents.summary` and `think.thought`.

Written by `scripts/realworld --tau-bench <checkout> --tau-fixture tests/realworld/tau-bench`
(see docs/realworld.md).
""")
