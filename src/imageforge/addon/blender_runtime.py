"""The add-on's single BlendJob runtime (namespace `imageforge`), created on register.

make_runtime() (client/job_runner.py) is the one way to build it, so the add-on and the CLI run the same server
with the same pins. This module adds only what belongs to Blender: the timer workaround, the post-setup hook,
and seeding the uv executable bundled with the extension so that setup does not fetch uv from GitHub.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from blendjob.environment import uv_path

from ..client.blendjob_compat import pin_timer_callbacks
from ..client.environment import PACKAGE_ROOT
from ..client.job_runner import make_runtime
from ..client.runtime import ImageForgeRuntime
from ..client.setup_process import SetupChoices, install_command
from . import EXTENSION_PACKAGE

BUNDLED_TOOLS = PACKAGE_ROOT / "tools"  # the platform build puts uv[.exe] here (cli/build.py)
DOWNLOADS_MODULE = f"{EXTENSION_PACKAGE}.client.model_setup"
DOWNLOAD_FUNCTION = "download_required_models"

_runtime: ImageForgeRuntime | None = None


def get_runtime() -> ImageForgeRuntime:
    if _runtime is None:
        raise RuntimeError("ImageForge is not registered")
    return _runtime


def server_snapshot() -> dict[str, Any]:
    """The server's last health snapshot (kept current by BlendJob's poll timer); {} when unregistered."""
    if _runtime is None:
        return {}
    snapshot = getattr(_runtime.server, "snapshot", None)
    return dict(snapshot) if isinstance(snapshot, dict) else {}


def download_default_models_after_setup(controller: Any) -> None:
    """BlendJob's post_setup hook: fetch the catalog's default models once the environment works.

    The download itself is client code shared with the CLI (client/model_setup.py), imported lazily so the
    add-on still registers if that module is missing or broken; the Models panel's Download buttons are then
    the way to get models. A failed download does not fail the setup (see that module).
    """
    if importlib.util.find_spec(DOWNLOADS_MODULE) is None:
        return
    download = getattr(importlib.import_module(DOWNLOADS_MODULE), DOWNLOAD_FUNCTION, None)
    if download is not None:
        download(controller)


def seed_bundled_uv(target: Path, tools: Path | None = None) -> Path | None:
    """Copy the extension's uv into `<target>/tools/`, where BlendJob's installer looks before downloading.

    Zip extraction drops the executable bit, so it is set again here.
    """
    source = (tools or BUNDLED_TOOLS) / uv_path(Path()).name
    destination = uv_path(target)
    if not source.is_file() or destination.is_file():
        return None
    destination.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(source, destination)
    if os.name != "nt":
        destination.chmod(destination.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return destination


def register(
    storage_root: Callable[..., Path],
    linger: Callable[[], float],
    setup_choices: Callable[[], SetupChoices] = SetupChoices,
) -> None:
    """Create the runtime. `storage_root`, `linger` and `setup_choices` are the preferences' readers
    (preferences.py), passed in by registration.py so that this module does not import the preferences, which
    read the server's devices from here (server_snapshot()). Set Up Server runs ImageForge's installer
    (client/setup_process.py: ordered package indexes, pinned hashes, wheelhouse) instead of BlendJob's."""
    global _runtime
    _runtime = make_runtime(
        storage_root,
        post_setup=download_default_models_after_setup,
        linger=linger,
        installer=functools.partial(install_command, choices=setup_choices),
        before_install=seed_bundled_uv,
    )
    # BlendJob compares timer callbacks by identity, but each attribute access builds a new bound method:
    # pin them once so unregister() really removes the timers (else they leak and bpy 4.5 hangs at exit).
    pin_timer_callbacks(_runtime)
    _runtime.register()


def unregister() -> None:
    global _runtime
    if _runtime is not None:
        _runtime.unregister()
        _runtime = None
