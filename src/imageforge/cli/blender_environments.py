"""The Blender releases ImageForge is tested on, read from their one home: pyproject.toml's `blender-*` groups.

Each `blender-X-Y` dependency group pins `bpy==X.Y.Z` (Blender as a Python module, from PyPI) and is synced
into its own environment, `.venv-blender-X-Y`, with the Python that its `[tool.uv.dependency-groups]` entry
requires (Blender 4.5 ships Python 3.11, 5.1 and later 3.13). tests/sync and tests/run list them with
`python -m imageforge.cli.blender_environments`; the end-to-end suite runs the built extension in each; the
build uses the newest one's extension CLI. Adding a Blender release to the matrix is adding a group there.
Standard library only.
"""

from __future__ import annotations

import re
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from .vendor import PROJECT_ROOT

GROUP = re.compile(r"blender-(\d+)-(\d+)")
LOWER_BOUND = re.compile(r">=\s*(\d+\.\d+)")


class EnvironmentListError(RuntimeError):
    """pyproject.toml's Blender groups are not in the expected shape; the message names the group."""


@dataclass(frozen=True)
class BlenderEnvironment:
    group: str  # "blender-5-3"
    bpy: str  # the exact bpy pin, "5.3.0"
    python: str  # the Python the group requires, "3.13"
    root: Path  # the project root the environment lives in

    @property
    def version(self) -> tuple[int, int, int]:
        # bpy pins are major.minor.patch (pyproject.toml's blender-* groups); the checker cannot count a generator.
        return tuple(int(part) for part in self.bpy.split("."))  # type: ignore[return-value]

    @property
    def name(self) -> str:
        """How tests and messages name it: "4.5", "5.3"."""
        return ".".join(self.bpy.split(".")[:2])

    @property
    def path(self) -> Path:
        return self.root / f".venv-{self.group}"

    @property
    def interpreter(self) -> Path:
        return self.path / "bin" / "python"


def blender_environments(project_root: Path = PROJECT_ROOT) -> list[BlenderEnvironment]:
    """Every Blender test environment, oldest release first."""
    data = tomllib.loads((project_root / "pyproject.toml").read_text(encoding="utf-8"))
    groups = data.get("dependency-groups", {})
    pythons = data.get("tool", {}).get("uv", {}).get("dependency-groups", {})
    found = []
    for group, requirements in groups.items():
        if not GROUP.fullmatch(group):
            continue
        pins = [
            requirement.partition("==")[2].strip() for requirement in requirements if requirement.startswith("bpy==")
        ]
        bound = LOWER_BOUND.search(pythons.get(group, {}).get("requires-python", ""))
        if len(pins) != 1 or not bound:
            raise EnvironmentListError(
                f"pyproject.toml: group {group} needs one exact `bpy==` pin and a requires-python lower bound"
            )
        found.append(BlenderEnvironment(group, pins[0], bound.group(1), project_root))
    found.sort(key=lambda environment: environment.version)
    return found


def main(argv: list[str] | None = None) -> int:
    """One line per environment, oldest first, for shell scripts: `<group> <python> <bpy>`."""
    for environment in blender_environments():
        print(environment.group, environment.python, environment.bpy)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
