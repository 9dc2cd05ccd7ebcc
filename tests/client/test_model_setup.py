"""The post-setup hook: BlendJob's real setup worker runs download-required-models on the new server."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from imageforge.client import retirement
from imageforge.client.job_runner import make_runtime
from imageforge.client.model_setup import ModelSetupResult, download_required_models
from imageforge.contract.health import DownloadSource
from tests.kit.catalog import catalog_entry, write_catalog

pytestmark = pytest.mark.slow

DEFAULT = os.urandom(150_000)
OPTIONAL = os.urandom(10_000)


@pytest.fixture
def catalog(hub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    entries = [
        catalog_entry("DEFAULT", {"model.onnx": DEFAULT}, default=True),
        catalog_entry("OPTIONAL", {"model.onnx": OPTIONAL}),
    ]
    path = write_catalog(tmp_path / "catalog.json", entries)
    monkeypatch.setenv("IMAGEFORGE_MODEL_CATALOG", str(path))
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    return path


def run_setup(root: Path, *, before_download: Callable | None = None) -> tuple[dict, list[ModelSetupResult], list[str]]:
    """BlendJob's setup on `root`, driven as Blender's poll timer drives it; the hook's results and messages.

    `before_download(setup)` runs in the hook, on the new server, just before the downloads start."""
    results: list[ModelSetupResult] = []
    messages: list[str] = []

    def post_setup(setup) -> None:
        if before_download is not None:
            before_download(setup)
        results.append(download_required_models(setup))

    runtime = make_runtime(root, post_setup=post_setup)
    setup = runtime.setup_controller(root)
    setup.submit("setup", {})
    deadline = time.monotonic() + 120
    try:
        while (state := setup.status("maintenance"))["state"] not in ("succeeded", "failed", "cancelled"):
            messages.append(state.get("message", ""))
            assert time.monotonic() < deadline, state
            time.sleep(0.02)
    finally:
        setup.mark_job_complete("maintenance")
        assert retirement.wait_until_retired(root.resolve(), timeout=20)
    return state, results, messages


def test_setup_ends_with_the_default_models_on_disk(catalog, hub, server_storage):
    hub.add_hub_file("kit/default", "model.onnx", DEFAULT)
    state, results, _messages = run_setup(server_storage)

    assert state["state"] == "succeeded", state
    assert results == [ModelSetupResult({"DEFAULT": {"model.onnx": "downloaded"}}, DownloadSource.HUB)]
    assert (server_storage / "models" / "default" / "model.onnx").read_bytes() == DEFAULT
    assert not (server_storage / "models" / "optional").exists()


def test_a_failed_download_does_not_fail_the_setup(catalog, hub, server_storage):
    # The hub has no files at all: the environment is still good and setup must still save the folder.
    state, results, messages = run_setup(server_storage)

    assert state["state"] == "succeeded", state
    (result,) = results
    assert result.models == {} and result.source is DownloadSource.HUB
    assert result.error == f"model.onnx is not available from {hub.url.split('://')[1]} (HTTP 404)."
    assert any(message.startswith("Models not downloaded: model.onnx is not available") for message in messages)


def test_a_server_killed_during_the_download_does_not_fail_the_setup(catalog, hub, server_storage):
    # BlendJob's client raises RuntimeError (not ImageForgeError) when the server dies under a running job.
    key = hub.add_hub_file("kit/default", "model.onnx", DEFAULT)
    hub.faults[key] = "slow"

    def kill_once_bytes_flow(setup) -> None:
        process = setup.server.process

        def kill() -> None:
            deadline = time.monotonic() + 60
            while not any(r.path == key and r.method == "GET" and r.bytes_sent for r in hub.requests):
                assert time.monotonic() < deadline, "the download never started"
                time.sleep(0.02)
            os.kill(process.pid, signal.SIGKILL)

        threading.Thread(target=kill, daemon=True).start()

    state, results, _messages = run_setup(server_storage, before_download=kill_once_bytes_flow)

    assert state["state"] == "succeeded", state  # the environment is good: the location was saved
    (result,) = results
    assert result.models == {}
    # "The job server stopped unexpectedly (killed by SIGKILL)…", or "Unable to reach Job Server…" when the
    # kill lands during a status request: either way one sentence.
    assert result.error and "\n" not in result.error and "Traceback" not in result.error
