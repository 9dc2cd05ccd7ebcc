"""Give a storage root a ready job-server environment without the network.

The environment is built once per set of pins by the production code (`client.setup.prepare_environment`,
which prefers the local Python 3.12 and uv's package cache) into a cache folder, then linked into each
test's storage root as `.venv` with a copy of its `manifest.json`. BlendJob's `environment_ready()` then
accepts the root and the real server subprocess starts from it.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path

from blendjob.environment import environment_digest

from imageforge.client.server_runtimes import DEFAULT, RECORD, environment_of
from imageforge.client.setup import environment_ready, prepare_environment
from imageforge.contract.private_storage import make_private_folder
from imageforge.contract.storage_trust import check_server_files

CACHE_VARIABLE = "IMAGEFORGE_TEST_CACHE"


def cache_root() -> Path:
    configured = os.environ.get(CACHE_VARIABLE)
    return Path(configured) if configured else Path.home() / ".cache" / "imageforge-tests"


def cached_environment(runtime: str = DEFAULT) -> Path:
    """The cached, ready storage root holding the server environment for the current pins of `runtime`
    (`openvino`: onnxruntime-openvino instead of onnxruntime-gpu, client/server_runtimes.py).

    It is held to the rule every storage root is (contract/storage_trust.py): the test roots link its `.venv`,
    and a client checks where that link leads before it runs anything there. So the cache is private to this
    user, and a cache that others could write is refused, not used.
    """
    digest = environment_digest(environment_of(runtime))[:16]
    root = cache_root() / f"server-env-{digest}"
    make_private_folder(root.parent)
    with (root.parent / f".{root.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # xdist workers or parallel runs build it once
        if not environment_ready(root, environment_of(runtime)):
            prepare_environment(root, runtime=runtime)
    check_server_files(root)
    return root


def install_server_environment(storage_root: Path, runtime: str = DEFAULT) -> Path:
    """Make `storage_root` ready: link the cached `.venv` and copy its manifest (and its runtime record)."""
    source = cached_environment(runtime)
    storage_root.mkdir(parents=True, exist_ok=True)
    venv = storage_root / ".venv"
    if venv.is_symlink() or venv.exists():
        if venv.is_symlink():
            venv.unlink()
        else:
            shutil.rmtree(venv)
    venv.symlink_to(source / ".venv", target_is_directory=True)
    shutil.copy2(source / "manifest.json", storage_root / "manifest.json")
    if (source / RECORD).is_file():
        shutil.copy2(source / RECORD, storage_root / RECORD)
    return storage_root
