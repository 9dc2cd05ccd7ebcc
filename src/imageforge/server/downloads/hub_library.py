"""Fetch a file whose size or hash the catalog does not declare, with `huggingface_hub.hf_hub_download`.

Without a declared size and hash we cannot stream blind: the library asks the hub first (a HEAD on the
resolve URL gives the commit, the size and, for LFS files, the SHA-256 as the ETag), resumes its own
`.incomplete` file, follows the CDN redirect and sends a token for gated repositories.

We still want what the streamed path gives, so every request the library makes in this thread goes through
a session of ours (`configure_http_backend`):
- progress per chunk and cancellation between chunks (the library's `.incomplete` stays for resuming);
- our timeouts (6 s to connect, 60 s idle), and transport errors and 5xx answers raised at once as
  `SourceUnreachable`, instead of the library's own five retries with back-off, so a dead hub costs one
  connect timeout before the mirror is tried;
- Xet storage hidden (its `X-Xet-Hash` header dropped), so the bytes come over plain HTTP through this
  session, where proxies, progress and cancellation apply;
- the size bound (size_limit.py): the size the HEAD announced (`X-Linked-Size`, else `Content-Length`) is
  checked against the catalog and the family's ceiling before the GET, and the GET is stopped at the first
  chunk past the limit, however the body is framed (the library itself reads a length-less body without end);
  a body that ends short of the announced size is a broken transfer we resume, not the library's
  "Consistency check failed";
- redirects counted (`MAX_REDIRECTS`): the library follows relative ones by recursion, so a loop would
  otherwise end in a RecursionError.

The file lands in a staging folder (`<storage>/models/.staging/<directory>`), is checked against the
declared SHA-256 when there is one, else against the hub's LFS SHA-256, and only then renamed into place.
"""

from __future__ import annotations

import base64
import contextlib
import glob
import hashlib
import re
import shutil
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

from ...contract import ModelUnavailableError
from ...contract.catalog import ModelFile
from ...contract.errors import disk_full, is_disk_full
from ...contract.model_files import sha256_of
from .failures import (
    MAX_REDIRECTS,
    DownloadCancelled,
    FileRejected,
    broke_off,
    cannot_reach,
    ended_early,
    redirect_loop,
    refused,
    server_failed,
)
from .fetch import CHUNK_SIZE, FetchOutcome, Progress, range_start, stated_total
from .size_limit import check_announced, overrun, size_limit
from .sources import USER_AGENT, Timeouts, host_of

_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_active = threading.local()
_configured = threading.Lock()
_backend_installed = False


@dataclass
class _Hooks:
    timeouts: Timeouts
    on_progress: Progress
    cancelled: Callable[[], bool]
    host: str
    name: str
    declared: int | None  # the catalog's size of the file
    ceiling: int  # the most bytes it may have when the catalog declares none
    linked_etag: str | None = None
    announced: int | None = None  # the size the hub's HEAD gave
    redirects: int = 0
    received: int = 0  # bytes of the file on disk so far


class _ObservedSession(requests.Session):
    """A `requests` session that, while one of our downloads runs in this thread, applies its hooks."""

    def request(self, method: str, url: str | bytes, *args: Any, **kwargs: Any) -> requests.Response:
        hooks: _Hooks | None = getattr(_active, "hooks", None)
        if hooks is None:
            return super().request(method, url, *args, **kwargs)
        if hooks.cancelled():
            raise DownloadCancelled()
        kwargs["timeout"] = hooks.timeouts.as_requests()
        try:
            response = super().request(method, url, *args, **kwargs)
        except requests.TooManyRedirects as error:
            raise redirect_loop(hooks.host, hooks.name, error) from error
        except requests.RequestException as error:
            raise cannot_reach(hooks.host, hooks.name, error) from error
        if response.status_code >= 500:
            response.close()
            raise server_failed(hooks.host, hooks.name, response.status_code)
        hooks.redirects += len(response.history) + (300 <= response.status_code < 400)
        if hooks.redirects > MAX_REDIRECTS:
            response.close()
            raise redirect_loop(hooks.host, hooks.name, status=response.status_code)
        response.headers.pop("X-Xet-Hash", None)
        if str(method).upper() == "HEAD":
            etag = response.headers.get("X-Linked-Etag") or response.headers.get("ETag") or ""
            hooks.linked_etag = etag.removeprefix("W/").strip('"').lower() or None
            hooks.announced = _announced_size(response)
            check_announced(hooks.name, hooks.host, hooks.announced, declared=hooks.declared, ceiling=hooks.ceiling)
        if kwargs.get("stream"):
            # This one response's chunks are observed; the library calls its iter_content itself.
            response.iter_content = _observed_chunks(response, hooks)  # type: ignore[method-assign,assignment]
        return response


