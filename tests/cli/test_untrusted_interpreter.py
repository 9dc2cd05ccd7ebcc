"""The Python the server environment runs on is held to the Storage Root's rule (contract/storage_trust.py,
check_base_interpreter): a base interpreter whose standard library another user can write (a careless
`chmod 777`) is refused before anything runs, since its `sitecustomize` would run as the victim.

The base Python here is a folder of links to this machine's own interpreter and standard library, with its
`lib/python3.X` made 0777; `.venv/pyvenv.cfg`'s `home` names it, so Python takes its standard library from
there. Another user (`nobody`) plants `sitecustomize.py`, which leaves a mark when any python of it starts.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import sysconfig
from pathlib import Path

import numpy as np
import pytest
from blendjob.environment import environment_digest
from PIL import Image

from imageforge.client.environment import server_environment
from tests.cli.cli_process import imageforge, kit_environment
from tests.kit.other_user import reachable_folder, require_other_user, run_as_other_user

pytestmark = pytest.mark.skipif(os.name == "nt", reason="POSIX modes")


@pytest.fixture
def folder():
    made = reachable_folder()
    yield made
    shutil.rmtree(made, ignore_errors=True)


def linked_python(prefix: Path) -> Path:
    """A base Python in `prefix` made of links to this one: bin/python3.X and every entry of its stdlib."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    (prefix / "bin").mkdir(parents=True)
    executable = prefix / "bin" / version
    executable.symlink_to(os.path.realpath(sys._base_executable))
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    lib = prefix / "lib" / version
    lib.mkdir(parents=True)
    for entry in stdlib.iterdir():
        if entry.name not in ("site-packages", "sitecustomize.py"):
            (lib / entry.name).symlink_to(entry)
    return executable


def test_a_base_python_others_can_write_is_refused_before_it_runs(folder, tmp_path):
    require_other_user()
    prefix = folder / "python"
    executable = linked_python(prefix)
    lib = executable.parents[1] / "lib" / executable.name
    lib.chmod(0o777)  # the careless part
    root = folder / "storage"
    (root / ".venv" / "bin").mkdir(parents=True)
    root.chmod(0o700)
    (root / ".venv" / "bin" / "python").symlink_to(executable)
    (root / ".venv" / "pyvenv.cfg").write_text(
        f"home = {executable.parent}\ninclude-system-site-packages = false\nversion_info = "
        f"{sys.version_info.major}.{sys.version_info.minor}.{sys.version_info.micro}\n",
        encoding="utf-8",
    )
    (root / "manifest.json").write_text(
        json.dumps({"environment_hash": environment_digest(server_environment()), "python": "3.12"}),
        encoding="utf-8",
    )
    mark = tmp_path / "ran"
    tmp_path.chmod(0o777)
    run_as_other_user(f"echo \"open('{mark}', 'w').write('ran')\" > '{lib}/sitecustomize.py'")
    photo = tmp_path / "photo.png"
    Image.fromarray(np.zeros((8, 8, 3), np.uint8)).save(photo)

    done = imageforge(
        "run", "upscale-image", f"input={photo}", env=kit_environment(hub_url="http://127.0.0.1:9", storage=root)
    )

    assert not mark.exists(), "the other user's sitecustomize ran"
    assert done.returncode == 1
    assert done.stderr.strip() == (
        f"imageforge: {lib}, part of the Python that an environment in the Storage Root {root} runs on, can be "
        "written by other users (mode 0777), so they could change what ImageForge runs; make that Python private "
        f"(chmod -R go-w '{lib}') or set the server up again (imageforge setup --force, or Set Up Server… in "
        "Blender) with a Python nobody else can change."
    )
