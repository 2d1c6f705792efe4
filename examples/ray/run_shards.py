#!/usr/bin/env python3
"""Runs one `plangate eval` batch as M shards, each a Ray task, on a Ray cluster (a local
one by default: `ray.init()` on this machine), then merges them with `plangate merge`.

Ray schedules; plangate decides. Every shard replays one epoch, pinned once here with
`plangate epoch`, and leaves its evidence beside its --out for the merge.

    python examples/ray/run_shards.py --catalog examples/seed-world/catalog.json \
        --samples batch.jsonl --shards 3 --workers 2 --out decisions.jsonl
"""
import argparse
import os
import pathlib
import subprocess
import sys

import ray

# A shard's exit code: decided (0), something rejected (1), a bad line among its inputs
# (2). Anything else means the shard did not finish.
FINISHED = {0, 1, 2}


@ray.remote(num_cpus=1)
def run_shard(plangate, catalog, samples, epoch, k, m, workdir, jobs):
    """`plangate eval --shard k/m`; returns its --out path, exit code and stderr."""
    out = os.path.join(workdir, f"shard-{k}-of-{m}.jsonl")
    cmd = [
        plangate, "eval", "--catalog", catalog, "--samples", samples,
        "--epoch", epoch, "--shard", f"{k}/{m}", "--out", out, "--jobs", str(jobs),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True)
    return out, done.returncode, done.stderr


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--plangate", default="plangate", help="the plangate binary")
    p.add_argument("--catalog", required=True)
    p.add_argument("--samples", required=True)
    p.add_argument("--out", required=True, help="the merged decisions")
    p.add_argument("--shards", type=int, default=3)
    p.add_argument("--workers", type=int, default=2, help="Ray CPUs for a local cluster")
    p.add_argument("--jobs", type=int, default=1, help="plangate threads per shard")
    p.add_argument("--workdir", default=None, help="where shards write (default: beside --out)")
    p.add_argument("--address", default=None, help="a running Ray cluster (default: start one)")
    a = p.parse_args()

    out = pathlib.Path(a.out).resolve()
    workdir = pathlib.Path(a.workdir or out.parent / (out.name + ".shards")).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    catalog, samples = str(pathlib.Path(a.catalog).resolve()), str(pathlib.Path(a.samples).resolve())

    # One epoch for every shard, pinned before any of them starts.
    epoch = str(workdir / "epoch.json")
    subprocess.run([a.plangate, "epoch", "--catalog", catalog, "--out", epoch], check=True)

    if a.address:
        ray.init(address=a.address)
    else:
        ray.init(num_cpus=a.workers, include_dashboard=False)
    futures = [
        run_shard.remote(a.plangate, catalog, samples, epoch, k, a.shards, str(workdir), a.jobs)
        for k in range(1, a.shards + 1)
    ]
    results = ray.get(futures)
    ray.shutdown()

    failed = [(o, c, e) for o, c, e in results if c not in FINISHED]
    for o, c, e in failed:
        print(f"run_shards: {o}: exit {c}\n{e}", file=sys.stderr)
    if failed:
        return 3
    merged = subprocess.run(
        [a.plangate, "merge", "--out", str(out),
         "--summary-json", str(workdir / "summary.json"),
         "--tool-health", str(workdir / "tool-health.json")]
        + [o for o, _, _ in results]
    )
    return merged.returncode


if __name__ == "__main__":
    sys.exit(main())
