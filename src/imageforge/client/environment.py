"""The job server's Python environment (exact pins per platform) and where its files live."""

from __future__ import annotations

import json
import os
from functools import cache
from pathlib import Path
from typing import NotRequired, TypedDict

PACKAGE_ROOT = Path(__file__).resolve().parents[1]  # src/imageforge (the extension's root when installed)
ENVIRONMENT_FILE = Path(__file__).with_name("server_environment.json")
SERVER_ENTRYPOINT_FILE = PACKAGE_ROOT / "server" / "__init__.py"
STORAGE_ROOT_VARIABLE = "IMAGEFORGE_STORAGE_ROOT"


class ServerEnvironment(TypedDict):
    """BlendJob's environment dict, as server_environment.json holds it."""

    python: str  # "3.12"
    packages: list[str]  # exact pins for every platform
    platform_packages: dict[str, list[str]]  # platform name ("windows", ...) -> its extra pins
    # runtime ("openvino") -> platform -> the pins replacing that platform's (client/server_runtimes.py);
    # BlendJob's digest ignores this key, so the default environment's digest does not depend on it
    runtimes: NotRequired[dict[str, dict[str, list[str]]]]


@cache
def server_environment() -> ServerEnvironment:
    """BlendJob's environment dict: {"python": "3.12", "packages": [...], "platform_packages": {...}}."""
    environment: ServerEnvironment = json.loads(ENVIRONMENT_FILE.read_text(encoding="utf-8"))
    return environment


def server_entrypoint() -> str:
    """BlendJob entrypoint string of the job server: `<file>:<attribute>`."""
    return f"{SERVER_ENTRYPOINT_FILE}:server"


def default_storage_root() -> Path:
    """$IMAGEFORGE_STORAGE_ROOT, else ~/.imageforge. Holds .venv, models/, jobs/ and logs."""
    configured = os.environ.get(STORAGE_ROOT_VARIABLE)
    return Path(configured).expanduser().resolve() if configured else Path.home() / ".imageforge"
