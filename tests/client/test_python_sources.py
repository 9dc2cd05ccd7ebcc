"""Python 3.12 without GitHub: download mirrors in order (real uv against loopback mirrors that are down, lack the
archive or serve a tampered one), or a python-build-standalone archive the user brings.

No python-build-standalone archive exists on this machine (nothing is cached and GitHub is unreachable), so the
successful download from a mirror is not exercised here; the archive path runs with an archive of this
machine's own Python 3.12 in the python-build-standalone layout (`python/bin/python3.12`)."""

from __future__ import annotations

import subprocess
import sys
import tarfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from imageforge.client.python_sources import (
    GITHUB,
    PythonUnavailableError,
    download_python,
    mirror_order,
    python_from_archive,
)
from imageforge.client.setup import find_local_python, uv_executable
from tests.kit.package_index import dead_url


def _tampered_archive() -> bytes:
    """A well-formed .tar.gz holding python/bin/python3.12 that is not the interpreter uv expects."""
    import io

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as bundle:
        data = b"#!/bin/sh\necho tampered\n"
        item = tarfile.TarInfo("python/bin/python3.12")
        item.size, item.mode = len(data), 0o755
        bundle.addfile(item, io.BytesIO(data))
    return buffer.getvalue()


TAMPERED_ARCHIVE = _tampered_archive()


class Mirror:
    """A loopback Python download mirror: answers 404 for everything, or garbage bytes ('tampered')."""

    def __init__(self, fault: str):
        self.fault = fault
        self.paths: list[str] = []

    def __enter__(self):
        mirror = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args):
                pass

            def do_GET(self):
                mirror.paths.append(self.path)
                body = b"not here" if mirror.fault == "404" else TAMPERED_ARCHIVE
                self.send_response(404 if mirror.fault == "404" else 200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_HEAD = do_GET

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *_exc):
        self.server.shutdown()
        self.server.server_close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/python"


def test_the_order_is_the_choice_then_our_variable_then_uvs_then_github():
    environ = {"IMAGEFORGE_PYTHON_MIRROR": "https://python.example/pbs/", "UV_PYTHON_INSTALL_MIRROR": "file:///srv/p"}
    assert mirror_order("https://studio.example/pbs", environ) == [
        "https://studio.example/pbs", "https://python.example/pbs", "file:///srv/p", GITHUB,
    ]  # fmt: skip
    assert mirror_order(None, {}) == [GITHUB]


def test_mirrors_that_are_down_lack_the_archive_or_tamper_with_it_end_in_one_sentence(tmp_path, monkeypatch):
    monkeypatch.setenv("UV_PYTHON_INSTALL_DIR", str(tmp_path / "managed"))  # no Python uv installed before
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("IMAGEFORGE_PACKAGE_INDEX_TIMEOUT", "1")
    reports: list[str] = []
    with Mirror("404") as empty, Mirror("tampered") as tampered:
        down = dead_url()
        with pytest.raises(PythonUnavailableError) as raised:
            download_python(uv_executable(), "3.12", tmp_path / "venv", [down, empty.url, tampered.url],
                            report=reports.append)  # fmt: skip
    message = str(raised.value)
    assert message.startswith("Could not download Python 3.12 from any mirror: ")
    assert f"{down} is unreachable" in message
    assert f"{empty.url} does not have the archive" in message
    assert f"{tampered.url} served an archive whose SHA-256 is not uv's (refused)" in message, message
    assert "--python-archive" in message and "\n" not in message
    assert any("cpython-3.12" in path for path in empty.paths)  # uv really asked the mirror for the archive
    assert not (tmp_path / "venv" / "bin" / "python").exists()
    assert len(reports) == 3


@pytest.fixture
def standalone_archive(tmp_path) -> Path:
    """This machine's Python 3.12 in the python-build-standalone layout: python/bin/python3.12 runs it."""
    real = find_local_python("3.12")
    assert real
    layout = tmp_path / "layout" / "python" / "bin"
    layout.mkdir(parents=True)
    launcher = layout / "python3.12"
    launcher.write_text(f'#!/bin/sh\nexec "{real}" "$@"\n')
    launcher.chmod(0o755)
    archive = tmp_path / "cpython-3.12-install_only.tar.gz"
    with tarfile.open(archive, "w:gz") as bundle:
        bundle.add(tmp_path / "layout" / "python", arcname="python")
    return archive


def test_an_archive_the_user_brings_becomes_the_environments_python(standalone_archive, tmp_path):
    python = python_from_archive(standalone_archive, tmp_path / "storage", "3.12")
    assert python.parent.parent.parent.parent == tmp_path / "storage" / "python"
    assert python_from_archive(standalone_archive, tmp_path / "storage", "3.12") == python  # unpacked once
    venv = tmp_path / "venv"
    subprocess.run([uv_executable(), "venv", "--python", str(python), str(venv)], check=True, capture_output=True)
    out = subprocess.run([str(venv / "bin" / "python"), "-c", "import sys; print(sys.version_info[:2])"],
                         capture_output=True, text=True, check=True)  # fmt: skip
    assert out.stdout.strip() == "(3, 12)"


def test_an_archive_of_the_wrong_python_or_no_python_is_refused(standalone_archive, tmp_path):
    with pytest.raises(PythonUnavailableError, match=r"holds Python 3\.12, not 3\.13"):
        python_from_archive(standalone_archive, tmp_path / "a", "3.13")
    empty = tmp_path / "empty.tar.gz"
    with tarfile.open(empty, "w:gz") as bundle:
        bundle.add(Path(sys.executable).parent.parent / "pyvenv.cfg", arcname="pyvenv.cfg")
    with pytest.raises(PythonUnavailableError, match="not a python-build-standalone archive"):
        python_from_archive(empty, tmp_path / "b", "3.12")
    with pytest.raises(PythonUnavailableError, match="is not a file"):
        python_from_archive(tmp_path / "missing.tar.gz", tmp_path / "c", "3.12")
