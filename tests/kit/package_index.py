"""Loopback package indexes for setup tests: tiny real wheels, a PEP 503 simple index over them that can fail the
ways mirrors fail (down, hanging, 404, a tampered wheel), and an HTTP proxy that records what went through it.

    wheels = build_wheels(tmp_path / "wheels", {"imageforge-probe-a": "1.0"})
    with SimpleIndex(wheels) as index:                 # index.url = http://127.0.0.1:PORT/simple
        ...                                            # index.requests: paths served
    with SimpleIndex(wheels, fault="tampered") as bad: # every wheel served with one byte changed

uv installs from them for real; nothing here reaches the network.
"""

from __future__ import annotations

import base64
import hashlib
import select
import socket
import ssl
import threading
import time
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

FAULTS = ("none", "404", "hang", "tampered")


def wheel_name(name: str, version: str, tag: str = "py3-none-any") -> str:
    return f"{name.replace('-', '_')}-{version}-{tag}.whl"


def build_wheel(folder: Path, name: str, version: str, tag: str = "py3-none-any") -> Path:
    """A wheel whose module `<name with _>` has VERSION = version and TAG = its tag (pure Python whatever the tag
    says: uv installs a `cp312-cp312-win_amd64` one only on Windows, but an index serves it anywhere)."""
    folder.mkdir(parents=True, exist_ok=True)
    module = name.replace("-", "_")
    info = f"{module}-{version}.dist-info"
    files = {
        f"{module}/__init__.py": f"VERSION = {version!r}\nTAG = {tag!r}\n".encode(),
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{info}/WHEEL": (
            f"Wheel-Version: 1.0\nGenerator: imageforge-tests\nRoot-Is-Purelib: true\nTag: {tag}\n".encode()
        ),
    }
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    path = folder / wheel_name(name, version, tag)
    with zipfile.ZipFile(path, "w") as archive:
        for item, data in files.items():
            archive.writestr(zipfile.ZipInfo(item, (2020, 1, 1, 0, 0, 0)), data)
    return path


def build_wheels(folder: Path, pins: dict[str, str]) -> Path:
    for name, version in pins.items():
        build_wheel(folder, name, version)
    return folder


def sha256_hex(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class SimpleIndex:
    """A PEP 503 index at `/simple/` over the wheels of `folder`, with one fault for every request."""

    def __init__(
        self, folder: Path, fault: str = "none", *, tls: tuple[Path, Path] | None = None,
        files: dict[str, bytes] | None = None,
    ):  # fmt: skip
        """`tls`: (certificate, key) to serve HTTPS; `files`: more paths to serve (a model hub's resolve URLs)."""
        assert fault in FAULTS
        self.folder = folder
        self.fault = fault
        self.tls = tls
        self.files = files or {}
        self.requests: list[str] = []
        self._closing = threading.Event()

    def __enter__(self) -> SimpleIndex:
        index = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args):
                pass

            def do_GET(self):
                index._serve(self)

            def do_HEAD(self):
                index._serve(self, head=True)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        if self.tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(str(self.tls[0]), str(self.tls[1]))
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *_exc) -> None:
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}/simple"

    def _served_hash(self, wheel: Path) -> str:
        """The hash the page lists: a tampering mirror lists its own file's, so only pinned hashes can tell."""
        data = wheel.read_bytes()
        return hashlib.sha256(_tampered(data) if self.fault == "tampered" else data).hexdigest()

    def _serve(self, handler: BaseHTTPRequestHandler, head: bool = False) -> None:
        path = urlsplit(handler.path).path  # absolute-form when it comes through a proxy
        self.requests.append(path if not head else f"HEAD {path}")
        if self.fault == "hang":
            self._closing.wait(60)
            return
        if self.fault == "404":
            return _send(handler, 404, b"not here", head=head)
        if path in self.files:
            return _send(handler, 200, self.files[path], "application/octet-stream", head)
        if path.startswith("/simple/"):
            project = path.removeprefix("/simple/").strip("/").replace("-", "_").lower()
            links = [
                f'<a href="/files/{wheel.name}#sha256={self._served_hash(wheel)}">{wheel.name}</a>'
                for wheel in sorted(self.folder.glob("*.whl"))
                if wheel.name.lower().startswith(project + "-")
            ]
            if not links:
                return _send(handler, 404, b"no such project", head=head)
            return _send(
                handler, 200, ("<html><body>" + "<br>".join(links) + "</body></html>").encode(), "text/html", head
            )
        wheel = self.folder / path.removeprefix("/files/")
        if not path.startswith("/files/") or not wheel.is_file():
            return _send(handler, 404, b"no such file", head=head)
        data = wheel.read_bytes()
        if self.fault == "tampered":  # what a compromised or broken mirror serves: other bytes, same name
            data = _tampered(data)
        _send(handler, 200, data, "application/octet-stream", head)


def _tampered(data: bytes) -> bytes:
    """The same wheel with a changed module: still a valid zip, so only the hash can tell."""
    import io

    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for item in source.infolist():
            content = source.read(item)
            if item.filename.endswith("__init__.py"):
                content += b"TAMPERED = True\n"
            archive.writestr(item, content)
    return out.getvalue()


def _send(
    handler: BaseHTTPRequestHandler, code: int, body: bytes, kind: str = "text/plain", head: bool = False
) -> None:
    handler.send_response(code)
    handler.send_header("Content-Type", kind)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    if not head:
        handler.wfile.write(body)


def dead_url() -> str:
    """An index URL on a loopback port nothing listens on: connections are refused at once."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/simple"


class RecordingProxy:
    """An HTTP proxy on loopback: forwards absolute-form requests and tunnels CONNECT, recording each target."""

    def __init__(self, routes: dict[str, int] | None = None) -> None:
        self.routes = routes or {}  # host name -> loopback port: hosts only the proxy can reach
        self.targets: list[str] = []  # "GET http://host:port/path" or "CONNECT host:port"
        self._lock = threading.Lock()

    def __enter__(self) -> RecordingProxy:
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
        self._stop = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *_exc) -> None:
        self._stop.set()
        self._listener.close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}"

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(client,), daemon=True).start()

    def _route(self, host: str, port: int) -> tuple[str, int]:
        return ("127.0.0.1", self.routes[host]) if host in self.routes else (host, port)

    def _handle(self, client: socket.socket) -> None:
        with client:
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = client.recv(65536)
                if not chunk:
                    return
                head += chunk
            request_line = head.split(b"\r\n", 1)[0].decode("latin-1")
            method, target, _version = request_line.split(" ", 2)
            with self._lock:
                self.targets.append(f"{method} {target}")
            if method == "CONNECT":
                host, port = target.rsplit(":", 1)
                upstream = socket.create_connection(self._route(host, int(port)), timeout=10)
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                rest = head.split(b"\r\n\r\n", 1)[1]
                if rest:
                    upstream.sendall(rest)
            else:
                parts = urlsplit(target)
                upstream = socket.create_connection(self._route(parts.hostname or "", parts.port or 80), timeout=10)
                path = parts.path + (f"?{parts.query}" if parts.query else "")
                upstream.sendall(head.replace(target.encode(), path.encode(), 1))
            with upstream:
                _pipe(client, upstream)


def _pipe(one: socket.socket, other: socket.socket, idle: float = 30.0) -> None:
    last = time.monotonic()
    while time.monotonic() - last < idle:
        readable, _, _ = select.select([one, other], [], [], 0.5)
        for sock in readable:
            data = sock.recv(65536)
            if not data:
                return
            (other if sock is one else one).sendall(data)
            last = time.monotonic()
