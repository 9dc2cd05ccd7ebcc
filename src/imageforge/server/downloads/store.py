"""What only the job server does with model files: delete a file to fetch it again, and what old versions left.

Where the files live and whether they are ready (the verified-hash cache) is contract/model_files.py, which
the CLI and the add-on read too.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from ...contract.catalog import ModelEntry
from ...contract.model_files import forget_hash, models_root


def drop_library_staging(storage_root: Path, entry: ModelEntry) -> None:
    """Delete `<models>/.staging/<directory>`, where huggingface_hub 0.36 staged undeclared files (ImageForge up
    to 2026-12-02): its `.incomplete` partials are in the library's own layout, which the streamed download
    that replaced it cannot resume, so they only take disk space."""
    if entry.directory.startswith("convert-"):  # never a conversion's scratch folder (jobs/convert_model.py)
        return
    shutil.rmtree(models_root(storage_root) / ".staging" / entry.directory, ignore_errors=True)


def forget(storage_root: Path, path: Path) -> None:
    """Delete a model file and its cache record (a file known to be wrong, before fetching it again)."""
    path.unlink(missing_ok=True)
    forget_hash(storage_root, path)
