"""Ask the hub what a file is when the catalog does not declare its size or hash (`huggingface_hub` 2.x).

`huggingface_hub.get_hf_file_metadata` sends the HEAD on the resolve URL and reads the answer as the hub means
it: the commit the branch points at, the size (`X-Linked-Size`), the LFS SHA-256 (`X-Linked-Etag`); it follows
a redirect only while it stays on the hub (a renamed repository), never to the CDN, so a token never leaves
the hub. It makes one try (`retry_on_errors=False`): a dead hub costs one connect timeout before the mirror.

The bytes then come through our own streamed download (fetch.py), from the resolve URL pinned to that commit:
the same `.part` resume, progress, cancellation, proxies, size bound and redirect limit as every declared file,
and the file is checked against the LFS SHA-256 (or the catalog's, when it declares one). Before 2.x the
library downloaded the file itself through a session of ours; 2.x dropped that hook (`configure_http_backend`)
with `requests`, and the library's own download would bypass all of the above (openspec/0004).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from ...contract.catalog import ModelFile
from .failures import DownloadCancelled, cannot_reach, redirect_loop, refused, server_failed
from .size_limit import check_announced
from .sources import USER_AGENT, Timeouts, host_of, hub_url

_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")


@dataclass(frozen=True)
class HubFile:
    """What the hub said about one file, and how to fetch exactly that version of it."""

    url: str  # the resolve URL, pinned to `commit` when the hub named one
    size: int | None  # announced by the hub
    sha256: str | None  # the LFS object's SHA-256 (None for a small file kept in git)
    commit: str | None
    headers: dict[str, str] = field(default_factory=dict)  # the token, for the hub only


def ask_hub(
    repository: str,
    model_file: ModelFile,
    *,
    hub: str,
    timeouts: Timeouts,
    ceiling: int,
    cancelled: Callable[[], bool] = lambda: False,
) -> HubFile:
    """The hub's metadata of `repository`/`model_file.path` on its main branch; refuse a file that is too big
    before a byte is downloaded. Failures are the download failures every source raises (failures.py)."""
    import httpx2
    from huggingface_hub import get_hf_file_metadata, get_token
    from huggingface_hub.errors import HfHubHTTPError

    name = Path(model_file.path).name
    host = host_of(hub)
    if cancelled():
        raise DownloadCancelled()
    token = get_token()  # HF_TOKEN, or the one `hf auth login` saved: gated repositories
    try:
        metadata = get_hf_file_metadata(
            hub_url(hub, repository, model_file.path),
            token=token or False,
            # The library hands `timeout` to httpx2 as it is; a Timeout keeps our short connect and long read.
            timeout=cast(float, httpx2.Timeout(timeouts.read, connect=timeouts.connect)),
            user_agent=USER_AGENT,
            endpoint=hub,
            retry_on_errors=False,
        )
    except HfHubHTTPError as error:
        status = error.response.status_code
        if status >= 500:
            raise server_failed(host, name, status) from error
        hint = "; the repository may need a Hugging Face token (HF_TOKEN)" if status in (401, 403) else ""
        raise refused(host, name, status, hint) from error
    except httpx2.TooManyRedirects as error:
        raise redirect_loop(host, name, error) from error
    except httpx2.HTTPError as error:  # transport: refused connection, timeout, proxy, TLS
        raise cannot_reach(host, name, error) from error
    check_announced(name, host, metadata.size, declared=model_file.size, ceiling=ceiling)
    commit = metadata.commit_hash if metadata.commit_hash and _COMMIT.match(metadata.commit_hash) else None
    etag = (metadata.etag or "").lower()
    return HubFile(
        url=hub_url(hub, repository, model_file.path, commit or "main"),
        size=metadata.size,
        sha256=etag if _SHA256.match(etag) else None,
        commit=commit,
        headers={"Authorization": f"Bearer {token}"} if token else {},
    )
