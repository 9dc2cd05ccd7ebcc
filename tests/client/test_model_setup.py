"""The post-setup hook: BlendJob's real setup worker runs download-required-models on the new server."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from imageforge.client import retirement
from imageforge.client.model_setup import ModelSetupResult, download_required_models
from imageforge.client.runtime import make_runtime
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


def run_setup(root: Path) -> tuple[dict, list[ModelSetupResult], list[str]]:
    """BlendJob's setup on `root`, driven as Blender's poll timer drives it; the hook's results and messages."""
    results: list[ModelSetupResult] = []
    messages: list[str] = []
    runtime = make_runtime(root, post_setup=lambda setup: results.append(download_required_models(setup)))
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
    assert results == [ModelSetupResult({"DEFAULT": {"model.onnx": "downloaded"}}, "hub")]
    assert (server_storage / "models" / "default" / "model.onnx").read_bytes() == DEFAULT
    assert not (server_storage / "models" / "optional").exists()


def test_a_failed_download_does_not_fail_the_setup(catalog, hub, server_storage):
    # The hub has no files at all: the environment is still good and setup must still save the folder.
    state, results, messages = run_setup(server_storage)

    assert state["state"] == "succeeded", state
    (result,) = results
    assert result.models == {} and result.source == "hub"
    assert result.error == f"model.onnx is not available from {hub.url.split('://')[1]} (HTTP 404)."
    assert any(message.startswith("Models not downloaded: model.onnx is not available") for message in messages)
