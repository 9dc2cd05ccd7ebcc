"""A real job server on the test kit's catalog: its server environment, a loopback hub publishing the kit models,
and the server started, for a module of tests that share it (`with served_kit(...) as served:` in a module-scoped
fixture)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from imageforge.client.job_runner import make_runtime
from imageforge.client.server_runtimes import DEFAULT
from tests.kit.catalog import KitCatalog, publish_kit_catalog
from tests.kit.hub import LoopbackHub
from tests.kit.server_env import install_server_environment


@dataclass(frozen=True)
class ServedKit:
    runtime: Any  # client/job_runner.ImageForgeRuntime
    storage: Path
    hub: LoopbackHub
    catalog: KitCatalog


@contextmanager
def served_kit(root: Path, keys: tuple[str, ...], runtime: str = DEFAULT) -> Iterator[ServedKit]:
    """The server of `root/storage` (its environment of `runtime`), serving the kit models `keys` from a loopback
    hub, started now: the autouse `isolated_state` fixture clears these variables for each test, and the running
    server keeps the ones it started with. Stopped on exit."""
    storage = install_server_environment(root / "storage", runtime)
    with LoopbackHub() as hub, pytest.MonkeyPatch.context() as patch:
        catalog = publish_kit_catalog(hub, root / "catalog", keys=keys)
        patch.setenv("IMAGEFORGE_MODEL_CATALOG", str(catalog.path))
        patch.setenv("HF_ENDPOINT", hub.url)
        patch.setenv("XDG_STATE_HOME", str(root / "state"))
        server = make_runtime(storage)
        server.server.ensure(timeout=120)
        try:
            yield ServedKit(server, storage, hub, catalog)
        finally:
            server.server.stop()
