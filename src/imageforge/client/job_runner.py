"""make_runtime(): the one way to build ImageForge's BlendJob runtime (the add-on's, addon/blender_runtime.py,
and the CLI's), and run_job(): submit a job on it and wait for its result."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from blendjob import JobResult

from .controller import ImageForgeServerController
from .environment import PACKAGE_ROOT, server_entrypoint, server_environment
from .job_follow import JobCancelledError, JobFailedError, Progress, follow_job
from .runtime import ImageForgeRuntime

NAMESPACE = "imageforge"

__all__ = ["NAMESPACE", "JobCancelledError", "JobFailedError", "Progress", "make_runtime", "run_job"]


def make_runtime(
    storage_root: Path | Callable[..., Path],
    *,
    post_setup: Callable[[Any], None] | None = None,  # called with BlendJob's setup task once it succeeded
    linger: Callable[[], float | None] | None = None,
    installer: Callable[..., list[str]] | None = None,
    before_install: Callable[[Path], object] | None = None,
) -> ImageForgeRuntime:
    """The BlendJob runtime: environment pins, server entrypoint and storage root (a path or a callable).

    Its server controller is ImageForge's (client/controller.py): shared by every client of the storage root,
    authenticated both ways, non-blocking stop and restart. `linger` gives the add-on's preference (seconds a
    server with no client and no job stays); None uses $IMAGEFORGE_SERVER_LINGER or 20 s. `installer` and
    `before_install` are the add-on's Set Up Server (client/setup_process.py; seeding its bundled uv).
    """
    return ImageForgeRuntime(
        server_entrypoint(),
        entrypoint_root=PACKAGE_ROOT,
        storage_root=storage_root,
        environment=server_environment(),  # ImageForgeRuntime reads the storage root's runtime choice instead
        namespace=NAMESPACE,
        post_setup=post_setup,
        linger=linger,
        installer=installer,
        before_install=before_install,
    )


class ServedRuntime(Protocol):
    """A runtime with ImageForge's controller: make_runtime()'s, or setup's folder (client/model_setup.py)."""

    @property
    def server(self) -> ImageForgeServerController: ...


def run_job(
    runtime: ServedRuntime,
    job_type: str,
    parameters: dict[str, Any],
    *,
    on_progress: Progress = lambda _status: None,
    cancel_requested: Callable[[], bool] = lambda: False,
    poll_interval: float = 0.05,
    start_timeout: float = 120.0,
) -> JobResult:
    """Submit one job on the runtime's server (started or attached first), follow it to the end, and return
    its result (files checked to be in its folder)."""
    controller = runtime.server
    controller.ensure(timeout=start_timeout)
    return follow_job(
        controller,
        job_type,
        parameters,
        on_progress=on_progress,
        cancel_requested=cancel_requested,
        poll_interval=poll_interval,
    )
