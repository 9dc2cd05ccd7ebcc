"""Retention deletes old and excess job folders, oldest first, and never a folder an open .blend uses."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

from imageforge.client.retention import (
    LINK_REASON,
    NOT_STARTED,
    RetentionPolicy,
    delete_folders,
    folder_bytes,
    jobs_folder_problem,
    plan_retention,
    scan_job_folders,
)

DAY = 86400.0
NOW = 1_800_000_000.0


def make_job(storage: Path, *, age_days: float, size: int, state: str = "succeeded") -> Path:
    folder = storage / "jobs" / uuid.uuid4().hex
    folder.mkdir(parents=True)
    (folder / "job-state.json").write_text(json.dumps({"state": state, "time": NOW - age_days * DAY}))
    (folder / "result.png").write_bytes(b"x" * size)
    return folder


def test_age_and_size_limits_delete_oldest_first(tmp_path):
    old = make_job(tmp_path, age_days=40, size=100)
    middle = make_job(tmp_path, age_days=5, size=1000)
    newer = make_job(tmp_path, age_days=2, size=1000)
    newest = make_job(tmp_path, age_days=1, size=1000)
    running = make_job(tmp_path, age_days=50, size=10, state="running")
    (tmp_path / "jobs" / "not-a-job").mkdir()

    folders = scan_job_folders(tmp_path)
    assert [folder.path for folder in folders] == [old, middle, newer, newest]  # running and odd names skipped
    plan = plan_retention(folders, RetentionPolicy(max_age_days=30, max_total_bytes=2100), now=NOW)
    assert [folder.path for folder in plan.delete] == [old, middle]
    assert [folder.path for folder in plan.keep] == [newer, newest]
    assert plan.freed_bytes == sum(path.stat().st_size for folder in (old, middle) for path in folder.iterdir())
    assert delete_folders(plan, tmp_path).deleted_ids == [old.name, middle.name]
    assert not old.exists() and not middle.exists() and newer.exists() and running.exists()


def test_protected_folders_are_kept_whatever_their_age_or_size(tmp_path):
    protected = make_job(tmp_path, age_days=400, size=10_000)
    other = make_job(tmp_path, age_days=1, size=10)
    plan = plan_retention(
        scan_job_folders(tmp_path),
        RetentionPolicy(max_age_days=30, max_total_bytes=0),
        protected_paths=[protected / "result.png"],
        now=NOW,
    )
    assert [folder.path for folder in plan.protected] == [protected]
    assert [folder.path for folder in plan.delete] == [other]
    delete_folders(plan, tmp_path)
    assert (protected / "result.png").exists()


def test_links_are_never_followed(tmp_path):
    outside = tmp_path / "precious"
    outside.mkdir()
    (outside / "keep.txt").write_text("mine")
    (outside / "job-state.json").write_text(json.dumps({"state": "succeeded", "time": NOW - 999 * DAY}))
    storage = tmp_path / "storage"
    (storage / "jobs").mkdir(parents=True)
    os.symlink(outside, storage / "jobs" / uuid.uuid4().hex)
    assert scan_job_folders(storage) == []
    assert (outside / "keep.txt").read_text() == "mine"


def test_a_linked_jobs_folder_is_never_cleaned_up(tmp_path):
    """Without a server the same rule as BlendJob's clear: a `jobs/` that is a link is refused, never followed."""
    elsewhere = tmp_path / "elsewhere"
    old = make_job(elsewhere, age_days=400, size=10)
    storage = tmp_path / "storage"
    storage.mkdir()
    os.symlink(elsewhere / "jobs", storage / "jobs")
    assert jobs_folder_problem(storage) == (
        f"{storage / 'jobs'} is a link to {elsewhere / 'jobs'}; job files are cleaned up only inside the Storage "
        "Root itself, so make it a plain folder first."
    )
    assert scan_job_folders(storage) == []
    stale = plan_retention(scan_job_folders(elsewhere), RetentionPolicy(), now=NOW)  # a plan made before the link
    assert [folder.path.name for folder in stale.delete] == [old.name]
    deletion = delete_folders(stale, storage)
    assert deletion.deleted == () and [reason for _, reason in deletion.kept] == [jobs_folder_problem(storage)]
    assert old.exists()


