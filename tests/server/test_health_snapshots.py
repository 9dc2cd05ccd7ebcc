"""The health snapshots the add-on's panel tests draw (tests/addon/health_snapshots.json), produced by the
server's real health code.

tests/addon runs under Blender's Python, which has none of the server's dependencies (ONNX Runtime, FastAPI),
so the snapshots travel as a file, and this test fails when the file is no longer what the server writes.
Each one is BlendJob's `/health` body (`JobServer.snapshot`) of `create_server()`'s server bound to a storage
root, with its real resources: ModelManager holding a kit model on a real ONNX Runtime session (placed where
the catalog model's download would be), DownloadSources, ClientRegistry with this process attached as a
Blender, and the job folders. Only values that differ on every run (times, ids, pids, thread counts) are
replaced by fixed ones, and the check whether CUDA's libraries load answers "no NVIDIA driver was found", so
the snapshot is the same on every Linux machine (a GPU runner's included). To regenerate:
`IMAGEFORGE_WRITE_HEALTH_SNAPSHOTS=1 uv run python -m pytest tests/server/test_health_snapshots.py`.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from imageforge.contract import Device
from imageforge.contract.catalog import load_catalog
from imageforge.contract.model_files import file_path
from imageforge.contract.server_clients import ClientKind
from imageforge.server.app import create_server
from imageforge.server.downloads.sources import MIRROR_VARIABLE
from imageforge.server.inference import devices
from tests.kit.onnx_models import build_ben2, build_upscaler

FIXTURE = Path(__file__).resolve().parents[1] / "addon" / "health_snapshots.json"
INSTANCE = "0" * 32
# Values that change on every run, by key, and the fixed value they are written as.
VOLATILE = {
    "started_at": 1767225600.0,
    "switched_at": 1767225600.0,
    "load_seconds": 0.5,
    "seconds": 1.0,
    "idle_seconds": 0.0,
    "client_id": "c" * 32,
    "pid": 4242,
    "job_id": "b" * 32,
    "directory": "<storage>/jobs/" + "b" * 32,
    "threads": 4,
}


def fixed(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            key: (VOLATILE[key] if key in VOLATILE and item is not None else fixed(item)) for key, item in value.items()
        }
    if isinstance(value, list):
        return [fixed(item) for item in value]
    return value


def place_kit_model(storage_root: Path, key: str) -> Any:
    """The catalog entry `key` with a kit model of its family where its download would be."""
    entry = load_catalog().get(key)
    path = file_path(storage_root, entry, entry.files[0])
    build_ben2(path, size=32) if entry.family == "background" else build_upscaler(path)
    return entry


def ready_snapshot(storage_root: Path) -> dict[str, Any]:
    """Idle, after BEN2 ran where CUDA was asked for but CPU ran it, with downloads switched to the mirror."""
    server = create_server().bind(storage_root)
    try:
        server.resources["clients"].attach(os.getpid(), ClientKind.BLENDER)
        server.resources["models"].acquire(place_kit_model(storage_root, "BEN2_BASE"), Device.CUDA)
        assert server.resources["downloads"].hub_unreachable("the hub timed out")
        return fixed(server.snapshot(INSTANCE))
    finally:
        server.close()


def busy_snapshot(storage_root: Path) -> dict[str, Any]:
    """An upscale job at 40 % with the upscaler loaded; the job's work is held there (its handler replaced by
    one that publishes that progress and waits), everything reported around it is the server's own."""
    server = create_server().bind(storage_root)
    published, release = threading.Event(), threading.Event()

    def hold(context: Any, _parameters: dict[str, Any]) -> dict[str, Any]:
        context.progress(0.4, "Upscaling tile 3/8")
        published.set()
        release.wait(30)
        return {}

    try:
        server.resources["clients"].attach(os.getpid(), ClientKind.BLENDER)
        server.resources["models"].acquire(place_kit_model(storage_root, "REALESRGAN_X4PLUS"), Device.AUTO)
        server.handlers["upscale-image"] = hold
        server.submit("upscale-image", {})
        assert published.wait(30)
        return fixed(server.snapshot(INSTANCE))
    finally:
        release.set()
        server.close()


def snapshots(storage_root: Path) -> dict[str, Any]:
    return {"ready": ready_snapshot(storage_root / "ready"), "busy": busy_snapshot(storage_root / "busy")}


def test_the_panels_snapshots_are_what_the_server_writes(storage_root, monkeypatch):
    monkeypatch.setenv(MIRROR_VARIABLE, "https://models.example.org/imageforge")
    monkeypatch.setattr(devices, "probe_libraries", lambda runtime, device: "no NVIDIA driver was found")
    current = snapshots(storage_root)
    text = json.dumps(current, indent=1, sort_keys=True) + "\n"
    if os.environ.get("IMAGEFORGE_WRITE_HEALTH_SNAPSHOTS") == "1":
        FIXTURE.write_text(text, encoding="utf-8")
    recorded = json.loads(FIXTURE.read_text(encoding="utf-8"))
    assert recorded == current, (
        "tests/addon/health_snapshots.json is not what the server writes now; regenerate it "
        "(IMAGEFORGE_WRITE_HEALTH_SNAPSHOTS=1, see this module) and check the panel tests still say what they mean"
    )


@pytest.mark.parametrize("name", ["ready", "busy"])
def test_the_recorded_snapshots_hold_what_the_panel_tests_rely_on(name):
    recorded = json.loads(FIXTURE.read_text(encoding="utf-8"))[name]
    loaded = recorded["resources"]["models"]["loaded"]
    assert len(loaded) == 1 and loaded[0]["device"] == "cpu"
    assert recorded["busy"] is (name == "busy")
    assert recorded["resources"]["downloads"]["source"] == ("mirror" if name == "ready" else "hub")
