"""Every image job through the real server subprocess, real HTTP and the loopback hub: the job downloads its
kit model itself the first time, runs it on ONNX Runtime's CPU provider and returns files in its folder."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image as PILImage

from imageforge.client.job_runner import JobFailedError, run_job
from imageforge.contract.results import ResultName
from imageforge.server.matting import estimate_foreground
from tests.kit.kit_server import served_kit
from tests.kit.onnx_models import BEN2_LUMA, upscaler_reference

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    with served_kit(tmp_path_factory.mktemp("image jobs"), ("KIT_BEN2", "KIT_UPSCALE")) as served:
        yield served.runtime, served.hub


@pytest.fixture(scope="module")
def square(tmp_path_factory) -> tuple[Path, np.ndarray]:
    pixels = np.random.default_rng(6).integers(0, 256, size=(64, 64, 3), dtype=np.uint8)
    path = tmp_path_factory.mktemp("inputs") / "square ü.png"
    PILImage.fromarray(pixels).save(path)
    return path, pixels


def matte(pixels: np.ndarray) -> np.ndarray:
    luma = (pixels / 255) @ np.array(BEN2_LUMA)
    return (luma - luma.min()) / (luma.max() - luma.min())


def job_log(result) -> str:
    return (Path(result.directory) / "job.log").read_text(encoding="utf-8")


def test_remove_background_downloads_its_model_and_cuts_out(served, square):
    runtime, hub = served
    path, pixels = square
    messages = []
    result = run_job(runtime, "remove-background", {"input": str(path)}, on_progress=messages.append)
    foreground = np.asarray(PILImage.open(result.file(ResultName.FOREGROUND)))
    np.testing.assert_allclose(foreground[..., 3] / 255, matte(pixels), atol=3 / 255)
    expected = (pixels / 255).astype(np.float32)  # the colour at the soft edge is the estimated foreground
    estimate_foreground(expected, matte(pixels).astype(np.float32))
    np.testing.assert_allclose(foreground[..., :3] / 255, expected, atol=2 / 255)
    assert "Foreground colour estimated on" in job_log(result)
    assert any("kit/kit-ben2/resolve/main/model.onnx" in request.path for request in hub.requests)
    assert "runs on cpu (CPUExecutionProvider)" in job_log(result)
    assert "KIT_BEN2 model.onnx:" in job_log(result)  # the download ran inside this job
    assert messages[-1]["state"] == "succeeded"


def test_refine_selection_on_the_server(served, square):
    runtime, _ = served
    path, pixels = square
    result = run_job(runtime, "refine-image-selection", {"input": str(path), "selection": {"box": [8, 8, 40, 40]}})
    alpha = np.asarray(PILImage.open(result.file(ResultName.ALPHA)))
    assert alpha.shape == (64, 64) and alpha.dtype in (np.uint16, np.int32)
    assert alpha[10:38, 10:38].max() > 60000 and np.all(alpha[:, 48:] == 0) and np.all(alpha[48:] == 0)
    cutout = np.asarray(PILImage.open(result.file(ResultName.CUTOUT)))
    hard = (alpha == 0) | (alpha == 65535)  # the cutout's colour is estimated only where its matte is soft
    np.testing.assert_array_equal(cutout[..., :3][hard], pixels[hard])
    with pytest.raises(JobFailedError, match="outside the image"):
        run_job(runtime, "refine-image-selection", {"input": str(path), "selection": {"box": [80, 80, 90, 90]}})


def test_upscale_image_on_the_server(served, square):
    runtime, _ = served
    path, pixels = square
    messages = []
    result = run_job(runtime, "upscale-image", {"input": str(path)}, on_progress=messages.append)
    out = np.asarray(PILImage.open(result.file(ResultName.UPSCALE)))
    expected = upscaler_reference((pixels / 255).astype(np.float32).transpose(2, 0, 1)[None], receptive_radius=2)
    expected = np.round(np.clip(expected[0].transpose(1, 2, 0), 0, 1) * 255)
    assert out.shape == (256, 256, 3) and np.abs(out.astype(int) - expected).max() <= 1
    assert "1 tile(s) of 64px" in job_log(result)
    assert messages[-1]["state"] == "succeeded"


@pytest.mark.parametrize("job", ["debug-ben2", "debug-upscale"])
def test_debug_jobs_on_the_server(served, square, job):
    runtime, _ = served
    path, _ = square
    result = run_job(runtime, job, {"input": str(path)})
    summary = json.loads(result.file(ResultName.SUMMARY).read_text())
    assert summary["provider"] == "CPUExecutionProvider"
    assert "frame" in np.load(result.file(ResultName.RAW)).files
