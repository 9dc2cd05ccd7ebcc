"""What only the job server does with model files: stage downloads, delete a file to fetch it again, and refuse a
job whose model is not ready. Where the files live and whether they are ready (the verified-hash cache) is
contract/model_files.py, which the CLI and the add-on read too.
"""

from __future__ import annotations

from pathlib import Path

from ...contract import ModelUnavailableError
from ...contract.catalog import ModelEntry
from ...contract.model_files import FileState, ModelStatus, forget_hash, model_status, models_root


def staging_root(storage_root: Path, entry: ModelEntry) -> Path:
    """Where huggingface_hub writes a model's files before they are verified and renamed into place."""
    return models_root(storage_root) / ".staging" / entry.directory


def require_ready(storage_root: Path, entry: ModelEntry) -> ModelStatus:
    """The model's status when every file is ready; otherwise a ModelUnavailableError that says what to do."""
    status = model_status(storage_root, entry)
    if not status.ready:
        first = next(item for item in status.files if not item.ready)
        problem = "is missing" if first.state is FileState.MISSING else "is damaged"
        raise ModelUnavailableError(
            f"{entry.label} is not downloaded ({first.file.path} {problem}); "
            f"download it with 'imageforge models download {entry.key}' or the add-on's Download button."
        )
    return status


def forget(storage_root: Path, path: Path) -> None:
    """Delete a model file and its cache record (a file known to be wrong, before fetching it again)."""
    path.unlink(missing_ok=True)
    forget_hash(storage_root, path)
