"""Hub first, then the mirror: the switch on an unreachable hub, its stickiness, per-file fallback, proxies."""

from __future__ import annotations

import time

import pytest

from imageforge.contract import ModelUnavailableError
from imageforge.contract.health import DownloadSource
from imageforge.server.downloads.sources import (
    CONNECT_TIMEOUT,
    READ_TIMEOUT,
    DownloadSettings,
    DownloadSources,
    Timeouts,
)
from tests.kit.hub import Blackhole

from .conftest import FAST, content, entry, sources

DATA = content(256 * 1024, 7)
OTHER = content(64 * 1024, 8)


def test_settings_come_from_the_environment():
    assert DownloadSettings.from_environment({}) == DownloadSettings(
        "https://huggingface.co", None, Timeouts(CONNECT_TIMEOUT, READ_TIMEOUT)
    )
    assert (CONNECT_TIMEOUT, READ_TIMEOUT) == (6.0, 60.0)
    configured = DownloadSettings.from_environment(
        {
            "HF_ENDPOINT": "https://hf-mirror.example/",
            "IMAGEFORGE_MODEL_MIRROR": " https://models.example/imageforge/ ",
            "IMAGEFORGE_DOWNLOAD_CONNECT_TIMEOUT": "2.5",
            "IMAGEFORGE_DOWNLOAD_READ_TIMEOUT": "nonsense",
        }
    )
    assert configured == DownloadSettings(
        "https://hf-mirror.example", "https://models.example/imageforge", Timeouts(2.5, READ_TIMEOUT)
    )
    model = entry("BEN2", {"onnx/model fp16.onnx": DATA})
    chosen = DownloadSources(configured)
    assert chosen.url(DownloadSource.HUB, model, model.files[0]) == (
        "https://hf-mirror.example/kit/ben2/resolve/main/onnx/model%20fp16.onnx"
    )
    assert (
        chosen.url(DownloadSource.MIRROR, model, model.files[0])
        == "https://models.example/imageforge/ben2/onnx/model%20fp16.onnx"
    )


def test_unreachable_hub_switches_to_the_mirror_within_the_connect_timeout(hub, root, run):
    hub.add_mirror_file("ben2", "model.onnx", DATA)
    with Blackhole() as dead_hub:
        chosen = sources(dead_hub.url, hub.mirror)
        started = time.monotonic()
        outcome = run(root, [entry("BEN2", {"model.onnx": DATA})], chosen)
        elapsed = time.monotonic() - started

    assert outcome == {"BEN2": {"model.onnx": "downloaded"}}
    assert (root / "models/ben2/model.onnx").read_bytes() == DATA
    assert FAST.connect <= elapsed < FAST.connect + 1.5
    snapshot = chosen.snapshot()
    assert snapshot["source"] == "mirror" and snapshot["mirror"] == hub.mirror
    assert "timed out" in snapshot["reason"] and "model.onnx" in snapshot["reason"]
    assert [r.path for r in hub.requests] == ["mirror/ben2/model.onnx"]


def test_the_mirror_stays_chosen_for_the_life_of_the_server(hub, root, run):
    hub.add_hub_file("kit/ben2", "model.onnx", DATA)
    hub.add_hub_file("kit/moge", "model.onnx", OTHER)
    hub.add_mirror_file("ben2", "model.onnx", DATA)
    hub.add_mirror_file("moge", "model.onnx", OTHER)
    chosen = sources(hub.url, hub.mirror)
    hub.set_fault("kit/ben2/resolve/main/model.onnx", "500", times=1)  # the hub fails once, then recovers

    run(root, [entry("BEN2", {"model.onnx": DATA})], chosen)
    assert chosen.current is DownloadSource.MIRROR
    requests_before = len(hub.requests)

    run(root, [entry("MOGE", {"model.onnx": OTHER})], chosen)  # the hub is healthy again for this file

    assert [r.path for r in hub.requests[requests_before:]] == ["mirror/moge/model.onnx"]
    assert (root / "models/moge/model.onnx").read_bytes() == OTHER
    fresh_server = sources(hub.url, hub.mirror)  # a new server process tries the hub again
    assert fresh_server.order() == [DownloadSource.HUB, DownloadSource.MIRROR]


def test_unreachable_hub_without_a_mirror_says_how_to_fix_it(root, run):
    with Blackhole() as dead_hub, pytest.raises(ModelUnavailableError) as raised:
        run(root, [entry("BEN2", {"model.onnx": DATA})], sources(dead_hub.url))
    message = str(raised.value)
    assert message.startswith("Cannot reach 127.0.0.1:") and "for model.onnx (timed out)" in message
    assert "IMAGEFORGE_MODEL_MIRROR" in message and "HF_ENDPOINT" in message
    assert not (root / "models/ben2/model.onnx").exists()


def test_a_stalled_hub_hits_the_idle_timeout_then_the_mirror_finishes(hub, root, run):
    key = hub.add_hub_file("kit/ben2", "model.onnx", DATA)
    hub.add_mirror_file("ben2", "model.onnx", DATA)
    hub.set_fault(key, "stall")
    hub.stall_seconds = 3
    chosen = sources(hub.url, hub.mirror, Timeouts(connect=0.5, read=0.4))

    started = time.monotonic()
    run(root, [entry("BEN2", {"model.onnx": DATA})], chosen)

    assert time.monotonic() - started < 2.5
    assert chosen.current is DownloadSource.MIRROR and "timed out" in chosen.snapshot()["reason"]
    assert (root / "models/ben2/model.onnx").read_bytes() == DATA


def test_a_file_missing_on_the_hub_comes_from_the_mirror_without_switching(hub, root, run):
    hub.add_hub_file("kit/split", "encoder.onnx", DATA)
    hub.add_mirror_file("split", "decoder.onnx", OTHER)  # the hub lost decoder.onnx; the mirror kept it
    chosen = sources(hub.url, hub.mirror)

    run(root, [entry("SPLIT", {"encoder.onnx": DATA, "decoder.onnx": OTHER})], chosen)

    assert [r.path for r in hub.requests] == [
        "kit/split/resolve/main/encoder.onnx",
        "kit/split/resolve/main/decoder.onnx",
        "mirror/split/decoder.onnx",
    ]
    assert chosen.current is DownloadSource.HUB and "HTTP 404" in chosen.snapshot()["last_error"]
    assert (root / "models/split/decoder.onnx").read_bytes() == OTHER


@pytest.mark.parametrize(("declare", "methods"), [("both", ["GET"]), ("none", ["HEAD", "GET"])])
def test_system_proxy_and_hf_endpoint_are_honoured(hub, root, run, monkeypatch, declare, methods):
    hub.add_hub_file("kit/ben2", "model.onnx", DATA)
    monkeypatch.setenv("HTTP_PROXY", hub.url)  # the kit hub answers absolute-form requests like a proxy
    monkeypatch.setenv("HF_ENDPOINT", "http://hub.imageforge.invalid")

    chosen = DownloadSources()
    run(root, [entry("BEN2", {"model.onnx": DATA}, declare=declare)], chosen)

    assert chosen.settings.hub == "http://hub.imageforge.invalid"
    assert [(r.method, r.path, r.proxied) for r in hub.requests] == [
        (method, "kit/ben2/resolve/main/model.onnx", True) for method in methods
    ]
    assert (root / "models/ben2/model.onnx").read_bytes() == DATA
