"""Which runner runs which job: `@runs(spec)` on each `run_<job id>` of jobs/ registers it for that spec.

    @runs(REMOVE_BACKGROUND)
    def run_remove_background(context: JobContext, params: RemoveBackgroundParams) -> JobResults: ...

`runs` is generic in the spec's parameter class, so a runner whose `params` is another class fails mypy, and
registering a job twice fails at import. jobs/__init__.py imports every job module and reads the result
(`registered_runners`), so a new job is its contract constant and its module: no list to extend.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ..contract import JobId, JobSpec
from .job_context import Runner

P = TypeVar("P")


@dataclass(frozen=True)
class RegisteredJob(Generic[P]):
    spec: JobSpec[P]
    run: Runner[P]


_REGISTERED: dict[JobId, RegisteredJob[Any]] = {}


def runs(spec: JobSpec[P]) -> Callable[[Runner[P]], Runner[P]]:
    """Register the decorated function as the runner of `spec`'s job (returned unchanged)."""

    def register(run: Runner[P]) -> Runner[P]:
        if spec.id in _REGISTERED:
            raise TypeError(f"job {spec.id.value!r} has two runners")
        _REGISTERED[spec.id] = RegisteredJob(spec, run)
        return run

    return register


def registered_runners() -> dict[JobId, RegisteredJob[Any]]:
    """Every runner registered so far, by job id."""
    return dict(_REGISTERED)
