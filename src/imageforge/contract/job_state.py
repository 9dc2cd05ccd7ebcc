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


class JobState(StrEnum):
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


FINISHED_STATES = frozenset({JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED})  # equal to their strings


def read_state(directory: Path) -> dict[str, Any]:
    """A job folder's state marker as a dict; {} when missing or unreadable."""
    try:
        value = json.loads((Path(directory) / STATE_FILE).read_text(encoding="utf-8"))
        return value if isinstance(value, dict) else {}
    except (OSError, ValueError):
        return {}
