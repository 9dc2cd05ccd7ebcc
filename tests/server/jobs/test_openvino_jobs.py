"""Jobs on Intel OpenVINO for real: the real server subprocess in the OpenVINO server environment (set up by the
production setup with `runtime="openvino"`, tests/kit/server_env.py), over real HTTP and the loopback hub.
`device=openvino` runs the kit upscaler on OpenVINO's CPU device; Automatic keeps it on CPU, since the catalog
entry does not say `openvino_auto` (openspec/0034)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image as PILImage

from imageforge.client.job_runner import run_job
from imageforge.contract.results import ResultName
from tests.kit.kit_server import served_kit
from tests.kit.onnx_models import upscaler_reference

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    with served_kit(tmp_path_factory.mktemp("openvino jobs"), ("KIT_UPSCALE",), "openvino") as served:
        yield served.runtime, served.storage


@pytest.fixture(scope="module")
def square(tmp_path_factory):
    pixels = np.random.default_rng(8).integers(0, 256, size=(48, 40, 3), dtype=np.uint8)
    path = tmp_path_factory.mktemp("inputs") / "square.png"
    PILImage.fromarray(pixels).save(path)
    return path, pixels


def test_upscale_runs_on_openvino_when_asked_and_on_cpu_automatically(served, square):
    runtime, storage = served
    path, pixels = square
    result = run_job(runtime, "upscale-image", {"input": str(path), "device": "openvino"})
    out = np.asarray(PILImage.open(result.file(ResultName.UPSCALE)))
    expected = upscaler_reference((pixels / 255).astype(np.float32).transpose(2, 0, 1)[None], receptive_radius=2)
    expected = np.round(np.clip(expected[0].transpose(1, 2, 0), 0, 1) * 255)
    assert out.shape == (192, 160, 3) and np.abs(out.astype(int) - expected).max() <= 1
    assert any((storage / "cache" / "openvino").iterdir())  # its compiled-model cache, in the storage root
    asked = json.loads(run_job(runtime, "debug-upscale", {"input": str(path), "device": "openvino"})
                       .file(ResultName.SUMMARY).read_text())  # fmt: skip
    automatic = json.loads(run_job(runtime, "debug-upscale", {"input": str(path)}).file(ResultName.SUMMARY).read_text())
    assert (asked["provider"], automatic["provider"]) == ("OpenVINOExecutionProvider", "CPUExecutionProvider")
