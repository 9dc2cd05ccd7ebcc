"""The download jobs on the real JobServer (in process): defaults, unknown keys, cancellation, the resource."""

from __future__ import annotations

import errno
import json
import time
from pathlib import Path

import pytest
from blendjob.server import JobContext

from imageforge.contract.errors import DiskFullError
from imageforge.contract.jobs import DownloadModelParams
from imageforge.server.app import create_server
from imageforge.server.blendjob_compat import job_status
from imageforge.server.jobs.download_models import run_download_model
from tests.kit.catalog import catalog_entry, write_catalog
from tests.kit.hub import Blackhole

from .conftest import content

BASE = content(64 * 1024, 31)
UPSCALE = content(96 * 1024, 32)
LARGE = content(256 * 1024, 33)


@pytest.fixture
def catalog(tmp_path: Path, hub, monkeypatch: pytest.MonkeyPatch) -> Path:
    models = {"BASE": (BASE, True), "UPSCALE": (UPSCALE, True), "LARGE": (LARGE, False)}
    for key, (data, _default) in models.items():
        hub.add_hub_file(f"kit/{key.lower()}", "model.onnx", data)
        hub.add_mirror_file(key.lower(), "model.onnx", data)
    entries = [catalog_entry(key, {"model.onnx": data}, default=default) for key, (data, default) in models.items()]
    path = write_catalog(tmp_path / "catalog.json", entries)
    monkeypatch.setenv("IMAGEFORGE_MODEL_CATALOG", str(path))
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    return path


@pytest.fixture
def server(root: Path, catalog):
    job_server = create_server()
    job_server.bind(root)
    yield job_server
    job_server.close()


def finish(server, context, timeout: float = 20.0) -> dict:
    deadline = time.monotonic() + timeout
    while (snapshot := job_status(context))["state"] not in ("succeeded", "failed", "cancelled"):
        assert time.monotonic() < deadline, snapshot
        time.sleep(0.02)
    return snapshot


def manifest(snapshot: dict) -> dict:
    return json.loads((Path(snapshot["directory"]) / snapshot["result"]["manifest"]).read_text())


def test_required_models_default_to_the_catalog_defaults(server, root, hub):
    done = finish(server, server.submit("download-required-models", {}))

    assert done["state"] == "succeeded", done
    assert manifest(done) == {"models": {"BASE": {"model.onnx": "downloaded"}, "UPSCALE": {"model.onnx": "downloaded"}}}
    assert done["message"] == "Models are ready"
    assert not (root / "models/large").exists()
    log = (Path(done["directory"]) / "job.log").read_text()
    assert f"BASE model.onnx: {len(BASE)} bytes" in log

    again = finish(server, server.submit("download-required-models", {"models": ["BASE", "LARGE"]}))
    assert manifest(again) == {"models": {"BASE": {"model.onnx": "ready"}, "LARGE": {"model.onnx": "downloaded"}}}


def test_an_unknown_key_fails_before_any_download(server, root, hub):
    done = finish(server, server.submit("download-required-models", {"models": ["BASE", "NOPE"]}))

    assert done["state"] == "failed"
    assert done["error"] == "Unknown model 'NOPE'; valid models are: BASE, UPSCALE, LARGE."
    assert hub.requests == [] and not (root / "models").exists()
    assert json.loads((Path(done["directory"]) / "job-state.json").read_text())["state"] == "failed"


def test_cancelling_mid_file_ends_cancelled_and_the_next_job_resumes(server, root, hub):
    key = "kit/large/resolve/main/model.onnx"
    hub.set_fault(key, "slow", times=1)
    hub.slow_delay = 0.005
    partial = root / "models/large/model.onnx.part"

    context = server.submit("download-model", {"model": "LARGE"})
    deadline = time.monotonic() + 10
    while not (partial.exists() and partial.stat().st_size >= 32 * 1024):
        assert time.monotonic() < deadline
        time.sleep(0.01)
    server.cancel(context.job_id)
    done = finish(server, context)

    assert done["state"] == "cancelled"
    kept = partial.stat().st_size
    assert 32 * 1024 <= kept < len(LARGE)
    assert json.loads((Path(done["directory"]) / "job-state.json").read_text())["state"] == "cancelled"

    resumed = finish(server, server.submit("download-model", {"model": "LARGE"}))
    assert resumed["state"] == "succeeded"
    assert hub.served(key)[-1].range == f"bytes={kept}-"
    assert (root / "models/large/model.onnx").read_bytes() == LARGE


def test_the_downloads_resource_shows_the_mirror_after_the_hub_fails(root, catalog, hub, monkeypatch):
    with Blackhole() as dead_hub:
        monkeypatch.setenv("HF_ENDPOINT", dead_hub.url)
        monkeypatch.setenv("IMAGEFORGE_MODEL_MIRROR", hub.mirror)
        monkeypatch.setenv("IMAGEFORGE_DOWNLOAD_CONNECT_TIMEOUT", "0.3")
        server = create_server()
        server.bind(root)
        try:
            assert server.resource_snapshot("downloads")["source"] == "hub"
            done = finish(server, server.submit("download-model", {"model": "BASE"}))
            assert done["state"] == "succeeded", done
            snapshot = server.resource_snapshot("downloads")
        finally:
            server.close()
    assert snapshot["source"] == "mirror" and snapshot["mirror"] == hub.mirror
    assert snapshot["switched_at"] is not None and "timed out" in snapshot["reason"]


def test_a_manifest_write_that_fails_midway_leaves_no_partial_manifest(server, root, monkeypatch):
    # Force a disk that fills up half way through writing manifest.json: readers must never find half a file.
    directory = root / "jobs" / "manifest-job"
    directory.mkdir(parents=True)
    context = JobContext("manifest-job", "download-model", {}, server.resources, root, directory)
    real_write_text = Path.write_text

    def half_then_full(self: Path, data: str, *args, **kwargs):
        if "manifest" not in self.name:
            return real_write_text(self, data, *args, **kwargs)
        real_write_text(self, data[: len(data) // 2], *args, **kwargs)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_text", half_then_full)
    with pytest.raises(DiskFullError, match=r"is full \(.+ free\) while writing manifest\.json: "):
        run_download_model(context, DownloadModelParams(model="BASE"))
    monkeypatch.undo()

    assert (root / "models" / "base" / "model.onnx").read_bytes() == BASE  # the download itself succeeded
    assert not any("manifest" in path.name for path in directory.iterdir()), list(directory.iterdir())
