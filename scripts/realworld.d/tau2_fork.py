#!/usr/bin/env python3
# Published agent logs in tau2-bench's results format, from forks of tau2-bench that
# nobody here wrote: cut to the tasks with a `not found` answer (every trial of them),
# with a catalog made from the domain's tools.py and a NOTICE.md, into tests/realworld/.
# Two sets: students' own domains with gemma-3-27b-it (one trial a task), and grok
# models on tau2's airline domain (several trials a task).
"""tau2-bench fork logs: the cut, the catalogs, and the notice.

    scripts/realworld.d/tau2_fork.py --set gemma --repo GIT_DIR --out tests/realworld/tau2-gemma
    scripts/realworld.d/tau2_fork.py --set grok --repo GIT_DIR --out tests/realworld/tau2-grok

GIT_DIR is a clone of the set's repository with its branches (a bare clone is enough):
https://github.com/oscaralvaro/tau2-bench for `gemma`, https://github.com/blakeelias/tau2-bench
for `grok`. Nothing is imported from it; its files are read with `git show`.
"""

import argparse
import ast
import json
import os
import re
import subprocess
import sys

# Each set: the repository, its results files as (branch, domain, results file on that
# branch, fixture name), and the notice's words. `gemma`: the four results files whose
# tools answer `not found` in English, which tau2's convention reads as a miss. `grok`:
# the results files of the fork's `addendum` branch that hold a `not found` answer (the
# fork's larger runs, of 4 MiB and more, are not in its snapshot).
SETS = {
    "gemma": {
        "source": "https://github.com/oscaralvaro/tau2-bench",
        "files": [
            ("avance_joaquin_garbich", "fishtrader_garbich",
             "data/simulations/2026-04-04T19:21:40.388902_fishtrader_garbich_llm_agent_gemma-3-27b-it"
             "_user_simulator_gemma-3-12b-it.json", "fishtrader"),
            ("avance_diego_rivera", "estaciondeservicio_Rivera",
             "data/simulations/simulacion_estaciondeservicio_Rivera.json", "estaciondeservicio"),
            ("avance_Joaquin_Cachay_Cornejo", "restaurante_joaquin_cachay",
             "data/simulations/resultados_restaurante_joaquin_cachay_full_throttled.json", "restaurante"),
            ("avance_jorge_calle", "hotel_calle",
             "data/simulations/hotel_calle_full_10_tasks.json", "hotel"),
        ],
    },
    "grok": {
        "source": "https://github.com/blakeelias/tau2-bench",
        "files": [
            ("addendum", "airline",
             "data/simulations/2025-10-06T06:45:09.212115_airline_llm_agent_grok-4-fast-reasoning"
             "_user_simulator_grok-4-fast-reasoning.json", "grok-4-fast-reasoning"),
            ("addendum", "airline",
             "data/simulations/2025-10-12T22:50:14.798563_airline_llm_agent_grok-3"
             "_user_simulator_grok-3.json", "grok-3-oct12"),
            ("addendum", "airline",
             "data/simulations/2025-10-13T00:01:41.624853_airline_llm_agent_grok-3"
             "_user_simulator_grok-3.json", "grok-3-oct13"),
        ],
    },
}


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True).stdout


def show(repo, branch, path):
    return git(repo, "show", f"refs/heads/{branch}:{path}")


def commit_of(repo, branch):
    return git(repo, "rev-parse", f"refs/heads/{branch}").decode().strip()


def has_miss(sim):
    """Whether a tool answered the simulation's agent with an error that says `not found`
    (tau2's own convention for a miss)."""
    return any(
        m.get("role") == "tool" and m.get("error") and "not found" in str(m.get("content"))
        for m in sim.get("messages") or []
    )


def cut(results):
    """The results object with every trial of each task that holds a `not found` answer,
    and without the task definitions (ground truth plangate does not read). A task is
    kept whole: its trials are its samples, so dropping one would change its verdict."""
    missed = {s["task_id"] for s in results["simulations"] if has_miss(s)}
    kept = [s for s in results["simulations"] if s["task_id"] in missed]
    out = {k: v for k, v in results.items() if k not in ("tasks", "simulations")}
    out["tasks"] = []
    out["simulations"] = kept
    return out, len(results["simulations"]), len(kept), len(missed)


