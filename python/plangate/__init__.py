"""plangate for Python: judge sampled tool-call plans (accept, reject or defer) without a
subprocess. The work is done in Rust (the ``plangate._plangate`` extension) with the GIL
released; these are its public names, with the defaults of the ``plangate`` CLI.

    import plangate
    for record in plangate.score("catalog.json", "samples.jsonl"):
        print(record["task_id"], record["decision"])

In an agent's loop, ``plangate.Gate(catalog)`` pins one epoch and probes its tools
once; ``gate.eval(task)`` then executes one task's calls in it and decides at once
with the tool health known so far (the records ``plangate serve`` answers).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Literal, Mapping, Union

from ._plangate import CatalogError, Gate, PlangateError, Scores, dumps
from ._plangate import eval as _eval

__all__ = [
    "CatalogError",
    "EvalResult",
    "Gate",
    "PlangateError",
    "Scores",
    "dumps",
    "eval",
    "score",
    "score_list",
]

#: A catalog: a path, JSON text, or the parsed document (dict, or a list of tools).
Catalog = Union[str, "os.PathLike[str]", bytes, Mapping[str, Any], list]
#: Samples: a JSONL path, or an iterable of task dicts or JSON lines (str or bytes).
Samples = Union[str, "os.PathLike[str]", Iterable[Union[Mapping[str, Any], str, bytes]]]
#: A threshold: a number or a decimal string with at most 9 places ("0.80").
Ratio = Union[float, int, str]


def score(
    catalog: Catalog,
    samples: Samples,
    *,
    arg_accept: Ratio | None = None,
    arg_reject: Ratio | None = None,
    result_accept: Ratio | None = None,
    result_suspect: Ratio | None = None,
    min_samples: int | None = None,
    seed_compat: Literal["gate", "classify"] | None = None,
    jobs: int | None = None,
    max_line_bytes: int = 64 << 20,
    calibrate: bool = False,
) -> Scores:
    """Decides tasks whose calls carry their observed results, as ``plangate score`` does.

    Returns an iterator of decision records, in input order, each a dict equal to the
    line ``plangate score`` writes for it (``json.loads`` of it). A line or item that is
    not a task comes back as ``{"line": N, "task_id": ..., "error": {"kind": "input",
    "field": ..., "message": ...}}``; blank lines are passed over, but counted in N.

    ``catalog`` is a path, JSON text, or the parsed document; a catalog that cannot be
    used raises :class:`CatalogError` with the message the CLI prints. ``samples`` is a
    JSONL path, or an iterable of task dicts or JSON lines, read lazily: only a few
    chunks of lines are read ahead of the records taken. Thresholds default as the
    CLI's flags do (``arg_accept=0.80`` ...); ``seed_compat`` reproduces the seed's
    code (``--seed-compat``). Scoring runs on ``jobs`` threads (default: one per core)
    with the GIL released; Ctrl-C raises ``KeyboardInterrupt`` between chunks.

    A task dict ``json.dumps`` refuses is its line's error record. If ``samples``
    raises, or yields something that is neither a dict nor a line, the records of the
    items before it come first, then that error, and the iterator is done. The iterator
    is for one caller at a time: advanced while it runs (from another thread, or from
    the generator it reads) it raises ``ValueError``, as a running generator does.

    With ``calibrate=True`` (``plangate score --summary-json`` calibrates likewise),
    each labelled task is also decided at every threshold of the calibration sweep, and
    the iterator's ``calibration`` is the summary's ``calibration`` block over the
    records taken so far (the whole input's once it is done): the AUROC of argument
    agreement and of the naive scorer's, their ROC curves, and what other
    ``arg_reject`` and ``arg_accept`` would have decided. It is ``None`` without
    ``calibrate=True`` or before a labelled task was taken.

    Fields a line carries that plangate does not know are passed over; once the
    iterator is exhausted it raises one ``UserWarning`` per field name, worded as the
    CLI's stderr line (as it does for transcript results placed by a reused call id or
    by position). A misspelling of a field plangate reads is that line's error record.
    """
    return Scores(
        catalog,
        samples,
        arg_accept=arg_accept,
        arg_reject=arg_reject,
        result_accept=result_accept,
        result_suspect=result_suspect,
        min_samples=min_samples,
        seed_compat=seed_compat,
        jobs=jobs,
        max_line_bytes=max_line_bytes,
        calibrate=calibrate,
    )


def score_list(catalog: Catalog, samples: Samples, **options: Any) -> list[dict[str, Any]]:
    """:func:`score`, all records at once in a list."""
    return list(score(catalog, samples, **options))


@dataclass
class EvalResult:
    """What :func:`eval` found.

    ``decisions`` are the records ``plangate eval`` writes (bad lines in their input
    place); ``tool_health`` is its ``--tool-health`` document; ``epoch`` is the epoch
    manifest (``--write-epoch``), which ``eval(..., epoch=result.epoch)`` replays.
    ``retry`` is the defer path's report (``--summary-json``'s ``retry``: rounds, tasks
    retried, calls, and how the deferrals ended by their first reason), or ``None``
    when ``retry_deferred`` was 0. ``calibration`` is ``--summary-json``'s
    ``calibration`` block when tasks carry labels (the AUROC of argument agreement and
    of the naive scorer's, their ROC curves, and what other ``arg_reject`` and
    ``arg_accept`` would have decided), else ``None``.
    """

    decisions: list[dict[str, Any]]
    tool_health: dict[str, Any]
    epoch_id: str
    epoch: dict[str, Any]
    stats: dict[str, Any]
    quarantined: list[str] = field(default_factory=list)
    live_mounts: list[dict[str, Any]] = field(default_factory=list)
    retry: dict[str, Any] | None = None
    calibration: dict[str, Any] | None = None


def eval(  # noqa: A001 - the CLI's command name
    catalog: Catalog,
    samples: Samples,
    *,
    base_dir: str | os.PathLike[str] | None = None,
    epoch: str | os.PathLike[str] | Mapping[str, Any] | None = None,
    quarantine: str | os.PathLike[str] | None = None,
    seed: int = 0,
    probe_runs: int = 2,
    jobs: int | None = None,
    arg_accept: Ratio | None = None,
    arg_reject: Ratio | None = None,
    result_accept: Ratio | None = None,
    result_suspect: Ratio | None = None,
    min_samples: int | None = None,
    fuel: int | None = None,
    memory_mb: int | None = None,
    timeout_ms: int | None = None,
    output_bytes: int | None = None,
    max_line_bytes: int = 64 << 20,
    retry_deferred: int = 0,
) -> EvalResult:
    """A whole run, as ``plangate eval`` makes it: pins an epoch (or replays ``epoch``),
    probes the tools declared deterministic, executes every call of every sample in the
    sandbox, quarantines tools, and decides every task once tool health is known.

    ``catalog`` and ``samples`` are read as by :func:`score`; module and mount paths in
    the catalog are relative to its file, or to ``base_dir`` (default: the current
    directory for a catalog given as text or a dict). ``quarantine`` is an earlier run's
    tool-health file; ``seed``, ``probe_runs``, ``jobs``, the thresholds and the
    per-call limits (``fuel``, ``memory_mb``, ``timeout_ms``, ``output_bytes``) are the
    CLI's flags. ``retry_deferred`` is the defer path's rounds at most (the CLI's
    ``--retry-deferred[=ROUNDS]``; 0, the default, retries nothing): tasks deferred for
    a reason of the epoch or of their tools' results are executed again, each round in
    a fresh epoch with every source pinned, and their records keep the first deferral
    in ``history``; with it on, every task's line is kept in memory for the rounds. A
    run that cannot start raises :class:`PlangateError` (or
    :class:`CatalogError`) with the CLI's message; Ctrl-C stops the workers and raises
    ``KeyboardInterrupt``. Fields plangate does not know are passed over and said once,
    as by :func:`score`.
    """
    run = _eval(
        catalog,
        samples,
        base_dir=base_dir,
        epoch=epoch,
        quarantine=quarantine,
        seed=seed,
        probe_runs=probe_runs,
        jobs=jobs,
        arg_accept=arg_accept,
        arg_reject=arg_reject,
        result_accept=result_accept,
        result_suspect=result_suspect,
        min_samples=min_samples,
        fuel=fuel,
        memory_mb=memory_mb,
        timeout_ms=timeout_ms,
        output_bytes=output_bytes,
        max_line_bytes=max_line_bytes,
        retry_deferred=retry_deferred,
    )
    return EvalResult(**run)
