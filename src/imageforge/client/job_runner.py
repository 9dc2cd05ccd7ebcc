"""make_runtime(): the one way to build ImageForge's BlendJob runtime (the add-on's, addon/blender_runtime.py,
and the CLI's), and run_job(): submit a job on it and wait for its result."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from blendjob import JobResult, JobRuntime

from ..contract import ImageForgeError
from ..contract.job_state import WRITING_PROGRESS
from .blendjob_compat import result_from_status
from .controller import ImageForgeRuntime
from .environment import PACKAGE_ROOT, server_entrypoint, server_environment

NAMESPACE = "imageforge"
Progress = Callable[[dict[str, Any]], None]


class JobFailedError(ImageForgeError):
    """The server ran the job and it failed; the message is the server's one-sentence reason."""


class JobCancelledError(ImageForgeError):
    """The job was cancelled before it finished; nothing was kept."""


def make_runtime(
    storage_root: Path | Callable[..., Path],
    *,
    post_setup: Callable[[Any], None] | None = None,  # called with BlendJob's setup task once it succeeded
    linger: Callable[[], float | None] | None = None,
) -> JobRuntime:
    """The BlendJob runtime: environment pins, server entrypoint and storage root (a path or a callable).

    Its server controller is ImageForge's (client/controller.py): shared by every client of the storage root,
    authenticated both ways, non-blocking stop and restart. `linger` gives the add-on's preference (seconds a
    server with no client and no job stays); None uses $IMAGEFORGE_SERVER_LINGER or 20 s.
    """
    return ImageForgeRuntime(
        server_entrypoint(),
        entrypoint_root=PACKAGE_ROOT,
        storage_root=storage_root,
        environment=server_environment(),
        namespace=NAMESPACE,
        post_setup=post_setup,
        linger=linger,
    )


def run_job(
    runtime: JobRuntime,
    job_type: str,
    parameters: dict[str, Any],
    *,
    on_progress: Progress = lambda _status: None,
    cancel_requested: Callable[[], bool] = lambda: False,
    poll_interval: float = 0.05,
    start_timeout: float = 120.0,
) -> JobResult:
    """Submit one job, follow it to the end, and return its result (files checked to be in its folder)."""
    controller = runtime.server
    controller.ensure(timeout=start_timeout)
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
            if state == "succeeded":
                result = result_from_status(status)
                for name in result.value or {}:
                    result.file(name)  # rejects names outside the job folder and missing files
                return result
            if state == "cancelled":
                raise JobCancelledError("The job was cancelled.")
            if state == "failed":
                raise JobFailedError(status.get("error") or "The job failed; see its job.log.")
            # Near its end (writing results) a job is asked 5x as often: the end is noticed within ~10 ms, not
            # 50, at no cost while the model runs (a second `run` on a lingering server is mostly such waits).
            near_end = float(status.get("progress") or 0.0) >= WRITING_PROGRESS
            time.sleep(poll_interval / 5 if near_end else poll_interval)
    finally:
        controller.mark_job_complete(job_id)
