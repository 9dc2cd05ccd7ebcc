"""Where the server's Python 3.12 comes from when the machine has none: download mirrors in order, or a file.

uv downloads python-build-standalone builds from GitHub, which many networks block. The order
(openspec/0025): the Python Mirror choice (`imageforge setup --python-mirror`), `IMAGEFORGE_PYTHON_MIRROR`,
`UV_PYTHON_INSTALL_MIRROR`, then GitHub. Each is first reached with a short timeout (the package indexes' one),
then given to uv as `UV_PYTHON_INSTALL_MIRROR`; uv checks every archive against the SHA-256 it ships, so a
mirror cannot change the interpreter either. On a machine with no network, `--python-archive FILE` unpacks a
python-build-standalone `install_only` archive the user brought (`.tar.gz`) into `<storage>/python/` and
builds the environment with it.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tarfile
from collections.abc import Callable, Mapping
from pathlib import Path

from .package_indexes import host_of, probe_timeout, reachable
from .proxies import with_system_proxy

Report = Callable[[str], None]
MIRROR_VARIABLE = "IMAGEFORGE_PYTHON_MIRROR"
UV_MIRROR_VARIABLE = "UV_PYTHON_INSTALL_MIRROR"
GITHUB = "https://github.com/astral-sh/python-build-standalone/releases/download"


class PythonUnavailableError(RuntimeError):
    """No Python 3.12 could be had; the message names each source and why, and what to do instead."""


def mirror_order(chosen: str | None = None, environ: Mapping[str, str] | None = None) -> list[str]:
    environ = os.environ if environ is None else environ
    order: list[str] = []
    for value in (chosen or "", environ.get(MIRROR_VARIABLE, ""), environ.get(UV_MIRROR_VARIABLE, ""), GITHUB):
        for item in re.split(r"[\s,]+", value.strip()):
            if item and item.rstrip("/") not in order:
                order.append(item.rstrip("/"))
    return order


def download_python(
    uv: str, version: str, venv: Path, mirrors: list[str], *, report: Report = lambda _message: None
) -> str:
    """Create `venv` with a managed Python `version` from the first mirror that serves it; returns that mirror."""
    problems = []
    for mirror in mirrors:
        problem = reachable(mirror, probe_timeout()) if mirror.startswith(("http://", "https://")) else ""
        if not problem:
            environment = {
                **with_system_proxy(os.environ),
                "UV_PYTHON_DOWNLOADS": "automatic",
                UV_MIRROR_VARIABLE: mirror,
            }
            command = [uv, "venv", "--clear", "--managed-python", "--python", version, str(venv)]
            completed = subprocess.run(command, capture_output=True, text=True, check=False, env=environment)
            if completed.returncode == 0:
                return mirror
            problem = _uv_python_failure(completed.stderr or completed.stdout)
        problems.append(f"{mirror} {problem}")
        report(f"Python mirror {host_of(mirror)} {problem}")
    raise PythonUnavailableError(
        f"Could not download Python {version} from any mirror: " + "; ".join(problems) + ". Install Python "
        f"{version}, choose another Python mirror (IMAGEFORGE_PYTHON_MIRROR), or give a python-build-standalone "
        "archive (imageforge setup --python-archive FILE)."
    )


def _uv_python_failure(output: str) -> str:
    lowered = output.lower()
    if "hash mismatch" in lowered or "hashes do not match" in lowered:
        return "served an archive whose SHA-256 is not uv's (refused)"
    if "404" in lowered or "not found" in lowered:
        return "does not have the archive"
    if "timed out" in lowered or "timeout" in lowered:
        return "stopped answering"
    lines = [line.strip() for line in output.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "uv failed"


def python_from_archive(archive: Path, root: Path, version: str) -> Path:
    """Unpack a python-build-standalone archive into `<root>/python/<digest>/` (once); returns its interpreter."""
    archive = Path(archive)
    if not archive.is_file():
        raise PythonUnavailableError(f"The Python archive {archive} is not a file.")
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()[:16]
    target = Path(root) / "python" / digest
    if not target.is_dir():
        partial = target.with_name(target.name + ".part")
        shutil.rmtree(partial, ignore_errors=True)
        try:
            with tarfile.open(archive) as bundle:
                bundle.extractall(partial, filter="data")  # no links or paths out of the folder
        except (tarfile.TarError, OSError) as error:
            raise PythonUnavailableError(f"Cannot unpack the Python archive {archive}: {error}.") from error
        os.replace(partial, target)
    names = ["python.exe"] if os.name == "nt" else [f"python{version}", "python3", "python"]
    for folder in (target / "python" / "bin", target / "python", target / "bin"):
        found = [folder / name for name in names if (folder / name).is_file()]
        found += sorted(path for path in folder.glob("python3.*") if path.is_file() and path not in found)
        if found:
            return _checked(found[0], version, archive)
    raise PythonUnavailableError(
        f"{archive} holds no python/bin/python{version}: not a python-build-standalone archive."
    )


def _checked(python: Path, version: str, archive: Path) -> Path:
    code = "import sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}')"
    completed = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=False)
    found = completed.stdout.strip()
    if completed.returncode or found != version:
        raise PythonUnavailableError(f"{archive} holds Python {found or 'that does not run'}, not {version}.")
    return python
