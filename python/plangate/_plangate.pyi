# Types of the native module (python/src, PyO3): the public names are re-exported and
# documented by plangate/__init__.py.
import os
from typing import Any, Iterable, Iterator, Mapping

class PlangateError(Exception): ...
class CatalogError(PlangateError): ...

class Scores(Iterator[dict[str, Any]]):
    def __init__(
        self,
        catalog: str | os.PathLike[str] | bytes | Mapping[str, Any] | list[Any],
        samples: str | os.PathLike[str] | Iterable[Mapping[str, Any] | str | bytes],
        *,
        arg_accept: float | int | str | None = ...,
        arg_reject: float | int | str | None = ...,
        result_accept: float | int | str | None = ...,
        result_suspect: float | int | str | None = ...,
        min_samples: int | None = ...,
        seed_compat: str | None = ...,
        jobs: int | None = ...,
        max_line_bytes: int = ...,
        calibrate: bool = ...,
    ) -> None: ...
    @property
    def calibration(self) -> dict[str, Any] | None: ...
    def __iter__(self) -> Scores: ...
    def __next__(self) -> dict[str, Any]: ...
    def __repr__(self) -> str: ...

class Gate:
    def __init__(
        self,
        catalog: str | os.PathLike[str] | bytes | Mapping[str, Any] | list[Any],
        *,
        base_dir: str | os.PathLike[str] | None = ...,
        epoch: str | os.PathLike[str] | Mapping[str, Any] | None = ...,
        quarantine: str | os.PathLike[str] | None = ...,
        seed: int = ...,
        probe_runs: int = ...,
        jobs: int | None = ...,
        arg_accept: float | int | str | None = ...,
        arg_reject: float | int | str | None = ...,
        result_accept: float | int | str | None = ...,
        result_suspect: float | int | str | None = ...,
        min_samples: int | None = ...,
        fuel: int | None = ...,
        memory_mb: int | None = ...,
        timeout_ms: int | None = ...,
        output_bytes: int | None = ...,
        remember_calls: int = ...,
    ) -> None: ...
    @property
    def epoch_id(self) -> str: ...
    def eval(self, task: Mapping[str, Any] | str | bytes) -> dict[str, Any]: ...
    def decide(self, task: Mapping[str, Any] | str | bytes) -> dict[str, Any]: ...
    def health(self) -> dict[str, Any]: ...

def dumps(obj: Any) -> str: ...
def eval(
    catalog: str | os.PathLike[str] | bytes | Mapping[str, Any] | list[Any],
    samples: str | os.PathLike[str] | Iterable[Mapping[str, Any] | str | bytes],
    *,
    base_dir: str | os.PathLike[str] | None = ...,
    epoch: str | os.PathLike[str] | Mapping[str, Any] | None = ...,
    quarantine: str | os.PathLike[str] | None = ...,
    seed: int = ...,
    probe_runs: int = ...,
    jobs: int | None = ...,
    arg_accept: float | int | str | None = ...,
    arg_reject: float | int | str | None = ...,
    result_accept: float | int | str | None = ...,
    result_suspect: float | int | str | None = ...,
    min_samples: int | None = ...,
    fuel: int | None = ...,
    memory_mb: int | None = ...,
    timeout_ms: int | None = ...,
    output_bytes: int | None = ...,
    max_line_bytes: int = ...,
    retry_deferred: int = ...,
) -> dict[str, Any]: ...