# Python annotations as JSON Schema types, the way tau2 (pydantic) writes a tool's
# parameters: a model class or a dict is an object, a list an array.
SCALARS = {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}


def schema_of(node):
    if node is None:
        return {}
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        left, right = schema_of(node.left), schema_of(node.right)
        if left == right or not right:
            return left
        if not left:
            return right
        return {"anyOf": [left, right]}
    if isinstance(node, ast.Constant) and node.value is None:
        return {}
    if isinstance(node, ast.Name):
        if node.id in SCALARS:
            return {"type": SCALARS[node.id]}
        if node.id in ("list", "List"):
            return {"type": "array"}
        if node.id == "Any":
            return {}
        return {"type": "object"}
    if isinstance(node, ast.Subscript):
        head = node.value.id if isinstance(node.value, ast.Name) else ""
        if head == "Optional":
            return schema_of(node.slice)
        if head in ("List", "list"):
            return {"type": "array", "items": schema_of(node.slice)}
        if head == "Literal":
            elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            return {"enum": [e.value for e in elts]}
        return {"type": "object"}
    return {}


def tools_of(source):
    """Each `@is_tool` method of a tau2 toolkit as an OpenAI function tool."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.FunctionDef):
            continue
        if not any("is_tool" in ast.unparse(d) for d in node.decorator_list):
            continue
        args = [a for a in node.args.args if a.arg != "self"]
        required = args[: len(args) - len(node.args.defaults)]
        props = {}
        for a in args:
            props[a.arg] = schema_of(a.annotation)
        doc = (ast.get_docstring(node) or "").strip().split("\n\n")[0]
        out.append({
            "type": "function",
            "function": {
                "name": node.name,
                "description": " ".join(doc.split()),
                "parameters": {
                    "type": "object",
                    "properties": props,
                    "required": [a.arg for a in required],
                },
            },
        })
    return out


def write_json(path, value):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(value, f, ensure_ascii=False, indent=1)
        f.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--set", required=True, choices=sorted(SETS), help="which published set")
    ap.add_argument("--repo", required=True, help="a clone of the set's repository (git dir)")
    ap.add_argument("--out", required=True, help="the fixture folder to write")
    args = ap.parse_args()
    chosen = SETS[args.set]
    os.makedirs(args.out, exist_ok=True)
    lines, catalogs = [], {}
    published = 0
    for branch, domain, path, name in chosen["files"]:
        commit = commit_of(args.repo, branch)
        text = show(args.repo, branch, path)
        published += len(text)
        results = json.loads(text)
        small, total, kept, tasks = cut(results)
        write_json(os.path.join(args.out, f"{name}.json"), small)
        catalog = CATALOG_NAME[args.set].format(name=name, domain=domain)
        tools = tools_of(show(args.repo, branch, f"src/tau2/domains/{domain}/tools.py").decode("utf-8-sig"))
        write_json(os.path.join(args.out, catalog), tools)
        model = results["info"]["agent_info"]["llm"]
        line = FILE_LINE[args.set].format(
            name=name, path=path, branch=branch, commit=commit, domain=domain, model=model,
            kept=kept, total=total, tasks="task" if tasks == 1 else f"{tasks} tasks", trials=results["info"].get("num_trials"))
        if catalog not in catalogs:
            catalogs[catalog] = len(tools)
            line += (
                f"\n  `{catalog}`: the {len(tools)} `@is_tool` methods of "
                f"`src/tau2/domains/{domain}/tools.py` there, as OpenAI function tools "
                "(parameter types from the annotations, the docstring's first paragraph as "
                "description)."
            )
        lines.append(line)
        print(f"{name}: {kept}/{total} simulations ({tasks} tasks), {len(tools)} tools", file=sys.stderr)
    license_text = show(args.repo, chosen["files"][0][0], "LICENSE")
    with open(os.path.join(args.out, "LICENSE-MIT"), "wb") as f:
        f.write(license_text)
    notice = NOTICE[args.set].format(
        source=chosen["source"], files="\n".join(lines), kb=f"{published // 1000:,}")
    with open(os.path.join(args.out, "NOTICE.md"), "w", encoding="utf-8") as f:
        f.write(notice)


# How each set names its catalogs: the gemma set has a domain per file, the grok set one
# domain for all.
CATALOG_NAME = {"gemma": "{name}-catalog.json", "grok": "{domain}-catalog.json"}

FILE_LINE = {
    "gemma": (
        "- `{name}.json`: `{path}` on branch `{branch}` (commit `{commit}`), domain "
        "`{domain}`, agent `{model}`: {kept} of its {total} simulations (those with a "
        "`not found` answer), `tasks` emptied."
    ),
    "grok": (
        "- `{name}.json`: `{path}` on branch `{branch}` (commit `{commit}`), domain "
        "`{domain}`, agent `{model}` (`num_trials` {trials}): {kept} of its {total} "
        "simulations, every trial of the {tasks} with a `not found` answer, `tasks` "
        "emptied."
    ),
}

NOTICE = {"gemma": """<!-- Why this file exists: this folder holds data copied from a public tau2-bench fork;
this says where from, under which license, and where and why it was cut.
scripts/realworld.d/tau2_fork.py writes it. -->

