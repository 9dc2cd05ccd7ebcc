"""Where model files come from: the hub first, then the mirror, sticky for the life of the server process; a
mirror that is a folder first, then the hub.

Users on filtered networks see the hub time out on every file. Paying the connect timeout once and then
staying on the mirror keeps a multi-file download from costing minutes of timeouts; a fresh server process
(the next Blender session) tries the hub again, since networks change. A folder mirror (a path or file: URL)
is the studio's own disk or share, and its files are verified by size and SHA-256 like the hub's, so it is
read first: 50 render nodes set up from it without one request to the hub, and only a file it lacks comes
from the hub. The choice is published as the BlendJob resource `downloads`, whose `snapshot()` the panel shows.

Settings come from the environment of the server process:
- `HF_ENDPOINT`: the hub (default https://huggingface.co), `{endpoint}/{repository}/resolve/main/{path}`.
- `IMAGEFORGE_MODEL_MIRROR`: the mirror, `{mirror}/{directory}/{path}`: an http(s) URL, or a folder (a path
  or `file:` URL: a share the render nodes mount, as `imageforge models export` writes it; local_mirror.py).
- `IMAGEFORGE_DOWNLOAD_CONNECT_TIMEOUT` / `IMAGEFORGE_DOWNLOAD_READ_TIMEOUT`: seconds (6 and 60).
- System proxies (`HTTPS_PROXY`, `HTTP_PROXY`, `NO_PROXY`, and the OS settings on Windows and macOS) are
  honoured because every request goes through `requests` with its environment trust left on.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from ...contract.catalog import ModelEntry, ModelFile
from ...contract.health import DownloadsHealth, DownloadSource
from .failures import MAX_REDIRECTS
from .local_mirror import file_adapter, local_path, mirror_location

if TYPE_CHECKING:
    import requests

DEFAULT_HUB = "https://huggingface.co"
HUB_VARIABLE = "HF_ENDPOINT"
MIRROR_VARIABLE = "IMAGEFORGE_MODEL_MIRROR"
CONNECT_TIMEOUT_VARIABLE = "IMAGEFORGE_DOWNLOAD_CONNECT_TIMEOUT"
READ_TIMEOUT_VARIABLE = "IMAGEFORGE_DOWNLOAD_READ_TIMEOUT"
CONNECT_TIMEOUT = 6.0
READ_TIMEOUT = 60.0
USER_AGENT = "ImageForge"


@dataclass(frozen=True)
class Timeouts:
    connect: float = CONNECT_TIMEOUT  # the whole budget for reaching a source before moving on
    read: float = READ_TIMEOUT  # silence tolerated between two chunks of an open transfer

    def as_requests(self) -> tuple[float, float]:
        return (self.connect, self.read)


@dataclass(frozen=True)
class DownloadSettings:
    hub: str = DEFAULT_HUB
    mirror: str | None = None
    timeouts: Timeouts = Timeouts()

    @property
    def mirror_first(self) -> bool:
        """A folder mirror (file: URL) is read before the hub; an HTTP mirror only after it."""
        return bool(self.mirror and self.mirror.startswith("file:"))

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> DownloadSettings:
        environ = os.environ if environ is None else environ
        configured = (environ.get(MIRROR_VARIABLE) or "").strip()
        mirror = mirror_location(configured) if configured else ""
        return cls(
            hub=(environ.get(HUB_VARIABLE) or DEFAULT_HUB).strip().rstrip("/"),
            mirror=mirror or None,
            timeouts=Timeouts(
                _seconds(environ, CONNECT_TIMEOUT_VARIABLE, CONNECT_TIMEOUT),
                _seconds(environ, READ_TIMEOUT_VARIABLE, READ_TIMEOUT),
            ),
        )


def _seconds(environ: Mapping[str, str], name: str, default: float) -> float:
    try:
        value = float(environ.get(name, default))
    except ValueError:
        return default
    return value if value > 0 else default


def host_of(url: str) -> str:
    """The host (and port) of a URL, for one-sentence messages; a file: URL's folder."""
    if url.startswith("file:"):
        return f"the folder {local_path(url).parent}"
    return url.split("://", 1)[-1].split("/", 1)[0]


def hub_url(hub: str, repository: str, path: str, revision: str = "main") -> str:
    """A file's resolve URL on `revision` (a branch, or the commit the hub named: hub_library.py)."""
    return f"{hub}/{repository}/resolve/{revision}/{quote(path)}"


def mirror_url(mirror: str, directory: str, path: str) -> str:
    return f"{mirror}/{quote(directory)}/{quote(path)}"


class DownloadSources:
    """The source order for this server process, the sticky mirror switch, and one pooled HTTP session."""

    def __init__(self, settings: DownloadSettings | None = None):
        self.settings = settings or DownloadSettings.from_environment()
        self._lock = threading.Lock()
        self._current = DownloadSource.MIRROR if self.settings.mirror_first else DownloadSource.HUB
        self._hub_failed = False
        self._switched_at: float | None = None
        self._reason: str | None = None
        self._last_error: str | None = None
        self._session: requests.Session | None = None

    @property
    def current(self) -> DownloadSource:
        with self._lock:
            return self._current

    @property
    def timeouts(self) -> Timeouts:
        return self.settings.timeouts

    def order(self) -> list[DownloadSource]:
        """Sources to try for one file, best first."""
        with self._lock:
            hub_failed = self._hub_failed
        if not self.settings.mirror:
            return [DownloadSource.HUB]
        if hub_failed:
            return [DownloadSource.MIRROR]
        if self.settings.mirror_first:
            return [DownloadSource.MIRROR, DownloadSource.HUB]
        return [DownloadSource.HUB, DownloadSource.MIRROR]

    def url(self, source: DownloadSource, entry: ModelEntry, model_file: ModelFile) -> str:
        if source is DownloadSource.HUB:
            return hub_url(self.settings.hub, entry.repository, model_file.path)
        if not self.settings.mirror:
            raise ValueError("No mirror is configured.")
        return mirror_url(self.settings.mirror, entry.directory, model_file.path)

    def hub_unreachable(self, reason: str) -> bool:
        """Record that the hub failed; switch to the mirror for good when there is one. True if switched."""
        with self._lock:
            self._last_error = reason
            if self.settings.mirror is None or self._hub_failed:
                return False
            self._hub_failed = True
            self._current = DownloadSource.MIRROR
            self._switched_at = time.time()
            self._reason = reason
            return True

    def note_error(self, reason: str) -> None:
        with self._lock:
            self._last_error = reason

    @property
    def session(self) -> requests.Session:
        """One `requests` session per process: connection reuse, and proxies from the environment."""
        with self._lock:
            if self._session is None:
                import requests  # imported here: the server starts without paying for it

                self._session = requests.Session()
                self._session.headers["User-Agent"] = USER_AGENT
                self._session.mount("file://", file_adapter())  # a mirror that is a folder
                self._session.max_redirects = MAX_REDIRECTS  # a loop ends as one sentence (failures.redirect_loop)
            return self._session

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return DownloadsHealth(
                source=self._current,
                hub=self.settings.hub,
                mirror=self.settings.mirror,
                switched_at=self._switched_at,
                reason=self._reason,
                last_error=self._last_error,
            ).to_json()

    def close(self) -> None:
        with self._lock:
            if self._session is not None:
                self._session.close()
                self._session = None
