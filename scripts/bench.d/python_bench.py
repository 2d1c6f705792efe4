#!/usr/bin/env python3
# Measures `plangate.score` from a Python list of task dicts against `plangate score` on
# the same tasks as a file, in one run on one machine, and prints the ratio beside the
# goal (within 2x of the CLI). Both sides must decide alike, or the timing compared two
# different jobs.
"""python_bench.py --plangate BIN [--count N] [--dir DIR]

Run with a Python that has the package installed (release build):
    python3 -m venv target/pyenv-release && target/pyenv-release/bin/pip install ./python
    cargo build --release -p plangate
    target/pyenv-release/bin/python scripts/bench.d/python_bench.py \
        --plangate target/release/plangate
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

import plangate

HERE = os.path.dirname(os.path.abspath(__file__))
GOAL = 2.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plangate", required=True, help="the release CLI binary")
    ap.add_argument("--count", type=int, default=100_000)
    ap.add_argument("--dir", default=os.path.join(HERE, "..", "..", "target", "bench"))
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    catalog = os.path.join(a.dir, "py-catalog.json")
    tasks = os.path.join(a.dir, "py-tasks.jsonl")
    out = os.path.join(a.dir, "py-cli-decisions.jsonl")
    with open(tasks, "w") as f:
        subprocess.run([sys.executable, os.path.join(HERE, "gen_tasks.py"), "--format", "plangate",
                        "--count", str(a.count), "--catalog-out", catalog], stdout=f, check=True)
    with open(tasks) as f:
        dicts = [json.loads(line) for line in f]

    cli_times, py_times = [], []
    # CPU seconds beside the wall times: the CLI's whole process, and this process
    # while plangate.score ran, with the share of the thread that holds the GIL.
    cli_cpu, py_cpu, gil_cpu = [], [], []
    records = None

    def cpu(who):
        r = resource.getrusage(who)
        return r.ru_utime + r.ru_stime

    # Alternating runs, median of three each, so a neighbour's burst hits both sides.
    for _ in range(3):
        # The previous run's decisions are removed off the clock, as its records are
        # below: replacing an earlier output is not scoring (scripts/bench does the same).
        if os.path.exists(out):
            os.remove(out)
        c0 = cpu(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        done = subprocess.run([a.plangate, "score", "--catalog", catalog, "--samples", tasks,
                               "--out", out], stderr=subprocess.DEVNULL)
        cli_times.append(time.perf_counter() - t)
        cli_cpu.append(cpu(resource.RUSAGE_CHILDREN) - c0)
        assert done.returncode in (0, 1), done.returncode
        # The previous run's records are freed here, off the clock: freeing them is not
        # scoring (the CLI's side never frees the records it wrote).
        records = None
        c0, g0 = cpu(resource.RUSAGE_SELF), time.thread_time()
        t = time.perf_counter()
        records = plangate.score_list(catalog, dicts)
        py_times.append(time.perf_counter() - t)
        py_cpu.append(cpu(resource.RUSAGE_SELF) - c0)
        gil_cpu.append(time.thread_time() - g0)

    with open(out) as f:
        want = [json.loads(line) for line in f]
    assert records == want, "plangate.score and plangate score decided differently"
    cli, py = statistics.median(cli_times), statistics.median(py_times)
    ratio = py / cli
    verdict = "met" if ratio <= GOAL else "NOT MET"
    print(f"plangate.score on {a.count} task dicts: {py:.2f} s; plangate score on the same "
          f"tasks as a file: {cli:.2f} s; ratio {ratio:.2f}x (goal: within {GOAL:g}x): {verdict}")
    med = statistics.median
    print(f"CPU seconds: plangate score {med(cli_cpu):.2f}; plangate.score {med(py_cpu):.2f}, "
          f"of which the thread holding the GIL {med(gil_cpu):.2f}; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"python_bench: all {len(want)} records equal", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
