"""Build the job server's environment in a storage root, the way BlendJob's setup does.

Same pins, same `manifest.json` (so BlendJob's `environment_ready()` accepts it), but it prefers a local
Python of the right version and uv's package cache, so it works offline when those are present.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from blendjob.environment import environment_digest, environment_python, resolved_packages

from ..contract import ResourceExhaustedError
from ..contract.private_storage import make_private_folder
from ..contract.storage_trust import check_server_files
from .environment import ServerEnvironment, server_environment

Report = Callable[[str], None]


class SetupError(RuntimeError):
    """The server environment could not be built; the message says which step failed."""


def manifest_path(root: Path) -> Path:
    return Path(root) / "manifest.json"


def environment_ready(root: Path, environment: ServerEnvironment | None = None) -> bool:
    """BlendJob's readiness rule: the venv's python exists and the manifest hash matches the pins."""
    environment = environment or server_environment()
    try:
        manifest = json.loads(manifest_path(root).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    python: Path = environment_python(root)
    return python.is_file() and bool(manifest.get("environment_hash") == environment_digest(environment))


def uv_executable() -> str:
    from uv import find_uv_bin

    return find_uv_bin()


def find_local_python(version: str) -> str | None:
    """A local interpreter of `version` (major.minor): this one, else one uv finds without downloading."""
    if f"{sys.version_info.major}.{sys.version_info.minor}" == version:
        return getattr(sys, "_base_executable", None) or sys.executable
    completed = subprocess.run(
        [uv_executable(), "python", "find", version],
        capture_output=True,
        text=True,
        env={**os.environ, "UV_PYTHON_DOWNLOADS": "never"},
        check=False,
    )
    found = completed.stdout.strip()
    return found if completed.returncode == 0 and found else None


def prepare_environment(
    root: Path,
    *,
    environment: ServerEnvironment | None = None,
    report: Report = lambda _message: None,
    force: bool = False,
) -> Path:
    """Create `<root>/.venv` with the pinned packages and write BlendJob's manifest. Returns its python.

    Refused in a root that another user owns or can write, or where they could have changed the environment
    (contract/storage_trust.py): nothing there is run, not even to see whether it is ready."""
    check_server_files(root)
    root = Path(root).resolve()
    environment = environment or server_environment()
    if not force and environment_ready(root, environment):
        report(f"Server environment is ready in {root}")
        ready: Path = environment_python(root)
        return ready
    make_private_folder(root)  # 0700 whatever the umask: job folders will hold the user's images
    manifest_path(root).unlink(missing_ok=True)
    uv = uv_executable()
    python = find_local_python(environment["python"])
    venv = root / ".venv"
    if python:
        report(f"Creating the server environment with {python}")
        _run([uv, "venv", "--clear", "--python", python, str(venv)], "create the Python environment")
    else:
        report(f"Downloading Python {environment['python']} (no local copy found)")
        _run(
            [uv, "venv", "--clear", "--managed-python", "--python", environment["python"], str(venv)],
            "download Python",
        )
    packages = resolved_packages(environment)
    install = [uv, "pip", "install", "--python", str(environment_python(root)), *packages]
    report(f"Installing {len(packages)} pinned packages")
    try:
        _run([*install, "--offline"], "install packages from the local cache")
    except SetupError:
        report("Packages are not all in the local cache; downloading them")
        _run(install, "install packages")
    manifest_path(root).write_text(
        json.dumps(
            {
                "environment_hash": environment_digest(environment),
                "python": environment["python"],
                "packages": packages,
            },
            indent=2,
        ),
        encoding="utf-8",
    )
    report("Server environment is ready")
    built: Path = environment_python(root)
    return built


def _run(command: list[str], step: str) -> None:
    completed = subprocess.run(command, capture_output=True, text=True, check=False)
    if completed.returncode:
        tail = (completed.stderr or completed.stdout).strip().splitlines()[-3:]
        if any("No space left" in line for line in tail):
            raise ResourceExhaustedError(f"The disk is full: could not {step}; free some space and retry.")
        raise SetupError(f"Could not {step}: {' '.join(tail) or 'uv failed'}")
