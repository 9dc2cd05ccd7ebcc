"""The state marker every job folder carries, read by the server (crash recovery) and the client (retention,
the job-files meter): `<storage>/jobs/<id>/job-state.json`, {"state": ..., "time": ..., ...}.

Only the server writes it (server/job_folders.py, atomically); both sides read it through `read_state`.
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Any

STATE_FILE = "job-state.json"
# Where a job's progress bar stands once its model work is done and it writes its results (the server's
# job_steps/progress.py reports it; clients poll more often from there, to notice the end at once).
WRITING_PROGRESS = 0.96


class JobState(StrEnum):
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


class FailureKind(StrEnum):
    """Why a failed job failed, as its marker's `failure` records it: the add-on's report level."""

    INPUT = "input"  # the request or its input was wrong (an InputError): the user can fix it, a WARNING
    FAILURE = "failure"  # anything else: an ERROR


FINISHED_STATES = frozenset({JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED})  # equal to their strings


def failure_kind(directory: Path) -> FailureKind:
    """Why the job of this folder failed; FAILURE when its marker does not say (or is missing)."""
    recorded = read_state(directory).get("failure")
    return FailureKind.INPUT if recorded == FailureKind.INPUT else FailureKind.FAILURE


def read_state(directory: Path) -> dict[str, Any]:
    """A job folder's state marker as a dict; {} when missing or unreadable."""
    try:
        value = json.loads((Path(directory) / STATE_FILE).read_text(encoding="utf-8"))
        return value if isinstance(value, dict) else {}
    except (OSError, ValueError):
        return {}
