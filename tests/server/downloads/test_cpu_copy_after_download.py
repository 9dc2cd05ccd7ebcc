"""On a CPU-only machine a downloaded fp16 model gets its fp32 CPU copy in the download job, not in the first job."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from imageforge.contract import Device
from imageforge.server.app import create_server
from imageforge.server.cpu_copies.cpu_copy import CopyStatus, copy_path, read_record
from tests.kit.catalog import catalog_entry, write_catalog
from tests.kit.onnx_models import build_ben2, build_ben2_fp16


@pytest.fixture
def served(tmp_path: Path, hub, monkeypatch: pytest.MonkeyPatch) -> dict[str, bytes]:
    files = {
        "FP16": build_ben2_fp16(tmp_path / "fp16.onnx").read_bytes(),
        "FP32": build_ben2(tmp_path / "fp32.onnx", size=32).read_bytes(),
    }
    for key, data in files.items():
        hub.add_hub_file(f"kit/{key.lower()}", "onnx/model.onnx", data)
    entries = [catalog_entry(key, {"onnx/model.onnx": data}) for key, data in files.items()]
    monkeypatch.setenv("IMAGEFORGE_MODEL_CATALOG", str(write_catalog(tmp_path / "catalog.json", entries)))
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    return files


def finish(context, timeout: float = 60.0) -> dict:
    deadline = time.monotonic() + timeout
    while (snapshot := context._snapshot())["state"] not in ("succeeded", "failed", "cancelled"):
        assert time.monotonic() < deadline, snapshot
        time.sleep(0.02)
    return snapshot


def test_the_download_job_prepares_the_cpu_copy_of_fp16_models_only(storage_root: Path, served):
    server = create_server()
    server.bind(storage_root)
    try:
        assert server.resources["models"].runtime.devices == (Device.CPU,)
        context = server.submit("download-required-models", {"models": ["FP16", "FP32"]})
        done = finish(context)
    finally:
        server.close()
    assert done["state"] == "succeeded", done
    manifest = json.loads((Path(done["directory"]) / done["result"]["manifest"]).read_text())
    assert manifest == {"models": {key: {"onnx/model.onnx": "downloaded"} for key in ("FP16", "FP32")}}
    fp16 = storage_root / "models" / "fp16" / "onnx" / "model.onnx"
    fp32 = storage_root / "models" / "fp32" / "onnx" / "model.onnx"
    record = read_record(fp16)
    assert record.status is CopyStatus.READY and copy_path(fp16, record.source_sha256).is_file()
    assert read_record(fp32).status is CopyStatus.NOT_NEEDED
    assert not list(fp32.parent.glob("*.cpu-fp32-*.onnx"))