# tests/realworld/tau2-gemma: sources, license and the cut

From {source}, a fork of tau2-bench where students added their own domains (Spanish and
English customer-service worlds) and published the results of running them: tau2-bench
results objects, one per domain, each simulation one trial of one task (`num_trials`
1), the agent `gemini/gemma-3-27b-it` and the user simulator `gemma-3-12b-it`. The
repository is under the MIT License (its `LICENSE`, copied in `LICENSE-MIT`:
"Copyright (c) 2025 Sierra Research"); the results files carry no other notice.

{files}

**Where and why it was cut.** The four files hold {kb} KB; the cut keeps each file's
`timestamp` and `info` (the agent's model, the domain's policy) whole and the
simulations where a tool answered the agent with an error that says `not found`
(`"error": true` on a tool message), every message of them as published, so that every
such answer is in the cut with everything said before it, along with the other errors
of those simulations. The simulations dropped have no `not found` answer, so no call in
them can be an invented reference, and each simulation is its own task's only trial, so
dropping one changes no other task's samples. `tasks` (each task's ground-truth actions and the user simulator's
instructions) is emptied: plangate does not read it, and it is not part of any
conversation. The files are indented by one space.

Written by `scripts/realworld.d/tau2_fork.py --set gemma --repo <clone> --out tests/realworld/tau2-gemma`
(see docs/realworld.md).
""", "grok": """<!-- Why this file exists: this folder holds data copied from a public tau2-bench fork;
this says where from, under which license, and where and why it was cut.
scripts/realworld.d/tau2_fork.py writes it. -->

# tests/realworld/tau2-grok: sources, license and the cut

From {source}, a fork of tau2-bench where its author ran xAI's grok models on tau2's
own airline domain, the same model as agent and as user simulator, and published the
results objects (`data/simulations/`) for a write-up. Each file names its agent's model
(`info.agent_info.llm`); a task's trials are its simulations with the same `task_id`.
Some runs stopped early, so a file holds fewer trials than its `num_trials` says. The
repository is under the MIT License (its `LICENSE`, copied in `LICENSE-MIT`:
"Copyright (c) 2025 Sierra Research"); the results files carry no other notice.

{files}

**Where and why it was cut.** The three files hold {kb} KB; the cut keeps each file's
`timestamp` and `info` whole (the agent's model, and in `info.environment_info` the
airline policy the agent was given as its system prompt), and every trial of each task
in which a tool answered the agent with an error that says `not found` (`"error": true`
on a tool message), every message of them as published, so that every such answer is in
the cut with everything said before it. A task is kept whole because its trials are its
samples: dropping one would change what the gate decides for it. The tasks dropped have
no `not found` answer, so no call in them can be an invented reference. `tasks` (each
task's ground-truth actions and the user simulator's instructions) is emptied: plangate
does not read it, and it is not part of any conversation. The files are indented by one
space. The fork's other results files on that branch hold no `not found` answer, and
its largest ones (of 4 MiB and more, with four trials of every task) are not in the
snapshot that could be fetched.

Written by `scripts/realworld.d/tau2_fork.py --set grok --repo <clone> --out tests/realworld/tau2-grok`
(see docs/realworld.md).
"""}

if __name__ == "__main__":
    sys.exit(main())
