"""A transfer that breaks (even inside its first chunk) is resumed from the same source within the job: bounded
retries with exponential backoff, then the mirror if there is one, then one sentence that keeps the `.part`."""

from __future__ import annotations

import pytest

from imageforge.contract import ModelUnavailableError
from imageforge.contract.health import DownloadSource
from imageforge.contract.model_files import part_path
from imageforge.server.downloads.failures import TransferBroken
from imageforge.server.downloads.install import RETRY, RetryPolicy

from .conftest import content, entry, sources

SIZE = 512 * 1024
DATA = content(SIZE, 5)
QUICK = RetryPolicy(first_delay=0.01, max_delay=0.02)


@pytest.fixture
def served(hub):
    hub.drop_after = 4096  # inside the first 64 KiB chunk: nothing reaches the `.part`
    return hub.add_hub_file("kit/ben2", "onnx/model.onnx", DATA)


def test_the_default_policy_is_five_retries_backing_off_from_half_a_second():
    assert RETRY.retries == 5
    assert [RETRY.delay(retry) for retry in range(1, 6)] == [0.5, 1.0, 2.0, 4.0, 8.0]


@pytest.mark.parametrize("declare", ["both", "none"], ids=["streamed", "huggingface_hub"])
def test_drops_inside_the_first_chunk_are_retried_in_the_same_job(hub, served, root, run, declare):
    path = "onnx/model.onnx"
    hub.set_fault(served, "drop", times=2)

    outcome = run(root, [entry("BEN2", {path: DATA}, declare=declare, directory="ben2")], sources(hub.url))

    assert outcome == {"BEN2": {path: "downloaded"}}
    assert (root / "models/ben2" / path).read_bytes() == DATA
    gets = hub.served(served)  # (huggingface_hub's HEAD takes one of the two faults on its path)
    assert [record.bytes_sent for record in gets] == [4096] * (len(gets) - 1) + [SIZE] and len(gets) >= 2
    retries = [line.rsplit(";", 1)[1] for line in run.log if "retry" in line]
    assert (
        retries
        == [" retry 1 of 5 in 0.5 s, resuming the part", " retry 2 of 5 in 1 s, resuming the part"][: len(gets) - 1]
    )


def test_a_resume_after_a_break_asks_for_the_rest_with_range_and_restarts_the_count(hub, served, root, run):
    hub.drop_after = 100_000  # one whole chunk arrives each time, so the `.part` grows before each break
    hub.set_fault(served, "drop", times=7)

    run(root, [entry("BEN2", {"onnx/model.onnx": DATA})], sources(hub.url), retry=QUICK)

    gets = hub.served(served)
    assert len(gets) == 8  # seven breaks, more than five retries: each one made progress
    starts = [int(record.range.removeprefix("bytes=").removesuffix("-")) if record.range else 0 for record in gets]
    assert starts == sorted(starts) and starts[0] == 0 and starts[1] > 0
    assert (root / "models/ben2/onnx/model.onnx").read_bytes() == DATA


def test_a_source_that_keeps_dropping_fails_after_five_retries_keeping_the_part(hub, served, root, run):
    hub.set_fault(served, "drop")
    model = entry("BEN2", {"onnx/model.onnx": DATA})

    with pytest.raises(TransferBroken) as failure:
        run(root, [model], sources(hub.url), retry=QUICK)

    assert len(hub.served(served)) == 6
    assert str(failure.value) == (
        f"model.onnx: the connection to 127.0.0.1:{hub.url.rsplit(':', 1)[1]} broke after 0 bytes "
        "(connection closed early), 6 times in a row; the part downloaded so far is kept and the next download "
        "resumes it."
    )
    assert part_path(root / "models/ben2/onnx/model.onnx").exists()


def test_after_the_retries_the_mirror_finishes_the_file(hub, served, root, run):
    hub.set_fault(served, "drop")
    hub.add_mirror_file("ben2", "onnx/model.onnx", DATA)
    chosen = sources(hub.url, hub.mirror)

    run(root, [entry("BEN2", {"onnx/model.onnx": DATA})], chosen, retry=QUICK)

    assert len(hub.served(served)) == 6
    assert chosen.current is DownloadSource.MIRROR
    assert (root / "models/ben2/onnx/model.onnx").read_bytes() == DATA


def test_a_broken_transfer_is_still_a_model_unavailable_error():
    assert issubclass(TransferBroken, ModelUnavailableError)
