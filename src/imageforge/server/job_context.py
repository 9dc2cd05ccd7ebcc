"""What a job receives and returns: the `JobContext` it may use, and the shape of every job's runner.

BlendJob hands each handler its own JobContext (blendjob.server.JobContext). A job may use only what this
protocol names: its folder, the storage root, progress, its log, cancellation and the server's shared resources
(read them with `resource_of`, which checks their type). A job
that reaches for anything else fails mypy, so what jobs depend on stays this short list.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol, TypeVar

from ..contract.results import ResultName

P = TypeVar("P")
T = TypeVar("T")

JobResults = dict[ResultName, str]  # {result name: file name inside the job folder}
Runner = Callable[["JobContext", P], JobResults]  # `run_<job id>(context, params)`: one per job (jobs/)


class JobContext(Protocol):
    """The part of BlendJob's JobContext that jobs, their steps and the adapters use."""

    @property
    def job_id(self) -> str: ...

    @property
    def directory(self) -> Path:
        """The job's own folder: every output is written here."""
        ...

    @property
    def storage_root(self) -> Path: ...

    def progress(self, progress: float, message: str) -> None:
        """Publish the fraction done (0–1) and the message the status bar shows."""
        ...

    def log(self, message: str, *, level: str = ...) -> None:
        """Append a line to the job's own job.log."""
        ...

    def check_cancelled(self) -> None:
        """Raise BlendJob's JobCancelled once the job was cancelled."""
        ...

    def resource(self, name: str) -> object:
        """A shared resource of the server ("models", "downloads", ...): read it with `resource_of`."""
        ...


def resource_of(context: JobContext, name: str, kind: type[T]) -> T:
    """The server's resource `name`, which must be a `kind` (KeyError when the server has none of that name)."""
    found = context.resource(name)
    if not isinstance(found, kind):
        raise TypeError(f"the server's {name!r} resource is a {type(found).__name__}, not a {kind.__name__}")
    return found
