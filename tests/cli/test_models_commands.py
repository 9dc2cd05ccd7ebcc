"""`imageforge models list | download | verify` use the download code and tell the truth about the disk."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from imageforge.cli.main import main
from tests.cli.cli_process import imageforge, kit_environment
from tests.kit.catalog import catalog_entry, write_catalog

BEN2 = os.urandom(200_000)
UPSCALE = os.urandom(100_000)


@pytest.fixture
def catalog(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    entries = [
        catalog_entry("KIT_BEN2", {"model.onnx": BEN2}, directory="ben2", default=True),
        catalog_entry("KIT_UPSCALE", {"model.onnx": UPSCALE}, directory="up"),
    ]
    path = write_catalog(tmp_path / "catalog.json", entries)
    monkeypatch.setenv("IMAGEFORGE_MODEL_CATALOG", str(path))
    return path


def lines(capsys) -> list[str]:
    return capsys.readouterr().out.strip().splitlines()


def test_list_and_verify_read_the_disk(catalog, storage_root, capsys):
    models = storage_root / "models"
    assert main(["--storage-root", str(storage_root), "models", "list"]) == 0
    assert [line.split()[-2:] for line in lines(capsys)] == [["not", "downloaded"]] * 2

    (models / "ben2").mkdir(parents=True)
    (models / "ben2" / "model.onnx").write_bytes(BEN2)
    (models / "up").mkdir()
    (models / "up" / "model.onnx.part").write_bytes(UPSCALE[:25_000])
    assert main(["--storage-root", str(storage_root), "models", "list"]) == 0
    listed = lines(capsys)
    assert listed[0].startswith("* KIT_BEN2") and listed[0].endswith(" ready")
    assert listed[1].endswith(" partial 25%")

    assert main(["--storage-root", str(storage_root), "models", "verify"]) == 0
    assert lines(capsys) == ["ready      KIT_BEN2 model.onnx"]

    (models / "ben2" / "model.onnx").write_bytes(BEN2[:-1] + b"?")
    assert main(["--storage-root", str(storage_root), "models", "verify"]) == 1
    captured = capsys.readouterr()
    assert captured.out.strip() == "wrong_hash KIT_BEN2 model.onnx"
    assert "1 file(s) damaged" in captured.err
    assert main(["--storage-root", str(storage_root), "models", "list"]) == 0
    assert lines(capsys)[0].endswith(" damaged")


def test_download_unknown_key_fails_before_any_server_starts(catalog, storage_root, capsys):
    assert main(["--storage-root", str(storage_root), "models", "download", "NOPE"]) == 1
    assert capsys.readouterr().err.strip() == (
        "imageforge: Unknown model 'NOPE'; valid models are: KIT_BEN2, KIT_UPSCALE."
    )
    assert not storage_root.exists()


@pytest.mark.slow
def test_download_runs_the_job_on_the_server(catalog, hub, server_storage):
    hub.add_hub_file("kit/up", "model.onnx", UPSCALE)
    completed = imageforge(
        "models", "download", "KIT_UPSCALE", env=kit_environment(hub_url=hub.url, storage=server_storage)
    )
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout) == {"models": {"KIT_UPSCALE": {"model.onnx": "downloaded"}}}
    assert (server_storage / "models" / "up" / "model.onnx").read_bytes() == UPSCALE
