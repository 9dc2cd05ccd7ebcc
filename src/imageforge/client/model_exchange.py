"""Model files carried between machines as a folder: `imageforge models export DIR` and `models import DIR`.

A studio downloads the models once on a connected machine, exports them to a share or a drive, and imports
them on machines that reach no hub (or points `IMAGEFORGE_MODEL_MIRROR` at the folder: the layout is the
mirror's, `DIR/<directory>/<path>`, so the same folder serves both). Nothing is trusted on its way: every file
is hashed while it is copied and kept only with the catalog's size and SHA-256 (a file whose entry declares no
hash: the size, and the hash `imageforge-models.json` says the exporting machine measured); a copy lands under
its name only when complete (`<name>.part` first, then a rename), so an interrupted or damaged transfer never
looks like a model. `imageforge-models.json` in DIR lists what was exported, for people and for the import.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from ..contract.catalog import ModelEntry, ModelFile, load_catalog
from ..contract.model_files import file_path, part_path, remember_hash, sha256_of, verify_file
from ..contract.private_storage import make_private_folder

MANIFEST_NAME = "imageforge-models.json"
CHUNK = 4 * 1024 * 1024
Report = Callable[[str], None]


class TransferState(StrEnum):
    COPIED = "copied"
    ALREADY_THERE = "already there"
    MISSING = "missing"  # not in the source (not downloaded here; not in the folder)
    DAMAGED = "damaged"  # wrong size or SHA-256: not copied


@dataclass(frozen=True)
class FileTransfer:
    model: str
    path: str
    state: TransferState
    detail: str = ""

    @property
    def line(self) -> str:
        detail = f": {self.detail}" if self.detail else ""
        return f"{self.state.value:<13} {self.model} {self.path}{detail}"


class ExchangeError(RuntimeError):
    """The folder cannot be used (not a folder, not writable); the message says which."""


def export_models(storage_root: Path, folder: Path, *, report: Report = lambda _line: None) -> list[FileTransfer]:
    """Copy every model file that is ready in `storage_root` into `folder` (mirror layout), verified."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ExchangeError(f"Cannot write the folder {folder} ({error.strerror or error}).") from error
    transfers: list[FileTransfer] = []
    exported = []
    for entry in load_catalog(storage_root=storage_root).models:
        states = [verify_file(storage_root, entry, model_file) for model_file in entry.files]
        if not all(status.ready for status in states):
            continue  # not (completely) downloaded here
        files = []
        for status in states:
            destination = folder / entry.directory / status.file.path
            transfer, sha256 = _copy_verified(entry, status.file, status.path, destination, status.file.sha256)
            transfers.append(transfer)
            report(transfer.line)
            files.append({"path": status.file.path, "size": status.path.stat().st_size, "sha256": sha256})
        exported.append({"key": entry.key, "directory": entry.directory, "files": files})
    manifest = {"version": 1, "models": exported}
    (folder / MANIFEST_NAME).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    return transfers


def import_models(storage_root: Path, folder: Path, *, report: Report = lambda _line: None) -> list[FileTransfer]:
    """Copy into `storage_root` every catalog model whose files `folder` holds, each verified before it lands."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ExchangeError(f"{folder} is not a folder; give the folder 'imageforge models export' wrote.")
    measured = _manifest_hashes(folder)
    make_private_folder(Path(storage_root))
    transfers: list[FileTransfer] = []
    for entry in load_catalog(storage_root=storage_root).models:
        sources = [(model_file, folder / entry.directory / model_file.path) for model_file in entry.files]
        if not any(source.is_file() for _file, source in sources):
            continue
        for model_file, source in sources:
            destination = file_path(storage_root, entry, model_file)
            if not source.is_file():
                transfer = FileTransfer(entry.key, model_file.path, TransferState.MISSING, "not in the folder")
            elif verify_file(storage_root, entry, model_file).ready:
                transfer = FileTransfer(entry.key, model_file.path, TransferState.ALREADY_THERE)
            else:
                expected = model_file.sha256 or measured.get((entry.directory, model_file.path))
                make_private_folder(destination.parent)
                transfer, sha256 = _copy_verified(entry, model_file, source, destination, expected)
                if transfer.state is TransferState.COPIED:
                    remember_hash(storage_root, destination, sha256)
            transfers.append(transfer)
            report(transfer.line)
    return transfers


def _copy_verified(
    entry: ModelEntry, model_file: ModelFile, source: Path, destination: Path, sha256: str | None
) -> tuple[FileTransfer, str]:
    """Copy `source` to `destination` through `<name>.part`, keeping it only with the declared size and hash."""
    size = source.stat().st_size
    if model_file.size is not None and size != model_file.size:
        detail = f"{size} bytes, the catalog says {model_file.size}"
        return FileTransfer(entry.key, model_file.path, TransferState.DAMAGED, detail), ""
    if destination.is_file() and destination.stat().st_size == size and sha256 and sha256_of(destination) == sha256:
        return FileTransfer(entry.key, model_file.path, TransferState.ALREADY_THERE), sha256
    destination.parent.mkdir(parents=True, exist_ok=True)
    partial = part_path(destination)
    digest = hashlib.sha256()
    try:
        with source.open("rb") as reading, partial.open("wb") as writing:
            while chunk := reading.read(CHUNK):
                digest.update(chunk)
                writing.write(chunk)
            writing.flush()
            os.fsync(writing.fileno())
        measured = digest.hexdigest()
        if sha256 and measured != sha256:
            detail = f"SHA-256 {measured[:12]}…, the catalog says {sha256[:12]}…"
            return FileTransfer(entry.key, model_file.path, TransferState.DAMAGED, detail), measured
        os.replace(partial, destination)
    finally:
        partial.unlink(missing_ok=True)
    return FileTransfer(entry.key, model_file.path, TransferState.COPIED, f"{size / 1e6:.1f} MB"), measured


def _manifest_hashes(folder: Path) -> dict[tuple[str, str], str]:
    """(directory, path) -> SHA-256 measured by the exporting machine, for files the catalog gives no hash."""
    try:
        manifest = json.loads((folder / MANIFEST_NAME).read_text(encoding="utf-8"))
        return {
            (str(model["directory"]), str(item["path"])): str(item["sha256"])
            for model in manifest["models"]
            for item in model["files"]
        }
    except (OSError, ValueError, KeyError, TypeError):
        return {}
