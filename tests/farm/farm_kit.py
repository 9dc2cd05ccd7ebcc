"""What the farm tests share: the kit environment, an `imageforge` command a farm runtime can call, the real tools."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.cli_process import kit_environment
from tests.kit.catalog import publish_kit_catalog


def imageforge_command(folder: Path) -> Path:
    """An executable `imageforge` that runs this checkout's CLI with this interpreter (what a worker installs)."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "imageforge"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m imageforge.cli.main "$@"\n', encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return script


def farm_environment(hub, storage: Path, tmp_path: Path) -> dict[str, str]:
    catalog = publish_kit_catalog(hub, tmp_path / "catalog", keys=("KIT_UPSCALE", "KIT_BEN2"))
    environment = kit_environment(hub_url=hub.url, storage=storage, catalog=catalog.path)
    environment["IMAGEFORGE_SERVER_LINGER"] = "10"  # the tasks of one test reuse one server, as on a worker
    environment["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[2]), *sys.path])
    return environment


def openjd() -> str:
    """openjd-cli's `openjd`, installed beside this interpreter (the dev group's exact pin)."""
    found = Path(sys.executable).with_name("openjd")
    if not found.is_file():
        pytest.fail("openjd is missing from the test environment: run `bash tests/sync` (openjd-cli in the dev group)")
    return str(found)


def node() -> str:
    """Node.js for the Flamenco job type: on PATH (CI installs it: .ci/run); a developer without it skips."""
    found = shutil.which("node")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("node is not installed; .ci/run installs it (Debian's nodejs)")
        pytest.skip("node is not installed (apt-get install nodejs); CI installs it")
    return found


def run_tool(command: list[str], env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout)
