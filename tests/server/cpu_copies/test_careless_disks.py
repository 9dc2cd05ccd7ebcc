"""The fp32 CPU copy against a careless user's disk (issue 28's rule: a failure that says nothing about the file is
not a verdict): a disk too full for the copy, and a copy damaged after it was verified."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from imageforge.contract import Device
from imageforge.contract.model_files import file_path
from imageforge.server.cpu_copies import cpu_copy
from imageforge.server.cpu_copies.cpu_copy import CopyStatus, copy_path, cpu_graph, read_record
from imageforge.server.inference import ModelManager
from tests.kit.onnx_models import build_ben2_fp16
from tests.kit.small_disk import small_disk

SAMPLE = np.random.default_rng(3).random((1, 3, 32, 32), dtype=np.float32)


def sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fill(disk, leave: int) -> None:
    """Fill `disk` until only `leave` bytes are free (whole pages: tmpfs allocates by page)."""
    import os

    free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
    (disk / "ballast").write_bytes(b"\0" * (free - leave))


@pytest.mark.parametrize("in_process", [True, False], ids=["in-process", "child"])
def test_a_disk_too_full_for_the_copy_is_no_verdict_on_the_file(tmp_path, monkeypatch, in_process):
    """Room left for the record but not for the copy (an fp32 copy is twice its fp16 original): the rewrite fails
    for want of space, which says nothing about the file, so the copy is made once space is freed."""
    monkeypatch.setattr(cpu_copy, "_failed_here", {})
    if not in_process:
        monkeypatch.setattr(cpu_copy, "IN_PROCESS_BYTES", 0)
    built = build_ben2_fp16(tmp_path / "built.onnx", ballast_bytes=96 * 1024)
    with small_disk(tmp_path / "disk", 1024 * 1024) as disk:
        source = disk / "model.onnx"
        source.write_bytes(built.read_bytes())
        fill(disk, 32 * 1024)
        digest = sha(source)
        assert cpu_graph(ort, source, digest, threads=1) == source  # the original serves
        record = read_record(source)
        assert record is None or record.status is not CopyStatus.REJECTED, record.reason
        assert "No space left on device" in cpu_copy.copy_note(source)
        assert cpu_copy.copy_note(source).endswith("the next server start tries again")
        (disk / "ballast").unlink()  # space freed: the next server makes the copy
        monkeypatch.setattr(cpu_copy, "_failed_here", {})
        assert cpu_graph(ort, source, digest, threads=1) == copy_path(source, digest)
        assert read_record(source).status is CopyStatus.READY


def damage(copy) -> None:
    """Cut short, as by a partial sync or restore of models/."""
    copy.write_bytes(copy.read_bytes()[: copy.stat().st_size // 2])


def corrupt(copy) -> None:
    """The same size, one byte changed, its modification time put back (a tool that restores times)."""
    info = copy.stat()
    data = bytearray(copy.read_bytes())
    data[len(data) // 2] ^= 0xFF
    copy.write_bytes(bytes(data))
    os.utime(copy, ns=(info.st_atime_ns, info.st_mtime_ns))


@pytest.mark.parametrize("harm", [damage, corrupt, Path.unlink], ids=["cut-short", "changed", "deleted"])
def test_a_copy_harmed_after_it_was_verified_is_derived_again_never_loaded(storage_root, ben2_fp16, harm):
    source = file_path(storage_root, ben2_fp16, ben2_fp16.files[0])
    manager = ModelManager(storage_root, threads=1)
    manager.acquire(ben2_fp16, Device.CPU)
    manager.close()
    copy = copy_path(source, sha(source))
    verified = copy.read_bytes()
    harm(copy)

    manager = ModelManager(storage_root, threads=1)
    try:
        handle = manager.acquire(ben2_fp16, Device.CPU)
        assert handle.graph == copy and copy.read_bytes() == verified  # derived again, the same bytes
        output = handle.run({"input": SAMPLE}, last_run=True)["output"]
        reference = ort.InferenceSession(str(source), providers=["CPUExecutionProvider"])
        np.testing.assert_allclose(output, reference.run(None, {"input": SAMPLE})[0].astype(np.float32), atol=2e-3)
    finally:
        manager.close()
