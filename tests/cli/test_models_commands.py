"""`imageforge models list | download | verify` use the download code and tell the truth about the disk."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from imageforge.cli.main import main
from tests.cli.cli_process import imageforge, kit_environment
from tests.kit.catalog import catalog_entry, publish_kit_catalog, write_catalog

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


@contextlib.contextmanager
def read_only(folder: Path):
    """`folder`, read-only for this process: a read-only bind mount as root (modes do not stop root), else 0500."""
    if os.geteuid() != 0:
        modes = {path: path.stat().st_mode for path in [folder, *folder.rglob("*")] if path.is_dir()}
        for path in modes:
            path.chmod(0o500)
        try:
            yield folder
        finally:
            for path, mode in modes.items():
                path.chmod(mode)
        return
    mounted = subprocess.run(["mount", "--bind", str(folder), str(folder)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip("running as root without mount: no way to make a folder read-only for root")
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(folder)], check=True, capture_output=True)
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=False)


def test_list_and_verify_work_on_a_read_only_storage_root(catalog, storage_root, capsys):
    (storage_root / "models" / "ben2").mkdir(parents=True)
    (storage_root / "models" / "ben2" / "model.onnx").write_bytes(BEN2)  # never hashed: no cache record yet
    with read_only(storage_root):
        with pytest.raises(OSError):
            (storage_root / "models" / "probe").write_bytes(b"")
        assert main(["--storage-root", str(storage_root), "models", "list"]) == 0
        assert lines(capsys)[0].endswith(" ready")
        assert main(["--storage-root", str(storage_root), "models", "verify"]) == 0
        assert lines(capsys) == ["ready      KIT_BEN2 model.onnx"]
    assert sorted(path.name for path in (storage_root / "models").iterdir()) == ["ben2"]


def rot(storage: Path, directory: str, good: bytes) -> Path:
    """Damage a downloaded model file in a way its (size, times) record cannot see: bit rot after the record."""
    from imageforge.contract.model_files import remember_hash

    path = storage / "models" / directory / "model.onnx"
    path.write_bytes(b"\0" * len(good))
    remember_hash(storage, path, hashlib.sha256(good).hexdigest())
    return path


@pytest.mark.slow
def test_verify_then_download_fetches_a_damaged_file_again(catalog, hub, server_storage):
    key = hub.add_hub_file("kit/up", "model.onnx", UPSCALE)
    env = kit_environment(hub_url=hub.url, storage=server_storage)
    assert imageforge("models", "download", "KIT_UPSCALE", env=env).returncode == 0
    path = rot(server_storage, "up", UPSCALE)

    verified = imageforge("models", "verify", env=env)
    assert verified.returncode == 1
    assert verified.stdout.strip() == "wrong_hash KIT_UPSCALE model.onnx"
    assert "'imageforge models download KEY' fetches them again" in verified.stderr

    again = imageforge("models", "download", "KIT_UPSCALE", env=env)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout) == {"models": {"KIT_UPSCALE": {"model.onnx": "downloaded"}}}
    assert path.read_bytes() == UPSCALE
    assert len(hub.served(key)) == 2


@pytest.mark.slow
def test_a_job_on_a_damaged_model_says_so_and_the_next_run_downloads_it_anew(hub, server_storage, tmp_path):
    catalog = publish_kit_catalog(hub, tmp_path / "catalog", keys=("KIT_UPSCALE",))
    env = kit_environment(hub_url=hub.url, storage=server_storage, catalog=catalog.path)
    image = tmp_path / "photo.png"
    Image.fromarray(np.zeros((12, 16, 3), np.uint8)).save(image)
    assert imageforge("run", "upscale-image", f"input={image}", env=env).returncode == 0
    path = rot(server_storage, "kit_upscale", catalog.files["KIT_UPSCALE"])

    failed = imageforge("run", "upscale-image", f"input={image}", env=env)

    assert failed.returncode == 1
    assert failed.stderr.strip().splitlines()[-1] == (
        "imageforge: Kit Upscale is damaged on disk (model.onnx no longer matches its download); "
        "run the job again to download it anew, or 'imageforge models download KIT_UPSCALE'."
    )
    again = imageforge("run", "upscale-image", f"input={image}", env=env)
    assert again.returncode == 0, again.stderr
    assert path.read_bytes() == catalog.files["KIT_UPSCALE"]


def test_a_read_only_storage_root_is_one_sentence_before_any_server_starts(catalog, server_storage, capsys):
    """A root on a read-only drive: the start says which folder and what to do (before: `[Errno 30] Read-only
    file system: '.../.server-start.lock'`), and nothing is left behind."""
    before = sorted(path.name for path in server_storage.iterdir())
    with read_only(server_storage):
        assert main(["--storage-root", str(server_storage), "models", "download", "KIT_UPSCALE"]) == 1
    message = capsys.readouterr().err.strip()
    why = "is on a read-only drive" if os.geteuid() == 0 else "cannot be written by this user"
    assert message == (
        f"imageforge: The Storage Root {server_storage} {why}; choose a folder you can write to as Storage Root "
        "in the add-on's preferences (or --storage-root), or free that folder, then try again."
    )
    assert sorted(path.name for path in server_storage.iterdir()) == before


def test_setup_on_a_read_only_storage_root_is_one_sentence(storage_root, capsys):
    storage_root.mkdir(mode=0o700)
    with read_only(storage_root):
        assert main(["--storage-root", str(storage_root), "setup"]) == 1
    message = capsys.readouterr().err.strip()
    assert message.startswith(f"imageforge: The Storage Root {storage_root} ")
    assert "Errno" not in message and list(storage_root.iterdir()) == []
