#!/usr/bin/env python3
# A second set of published agent logs, from another benchmark's format and another
# model than the tau-bench fixture: tau2-bench results that students published in the
# oscaralvaro/tau2-bench fork (gemma-3-27b-it as the agent, one domain per branch). This
# cuts them to the simulations with a `not found` answer, makes each domain's catalog from its
# tools.py, and writes tests/realworld/tau2-gemma/ with its NOTICE.md.
"""tau2-bench fork logs: the cut, the catalogs, and the notice.

    scripts/realworld.d/tau2_fork.py --repo GIT_DIR --out tests/realworld/tau2-gemma

GIT_DIR is a clone of https://github.com/oscaralvaro/tau2-bench with its branches (a bare
clone is enough); nothing is imported from it, its files are read with `git show`.
"""

import argparse
import ast
import json
import os
import re
import subprocess
import sys

SOURCE = "https://github.com/oscaralvaro/tau2-bench"

# (branch, domain, results file on that branch, fixture name): the four results files
# whose tools answer `not found` in English, which tau2's convention reads as a miss.
FILES = [
    ("avance_joaquin_garbich", "fishtrader_garbich",
     "data/simulations/2026-04-04T19:21:40.388902_fishtrader_garbich_llm_agent_gemma-3-27b-it"
     "_user_simulator_gemma-3-12b-it.json", "fishtrader"),
    ("avance_diego_rivera", "estaciondeservicio_Rivera",
     "data/simulations/simulacion_estaciondeservicio_Rivera.json", "estaciondeservicio"),
    ("avance_Joaquin_Cachay_Cornejo", "restaurante_joaquin_cachay",
     "data/simulations/resultados_restaurante_joaquin_cachay_full_throttled.json", "restaurante"),
    ("avance_jorge_calle", "hotel_calle",
     "data/simulations/hotel_calle_full_10_tasks.json", "hotel"),
]


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
    """The results object with only the simulations that hold a `not found` answer, and
    without the task definitions (ground truth plangate does not read)."""
    kept = [s for s in results["simulations"] if has_miss(s)]
    out = {k: v for k, v in results.items() if k not in ("tasks", "simulations")}
    out["tasks"] = []
    out["simulations"] = kept
    return out, len(results["simulations"]), len(kept)


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
    ap.add_argument("--repo", required=True, help="a clone of oscaralvaro/tau2-bench (git dir)")
    ap.add_argument("--out", required=True, help="the fixture folder to write")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    lines = []
    published = 0
    for branch, domain, path, name in FILES:
        commit = commit_of(args.repo, branch)
        text = show(args.repo, branch, path)
        published += len(text)
        results = json.loads(text)
        small, total, kept = cut(results)
        write_json(os.path.join(args.out, f"{name}.json"), small)
        tools = tools_of(show(args.repo, branch, f"src/tau2/domains/{domain}/tools.py").decode("utf-8-sig"))
        write_json(os.path.join(args.out, f"{name}-catalog.json"), tools)
        model = results["info"]["agent_info"]["llm"]
        lines.append(
            f"- `{name}.json`: `{path}` on branch `{branch}` (commit `{commit}`), domain "
            f"`{domain}`, agent `{model}`: {kept} of its {total} simulations (those with a "
            f"`not found` answer), `tasks` emptied.\n  `{name}-catalog.json`: the {len(tools)} "
            f"`@is_tool` methods of `src/tau2/domains/{domain}/tools.py` there, as OpenAI "
            "function tools (parameter types from the annotations, the docstring's first "
            "paragraph as description)."
        )
        print(f"{name}: {kept}/{total} simulations, {len(tools)} tools", file=sys.stderr)
    license_text = show(args.repo, FILES[0][0], "LICENSE")
    with open(os.path.join(args.out, "LICENSE-MIT"), "wb") as f:
        f.write(license_text)
    notice = NOTICE.format(source=SOURCE, files="\n".join(lines), kb=f"{published // 1000:,}")
    with open(os.path.join(args.out, "NOTICE.md"), "w", encoding="utf-8") as f:
        f.write(notice)


NOTICE = """<!-- Why this file exists: this folder holds data copied from a public tau2-bench fork;
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

Written by `scripts/realworld.d/tau2_fork.py --repo <clone> --out tests/realworld/tau2-gemma`
(see docs/realworld.md).
"""

if __name__ == "__main__":
    sys.exit(main())
