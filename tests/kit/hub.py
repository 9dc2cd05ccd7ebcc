"""A loopback HTTP server that serves model files like the Hugging Face hub and like a mirror.

Hub URLs:    /{repository}/resolve/main/{path}
Mirror URLs: /mirror/{directory}/{path}    (so the mirror base URL is f"{hub.url}/mirror")

Supports HEAD, GET, `Range: bytes=N-` (206 + Content-Range), ETag and Content-Length, and switchable
faults per file path: "404", "stall" (headers then silence), "drop" (connection closed mid-file),
"wrong_bytes" (same length, different content), "slow" (small chunks with pauses), "ignore_range".
Every request is recorded (path, Range header, bytes sent) so tests can assert what was asked for.
"""

from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class RecordedRequest:
    method: str
    path: str
    range: str | None
    bytes_sent: int = 0


@dataclass
class LoopbackHub:
    files: dict[str, bytes] = field(default_factory=dict)  # URL path (without leading '/') -> content
    faults: dict[str, str] = field(default_factory=dict)  # URL path -> fault name
    requests: list[RecordedRequest] = field(default_factory=list)
    down: bool = False  # refuse everything with 503 (the server still accepts connections)
    stall_seconds: float = 30.0
    drop_after: int = 4096

    def add_hub_file(self, repository: str, path: str, content: bytes) -> str:
        key = f"{repository}/resolve/main/{path}"
        self.files[key] = content
        return key

    def add_mirror_file(self, directory: str, path: str, content: bytes) -> str:
        key = f"mirror/{directory}/{path}"
        self.files[key] = content
        return key

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

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> LoopbackHub:
        return self.start()

    def __exit__(self, *_exc) -> None:
        self.stop()

    def _serve(self, handler: BaseHTTPRequestHandler, *, head: bool) -> None:
        key = handler.path.split("?", 1)[0].lstrip("/")
        record = RecordedRequest(handler.command, key, handler.headers.get("Range"))
        self.requests.append(record)
        fault = self.faults.get(key)
        content = self.files.get(key)
        if self.down:
            self._empty(handler, 503)
            return
        if content is None or fault == "404":
            self._empty(handler, 404)
            return
        if fault == "wrong_bytes":
            content = bytes(byte ^ 0xFF for byte in content)
        start = 0
        requested = handler.headers.get("Range")
        if requested and fault != "ignore_range" and requested.startswith("bytes=") and requested.endswith("-"):
            start = int(requested[6:-1])
            if start >= len(content):
                handler.send_response(416)
                handler.send_header("Content-Range", f"bytes */{len(content)}")
                handler.send_header("Content-Length", "0")
                handler.end_headers()
                return
            handler.send_response(206)
            handler.send_header("Content-Range", f"bytes {start}-{len(content) - 1}/{len(content)}")
        else:
            handler.send_response(200)
        body = content[start:]
        handler.send_header("Content-Length", str(len(body)))
        handler.send_header("ETag", '"' + hashlib.sha256(content).hexdigest() + '"')
        handler.send_header("Accept-Ranges", "bytes")
        handler.end_headers()
        if head:
            return
        try:
            if fault == "stall":
                time.sleep(self.stall_seconds)
                return
            if fault == "drop":
                sent = body[: self.drop_after]
                handler.wfile.write(sent)
                record.bytes_sent = len(sent)
                handler.wfile.flush()
                handler.close_connection = True
                return
            step = 1024 if fault == "slow" else 256 * 1024
            for offset in range(0, len(body), step):
                handler.wfile.write(body[offset : offset + step])
                record.bytes_sent += len(body[offset : offset + step])
                if fault == "slow":
                    time.sleep(0.01)
        except (BrokenPipeError, ConnectionResetError):
            handler.close_connection = True

    @staticmethod
    def _empty(handler: BaseHTTPRequestHandler, code: int) -> None:
        handler.send_response(code)
        handler.send_header("Content-Length", "0")
        handler.end_headers()
