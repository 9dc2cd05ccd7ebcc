"""Where model files live (`<storage>/models/<directory>/<path>`) and whether they are ready.

A file is ready when it exists with the declared size and SHA-256. Verification results are cached per
file by (size, mtime) in `<storage>/models/.verified.json`, so readiness checks stay cheap.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from ...contract.catalog import ModelEntry, ModelFile

CACHE_NAME = ".verified.json"
_cache_lock = threading.Lock()


class FileState(StrEnum):
    READY = "ready"
    MISSING = "missing"
    WRONG_SIZE = "wrong_size"
    WRONG_HASH = "wrong_hash"


@dataclass(frozen=True)
class FileStatus:
    file: ModelFile
    path: Path
    state: FileState

    @property
    def ready(self) -> bool:
        return self.state is FileState.READY


@dataclass(frozen=True)
class ModelStatus:
    entry: ModelEntry
    files: tuple[FileStatus, ...]

    @property
    def ready(self) -> bool:
        return all(status.ready for status in self.files)


def models_root(storage_root: Path) -> Path:
    return Path(storage_root) / "models"


def file_path(storage_root: Path, entry: ModelEntry, model_file: ModelFile) -> Path:
    return models_root(storage_root) / entry.directory / model_file.path


def sha256_of(path: Path, chunk_size: int = 4 * 1024 * 1024) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(chunk_size):
            digest.update(chunk)
    return digest.hexdigest()


def _load_cache(storage_root: Path) -> dict:
    try:
        value = json.loads((models_root(storage_root) / CACHE_NAME).read_text(encoding="utf-8"))
        return value if isinstance(value, dict) else {}
    except (OSError, ValueError):
        return {}


def _save_cache(storage_root: Path, cache: dict) -> None:
    root = models_root(storage_root)
    root.mkdir(parents=True, exist_ok=True)
    temporary = root / f"{CACHE_NAME}.{os.getpid()}.{threading.get_ident()}.tmp"
    temporary.write_text(json.dumps(cache, indent=1), encoding="utf-8")
    os.replace(temporary, root / CACHE_NAME)


def verify_file(storage_root: Path, entry: ModelEntry, model_file: ModelFile, *, use_cache: bool = True) -> FileStatus:
    path = file_path(storage_root, entry, model_file)
    try:
        info = path.stat()
    except OSError:
        return FileStatus(model_file, path, FileState.MISSING)
    if not path.is_file():
        return FileStatus(model_file, path, FileState.MISSING)
    if model_file.size is not None and info.st_size != model_file.size:
        return FileStatus(model_file, path, FileState.WRONG_SIZE)
    if model_file.sha256 is None:
        return FileStatus(model_file, path, FileState.READY)
    key = str(path.relative_to(models_root(storage_root)))
    fingerprint = [info.st_size, info.st_mtime_ns, model_file.sha256]
    with _cache_lock:
        cached = _load_cache(storage_root).get(key)
    if use_cache and cached == fingerprint:
        return FileStatus(model_file, path, FileState.READY)
    if sha256_of(path) != model_file.sha256.lower():
        return FileStatus(model_file, path, FileState.WRONG_HASH)
    remember_verified(storage_root, path, model_file)
    return FileStatus(model_file, path, FileState.READY)


def remember_verified(storage_root: Path, path: Path, model_file: ModelFile) -> None:
    """Record that `path` (already hashed by the caller) matches its declared SHA-256."""
    if model_file.sha256 is None:
        return
    info = path.stat()
    key = str(path.relative_to(models_root(storage_root)))
    with _cache_lock:
        cache = _load_cache(storage_root)
        cache[key] = [info.st_size, info.st_mtime_ns, model_file.sha256]
        _save_cache(storage_root, cache)


def model_status(storage_root: Path, entry: ModelEntry, *, use_cache: bool = True) -> ModelStatus:
    return ModelStatus(
        entry, tuple(verify_file(storage_root, entry, item, use_cache=use_cache) for item in entry.files)
    )
