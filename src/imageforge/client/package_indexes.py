"""Where the server environment's packages come from: package indexes in order, each tried until one serves.

The order (openspec/0025): the Package Index preference (or `imageforge setup --index`), then
`IMAGEFORGE_PACKAGE_INDEX`, then the indexes uv and pip are told to use (`UV_DEFAULT_INDEX`, `UV_INDEX_URL`,
`PIP_INDEX_URL`), then PyPI, then two large mirrors (Tsinghua, Aliyun) for networks where pypi.org is slow
or blocked. Each value may be a name from `KNOWN_INDEXES` or a URL, several separated by spaces or commas;
duplicates are dropped. Before uv is given an index it is asked for one pinned project's page with a short
timeout (`IMAGEFORGE_PACKAGE_INDEX_TIMEOUT`, 4 s): an index that is down, hangs or refuses costs seconds,
never uv's minutes of retries. Whatever index serves, every file is checked against the pinned SHA-256
(client/pin_hashes.py, `--require-hashes`): a mirror can be slow or incomplete, never change what is installed.
"""

from __future__ import annotations

import os
import re
import socket
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass

INDEX_VARIABLE = "IMAGEFORGE_PACKAGE_INDEX"
TIMEOUT_VARIABLE = "IMAGEFORGE_PACKAGE_INDEX_TIMEOUT"
PROBE_TIMEOUT = 4.0
# Variables that name an index for uv or pip, in the order they are honoured (after ours).
TOOL_VARIABLES = ("UV_DEFAULT_INDEX", "UV_INDEX_URL", "PIP_INDEX_URL")
# Variables that would add indexes behind our back: removed from uv's environment (we pass the index).
CLEARED_VARIABLES = ("UV_DEFAULT_INDEX", "UV_INDEX_URL", "UV_INDEX", "UV_EXTRA_INDEX_URL", "UV_FIND_LINKS",
                     "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "UV_NO_INDEX", "UV_OFFLINE")  # fmt: skip


@dataclass(frozen=True)
class KnownIndex:
    key: str
    label: str
    url: str


KNOWN_INDEXES = (
    KnownIndex("pypi", "PyPI (pypi.org)", "https://pypi.org/simple"),
    KnownIndex("tsinghua", "Tsinghua University mirror (China)", "https://pypi.tuna.tsinghua.edu.cn/simple"),
    KnownIndex("aliyun", "Aliyun mirror (China)", "https://mirrors.aliyun.com/pypi/simple"),
    KnownIndex("tencent", "Tencent Cloud mirror (China)", "https://mirrors.cloud.tencent.com/pypi/simple"),
    KnownIndex("ustc", "USTC mirror (China)", "https://mirrors.ustc.edu.cn/pypi/simple"),
)
DEFAULT_ORDER = ("pypi", "tsinghua", "aliyun")


def resolve_index(value: str) -> str:
    """A known index's URL for its key, else the value itself (a URL), without a trailing slash."""
    known = {index.key: index.url for index in KNOWN_INDEXES}
    return known.get(value.strip().lower(), value.strip()).rstrip("/")


def index_order(chosen: str | None = None, environ: Mapping[str, str] | None = None) -> list[str]:
    """The indexes to try, first to last (see the module docstring)."""
    environ = os.environ if environ is None else environ
    values = [chosen or "", environ.get(INDEX_VARIABLE, ""), *(environ.get(name, "") for name in TOOL_VARIABLES)]
    order: list[str] = []
    for value in [*values, *DEFAULT_ORDER]:
        for item in re.split(r"[\s,]+", value.strip()):
            url = resolve_index(item) if item else ""
            if url and url not in order:
                order.append(url)
    return order


def probe_timeout(environ: Mapping[str, str] | None = None) -> float:
    environ = os.environ if environ is None else environ
    try:
        value = float(environ.get(TIMEOUT_VARIABLE, PROBE_TIMEOUT))
    except ValueError:
        return PROBE_TIMEOUT
    return value if value > 0 else PROBE_TIMEOUT


def probe(index: str, project: str, timeout: float) -> str:
    """'' when `index` answers for `project` within `timeout` seconds, else why not (a few words)."""
    return reachable(f"{index}/{project}/", timeout, project=project)


def reachable(url: str, timeout: float, *, project: str | None = None) -> str:
    """'' when `url` answers within `timeout` seconds (with `project`: answers 2xx), else why not."""
    request = urllib.request.Request(url, headers={"Accept": "text/html", "User-Agent": "ImageForge setup"})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler())  # this moment's proxies, not the first call's
    try:
        with opener.open(request, timeout=timeout) as response:
            response.read(1)
        return ""
    except urllib.error.HTTPError as error:
        return f"answered HTTP {error.code} for {project}" if project else ""
    except TimeoutError:
        return f"did not answer within {timeout:g} s"
    except urllib.error.URLError as error:
        reason = error.reason
        if isinstance(reason, (TimeoutError, socket.timeout)):
            return f"did not answer within {timeout:g} s"
        return f"is unreachable ({getattr(reason, 'strerror', None) or reason})"
    except OSError as error:
        return f"is unreachable ({error.strerror or error})"


def host_of(index: str) -> str:
    return index.split("://", 1)[-1].split("/", 1)[0]


def uv_failure(output: str) -> str:
    """Why uv could not install from one index, in a few words, from its output."""
    lowered = output.lower()
    if "hash mismatch" in lowered or "hashes do not match" in lowered:
        return "served a file whose SHA-256 is not the pinned one (refused, nothing installed)"
    if "not found in the package registry" in lowered or "no solution found" in lowered or "404" in lowered:
        return "lacks a pinned file"
    if "timed out" in lowered or "timeout" in lowered:
        return "stopped answering"
    if "no space left" in lowered:
        return "no space left on the disk"
    lines = [line.strip() for line in output.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "uv failed"
