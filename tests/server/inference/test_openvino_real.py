"""OpenVINO for real on this machine's CPU: the OpenVINO server environment (onnxruntime-openvino, built by the
production setup with `runtime="openvino"`, tests/kit/server_env.py) lists the device, runs a kit model on
OpenVINO's CPU device through the session factory, and falls back to CPU with one sentence when OpenVINO
cannot create its session (here: asked for a GPU this machine lacks). The code runs in that environment's
Python (a child process): the project's own environment has onnxruntime-gpu, and the two never mix."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import blendjob
import numpy as np
import pytest

from tests.kit.onnx_models import build_upscaler, upscaler_reference
from tests.kit.server_env import cached_environment

pytestmark = pytest.mark.slow

SRC = Path(__file__).resolve().parents[3] / "src"
BLENDJOB = Path(blendjob.__file__).resolve().parents[1]  # as the server's launcher puts it on sys.path

CHILD = """
import json, sys
sys.path.insert(0, sys.argv[5])  # BlendJob, imported then dropped from the path as the server's launcher does
import blendjob.server
sys.path.remove(sys.argv[5])
from dataclasses import replace
from pathlib import Path
import numpy as np
from imageforge.contract import Device
from imageforge.server.inference.devices import detect_runtime, resolve_device
from imageforge.server.inference.session_factory import SessionRequest, create_session

graph, cache, image = Path(sys.argv[1]), Path(sys.argv[2]), np.load(sys.argv[3])
runtime = detect_runtime()
request = SessionRequest("KIT_UPSCALER", (graph,), Device.OPENVINO, threads=1, label="Kit Upscaler")
created = create_session(runtime, request, openvino_cache=cache)
output = created.session.run(None, {"input": image})[0]
np.save(sys.argv[4], output)
runtime.targets[Device.OPENVINO] = "GPU"  # what a machine whose Intel GPU vanished since the probe sees
missing = create_session(runtime, request)
print(json.dumps({
    "variant": runtime.variant,
    "devices": [device.value for device in runtime.devices],
    "unavailable": {device.value: reason for device, reason in runtime.unavailable.items()},
    "auto": resolve_device("auto", runtime).device.value,
    "auto_measured": resolve_device("auto", runtime, openvino_auto=True).device.value,
    "providers": list(created.providers),
    "device": created.device.value,
    "fallback": created.fallback,
    "cached": sorted(path.name for path in cache.iterdir()),
    "missing": [missing.device.value, list(missing.providers), missing.fallback],
}))
"""


@pytest.fixture(scope="module")
def openvino_python() -> str:
    return str(cached_environment("openvino") / ".venv" / "bin" / "python")


def test_openvino_cpu_device_is_listed_runs_a_model_and_falls_back_when_it_cannot_start(openvino_python, tmp_path):
    graph = build_upscaler(tmp_path / "upscaler.onnx", receptive_radius=1)
    image = np.random.default_rng(3).random((1, 3, 12, 16), dtype=np.float32)
    np.save(tmp_path / "image.npy", image)
    environment = {**os.environ, "PYTHONPATH": str(SRC)}
    completed = subprocess.run(
        [openvino_python, "-c", CHILD, str(graph), str(tmp_path / "cache"), str(tmp_path / "image.npy"),
         str(tmp_path / "output.npy"), str(BLENDJOB)],
        capture_output=True, text=True, env=environment, check=False, timeout=300,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-3000:]
    seen = json.loads(completed.stdout.strip().splitlines()[-1])
    assert seen["variant"] == "onnxruntime-openvino"
    assert seen["devices"] == ["openvino", "cpu"] and seen["unavailable"] == {}
    assert (seen["auto"], seen["auto_measured"]) == ("cpu", "openvino")  # Automatic only where measured faster
    assert (seen["device"], seen["fallback"]) == ("openvino", None)
    assert seen["providers"] == ["OpenVINOExecutionProvider", "CPUExecutionProvider"]
    assert any(name.endswith(".blob") for name in seen["cached"]), seen["cached"]  # the compiled-model cache
    np.testing.assert_allclose(
        np.load(tmp_path / "output.npy"), upscaler_reference(image, receptive_radius=1), atol=1e-5
    )
    device, providers, fallback = seen["missing"]
    assert (device, providers) == ("cpu", ["CPUExecutionProvider"])
    assert fallback == (
        "Intel OpenVINO could not load Kit Upscaler (ONNX Runtime did not start OpenVINOExecutionProvider); "
        "running on CPU."
    )
