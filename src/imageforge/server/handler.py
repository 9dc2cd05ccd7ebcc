"""Wrap each job's `run_<job>(context, params)` into a BlendJob handler with the same guarantees for every job.

- Parameters are parsed and validated by the job's contract before any work.
- The job folder records its state in `job-state.json` (running → succeeded | failed | cancelled).
- On failure or cancellation every output is deleted (only `job.log` and `job-state.json` stay), so a
  partial file is never mistaken for a result.
- Results must be exactly those the job's spec declares for its parameters (contract/results.py): an
  undeclared name or a missing one fails the job as a programming error, logged with the job id. Each must
  name an existing file inside the job folder; inference jobs also return `provenance` (provenance.json:
  each model, the device asked for, and the provider that really ran), written here.
- Errors reach the user as one sentence; tracebacks go to the job log only. A disk that fills up while the job
  writes is a `DiskFullError` naming the folder, what is free and how much the job had written. A failed
  folder's marker says whether the input was wrong (`failure: input`, an InputError) or the job failed
  (`failure: failure`), which decides the add-on's report level (contract/job_state.py `failure_kind`).
"""

from __future__ import annotations

import contextlib
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from blendjob.server import JobCancelled

from ..contract import ImageForgeError, InputError, JobId, JobSpec, ResourceExhaustedError
from ..contract.byte_counts import folder_bytes
from ..contract.errors import disk_full, disk_full_cause
from ..contract.job_state import FailureKind, JobState
from . import provenance
from .job_context import JobContext, Runner
from .job_folders import KEPT_FILES, clear_outputs, write_state

P = TypeVar("P")


class InvalidResultError(ImageForgeError):
    """A job returned results its spec does not declare, or files outside its own folder (a server bug)."""


def make_handler(spec: JobSpec[P], run: Runner[P]) -> Callable[[JobContext, dict[str, Any]], dict[str, str]]:
    def handler(context: JobContext, raw_parameters: dict[str, Any]) -> dict[str, str]:
        directory = Path(context.directory)
        try:
            write_state(directory, JobState.RUNNING)
        except OSError as error:  # the disk was full before the job began: nothing to clear, nothing to mark
            if (full := disk_full_cause(error)) is None:
                raise
            raise disk_full(directory, f"starting {spec.label}") from full
        try:
            parameters = spec.parse(raw_parameters)
            result = run(context, parameters)
            context.check_cancelled()
            check_result_names(spec, parameters, result)
            checked = check_result(directory, result)
            checked.update(provenance.write(context, directory))
        except JobCancelled:
            _abandon(directory, JobState.CANCELLED, "Cancelled")
            raise
        except InvalidResultError as error:
            context.log(f"Job {context.job_id} ({spec.id.value}): {error}", level="ERROR")
            _abandon(directory, JobState.FAILED, str(error))
            raise
        except ImageForgeError as error:
            kind = FailureKind.INPUT if isinstance(error, InputError) else FailureKind.FAILURE
            _abandon(directory, JobState.FAILED, str(error), failure=kind)
            raise
        except MemoryError as error:
            message = "System memory exhausted: lower Maximum AI Input Size or close other programs."
            _abandon(directory, JobState.FAILED, message)
            raise ResourceExhaustedError(message) from error
        except Exception as error:
            if (full := disk_full_cause(error)) is not None:
                raise _disk_ran_out(context, spec, directory, full) from error
            context.log(traceback.format_exc(), level="ERROR")
            message = f"{spec.label} failed unexpectedly ({type(error).__name__}: {error}); see the job log."
            _abandon(directory, JobState.FAILED, message)
            raise ImageForgeError(message) from error
        write_state(directory, JobState.SUCCEEDED, result=checked)
        return checked

    handler.__name__ = runner_name(spec.id)
    return handler


def runner_name(job_id: JobId) -> str:
    """`run_<job id, dashes as underscores>`: the job's function in jobs/ and its wrapped handler share it."""
    return f"run_{job_id.value.replace('-', '_')}"


def check_result_names(spec: JobSpec[P], parameters: P, result: object) -> None:
    """The job returned exactly the results its spec declares for these parameters (provenance is added here)."""
    if not isinstance(result, dict):
        raise InvalidResultError(f"{spec.label} returned no result files; this is a bug in ImageForge.")
    expected = spec.expected_results(parameters)
    returned = set(result)
    undeclared = sorted(str(name) for name in returned - expected)
    missing = sorted(str(name) for name in expected - returned)
    if undeclared or missing:
        problems = []
        if undeclared:
            problems.append(f"returned undeclared result(s) {', '.join(undeclared)}")
        if missing:
            problems.append(f"did not return {', '.join(missing)}")
        raise InvalidResultError(f"{spec.label} {' and '.join(problems)}; this is a bug in ImageForge.")


def check_result(directory: Path, result: object) -> dict[str, str]:
    """Every result entry must name an existing regular file inside the job folder."""
    if not isinstance(result, dict):
        raise InvalidResultError("The job returned no result files.")
    root = directory.resolve()
    for name, relative in result.items():
        if not isinstance(name, str) or not isinstance(relative, str):
            raise InvalidResultError("The job returned a malformed result.")
        path = (root / relative).resolve()
        if root not in path.parents or not path.is_file():
            raise InvalidResultError(f"The job's result '{name}' is not a file in its folder.")
    return dict(result)


def _disk_ran_out(context: JobContext, spec: JobSpec[Any], directory: Path, error: OSError) -> ImageForgeError:
    """The outputs go first (they free the space the state marker and the log still need), then one sentence."""
    written = folder_bytes(directory, leaving_out=KEPT_FILES)
    folder = Path(error.filename).parent if isinstance(error.filename, str) else directory
    failure = disk_full(folder, f"{spec.label} wrote its results", written=written)
    with contextlib.suppress(OSError):  # still full (others' files): a later server start marks the folder failed
        _abandon(directory, JobState.FAILED, str(failure))
        context.log(traceback.format_exc(), level="ERROR")
    return failure


def _abandon(directory: Path, state: JobState, message: str, *, failure: FailureKind | None = None) -> None:
    clear_outputs(directory)
    if state is JobState.FAILED:
        write_state(directory, state, error=message, failure=(failure or FailureKind.FAILURE).value)
    else:
        write_state(directory, state, error=message)
