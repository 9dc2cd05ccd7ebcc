"""The one lifecycle every job gets: validation first, state markers, no partial outputs, contained results."""

from __future__ import annotations

import json
import uuid

import pytest
from blendjob.server import JobCancelled, JobContext

from imageforge.contract import JOB_SPECS, ImageForgeError, InputError, JobId
from imageforge.contract.job_state import FailureKind, failure_kind
from imageforge.contract.jobs import OutputKind
from imageforge.contract.results import ResultName
from imageforge.server.handler import InvalidResultError, make_handler, runner_name
from imageforge.server.jobs import JOB_RUNNERS

SPEC = JOB_SPECS[JobId.DEBUG_BEN2]
DECLARED = {ResultName.RAW: "raw.npz", ResultName.SUMMARY: "summary.json"}  # what SPEC's job returns


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


def write_declared(directory) -> dict[ResultName, str]:
    for filename in DECLARED.values():
        (directory / filename).write_bytes(b"data")
    return dict(DECLARED)


def test_success_records_the_result_and_checks_it_names_files_inside(tmp_path):
    context = context_in(tmp_path)
    assert make_handler(SPEC, lambda context, params: write_declared(context.directory))(
        context, {"input": "x.png"}
    ) == {"raw": "raw.npz", "summary": "summary.json"}
    assert state(context) == {
        "state": "succeeded",
        "time": state(context)["time"],
        "result": {"raw": "raw.npz", "summary": "summary.json"},
    }


@pytest.mark.parametrize("raw", ["../escape.png", "missing.png", ".", 5])
def test_results_outside_the_folder_or_missing_are_rejected_and_cleared(tmp_path, raw):
    (tmp_path / "escape.png").write_bytes(b"outside")

    def run(context, params):
        return {**write_declared(context.directory), ResultName.RAW: raw}

    context = context_in(tmp_path)
    with pytest.raises(InvalidResultError):
        make_handler(SPEC, run)(context, {"input": "x.png"})
    assert sorted(entry.name for entry in context.directory.iterdir()) == ["job-state.json", "job.log"]
    assert (tmp_path / "escape.png").read_bytes() == b"outside"


def test_a_result_that_is_not_a_dict_is_rejected(tmp_path):
    context = context_in(tmp_path)
    with pytest.raises(InvalidResultError, match="^Debug BEN2 returned no result files; this is a bug"):
        make_handler(SPEC, lambda context, params: ["raw.npz"])(context, {"input": "x.png"})


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


@pytest.mark.parametrize(
    ("raised", "kind"),
    [
        (InputError("The file is not an image."), FailureKind.INPUT),
        (ImageForgeError("The model could not be loaded."), FailureKind.FAILURE),
        (ZeroDivisionError("division by zero"), FailureKind.FAILURE),
    ],
    ids=["input", "imageforge", "unexpected"],
)
def test_a_failed_folder_says_whether_the_input_was_wrong(tmp_path, raised, kind):
    def run(context, params):
        raise raised

    context = context_in(tmp_path)
    with pytest.raises(ImageForgeError):
        make_handler(SPEC, run)(context, {"input": "x.png"})
    assert state(context)["failure"] == kind.value
    assert failure_kind(context.directory) is kind


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


def failed_names(tmp_path, spec, parameters, result) -> tuple[str, dict, str]:
    """Run `spec` with a job that writes and returns `result`: (the error, the state marker, the job log)."""

    def run(context, params):
        for filename in result.values():
            (context.directory / filename).write_bytes(b"data")
        return result

    context = context_in(tmp_path)
    with pytest.raises(InvalidResultError) as caught:
        make_handler(spec, run)(context, {"input": "x.png", **parameters})
    files = sorted(entry.name for entry in context.directory.iterdir())
    assert files == ["job-state.json", "job.log"]  # the files written under any name are gone
    log = (context.directory / "job.log").read_text()
    assert f"Job {context.directory.name} ({spec.id.value}): {caught.value}" in log
    return str(caught.value), state(context), log


def test_a_result_the_spec_does_not_declare_fails_the_job_and_names_it(tmp_path):
    message, marker, log = failed_names(tmp_path, SPEC, {}, {**DECLARED, "foreground": "foreground.png"})
    assert message == "Debug BEN2 returned undeclared result(s) foreground; this is a bug in ImageForge."
    assert marker["state"] == "failed" and marker["error"] == message
    assert "[ERROR]" in log


def test_a_declared_result_the_job_did_not_return_fails_the_job(tmp_path):
    message, _, _ = failed_names(tmp_path, SPEC, {}, {ResultName.RAW: "raw.npz"})
    assert message == "Debug BEN2 did not return summary; this is a bug in ImageForge."


def test_provenance_is_the_handlers_result_not_the_jobs(tmp_path):
    message, _, _ = failed_names(tmp_path, SPEC, {}, {**DECLARED, ResultName.PROVENANCE: "provenance.json"})
    assert message == "Debug BEN2 returned undeclared result(s) provenance; this is a bug in ImageForge."


@pytest.mark.parametrize(
    ("kind", "returned", "expected"),
    [(OutputKind.ALPHA, ResultName.FOREGROUND, "alpha"), (OutputKind.FOREGROUND, ResultName.ALPHA, "foreground")],
)
def test_a_conditional_result_is_checked_against_the_parameters(tmp_path, kind, returned, expected):
    spec = JOB_SPECS[JobId.REMOVE_BACKGROUND]
    message, _, _ = failed_names(tmp_path, spec, {"output_kind": kind.value}, {returned: f"{returned}.png"})
    assert message == (
        f"Remove Background returned undeclared result(s) {returned} and did not return {expected}; "
        "this is a bug in ImageForge."
    )


def test_a_conditional_result_the_parameters_ask_for_passes(tmp_path):
    spec = JOB_SPECS[JobId.REMOVE_BACKGROUND]

    def run(context, params):
        (context.directory / "alpha.exr").write_bytes(b"exr")
        return {ResultName.ALPHA: "alpha.exr"}

    result = make_handler(spec, run)(context_in(tmp_path), {"input": "x.png", "output_kind": "alpha"})
    assert result == {"alpha": "alpha.exr"}
