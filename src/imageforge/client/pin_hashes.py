"""The SHA-256 of every file of every pinned server package, so that no index can change what is installed.

`server_hashes.json` holds, per `name==version` of server_environment.json (every platform and runtime) and
BlendJob's own server packages, the hashes of all the files that release has on PyPI (wheels for every platform, sdist).
Setup installs with `--require-hashes`: a mirror serving anything else is refused by uv and the next index
is tried (client/package_indexes.py). A maintainer regenerates the file after changing a pin:

    uv run --locked --no-sync python -m imageforge.client.pin_hashes            # writes server_hashes.json
    uv run --locked --no-sync python -m imageforge.client.pin_hashes --newer    # pins with a newer release

The hashes come from the simple index's JSON form (PEP 691, what uv itself reads), the latest versions from
PyPI's JSON API (`/pypi/<name>/json`): one request per pinned package.
"""

from __future__ import annotations

import argparse
import json
import re
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from pathlib import Path

from .environment import server_environment

HASHES_FILE = Path(__file__).with_name("server_hashes.json")
PYPI_JSON = "https://pypi.org/pypi"
PYPI_SIMPLE = "https://pypi.org/simple"
SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"


def every_pin() -> list[str]:
    """Our pins for every platform plus BlendJob's own server packages, sorted, without duplicates."""
    from blendjob.environment import BASE_PACKAGES

    environment = server_environment()
    platform_pins = [pin for pins in environment["platform_packages"].values() for pin in pins]
    runtime_pins = [
        pin for runtime in environment.get("runtimes", {}).values() for pins in runtime.values() for pin in pins
    ]
    return sorted({*BASE_PACKAGES, *environment["packages"], *platform_pins, *runtime_pins}, key=str.lower)


@cache
def pinned_hashes() -> dict[str, tuple[str, ...]]:
    """`name==version` (lower case) -> the SHA-256 of each of its files."""
    raw = json.loads(HASHES_FILE.read_text(encoding="utf-8"))
    return {pin.lower(): tuple(hashes) for pin, hashes in raw["hashes"].items()}


def requirement_lines(packages: Iterable[str], known: Mapping[str, Sequence[str]] | None = None) -> list[str]:
    """pip/uv requirement lines with every allowed hash: `name==version --hash=sha256:…` (`known`: pin -> hashes,
    by default server_hashes.json's)."""
    known = pinned_hashes() if known is None else {pin.lower(): hashes for pin, hashes in known.items()}
    lines = []
    for pin in packages:
        hashes = known.get(pin.lower())
        if not hashes:
            raise KeyError(f"{pin} has no hashes in {HASHES_FILE.name}; regenerate it (client/pin_hashes.py)")
        lines.append(" ".join([pin, *(f"--hash=sha256:{digest}" for digest in hashes)]))
    return lines


def _fetch_json(url: str, timeout: float = 20.0, accept: str = "application/json") -> dict[str, object]:
    request = urllib.request.Request(url, headers={"Accept": accept})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        payload: dict[str, object] = json.load(response)
        return payload


def distribution_stem(name: str) -> str:
    """A distribution name as wheel and sdist file names spell it (PEP 427/625): lower case, runs of -_. as _."""
    return re.sub(r"[-_.]+", "_", name).lower()


def file_release(filename: str) -> tuple[str, str] | None:
    """(distribution stem, version) of a wheel or sdist file name; None for anything else."""
    lowered = filename.lower()
    if lowered.endswith(".whl"):
        parts = lowered[:-4].split("-")
        return (distribution_stem(parts[0]), parts[1]) if len(parts) >= 5 else None
    for suffix in (".tar.gz", ".zip"):
        if lowered.endswith(suffix):
            name, _, version = lowered[: -len(suffix)].rpartition("-")
            return (distribution_stem(name), version) if name else None
    return None


def release_hashes(pin: str) -> list[str]:
    """The SHA-256 of every file of this exact release on the index."""
    name, version = pin.split("==")
    project = _fetch_json(f"{PYPI_SIMPLE}/{name}/", accept=SIMPLE_JSON)
    files = project.get("files")
    assert isinstance(files, list)
    wanted = (distribution_stem(name), version.lower())
    hashes = sorted(str(item["hashes"]["sha256"]) for item in files if file_release(str(item["filename"])) == wanted)
    if not hashes:
        raise LookupError(f"{pin}: no file of this release on {PYPI_SIMPLE}")
    return hashes


def latest_version(name: str, timeout: float = 10.0) -> str:
    info = _fetch_json(f"{PYPI_JSON}/{name}/json", timeout)["info"]
    assert isinstance(info, dict)
    return str(info["version"])


def newer_releases(pins: Iterable[str], timeout: float = 10.0) -> dict[str, str]:
    """`name==version` -> the index's latest version, for each pin that is not the latest."""
    newer = {}
    for pin in pins:
        name, version = pin.split("==")
        latest = latest_version(name, timeout)
        if latest != version:
            newer[pin] = latest
    return newer


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--newer", action="store_true", help="list pins with a newer release instead")
    args = parser.parse_args(argv)
    if args.newer:
        for pin, latest in newer_releases(every_pin()).items():
            print(f"{pin} -> {latest}")
        return
    hashes = {pin: release_hashes(pin) for pin in every_pin()}
    HASHES_FILE.write_text(json.dumps({"version": 1, "hashes": hashes}, indent=1) + "\n", encoding="utf-8")
    print(f"{len(hashes)} pins, {sum(map(len, hashes.values()))} files: {HASHES_FILE}")


if __name__ == "__main__":
    main()
