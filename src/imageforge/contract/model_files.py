"""Where model files live (`<storage>/models/<directory>/<path>`) and whether they are ready: one reader for the
job server, the CLI (`imageforge models list/verify`) and the add-on's Models panel.

A file is ready when it exists with the declared size and SHA-256. Hashing hundreds of megabytes on every
readiness check would make each job start slowly, so the result is cached per file in
`<storage>/models/.verified.json` as (size, mtime, ctime, SHA-256): an unchanged file is trusted, and any
change of size, modification time or inode change time sends it back through the full hash. The ctime
catches a file damaged in place whose mtime was put back (copy tools, `touch -r`): nobody can set it.
A full verification (`use_cache=False`, `imageforge models verify`) that finds a wrong hash drops the
record's size and times, so the file stays "damaged" for every later check until it is fetched again.

The job server and the CLI may update the cache at the same moment: each update reads, changes and replaces
the file while holding `.verified.json.lock` (contract/file_lock.py), so neither loses the other's record,
and readers see the old file or the new one, never half of one. The cache only saves time: on a read-only
storage root, or a full disk, it is simply not written (and its temporary file never left behind);
readiness is then measured each time.

Files whose catalog entry declares no SHA-256 are ready when they exist (with the declared size, if any);
once downloaded, the hash measured while fetching is remembered, so later changes are still caught.

Only complete, verified files are ever renamed into place (downloads write `<name>.part`), so a reader
that runs while a download is in progress never mistakes a partial file for a ready one.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from .catalog import ModelEntry, ModelFile
from .file_lock import exclusive_file_lock

CACHE_NAME = ".verified.json"
CACHE_LOCK_NAME = ".verified.json.lock"
PART_SUFFIX = ".part"
HASH_CHUNK = 4 * 1024 * 1024
_cache_lock = threading.Lock()  # this process's threads; the lock file serialises processes


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
    partial_bytes: int = 0  # size of `<name>.part` when a download was interrupted

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

    @property
    def partial_bytes(self) -> int:
        return sum(status.partial_bytes for status in self.files)

    @property
    def summary(self) -> str:
        """One word or two for lists: ready, damaged, partial 38%, not downloaded."""
        if self.ready:
            return "ready"
        if any(status.state in (FileState.WRONG_SIZE, FileState.WRONG_HASH) for status in self.files):
            return "damaged"
        size = self.entry.declared_size
        if self.partial_bytes and size:
            on_disk = self.partial_bytes + sum(status.file.size or 0 for status in self.files if status.ready)
            return f"partial {on_disk / size:.0%}"
        return "partial" if self.partial_bytes else "not downloaded"


def models_root(storage_root: Path) -> Path:
    return Path(storage_root) / "models"


def file_path(storage_root: Path, entry: ModelEntry, model_file: ModelFile) -> Path:
    return models_root(storage_root) / entry.directory / model_file.path


def part_path(destination: Path) -> Path:
    return destination.with_name(destination.name + PART_SUFFIX)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def files_present(storage_root: Path, entry: ModelEntry) -> bool:
    """Every file of the model exists with its declared size: one stat per file, never a hash (a redraw's check)."""
    for model_file in entry.files:
        try:
            size = file_path(storage_root, entry, model_file).stat().st_size
        except OSError:
            return False
        if model_file.size is not None and size != model_file.size:
            return False
    return True


def verify_file(storage_root: Path, entry: ModelEntry, model_file: ModelFile, *, use_cache: bool = True) -> FileStatus:
    """Check one file; hashes it only when the cache has no record of this exact (size, mtime)."""
    path = file_path(storage_root, entry, model_file)
    partial = _size_or_zero(part_path(path))
    try:
        info = path.stat()
    except OSError:
        return FileStatus(model_file, path, FileState.MISSING, partial)
    if not path.is_file():
        return FileStatus(model_file, path, FileState.MISSING, partial)
    if model_file.size is not None and info.st_size != model_file.size:
        return FileStatus(model_file, path, FileState.WRONG_SIZE, partial)
    key = _cache_key(storage_root, path)
    with _cache_lock:
        cached = _load_cache(storage_root).get(key)
    known = cached.get("sha256") if isinstance(cached, dict) else None
    expected = (model_file.sha256 or known or "").lower()
    if not expected:
        return FileStatus(model_file, path, FileState.READY, partial)  # nothing to compare with
    if use_cache and cached == _record(info, expected):
        return FileStatus(model_file, path, FileState.READY, partial)
    if sha256_of(path) != expected:
        _distrust(storage_root, path, expected)
        return FileStatus(model_file, path, FileState.WRONG_HASH, partial)
    remember_hash(storage_root, path, expected)
    return FileStatus(model_file, path, FileState.READY, partial)


def model_status(storage_root: Path, entry: ModelEntry, *, use_cache: bool = True) -> ModelStatus:
    return ModelStatus(
        entry, tuple(verify_file(storage_root, entry, item, use_cache=use_cache) for item in entry.files)
    )


def remember_hash(storage_root: Path, path: Path, sha256: str) -> None:
    """Record that `path`, as it is now on disk, has this SHA-256 (the caller has just measured it)."""
    record = _record(path.stat(), sha256.lower())
    _update_cache(storage_root, lambda cache: cache.__setitem__(_cache_key(storage_root, path), record))


def known_sha256(storage_root: Path, path: Path) -> str:
    """The SHA-256 of `path` as it is now: from the cache when its record still matches, else measured and kept."""
    info = path.stat()
    with _cache_lock:
        cached = _load_cache(storage_root).get(_cache_key(storage_root, path))
    if isinstance(cached, dict) and cached.get("sha256") and cached == _record(info, str(cached["sha256"])):
        return str(cached["sha256"])
    digest = sha256_of(path)
    known = cached.get("sha256") if isinstance(cached, dict) else None
    if known in (None, digest):  # a record that expects another hash marks the file damaged: keep it so
        remember_hash(storage_root, path, digest)
    return digest


def forget_hash(storage_root: Path, path: Path) -> None:
    """Drop the cache record of `path` (its file is being deleted to be fetched again)."""
    _update_cache(storage_root, lambda cache: cache.pop(_cache_key(storage_root, path), None))


def _distrust(storage_root: Path, path: Path, sha256: str) -> None:
    """Keep only the expected hash of a file found damaged: no (size, times) of it will ever match again."""
    _update_cache(storage_root, lambda cache: cache.__setitem__(_cache_key(storage_root, path), {"sha256": sha256}))


def _record(info: os.stat_result, sha256: str) -> dict[str, Any]:
    record: dict[str, Any] = {"size": info.st_size, "mtime_ns": info.st_mtime_ns, "sha256": sha256}
    if os.name != "nt":  # on Windows st_ctime is the creation time, which an in-place change keeps
        record["ctime_ns"] = info.st_ctime_ns
    return record


def _cache_key(storage_root: Path, path: Path) -> str:
    return path.relative_to(models_root(storage_root)).as_posix()


def _size_or_zero(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _load_cache(storage_root: Path) -> dict[str, Any]:
    try:
        value = json.loads((models_root(storage_root) / CACHE_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _update_cache(storage_root: Path, change: Callable[[dict[str, Any]], object]) -> None:
    """Read, change and replace the cache while holding its lock (this process's threads and other processes);
    written only when the change changed it. A root that cannot be written keeps the old cache."""
    root = models_root(storage_root)
    with _cache_lock, contextlib.ExitStack() as held:
        try:
            root.mkdir(parents=True, exist_ok=True)
            held.enter_context(exclusive_file_lock(root / CACHE_LOCK_NAME))
        except OSError:
            return  # read-only or full: the cache only saves time
        cache = _load_cache(storage_root)
        before = json.dumps(cache, sort_keys=True)
        change(cache)
        if json.dumps(cache, sort_keys=True) != before:
            _save_cache(root, cache)


def _save_cache(root: Path, cache: dict[str, Any]) -> None:
    """Write-then-rename, so a reader in another process never sees half a cache (a lost record only costs a hash).

    A root that cannot be written (read-only, full) keeps the old cache and no temporary file.
    """
    temporary = root / f"{CACHE_NAME}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with open(descriptor, "w", encoding="utf-8") as stream:
            stream.write(json.dumps(cache, indent=1, sort_keys=True))
        os.replace(temporary, root / CACHE_NAME)
    except OSError:
        with contextlib.suppress(OSError):
            temporary.unlink(missing_ok=True)
