#!/usr/bin/env python3
# The README's Python example, runnable: scores examples/score with the `plangate`
# package (pip install ./python) from a path, then from task dicts built in Python.
"""Run from the checkout: python3 examples/python/score.py"""
import json
import pathlib

import plangate

here = pathlib.Path(__file__).resolve().parent.parent / "score"
catalog, samples = here / "catalog.json", here / "samples.jsonl"

for record in plangate.score(catalog, samples):
    print(record["task_id"], record["decision"], ", ".join(record["reasons"]))

# The same tasks as Python objects, with a stricter threshold: an eval pipeline's
# in-memory samples need no file.
tasks = [json.loads(line) for line in samples.read_text().splitlines() if line.strip()]
strict = plangate.score_list(json.loads(catalog.read_text()), tasks, arg_accept=0.9)
print({r["task_id"]: r["decision"] for r in strict})
