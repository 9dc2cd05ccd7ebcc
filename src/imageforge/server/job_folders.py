"""Job folder bookkeeping: writing the state marker each folder carries (its format and reader are in
contract/job_state.py, shared with the client), output clean-up, and crash recovery."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

from ..contract.job_state import STATE_FILE, JobState, read_state

KEPT_FILES = frozenset({"job.log", STATE_FILE})


def write_state(directory: Path, state: JobState, **details: Any) -> None:
    """Atomically record a job folder's state."""
    payload = {"state": state.value, "time": time.time(), **details}
    temporary = directory / f".{STATE_FILE}.tmp"
    try:
        temporary.write_text(json.dumps(payload), encoding="utf-8")
        os.replace(temporary, directory / STATE_FILE)
    finally:
        temporary.unlink(missing_ok=True)  # a disk that filled up leaves no empty temporary behind


def clear_outputs(directory: Path) -> None:
    """Delete everything a job wrote except its log and state marker."""
    for entry in directory.iterdir():
        if entry.name in KEPT_FILES:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


class InterruptedJobs:
    """What a server start found: folders left `running` by a killed server, now marked failed."""

    def __init__(self, recovered: list[str]):
        self.recovered = recovered

    def snapshot(self) -> dict[str, Any]:
        return {"interrupted_jobs": list(self.recovered)}


def mark_interrupted_jobs(storage_root: Path | None) -> InterruptedJobs:
    recovered: list[str] = []
    jobs = Path(storage_root) / "jobs" if storage_root else None
    if jobs is None or not jobs.is_dir():
        return InterruptedJobs(recovered)
    for directory in jobs.iterdir():
        if directory.is_dir() and read_state(directory).get("state") == JobState.RUNNING:
            clear_outputs(directory)
            write_state(directory, JobState.FAILED, error="The server stopped while this job was running.")
            recovered.append(directory.name)
    return InterruptedJobs(recovered)
