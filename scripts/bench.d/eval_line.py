#!/usr/bin/env python3
"""Turns `plangate eval --summary-json` into scripts/bench's row 4: throughput and where
the time went (probe, execute, classify), with the peak RSS time measured."""
import json
import sys

s = json.load(open(sys.argv[1]))
t, st = s["timings_ms"], s["stats"]
secs = t["total"] / 1000
calls = st["calls_executed"] + st["probe_calls"]
print(
    f'{st["tasks"] / secs:.0f} tasks/s, {calls / secs:.0f} calls/s: {calls} calls in {secs:.2f} s '
    f'(probe {t["probe"]:.0f} ms, execute {t["execute"]:.0f} ms, classify and write '
    f'{t["classify_and_write"]:.0f} ms, setup {t["setup"]:.0f} ms); peak RSS {int(sys.argv[2]) // 1024} MB'
)
