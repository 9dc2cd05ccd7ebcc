"""What only the job server does with model files: stage downloads and delete a file to fetch it again.

Where the files live and whether they are ready (the verified-hash cache) is contract/model_files.py, which
the CLI and the add-on read too.
"""

from __future__ import annotations

from pathlib import Path

from ...contract.catalog import ModelEntry
from ...contract.model_files import forget_hash, models_root


def staging_root(storage_root: Path, entry: ModelEntry) -> Path:
    """Where huggingface_hub writes a model's files before they are verified and renamed into place."""
    return models_root(storage_root) / ".staging" / entry.directory


def forget(storage_root: Path, path: Path) -> None:
    """Delete a model file and its cache record (a file known to be wrong, before fetching it again)."""
    path.unlink(missing_ok=True)
    forget_hash(storage_root, path)
