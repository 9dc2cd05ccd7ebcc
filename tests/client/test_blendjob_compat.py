"""The BlendJob behaviour client/blendjob_compat.py relies on: each test fails loudly when a release changes it.

BlendJob is pinned exactly (pyproject.toml, server_environment.json); after bumping it, these tests say which
workaround to revisit (openspec/0017). The real-Blender side of the timer pinning is
tests/addon/test_registration.py (disabling the add-on removes both timers).
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import blendjob as blendjob_package
from blendjob import JobResult, JobRuntime
from blendjob.controller import ServerController
from blendjob.maintenance import MaintenanceController, SetupController
from blendjob.operator import JobOperatorBase, JobOperatorState

from imageforge.client import blendjob_compat
from imageforge.client.authenticated import AuthenticatedJobClient
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


# -- the controller BlendJob's runtime calls (client/controller.py) -----------------------------------------


def _attributes_asked_of(holder: str, *modules: str) -> set[str]:
    """Every `<something>.<holder>.<name>` that these BlendJob modules read or call."""
    root = Path(inspect.getfile(blendjob_package)).parent
    names: set[str] = set()
    for module in modules:
        for node in ast.walk(ast.parse((root / module).read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) and node.value.attr == holder:
                names.add(node.attr)
    return names


def test_blendjob_asks_of_its_server_controller_only_what_controller_calls_names():
    asked = _attributes_asked_of("server", "runtime.py", "maintenance.py")
    asked |= _attributes_asked_of("controller", "operator.py", "runtime.py") - {"cancellable"}  # maintenance only
    assert asked == blendjob_compat.CONTROLLER_CALLS, "BlendJob calls its controller differently: revisit client/"
    assert isinstance(inspect.getattr_static(MaintenanceController, "cancellable"), property)
    assert _attributes_asked_of("client", "runtime.py") == blendjob_compat.CONNECTION_CLIENT_CALLS


def test_the_client_controller_answers_every_call_blendjob_makes(tmp_path: Path):
    runtime = make_runtime(tmp_path)
    assert not isinstance(runtime.server, ServerController)  # ImageForge's own, not a subclass of BlendJob's
    for name in blendjob_compat.CONTROLLER_CALLS:
        assert hasattr(runtime.server, name), name
    for name in blendjob_compat.CONNECTION_CLIENT_CALLS:
        assert callable(getattr(AuthenticatedJobClient, name, None)), name
    assert isinstance(runtime.server_controller(tmp_path), type(runtime.server))  # setup's and migration's too
    command = runtime.server_command(1234, "a" * 32)  # ImageForge's launcher, not BlendJob's runner
    assert command[2].endswith("launcher.py") and "--instance-id" in command and "--entrypoint" not in command


def test_no_class_of_the_client_derives_from_blendjobs_controller_or_client():
    import imageforge.client as client_package

    for path in Path(client_package.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = {ast.unparse(base).split(".")[-1] for base in node.bases}
                assert not bases & {"ServerController", "JobClient"}, f"{path.name}: {node.name} derives from {bases}"


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
