"""Declared files (size + SHA-256) streamed from the loopback hub: fresh, resumed, restarted, rejected."""

from __future__ import annotations

import errno
import hashlib
import re
from pathlib import Path

import pytest

from imageforge.contract import ModelUnavailableError, ResourceExhaustedError
from imageforge.contract.errors import DiskFullError
from imageforge.contract.model_files import model_status, part_path
from imageforge.server.downloads.failures import DownloadCancelled, FileRejected
from imageforge.server.downloads.fetch import open_part
from tests.kit.small_disk import small_disk

from .conftest import content, entry, sources

SIZE = 512 * 1024
DATA = content(SIZE)


def model_file(root: Path, key: str = "ben2", path: str = "onnx/model.onnx") -> Path:
    return root / "models" / key / path


@pytest.fixture
def served(hub):
    key = hub.add_hub_file("kit/ben2", "onnx/model.onnx", DATA)
    return key


def test_fresh_download_lands_verified_and_ready(hub, served, root, run):
    model = entry("BEN2", {"onnx/model.onnx": DATA})

    outcome = run(root, [model], sources(hub.url))

    assert outcome == {"BEN2": {"onnx/model.onnx": "downloaded"}}
    assert model_file(root).read_bytes() == DATA
    assert not part_path(model_file(root)).exists()
    assert model_status(root, model).ready
    assert [(r.method, r.range, r.bytes_sent) for r in hub.requests] == [("GET", None, SIZE)]
    assert run.reports[-1] == (1.0, "Models are ready")
    assert run(root, [model], sources(hub.url)) == {"BEN2": {"onnx/model.onnx": "ready"}}
    assert len(hub.requests) == 1  # already ready: nothing fetched


def test_dropped_connection_resumes_with_a_range_request(hub, served, root, run):
    hub.drop_after = 100_000
    hub.set_fault(served, "drop", times=1)

    run(root, [entry("BEN2", {"onnx/model.onnx": DATA})], sources(hub.url))

    first, second = hub.served(served)
    assert first.bytes_sent == 100_000
    resumed_at = int(second.range.removeprefix("bytes=").removesuffix("-"))
    assert 0 < resumed_at <= 100_000 and second.status == 206  # whole chunks that arrived before the drop
    assert second.bytes_sent == SIZE - resumed_at < SIZE
    assert model_file(root).read_bytes() == DATA
    assert any("retry 1 of 5" in line for line in run.log)


def test_a_server_ignoring_range_restarts_cleanly(hub, served, root, run):
    partial = part_path(model_file(root))
    partial.parent.mkdir(parents=True)
    partial.write_bytes(b"\0" * 200_000)  # not even the right bytes: a restart must discard them
    hub.set_fault(served, "ignore_range")

    run(root, [entry("BEN2", {"onnx/model.onnx": DATA})], sources(hub.url))

    (request,) = hub.served(served)
    assert request.range == "bytes=200000-" and request.status == 200 and request.bytes_sent == SIZE
    assert model_file(root).read_bytes() == DATA
    assert not partial.exists()


def test_hash_mismatch_deletes_and_names_the_file(hub, served, root, run):
    hub.set_fault(served, "wrong_bytes")

    with pytest.raises(FileRejected, match=r"^model\.onnx does not match its declared SHA-256"):
        run(root, [entry("BEN2", {"onnx/model.onnx": DATA})], sources(hub.url))

    assert not model_file(root).exists()
    assert not part_path(model_file(root)).exists()


def test_size_mismatch_is_caught_before_the_body(hub, served, root, run):
    declared = entry("BEN2", {"onnx/model.onnx": DATA + b"x"})

    with pytest.raises(FileRejected, match=rf"model\.onnx on 127\.0\.0\.1:\d+ is {SIZE:,} bytes but the catalog"):
        run(root, [declared], sources(hub.url))

    assert not model_file(root).exists() and not part_path(model_file(root)).exists()


def test_cancel_mid_file_keeps_the_part_and_the_next_run_resumes(hub, served, root, run):
    model = entry("BEN2", {"onnx/model.onnx": DATA})
    partial = part_path(model_file(root))

    def cancel_after_some_bytes() -> bool:
        return partial.exists() and partial.stat().st_size >= 150_000

    with pytest.raises(DownloadCancelled):
        run(root, [model], sources(hub.url), cancelled=cancel_after_some_bytes)
    kept = partial.stat().st_size
    assert 150_000 <= kept < SIZE
    assert partial.read_bytes() == DATA[:kept]
    assert not model_file(root).exists() and not model_status(root, model).ready

    assert run(root, [model], sources(hub.url)) == {"BEN2": {"onnx/model.onnx": "downloaded"}}
    second = hub.served(served)[-1]
    assert second.range == f"bytes={kept}-"
    assert second.bytes_sent == SIZE - kept < SIZE
    assert model_file(root).read_bytes() == DATA


