"""Model management operators: Download Model (a job that changes no Blender data) and Unload Models."""

from __future__ import annotations

import bpy
from job_server import run_job_operator
from result_files import write_json
from scenes import undo_steps


def test_download_model_submits_the_key_and_pushes_no_undo_step(job_server, capfd):
    job_server.producers["download-model"] = lambda parameters, directory: {
        "manifest": write_json(directory / "manifest.json", {"models": {parameters["model"]: {}}}).name
    }
    before = undo_steps(capfd)
    assert run_job_operator(bpy.ops.imageforge.download_model, model="MOGE2_VITS_NORMAL") == {"FINISHED"}
    assert job_server.submitted == [("download-model", {"model": "MOGE2_VITS_NORMAL"})]
    assert undo_steps(capfd) == before


def test_unknown_models_are_refused_before_submitting(job_server):
    assert bpy.ops.imageforge.download_model("EXEC_DEFAULT", model="NOT_A_MODEL") == {"CANCELLED"}
    assert job_server.submitted == []


def test_unload_runs_only_on_an_idle_running_server(job_server):
    job_server.snapshot = {"state": "BUSY"}
    assert not bpy.ops.imageforge.unload_models.poll()
    job_server.snapshot = {"state": "READY"}
    assert bpy.ops.imageforge.unload_models() == {"FINISHED"}
    assert job_server.cleared == ["models"]
