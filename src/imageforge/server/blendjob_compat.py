"""Every BlendJob private name the job server relies on, in one place (openspec/0017).

tests/server/test_blendjob_compat.py fails when a BlendJob release changes the behaviour relied on here;
tests/contract/test_blendjob_seam.py checks that no other server module names a BlendJob private.
"""

from __future__ import annotations

from typing import Any

from blendjob.server import _process_exists

from .job_context import JobContext


def job_status(context: JobContext) -> dict[str, Any]:
    """What the job last published (state, progress, message), as `/jobs/{id}` serves it; {} when the
    context cannot say (a test's stand-in context). Missing hook: JobContext has no public read-back.
    """
    snapshot = getattr(context, "_snapshot", None)
    return dict(snapshot()) if callable(snapshot) else {}


def published_fraction(context: JobContext) -> float:
    """The progress fraction the job last published (0 when the context cannot say)."""
    return float(job_status(context).get("progress", 0.0))


def process_exists(pid: int) -> bool:
    """True while a process with this id runs (POSIX: signal 0; Windows: an open, unsignalled handle).
    Missing hook: BlendJob's own liveness check (it watches the parent Blender with it) is private."""
    return bool(_process_exists(pid))
