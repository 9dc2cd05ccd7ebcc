"""The one lifecycle every job gets: validation first, state markers, no partial outputs, contained results."""

from __future__ import annotations

import json
import uuid

import pytest
from blendjob.server import JobCancelled, JobContext

from imageforge.contract import JOB_SPECS, ImageForgeError, InputError, JobId
from imageforge.server.handler import InvalidResultError, make_handler, runner_name
from imageforge.server.jobs import JOB_RUNNERS

SPEC = JOB_SPECS[JobId.DEBUG_BEN2]


def context_in(tmp_path):
    directory = tmp_path / "jobs" / uuid.uuid4().hex
    directory.mkdir(parents=True)
    return JobContext(directory.name, SPEC.id.value, {}, {}, tmp_path, directory)


def state(context) -> dict:
    return json.loads((context.directory / "job-state.json").read_text())


def test_every_job_of_the_contract_has_a_runner():
    assert set(JOB_RUNNERS) == set(JobId) == set(JOB_SPECS)


def test_each_runner_is_named_after_its_job():
    names = {job_id: runner.__name__ for job_id, runner in JOB_RUNNERS.items()}
    assert names == {job_id: runner_name(job_id) for job_id in JobId}
    assert names[JobId.GENERATE_DEPTH_PLANE_GEOMETRY] == "run_generate_depth_plane_geometry"


def test_parameters_are_validated_before_the_runner_is_called(tmp_path):
    calls = []
    handler = make_handler(SPEC, lambda context, params: calls.append(params) or {})
    with pytest.raises(InputError, match="'device' must be one of"):
        handler(context_in(tmp_path), {"input": "x.png", "device": "mps"})
    assert calls == []


def test_success_records_the_result_and_checks_it_names_files_inside(tmp_path):
    def run(context, params):
        (context.directory / "out.png").write_bytes(b"png")
        return {"foreground": "out.png"}

    context = context_in(tmp_path)
    assert make_handler(SPEC, run)(context, {"input": "x.png"}) == {"foreground": "out.png"}
    assert state(context) == {"state": "succeeded", "time": state(context)["time"], "result": {"foreground": "out.png"}}


@pytest.mark.parametrize("result", [{"x": "../escape.png"}, {"x": "missing.png"}, {"x": "."}, ["out.png"], {"x": 5}])
def test_results_outside_the_folder_or_missing_are_rejected_and_cleared(tmp_path, result):
    (tmp_path / "escape.png").write_bytes(b"outside")

    def run(context, params):
        (context.directory / "out.png").write_bytes(b"png")
        return result

    context = context_in(tmp_path)
    with pytest.raises(InvalidResultError):
        make_handler(SPEC, run)(context, {"input": "x.png"})
    assert sorted(entry.name for entry in context.directory.iterdir()) == ["job-state.json"]
    assert (tmp_path / "escape.png").read_bytes() == b"outside"


def test_unexpected_errors_become_one_sentence_and_outputs_are_removed(tmp_path):
    def run(context, params):
        (context.directory / "partial.png").write_bytes(b"half")
        (context.directory / "frames").mkdir()
        (context.directory / "frames" / "frame_0001.png").write_bytes(b"x")
        raise ZeroDivisionError("division by zero")

    context = context_in(tmp_path)
    with pytest.raises(ImageForgeError) as caught:
        make_handler(SPEC, run)(context, {"input": "x.png"})
    assert str(caught.value) == "Debug BEN2 failed unexpectedly (ZeroDivisionError: division by zero); see the job log."
    assert sorted(entry.name for entry in context.directory.iterdir()) == ["job-state.json", "job.log"]
    assert "Traceback" in (context.directory / "job.log").read_text()
    assert state(context)["error"] == str(caught.value)


def test_cancellation_clears_outputs_and_marks_the_folder(tmp_path):
    def run(context, params):
        (context.directory / "partial.png").write_bytes(b"half")
        context._request_cancel()
        context.check_cancelled()

    context = context_in(tmp_path)
    with pytest.raises(JobCancelled):
        make_handler(SPEC, run)(context, {"input": "x.png"})
    assert state(context)["state"] == "cancelled"
    assert not (context.directory / "partial.png").exists()
