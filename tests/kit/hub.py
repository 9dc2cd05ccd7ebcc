"""A loopback HTTP server that serves model files like the Hugging Face hub, like a mirror, and like a proxy.

Hub URLs:    /{repository}/resolve/main/{path}, and /{repository}/resolve/{HUB_COMMIT}/{path} for the same file
Mirror URLs: /mirror/{directory}/{path}    (so the mirror base URL is f"{hub.url}/mirror")
CDN URLs:    /cdn/{sha256} on `cdn_url`     (where resolve URLs redirect when `lfs_redirect` is on)

It answers what `huggingface_hub` 2.x's `get_hf_file_metadata` asks (read from its source): a HEAD on the
resolve URL must carry `X-Repo-Commit`, an `ETag` (for LFS files `X-Linked-Etag`, the SHA-256) and a size
(`X-Linked-Size` or `Content-Length`); a missing file is a 404 with `X-Error-Code: EntryNotFound` (or
`RepoNotFound`). Our download then GETs the resolve URL pinned to that commit, with `Range: bytes=N-` when it
resumes. Like the real hub, `lfs_redirect` answers resolve URLs with a 302 to an absolute CDN URL. Requests are
recorded under the `main` path whatever revision they named (so faults and `served` apply to both), with the
revision in `RecordedRequest.revision`.

Supports HEAD, GET, `Range: bytes=N-` (206 + Content-Range, 416 past the end), and faults per URL path:
"404", "500", "hang" (accepts, never answers), "stall" (headers then silence), "drop" (connection closed
mid-file after `drop_after` bytes), "wrong_bytes" (same length, other content), "slow" (1 KiB chunks with
`slow_delay` pauses), "ignore_range", "unbounded" (HEAD announces `announced_size` bytes, GET sends the whole
file with no length, delimited by closing the connection), "redirect_loop" (302 to the same path, relative, as
the hub redirects a renamed repository). `set_fault(key, fault, times=n)` makes a fault last n requests.
Requests in absolute form (`GET http://host/path`) are served too and recorded as `proxied`: the hub is
then acting as the system's HTTP proxy. Every request is recorded (path, Range header, status, bytes sent).

`Blackhole` is an address whose TCP connects never complete: the unreachable hub of a filtered network.
"""

from __future__ import annotations

import hashlib
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

HUB_COMMIT = "0123456789abcdef0123456789abcdef01234567"
CHUNK = 64 * 1024


@dataclass
class RecordedRequest:
    method: str
    path: str
    range: str | None
    bytes_sent: int = 0
    status: int = 0
    proxied: bool = False
    revision: str | None = None  # of a resolve URL: "main" or the commit


