"""Files without a declared size and hash: huggingface_hub 2.x asks the loopback hub what the file is, and our
streamed download fetches that commit's bytes."""

from __future__ import annotations

import hashlib
import time

import pytest

from imageforge.contract import ModelUnavailableError
from imageforge.contract.health import DownloadSource
from imageforge.contract.model_files import FileState, model_status, verify_file
from imageforge.server.downloads.failures import DownloadCancelled, FileRejected
from tests.kit.hub import HUB_COMMIT, Blackhole

from .conftest import FAST, content, entry, sources

SIZE = 256 * 1024
DATA = content(SIZE, 11)
PATH = "weights/model.onnx"


@pytest.fixture
def served(hub):
    return hub.add_hub_file("kit/vitl", PATH, DATA)


@pytest.mark.parametrize("lfs_redirect", [False, True], ids=["direct", "cdn-redirect"])
def test_undeclared_file_comes_through_huggingface_hub(hub, served, root, run, lfs_redirect):
    hub.lfs_redirect = lfs_redirect
    model = entry("VITL", {PATH: DATA}, declare="none")

    assert run(root, [model], sources(hub.url)) == {"VITL": {PATH: "downloaded"}}

    target = root / "models/vitl" / PATH
    assert target.read_bytes() == DATA
    # The library's HEAD stops at the redirect to the CDN (another host), which carries the metadata; the GET
    # is pinned to the commit the hub named, and follows the redirect.
    fetched = [("GET", "kit"), ("GET", "cdn")] if lfs_redirect else [("GET", "kit")]
    assert [(r.method, r.path.split("/")[0]) for r in hub.requests] == [("HEAD", "kit"), *fetched]
    assert [r.revision for r in hub.requests if r.method == "GET" and r.path.startswith("kit")] == [HUB_COMMIT]
    assert not (root / "models/.staging").exists()
    # The hash measured on arrival is remembered: a later change of the file is caught although the
    # catalog declares none.
    assert model_status(root, model).ready
    target.write_bytes(DATA[:-1] + b"!")
    assert verify_file(root, model, model.files[0]).state is FileState.WRONG_HASH


def test_library_progress_is_mapped_into_the_job(hub, served, root, run):
    hub.set_fault(served, "slow")
    hub.slow_delay = 0.003

    run(root, [entry("VITL", {PATH: DATA}, declare="none")], sources(hub.url))

    downloading = [(fraction, message) for fraction, message in run.reports if message.startswith("Downloading")]
    assert len(downloading) >= 2
    fractions = [fraction for fraction, _ in downloading]
    assert fractions == sorted(fractions) and 0 < fractions[1] < 1
    assert downloading[-1][1].startswith(f"Downloading Vitl {fractions[-1]:.0%} · ")
    assert downloading[-1][1].endswith(("MB/s", "kB/s"))


def test_declared_sha256_is_checked_on_the_library_path(hub, served, root, run):
    hub.set_fault(served, "wrong_bytes")
    model = entry("VITL", {PATH: DATA}, declare="sha256")  # like Real-ESRGAN general: hash known, size not

    with pytest.raises(FileRejected, match=r"^model\.onnx does not match its declared SHA-256"):
        run(root, [model], sources(hub.url))

    assert not (root / "models/vitl" / PATH).exists()
    assert not list((root / "models/.staging").rglob("model.onnx"))


def test_without_a_declared_hash_the_hubs_lfs_hash_is_checked(hub, served, root, run):
    hub.set_fault(served, "wrong_bytes")  # the hub's ETag is the SHA-256 of the real file

    with pytest.raises(FileRejected):
        run(root, [entry("VITL", {PATH: DATA}, declare="none")], sources(hub.url))
    assert not (root / "models/vitl" / PATH).exists()


def test_missing_file_names_the_file(hub, root, run):
    hub.add_hub_file("kit/vitl", "other.onnx", b"x")

    with pytest.raises(
        ModelUnavailableError, match=r"^model\.onnx is not available from 127\.0\.0\.1:\d+ \(HTTP 404\)"
    ):
        run(root, [entry("VITL", {PATH: DATA}, declare="none")], sources(hub.url))


def test_cancel_keeps_the_partial_and_the_next_run_resumes_it(hub, served, root, run):
    model = entry("VITL", {PATH: DATA}, declare="none")
    partial = root / "models/vitl" / f"{PATH}.part"  # the streamed download's, as for declared files

    def cancel_after_some_bytes() -> bool:
        return partial.exists() and partial.stat().st_size >= 100_000

    with pytest.raises(DownloadCancelled):
        run(root, [model], sources(hub.url), cancelled=cancel_after_some_bytes)
    kept = partial.stat().st_size
    assert 100_000 <= kept < SIZE and not model_status(root, model).ready

    run(root, [model], sources(hub.url))

    last = hub.served(served)[-1]
    assert last.range == f"bytes={kept}-" and last.bytes_sent == SIZE - kept < SIZE
    assert last.revision == HUB_COMMIT
    assert (root / "models/vitl" / PATH).read_bytes() == DATA
    assert hashlib.sha256(DATA).hexdigest() in (root / "models/.verified.json").read_text()


def test_the_token_reaches_the_hub_and_never_the_cdn(hub, served, root, run, monkeypatch):
    """A gated repository needs HF_TOKEN on the HEAD and on the GET; the CDN (another host) never sees it."""
    hub.lfs_redirect = True
    monkeypatch.setenv("HF_TOKEN", "hf_kit_token")
    seen: list[tuple[str, str, str | None]] = []
    hub.on_request = lambda handler, key: seen.append(
        (handler.command, key.split("/")[0], handler.headers.get("Authorization"))
    )

    run(root, [entry("VITL", {PATH: DATA}, declare="none")], sources(hub.url))

    assert seen == [
        ("HEAD", "kit", "Bearer hf_kit_token"),
        ("GET", "kit", "Bearer hf_kit_token"),
        ("GET", "cdn", None),
    ]
    assert (root / "models/vitl" / PATH).read_bytes() == DATA


def test_what_huggingface_hub_0_36_staged_is_deleted(hub, served, root, run):
    """ImageForge up to 2026-12-02 let the library stage into models/.staging/<directory>; nothing can resume
    those `.incomplete` files now, so the next download of that model deletes them (a conversion's scratch
    folder beside them is left alone)."""
    old = root / "models/.staging/vitl/.cache/huggingface/download/weights"
    old.mkdir(parents=True)
    (old / "abc.etag.incomplete").write_bytes(b"x" * 1000)
    scratch = root / "models/.staging/convert-DA3_SMALL"
    scratch.mkdir(parents=True)

    run(root, [entry("VITL", {PATH: DATA}, declare="none")], sources(hub.url))

    assert not (root / "models/.staging/vitl").exists() and scratch.is_dir()
    assert (root / "models/vitl" / PATH).read_bytes() == DATA


def test_unreachable_hub_on_the_library_path_falls_to_the_mirror_without_retries(hub, root, run):
    hub.add_mirror_file("vitl", PATH, DATA)
    with Blackhole() as dead_hub:
        chosen = sources(dead_hub.url, hub.mirror)
        started = time.monotonic()
        run(root, [entry("VITL", {PATH: DATA}, declare="none")], chosen)
        elapsed = time.monotonic() - started

    assert elapsed < FAST.connect + 1.5  # the library's own five retries with back-off take tens of seconds
    assert chosen.current is DownloadSource.MIRROR
    assert (root / "models/vitl" / PATH).read_bytes() == DATA
