"""A real job that runs long enough to stop, restart or kill its server under it: a model download from the
kit's loopback hub with the "slow" fault (about 100 kB/s), next to a small model that downloads at once."""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path

from tests.kit.hub import LoopbackHub

FAST_BYTES = bytes(range(256)) * 256  # 64 KiB
SLOW_BYTES = hashlib.sha256(b"slow").digest() * (3 * 1024 * 1024 // 32)  # 3 MiB: ~30 s with the "slow" fault


@dataclass
class Models:
    hub: LoopbackHub
    root: Path
    slow_key: str

    def model_file(self, directory: str) -> Path:
        return self.root / "models" / directory / "onnx" / "model.onnx"

    def job_state(self, job_id: str) -> dict:
        return json.loads((self.root / "jobs" / job_id / "job-state.json").read_text(encoding="utf-8"))


def catalog_entry(key: str, directory: str, content: bytes) -> dict:
    return {
        "key": key,
        "family": "background",
        "adapter": "ben2",
        "label": key.replace("_", " ").title(),
        "license": "Apache-2.0",
        "repository": f"kit/{directory}",
        "directory": directory,
        "default": False,
        "files": [{"path": "onnx/model.onnx", "size": len(content), "sha256": hashlib.sha256(content).hexdigest()}],
    }


def start_slow_download(runtime, models: Models, timeout: float = 60.0) -> str:
    """Submit the SLOW download and return its job id once bytes are flowing from the hub."""
    runtime.server.ensure(timeout=120)
    job_id = runtime.server.submit("download-model", {"model": "SLOW"})["job_id"]
    deadline = time.monotonic() + timeout
    while not any(r.path == models.slow_key and r.method == "GET" and r.bytes_sent for r in models.hub.requests):
        assert time.monotonic() < deadline, "the slow download never started"
        time.sleep(0.02)
    assert runtime.server.status(job_id)["state"] == "running"
    return job_id
