"""The record of an fp16 model file's fp32 CPU copy, as the server writes it beside the file and the CLI reads it.

`<name>.onnx.cpu-fp32.json` says what became of the copy of `<name>.onnx` (server/cpu_copies/cpu_copy.py derives
it): `ready` (CPU sessions load `<name>.cpu-fp32-<hash>.onnx`), `not-needed` (no fp16 weights) or `rejected`
(the reason: the rewrite cannot handle the file, or the copy's outputs differ). Keyed by the original's SHA-256
and by the acceptance rule it was judged under (`rule`): a record of another hash, or a rejection under an
older rule, is derived again. Stdlib only: `imageforge models list` shows the record without the server.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

TAG = "cpu-fp32"
RECORD_SUFFIX = f".{TAG}.json"
# The acceptance rule records are judged under. 1: limits × the output's range; 2: plus the fp16 resolution of
# the original's outputs, and a child process that failed to run is no longer a rejection (openspec/0012).
ACCEPTANCE_RULE = 2


class CopyStatus(StrEnum):
    READY = "ready"  # the copy exists and passed the check: CPU sessions load it
    NOT_NEEDED = "not-needed"  # no fp16 weights: the original is the CPU graph
    REJECTED = "rejected"  # the rewrite cannot handle the file or its outputs differ: the original serves


@dataclass(frozen=True)
class CopyRecord:
    source_sha256: str
    status: CopyStatus
    copy: str | None = None  # file name beside the original
    reason: str = ""
    checks: list[dict[str, Any]] = field(default_factory=list)  # per output: max/mean abs diff, range, limits
    fp16_tensors: int = 0
    removed_casts: int = 0
    restored_constants: int = 0
    seconds: float = 0.0
    rule: int = 1  # records written before the rule was recorded were judged under rule 1
    # The verified copy as it was written: a file on disk of another size or SHA-256 is not that copy (damaged,
    # cut short by a partial sync or restore) and is derived again. Empty in records written before these fields.
    copy_bytes: int = 0
    copy_mtime_ns: int = 0
    copy_ctime_ns: int = 0  # POSIX only (Windows' st_ctime is the creation time, which a rewrite in place keeps)
    copy_sha256: str = ""

    @property
    def current(self) -> bool:
        """Whether this record still stands: anything but a rejection under an older acceptance rule."""
        return self.status is not CopyStatus.REJECTED or self.rule >= ACCEPTANCE_RULE

    @property
    def summary(self) -> str:
        """A few words for `imageforge models list`."""
        if self.status is CopyStatus.READY:
            return "fp32 CPU copy ready"
        if self.status is CopyStatus.REJECTED:
            return f"no fp32 CPU copy: {self.reason}" if self.current else "fp32 CPU copy to be checked again"
        return ""


def copy_path(source: Path, sha256: str) -> Path:
    return source.with_name(f"{source.stem}.{TAG}-{sha256[:16]}{source.suffix}")


def record_path(source: Path) -> Path:
    return source.with_name(source.name + RECORD_SUFFIX)


def read_record(source: Path) -> CopyRecord | None:
    """The record beside `source`, or None when there is none or it cannot be read."""
    try:
        raw = json.loads(record_path(source).read_text(encoding="utf-8"))
        return CopyRecord(**{**raw, "status": CopyStatus(raw["status"])})
    except (OSError, ValueError, TypeError, KeyError):
        return None
