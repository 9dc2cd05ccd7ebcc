"""Add-on suites run under real Blender (`bpy` from PyPI, Python 3.11) in their own process.

Blender writes user files under $BLENDER_USER_RESOURCES and BlendJob its locks under $XDG_STATE_HOME:
both point into a temporary folder. bpy 4.5 can hang at interpreter exit if anything Blender-side is
still registered, so the process leaves with os._exit once pytest has its exit status.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

_SANDBOX = Path(tempfile.mkdtemp(prefix="imageforge-blender-"))
os.environ["BLENDER_USER_RESOURCES"] = str(_SANDBOX / "blender")
os.environ["XDG_STATE_HOME"] = str(_SANDBOX / "state")
os.environ["IMAGEFORGE_STORAGE_ROOT"] = str(_SANDBOX / "storage")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

import bpy  # noqa: E402
import pytest  # noqa: E402

_exit_status = 0


@pytest.fixture
def addon():
    """The add-on enabled through Blender's add-on machinery; disabled again afterwards."""
    import addon_utils

    addon_utils.enable("imageforge", default_set=True, handle_error=_raise)
    try:
        yield sys.modules["imageforge"]
    finally:
        addon_utils.disable("imageforge", default_set=True, handle_error=_raise)


@pytest.fixture
def job_server(addon, tmp_path):
    """An empty scene and the add-on, its runtime talking to a RecordingJobServer (job_server.py)."""
    from job_server import RecordingJobServer
    from scenes import empty_scene

    from imageforge import runtime

    empty_scene()
    active = runtime.get_runtime()
    real = active.server
    active.server = RecordingJobServer(tmp_path / "jobs")
    try:
        yield active.server
    finally:
        if active.active_job is not None:
            active.close_active()
        active.server = real


def _raise(error: BaseException) -> None:
    raise error


def pytest_sessionfinish(session, exitstatus):
    global _exit_status
    _exit_status = int(exitstatus)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    if "bpy" in sys.modules:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_exit_status)


__all__ = ["bpy"]
