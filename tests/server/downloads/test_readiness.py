"""Readiness: declared size and SHA-256, the (size, mtime) verification cache, and never a half file."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from imageforge.contract import ModelUnavailableError
from imageforge.server.downloads.store import (
    FileState,
    file_path,
    model_status,
    part_path,
    remember_hash,
    require_ready,
    verify_file,
)

from .conftest import content, entry, sources

DATA = content(128 * 1024, 21)


def place(root: Path, model, data: bytes) -> Path:
    path = file_path(root, model, model.files[0])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_storage_layout_keeps_the_repository_structure(root):
    model = entry("BEN2", {"onnx/model_fp16.onnx": DATA}, directory="BEN2-ONNX")
    assert file_path(root, model, model.files[0]) == root / "models" / "BEN2-ONNX" / "onnx" / "model_fp16.onnx"


def test_states(root):
    model = entry("BEN2", {"model.onnx": DATA})
    assert verify_file(root, model, model.files[0]).state is FileState.MISSING
    path = place(root, model, DATA[:-1])
    assert verify_file(root, model, model.files[0]).state is FileState.WRONG_SIZE
    path.write_bytes(DATA[:-1] + b"?")
    assert verify_file(root, model, model.files[0]).state is FileState.WRONG_HASH
    path.write_bytes(DATA)
    assert verify_file(root, model, model.files[0]).state is FileState.READY


def test_the_cache_trusts_an_unchanged_file_and_rechecks_a_changed_one(root):
    model = entry("BEN2", {"model.onnx": DATA})
    path = place(root, model, DATA)
    assert model_status(root, model).ready
    record = json.loads((root / "models/.verified.json").read_text())["ben2/model.onnx"]
    assert record["size"] == len(DATA) and record["mtime_ns"] == path.stat().st_mtime_ns

    # Same size, same mtime, other bytes: the cache is trusted (no hash), which is what keeps checks cheap ...
    stamp = path.stat().st_mtime_ns
    path.write_bytes(DATA[:-1] + b"?")
    os.utime(path, ns=(stamp, stamp))
    assert model_status(root, model).ready
    # ... a full verification ignores the cache ...
    assert not model_status(root, model, use_cache=False).ready
    # ... and any change of the modification time sends the file back through the hash.
    os.utime(path, ns=(stamp + 1_000_000, stamp + 1_000_000))
    assert verify_file(root, model, model.files[0]).state is FileState.WRONG_HASH


def test_a_cached_hash_for_another_version_does_not_count(root):
    model = entry("BEN2", {"model.onnx": DATA})
    path = place(root, model, DATA)
    remember_hash(root, path, "0" * 64)  # what an older catalog version declared
    assert verify_file(root, model, model.files[0]).state is FileState.READY  # re-hashed against the catalog
    assert (
        json.loads((root / "models/.verified.json").read_text())["ben2/model.onnx"]["sha256"] == model.files[0].sha256
    )


def test_require_ready_says_what_to_do(root):
    model = entry("BEN2", {"onnx/model.onnx": DATA})
    with pytest.raises(ModelUnavailableError) as raised:
        require_ready(root, model)
    assert str(raised.value) == (
        "Ben2 is not downloaded (onnx/model.onnx is missing); "
        "download it with 'imageforge models download BEN2' or the add-on's Download button."
    )
    place(root, model, DATA)
    assert require_ready(root, model).ready


def test_a_partial_download_is_reported_but_never_ready(root):
    model = entry("BEN2", {"model.onnx": DATA})
    path = file_path(root, model, model.files[0])
    path.parent.mkdir(parents=True)
    part_path(path).write_bytes(DATA[:5000])
    status = model_status(root, model)
    assert not status.ready and status.partial_bytes == 5000


@pytest.mark.parametrize("declare", ["both", "none"], ids=["streamed", "huggingface_hub"])
def test_readiness_checks_during_a_download_never_see_a_half_file(hub, root, run, declare):
    # Without a declared size and hash, existing is all readiness can check: only the rename protects it.
    data = content(96 * 1024, 22)
    key = hub.add_hub_file("kit/ben2", "model.onnx", data)
    hub.set_fault(key, "slow")
    hub.slow_delay = 0.003
    model = entry("BEN2", {"model.onnx": data}, declare=declare)
    target = file_path(root, model, model.files[0])
    observations: list[bool] = []
    worker = threading.Thread(target=run, args=(root, [model], sources(hub.url)))
    worker.start()
    while worker.is_alive():
        for use_cache in (True, False):
            status = model_status(root, model, use_cache=use_cache)
            if status.ready:
                assert target.read_bytes() == data  # ready always means complete and correct
            observations.append(status.ready)
        time.sleep(0.005)
    worker.join()

    assert observations.count(False) > 10  # we did look, many times, while it was downloading
    assert model_status(root, model).ready and target.read_bytes() == data
