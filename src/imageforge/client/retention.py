"""Job-folder retention: drop old job folders and keep their total size bounded, never touching a folder
that holds a file an open .blend still uses.

Results land in Blender as images that may point into `<storage>/jobs/<id>/` (unpacked images, EXR depth
maps used by a displacement modifier). Those folders are *protected*: the add-on passes the file paths
its open scenes reference, and any folder containing one is kept whatever its age or size. Folders of the
running job and folders without a finished state are kept too. A folder with no state marker at all (a job
cancelled while still queued: BlendJob wrote only its `job.log`) counts as finished when it was last changed:
deleting only ever happens while no job runs or waits, so no such folder belongs to a job in flight.

The plan is computed here (the client sees the same disk); deleting goes through BlendJob's
`/job-files/clear` while a server runs (it refuses while a job is active), or directly when none runs, by the
same rule as the server's: nothing is deleted when `jobs/` is a link or junction (`jobs_folder_problem`), and
a job folder that is a link or holds one anywhere inside is kept. Both routes report a `Deletion`: what went,
what was kept and why.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..contract.byte_counts import folder_bytes as folder_bytes  # job_usage and the tests count with it here
from ..contract.job_state import FINISHED_STATES, STATE_FILE, read_state

JOB_FOLDER = re.compile(r"[0-9a-f]{32}")
DAY = 86400.0
NOT_STARTED = "not started"  # the state shown for a folder without a marker
_REPARSE_POINT = 0x400  # FILE_ATTRIBUTE_REPARSE_POINT: a Windows junction or symlink


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


@dataclass(frozen=True)
class Deletion:
    """What one cleanup did with the plan's folders."""

    deleted: tuple[JobFolder, ...]
    kept: tuple[tuple[JobFolder, str], ...] = ()  # each with the reason, one clause: "it contains a link"

    @property
    def deleted_ids(self) -> list[str]:
        return [folder.job_id for folder in self.deleted]

    @property
    def freed_bytes(self) -> int:
        return sum(folder.bytes for folder in self.deleted)


def jobs_folder_problem(storage_root: Path) -> str | None:
    """Why no job folder under this root may be deleted, in one sentence; None when `jobs/` is a plain folder
    of the root (or absent)."""
    jobs = Path(storage_root) / "jobs"
    try:
        if _is_link(jobs):
            return (
                f"{jobs} is a link to {os.path.realpath(jobs)}; job files are cleaned up only inside the Storage "
                "Root itself, so make it a plain folder first."
            )
        if jobs.exists() and jobs.resolve().parent != Path(storage_root).resolve():
            return f"{jobs} leads outside the Storage Root ({jobs.resolve()}); job files are cleaned up only inside it."
    except OSError as error:
        return f"Cannot inspect {jobs} ({error.strerror or error}), so its job files cannot be cleaned up."
    return None


def scan_job_folders(storage_root: Path) -> list[JobFolder]:
    """Finished job folders under `<storage>/jobs`, oldest first. Links and odd names are ignored, and nothing
    is found under a `jobs/` that is itself a link (`jobs_folder_problem`)."""
    jobs = Path(storage_root) / "jobs"
    found: list[JobFolder] = []
    if not jobs.is_dir() or jobs_folder_problem(storage_root) is not None:
        return found
    for path in jobs.iterdir():
        if not JOB_FOLDER.fullmatch(path.name) or path.is_symlink() or not path.is_dir():
            continue
        if not (path / STATE_FILE).exists():  # cancelled while queued: only BlendJob's job.log
            found.append(JobFolder(path, path.stat().st_mtime, folder_bytes(path), NOT_STARTED))
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


def delete_folders(plan: RetentionPlan, storage_root: Path) -> Deletion:
    """Delete the plan's folders directly (only when no server is running), by the server's rule: a folder that
    is a link, lies elsewhere, or holds a link is kept."""
    if (problem := jobs_folder_problem(storage_root)) is not None:
        return Deletion((), tuple((folder, problem) for folder in plan.delete))
    jobs = (Path(storage_root) / "jobs").resolve()
    deleted: list[JobFolder] = []
    kept: list[tuple[JobFolder, str]] = []
    for folder in plan.delete:
        try:
            if _is_link(folder.path) or folder.path.resolve().parent != jobs or _holds_a_link(folder.path):
                kept.append((folder, LINK_REASON))
                continue
            shutil.rmtree(folder.path)
        except OSError as error:
            kept.append((folder, f"it could not be deleted ({error.strerror or error})"))
            continue
        deleted.append(folder)
    return Deletion(tuple(deleted), tuple(kept))


LINK_REASON = "it is or holds a link, and links are never followed"


def server_deletion(plan: RetentionPlan, cleared: Mapping[str, Any]) -> Deletion:
    """The `Deletion` BlendJob's `/job-files/clear` answer describes (it skips folders holding links, as
    `delete_folders` does, and lists the ones it could not delete)."""
    gone = {str(job) for job in cleared.get("jobs", [])}
    failed = {
        str(item.get("job")): str(item.get("error")) for item in cleared.get("failed", []) if isinstance(item, Mapping)
    }
    deleted = tuple(folder for folder in plan.delete if folder.job_id in gone)
    kept = tuple(
        (folder, f"it could not be deleted ({failed[folder.job_id]})" if folder.job_id in failed else LINK_REASON)
        for folder in plan.delete
        if folder.job_id not in gone
    )
    return Deletion(deleted, kept)


def _is_link(path: Path) -> bool:
    info = path.lstat()
    return stat.S_ISLNK(info.st_mode) or bool(getattr(info, "st_file_attributes", 0) & _REPARSE_POINT)


def _holds_a_link(folder: Path) -> bool:
    for directory, folders, names in os.walk(folder):
        if any(_is_link(Path(directory) / name) for name in (*folders, *names)):
            return True
    return False


def _holds_any(folder: Path, protected: set[Path]) -> bool:
    root = _resolved(folder)
    return any(path == root or root in path.parents for path in protected)


def _resolved(path: Path) -> Path:
    try:
        return Path(path).resolve()
    except OSError:
        return Path(path).absolute()
