"""A wheelhouse: the server environment's pinned wheels for one platform in a folder, for machines with no network.

`imageforge setup --export-wheelhouse DIR --platform windows|macos|linux` fills DIR on a connected machine (any
platform): for each pin of that platform it reads the project's page on the first package index that answers
(client/package_indexes.py, same order and fallback as setup), picks the wheel built for that platform and
CPython 3.12, downloads it and keeps it only when its SHA-256 is one of the pinned file hashes
(client/pin_hashes.py). `imageforge setup --wheelhouse DIR` then installs from DIR alone (uv `--offline
--no-index --find-links`, hashes still required). Python itself is not in a wheelhouse: the offline machine
needs a local Python 3.12 (or a python-build-standalone archive: `imageforge setup --python-archive`).
"""

from __future__ import annotations

import hashlib
import os
import re
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin, urlsplit

from ..contract.model_files import sha256_of
from .environment import ServerEnvironment, server_environment
from .package_indexes import host_of, probe, probe_timeout
from .pin_hashes import distribution_stem, pinned_hashes

Report = Callable[[str], None]
PLATFORMS = ("windows", "macos", "linux")
PYTHON_TAGS = ("cp312", "py3", "py312", "py2.py3")
CHUNK = 1024 * 1024


class WheelhouseError(RuntimeError):
    """A wheel could not be had from any index; the message names the package and each index's answer."""


@dataclass(frozen=True)
class Wheel:
    filename: str
    url: str
    sha256: str | None  # as the index page states it (checked again after the download)


def platform_pins(platform: str, environment: ServerEnvironment | None = None) -> list[str]:
    """What Set Up Server installs on `platform`: BlendJob's server packages, our pins, the platform's pins."""
    from blendjob.environment import BASE_PACKAGES

    if platform not in PLATFORMS:
        raise ValueError(f"Unknown platform '{platform}'; use one of {', '.join(PLATFORMS)}.")
    environment = environment or server_environment()
    return [*BASE_PACKAGES, *environment["packages"], *environment["platform_packages"].get(platform, [])]


def fits(filename: str, platform: str) -> bool:
    """Whether a wheel file installs on `platform` (x86-64 Windows and Linux, arm64 macOS) under CPython 3.12."""
    parts = filename.removesuffix(".whl").split("-")
    if len(parts) < 5:
        return False
    python, abi, platforms = parts[-3], parts[-2], parts[-1].split(".")
    pythons = python.split(".")
    if not (any(tag in PYTHON_TAGS for tag in pythons) or (abi == "abi3" and _abi3_fits(pythons))):
        return False
    if abi not in ("none", "abi3", "cp312"):
        return False
    for tag in platforms:
        if tag == "any":
            return True
        if platform == "windows" and tag == "win_amd64":
            return True
        if platform == "linux" and re.fullmatch(r"(manylinux\w*|musllinux_never)_x86_64", tag):
            return True
        if platform == "macos" and re.fullmatch(r"macosx_\d+_\d+_(arm64|universal2)", tag):
            return True
    return False


def _abi3_fits(pythons: list[str]) -> bool:
    return any(re.fullmatch(r"cp3(\d+)", tag) and int(tag[3:]) <= 12 for tag in pythons)


def _preference(filename: str) -> tuple[int, int]:
    """Lower first: a platform wheel before a pure one, the oldest glibc a manylinux wheel needs."""
    pure = filename.endswith("-any.whl")
    glibc = re.search(r"manylinux_2_(\d+)", filename)
    return (int(pure), int(glibc.group(1)) if glibc else 0)


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str]] = []  # (href, text)
        self._href: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._href = dict(attrs).get("href")

    def handle_data(self, data: str) -> None:
        if self._href is not None and data.strip():
            self.links.append((self._href, data.strip()))
            self._href = None


def project_wheels(index: str, project: str, timeout: float) -> list[Wheel]:
    """The wheel files a PEP 503 index lists for `project`."""
    page = f"{index}/{project}/"
    opener = urllib.request.build_opener(urllib.request.ProxyHandler())
    with opener.open(urllib.request.Request(page, headers={"Accept": "text/html"}), timeout=timeout) as response:
        parser = _Links()
        parser.feed(response.read().decode("utf-8", "replace"))
    wheels = []
    for href, text in parser.links:
        url, _, fragment = urljoin(page, href).partition("#")
        filename = text if text.endswith(".whl") else Path(urlsplit(url).path).name
        if filename.endswith(".whl"):
            sha256 = fragment.removeprefix("sha256=") if fragment.startswith("sha256=") else None
            wheels.append(Wheel(filename, url, sha256))
    return wheels


