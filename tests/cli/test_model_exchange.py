"""`imageforge models export DIR` / `models import DIR`: model files carried to machines without a hub, every file
verified by size and SHA-256 on its way, nothing damaged ever landing under a model's name."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from imageforge.cli.main import main
from imageforge.client.model_exchange import MANIFEST_NAME
from tests.kit.catalog import catalog_entry, write_catalog

BEN2 = os.urandom(300_000)
UPSCALE = os.urandom(100_000)


def use_catalog(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, declare: str = "both") -> None:
    entries = [
        catalog_entry("KIT_BEN2", {"onnx/model.onnx": BEN2}, directory="ben2", default=True, declare=declare),
        catalog_entry("KIT_UPSCALE", {"model.onnx": UPSCALE}, directory="up"),
    ]
    monkeypatch.setenv("IMAGEFORGE_MODEL_CATALOG", str(write_catalog(tmp_path / "catalog.json", entries)))


def imageforge(storage: Path, *arguments: str) -> int:
    return main(["--storage-root", str(storage), *arguments])


@pytest.fixture
def connected(tmp_path: Path) -> Path:
    """The connected machine's storage root: KIT_BEN2 downloaded, KIT_UPSCALE not."""
    storage = tmp_path / "connected"
    (storage / "models" / "ben2" / "onnx").mkdir(parents=True)
    (storage / "models" / "ben2" / "onnx" / "model.onnx").write_bytes(BEN2)
    return storage


def test_export_then_import_carries_the_ready_models(tmp_path, monkeypatch, connected, capsys):
    use_catalog(tmp_path, monkeypatch)
    share = tmp_path / "share"
    assert imageforge(connected, "models", "export", str(share)) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == ["copied        KIT_BEN2 onnx/model.onnx: 0.3 MB"]
    assert err.strip() == "1 file(s) exported and verified."
    assert (share / "ben2" / "onnx" / "model.onnx").read_bytes() == BEN2  # the mirror layout
    manifest = json.loads((share / MANIFEST_NAME).read_text())
    assert [model["key"] for model in manifest["models"]] == ["KIT_BEN2"]

    offline = tmp_path / "render node"
    assert imageforge(offline, "models", "import", str(share)) == 0
    assert capsys.readouterr().out.splitlines() == ["copied        KIT_BEN2 onnx/model.onnx: 0.3 MB"]
    assert (offline / "models" / "ben2" / "onnx" / "model.onnx").read_bytes() == BEN2
    assert imageforge(offline, "models", "list") == 0
    listed = capsys.readouterr().out.splitlines()
    assert listed[0].startswith("* KIT_BEN2") and listed[0].endswith(" ready")
    assert listed[1].endswith("not downloaded")
    assert imageforge(offline, "models", "import", str(share)) == 0  # again: nothing to copy
    assert capsys.readouterr().out.splitlines() == ["already there KIT_BEN2 onnx/model.onnx"]


@pytest.mark.parametrize("declare", ["both", "none"])  # "none": the exporting machine's measured hash decides
def test_a_tampered_file_in_the_folder_is_refused_and_nothing_lands(tmp_path, monkeypatch, connected, capsys, declare):
    use_catalog(tmp_path, monkeypatch, declare)
    share = tmp_path / "share"
    assert imageforge(connected, "models", "export", str(share)) == 0
    tampered = share / "ben2" / "onnx" / "model.onnx"
    tampered.write_bytes(BEN2[:1000] + bytes([BEN2[1000] ^ 1]) + BEN2[1001:])  # same size, one bit
    capsys.readouterr()
    offline = tmp_path / "render node"
    assert imageforge(offline, "models", "import", str(share)) == 1
    out, err = capsys.readouterr()
    assert out.startswith("damaged       KIT_BEN2 onnx/model.onnx: SHA-256 ")
    assert "1 damaged, not copied" in err
    assert list((offline / "models" / "ben2" / "onnx").iterdir()) == []  # no file, no .part


def test_a_file_of_the_wrong_size_is_refused_before_it_is_read(tmp_path, monkeypatch, connected, capsys):
    use_catalog(tmp_path, monkeypatch)
    share = tmp_path / "share"
    (share / "ben2" / "onnx").mkdir(parents=True)
    (share / "ben2" / "onnx" / "model.onnx").write_bytes(BEN2[:-1])
    assert imageforge(tmp_path / "node", "models", "import", str(share)) == 1
    assert capsys.readouterr().out.strip() == (
        f"damaged       KIT_BEN2 onnx/model.onnx: {len(BEN2) - 1} bytes, the catalog says {len(BEN2)}"
    )
    assert not (tmp_path / "node" / "models" / "ben2" / "onnx" / "model.onnx").exists()


def test_import_from_a_folder_that_is_not_there_says_so(tmp_path, monkeypatch, capsys):
    use_catalog(tmp_path, monkeypatch)
    assert imageforge(tmp_path / "node", "models", "import", str(tmp_path / "nowhere")) == 1
    assert capsys.readouterr().err.strip() == (
        f"imageforge: {tmp_path / 'nowhere'} is not a folder; give the folder 'imageforge models export' wrote."
    )


def test_export_with_nothing_downloaded_says_so(tmp_path, monkeypatch, capsys):
    use_catalog(tmp_path, monkeypatch)
    assert imageforge(tmp_path / "empty", "models", "export", str(tmp_path / "share")) == 1
    assert "No model files exported" in capsys.readouterr().err
