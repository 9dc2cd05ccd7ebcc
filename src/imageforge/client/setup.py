"""Build the job server's environment in a storage root, the way BlendJob's setup does.

Same pins, same `manifest.json` (so BlendJob's `environment_ready()` accepts it), but it prefers a local
Python of the right version and uv's package cache, so it works offline when those are present. Packages come
from a wheelhouse folder when one is given (no network at all), else from uv's cache, else from the package
indexes in order (client/package_indexes.py), each file checked against its pinned SHA-256 whichever source
serves it (client/pin_hashes.py). The manifest records which source served the install (`package_source`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from blendjob.environment import environment_digest, environment_python, resolved_packages, uv_path

from ..contract import ResourceExhaustedError
from ..contract.private_storage import make_writable_private_folder
from ..contract.storage_trust import check_server_files
from .environment import PACKAGE_ROOT, ServerEnvironment
from .package_indexes import CLEARED_VARIABLES, host_of, index_order, probe, probe_timeout, uv_failure
from .pin_hashes import requirement_lines
from .proxies import with_system_proxy
from .python_sources import download_python, mirror_order, python_from_archive
from .server_runtimes import check_runtime, chosen_runtime, environment_for, environment_of, record_runtime

Report = Callable[[str], None]


class SetupError(RuntimeError):
    """The server environment could not be built; the message says which step failed."""


def manifest_path(root: Path) -> Path:
    return Path(root) / "manifest.json"


def environment_ready(root: Path, environment: ServerEnvironment | None = None) -> bool:
    """BlendJob's readiness rule: the venv's python exists and the manifest hash matches the pins (by default
    those of the runtime recorded in `root`, client/server_runtimes.py)."""
    environment = environment or environment_for(root)
    try:
        manifest = json.loads(manifest_path(root).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    python: Path = environment_python(root)
    return python.is_file() and bool(manifest.get("environment_hash") == environment_digest(environment))


def uv_executable(root: Path | None = None) -> str:
    """uv from the `uv` package (the CLI's environment), else the one the add-on seeded into `root`'s tools/ or
    bundled in the extension's tools/ (Blender's Python has no `uv` package)."""
    try:
        from uv import find_uv_bin

        found: str = find_uv_bin()
        return found
    except (ImportError, FileNotFoundError):
        pass
    bundled = PACKAGE_ROOT / "tools" / uv_path(Path()).name
    for candidate in ([uv_path(Path(root))] if root is not None else []) + [bundled]:
        if Path(candidate).is_file():
            return str(candidate)
    raise SetupError("uv is missing (neither the uv package nor the extension's tools/uv); reinstall ImageForge.")


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


def package_source(root: Path) -> str | None:
    """Which source served the environment's packages (an index URL, a wheelhouse, uv's cache), if recorded."""
    try:
        source = json.loads(manifest_path(root).read_text(encoding="utf-8")).get("package_source")
    except (OSError, ValueError, AttributeError):
        return None
    return source if isinstance(source, str) else None


def prepare_environment(
    root: Path,
    *,
    environment: ServerEnvironment | None = None,
    report: Report = lambda _message: None,
    force: bool = False,
    index: str | None = None,
    wheelhouse: Path | None = None,
    python_mirror: str | None = None,
    python_archive: Path | None = None,
    runtime: str | None = None,
) -> Path:
    """Create `<root>/.venv` with the pinned packages and write BlendJob's manifest. Returns its python.
    `runtime`: which ONNX Runtime build (`default`, `openvino`; client/server_runtimes.py), recorded in `root`
    for every later command; None keeps the recorded one. A changed runtime rebuilds the environment.
    `index`: the preferred package index(es) (names or URLs, tried before the rest); `wheelhouse`: install
    from this folder of wheels only, without any network; `python_mirror`: where to download Python from
    when no local one exists (before the rest, client/python_sources.py); `python_archive`: a
    python-build-standalone archive to use instead of any download.

    Refused in a root that another user owns or can write, or where they could have changed the environment
    (contract/storage_trust.py): nothing there is run, not even to see whether it is ready."""
    check_server_files(root)
    root = Path(root).resolve()
    if runtime is not None:
        check_runtime(runtime)  # before anything is written: one sentence where no build exists
    elif environment is None:
        check_runtime(chosen_runtime(root))
    environment = environment or environment_of(runtime if runtime is not None else chosen_runtime(root))
    if not force and environment_ready(root, environment):
        if runtime is not None:
            record_runtime(root, runtime)
        report(f"Server environment is ready in {root}")
        ready: Path = environment_python(root)
        return ready
    make_writable_private_folder(root)  # 0700 whatever the umask: job folders will hold the user's images
    manifest_path(root).unlink(missing_ok=True)
    if runtime is not None:
        record_runtime(root, runtime)
    uv = uv_executable(root)
    version = environment["python"]
    python = str(python_from_archive(python_archive, root, version)) if python_archive else find_local_python(version)
    venv = root / ".venv"
    if python:
        report(f"Creating the server environment with {python}")
        _run([uv, "venv", "--clear", "--python", python, str(venv)], "create the Python environment")
    else:
        report(f"Downloading Python {version} (no local copy found)")
        mirror = download_python(uv, version, venv, mirror_order(python_mirror), report=report)
        report(f"Python {version} downloaded from {host_of(mirror)}")
    packages = resolved_packages(environment)
    report(f"Installing {len(packages)} pinned packages")
    source = install_packages(
        uv, environment_python(root), packages, root=root, indexes=index_order(index), wheelhouse=wheelhouse,
        report=report,
    )  # fmt: skip
    manifest_path(root).write_text(
        json.dumps(
            {
                "environment_hash": environment_digest(environment),
                "python": environment["python"],
                "packages": packages,
                "package_source": source,
                "runtime": chosen_runtime(root),
            },
            indent=2,
        ),
        encoding="utf-8",
    )
    report(f"Server environment is ready (packages from {source})")
    built: Path = environment_python(root)
    return built


def install_packages(
    uv: str,
    python: Path,
    packages: list[str],
    *,
    root: Path,
    indexes: list[str],
    wheelhouse: Path | None = None,
    report: Report = lambda _message: None,
    hashes: Mapping[str, Sequence[str]] | None = None,
) -> str:
    """Install exactly `packages` (each file checked against its pinned hashes) into `python`'s environment;
    returns the source that served them: the wheelhouse, uv's cache, or the first index that could."""
    requirements = root / "server-requirements.txt"
    requirements.write_text("\n".join(requirement_lines(packages, hashes)) + "\n", encoding="utf-8")
    install = [
        uv,
        "pip",
        "install",
        "--no-config",
        "--python",
        str(python),
        "--require-hashes",
        "-r",
        str(requirements),
    ]
    environment = with_system_proxy(
        {name: value for name, value in os.environ.items() if name not in CLEARED_VARIABLES}
    )
    try:
        if wheelhouse is not None:
            folder = Path(wheelhouse).resolve()
            if not folder.is_dir():
                raise SetupError(f"The wheelhouse {folder} is not a folder.")
            report(f"Installing from the wheelhouse {folder} (no network)")
            completed = _uv([*install, "--offline", "--no-index", "--find-links", str(folder)], environment)
            if completed.returncode:
                raise SetupError(
                    f"Could not install from the wheelhouse {folder}: {uv_failure(completed.stderr)}; make it with "
                    f"'imageforge setup --export-wheelhouse {folder} --platform …' on a connected machine."
                )
            return f"wheelhouse {folder}"
        if _uv([*install, "--offline"], environment).returncode == 0:
            return "the local package cache"
        problems: list[str] = []
        project = packages[0].split("==")[0]
        for index in indexes:
            problem = probe(index, project, probe_timeout())
            if not problem:
                completed = _uv([*install, "--default-index", index], environment)
                if completed.returncode == 0:
                    return index
                _raise_if_disk_full(completed, "install packages")
                problem = uv_failure(completed.stderr)
            problems.append(f"{index} {problem}")
            report(f"Package index {host_of(index)} {problem}; trying the next one" if index != indexes[-1] else
                   f"Package index {host_of(index)} {problem}")  # fmt: skip
        raise SetupError(
            "Could not install the server's packages from any package index: " + "; ".join(problems) + ". "
            "Choose another Package Index (preferences, IMAGEFORGE_PACKAGE_INDEX or 'imageforge setup --index'), "
            "set HTTPS_PROXY if you are behind a proxy, or install from a wheelhouse (imageforge setup --wheelhouse)."
        )
    finally:
        requirements.unlink(missing_ok=True)


def _uv(command: list[str], environment: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, check=False, env=environment)


def _raise_if_disk_full(completed: subprocess.CompletedProcess[str], step: str) -> None:
    if "No space left" in (completed.stderr or "") + (completed.stdout or ""):
        raise ResourceExhaustedError(f"The disk is full: could not {step}; free some space and retry.")


def _run(command: list[str], step: str) -> None:
    completed = subprocess.run(command, capture_output=True, text=True, check=False)
    if completed.returncode:
        tail = (completed.stderr or completed.stdout).strip().splitlines()[-3:]
        if any("No space left" in line for line in tail):
            raise ResourceExhaustedError(f"The disk is full: could not {step}; free some space and retry.")
        raise SetupError(f"Could not {step}: {' '.join(tail) or 'uv failed'}")
