"""What every ImageForge job operator shares, on top of BlendJob's JobOperatorBase (through
client/blendjob_compat.JobOperatorHooks, which gives its end-of-job and progress hooks public names).

The flow is BlendJob's (execute → submit → modal polling → response → cleanup), with these house rules:
- Inputs are validated in execute() before anything is submitted: prepare() builds the job's parameter dataclass
  explicitly (never BlendJob's default of sending every annotated property), and the job's spec serialises it
  once (JobSpec.request), checked by the parser the server applies, so a bad request is a warning in Blender
  instead of a server round trip.
- Blender data changes only in response(), which lands the result and pushes one undo step named after the
  operator. The operator itself has no UNDO flag: Blender would push a second, empty step when the modal ends.
- ImageForge errors reach the user as reports; BlendJob reports OSError/RuntimeError/TypeError/ValueError,
  so ImageForge errors from landing are re-raised as RuntimeError with the same sentence.
- Report levels (house style): what the user can fix is a WARNING — a refused request (prepare(): an
  InputError, or an input file Blender cannot write), and a result the scene no longer fits (an InputError
  while landing: the image was removed or resized meanwhile, the depth map holds no valid pixels here); a
  failure is an ERROR — the job's own error, a result Blender cannot read or that is incomplete. Every
  report goes through report_outcome(), so tests read the level.
- cleanup() removes the temporary input files on every outcome, an unexpected error in execute() included.
- Blender signals a file it cannot write with RuntimeError; scene/ turns that into OSError with one sentence,
  so it reaches the user as a report like any other unwritable file.
- poll() gives the reason a tool is unavailable as the button's tooltip (poll_message_set).
- A job that ran on CPU instead of the device asked for ends with a WARNING report ("Ran on CPU: …"), read
  from the job's provenance.json: the job's own warning message lasts only until its next progress step.

The runtime is bound at registration (bind()), exactly as JobRuntime.operator_base() does: that class only
sets `job_runtime`, and binding the shared base keeps the operator classes ordinary module-level classes.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import bpy
from blendjob import JobResult, JobRuntime
from blendjob.operator import JobOperatorState

from ...client.blendjob_compat import JobOperatorHooks
from ...client.job_follow import cancelled_sentence
from ...contract import ImageForgeError, InputError, JobId, job_spec
from ...contract.job_state import FailureKind, failure_kind
from ...contract.provenance import Provenance
from .availability import poll_with_reason, server_reason

JOB_POLL_INTERVAL = 0.05  # a status request is a few ms; BlendJob's 0.25 s made every job wait


class ImageForgeJobOperator(JobOperatorHooks):
    bl_options = {"REGISTER"}  # BlendJob's default is INTERNAL, which hides operators from F3 search
    poll_interval = JOB_POLL_INTERVAL
    # Plain class attributes, not annotations: Blender reads every annotation of an operator as a property.
    job_runtime = None  # the JobRuntime, set by bind()
    if TYPE_CHECKING:  # every job operator sets the JobId it submits (a plain attribute, so not for Blender)
        job_id: JobId
    else:
        job_id = None
    pushes_undo = True  # False for jobs that change no Blender data (downloads)

    @classmethod
    def unavailable_reason(cls, context: bpy.types.Context) -> str | None:
        return server_reason()

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return poll_with_reason(cls, cls.unavailable_reason(context))

    # -- before submitting ------------------------------------------------------------------------------------

    def prepare(self, context: bpy.types.Context) -> Any:
        """Validate the inputs and return the job's parameter dataclass (preferences.job_parameters fills what
        the preferences decide). Raise ImageForgeError to refuse."""
        raise NotImplementedError

    def job_request(self, context: bpy.types.Context) -> dict[str, Any]:
        """The plain dict this run submits: prepare()'s parameters serialised once by the job's spec, checked by
        the parser the server applies (a refusal is a warning here, not a round trip)."""
        return job_spec(self.job_type).request(self.prepare(context))

    def execute(self, context: bpy.types.Context) -> set[str]:
        self.job_type = self.job_id.value
        self._temporary: Path | None = None
        try:
            parameters = self.job_request(context)
        except (ImageForgeError, OSError) as error:
            self.report_outcome("WARNING", str(error))
            self.cleanup()
            return {"CANCELLED"}
        except BaseException:
            self.cleanup()  # an unexpected error still shows its traceback, but leaves no input files behind
            raise
        self._parameters = parameters
        result = super().execute(context)
        if "CANCELLED" in result:
            self.cleanup()
        return result

    def request(self, _context: bpy.types.Context) -> dict[str, Any]:
        return self._parameters

    def temporary_directory(self) -> Path:
        """A folder for this run's input files, removed by cleanup()."""
        if self._temporary is None:
            self._temporary = Path(tempfile.mkdtemp(prefix="imageforge-input-"))
        return self._temporary

    # -- after the job ------------------------------------------------------------------------------------------

    def land(self, context: bpy.types.Context, result: JobResult) -> str:
        """Apply the result to Blender data; return the status-bar message."""
        raise NotImplementedError

    def response(self, context: bpy.types.Context, result: JobResult) -> str:
        try:
            message = self.land(context, result)
        except ImageForgeError as error:
            raise RuntimeError(str(error)) from error
        if self.pushes_undo:
            bpy.ops.ed.undo_push(message=self.bl_label)
        self.report_outcome("INFO", message)
        provenance = Provenance.of_result(result)
        for notice in provenance.input_warnings:  # the model saw another picture than it was made for
            self.report_outcome("WARNING", notice)
            message = f"{message} ({notice})"
        warning = fallback_report(provenance)
        if warning is not None:
            self.report_outcome("WARNING", warning)  # the last report: what the status bar keeps showing
            return f"{message} ({warning})"
        return message

    def finish_failure(self, context: bpy.types.Context, job: Any, error: Any) -> set[str]:
        """The job, reading its status, or landing its result failed: one report, then the invocation ends.
        A WARNING when the user can fix it (an InputError while landing, or a job the server failed for its
        input), an ERROR otherwise."""
        wrong_input = isinstance(getattr(error, "__cause__", None), InputError)  # landing refused
        if isinstance(error, str) and job.directory is not None:  # the job's own error, as its status says it
            wrong_input = failure_kind(job.directory) is FailureKind.INPUT  # the server's marker: job-state.json
        level = "WARNING" if wrong_input else "ERROR"
        self.report_outcome(level, str(error))
        return self.close_job(context, job, "Task failed", cancelled=True)

    def close_job(self, context: Any, job: JobOperatorState, message: str, *, cancelled: bool) -> set[str]:
        """BlendJob's end, except that a job the server cancelled for another reason than this operator's Esc
        (another client's Cancel, the lease that lapsed while Blender hung) says so as a WARNING."""
        status = getattr(self, "last_status", None) or {}
        if cancelled and not job.cancelled and status.get("cancelled_because"):
            message = cancelled_sentence(status)
            self.report_outcome("WARNING", message)
        return super().close_job(context, job, message, cancelled=cancelled)

    def report_outcome(self, level: str, message: str) -> None:
        """Report how the job ended. One Python-level method: Blender's `report` cannot be observed in tests."""
        self.report({level}, message)

    def cleanup(self) -> None:
        temporary = getattr(self, "_temporary", None)
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)
            self._temporary = None


def fallback_report(provenance: Provenance) -> str | None:
    """The WARNING a job's device fallback ends with, or None when nothing fell back (every fallback is to CPU)."""
    return f"Ran on CPU: {' '.join(provenance.warnings)}" if provenance.warnings else None


def bind(runtime: JobRuntime | None) -> None:
    """Point every ImageForge job operator at the runtime (None on unregister)."""
    ImageForgeJobOperator.job_runtime = runtime
