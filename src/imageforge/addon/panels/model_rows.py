"""One row per catalog model for the Models panel: size, licence, whether it is ready, whether it is default.

Readiness is read from the files on disk (contract/model_files.files_present: each file in its place with the
declared size), which costs one stat per file and never hashes, so it is cheap enough for a redraw. The server
does not report readiness (its models resource lists loaded sessions only); downloads verify SHA-256 when they
run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ...client.job_usage import format_bytes
from ...contract.catalog import Catalog, Family
from ...contract.model_files import files_present


@dataclass(frozen=True)
class ModelRow:
    key: str
    family: Family
    label: str
    size: str
    license: str
    ready: bool
    default: bool


def format_size(size: int | None) -> str:
    """A catalog size as every byte count in the add-on reads (client/job_usage.format_bytes)."""
    return "size unknown" if size is None else format_bytes(size)


def model_rows(catalog: Catalog, storage_root: Path) -> list[ModelRow]:
    """Rows grouped by family (catalog family order), each family's default first."""
    rows = []
    for family in (item.key for item in catalog.families):
        entries = sorted((entry for entry in catalog.models if entry.family == family), key=lambda e: not e.default)
        for entry in entries:
            ready = files_present(storage_root, entry)
            rows.append(
                ModelRow(
                    entry.key,
                    family,
                    entry.label,
                    format_size(entry.declared_size),
                    entry.license,
                    ready,
                    entry.default,
                )
            )
    return rows
