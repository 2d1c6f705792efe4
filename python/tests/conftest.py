# Fixtures the package's tests share: the checkout, the `plangate` binary they compare
# against (the one cargo built in this target dir; built here if missing), and a helper
# that runs it and reads its JSONL.
import json
import os
import pathlib
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


def _target_dir():
    return pathlib.Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))


@pytest.fixture(scope="session")
def repo():
    return REPO


@pytest.fixture(scope="session")
def plangate_bin():
    """The CLI: $PLANGATE_BIN, else the debug binary `cargo test --workspace` built."""
    given = os.environ.get("PLANGATE_BIN")
    if given:
        return given
    binary = _target_dir() / "debug" / "plangate"
    if not binary.exists():
        subprocess.run(["cargo", "build", "-q", "-p", "plangate"], cwd=REPO, check=True)
    return str(binary)


@pytest.fixture(scope="session")
def cli(plangate_bin):
    """Runs `plangate ARGS...`: (exit code, stdout records, stderr)."""

    def run(*args, stdin=None):
        out = subprocess.run(
            [plangate_bin, *map(str, args)], capture_output=True, text=True, input=stdin
        )
        records = [json.loads(line) for line in out.stdout.splitlines()]
        return out.returncode, records, out.stderr

    return run
