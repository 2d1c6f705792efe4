#!/usr/bin/env python3
"""Turns `plangate demo --json` into scripts/bench's row 9: the defer path's wall time,
as a share of the rest of the same run, against the share of calls it adds (executed or
reused) to the first epoch's. Prints the measured cell, a tab, then met / NOT MET."""
import json
import sys

p = json.load(open(sys.argv[1]))["retry_price"]
wall, calls = p["wall_share"], p["calls_share"]
print(
    f'+{wall * 100:.1f}% wall time ({p["retry_wall_s"]:.2f} s on {p["wall_without_retry_s"]:.2f} s) '
    f'for +{calls * 100:.1f}% calls ({p["retry_calls"]} on {p["first_epoch_calls"]}; '
    f'{p["executed_share"] * 100:.1f}% executed, the rest reused)'
    "\t" + ("met" if wall < calls else "**NOT MET**")
)
