"""Sources that lie about a file or never stop: every download is bounded (downloads/size_limit.py), a body that
ends short of its announced size is a broken transfer, a resume answered with other bytes is refused, and a
redirect loop is one sentence. Both transfer paths: huggingface_hub (files the catalog declares nothing about)
and our streaming (declared files, every mirror download)."""

from __future__ import annotations

from pathlib import Path

import pytest

from imageforge.contract.model_files import part_path
from imageforge.server.downloads.failures import DownloadCancelled, FileRejected, SourceRefused, TransferBroken
from imageforge.server.downloads.install import RetryPolicy

from .conftest import content, entry, sources

PATH = "weights/model.onnx"
DATA = content(4 * 1024 * 1024, 5)
HOST = r"127\.0\.0\.1:\d+"


class LargestPartial:
    """A `cancelled` callback (asked between chunks) that records the largest partial file seen under `folder`."""

    def __init__(self, folder: Path):
        self.folder, self.largest = folder, 0

    def __call__(self) -> bool:
        sizes = [path.stat().st_size for path in self.folder.rglob("*") if path.name.endswith((".incomplete", ".part"))]
        self.largest = max([self.largest, *sizes])
        return False


def partials(root: Path) -> list[Path]:
    return [path for path in root.rglob("*") if path.name.endswith((".incomplete", ".part"))]


def test_a_hub_streaming_past_the_size_it_announced_is_stopped_at_the_first_byte_past_it(hub, root, run):
    """The HEAD says 1,000 bytes and the GET streams 4 MiB with no length: the library alone reads it all."""
    key = hub.add_hub_file("kit/vitl", PATH, DATA)
    hub.set_fault(key, "unbounded")
    watch = LargestPartial(root)

    with pytest.raises(
        FileRejected,
        match=rf"^model\.onnx: {HOST} sent more than the 1,000 bytes {HOST} announced; the download was stopped and "
        r"deleted\.$",
    ):
        run(root, [entry("VITL", {PATH: DATA}, declare="none")], sources(hub.url), cancelled=watch)

    assert watch.largest <= 1000
    assert partials(root) == [] and not (root / "models/vitl" / PATH).exists()


def test_a_hub_announcing_more_than_the_family_allows_is_refused_before_any_byte(hub, root, run):
    key = hub.add_hub_file("kit/vitl", PATH, DATA)
    hub.set_fault(key, "unbounded")
    hub.announced_size = 1024**4  # 1 TiB, for a background model (ceiling 2 GiB)

    with pytest.raises(
        FileRejected,
        match=rf"^model\.onnx on {HOST} is 1024\.0 GB, more than the 2\.0 GB ImageForge accepts for one file of "
        r"this model; nothing was downloaded\.$",
    ):
        run(root, [entry("VITL", {PATH: DATA}, declare="none")], sources(hub.url))
    assert hub.served(key, "GET") == []


def test_a_mirror_stating_no_size_is_bounded_by_the_models_ceiling(hub, root, run):
    key = hub.add_mirror_file("vitl", PATH, DATA)  # the hub has no such file: the mirror serves it
    hub.add_hub_file("kit/vitl", "other.onnx", b"x")
    hub.set_fault(key, "unbounded")
    watch = LargestPartial(root)
    model = entry("VITL", {PATH: DATA}, declare="none", max_file_size=100_000)

    with pytest.raises(
        FileRejected,
        match=rf"^model\.onnx: {HOST} sent more than 100,000 bytes, the most ImageForge accepts for one file of "
        r"this model; the download was stopped and deleted\.$",
    ):
        run(root, [model], sources(hub.url, hub.mirror), cancelled=watch)
    assert watch.largest <= 100_000
    assert partials(root) == [] and not (root / "models/vitl" / PATH).exists()


def test_a_body_that_ends_before_the_announced_size_is_a_broken_transfer(hub, root, run):
    key = hub.add_hub_file("kit/vitl", PATH, DATA)
    hub.set_fault(key, "unbounded")
    hub.announced_size = len(DATA) + 1000

    with pytest.raises(TransferBroken, match=rf"^model\.onnx: {HOST} ended the transfer after {len(DATA)} bytes"):
        run(root, [entry("VITL", {PATH: DATA}, declare="none")], sources(hub.url), retry=RetryPolicy(retries=0))
    (partial,) = partials(root)  # kept for the next download to resume
    assert partial.stat().st_size == len(DATA)


def test_a_resume_answered_with_the_whole_file_starts_over_in_the_same_response(hub, root, run):
    """An undeclared file: the hub ignores the Range of the resume and sends the whole file. The body is taken
    from byte 0 (never appended to the partial: huggingface_hub 0.36 spliced them)."""
    key = hub.add_hub_file("kit/vitl", PATH, DATA)
    model = entry("VITL", {PATH: DATA}, declare="none")

    def cancel_after_some_bytes() -> bool:
        return any(path.stat().st_size >= 100_000 for path in partials(root))

    with pytest.raises(DownloadCancelled):
        run(root, [model], sources(hub.url), cancelled=cancel_after_some_bytes)
    (partial,) = partials(root)
    kept = partial.stat().st_size
    hub.set_fault(key, "ignore_range")  # answers the Range request with 200 and the whole file

    run(root, [model], sources(hub.url))

    last = hub.served(key)[-1]
    assert last.range == f"bytes={kept}-" and last.status == 200 and last.bytes_sent == len(DATA)
    assert (root / "models/vitl" / PATH).read_bytes() == DATA
    assert partials(root) == []


@pytest.mark.parametrize("declare", ["none", "both"], ids=["huggingface_hub", "streamed"])
def test_a_redirect_loop_is_one_sentence_and_the_mirror_is_tried(hub, root, run, declare):
    key = hub.add_hub_file("kit/vitl", PATH, DATA)
    hub.set_fault(key, "redirect_loop")
    model = entry("VITL", {PATH: DATA}, declare=declare)

    with pytest.raises(
        SourceRefused,
        match=rf"^model\.onnx: {HOST} redirected the download more than 10 times \(a redirect loop\); nothing was "
        r"downloaded from it\.$",
    ):
        run(root, [model], sources(hub.url))

    hub.add_mirror_file("vitl", PATH, DATA)
    run(root, [model], sources(hub.url, hub.mirror))
    assert (root / "models/vitl" / PATH).read_bytes() == DATA
    assert not part_path(root / "models/vitl" / PATH).exists()