def test_a_complete_part_is_verified_without_the_network(hub, served, root, run):
    partial = part_path(model_file(root))
    partial.parent.mkdir(parents=True)
    partial.write_bytes(DATA)  # the download finished but the rename never happened

    run(root, [entry("BEN2", {"onnx/model.onnx": DATA})], sources(hub.url))

    assert hub.requests == []
    assert model_file(root).read_bytes() == DATA


def test_a_complete_but_wrong_part_is_fetched_again(hub, served, root, run):
    partial = part_path(model_file(root))
    partial.parent.mkdir(parents=True)
    partial.write_bytes(b"\0" * SIZE)

    run(root, [entry("BEN2", {"onnx/model.onnx": DATA})], sources(hub.url))

    assert [(r.range, r.bytes_sent) for r in hub.served(served)] == [(None, SIZE)]
    assert model_file(root).read_bytes() == DATA


def test_a_damaged_file_is_fetched_again(hub, served, root, run):
    model = entry("BEN2", {"onnx/model.onnx": DATA})
    run(root, [model], sources(hub.url))
    damaged = bytearray(DATA)
    damaged[1000] ^= 0xFF
    model_file(root).write_bytes(bytes(damaged))

    assert run(root, [model], sources(hub.url)) == {"BEN2": {"onnx/model.onnx": "downloaded"}}
    assert model_file(root).read_bytes() == DATA
    assert any("wrong hash" in line for line in run.log)


class FullDisk:
    """A writer that behaves like a disk running out of space after `room` bytes."""

    def __init__(self, room: int):
        self.room = room

    def __call__(self, path: Path, offset: int):
        stream = open_part(path, offset)
        room, write = self.room, stream.write

        def limited(data: bytes) -> int:
            nonlocal room
            if len(data) > room:
                write(data[:room])
                raise OSError(errno.ENOSPC, "No space left on device")
            room -= len(data)
            return write(data)

        stream.write = limited
        return stream


def test_disk_full_removes_the_part_and_says_so(hub, served, root, run):
    with pytest.raises(
        ResourceExhaustedError,
        match=rf"^The disk holding {re.escape(str(model_file(root).parent))} is full \(.+ free\) while downloading "
        r"model\.onnx: it needed 384 kB more; free some space",
    ):
        run(root, [entry("BEN2", {"onnx/model.onnx": DATA})], sources(hub.url), writer=FullDisk(128 * 1024))

    assert not part_path(model_file(root)).exists()
    assert not model_file(root).exists()


def test_a_download_onto_a_really_full_disk(hub, served, tmp_path, run):
    with small_disk(tmp_path / "small disk", 256 * 1024) as root:
        with pytest.raises(
            DiskFullError, match=r" is full \((\d+ kB|\d+ B) free\) while downloading model\.onnx: it ne"
        ):
            run(root, [entry("BEN2", {"onnx/model.onnx": DATA})], sources(hub.url))
        assert not part_path(model_file(root)).exists() and not model_file(root).exists()


def test_404_on_one_file_of_a_multi_file_model(hub, root, run):
    files = {"encoder.onnx": content(64 * 1024, 1), "decoder.onnx": content(64 * 1024, 2), "extra.onnx": content(10, 3)}
    hub.add_hub_file("kit/split", "encoder.onnx", files["encoder.onnx"])
    hub.add_hub_file("kit/split", "extra.onnx", files["extra.onnx"])  # decoder.onnx is missing upstream
    model = entry("SPLIT", files)

    with pytest.raises(
        ModelUnavailableError, match=r"^decoder\.onnx is not available from 127\.0\.0\.1:\d+ \(HTTP 404\)"
    ):
        run(root, [model], sources(hub.url))

    status = {item.file.path: item.state.value for item in model_status(root, model).files}
    assert status == {"encoder.onnx": "ready", "decoder.onnx": "missing", "extra.onnx": "missing"}
    assert not model_status(root, model).ready
    assert hashlib.sha256((root / "models/split/encoder.onnx").read_bytes()).hexdigest() == model.files[0].sha256
