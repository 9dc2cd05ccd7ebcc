"""Readiness: declared size and SHA-256, the (size, mtime) verification cache, and never a half file."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from imageforge.contract.model_files import (
    FileState,
    file_path,
    model_status,
    part_path,
    remember_hash,
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
    assert model_status(root, model).ready  # unchanged: trusted without a hash

    # Any change of the modification time sends the file back through the hash.
    path.write_bytes(DATA[:-1] + b"?")
    assert verify_file(root, model, model.files[0]).state is FileState.WRONG_HASH


@pytest.mark.skipif(os.name == "nt", reason="the inode change time is POSIX")
def test_a_file_damaged_in_place_with_its_mtime_put_back_is_caught(root):
    model = entry("BEN2", {"model.onnx": DATA})
    path = place(root, model, DATA)
    assert model_status(root, model).ready
    stamp = path.stat().st_mtime_ns
    path.write_bytes(DATA[:-1] + b"?")  # same size ...
    os.utime(path, ns=(stamp, stamp))  # ... and the same mtime: only the inode change time tells
    assert verify_file(root, model, model.files[0]).state is FileState.WRONG_HASH


def stale_record(root: Path, model, damaged: bytes) -> Path:
    """A file that rotted on disk after its record was written: the record matches it exactly."""
    path = place(root, model, damaged)
    remember_hash(root, path, model.files[0].sha256)
    assert model_status(root, model).ready  # the cache is trusted, which is what keeps checks cheap
    return path


def test_a_full_verification_that_finds_a_wrong_hash_drops_the_record(root):
    model = entry("BEN2", {"model.onnx": DATA})
    stale_record(root, model, DATA[:-1] + b"?")

    assert verify_file(root, model, model.files[0], use_cache=False).state is FileState.WRONG_HASH

    assert verify_file(root, model, model.files[0]).state is FileState.WRONG_HASH  # no longer trusted
    record = json.loads((root / "models/.verified.json").read_text())["ben2/model.onnx"]
    assert record == {"sha256": model.files[0].sha256}


def test_after_a_full_verification_a_download_fetches_the_damaged_file_again(hub, root, run):
    hub.add_hub_file("kit/ben2", "model.onnx", DATA)
    model = entry("BEN2", {"model.onnx": DATA})
    path = stale_record(root, model, DATA[:-1] + b"?")
    assert run(root, [model], sources(hub.url)) == {"BEN2": {"model.onnx": "ready"}}  # trusted: nothing fetched

    assert not model_status(root, model, use_cache=False).ready

    assert run(root, [model], sources(hub.url)) == {"BEN2": {"model.onnx": "downloaded"}}
    assert path.read_bytes() == DATA and model_status(root, model).ready


def test_an_undeclared_file_found_damaged_stays_damaged(root):
    model = entry("BEN2", {"model.onnx": DATA}, declare="none")
    path = place(root, model, DATA)
    remember_hash(root, path, hashlib.sha256(DATA).hexdigest())  # measured when it was downloaded
    path.write_bytes(DATA[:-1] + b"?")
    remember_hash(root, path, hashlib.sha256(DATA).hexdigest())  # rotted after the record
    assert verify_file(root, model, model.files[0], use_cache=False).state is FileState.WRONG_HASH
    assert verify_file(root, model, model.files[0]).state is FileState.WRONG_HASH  # the hash is still known


FULL_DISK_CHILD = """
import resource, signal, sys
from pathlib import Path
from imageforge.contract.model_files import remember_hash
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG, as on a full disk
resource.setrlimit(resource.RLIMIT_FSIZE, (16, 16))
remember_hash(Path(sys.argv[1]), Path(sys.argv[2]), "ab" * 32)
"""


def test_a_cache_that_cannot_be_written_leaves_no_temporary_and_no_error(root):
    model = entry("BEN2", {"model.onnx": DATA})
    path = place(root, model, DATA)
    completed = subprocess.run([sys.executable, "-c", FULL_DISK_CHILD, str(root), str(path)], capture_output=True)
    assert completed.returncode == 0, completed.stderr
    names = sorted(item.name for item in (root / "models").iterdir())
    assert names == [".verified.json.lock", "ben2"]  # no cache, no temporary (the empty lock file only)


def test_a_cached_hash_for_another_version_does_not_count(root):
    model = entry("BEN2", {"model.onnx": DATA})
    path = place(root, model, DATA)
    remember_hash(root, path, "0" * 64)  # what an older catalog version declared
    assert verify_file(root, model, model.files[0]).state is FileState.READY  # re-hashed against the catalog
    assert (
        json.loads((root / "models/.verified.json").read_text())["ben2/model.onnx"]["sha256"] == model.files[0].sha256
    )


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
