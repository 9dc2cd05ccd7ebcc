"""Fixtures shared by the server-side suites (Python 3.12 environment)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from imageforge.contract.server_clients import LINGER_VARIABLE
from tests.kit.hub import LoopbackHub
from tests.kit.server_env import install_server_environment


@pytest.fixture(autouse=True)
def isolated_state(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """BlendJob keeps storage lock files under $XDG_STATE_HOME: keep them per test session. A server that no
    test uses any more exits two seconds later (a user's lingers 20 s for the next call)."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.getbasetemp() / "state"))
    monkeypatch.setenv(LINGER_VARIABLE, "2")
    for name in ("HF_ENDPOINT", "IMAGEFORGE_MODEL_MIRROR", "IMAGEFORGE_MODEL_CATALOG", "IMAGEFORGE_STORAGE_ROOT"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def hub():
    with LoopbackHub() as running:
        yield running


@pytest.fixture
def storage_root(tmp_path: Path) -> Path:
    return tmp_path / "storage with spaces ü"


@pytest.fixture
def server_storage(storage_root: Path) -> Path:
    """A storage root whose job-server environment is ready (built once, then linked)."""
    return install_server_environment(storage_root)


def pytest_report_header(config):
    cache = os.environ.get("IMAGEFORGE_TEST_CACHE", "~/.cache/imageforge-tests")
    return f"imageforge: XDG_STATE_HOME isolated per session; server environment cache {cache}"
