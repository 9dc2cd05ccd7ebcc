"""Another local user's code never runs as the victim: a storage root that others can write, or that another user
created, is refused before anything in it is run or read (contract/storage_trust.py, openspec/0024).

The attacker is a real child process running as `nobody` (tests/kit/other_user.py); it plants a `.venv/bin/python`
that leaves a mark when run. Before the check, `imageforge run` executed it; now it refuses with one sentence.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from blendjob.environment import environment_digest
from PIL import Image

from imageforge.client.environment import server_environment
from tests.cli.cli_process import imageforge, kit_environment
from tests.kit.other_user import reachable_folder, require_other_user, run_as_other_user


@pytest.fixture
def folder():
    made = reachable_folder()
    yield made
    shutil.rmtree(made, ignore_errors=True)


@pytest.fixture
def shared_tmp():
    made = reachable_folder(shared=True)  # like /tmp: everyone may create entries, nobody may replace others'
    yield made
    shutil.rmtree(made, ignore_errors=True)


def manifest() -> str:
    """What setup writes: its hash is public (it is computed from the published pins), so anyone can forge it."""
    return json.dumps({"environment_hash": environment_digest(server_environment()), "python": "3.12"})


def plant_python(venv: Path, mark: Path) -> str:
    """The attacker's script: a `.venv/bin/python` that leaves `mark` (with the uid it ran as) when run."""
    return (
        f"mkdir -p '{venv}/bin' && printf '#!/bin/sh\\nid -u > {mark}\\n' > '{venv}/bin/python' "
        f"&& chmod 755 '{venv}/bin/python'"
    )


def image(tmp_path: Path) -> Path:
    path = tmp_path / "photo.png"
    Image.fromarray(np.zeros((8, 8, 3), np.uint8)).save(path)
    return path


def run_upscale(root: Path, tmp_path: Path):
    env = kit_environment(hub_url="http://127.0.0.1:9", storage=root)
    return imageforge("run", "upscale-image", f"input={image(tmp_path)}", env=env)


def test_a_root_others_can_write_is_refused_before_its_python_runs(folder, tmp_path):
    """chmod 777 on the root (a careless user, a sync tool): another user swaps `.venv` for their own."""
    require_other_user()
    root = folder / "storage"
    (root / ".venv" / "bin").mkdir(parents=True)
    (root / "manifest.json").write_text(manifest(), encoding="utf-8")
    root.chmod(0o777)
    mark = tmp_path / "ran"
    run_as_other_user(f"mv '{root}/.venv' '{root}/.venv-old' && {plant_python(root / '.venv', mark)}")

    done = run_upscale(root, tmp_path)

    assert not mark.exists(), f"the other user's python ran as uid {mark.read_text().strip()}"
    assert done.returncode == 1
    assert done.stderr.strip() == (
        f"imageforge: The Storage Root {root} can be written by other users (mode 0777), so they could change what "
        f"ImageForge runs; make it private (chmod 700 '{root}') and, if others may have changed it, set the server "
        "up again (imageforge setup --force, or Set Up Server… in Blender), or choose another Storage Root."
    )
    assert sorted(path.name for path in root.iterdir()) == [".venv", ".venv-old", "manifest.json"]  # nothing added


def test_a_root_another_user_created_first_is_refused(shared_tmp, tmp_path):
    """IMAGEFORGE_STORAGE_ROOT=/tmp/imageforge on a shared machine: another user made it first, with a planted
    environment and a forged manifest."""
    uid, _gid = require_other_user()
    root = shared_tmp / "imageforge"
    mark = tmp_path / "ran"
    run_as_other_user(
        f"mkdir -m 755 '{root}' && {plant_python(root / '.venv', mark)} && printf '%s' '{manifest()}' > "
        f"'{root}/manifest.json'"
    )

    done = run_upscale(root, tmp_path)

    assert not mark.exists(), f"the other user's python ran as uid {mark.read_text().strip()}"
    assert done.returncode == 1
    assert done.stderr.strip() == (
        f"imageforge: The Storage Root {root} belongs to another user (uid {uid}), so ImageForge will not run or "
        "read anything in it; choose another Storage Root (a folder of your own, such as ~/.imageforge)."
    )


def test_setup_refuses_to_build_in_a_root_others_can_write(folder, tmp_path):
    """`imageforge setup` would otherwise make the root private in place, after others could have written."""
    root = folder / "storage"
    root.mkdir()
    root.chmod(0o777)
    done = imageforge("setup", env=kit_environment(hub_url="http://127.0.0.1:9", storage=root))
    assert done.returncode == 1
    assert done.stderr.startswith(f"imageforge: The Storage Root {root} can be written by other users (mode 0777)")
    assert list(root.iterdir()) == [] and (root.stat().st_mode & 0o777) == 0o777  # nothing built, nothing "repaired"
