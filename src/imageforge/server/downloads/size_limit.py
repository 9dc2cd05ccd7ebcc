"""How many bytes one download may bring: never more than anybody said it has, never more than its family allows.

The limit is, in order: the size the catalog declares; else the size the source announced (the hub's HEAD,
a `Content-Length` or `Content-Range`), when it is within the family's ceiling (`ModelEntry.max_file_size`);
else the ceiling itself. A source that announces more than the ceiling is refused before a byte is written;
one that streams past the limit is stopped at the first chunk that would cross it (nothing past the limit is
ever written) and its partial file deleted. Both are `FileRejected`: one sentence, never retried.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...contract.byte_counts import format_bytes
from .failures import FileRejected

_ACCEPTED = "ImageForge accepts for one file of this model"


@dataclass(frozen=True)
class SizeLimit:
    bytes: int
    reason: str  # completes "more than …": "the 1,000 bytes 127.0.0.1:8000 announced"
    stated: bool = True  # somebody said the file has this size (False: only the family's ceiling is known)

    @property
    def size(self) -> int | None:
        """The file's size as far as anybody said, for progress."""
        return self.bytes if self.stated else None


def size_limit(*, declared: int | None, announced: int | None, ceiling: int, host: str) -> SizeLimit:
    if declared is not None:
        return SizeLimit(declared, f"the {declared:,} bytes the catalog declares")
    if announced is not None and announced <= ceiling:
        return SizeLimit(announced, f"the {announced:,} bytes {host} announced")
    return SizeLimit(ceiling, f"{amount(ceiling)}, the most {_ACCEPTED}", stated=False)


def check_announced(name: str, host: str, announced: int | None, *, declared: int | None, ceiling: int) -> None:
    """Refuse, before anything is downloaded, a file the source says is not the declared one or too big."""
    if announced is None:
        return
    if declared is not None and announced != declared:
        raise FileRejected(
            f"{name} on {host} is {announced:,} bytes but the catalog declares {declared:,}; nothing was downloaded."
        )
    if declared is None and announced > ceiling:
        raise FileRejected(
            f"{name} on {host} is {amount(announced)}, more than the {amount(ceiling)} {_ACCEPTED}; "
            "nothing was downloaded."
        )


def overrun(name: str, host: str, limit: SizeLimit) -> FileRejected:
    return FileRejected(f"{name}: {host} sent more than {limit.reason}; the download was stopped and deleted.")


def amount(size: int) -> str:
    """'2.0 GB', '140.9 MB', '1,000 bytes': exact below a megabyte, where a limit is a figure someone typed."""
    return format_bytes(size) if size >= 1024**2 else f"{size:,} bytes"