def test_a_folder_holding_a_link_is_kept_and_not_counted(tmp_path):
    old, linked = make_job(tmp_path, age_days=40, size=100), make_job(tmp_path, age_days=41, size=1000)
    (tmp_path / "outside.txt").write_text("mine")
    (linked / "frames").mkdir()
    os.symlink(tmp_path / "outside.txt", linked / "frames" / "frame_0001.png")
    plan = plan_retention(scan_job_folders(tmp_path), RetentionPolicy(max_age_days=30), now=NOW)
    assert {folder.path for folder in plan.delete} == {old, linked}

    deletion = delete_folders(plan, tmp_path)

    assert deletion.deleted_ids == [old.name] and not old.exists()
    assert [(folder.path, reason) for folder, reason in deletion.kept] == [(linked, LINK_REASON)] and linked.exists()
    assert deletion.freed_bytes == next(folder.bytes for folder in plan.delete if folder.path == old)
    assert (tmp_path / "outside.txt").read_text() == "mine"


def test_a_job_cancelled_while_queued_is_cleaned_up_like_a_finished_one(tmp_path):
    """BlendJob writes only job.log for a job cancelled before it started; no state marker is ever written."""
    queued = tmp_path / "jobs" / uuid.uuid4().hex
    queued.mkdir(parents=True)
    (queued / "job.log").write_text("queued\ncancelled before execution\n")
    stamp = NOW - 40 * DAY
    os.utime(queued, (stamp, stamp))
    (folder,) = scan_job_folders(tmp_path)
    assert (folder.path, folder.state, folder.finished_at) == (queued, NOT_STARTED, stamp)
    plan = plan_retention([folder], RetentionPolicy(max_age_days=30), now=NOW)
    assert delete_folders(plan, tmp_path).deleted_ids == [queued.name] and not queued.exists()


def test_files_that_vanish_while_a_folder_is_measured_are_skipped(tmp_path, monkeypatch):
    # A running job renames files atomically in its folder. Force the two races deterministically:
    # "listed.tmp" goes right after its folder is listed, "looked-at.tmp" right after it is first stat'ed.
    folder = make_job(tmp_path, age_days=0, size=100, state="running")
    (folder / "frames").mkdir()
    (folder / "frames" / "frame_0001.png").write_bytes(b"f" * 10)
    (folder / "listed.tmp").write_bytes(b"l" * 1000)
    (folder / "looked-at.tmp").write_bytes(b"s" * 1000)
    real_scandir, real_stat, real_lstat = os.scandir, os.stat, os.lstat

    def scandir(path=".", *args, **kwargs):
        entries = list(real_scandir(path, *args, **kwargs))
        (folder / "listed.tmp").unlink(missing_ok=True)
        return _Listing(entries)

    def vanishing_after(real):
        def call(path, *args, **kwargs):
            result = real(path, *args, **kwargs)
            if os.fspath(path).endswith("looked-at.tmp"):
                (folder / "looked-at.tmp").unlink(missing_ok=True)
            return result

        return call

    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.setattr(os, "stat", vanishing_after(real_stat))
    monkeypatch.setattr(os, "lstat", vanishing_after(real_lstat))

    size = folder_bytes(folder)
    monkeypatch.undo()
    assert not (folder / "listed.tmp").exists() and not (folder / "looked-at.tmp").exists()
    kept = (folder / "job-state.json").stat().st_size + 100 + 10
    assert size in (kept, kept + 1000)  # looked-at.tmp counts when it was there at its one stat


class _Listing:
    """What os.scandir returns (an iterator and a context manager), over entries already read."""

    def __init__(self, entries):
        self._entries = iter(entries)

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._entries)

    def __enter__(self):
        return self

    def __exit__(self, *_exc):
        return False

    def close(self):
        pass
