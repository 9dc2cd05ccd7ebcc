"""Job-folder retention: drop old job folders and keep their total size bounded, never touching a folder
that holds a file an open .blend still uses.

Results land in Blender as images that may point into `<storage>/jobs/<id>/` (unpacked images, EXR depth
maps used by a displacement modifier). Those folders are *protected*: the add-on passes the file paths
its open scenes reference, and any folder containing one is kept whatever its age or size. Folders of the
running job and folders without a finished state are kept too.

The plan is computed here (the client sees the same disk); deleting goes through BlendJob's
`/job-files/clear` while a server runs (it refuses while a job is active), or directly when none runs.
"""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..contract.byte_counts import folder_bytes as folder_bytes  # job_usage and the tests count with it here
from ..contract.job_state import FINISHED_STATES, read_state

JOB_FOLDER = re.compile(r"[0-9a-f]{32}")
DAY = 86400.0


@dataclass(frozen=True)
class RetentionPolicy:
    max_age_days: float = 30.0
    max_total_bytes: int = 5 * 1024**3


@dataclass(frozen=True)
class JobFolder:
    path: Path
    finished_at: float
    bytes: int
    state: str

    @property
    def job_id(self) -> str:
        return self.path.name


@dataclass(frozen=True)
class RetentionPlan:
    delete: tuple[JobFolder, ...]
    keep: tuple[JobFolder, ...]
    protected: tuple[JobFolder, ...] = field(default=())

    @property
    def freed_bytes(self) -> int:
        return sum(folder.bytes for folder in self.delete)

    @property
    def kept_bytes(self) -> int:
        return sum(folder.bytes for folder in (*self.keep, *self.protected))


def scan_job_folders(storage_root: Path) -> list[JobFolder]:
    """Finished job folders under `<storage>/jobs`, oldest first. Links and odd names are ignored."""
    jobs = Path(storage_root) / "jobs"
    found: list[JobFolder] = []
    if not jobs.is_dir():
        return found
    for path in jobs.iterdir():
        if not JOB_FOLDER.fullmatch(path.name) or path.is_symlink() or not path.is_dir():
            continue
        state = read_state(path)
        if state.get("state") not in FINISHED_STATES:
            continue
        finished_at = float(state.get("time") or path.stat().st_mtime)
        found.append(JobFolder(path, finished_at, folder_bytes(path), str(state["state"])))
    return sorted(found, key=lambda folder: folder.finished_at)


def plan_retention(
    folders: Iterable[JobFolder],
    policy: RetentionPolicy,
    *,
    protected_paths: Iterable[Path] = (),
    now: float | None = None,
) -> RetentionPlan:
    """Delete folders older than the age limit, then the oldest until the rest fits the size limit."""
    now = time.time() if now is None else now
    protected_parents = {_resolved(path) for path in protected_paths}
    ordered = sorted(folders, key=lambda folder: folder.finished_at)
    protected = [folder for folder in ordered if _holds_any(folder.path, protected_parents)]
    candidates = [folder for folder in ordered if folder not in protected]
    delete = [folder for folder in candidates if now - folder.finished_at > policy.max_age_days * DAY]
    remaining = [folder for folder in candidates if folder not in delete]
    total = sum(folder.bytes for folder in remaining) + sum(folder.bytes for folder in protected)
    while remaining and total > policy.max_total_bytes:
        oldest = remaining.pop(0)
        delete.append(oldest)
        total -= oldest.bytes
    return RetentionPlan(tuple(delete), tuple(remaining), tuple(protected))


def delete_folders(plan: RetentionPlan, storage_root: Path) -> list[str]:
    """Delete the plan's folders directly (only when no server is running). Returns deleted job ids."""
    jobs = (Path(storage_root) / "jobs").resolve()
    deleted = []
    for folder in plan.delete:
        path = folder.path.resolve()
        if path.parent != jobs or folder.path.is_symlink():
            continue  # never follow a link out of the jobs folder
        shutil.rmtree(path, ignore_errors=True)
        deleted.append(folder.job_id)
    return deleted


def _holds_any(folder: Path, protected: set[Path]) -> bool:
    root = _resolved(folder)
    return any(path == root or root in path.parents for path in protected)


def _resolved(path: Path) -> Path:
    try:
        return Path(path).resolve()
    except OSError:
        return Path(path).absolute()
