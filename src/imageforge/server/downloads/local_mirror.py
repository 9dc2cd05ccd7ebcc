"""A mirror that is a folder: `IMAGEFORGE_MODEL_MIRROR=/mnt/studio/models` (or `file:` URL, or `\\\\server\\share`).

Studios keep models on a share their render nodes mount (`imageforge models export DIR` writes one, in the
mirror layout `<directory>/<path>`). Such a mirror is read through the same download code as an HTTP one:
this transport adapter answers `file:` requests from the disk the way a web server would (200 with the
length, 206 for `Range: bytes=N-`, 416 past the end, 404 for a missing file, 403 for an unreadable one), so
resuming, size and SHA-256 checks, cancellation and progress are those of every other download.
"""

from __future__ import annotations

import io
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit
from urllib.request import url2pathname

if TYPE_CHECKING:
    from requests import PreparedRequest, Response
    from requests.adapters import BaseAdapter

_RANGE = re.compile(r"bytes=(\d+)-$")


def mirror_location(value: str) -> str:
    """The mirror setting as a URL: an http(s) or file URL unchanged, a folder path as its file: URL."""
    value = value.strip()
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]+://", value):
        return value.rstrip("/")
    return Path(value).expanduser().resolve().as_uri().rstrip("/")


def local_path(url: str) -> Path:
    """The file a file: URL names (a host other than localhost is a UNC share on Windows)."""
    parts = urlsplit(url)
    path = parts.path
    if parts.netloc and parts.netloc != "localhost":
        path = f"//{parts.netloc}{path}"
    return Path(url2pathname(path) if os.name == "nt" else unquote(path))


def file_adapter() -> BaseAdapter:
    """The transport for `file:` URLs; requests is imported here, as the download code imports it (lazily)."""
    from requests import Response
    from requests.adapters import BaseAdapter
    from requests.structures import CaseInsensitiveDict

    class LocalFileAdapter(BaseAdapter):
        """requests' transport for `file:` URLs: GET only, ranges from an offset to the end."""

        def send(self, request: PreparedRequest, stream: bool = False, timeout: Any = None, verify: Any = True,
                 cert: Any = None, proxies: Any = None) -> Response:  # fmt: skip
            response = Response()
            response.url = str(request.url)
            response.request = request
            response.headers = CaseInsensitiveDict()
            response.raw = io.BytesIO(b"")
            if request.method not in ("GET", "HEAD"):
                return _status(response, 405, "Method Not Allowed")
            path = local_path(str(request.url))
            try:
                handle = path.open("rb")
            except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
                return _status(response, 404, "Not Found")
            except OSError:
                return _status(response, 403, "Forbidden")
            size = os.fstat(handle.fileno()).st_size
            match = _RANGE.match(str(request.headers.get("Range", "")))
            start = int(match.group(1)) if match else 0
            if match and start >= size:
                handle.close()
                response.headers["Content-Range"] = f"bytes */{size}"
                return _status(response, 416, "Range Not Satisfiable")
            handle.seek(start)
            response.raw = handle
            response.headers["Content-Length"] = str(size - start)
            if match:
                response.headers["Content-Range"] = f"bytes {start}-{size - 1}/{size}"
                return _status(response, 206, "Partial Content")
            return _status(response, 200, "OK")

        def close(self) -> None:
            pass

    def _status(response: Response, code: int, reason: str) -> Response:
        response.status_code = code
        response.reason = reason
        return response

    return LocalFileAdapter()