def _observed_chunks(response: requests.Response, hooks: _Hooks) -> Callable[..., Iterator[str | bytes]]:
    original = response.iter_content

    def iter_content(chunk_size: int | None = None, decode_unicode: bool = False) -> Iterator[str | bytes]:
        start = _resume_offset(response, hooks)
        announced = hooks.announced if hooks.announced is not None else stated_total(response, start)
        limit = size_limit(declared=hooks.declared, announced=announced, ceiling=hooks.ceiling, host=hooks.host)
        received = hooks.received = start
        hooks.on_progress(received, limit.size)
        # requests overloads iter_content on a literal decode_unicode; the library's own flag is passed through.
        chunks: Iterator[str | bytes] = original(chunk_size=CHUNK_SIZE, decode_unicode=decode_unicode)  # type: ignore[call-overload]
        while True:
            if hooks.cancelled():
                raise DownloadCancelled()
            try:
                chunk = next(chunks, b"")
            except requests.RequestException as error:
                raise broke_off(hooks.host, hooks.name, received, error, progressed=received > start) from error
            if not chunk:
                if limit.stated and received < limit.bytes:
                    raise ended_early(hooks.host, hooks.name, received, progressed=received > start)
                return
            if received + len(chunk) > limit.bytes:
                response.close()
                raise overrun(hooks.name, hooks.host, limit)
            yield chunk
            received += len(chunk)
            hooks.received = received
            hooks.on_progress(received, limit.size)

    return iter_content


_RANGE_FROM = re.compile(r"^bytes=(\d+)-$")


def _resume_offset(response: requests.Response, hooks: _Hooks) -> int:
    """The bytes of the library's `.incomplete` this body continues. The library appends whatever comes, so a
    source that answers its `Range` with another range or the whole file would leave a spliced file: refused."""
    match = _RANGE_FROM.match(str(response.request.headers.get("Range", "")))
    asked = int(match.group(1)) if match else 0
    if asked and range_start(response) != asked:
        response.close()
        raise FileRejected(
            f"{hooks.name}: {hooks.host} did not resume the download at byte {asked:,} as asked; the partial "
            "download was deleted, so the next download starts over."
        )
    return asked


def _announced_size(response: requests.Response) -> int | None:
    """The file size a HEAD states, read as the library reads it (`X-Linked-Size`, else `Content-Length`)."""
    value = response.headers.get("X-Linked-Size") or response.headers.get("Content-Length") or ""
    return int(value) if value.isdigit() else None


def _install_backend() -> None:
    global _backend_installed
    with _configured:
        if not _backend_installed:
            from huggingface_hub import configure_http_backend
            from huggingface_hub.utils.tqdm import disable_progress_bars

            def factory() -> requests.Session:
                session = _ObservedSession()
                session.headers["User-Agent"] = USER_AGENT
                session.max_redirects = MAX_REDIRECTS
                return session

            configure_http_backend(backend_factory=factory)
            disable_progress_bars()  # the job's progress is ours; tqdm would only fill the server log
            _backend_installed = True


@contextmanager
def _observing(hooks: _Hooks) -> Iterator[_Hooks]:
    _install_backend()
    _active.hooks = hooks
    try:
        yield hooks
    finally:
        _active.hooks = None


