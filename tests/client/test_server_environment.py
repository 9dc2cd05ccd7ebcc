"""The job server's pins are exact, complete per platform, and equal to the development environment's."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from blendjob.environment import BASE_PACKAGES, normalized_environment

from imageforge.client.environment import server_entrypoint, server_environment

ROOT = Path(__file__).resolve().parents[2]
PIN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*==[A-Za-z0-9.+!-]+$")


def test_every_package_is_pinned_exactly():
    environment = normalized_environment(server_environment())
    assert environment["python"] == "3.12"
    pins = environment["packages"] + [pin for pins in environment["platform_packages"].values() for pin in pins]
    assert pins and all(PIN.match(pin) for pin in pins), [pin for pin in pins if not PIN.match(pin)]


def test_each_platform_gets_its_onnxruntime():
    platforms = server_environment()["platform_packages"]
    runtimes = {name: [pin for pin in pins if pin.startswith("onnxruntime")] for name, pins in platforms.items()}
    assert runtimes == {
        "windows": ["onnxruntime-directml==1.24.4"],
        "macos": ["onnxruntime==1.32.0"],
        "linux": ["onnxruntime-gpu==1.31.1"],
    }


def test_development_server_group_equals_the_linux_server_environment():
    """The test kit rebuilds the server environment offline from the dev environment's wheels."""
    groups = tomllib.loads((ROOT / "pyproject.toml").read_text())["dependency-groups"]
    environment = server_environment()
    linux = {*BASE_PACKAGES, *environment["packages"], *environment["platform_packages"]["linux"]}
    assert set(groups["server"]) == linux


def test_entrypoint_points_at_the_server_package():
    path, attribute = server_entrypoint().rsplit(":", 1)
    assert attribute == "server"
    assert Path(path) == ROOT / "src" / "imageforge" / "server" / "__init__.py"


def test_the_readme_states_each_platforms_onnxruntime():
    """README's "What the job server needs" table names the runtime each platform really gets."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for platform, pins in server_environment()["platform_packages"].items():
        (runtime,) = [pin for pin in pins if pin.startswith("onnxruntime")]
        name, version = runtime.split("==")
        assert f"| {platform}-" in readme and f"| {name} {version} |" in readme, runtime
