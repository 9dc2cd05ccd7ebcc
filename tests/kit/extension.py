"""The real extension zip in tests, built by cli/build.py from a vendor folder made without the network.

`imageforge-vendor` fetches the BlendJob wheel and uv from PyPI; tests may not. Instead:
- the BlendJob wheel is zipped from the BlendJob installed in the running interpreter, which is the pinned
  version (checked), so the built extension really runs on it;
- uv is a stand-in script per platform: the add-on only seeds it into a Storage Root whose server environment
  is being set up, and tests give the root a ready environment (server_env.py), so it is never run.

Standard library only: the add-on suite (Python 3.11, bpy) and the server-side suites (3.12) both use it.
"""

from __future__ import annotations

import importlib.metadata
import zipfile
from pathlib import Path

import blendjob

from imageforge.cli.build import build
from imageforge.cli.vendor import PLATFORMS, blendjob_wheel, pinned_version, uv_executable


def local_vendor(folder: Path) -> Path:
    """Lay out `folder` as imageforge-vendor does: the pinned BlendJob wheel and a uv for every platform."""
    version = pinned_version("blendjob")
    installed = importlib.metadata.version("blendjob")
    if installed != version:
        raise RuntimeError(f"BlendJob {installed} is installed but pyproject pins {version}: run `uv sync`")
    package = Path(blendjob.__file__).parent
    dist_info = package.parent / f"blendjob-{version}.dist-info"
    wheel = blendjob_wheel(folder, version)
    wheel.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel, "w") as archive:
        for root in (package, dist_info):
            for path in sorted(root.rglob("*")):
                if path.is_file() and "__pycache__" not in path.parts:
                    archive.write(path, path.relative_to(package.parent).as_posix())
    for platform in PLATFORMS:
        executable = uv_executable(folder, platform)
        executable.parent.mkdir(parents=True, exist_ok=True)
        executable.write_text(f"#!/bin/sh\necho 'uv stand-in ({platform})'\n")
    return folder


def build_extension(folder: Path, platform: str = "linux-x64") -> Path:
    """The extension zip for `platform`, validated and built by Blender's extension CLI, inside `folder`."""
    return build(platform, output_dir=folder / "dist", vendor=local_vendor(folder / "vendor"))
