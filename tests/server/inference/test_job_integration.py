"""The "models" resource inside the real BlendJob server and a real JobContext, as an adapter would use it."""

from __future__ import annotations

import json

import numpy as np
from blendjob.server import JobContext

from imageforge.contract import Device
from imageforge.server.app import create_server
from imageforge.server.inference import ModelManager, current_fraction, job_warner
from tests.kit.onnx_models import upscaler_reference


def test_server_registers_models_and_a_job_runs_through_it(storage_root, upscaler, tmp_path):
    server = create_server()
    server.bind(storage_root)
    try:
        models = server.resources["models"]
        assert isinstance(models, ModelManager)
        assert models.runtime.version  # waits for the background detection the factory started
        snapshot = server.resource_snapshot("models")
        assert snapshot["devices"][-1] == "cpu" and snapshot["onnxruntime"]["version"]
        context = JobContext("job1", "upscale", {}, server.resources, storage_root, tmp_path / "job1")
        context.directory.mkdir()
        context.progress(0.4, "Upscaling")
        handle = context.resource("models").acquire(upscaler, Device.CPU, warn=job_warner(context))
        image = np.ones((1, 3, 4, 4), np.float32)
        np.testing.assert_array_equal(handle.run({"input": image}, last_run=True)["output"], upscaler_reference(image))
        snapshot = server.resource_snapshot("models")
        assert snapshot["loaded"][0]["model"] == "KIT_UPSCALER"
        assert json.loads(json.dumps(snapshot)) == snapshot  # /health serves it as JSON
        assert server.clear_resource("models") is True
        assert server.resource_snapshot("models")["loaded"] == []
    finally:
        server.close()
    assert server.resources["models"].snapshot()["loaded"] == []


def test_warnings_reach_the_progress_message_and_the_job_log(storage_root, tmp_path):
    context = JobContext("job2", "upscale", {}, {}, storage_root, tmp_path)
    context.progress(0.25, "Upscaling tile 1 of 4")
    job_warner(context)("NVIDIA CUDA is not available on this computer (no driver); running on CPU.")
    status = context._snapshot()
    assert (status["progress"], status["message"]) == (
        0.25,
        "NVIDIA CUDA is not available on this computer (no driver); running on CPU.",
    )
    assert "[WARNING] NVIDIA CUDA is not available" in (tmp_path / "job.log").read_text(encoding="utf-8")


def test_current_fraction_reads_what_the_job_last_published(storage_root, tmp_path):
    context = JobContext("job3", "upscale", {}, {}, storage_root, tmp_path)
    assert current_fraction(context) == 0.0
    context.progress(0.375, "Upscaling tile 3 of 8")
    assert current_fraction(context) == 0.375
    assert current_fraction(object()) == 0.0  # a context without BlendJob's snapshot
