"""Follow one job on a controller: submit it, poll its status to the end, and hand back its result.

`run_job` (client/job_runner.py; the CLI, batch runs, setup's model download) and the controller's `request`
(which BlendJob's setup offers add-ons) both use it. A job's states are contract/job_state.py's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

from blendjob import JobResult

from ..contract import ImageForgeError
from ..contract.job_state import WRITING_PROGRESS, JobState
from .blendjob_compat import result_from_status

Progress = Callable[[dict[str, Any]], None]


class JobFailedError(ImageForgeError):
    """The server ran the job and it failed; the message is the server's one-sentence reason."""


class JobCancelledError(ImageForgeError):
    """The job was cancelled before it finished; nothing was kept."""


class JobController(Protocol):
    """What following a job asks of a controller (client/controller.py is the one)."""

    def submit(self, job_type: str, parameters: dict[str, Any]) -> dict[str, Any]: ...
    def status(self, job_id: str) -> dict[str, Any]: ...
    def cancel(self, job_id: str) -> dict[str, Any]: ...
    def mark_job_complete(self, job_id: str) -> None: ...


def cancelled_sentence(status: dict[str, Any]) -> str:
    """How a cancelled job ended, in one sentence: who cancelled it when this client did not (the
    `cancelled_because` the client's status carries, client/server_status.py)."""
    because = status.get("cancelled_because")
    return f"The job was cancelled: {because}." if isinstance(because, str) and because else "The job was cancelled."


def follow_job(
    controller: JobController,
    job_type: str,
    parameters: dict[str, Any],
    *,
    on_progress: Progress,
    cancel_requested: Callable[[], bool],
    poll_interval: float,
) -> JobResult:
    """Submit one job, follow it to the end, and return its result (files checked to be in its folder)."""
    submitted = controller.submit(job_type, parameters)
    job_id, directory = submitted["job_id"], submitted["directory"]
    cancel_sent = False
    try:
        while True:
            if not cancel_sent and cancel_requested():
                controller.cancel(job_id)
                cancel_sent = True
            status = {"job_id": job_id, "directory": directory, **controller.status(job_id)}
            on_progress(status)
            state = status.get("state")
            if state == JobState.SUCCEEDED:
                result = result_from_status(status)
                for name in result.value or {}:
                    result.file(name)  # rejects names outside the job folder and missing files
                return result
            if state == JobState.CANCELLED:
                raise JobCancelledError(cancelled_sentence(status))
            if state == JobState.FAILED:
                raise JobFailedError(status.get("error") or "The job failed; see its job.log.")
            # Near its end (writing results) a job is asked 5x as often: the end is noticed within ~10 ms, not
            # 50, at no cost while the model runs (a second `run` on a lingering server is mostly such waits).
            near_end = float(status.get("progress") or 0.0) >= WRITING_PROGRESS
            time.sleep(poll_interval / 5 if near_end else poll_interval)
    finally:
        controller.mark_job_complete(job_id)
