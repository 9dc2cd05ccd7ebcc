"""What `imageforge run` says about the devices a job really ran on (from the job's provenance.json).

The result JSON on stdout gains `devices` ({model key: device that ran it}) and, when the job raised any,
`warnings` (device) and `input_warnings` (a model given another picture than it was made for); each warning is
also printed on stderr, after the progress lines, so a CPU fallback is never
silent even when the progress poll missed the 50 ms message that announced it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..contract.provenance import Provenance


def result_summary(files: Mapping[str, Path], provenance: Provenance) -> dict[str, Any]:
    summary: dict[str, Any] = {name: str(path) for name, path in files.items()}
    if provenance.models:
        summary["devices"] = provenance.devices
    if provenance.warnings:
        summary["warnings"] = list(provenance.warnings)
    if provenance.input_warnings:
        summary["input_warnings"] = list(provenance.input_warnings)
    return summary


def print_warnings(provenance: Provenance, say: Callable[[str], None]) -> None:
    for message in (*provenance.warnings, *provenance.input_warnings):
        say(f"imageforge: warning: {message}")
