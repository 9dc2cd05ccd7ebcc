"""Every BlendJob private name the add-on and the CLI rely on, in one place (openspec/0017).

BlendJob (pinned in pyproject.toml and server_environment.json) lacks a public hook for each of these; the
workaround lives here, and tests/client/test_blendjob_compat.py fails when a BlendJob release changes the
behaviour it relies on. Nothing outside this module (and server/blendjob_compat.py on the server side) may
name a BlendJob private: tests/contract/test_blendjob_seam.py checks it.

Where ImageForge must override or call a private hook of a BlendJob class, a class here does it once and
forwards to a public name: `JobOperatorHooks` (every job operator; the batch operator chains jobs through its
end-of-job hooks). The client's controller (client/controller.py) is ImageForge's own: BlendJob's runtime calls
it by the public names in `CONTROLLER_CALLS`, which the compatibility test reads from BlendJob's source.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from blendjob import JobResult, JobRuntime
from blendjob.operator import JobOperatorBase, JobOperatorState

# JobRuntime's timer callbacks: enable() registers `_poll_server`, a job's progress update registers
# `_redraw_status_bars`, and disable() unregisters both by identity.
TIMER_CALLBACKS = ("_poll_server", "_redraw_status_bars")

# What BlendJob's runtime, operators and setup/migration ask of `runtime.server` (and of a job's controller,
# which is `runtime.server` for ImageForge's jobs): client/controller.py answers each, by these public names.
CONTROLLER_CALLS = frozenset(
    {
        "cancel",
        "clear_resource",
        "connection",
        "detach",
        "enable",
        "ensure",
        "mark_job_complete",
        "poll",
        "request",
        "resource",
        "restart",
        "snapshot",
        "status",
        "stop",
        "submit",
    }
)
# What BlendJob's Clear Job Files operator asks of `runtime.server.connection.client`.
CONNECTION_CLIENT_CALLS = frozenset({"clear_job_files", "preview_job_files"})


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


class JobOperatorHooks(JobOperatorBase):  # type: ignore[misc]  # BlendJob ships no types
    """BlendJob's JobOperatorBase with its end-of-job and progress hooks under public names.

    BlendJob's modal() calls `_finish_success`, `_finish_failure`, `_close` and `_update_from_job_status`, and
    execute() starts `_submit_job` on a thread; each forwards to (or is reachable as) the public name below.
    Missing hooks: operator hooks for a job's end and its progress (a batch chains jobs in one invocation).
    """

    def _finish_success(self, context: Any, job: JobOperatorState, status: dict[str, Any]) -> set[str]:
        return self.finish_success(context, job, status)

    def finish_success(self, context: Any, job: JobOperatorState, status: dict[str, Any]) -> set[str]:
        """The job succeeded: land its result (response()) and close the invocation."""
        return set(JobOperatorBase._finish_success(self, context, job, status))

    def _finish_failure(self, context: Any, job: JobOperatorState, error: Any) -> set[str]:
        return self.finish_failure(context, job, error)

    def finish_failure(self, context: Any, job: JobOperatorState, error: Any) -> set[str]:
        """The job (or reading its status) failed: report it and close the invocation."""
        return set(JobOperatorBase._finish_failure(self, context, job, error))

    def _close(self, context: Any, job: JobOperatorState, message: str, *, cancelled: bool) -> set[str]:
        return self.close_job(context, job, message, cancelled=cancelled)

    def close_job(self, context: Any, job: JobOperatorState, message: str, *, cancelled: bool) -> set[str]:
        """End the invocation: timer and progress bar removed, the job marked finished, `message` shown."""
        return set(JobOperatorBase._close(self, context, job, message, cancelled=cancelled))

    def _update_from_job_status(self, context: Any, job: JobOperatorState, status: dict[str, Any]) -> None:
        self.last_status = status  # what the modal read last: close_job() may say how the job ended
        self.update_from_job_status(context, job, status)

    def update_from_job_status(self, context: Any, job: JobOperatorState, status: dict[str, Any]) -> None:
        """Show a running job's progress and message."""
        JobOperatorBase._update_from_job_status(self, context, job, status)

    def submit_job(self, job: JobOperatorState, parameters: dict[str, Any]) -> None:
        """Submit `parameters` for `job` (BlendJob's submit thread body): sets job_id/directory/started, or
        start_error."""
        self._submit_job(job, parameters)
