"""Run the `imageforge` command in a child process, as a user would, with the kit's hub and storage."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def imageforge(*args: str, env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "imageforge.cli.main", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=300,
    )


def kit_environment(*, hub_url: str, storage: Path, catalog: Path | None = None) -> dict[str, str]:
    """This process's environment plus the loopback hub, the storage root and (optionally) a catalog."""
    environment = {**os.environ, "HF_ENDPOINT": hub_url, "IMAGEFORGE_STORAGE_ROOT": str(storage)}
    if catalog is not None:
        environment["IMAGEFORGE_MODEL_CATALOG"] = str(catalog)
    return environment
