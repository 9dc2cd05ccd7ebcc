"""Clean Up Job Files on a real scene: files the .blend uses keep their job folders, by either deletion route."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from types import SimpleNamespace

import bpy
import numpy as np
import pytest
from recording import RecordingLayout, draw
from result_files import write_png_rgba
from scenes import photo_pixels

DAY = 86400.0


def make_job(storage: Path, *, age_days: float, size: int = 1000, state: str = "succeeded") -> Path:
    folder = storage / "jobs" / uuid.uuid4().hex
    folder.mkdir(parents=True)
    (folder / "job-state.json").write_text(json.dumps({"state": state, "time": time.time() - age_days * DAY}))
    (folder / "job.log").write_bytes(b"x" * size)
    return folder


@pytest.fixture
def storage(job_server, tmp_path):
    """A storage root of its own, configured in the preferences, with the limits at their defaults."""
    from imageforge.addon import preferences

    prefs = preferences.get_preferences()
    root = tmp_path / "storage"
    (root / "jobs").mkdir(parents=True)
    prefs.storage_root = str(root)
    try:
        yield root.resolve()
    finally:
        prefs.storage_root = ""


@pytest.fixture
def old_jobs(storage):
    """Five folders past the 30-day default: one holds an image the scene loads from disk, one a packed image,
    one an image sequence opened as a movie clip; plus a fresh one within both limits and a running one."""
    folders = SimpleNamespace(
        image=make_job(storage, age_days=40),
        packed=make_job(storage, age_days=41),
        clip=make_job(storage, age_days=42),
        plain=make_job(storage, age_days=43),
        failed=make_job(storage, age_days=44, state="failed"),
        fresh=make_job(storage, age_days=1),
        running=make_job(storage, age_days=50, state="running"),
    )
    photo = photo_pixels(8, 6)
    write_png_rgba(folders.image / "upscale.png", photo)
    image = bpy.data.images.load(str(folders.image / "upscale.png"), check_existing=False)
    image.name = "Landed Unpacked"
    write_png_rgba(folders.packed / "foreground.png", photo)
    packed = bpy.data.images.load(str(folders.packed / "foreground.png"), check_existing=False)
    packed.pack()  # its data lives in the .blend: the path protects nothing
    for number in (1, 2):
        write_png_rgba(folders.clip / f"frame_{number:04d}.png", photo)
    clip = bpy.data.movieclips.load(str(folders.clip / "frame_0001.png"))
    yield folders
    bpy.data.movieclips.remove(clip)


def test_stopped_server_cleanup_deletes_old_folders_but_not_those_the_scene_uses(job_server, old_jobs):
    from imageforge.addon.operators import job_files

    job_server.snapshot = {"state": "STOPPED", "message": "Stopped"}
    assert job_files.cleanup_route() == (job_files.Route.DIRECT, None)
    assert bpy.ops.imageforge.clean_job_files() == {"FINISHED"}

    assert (old_jobs.image / "upscale.png").is_file()  # the unpacked image still has its file
    assert (old_jobs.clip / "frame_0002.png").is_file()  # so does the movie clip's sequence
    assert old_jobs.fresh.is_dir() and old_jobs.running.is_dir()
    for gone in (old_jobs.packed, old_jobs.plain, old_jobs.failed):
        assert not gone.exists()
    image = bpy.data.images["Landed Unpacked"]
    image.reload()
    assert tuple(image.size) == (8, 6) and image.has_data
    assert job_server.submitted == []  # no server involved


def test_running_idle_server_deletes_exactly_the_planned_jobs_through_blendjob(job_server, old_jobs, storage):
    from blendjob import JobServer

    sent: list[list[str]] = []
    real = JobServer("ImageForge test", storage_root=storage)  # BlendJob's own deletion code, in process

    def clear_job_files(jobs):
        sent.append(sorted(jobs))
        return real.clear_job_files(jobs)

    job_server.snapshot = {"state": "READY", "message": "Ready"}
    job_server.connection = SimpleNamespace(client=SimpleNamespace(clear_job_files=clear_job_files))
    assert bpy.ops.imageforge.clean_job_files() == {"FINISHED"}
    assert sent == [sorted(folder.name for folder in (old_jobs.packed, old_jobs.plain, old_jobs.failed))]
    assert old_jobs.image.is_dir() and old_jobs.clip.is_dir() and old_jobs.fresh.is_dir()
    assert not old_jobs.plain.exists()


def test_size_limit_deletes_the_oldest_beyond_it_and_protects_the_active_job(job_server, storage):
    from imageforge.addon import preferences
    from imageforge.addon.operators import job_files

    prefs = preferences.get_preferences()
    assert (prefs.job_files_max_age_days, prefs.job_files_max_size_gb) == (30, 5.0)  # the documented defaults
    oldest, older, newest = (make_job(storage, age_days=age, size=600_000) for age in (3, 2, 1))
    prefs.job_files_max_size_gb = 1.0 / 1024  # 1 MiB: only one 600 kB folder fits
    job_server.snapshot = {"state": "READY", "active_job": None}
    try:
        plan = job_files.cleanup_plan()
        assert [folder.path for folder in plan.delete] == [oldest, older]
        job_server.snapshot = {"state": "STOPPED", "active_job": {"job_id": oldest.name}}  # the server's job
        plan = job_files.cleanup_plan()
        assert [folder.path for folder in plan.protected] == [oldest]  # never deleted, but it counts toward the size
        assert [folder.path for folder in plan.delete] == [older, newest]
    finally:
        prefs.job_files_max_size_gb = 5.0


def test_cleanup_is_disabled_with_the_reason_while_anything_runs(job_server, storage):
    from imageforge.addon import blender_runtime
    from imageforge.addon.operators import availability, job_files

    for snapshot, reason in (
        ({"state": "BUSY"}, "The server is running a job; clean up job files when it is idle"),
        ({"state": "STARTING"}, "The server is starting; clean up job files once it is running or stopped"),
    ):
        job_server.snapshot = snapshot
        assert job_files.cleanup_reason() == reason
        assert not bpy.ops.imageforge.clean_job_files.poll()
    job_server.snapshot = {"state": "READY"}
    active = blender_runtime.get_runtime()
    active.active_job = SimpleNamespace(job_id="", directory=None, controller=None)
    try:
        assert job_files.cleanup_reason() == "Wait for the running ImageForge task to finish (Esc cancels it)"
        assert job_files.cleanup_reason() == availability.server_reason()  # one sentence, from one place
        assert not bpy.ops.imageforge.clean_job_files.poll()
    finally:
        active.active_job = None
    job_server.snapshot = {"state": "UNAVAILABLE"}  # no server environment: an earlier install's files remain
    assert availability.server_reason() is not None
    assert job_files.cleanup_route() == (job_files.Route.DIRECT, None)
    assert bpy.ops.imageforge.clean_job_files.poll()


def test_direct_cleanup_refuses_while_another_process_holds_the_storage_root(job_server, storage):
    from blendjob.storage import StorageLock

    old = make_job(storage, age_days=90)
    job_server.snapshot = {"state": "STOPPED"}
    other = StorageLock()  # what another Blender's running server holds
    other.acquire(storage)
    try:
        with pytest.raises(RuntimeError, match="Could not clean up job files: Another Blender process is using"):
            bpy.ops.imageforge.clean_job_files()  # an ERROR report: bpy.ops raises it
    finally:
        other.release()
    assert old.is_dir()


def test_confirmation_lists_what_is_freed_and_what_is_kept(job_server, old_jobs):
    from imageforge.addon.operators import job_files

    job_server.snapshot = {"state": "STOPPED"}
    dialog = SimpleNamespace(_preview=job_files.cleanup_plan(), layout=RecordingLayout())
    dialog.kept_text = job_files.IMAGEFORGE_OT_clean_job_files.kept_text
    job_files.IMAGEFORGE_OT_clean_job_files.draw(dialog, bpy.context)
    labels = dialog.layout.texts()
    deleted = (old_jobs.failed, old_jobs.plain, old_jobs.packed)  # oldest first
    freed = sum(path.stat().st_size for folder in deleted for path in folder.iterdir())
    assert labels[0] == f"Delete 3 job folders, freeing {job_files.format_bytes(freed)}?"
    assert [label.split("…")[0] for label in labels[1:4]] == [folder.name[:12] for folder in deleted]
    assert "failed" in labels[1] and "succeeded" in labels[3]
    assert labels[4].startswith("Keeps 3 job folders, ") and labels[4].endswith("(2 used by this file)")
    assert labels[5] == "Job outputs and logs are deleted permanently."


def test_server_panel_shows_the_cached_summary_and_the_cleanup(job_server, storage, monkeypatch):
    from imageforge.addon import blender_runtime
    from imageforge.addon.operators import job_files
    from imageforge.addon.panels.server import ServerPanel

    monkeypatch.setattr(blender_runtime.get_runtime(), "environment_ready", lambda root=None: True)
    monkeypatch.setattr(job_files, "METER", job_files.JobUsageMeter(max_age=3600.0))
    job_server.snapshot = {"state": "READY"}
    layout = draw(ServerPanel, bpy.context)
    assert "No job files" in layout.texts()
    assert "imageforge.clean_job_files" not in layout.operator_ids()

    first = make_job(storage, age_days=1, size=2048)
    make_job(storage, age_days=2, size=1024 * 1024)
    layout = draw(ServerPanel, bpy.context)
    assert "Job Files: 2 · 1.0 MB" in layout.texts()
    assert layout.find("imageforge.clean_job_files").enabled
    scans = job_files.METER.scans
    (first / "late.bin").write_bytes(b"x" * 4096)  # inside a folder: the jobs folder's mtime does not change
    for _ in range(5):
        layout = draw(ServerPanel, bpy.context)
    assert job_files.METER.scans == scans  # redraws read the cache
    assert "Job Files: 2 · 1.0 MB" in layout.texts()

    job_server.snapshot = {"state": "BUSY"}
    layout = draw(ServerPanel, bpy.context)
    button = layout.find("imageforge.clean_job_files")
    assert not button.enabled
    assert "The server is running a job; clean up job files when it is idle" in layout.texts()


def test_referenced_paths_are_absolute_resolved_and_skip_packed_data(job_server, tmp_path):
    from imageforge.addon.scene.referenced_files import referenced_paths

    folder = tmp_path / "renders"
    folder.mkdir()
    for name in ("plate.png", "packed.png", "strip_0001.png"):
        write_png_rgba(folder / name, np.ones((2, 2, 4), dtype=np.float32))
    bpy.data.images.load(str(folder / ".." / "renders" / "plate.png"), check_existing=False)
    bpy.data.images.load(str(folder / "packed.png"), check_existing=False).pack()
    bpy.data.images.new("Generated", 4, 4)  # no file at all
    scene = bpy.context.scene
    editor = scene.sequence_editor_create()
    editor.strips.new_image("Plate Strip", str(folder / "strip_0001.png"), 1, 1)
    try:
        found = referenced_paths()
    finally:
        scene.sequence_editor_clear()
    assert (folder / "plate.png").resolve() in found
    assert (folder / "strip_0001.png").resolve() in found
    assert (folder / "packed.png").resolve() not in found
    assert all(path.is_absolute() and ".." not in path.parts for path in found)
