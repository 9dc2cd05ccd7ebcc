"""imageforge-vendor against a loopback package index that speaks PyPI's JSON API (never the real PyPI)."""

from __future__ import annotations

import hashlib
import io
import json
import os
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from imageforge.cli import vendor

UV = "0.13.9"
UV_WHEELS = {
    # Blender platform (or None for wheels that must not be picked) -> wheel platform tag
    "linux-x64": "manylinux_2_17_x86_64.manylinux2014_x86_64",
    "macos-arm64": "macosx_11_0_arm64",
    "windows-x64": "win_amd64",
    None: "musllinux_1_1_x86_64",
    "aarch64": "manylinux_2_17_aarch64.manylinux2014_aarch64.musllinux_1_1_aarch64",
}


def uv_wheel(tag: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        name = "uv.exe" if tag.startswith("win") else "uv"
        archive.writestr(f"uv-{UV}.data/scripts/{name}", f"uv binary for {tag}")
        archive.writestr(f"uv-{UV}.dist-info/METADATA", "Name: uv\n")
    return buffer.getvalue()


class LoopbackIndex:
    """Serves /pypi/<name>/json and the files it lists (with relative URLs, as some proxies publish)."""

    def __init__(self) -> None:
        self.files = {"blendjob-0.1.24-py3-none-any.whl": b"blendjob wheel bytes"}
        for tag in UV_WHEELS.values():
            self.files[f"uv-{UV}-py3-none-{tag}.whl"] = uv_wheel(tag)
        self.digests = {name: hashlib.sha256(data).hexdigest() for name, data in self.files.items()}
        self.requests: list[str] = []
        index = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                index.requests.append(self.path)
                body = index.respond(self.path)
                self.send_response(200 if body is not None else 404)
                self.end_headers()
                self.wfile.write(body or b"")

            def log_message(self, *_args) -> None: ...

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/pypi"

    def respond(self, path: str) -> bytes | None:
        if path.startswith("/files/"):
            return self.files.get(path.removeprefix("/files/"))
        releases = {
            "/pypi/blendjob/json": ("0.1.24", [name for name in self.files if name.startswith("blendjob")]),
            "/pypi/uv/json": (UV, [name for name in self.files if name.startswith("uv-")]),
        }
        if path not in releases:
            return None
        version, names = releases[path]
        entries = [
            {"filename": name, "url": f"../../files/{name}", "digests": {"sha256": self.digests[name]}}
            for name in names
        ]
        return json.dumps({"releases": {version: entries, "0.0.1": []}}).encode()

    def __enter__(self) -> LoopbackIndex:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *_exc) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def index():
    with LoopbackIndex() as running:
        yield running


def test_vendor_fetches_verified_files_for_every_platform(index, tmp_path, capsys):
    assert vendor.main(["--vendor-dir", str(tmp_path), "--index-url", index.url]) == 0
    assert (tmp_path / "blendjob-0.1.24-py3-none-any.whl").read_bytes() == b"blendjob wheel bytes"
    for platform in ("linux-x64", "macos-arm64", "windows-x64"):
        executable = vendor.uv_executable(tmp_path, platform)
        assert executable.read_text() == f"uv binary for {UV_WHEELS[platform]}"  # not the musl or arm wheel
        assert os.access(executable, os.X_OK)
        source = json.loads((executable.parent / "source.json").read_text())
        assert source["sha256"] == index.digests[source["wheel"]]
    assert str(vendor.uv_executable(tmp_path, "windows-x64")) in capsys.readouterr().out
    downloads = [path for path in index.requests if path.startswith("/files/")]
    assert len(downloads) == 4

    index.requests.clear()
    assert vendor.main(["--vendor-dir", str(tmp_path), "--index-url", index.url, "--platform", "linux-x64"]) == 0
    assert not [path for path in index.requests if path.startswith("/files/")]  # verified files are kept


def test_a_hash_mismatch_stops_and_leaves_nothing(index, tmp_path, capsys):
    index.digests["blendjob-0.1.24-py3-none-any.whl"] = "0" * 64
    assert vendor.main(["--vendor-dir", str(tmp_path), "--index-url", index.url]) == 1
    assert "does not match the index" in capsys.readouterr().err
    assert not (tmp_path / "blendjob-0.1.24-py3-none-any.whl").exists()
    assert not list(tmp_path.glob(".blendjob*"))


def test_github_is_never_a_source(tmp_path):
    entry = {"filename": "uv.tar.gz", "url": "https://github.com/astral-sh/uv/releases/x", "digests": {"sha256": "0"}}
    with pytest.raises(vendor.VendorError, match="package index only"):
        vendor.fetch_verified(entry, tmp_path / "uv.tar.gz")


def test_missing_releases_and_platforms_are_clear_errors(index, tmp_path):
    with pytest.raises(vendor.VendorError, match="no release uv 9.9.9"):
        vendor.release_files(index.url, "uv", "9.9.9")
    files = [entry for entry in vendor.release_files(index.url, "uv", UV) if "win" not in entry["filename"]]
    with pytest.raises(vendor.VendorError, match="no uv 0.13.9 wheel for windows-x64"):
        vendor.vendor_uv(tmp_path, "windows-x64", UV, index.url, files)


def test_pins_come_from_pyproject():
    assert vendor.pinned_version("blendjob") == "0.1.24"
    assert vendor.pinned_version("uv") == UV
