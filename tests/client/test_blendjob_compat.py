"""The BlendJob behaviour client/blendjob_compat.py relies on: each test fails loudly when a release changes it.

BlendJob is pinned exactly (pyproject.toml, server_environment.json); after bumping it, these tests say which
workaround to revisit (openspec/0017). The real-Blender side of the timer pinning is
tests/addon/test_registration.py (disabling the add-on removes both timers).
"""

from __future__ import annotations

import inspect
import socket
import subprocess
import sys
from pathlib import Path

from blendjob import JobResult, JobRuntime
from blendjob.controller import ServerController
from blendjob.maintenance import SetupController
from blendjob.operator import JobOperatorBase, JobOperatorState

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


def _calls(function) -> set[str]:
    return set(function.__code__.co_names)


def _parameters(function) -> list[str]:
    return list(inspect.signature(function).parameters)


# -- ServerControllerHooks (client/controller.py) --------------------------------------------------------------


def test_blendjob_reaches_the_controller_hooks_by_these_private_names():
    assert "_recover_connection" in _calls(ServerController.start) & _calls(ServerController.stop)
    assert "_close_finished_process" in _calls(ServerController.ensure) & _calls(ServerController.poll)
    assert "_close_process" in _calls(ServerController._close_finished_process)
    assert _parameters(ServerController._recover_connection) == ["self"]
    assert _parameters(ServerController._close_finished_process) == ["self"]
    assert _parameters(ServerController._close_process) == ["self", "terminate"]
    assert _parameters(ServerController._available_port) == ["self"]


class RecordingController(blendjob_compat.ServerControllerHooks):
    def __init__(self, root: Path) -> None:
        super().__init__(lambda port, instance_id: [], cwd_factory=lambda: root, log_path_factory=lambda: root / "log")
        self.calls: list[str] = []

    def recover_connection(self):
        self.calls.append("recover_connection")
        return super().recover_connection()

    def close_finished_process(self) -> None:
        self.calls.append("close_finished_process")
        super().close_finished_process()


def test_blendjobs_own_calls_reach_the_public_controller_hooks(tmp_path: Path):
    controller = RecordingController(tmp_path)
    controller.stop(timeout=0.1)  # no server of this folder: BlendJob's stop recovers nothing
    assert controller.calls == ["recover_connection"] and controller.connection is None
    controller.calls.clear()
    assert controller.poll() == 2.0  # not running, no auto start: BlendJob's poll closes a finished process
    assert controller.calls == ["close_finished_process"]
    assert controller.snapshot["state"] == "STOPPED"


def test_a_finished_process_is_forgotten_and_a_running_one_kept(tmp_path: Path):
    controller = RecordingController(tmp_path)
    controller.process = subprocess.Popen([sys.executable, "-c", "pass"])
    controller.process.wait()
    controller.connection = object()
    controller.close_finished_process()
    assert (controller.process, controller.connection) == (None, None)
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        controller.process, controller.connection = running, object()
        controller.close_finished_process()
        assert controller.process is running and controller.connection is not None
        controller.log_file = (tmp_path / "server.log").open("a", encoding="utf-8")
        log_file = controller.log_file
        controller.close_process(terminate=True)  # ends it, forgets it, closes its log
        assert running.poll() is not None and controller.process is None
        assert controller.log_file is None and log_file.closed
    finally:
        running.kill()
        running.wait()


def test_the_available_port_is_a_free_loopback_port(tmp_path: Path):
    port = RecordingController(tmp_path).available_port()
    assert isinstance(port, int) and 1024 <= port <= 65535
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", port))  # free: binding it works


# -- JobRuntimeHooks (the server command) ----------------------------------------------------------------------


def test_blendjob_builds_its_controllers_from_the_server_command_hook(tmp_path: Path):
    assert "_server_command" in _calls(JobRuntime.__init__)
    assert _parameters(JobRuntime._server_command) == ["self", "port", "instance_id", "root"]
    runtime = make_runtime(tmp_path)
    assert isinstance(runtime, blendjob_compat.JobRuntimeHooks)
    assert runtime._server_command(1234, "a" * 32) == runtime.server_command(1234, "a" * 32)
    command = runtime.server.command_factory(1234, "a" * 32)  # ImageForge's launcher, through the public name
    assert command[2].endswith("launcher.py") and "--instance-id" in command


