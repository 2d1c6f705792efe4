#!/usr/bin/env python3
"""Writes N task lines to stdout: the lines of FILE, repeated as often as needed, each
repeat with fresh task ids (`<id>` becomes `r<k>-<id>`), so a large batch is streamed
without being stored. Used for the memory and merge figures of scripts/bench."""
import re
import sys

path, n = sys.argv[1], int(sys.argv[2])
lines = [l for l in open(path, encoding="utf-8") if l.strip()]
task_id = re.compile(r'("task_id":\s*")')
w = sys.stdout.write
for i in range(n):
    r, k = divmod(i, len(lines))
    w(task_id.sub(lambda m: m.group(1) + f"r{r}-", lines[k], count=1) if r else lines[k])
