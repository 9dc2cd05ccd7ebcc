"""Turn inference warnings into what the user sees: the running job's progress message, its log, and its result.

A device fallback must never be silent. The job's progress message is the line Blender's status bar shows,
so a warning replaces it (keeping the current fraction) until the job reports its next step; that can be
50 ms later, so the warning is also kept for the job's provenance.json, from which the CLI prints it on
stderr and Blender ends the operator with a WARNING report.
"""

from __future__ import annotations

from .. import provenance
from ..blendjob_compat import published_fraction
from ..job_context import JobContext
from .runner import Warn


def job_warner(context: JobContext) -> Warn:
    """A `warn` callback for ModelManager.acquire that writes into BlendJob's `context`."""

    def warn(message: str) -> None:
        context.log(message, level="WARNING")
        provenance.note_warning(context, message)
        context.progress(current_fraction(context), message)

    return warn


def current_fraction(context: JobContext) -> float:
    """The fraction the job last published (0 when the context cannot say), to report a new message at."""
    return published_fraction(context)
