"""The job-files meter: right totals, cached between redraws, rescanned when folders come or go or time passes."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from imageforge.client import job_usage
from imageforge.client.job_usage import JobFilesUsage, JobUsageMeter, format_bytes


def make_job(storage: Path, size: int, state: str = "succeeded") -> Path:
    folder = storage / "jobs" / uuid.uuid4().hex
    (folder / "frames").mkdir(parents=True)
    (folder / "job-state.json").write_text(json.dumps({"state": state}))
    (folder / "frames" / "0001.png").write_bytes(b"x" * size)
    return folder


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_usage_counts_every_job_folder_and_caches_until_something_visible_changes(tmp_path, monkeypatch):
    state_bytes = len(json.dumps({"state": "succeeded"}))
    finished = make_job(tmp_path, 1000)
    running = make_job(tmp_path, 500, state="running")
    (tmp_path / "jobs" / "notes").mkdir()  # not a job folder
    walked: list[Path] = []
    real = job_usage.folder_bytes
    monkeypatch.setattr(job_usage, "folder_bytes", lambda path: walked.append(path) or real(path))
    clock = Clock()
    meter = JobUsageMeter(max_age=10.0, clock=clock)

    first = meter.usage(tmp_path)
    assert first == JobFilesUsage(2, 1500 + state_bytes + len(json.dumps({"state": "running"})))
    assert sorted(walked) == sorted([finished, running])

    (running / "frames" / "0002.png").write_bytes(b"y" * 300)  # inside a folder: no visible change
    clock.now = 9.0
    assert meter.usage(tmp_path) == first and meter.scans == 1

    clock.now = 10.5  # stale: rescanned, but the finished folder's size is remembered
    walked.clear()
    assert meter.usage(tmp_path).bytes == first.bytes + 300
    assert walked == [running]

    added = make_job(tmp_path, 2000)  # a new folder changes jobs/'s mtime: rescanned at once
    walked.clear()
    assert meter.usage(tmp_path).count == 3 and meter.scans == 3
    assert sorted(walked) == sorted([running, added])

    meter.invalidate()
    assert meter.usage(tmp_path).count == 3 and meter.scans == 4
    assert meter.usage(tmp_path / "elsewhere") == JobFilesUsage(0, 0)  # another root: its own scan


def test_sizes_read_in_binary_units_like_the_limit():
    assert format_bytes(5 * 1024**3) == "5.0 GB"
    assert format_bytes(int(1.5 * 1024**2)) == "1.5 MB"
    assert (format_bytes(2048), format_bytes(12)) == ("2 kB", "12 B")
