"""The settings a job server takes from its environment once, at start, and keeps for its whole life.

A server is shared by every client of its storage root (openspec/0015) and reads these variables only when it
starts: where models come from (the hub, a mirror, a catalog, their timeouts, a token, the proxy) and how
conversions build their environment (uv, wheel folders, package indexes). A client whose variables differ would
otherwise be served silently with the first client's: a download from the hub the new command steered away
from, a catalog it never named. The client records a fingerprint of these variables with the server it
starts, and one that attaches compares its own (client/server_launch.py). Only digests are recorded: a token or
a proxy password never lands in the process record.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping

from .catalog import CATALOG_ENVIRONMENT_VARIABLE
from .conversions import WHEELHOUSE_VARIABLE

SERVER_SETTINGS: tuple[str, ...] = (
    "HF_ENDPOINT",
    "HF_TOKEN",
    "IMAGEFORGE_MODEL_MIRROR",
    CATALOG_ENVIRONMENT_VARIABLE,
    "IMAGEFORGE_DOWNLOAD_CONNECT_TIMEOUT",
    "IMAGEFORGE_DOWNLOAD_READ_TIMEOUT",
    "IMAGEFORGE_UV",
    WHEELHOUSE_VARIABLE,
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "UV_INDEX",
    "UV_DEFAULT_INDEX",
    "UV_INDEX_URL",
    "UV_EXTRA_INDEX_URL",
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "PIP_FIND_LINKS",
)
CASE_FREE = frozenset({"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"})  # http_proxy counts the same


def settings_fingerprint(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """{name: SHA-256 of its value} for each server setting `environ` (default: this process's) sets."""
    environ = os.environ if environ is None else environ
    fingerprint = {}
    for name in SERVER_SETTINGS:
        value = environ.get(name)
        if value is None and name in CASE_FREE:
            value = environ.get(name.lower())
        if value:
            fingerprint[name] = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()
    return fingerprint


def differing_settings(recorded: object, current: Mapping[str, str]) -> list[str]:
    """The settings whose value differs between a server's recorded fingerprint and `current` (set on one side
    only counts too), in SERVER_SETTINGS order. A record without a fingerprint (an older client's) differs in
    nothing: it proves nothing either way, and refusing it would strand every server started before."""
    if not isinstance(recorded, dict):
        return []
    return [name for name in SERVER_SETTINGS if recorded.get(name) != current.get(name)]
