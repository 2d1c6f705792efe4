#!/usr/bin/env python3
"""Writes one of scripts/bench's hostile-size inputs (row 6): a catalog whose one tool
has N properties, or a samples line with N distinct samples, or one whose arguments are
an object of N keys. Usage: hostile_sizes.py KIND N DIR -> writes DIR/KIND-N.catalog.json
and DIR/KIND-N.jsonl."""
import json
import sys

kind, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
base = f"{out}/{kind}-{n}"
tool = {"name": "echo", "deterministic": True, "verified": True}
call = {"tool": "echo", "arguments": {"q": 1}, "result": 1}
samples = [{"calls": [call]}] * 5
if kind == "properties":
    tool["parameters"] = {
        "type": "object",
        "properties": {f"p{i}": {"type": "string", "description": "x"} for i in range(n)},
        "required": [f"p{i}" for i in range(0, n, 10)],
    }
elif kind == "samples":
    samples = [{"calls": [{"tool": "echo", "arguments": {"q": i}, "result": i}]} for i in range(n)]
elif kind == "keys":
    args = {f"k{i}": i for i in range(n)}
    samples = [{"calls": [{"tool": "echo", "arguments": args, "result": 1}]}] * 5
else:
    sys.exit(f"unknown kind {kind}")
json.dump({"tools": [tool]}, open(f"{base}.catalog.json", "w"))
with open(f"{base}.jsonl", "w") as f:
    f.write(json.dumps({"task_id": "t", "samples": samples}) + "\n")
