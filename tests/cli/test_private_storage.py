"""The storage root, job folders and model files are private to the user (0700 / 0600), whatever the umask."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from imageforge.contract.private_storage import make_private_folder, make_storage_private
from tests.cli.cli_process import imageforge, kit_environment
from tests.kit.catalog import publish_kit_catalog

pytestmark = pytest.mark.skipif(os.name == "nt", reason="POSIX modes")


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


@pytest.fixture
def open_umask():
    previous = os.umask(0)
    yield
    os.umask(previous)


def test_a_new_storage_root_is_0700_even_with_an_open_umask(tmp_path, open_umask):
    root = make_private_folder(tmp_path / "a" / "storage")
    assert mode(root) == 0o700
    assert mode(tmp_path / "a") == 0o700  # parents it created are private too
    assert make_private_folder(root) == root and mode(root) == 0o700


def test_an_existing_readable_root_is_tightened_but_links_are_left_alone(tmp_path):
    root = tmp_path / "storage"
    (root / "jobs" / "0123").mkdir(parents=True)
    (root / "models").mkdir()
    (root / "server.log").write_text("log")
    elsewhere = tmp_path / "shared.txt"
    elsewhere.write_text("not ours to change")
    elsewhere.chmod(0o644)
    (root / "link.txt").symlink_to(elsewhere)
    for path in (root, root / "jobs", root / "models"):
        path.chmod(0o755)
    (root / "server.log").chmod(0o644)

    make_storage_private(root)

    assert [mode(root), mode(root / "jobs"), mode(root / "models")] == [0o700, 0o700, 0o700]
    assert mode(root / "server.log") == 0o600
    assert mode(elsewhere) == 0o644


@pytest.mark.slow
def test_a_job_run_with_an_open_umask_leaves_nothing_readable_by_others(hub, server_storage, tmp_path, open_umask):
    catalog = publish_kit_catalog(hub, tmp_path / "catalog", keys=("KIT_UPSCALE",))
    image = tmp_path / "photo.png"
    Image.fromarray(np.zeros((12, 16, 3), np.uint8)).save(image)
    server_storage.chmod(0o755)

    completed = imageforge(
        "run",
        "upscale-image",
        f"input={image}",
        env=kit_environment(hub_url=hub.url, storage=server_storage, catalog=catalog.path),
    )

    assert completed.returncode == 0, completed.stderr
    result = Path(json.loads(completed.stdout)["upscale"])
    assert mode(server_storage) == 0o700
    created = [result.parent, *result.parent.rglob("*"), server_storage / "jobs", server_storage / "models"]
    created += (server_storage / "models").rglob("*")
    assert len(created) > 6
    for path in created:
        assert mode(path) == (0o700 if path.is_dir() else 0o600), path
    assert mode(server_storage / "server.log") == 0o600
