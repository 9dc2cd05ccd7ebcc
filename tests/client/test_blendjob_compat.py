"""The BlendJob behaviour client/blendjob_compat.py relies on: each test fails loudly when a release changes it.

BlendJob is pinned exactly (pyproject.toml, server_environment.json); after bumping it, these tests say which
workaround to revisit (openspec/0017). The real-Blender side of the timer pinning is
tests/addon/test_registration.py (disabling the add-on removes both timers).
"""

from __future__ import annotations

import inspect
from pathlib import Path

from blendjob import JobResult, JobRuntime
from blendjob.maintenance import SetupController

from imageforge.client import blendjob_compat
from imageforge.client.job_runner import make_runtime


def test_a_finished_jobs_status_becomes_blendjobs_own_job_result(tmp_path: Path):
    (tmp_path / "out.png").write_bytes(b"png")
    status = {"job_id": "abc", "directory": str(tmp_path), "state": "succeeded", "result": {"image": "out.png"}}
    result = blendjob_compat.result_from_status(status)
    assert isinstance(result, JobResult)
    assert (result.job_id, result.directory, result.value) == ("abc", tmp_path, {"image": "out.png"})
    assert result.file("image") == (tmp_path / "out.png").resolve()


def test_blendjob_registers_and_unregisters_the_timer_callbacks_by_these_names(tmp_path: Path):
    for name in blendjob_compat.TIMER_CALLBACKS:
        assert inspect.isfunction(getattr(JobRuntime, name)), f"JobRuntime.{name} is gone: revisit pin_timer_callbacks"
    assert "_poll_server" in JobRuntime.enable.__code__.co_names
    assert "_redraw_status_bars" in JobRuntime.redraw_ui.__code__.co_names
    assert set(blendjob_compat.TIMER_CALLBACKS) <= set(JobRuntime.disable.__code__.co_names)


def test_pinned_callbacks_are_one_object_each(tmp_path: Path):
    runtime = make_runtime(tmp_path)
    for name in blendjob_compat.TIMER_CALLBACKS:
        assert getattr(runtime, name) is not getattr(runtime, name)  # a new bound method on every access
    blendjob_compat.pin_timer_callbacks(runtime)
    for name in blendjob_compat.TIMER_CALLBACKS:
        assert getattr(runtime, name) is getattr(runtime, name)
        assert getattr(runtime, name).__func__ is getattr(JobRuntime, name)


def test_setup_installs_through_the_instance_attribute_the_hook_wraps(tmp_path: Path):
    assert "install" in SetupController.perform.__code__.co_names  # perform() calls self.install()
    assert list(inspect.signature(SetupController.install).parameters) == ["self"]
    controller = make_runtime(tmp_path).setup_controller(tmp_path / "server")
    assert isinstance(controller, SetupController)
    calls: list[str] = []
    controller.install = lambda: calls.append("install")  # stands in for BlendJob's (it builds a venv)
    blendjob_compat.run_before_install(controller, lambda: calls.append("before"))
    assert calls == []  # creating the controller installs nothing
    controller.install()
    assert calls == ["before", "install"]
