"""Add-on suites run under real Blender (`bpy` from PyPI, Python 3.11 or 3.13) in their own process, once per
Blender release of the test matrix (tests/run).

Blender writes user files under $BLENDER_USER_RESOURCES and BlendJob its locks under $XDG_STATE_HOME:
both point into a temporary folder. bpy 4.5 can hang at interpreter exit if anything Blender-side is
still registered, so the process leaves with os._exit once pytest has its exit status. A deprecation warning
fails the test that caused it: an API that a tested Blender release deprecates (5.0's `Material.use_nodes`,
wide lines without the polyline shader) fails the suite under that release, not a user's console later.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import warnings
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
def server(addon, monkeypatch):
    """The add-on's runtime with its server environment installed, for drawing panels; its last poll restored."""
    from imageforge.addon import blender_runtime

    active = blender_runtime.get_runtime()
    monkeypatch.setattr(active, "environment_ready", lambda root=None: True)
    saved = active.server.snapshot
    yield active
    active.server.snapshot = saved


@pytest.fixture
def reports(monkeypatch):
    """Every report the ImageForge job operators make, in order, as (level, message); Blender still gets them."""
    from imageforge.addon.operators.base import ImageForgeJobOperator

    made: list[tuple[str, str]] = []
    original = ImageForgeJobOperator.report_outcome

    def report_outcome(self, level, message):
        made.append((level, message))
        original(self, level, message)

    monkeypatch.setattr(ImageForgeJobOperator, "report_outcome", report_outcome)
    return made


@pytest.fixture
def job_server(addon, tmp_path):
    """An empty scene and the add-on, its runtime talking to a RecordingJobServer (job_server.py)."""
    from job_server import RecordingJobServer
    from scenes import empty_scene

    from imageforge.addon import blender_runtime

    empty_scene()
    active = blender_runtime.get_runtime()
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


@contextlib.contextmanager
def _no_deprecated_api():
    """Fail when code under test uses an API this Blender deprecates. Recorded, not raised: Blender's RNA
    emits its deprecation warnings from C without checking for an error, so an "error" filter would leave
    an exception pending and fail some later, unrelated call instead."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    deprecated = [
        f"{warning.filename}:{warning.lineno}: {warning.category.__name__}: {warning.message}"
        for warning in caught
        if issubclass(warning.category, DeprecationWarning | PendingDeprecationWarning)
    ]
    assert not deprecated, f"deprecated API used under Blender {bpy.app.version_string}:\n" + "\n".join(deprecated)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    with _no_deprecated_api():
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    with _no_deprecated_api():
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    with _no_deprecated_api():
        return (yield)


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
