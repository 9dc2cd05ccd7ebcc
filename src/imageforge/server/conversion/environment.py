"""The throwaway converter environment: Python 3.11 with torch CPU, DA3's and SAM 2's packages, built with uv, reused.

It lives in `<storage>/converters/<digest>/venv`, the digest naming its exact pins (contract/conversions.json),
and counts as ready only once `environment.json` (written last) names the same pins: a half-built or older
environment is deleted and built again; environments of other pins are deleted when a new one is built.

Every package is installed with `--no-deps` from its exact pin, so no resolver ever chooses a version, least
of all another torch. torch comes from the PyTorch CPU index (a CPU build, no CUDA libraries), everything
else from PyPI; with $IMAGEFORGE_CONVERTER_WHEELS (local folders of wheels and sdists, os.pathsep between
them) uv looks only there (`--no-index --find-links`): offline and air-gapped machines, and the tests.
The packages published only as source (`source_packages`: sam2, iopath, hydra's antlr runtime) come last,
built with `--no-build-isolation` against the torch and setuptools already installed (an isolated build would
fetch a torch of its own) and with the pins' `build_environment` (SAM2_BUILD_CUDA=0: no CUDA extension).

uv is the one the add-on's setup seeded into `<storage>/tools/` (BlendJob's place for it), else the one the
extension ships (`tools/` beside the package), else $IMAGEFORGE_UV, else `uv` on PATH.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...contract import ModelUnavailableError, ResourceExhaustedError
from ...contract.conversions import WHEELHOUSE_VARIABLE, ConverterEnvironment
from ...contract.storage_trust import check_base_interpreter, check_inside, check_storage_root
from .process import run_process, tail

UV_VARIABLE = "IMAGEFORGE_UV"
UV_NAME = "uv.exe" if os.name == "nt" else "uv"
BUNDLED_TOOLS = Path(__file__).resolve().parents[2] / "tools"  # the extension build puts uv here (cli/build.py)
MARKER = "environment.json"
Step = Callable[[list[str], str, dict[str, str]], None]  # (command, what it does, extra variables) → runs it or raises


def converters_root(storage_root: Path) -> Path:
    return Path(storage_root) / "converters"


def venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def find_uv(storage_root: Path) -> str:
    """The uv to build with, or a one-sentence error saying where it was looked for."""
    seeded = Path(storage_root) / "tools" / UV_NAME
    bundled = BUNDLED_TOOLS / UV_NAME
    for candidate in (str(seeded), str(bundled), os.environ.get(UV_VARIABLE, ""), shutil.which("uv") or ""):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise ModelUnavailableError(
        f"Converting needs uv, which was found neither in {seeded.parent}, nor in ${UV_VARIABLE}, nor on PATH; "
        "run Set Up Server again (it installs uv there) or install uv (https://docs.astral.sh/uv/)."
    )


def ready_python(storage_root: Path, environment: ConverterEnvironment) -> Path | None:
    """The environment's python when it is complete for exactly these pins, else None."""
    root = converters_root(storage_root) / environment.digest
    python = venv_python(root / "venv")
    try:
        marker = json.loads((root / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return python if marker == _marker(environment) and python.is_file() else None


Install = tuple[list[str], str, dict[str, str]]  # (command, what it does, extra variables)


def install_commands(uv: str, python: Path, environment: ConverterEnvironment) -> list[Install]:
    """The installs, all `--no-deps` from exact pins: torch from its CPU index, then the wheels, then the
    packages published only as source, built against what is installed."""
    wheelhouse = environment.wheelhouse()
    local = ["--no-index", *(argument for folder in wheelhouse for argument in ("--find-links", str(folder)))]
    base = [uv, "pip", "install", "--python", str(python), "--no-deps"]
    torch_source = local if wheelhouse else ["--index-url", environment.torch_index]
    commands: list[Install] = [
        ([*base, *torch_source, environment.torch], f"install {environment.torch} (CPU)", {}),
        ([*base, *(local if wheelhouse else []), *environment.packages], "install the converter's packages", {}),
    ]
    if environment.source_packages:
        build = [*base, "--no-build-isolation", *(local if wheelhouse else []), *environment.source_packages]
        commands.append((build, "build the converter's source packages", dict(environment.build_environment)))
    return commands


def ensure_environment(
    storage_root: Path, environment: ConverterEnvironment, step: Step, report: Callable[[str], None]
) -> Path:
    """The converter's python, building its environment first when it is not ready for these pins.

    Nothing of it runs, and no uv from the root builds it, unless it is ours and nobody else can write it (every
    entry; contract/storage_trust.py): the refusal names the path and what to do."""
    check_storage_root(storage_root)
    for tree in ("tools", "converters"):
        check_inside(storage_root, tree, tree=True)
    python = ready_python(storage_root, environment)
    if python is not None:
        check_base_interpreter(storage_root, python.parents[1])  # the Python it runs on, before it runs
        report("Converter environment is ready")
        return python
    uv = find_uv(storage_root)
    wheelhouse = environment.wheelhouse()
    missing = [folder for folder in wheelhouse if not folder.is_dir()]
    if missing:
        raise ModelUnavailableError(f"{WHEELHOUSE_VARIABLE} names {missing[0]}, which is not a folder.")
    parent = converters_root(storage_root)
    for old in parent.glob("*") if parent.is_dir() else []:
        shutil.rmtree(old, ignore_errors=True)  # throwaway: other pins, or a build that never finished
    root = parent / environment.digest
    root.mkdir(parents=True)
    venv = root / "venv"
    try:
        report(f"Creating the converter's Python {environment.python} environment")
        create = [uv, "venv", "--no-project", "--python", environment.python, str(venv)]
        step(create, "create the converter environment", {})
        python = venv_python(venv)
        where = f"from {os.pathsep.join(map(str, wheelhouse))}" if wheelhouse else "from the PyTorch CPU index and PyPI"
        installs = install_commands(uv, python, environment)
        for number, (command, what, variables) in enumerate(installs, start=1):
            report(f"Installing the converter ({number}/{len(installs)}: {what}, {where})")
            step(command, what, variables)
        (root / MARKER).write_text(json.dumps(_marker(environment), indent=2), encoding="utf-8")
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    report("Converter environment is ready")
    return python


def uv_step(log: Path, cancelled: Callable[[], bool]) -> Step:
    """A Step that runs uv as a cancellable child and turns its failure into one sentence."""

    def step(command: list[str], what: str, variables: dict[str, str]) -> None:
        log.write_text("", encoding="utf-8")
        status = run_process(command, stderr_path=log, cancelled=cancelled, env={**_uv_environment(), **variables})
        if status:
            said = tail(log, 3)
            if any("No space left" in line for line in said):
                raise ResourceExhaustedError(f"The disk is full: could not {what}; free some space and retry.")
            reason = said[-1].strip() if said else f"uv exited with status {status}"
            raise ModelUnavailableError(f"Could not {what} for the converter: {reason}")

    return step


def _uv_environment() -> dict[str, str]:
    """uv as the user configured it, minus a virtual environment of the server's own that could redirect it."""
    environment = dict(os.environ)
    for name in ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT", "PYTHONPATH", "PYTHONHOME"):
        environment.pop(name, None)
    environment.setdefault("UV_NO_PROGRESS", "1")
    return environment


def _marker(environment: ConverterEnvironment) -> dict[str, Any]:
    return {"python": environment.python, "packages": environment.pins, "build": environment.build_environment}
