"""Stream one URL into `<name>.part`, hashing while writing, and rename it into place only when it is right.

- Resume: an existing `.part` is hashed first (so the digest covers every byte), then the rest is asked for
  with `Range: bytes=N-`. A server that ignores Range answers 200 with the whole file: we start over from
  byte 0 in the same response instead of appending a second copy.
- Verification: the declared size is checked as soon as the server states its own (no point downloading
  400 MB of the wrong file), and again at the end with the SHA-256. A wrong file is deleted.
- Bounded: no file grows past its limit (size_limit.py: the declared size, else the announced one within the
  family's ceiling, else the ceiling), however long the server keeps sending.
- Nothing half-done is ever at the final path: the rename happens after the fsync and the hash check.
- Cancellation is checked between chunks (64 KiB, so a slow link still reacts within a chunk); it keeps
  the `.part`. A full disk deletes the `.part`: keeping it would only keep the disk full.

Requests go through the caller's `requests.Session`, which honours system proxies, with a short connect
timeout and a long idle-read timeout (see sources.py).
"""

from __future__ import annotations

import hashlib
import http.client
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from ...contract import ModelUnavailableError
from ...contract.catalog import DEFAULT_MAX_FILE_BYTES
from ...contract.errors import disk_full, is_disk_full
from ...contract.model_files import part_path
from .failures import (
    DownloadCancelled,
    FileRejected,
    broke_off,
    cannot_reach,
    ended_early,
    redirect_loop,
    refused,
    server_failed,
)
from .size_limit import SizeLimit, check_announced, overrun, size_limit
from .sources import Timeouts, host_of

if TYPE_CHECKING:
    import requests

CHUNK_SIZE = 64 * 1024
CATCH_UP_CHUNK = 4 * 1024 * 1024

Progress = Callable[[int, "int | None"], None]  # (bytes of this file on disk so far, its size if known)
PartOpener = Callable[[Path, int], BinaryIO]  # (the .part path, offset to continue at) -> writable file


@dataclass(frozen=True)
class Expected:
    size: int | None = None
    sha256: str | None = None
    ceiling: int = DEFAULT_MAX_FILE_BYTES  # the most bytes the file may have when `size` is not declared
    announced: int | None = None  # the size the hub's HEAD gave, for a GET whose body states none


@dataclass(frozen=True)
class FetchOutcome:
    path: Path
    size: int
    sha256: str
    resumed_from: int  # bytes of an earlier `.part` that were kept


def open_part(path: Path, offset: int) -> BinaryIO:
    """The default writer: continue a `.part` at `offset`, or create it."""
    if offset:
        stream = path.open("r+b")
        stream.seek(offset)
        stream.truncate()
        return stream
    return path.open("wb")


def fetch_file(
    session: requests.Session,
    url: str,
    destination: Path,
    *,
    expected: Expected,
    timeouts: Timeouts,
    on_progress: Progress = lambda _received, _total: None,
    cancelled: Callable[[], bool] = lambda: False,
    writer: PartOpener = open_part,
    headers: dict[str, str] | None = None,
) -> FetchOutcome:
    destination.parent.mkdir(parents=True, exist_ok=True)
    partial = part_path(destination)
    name = destination.name
    host = host_of(url)
    digest, offset = _catch_up(partial, expected.ceiling if expected.size is None else expected.size)
    if expected.size is not None and offset == expected.size:
        # A complete `.part` whose rename never happened: keep it if it verifies, else fetch it again.
        if expected.sha256 is None or digest.hexdigest() == expected.sha256.lower():
            return _finish(partial, destination, digest, offset, expected, resumed_from=offset)
        partial.unlink()
        digest, offset = hashlib.sha256(), 0
    if cancelled():
        raise DownloadCancelled()
    response = _request(session, url, name, host, offset, timeouts, headers)
    if offset and (response.status_code == 416 or range_start(response) not in (None, offset)):
        response.close()  # the server's copy is shorter than our `.part`, or it answered another range
        partial.unlink(missing_ok=True)
        digest, offset = hashlib.sha256(), 0
        response = _request(session, url, name, host, 0, timeouts, headers)
    with response:
        if offset and response.status_code != 206:  # Range ignored: the body is the whole file, start over
            digest, offset = hashlib.sha256(), 0
        total = stated_total(response, offset)
        if total is None:
            total = expected.announced
        try:
            check_announced(name, host, total, declared=expected.size, ceiling=expected.ceiling)
        except FileRejected:
            partial.unlink(missing_ok=True)
            raise
        limit = size_limit(declared=expected.size, announced=total, ceiling=expected.ceiling, host=host)
        received = _stream(response, partial, offset, digest, limit, name, host, on_progress, cancelled, writer)
    if (expected.size is not None and received < expected.size) or (total is not None and received != total):
        raise ended_early(host, name, received, progressed=received > offset)
    return _finish(partial, destination, digest, received, expected, resumed_from=offset)


