"""Fixtures of the client suites: a loopback hub with a fast and a slow model, and ImageForge's runtime on it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from imageforge.client import retirement
from imageforge.client.job_runner import make_runtime
from tests.client.job_in_flight import FAST_BYTES, SLOW_BYTES, Models, catalog_entry
from tests.kit.hub import LoopbackHub


@pytest.fixture
def hub_models(hub: LoopbackHub, server_storage: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Models:
    """FAST and SLOW in a catalog the server reads, served by the hub; the environment reaches the server process."""
    hub.add_hub_file("kit/fast", "onnx/model.onnx", FAST_BYTES)
    slow_key = hub.add_hub_file("kit/slow", "onnx/model.onnx", SLOW_BYTES)
    hub.faults[slow_key] = "slow"
    catalog = tmp_path / "catalog.json"
    entries = [catalog_entry("FAST", "fast", FAST_BYTES), catalog_entry("SLOW", "slow", SLOW_BYTES)]
    catalog.write_text(json.dumps({"models": entries}), encoding="utf-8")
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    monkeypatch.setenv("IMAGEFORGE_MODEL_CATALOG", str(catalog))
    return Models(hub, server_storage, slow_key)


@pytest.fixture
def imageforge_runtime(hub_models: Models):
    """ImageForge's runtime on the models' storage root; whatever server it leaves is stopped and reaped."""
    made = make_runtime(hub_models.root)
    yield made
    made.server.stop()
    assert retirement.wait_until_retired(hub_models.root.resolve(), timeout=20)