def export_wheelhouse(
    folder: Path,
    platform: str,
    indexes: Sequence[str],
    *,
    pins: Sequence[str] | None = None,
    hashes: Mapping[str, Sequence[str]] | None = None,
    report: Report = lambda _line: None,
) -> list[Path]:
    """Download every pinned wheel of `platform` into `folder`, each verified; returns the wheel files."""
    pins = list(pins) if pins is not None else platform_pins(platform)
    known = {pin.lower(): set(digests) for pin, digests in (hashes or pinned_hashes()).items()}
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    timeout = probe_timeout()
    usable = [index for index in indexes if not _note_down(index, pins[0], timeout, report)]
    written = []
    for pin in pins:
        written.append(_fetch_pin(folder, pin, platform, usable, known.get(pin.lower(), set()), timeout, report))
    return written


def _note_down(index: str, pin: str, timeout: float, report: Report) -> bool:
    problem = probe(index, pin.split("==")[0], timeout)
    if problem:
        report(f"Package index {host_of(index)} {problem}; not used")
    return bool(problem)


def _fetch_pin(
    folder: Path, pin: str, platform: str, indexes: Sequence[str], allowed: set[str], timeout: float, report: Report
) -> Path:
    name, version = pin.split("==")
    if not allowed:
        raise WheelhouseError(f"{pin} has no pinned hashes; regenerate client/server_hashes.json (pin_hashes.py).")
    release = (distribution_stem(name), version.lower())
    for present in sorted(folder.glob("*.whl")):  # a wheel already there with a pinned hash: no network
        if _release_of(present.name) == release and fits(present.name, platform) and sha256_of(present) in allowed:
            report(f"already there {present.name}")
            return present
    problems = []
    for index in indexes:
        try:
            candidates = [
                wheel for wheel in project_wheels(index, name, timeout)
                if _release_of(wheel.filename) == (distribution_stem(name), version.lower())
                and fits(wheel.filename, platform)
            ]  # fmt: skip
        except (urllib.error.URLError, OSError) as error:
            problems.append(f"{index}: {getattr(error, 'reason', error)}")
            continue
        candidates = [wheel for wheel in candidates if wheel.sha256 is None or wheel.sha256 in allowed]
        if not candidates:
            problems.append(f"{index} has no {platform} wheel of {pin} with a pinned hash")
            continue
        wheel = min(candidates, key=lambda item: _preference(item.filename))
        target = folder / wheel.filename
        if target.is_file() and sha256_of(target) in allowed:
            report(f"already there {wheel.filename}")
            return target
        problem = _download(wheel.url, target, allowed, timeout)
        if not problem:
            report(f"downloaded    {wheel.filename} from {host_of(index)}")
            return target
        problems.append(f"{index}: {problem}")
    raise WheelhouseError(f"No index served a {platform} wheel of {pin}: " + "; ".join(problems) + ".")


def _release_of(filename: str) -> tuple[str, str]:
    parts = filename.lower().removesuffix(".whl").split("-")
    return distribution_stem(parts[0]), parts[1]


def _download(url: str, target: Path, allowed: set[str], timeout: float) -> str:
    """'' when the file arrived with a pinned hash (then in place), else why not."""
    partial = target.with_name(target.name + ".part")
    digest = hashlib.sha256()
    opener = urllib.request.build_opener(urllib.request.ProxyHandler())
    try:
        with opener.open(url, timeout=max(timeout, 30.0)) as response, partial.open("wb") as stream:
            while chunk := response.read(CHUNK):
                digest.update(chunk)
                stream.write(chunk)
        if digest.hexdigest() not in allowed:
            return "served a file whose SHA-256 is not the pinned one (refused)"
        os.replace(partial, target)
        return ""
    except (urllib.error.URLError, OSError) as error:
        return f"download failed ({getattr(error, 'reason', error)})"
    finally:
        partial.unlink(missing_ok=True)
