"""Stream one model file into `<name>.part`, hashing while writing, then rename it into place.

An existing `.part` is resumed with an HTTP Range request (the hash first catches up over its bytes); a
server that ignores Range sends the whole file and the download restarts cleanly. Cancelling keeps the
`.part` for the next attempt; a wrong size or hash deletes it.
"""

from __future__ import annotations

import errno
import hashlib
import http.client
import os
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ...contract import ModelUnavailableError, ResourceExhaustedError

CHUNK_SIZE = 1024 * 1024
CONNECT_TIMEOUT = 6.0
HF_ENDPOINT_VARIABLE = "HF_ENDPOINT"
DEFAULT_HUB = "https://huggingface.co"

Progress = Callable[[int], None]  # bytes received so far in this file


class DownloadCancelled(Exception):
    """Raised between chunks when the job was cancelled; the `.part` file is kept for resuming."""


class SourceUnreachable(ModelUnavailableError):
    """The source could not be contacted (connection refused, timed out, DNS)."""


@dataclass(frozen=True)
class FetchOutcome:
    path: Path
    requested_bytes: int  # bytes the server was asked for (less than the size when resumed)


def hub_url(repository: str, path: str) -> str:
    endpoint = os.environ.get(HF_ENDPOINT_VARIABLE, DEFAULT_HUB).rstrip("/")
    return f"{endpoint}/{repository}/resolve/main/{path}"


def part_path(destination: Path) -> Path:
    return destination.with_name(destination.name + ".part")


def fetch_file(
    url: str,
    destination: Path,
    *,
    size: int,
    sha256: str,
    on_progress: Progress = lambda _received: None,
    cancelled: Callable[[], bool] = lambda: False,
    connect_timeout: float = CONNECT_TIMEOUT,
) -> FetchOutcome:
    destination.parent.mkdir(parents=True, exist_ok=True)
    partial = part_path(destination)
    digest = hashlib.sha256()
    offset = 0
    if partial.exists():
        offset = partial.stat().st_size
        if offset > size:
            partial.unlink()
            offset = 0
        else:
            with partial.open("rb") as stream:
                while chunk := stream.read(CHUNK_SIZE):
                    digest.update(chunk)
    headers = {"User-Agent": "ImageForge"}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    try:
        response = urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=connect_timeout)
    except urllib.error.HTTPError as error:
        if error.code == 416 and offset == size:
            response = None  # the .part is already complete
        else:
            raise ModelUnavailableError(f"{destination.name}: the server answered HTTP {error.code}.") from error
    except (urllib.error.URLError, OSError) as error:
        raise SourceUnreachable(f"{destination.name}: cannot reach {url.split('/')[2]} ({error}).") from error
    requested = 0
    if response is not None:
        with response:
            if offset and response.status != 206:  # Range ignored: start over
                offset = 0
                digest = hashlib.sha256()
            requested = size - offset
            try:
                _stream(response, partial, offset, digest, size, on_progress, cancelled)
            except (OSError, http.client.HTTPException) as error:
                if getattr(error, "errno", None) == errno.ENOSPC:
                    partial.unlink(missing_ok=True)
                    raise ResourceExhaustedError(
                        f"The disk is full while downloading {destination.name}; free some space and retry."
                    ) from error
                raise ModelUnavailableError(f"{destination.name}: the download was interrupted ({error}).") from error
    received = partial.stat().st_size
    if received != size:
        if received > size:
            partial.unlink(missing_ok=True)
        raise ModelUnavailableError(
            f"{destination.name}: received {received} of {size} bytes; the download will resume next time."
        )
    if digest.hexdigest() != sha256.lower():
        partial.unlink(missing_ok=True)
        raise ModelUnavailableError(f"{destination.name}: the downloaded file is corrupt (SHA-256 mismatch).")
    os.replace(partial, destination)
    return FetchOutcome(destination, requested)


def _stream(response, partial: Path, offset: int, digest, size: int, on_progress: Progress, cancelled) -> None:
    with partial.open("r+b" if offset else "wb") as output:
        output.seek(offset)
        output.truncate()
        received = offset
        on_progress(received)
        while True:
            if cancelled():
                raise DownloadCancelled()
            chunk = response.read(CHUNK_SIZE)
            if not chunk:
                break
            if received + len(chunk) > size:
                raise ModelUnavailableError(f"{partial.name[:-5]}: the server sent more bytes than declared.")
            output.write(chunk)
            digest.update(chunk)
            received += len(chunk)
            on_progress(received)