@dataclass
class LoopbackHub:
    files: dict[str, bytes] = field(default_factory=dict)  # URL path (without leading '/') -> content
    faults: dict[str, str] = field(default_factory=dict)  # URL path -> fault name
    fault_budget: dict[str, int] = field(default_factory=dict)  # URL path -> requests left for its fault
    requests: list[RecordedRequest] = field(default_factory=list)
    down: bool = False  # refuse everything with 503 (the server still accepts connections)
    lfs_redirect: bool = False  # resolve URLs answer 302 to /cdn/{sha256}, as huggingface.co does for LFS
    stall_seconds: float = 30.0
    drop_after: int = 4096
    slow_delay: float = 0.01
    announced_size: int = 1000  # what an "unbounded" HEAD says
    on_request: Callable[[BaseHTTPRequestHandler, str], None] | None = None  # sees each request (and its key)

    def add_hub_file(self, repository: str, path: str, content: bytes) -> str:
        key = f"{repository}/resolve/main/{path}"
        self.files[key] = content
        return key

    def add_mirror_file(self, directory: str, path: str, content: bytes) -> str:
        key = f"mirror/{directory}/{path}"
        self.files[key] = content
        return key

    def set_fault(self, key: str, fault: str, *, times: int | None = None) -> None:
        """Inject `fault` on `key`, for every request or only the next `times` ones."""
        self.faults[key] = fault
        if times is None:
            self.fault_budget.pop(key, None)
        else:
            self.fault_budget[key] = times

    def served(self, key: str, method: str = "GET") -> list[RecordedRequest]:
        return [record for record in self.requests if record.path == key and record.method == method]

    def start(self) -> LoopbackHub:
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_args):  # keep test output quiet
                pass

            def do_HEAD(self):
                hub._serve(self, head=True)

            def do_GET(self):
                hub._serve(self, head=False)

        self._server = _QuietServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()
        return self

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def cdn_url(self) -> str:
        """The same server under another host name (`localhost`), as huggingface.co's CDN is another host:
        the library's HEAD stops at the redirect, and `requests` drops an Authorization header on the way."""
        return f"http://localhost:{self._server.server_address[1]}"

    @property
    def mirror(self) -> str:
        return f"{self.url}/mirror"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> LoopbackHub:
        return self.start()

    def __exit__(self, *_exc) -> None:
        self.stop()

    def _take_fault(self, key: str) -> str | None:
        fault = self.faults.get(key)
        if fault is not None and key in self.fault_budget:
            self.fault_budget[key] -= 1
            if self.fault_budget[key] <= 0:
                del self.faults[key], self.fault_budget[key]
        return fault

    def _lookup(self, key: str) -> bytes | None:
        if key.startswith("cdn/"):
            wanted = key[4:]
            return next((data for data in self.files.values() if hashlib.sha256(data).hexdigest() == wanted), None)
        return self.files.get(key)

    def _serve(self, handler: BaseHTTPRequestHandler, *, head: bool) -> None:
        target = handler.path
        proxied = target.startswith(("http://", "https://"))
        if proxied:
            target = urlsplit(target).path or "/"
        key = unquote(target.split("?", 1)[0].lstrip("/"))
        revision = None
        if "/resolve/" in key:
            repository, rest = key.split("/resolve/", 1)
            revision, _, path = rest.partition("/")
            if revision == HUB_COMMIT:
                key = f"{repository}/resolve/main/{path}"
        record = RecordedRequest(handler.command, key, handler.headers.get("Range"), proxied=proxied, revision=revision)
        self.requests.append(record)
        if self.on_request is not None:
            self.on_request(handler, key)
        fault = self._take_fault(key)
        if fault == "hang":
            time.sleep(self.stall_seconds)
            handler.close_connection = True
            return
        if self.down or fault == "500":
            self._empty(handler, record, 503 if self.down else 500)
            return
        if fault == "redirect_loop":
            self._empty(handler, record, 302, {"Location": "/" + key, "X-Repo-Commit": HUB_COMMIT})
            return
        content = self._lookup(key)
        if content is None or fault == "404":
            repository_known = "/resolve/" in key and any(
                name.startswith(key.split("/resolve/", 1)[0] + "/resolve/") for name in self.files
            )
            code = "EntryNotFound" if repository_known else "RepoNotFound"
            self._empty(handler, record, 404, {"X-Error-Code": code, "X-Repo-Commit": HUB_COMMIT})
            return
        sha256 = hashlib.sha256(content).hexdigest()
        hub_headers = {
            "X-Repo-Commit": HUB_COMMIT,
            "X-Linked-Etag": f'"{sha256}"',
            "X-Linked-Size": str(len(content)),
            "ETag": f'"{sha256}"',
        }
        if self.lfs_redirect and "/resolve/" in key:
            self._empty(handler, record, 302, {**hub_headers, "Location": f"{self.cdn_url}/cdn/{sha256}"})
            return
        if fault == "wrong_bytes":
            content = bytes(byte ^ 0xFF for byte in content)
        if fault == "unbounded":
            self._unbounded(handler, record, content, hub_headers, head=head)
            return
        start = 0
        requested = handler.headers.get("Range")
        if requested and fault != "ignore_range" and requested.startswith("bytes=") and requested.endswith("-"):
            start = int(requested[6:-1])
            if start >= len(content):
                self._empty(handler, record, 416, {"Content-Range": f"bytes */{len(content)}"})
                return
            record.status = 206
            handler.send_response(206)
            handler.send_header("Content-Range", f"bytes {start}-{len(content) - 1}/{len(content)}")
        else:
            record.status = 200
            handler.send_response(200)
        body = content[start:]
        handler.send_header("Content-Length", str(len(body)))
        handler.send_header("Accept-Ranges", "bytes")
        for name, value in hub_headers.items():
            if "/resolve/" in key or name == "ETag":
                handler.send_header(name, value)
        handler.end_headers()
        if head:
            return
        self._send_body(handler, record, body, fault)

    def _send_body(self, handler: BaseHTTPRequestHandler, record: RecordedRequest, body: bytes, fault) -> None:
        try:
            if fault == "stall":
                time.sleep(self.stall_seconds)
                handler.close_connection = True
                return
            if fault == "drop":
                sent = body[: self.drop_after]
                handler.wfile.write(sent)
                record.bytes_sent = len(sent)
                handler.wfile.flush()
                handler.close_connection = True
                return
            step = 1024 if fault == "slow" else CHUNK
            for offset in range(0, len(body), step):
                handler.wfile.write(body[offset : offset + step])
                record.bytes_sent += len(body[offset : offset + step])
                if fault == "slow":
                    time.sleep(self.slow_delay)
        except (BrokenPipeError, ConnectionResetError):
            handler.close_connection = True

    def _unbounded(self, handler, record: RecordedRequest, content: bytes, hub_headers: dict, *, head: bool) -> None:
        record.status = 200
        handler.send_response(200)
        for name, value in {**hub_headers, "X-Linked-Size": str(self.announced_size)}.items():
            handler.send_header(name, value)
        if head:
            handler.send_header("Content-Length", str(self.announced_size))
            handler.end_headers()
            return
        handler.send_header("Connection", "close")
        handler.end_headers()
        handler.close_connection = True
        self._send_body(handler, record, content, None)

    @staticmethod
    def _empty(handler: BaseHTTPRequestHandler, record: RecordedRequest, code: int, headers=None) -> None:
        record.status = code
        handler.send_response(code)
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.send_header("Content-Length", "0")
        handler.end_headers()


class _QuietServer(ThreadingHTTPServer):
    """Clients that hang up mid-request (timeouts, cancellations) are the point of these tests, not errors."""

    def handle_error(self, request, client_address) -> None:
        pass


class Blackhole:
    """A loopback address that accepts no connection: connects time out, as on a filtered network.

    The listening socket has a backlog of zero and one connection already waiting in it, so the kernel drops
    every further SYN and the client's connect runs into its timeout instead of being refused.
    """

    def __enter__(self) -> Blackhole:
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(0)
        self._fillers: list[socket.socket] = []
        address = self._listener.getsockname()
        while True:  # fill the accept queue until a connect no longer completes
            filler = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            filler.settimeout(0.2)
            try:
                filler.connect(address)
            except OSError:
                filler.close()
                break
            self._fillers.append(filler)
        return self

    @property
    def url(self) -> str:
        host, port = self._listener.getsockname()[:2]
        return f"http://{host}:{port}"

    def __exit__(self, *_exc) -> None:
        for filler in self._fillers:
            filler.close()
        self._listener.close()
