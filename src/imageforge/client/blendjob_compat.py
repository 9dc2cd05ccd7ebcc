"""Every BlendJob private name the add-on and the CLI rely on, in one place (openspec/0017).

BlendJob (pinned in pyproject.toml and server_environment.json) lacks a public hook for each of these; the
workaround lives here, and tests/client/test_blendjob_compat.py fails when a BlendJob release changes the
behaviour it relies on. Nothing outside this module (and server/blendjob_compat.py on the server side) may
name a BlendJob private: tests/contract/test_blendjob_seam.py checks it. client/controller.py's overrides
are the one exception for now (its rewrite is in progress; issue 15, TODO there).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from blendjob import JobResult, JobRuntime

# JobRuntime's timer callbacks: enable() registers `_poll_server`, a job's progress update registers
# `_redraw_status_bars`, and disable() unregisters both by identity.
TIMER_CALLBACKS = ("_poll_server", "_redraw_status_bars")


def result_from_status(status: Mapping[str, Any]) -> JobResult:
    """The JobResult of a finished job's status dict (job_id, directory, result), as BlendJob builds it.

    Missing hook: BlendJob only builds JobResults inside its own operator flow; `run_job` polls itself.
    """
    return JobResult._from_status(status)


def pin_timer_callbacks(runtime: JobRuntime) -> None:
    """Pin the runtime's timer callbacks to one bound-method object each.

    BlendJob compares timer callbacks by identity, but every attribute access builds a new bound method, so
    unregister() would miss the timers (they leak, and bpy 4.5 hangs at exit). Missing hook: the runtime
    should keep the callbacks it registered.
    """
    for name in TIMER_CALLBACKS:
        setattr(runtime, name, getattr(runtime, name))


def run_before_install(controller: Any, before: Callable[[], None]) -> None:
    """Make a SetupController call `before()` just before it installs the environment (not when it only
    validates an existing one). Missing hook: BlendJob has `post_setup` but nothing before the install.
    """
    install = controller.install

    def install_after_hook() -> None:
        before()
        install()

    controller.install = install_after_hook
