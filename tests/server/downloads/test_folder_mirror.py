"""A mirror that is a folder (a path or a file: URL: the share `imageforge models export` writes) is read by the
same download code as an HTTP mirror: verified, resumable, with one-sentence failures that name the folder."""

from __future__ import annotations

import hashlib

import pytest

from imageforge.contract import ModelUnavailableError
from imageforge.contract.health import DownloadSource
from imageforge.contract.model_files import part_path
from imageforge.server.downloads.sources import DownloadSettings, mirror_location
from tests.kit.hub import Blackhole

from .conftest import content, entry, sources

DATA = content(300_000, 3)


@pytest.fixture
def share(tmp_path):
    folder = tmp_path / "studio share"
    (folder / "ben2" / "onnx").mkdir(parents=True)
    (folder / "ben2" / "onnx" / "model fp16.onnx").write_bytes(DATA)
    return folder


def test_a_folder_path_or_file_url_is_the_mirror(share):
    as_path = DownloadSettings.from_environment({"IMAGEFORGE_MODEL_MIRROR": f" {share}/ "})
    as_url = DownloadSettings.from_environment({"IMAGEFORGE_MODEL_MIRROR": share.as_uri()})
    assert as_path.mirror == as_url.mirror == share.as_uri()
    assert mirror_location("https://models.example/x/") == "https://models.example/x"


@pytest.mark.parametrize("form", ["path", "url"])
def test_a_dead_hub_and_a_folder_mirror_download_verified_files(share, root, run, form):
    model = entry("BEN2", {"onnx/model fp16.onnx": DATA}, directory="ben2")
    mirror = str(share) if form == "path" else share.as_uri()
    with Blackhole() as dead_hub:
        chosen = sources(dead_hub.url, DownloadSettings.from_environment({"IMAGEFORGE_MODEL_MIRROR": mirror}).mirror)
        assert run(root, [model], chosen) == {"BEN2": {"onnx/model fp16.onnx": "downloaded"}}
    assert (root / "models/ben2/onnx/model fp16.onnx").read_bytes() == DATA
    assert chosen.current is DownloadSource.MIRROR


def test_an_interrupted_copy_from_the_folder_resumes_where_it_stopped(share, root, run):
    model = entry("BEN2", {"onnx/model fp16.onnx": DATA}, directory="ben2")
    partial = part_path(root / "models/ben2/onnx/model fp16.onnx")
    partial.parent.mkdir(parents=True)
    partial.write_bytes(DATA[:120_000])
    with Blackhole() as dead_hub:
        run(root, [model], sources(dead_hub.url, share.as_uri()))
    assert hashlib.sha256((root / "models/ben2/onnx/model fp16.onnx").read_bytes()).digest() == (
        hashlib.sha256(DATA).digest()
    )
    assert "BEN2 onnx/model fp16.onnx: 300000 bytes, 120000 resumed, sha256 " in run.log[-1]


def test_a_tampered_file_in_the_folder_is_never_installed(share, root, run):
    model = entry("BEN2", {"onnx/model fp16.onnx": DATA}, directory="ben2")
    (share / "ben2" / "onnx" / "model fp16.onnx").write_bytes(DATA[:-1] + b"?")
    with Blackhole() as dead_hub, pytest.raises(ModelUnavailableError):
        run(root, [model], sources(dead_hub.url, share.as_uri()))
    assert not (root / "models/ben2/onnx/model fp16.onnx").exists()


def test_a_file_missing_from_the_folder_names_the_folder(share, root, run):
    model = entry("MOGE", {"model.onnx": DATA}, directory="moge")
    with Blackhole() as dead_hub, pytest.raises(ModelUnavailableError) as raised:
        run(root, [model], sources(dead_hub.url, share.as_uri()))
    assert str(raised.value).startswith(
        f"model.onnx is not available from the folder {share / 'moge'} (HTTP 404); from the hub: Cannot reach "
    )


def test_a_folder_mirror_comes_before_the_hub(share, root, run, hub):
    """The studio's folder is read first: a live hub that has the file is never asked (a render node sets up
    from the share without a request to the hub), and the health snapshot says where models come from."""
    model = entry("BEN2", {"onnx/model fp16.onnx": DATA}, directory="ben2")
    hub.add_hub_file(model.repository, "onnx/model fp16.onnx", DATA)
    chosen = sources(hub.url, share.as_uri())
    assert chosen.current is DownloadSource.MIRROR and chosen.snapshot()["source"] == "mirror"
    assert run(root, [model], chosen) == {"BEN2": {"onnx/model fp16.onnx": "downloaded"}}
    assert (root / "models/ben2/onnx/model fp16.onnx").read_bytes() == DATA
    assert hub.requests == []


def test_a_file_the_folder_lacks_comes_from_the_hub(share, root, run, hub):
    model = entry("MOGE", {"model.onnx": DATA}, directory="moge")
    hub.add_hub_file(model.repository, "model.onnx", DATA)
    assert run(root, [model], sources(hub.url, share.as_uri())) == {"MOGE": {"model.onnx": "downloaded"}}
    assert (root / "models/moge/model.onnx").read_bytes() == DATA
    assert [request.path for request in hub.requests] == [f"{model.repository}/resolve/main/model.onnx"]
    assert any(line.startswith("mirror refused: model.onnx is not available from the folder") for line in run.log)


def test_an_http_mirror_still_comes_after_the_hub(root, run, hub):
    model = entry("BEN2", {"onnx/model fp16.onnx": DATA}, directory="ben2")
    hub.add_hub_file(model.repository, "onnx/model fp16.onnx", DATA)
    hub.add_mirror_file("ben2", "onnx/model fp16.onnx", DATA)
    chosen = sources(hub.url, hub.mirror)
    assert chosen.current is DownloadSource.HUB
    run(root, [model], chosen)
    assert [request.path for request in hub.requests] == [f"{model.repository}/resolve/main/onnx/model fp16.onnx"]
