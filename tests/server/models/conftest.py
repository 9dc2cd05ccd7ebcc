"""Adapters on real ONNX Runtime CPU sessions of kit models, placed where a download would put them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from imageforge.contract import Device
from imageforge.contract.catalog import Family, ModelEntry, ModelFile
from imageforge.contract.model_files import file_path
from imageforge.server.inference import ModelManager
from imageforge.server.models import adapter_class


def kit_entry(key: str, family: Family, adapter: str, **options: Any) -> ModelEntry:
    return ModelEntry(
        key=key,
        family=family,
        adapter=adapter,
        label=key.replace("_", " ").title(),
        license="MIT",
        repository=f"kit/{key.lower()}",
        directory=key.lower(),
        default=True,
        files=(ModelFile("model.onnx"),),
        options=options,
    )


@pytest.fixture
def make_adapter(storage_root: Path) -> Iterator[Callable[..., Any]]:
    """make_adapter(entry, build) → the entry's adapter on a CPU session of the model `build(path)` writes.

    Each adapter gets its own ModelManager: one manager keeps one session per family.
    """
    managers: list[ModelManager] = []

    def make(entry: ModelEntry, build: Callable[[Path], Path]) -> Any:
        path = file_path(storage_root, entry, entry.files[0])
        if not path.exists():
            build(path)
        managers.append(ModelManager(storage_root, threads=1))
        handle = managers[-1].acquire(entry, Device.CPU)
        return adapter_class(entry)(entry, handle)

    yield make
    for manager in managers:
        manager.close()
