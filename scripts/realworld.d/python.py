#!/usr/bin/env python3
# plangate.score on data nobody here wrote: every BFCL entry that `scripts/realworld`
# wrote (its run folder under ~/.cache/plangate/realworld), each of its task formats
# with the catalog shape it goes with, the tasks handed over as dicts and the catalog as
# a path or as the parsed document, held equal to `plangate score` on the same files.
# Prints how many entries agree; exits 1 if any does not.
#   PLANGATE=target/release/plangate python scripts/realworld.d/python.py
import json
import os
import subprocess
import sys
import tempfile
import warnings

import plangate

PAIRS = [  # (catalog shape, task format)
    ("bfcl", "native"),
    ("openai_responses", "openai"),
    ("anthropic", "anthropic"),
    ("anthropic_wrapped", "anthropic"),
]


def cli(plangate_bin, catalog, samples, out):
    done = subprocess.run([plangate_bin, "score", "--catalog", catalog, "--samples", samples,
                           "--out", out], stderr=subprocess.DEVNULL)
    # Exit 1 (a reject) is a verdict, not a failure.
    if done.returncode not in (0, 1):
        raise SystemExit(f"python: plangate score failed on {samples} ({done.returncode})")
    with open(out) as f:
        return [json.loads(line) for line in f]


def main():
    plangate_bin = os.environ.get("PLANGATE", "plangate")
    root = os.environ.get("REALWORLD_RUN",
                          os.path.expanduser("~/.cache/plangate/realworld/run/bfcl"))
    if not os.path.isdir(root):
        print(f"python: no {root} (run scripts/realworld first)", file=sys.stderr)
        return 2
    # The catalogs' readings (BFCL's "dict" read as "object", ...) are the CLI's
    # warnings too; here only the records are compared.
    warnings.simplefilter("ignore")
    entries = same = runs = tasks = 0
    differ = []
    with tempfile.TemporaryDirectory() as work:
        out = os.path.join(work, "decisions.jsonl")
        for name in sorted(os.listdir(root)):
            d = os.path.join(root, name)
            pairs = [(os.path.join(d, f"catalog.{c}.json"), os.path.join(d, f"tasks.{t}.jsonl"))
                     for c, t in PAIRS]
            pairs = [(c, t) for c, t in pairs if os.path.isfile(c) and os.path.isfile(t)]
            if not pairs:
                continue
            entries += 1
            ok = True
            for i, (catalog, samples) in enumerate(pairs):
                want = cli(plangate_bin, catalog, samples, out)
                with open(samples) as f:
                    dicts = [json.loads(line) for line in f if line.strip()]
                with open(catalog) as f:
                    document = json.load(f)
                # Every other run hands the catalog over parsed rather than as a path.
                given = document if i % 2 else catalog
                got = plangate.score_list(given, dicts)
                runs += 1
                tasks += len(dicts)
                # Type for type and in key order (`==` takes 1 for 1.0): the records
                # are the CLI's text, read by json.loads.
                if json.dumps(got) != json.dumps(want):
                    ok = False
                    differ.append(f"{samples} with {os.path.basename(catalog)}")
            same += ok
    for d in differ[:10]:
        print(f"python: plangate.score differs from plangate score: {d}", file=sys.stderr)
    print(f"python: {entries} BFCL entries, {runs} catalog and task pairs ({tasks} tasks): "
          f"plangate.score equals plangate score for {same} entries, differs for {entries - same}")
    return 0 if entries and same == entries else 1


if __name__ == "__main__":
    sys.exit(main())
