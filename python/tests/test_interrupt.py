# Ctrl-C ends plangate.score and plangate.eval, whenever it comes: each run reads an
# endless generator in a child process, which gets SIGINT at a random point and must
# raise KeyboardInterrupt and exit. A child that outlives its limit is killed, so a lost
# interrupt fails the test instead of running on after it.
#
# A process started with SIGINT ignored (anything a non-interactive shell starts with
# `&`, such as a test run sent to the background) passes the ignoring on to its
# children, and Python then installs no KeyboardInterrupt handler at all: such a child
# never sees Ctrl-C, whatever plangate does. Each child sets Python's own handler
# first, as an interactive interpreter has it.
import random
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import plangate  # noqa: F401  (the children import the same build)

CHILD = textwrap.dedent("""
    import signal
    signal.signal(signal.SIGINT, signal.default_int_handler)
    import sys, plangate
    mode, catalog, line = sys.argv[1], sys.argv[2], sys.argv[3]
    def endless():
        while True:
            yield line
    print("started", flush=True)
    try:
        if mode == "score":
            for _ in plangate.score(catalog, endless()):
                pass
        else:
            plangate.eval(catalog, endless())
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        sys.exit(3)
    print("ended without an interrupt", flush=True)
""")

# How long a child may take to stop after SIGINT: a chunk of lines, many times over,
# on a loaded machine. A lost interrupt runs forever.
LIMIT_S = 60


def interrupt_at(delay, mode, catalog, line):
    """Runs one child, interrupts it `delay` seconds after it started, and returns its
    exit code and output; a child still running at the limit is killed."""
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, mode, str(catalog), line],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert proc.stdout.readline().strip() == "started"
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=LIMIT_S)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{mode}: SIGINT {delay:.3f} s after the start was lost: the child "
                        f"ran on for {LIMIT_S} s")
        return proc.returncode, out, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def runs(seed, n, mode, catalog, line):
    rng = random.Random(seed)
    for _ in range(n):
        # Early (while the first chunks are read and the workers start) as often as late.
        delay = rng.choice([rng.uniform(0, 0.05), rng.uniform(0, 0.6)])
        code, out, err = interrupt_at(delay, mode, catalog, line)
        assert (code, out.split()) == (3, ["interrupted"]), (delay, out, err)


def test_ctrl_c_always_stops_a_long_score(repo):
    line = (repo / "examples/score/samples.jsonl").read_text().splitlines()[0]
    runs(17, 40, "score", repo / "examples/score/catalog.json", line)


def test_ctrl_c_always_stops_a_long_eval(repo):
    tool = repo / "sandbox-tools/target/wasm32-wasip1/release/get_user.wasm"
    if not tool.exists():
        pytest.fail(f"{tool} is missing: run scripts/build-tools first")
    line = (repo / "tests/e2e/cases/eval/plans.jsonl").read_text().splitlines()[0]
    runs(29, 12, "eval", repo / "examples/seed-world/catalog.json", line)