def fetch_with_hub_library(
    repository: str,
    model_file: ModelFile,
    destination: Path,
    staging_root: Path,
    *,
    hub: str,
    timeouts: Timeouts,
    ceiling: int,
    on_progress: Progress = lambda _received, _total: None,
    cancelled: Callable[[], bool] = lambda: False,
) -> FetchOutcome:
    """Download `repository`/`model_file.path` from `hub` into `destination`, verified, at most `ceiling` bytes
    unless the catalog declares its size."""
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    name = Path(model_file.path).name
    host = host_of(hub)
    hooks = _Hooks(timeouts, on_progress, cancelled, host, name, declared=model_file.size, ceiling=ceiling)
    try:
        with _observing(hooks):
            from huggingface_hub import hf_hub_download

            staged = Path(
                hf_hub_download(repository, model_file.path, local_dir=staging_root, endpoint=hub, revision="main")
            )
    except FileRejected:
        _drop_partial(staging_root, model_file)
        raise
    except (DownloadCancelled, ModelUnavailableError):
        raise
    except LocalEntryNotFoundError as error:  # the HEAD failed in a way the library does not name
        raise cannot_reach(host, name, error.__cause__ or error) from error
    except HfHubHTTPError as error:
        status = error.response.status_code if error.response is not None else 0
        hint = "; the repository may need a Hugging Face token (HF_TOKEN)" if status in (401, 403) else ""
        raise refused(host, name, status, hint) from error
    except OSError as error:
        if is_disk_full(error):
            _drop_incomplete(staging_root)
            size = hooks.announced if hooks.announced is not None else model_file.size
            needed = None if size is None else size - hooks.received
            raise disk_full(staging_root, f"downloading {name}", needed=needed, written=hooks.received) from error
        raise ModelUnavailableError(f"{name}: the download from {host} failed ({error}).") from error
    return _verify_and_place(staged, destination, model_file, hooks.linked_etag, host)


def _verify_and_place(
    staged: Path, destination: Path, model_file: ModelFile, etag: str | None, host: str
) -> FetchOutcome:
    size = staged.stat().st_size
    if model_file.size is not None and size != model_file.size:
        staged.unlink(missing_ok=True)
        raise FileRejected(
            f"{destination.name} from {host} is {size} bytes but the catalog declares {model_file.size}; "
            "it was deleted."
        )
    sha256 = sha256_of(staged)
    expected = (model_file.sha256 or (etag if etag and _SHA256.match(etag) else "")).lower()
    if expected and sha256 != expected:
        staged.unlink(missing_ok=True)
        raise FileRejected(f"{destination.name} does not match its SHA-256; the download was deleted.")
    destination.parent.mkdir(parents=True, exist_ok=True)
    staged.replace(destination)
    return FetchOutcome(destination, size, sha256, resumed_from=0)


def _drop_partial(staging_root: Path, model_file: ModelFile) -> None:
    """The library's `.incomplete` of this one file: beside its `<path>.metadata`, named after the URL-safe
    base64 SHA-1 of that metadata file's name, then the ETag (huggingface_hub 0.36's local-folder layout)."""
    relative = Path(model_file.path)
    folder = staging_root / ".cache" / "huggingface" / "download" / relative.parent
    prefix = base64.urlsafe_b64encode(hashlib.sha1(f"{relative.name}.metadata".encode()).digest()).decode()
    for partial in folder.glob(f"{glob.escape(prefix)}.*.incomplete"):
        partial.unlink(missing_ok=True)


def _drop_incomplete(staging_root: Path) -> None:
    """On a full disk, the library's `.incomplete` files only keep the disk full."""
    downloads = staging_root / ".cache" / "huggingface" / "download"
    for partial in downloads.rglob("*.incomplete") if downloads.is_dir() else ():
        partial.unlink(missing_ok=True)


def clear_staging(staging_root: Path) -> None:
    """Forget the library's bookkeeping for a folder once nothing is pending in it."""
    downloads = staging_root / ".cache" / "huggingface" / "download"
    if not downloads.is_dir() or not any(downloads.rglob("*.incomplete")):
        shutil.rmtree(staging_root, ignore_errors=True)
        with contextlib.suppress(OSError):
            staging_root.parent.rmdir()  # only when no other model is staged
