"""`imageforge job-files` applies the retention policy from the command line, never while Blender holds the root."""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path

from blendjob.storage import StorageLock

from imageforge.cli.main import main


def job(storage: Path, age_days: float, size: int) -> Path:
    folder = storage / "jobs" / uuid.uuid4().hex
    folder.mkdir(parents=True)
    (folder / "job-state.json").write_text(json.dumps({"state": "succeeded", "time": time.time() - age_days * 86400}))
    (folder / "out.png").write_bytes(b"x" * size)
    return folder


def test_dry_run_then_clean_keeps_protected_and_recent(tmp_path, capsys):
    old, kept, protected = job(tmp_path, 60, 10), job(tmp_path, 1, 10), job(tmp_path, 90, 10)
    arguments = ["--storage-root", str(tmp_path), "job-files", "--protect", str(protected / "out.png")]
    assert main([*arguments, "--dry-run"]) == 0
    assert f"would delete {old.name}" in capsys.readouterr().out and old.exists()
    assert main(arguments) == 0
    output = capsys.readouterr().out
    assert f"deleted {old.name}" in output and "kept 2 (1 protected)" in output
    assert not old.exists() and kept.exists() and protected.exists()


def test_refuses_while_another_process_holds_the_storage_root(tmp_path, capsys):
    old = job(tmp_path, 60, 10)
    holder = StorageLock()
    holder.acquire(tmp_path)
    try:
        assert main(["--storage-root", str(tmp_path), "job-files"]) == 1
    finally:
        holder.release()
    error = capsys.readouterr().err
    assert "Cannot clean up job files: python" in error and f"(pid {os.getpid()}) is using {tmp_path}" in error
    assert old.exists()


def test_size_limit_deletes_oldest_first(tmp_path):
    older, newer = job(tmp_path, 3, 10), job(tmp_path, 2, 10)
    assert main(["--storage-root", str(tmp_path), "job-files", "--max-total-gb", "0.000000075"]) == 0
    assert not older.exists() and newer.exists()  # 80 bytes allowed: only the newer folder (~60 bytes) fits


def test_a_folder_holding_a_link_is_reported_kept_not_freed(tmp_path, capsys):
    old, linked = job(tmp_path, 60, 1_000_000), job(tmp_path, 61, 3_000_000)
    os.symlink(tmp_path / "elsewhere.txt", linked / "frame.png")
    assert main(["--storage-root", str(tmp_path), "job-files"]) == 0
    output = capsys.readouterr().out
    assert f"deleted {old.name}" in output and not old.exists()
    assert f"kept {linked.name}: it is or holds a link, and links are never followed" in output and linked.exists()
    assert "1 folder(s), freed 1.0 MB; kept 1 (0 protected), 3.0 MB" in output


def test_a_linked_jobs_folder_is_refused_as_the_server_refuses_it(tmp_path, capsys):
    elsewhere = tmp_path / "elsewhere"
    old = job(elsewhere, 60, 10)
    storage = tmp_path / "storage"
    storage.mkdir()
    os.symlink(elsewhere / "jobs", storage / "jobs")
    assert main(["--storage-root", str(storage), "job-files"]) == 1
    assert "is a link to" in capsys.readouterr().err and old.exists()