def _catch_up(partial: Path, size: int | None) -> tuple[hashlib._Hash, int]:
    """Hash what an earlier attempt left, so the final digest covers the whole file."""
    digest = hashlib.sha256()
    try:
        offset = partial.stat().st_size
    except OSError:
        return digest, 0
    if size is not None and offset > size:
        partial.unlink(missing_ok=True)
        return digest, 0
    with partial.open("rb") as stream:
        while chunk := stream.read(CATCH_UP_CHUNK):
            digest.update(chunk)
    return digest, offset


def _request(
    session: requests.Session,
    url: str,
    name: str,
    host: str,
    offset: int,
    timeouts: Timeouts,
    extra: dict[str, str] | None = None,
) -> requests.Response:
    import requests

    # Sizes and hashes are of the raw file. `requests` drops an Authorization header on a redirect to
    # another host, so a hub token never reaches the CDN.
    headers = {**(extra or {}), "Accept-Encoding": "identity"}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    try:
        response = session.get(url, headers=headers, stream=True, timeout=timeouts.as_requests())
    except requests.TooManyRedirects as error:
        raise redirect_loop(host, name, error) from error
    except requests.RequestException as error:
        raise cannot_reach(host, name, error) from error
    if response.status_code >= 500:
        response.close()
        raise server_failed(host, name, response.status_code)
    if response.status_code >= 400 and not (response.status_code == 416 and offset):
        response.close()
        raise refused(host, name, response.status_code)
    return response


_CONTENT_RANGE = re.compile(r"bytes\s+(\d+)-(\d+)/(\d+|\*)")


def range_start(response: requests.Response) -> int | None:
    if response.status_code != 206:
        return None
    match = _CONTENT_RANGE.match(response.headers.get("Content-Range", ""))
    return int(match.group(1)) if match else -1


def stated_total(response: requests.Response, offset: int) -> int | None:
    """The whole file's size as the server states it, or None when it does not say."""
    if response.status_code == 206:
        match = _CONTENT_RANGE.match(response.headers.get("Content-Range", ""))
        if match and match.group(3) != "*":
            return int(match.group(3))
    length = response.headers.get("Content-Length")
    if length is None or not length.isdigit():
        return None
    return int(length) + (offset if response.status_code == 206 else 0)


def _stream(
    response: requests.Response,
    partial: Path,
    offset: int,
    digest: hashlib._Hash,
    limit: SizeLimit,
    name: str,
    host: str,
    on_progress: Progress,
    cancelled: Callable[[], bool],
    writer: PartOpener,
) -> int:
    import requests

    received = offset
    try:
        with writer(partial, offset) as output:
            on_progress(received, limit.size)
            chunks = response.iter_content(CHUNK_SIZE)
            while True:
                if cancelled():
                    raise DownloadCancelled()
                chunk = next(chunks, b"")
                if not chunk:
                    break
                if received + len(chunk) > limit.bytes:
                    raise overrun(name, host, limit)
                output.write(chunk)
                digest.update(chunk)
                received += len(chunk)
                on_progress(received, limit.size)
            output.flush()
            os.fsync(output.fileno())
    except FileRejected:
        partial.unlink(missing_ok=True)
        raise
    except (requests.RequestException, http.client.HTTPException) as error:
        raise broke_off(host, name, received, error, progressed=received > offset) from error
    except OSError as error:
        if is_disk_full(error):
            partial.unlink(missing_ok=True)
            needed = None if limit.size is None else limit.size - received
            raise disk_full(partial.parent, f"downloading {name}", needed=needed, written=received) from error
        raise ModelUnavailableError(f"Cannot write {partial}: {error.strerror or error}.") from error
    return received


def _finish(
    partial: Path, destination: Path, digest: hashlib._Hash, size: int, expected: Expected, *, resumed_from: int
) -> FetchOutcome:
    sha256 = digest.hexdigest()
    if expected.sha256 is not None and sha256 != expected.sha256.lower():
        partial.unlink(missing_ok=True)
        raise FileRejected(f"{destination.name} does not match its declared SHA-256; the download was deleted.")
    os.replace(partial, destination)
    return FetchOutcome(destination, size, sha256, resumed_from)