def test_the_default_server_command_is_blendjobs_runner(tmp_path: Path):
    runtime = make_runtime(tmp_path)
    command = blendjob_compat.JobRuntimeHooks.server_command(runtime, 1234, "a" * 32, root=tmp_path)
    assert command == JobRuntime._server_command(runtime, 1234, "a" * 32, root=tmp_path)
    assert "--port" in command and command[command.index("--port") + 1] == "1234"


# -- JobOperatorHooks (every job operator; the batch operator overrides them) ----------------------------------


def test_blendjobs_operator_calls_its_hooks_by_these_private_names():
    modal = _calls(JobOperatorBase.modal)
    assert {"_finish_success", "_finish_failure", "_close", "_update_from_job_status"} <= modal
    assert "_submit_job" in _calls(JobOperatorBase.execute)
    assert "_close" in _calls(JobOperatorBase._finish_success) & _calls(JobOperatorBase._finish_failure)
    assert _parameters(JobOperatorBase._finish_success) == ["self", "context", "job", "status"]
    assert _parameters(JobOperatorBase._finish_failure) == ["self", "context", "job", "error"]
    assert _parameters(JobOperatorBase._close) == ["self", "context", "job", "message", "cancelled"]
    assert inspect.signature(JobOperatorBase._close).parameters["cancelled"].kind is inspect.Parameter.KEYWORD_ONLY
    assert _parameters(JobOperatorBase._update_from_job_status) == ["self", "context", "job", "status"]
    assert _parameters(JobOperatorBase._submit_job) == ["self", "job", "parameters"]
    fields = set(JobOperatorState.__dataclass_fields__)
    assert {"job_id", "directory", "started", "start_error", "start_thread", "controller", "progress"} <= fields


class Recorder(blendjob_compat.JobOperatorHooks):
    job_type = "debug-job"

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def finish_success(self, context, job, status):
        self.calls.append(("finish_success", status["state"]))
        return {"FINISHED"}

    def finish_failure(self, context, job, error):
        self.calls.append(("finish_failure", str(error)))
        return {"CANCELLED"}

    def close_job(self, context, job, message, *, cancelled):
        self.calls.append(("close_job", message, cancelled))
        return {"CANCELLED"}

    def update_from_job_status(self, context, job, status):
        self.calls.append(("update_from_job_status", status["state"]))


class Controller:
    """What JobOperatorState.controller must answer: submit and status (ImageForge's controller in use)."""

    def __init__(self, tmp_path: Path, state: str) -> None:
        self.tmp_path, self.state = tmp_path, state

    def submit(self, job_type: str, parameters: dict) -> dict:
        return {"job_id": "c" * 32, "directory": str(self.tmp_path / job_type)}

    def status(self, job_id: str) -> dict:
        return {"job_id": job_id, "state": self.state, "error": "the model file is missing"}


def test_blendjobs_private_hooks_reach_the_public_ones(tmp_path: Path):
    operator = Recorder()
    job = JobOperatorState(runtime=None, operator=operator, controller=Controller(tmp_path, "succeeded"))
    operator.submit_job(job, {"image": "in.png"})
    assert (job.job_id, job.directory, job.started, job.start_error) == ("c" * 32, tmp_path / "debug-job", True, "")
    assert operator._finish_success(None, job, {"state": "succeeded"}) == {"FINISHED"}
    assert operator._finish_failure(None, job, RuntimeError("boom")) == {"CANCELLED"}
    assert operator._close(None, job, "Task cancelled", cancelled=True) == {"CANCELLED"}
    operator._update_from_job_status(None, job, {"state": "running"})
    assert operator.calls == [
        ("finish_success", "succeeded"),
        ("finish_failure", "boom"),
        ("close_job", "Task cancelled", True),
        ("update_from_job_status", "running"),
    ]
