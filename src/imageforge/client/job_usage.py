"""How much the job folders take, cheap enough for a panel that redraws many times a second.

Walking every job folder is too slow for draw(): a video job's PNG sequence alone is thousands of files. So
the meter (1) rescans at most every `max_age` seconds, or at once when the storage root changes or the
`jobs/` folder's own mtime does (a folder was added or removed: one stat per redraw), and (2) remembers the
size of each *finished* folder by the mtime of its `job-state.json`: a finished job's outputs never change,
so a rescan walks only new and still-running folders. `invalidate()` forces the next read to rescan (after
a cleanup).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..contract.byte_counts import format_bytes as format_bytes  # the add-on's panels import it from here
from ..contract.job_state import FINISHED_STATES, STATE_FILE, read_state
from .retention import JOB_FOLDER, folder_bytes

DEFAULT_MAX_AGE = 10.0  # seconds a summary is trusted when nothing visible changed


@dataclass(frozen=True)
class JobFilesUsage:
    count: int  # job folders, whatever their state
    bytes: int


@dataclass(frozen=True)
class _Scan:
    root: Path
    jobs_mtime: int | None
    at: float
    usage: JobFilesUsage


class JobUsageMeter:
    """Cached job-folder count and size per storage root."""

    def __init__(self, max_age: float = DEFAULT_MAX_AGE, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_age = max_age
        self.clock = clock
        self.scans = 0  # full rescans done, for tests and diagnostics
        self._last: _Scan | None = None
        self._finished: dict[Path, tuple[int, int]] = {}  # folder -> (job-state.json mtime_ns, bytes)

    def usage(self, storage_root: Path) -> JobFilesUsage:
        root = Path(storage_root)
        jobs_mtime = _mtime(root / "jobs")
        last, now = self._last, self.clock()
        if last is not None and last.root == root and last.jobs_mtime == jobs_mtime and now - last.at < self.max_age:
            return last.usage
        usage = self._scan(root)
        self._last = _Scan(root, jobs_mtime, now, usage)
        return usage

    def invalidate(self) -> None:
        self._last = None

    def _scan(self, root: Path) -> JobFilesUsage:
        self.scans += 1
        jobs = root / "jobs"
        count = total = 0
        seen: dict[Path, tuple[int, int]] = {}
        try:
            entries = list(jobs.iterdir())
        except OSError:
            entries = []
        for path in entries:
            if not JOB_FOLDER.fullmatch(path.name) or path.is_symlink() or not path.is_dir():
                continue
            count += 1
            state_mtime = _mtime(path / STATE_FILE)
            remembered = self._finished.get(path)
            if remembered is not None and remembered[0] == state_mtime:
                size = remembered[1]
                seen[path] = remembered
            else:
                size = folder_bytes(path)
                if state_mtime is not None and read_state(path).get("state") in FINISHED_STATES:
                    seen[path] = (state_mtime, size)
            total += size
        self._finished = seen  # forget deleted folders
        return JobFilesUsage(count, total)


def _mtime(path: Path) -> int | None:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return None
