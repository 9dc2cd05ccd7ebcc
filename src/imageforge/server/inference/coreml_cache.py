"""CoreML's compiled-model cache under `<storage>/cache/coreml`, one folder per model and configuration.

CoreML compiles a model for seconds to minutes; `ModelCacheDirectory` keeps the result. ONNX Runtime never
notices that the model behind a cache changed, so the folder name carries a hash of everything that shapes
the compiled model: the model file(s), the provider options, the free-dimension overrides and the ONNX
Runtime version. A model keeps one folder: when its key changes (new download, new options, ORT upgrade),
the old folders are pruned so stale compilations neither load nor pile up.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from ...contract.model_files import sha256_of

CACHE_FOLDER = Path("cache") / "coreml"
KEY_FILE = "key.json"

_digests: dict[tuple[str, int, int], str] = {}
_digests_lock = threading.Lock()


def file_digest(path: Path) -> str:
    """SHA-256 of a model file, remembered per (path, size, mtime) so a reload does not rehash a gigabyte."""
    info = path.stat()
    memo_key = (str(path.resolve()), info.st_size, info.st_mtime_ns)
    with _digests_lock:
        known = _digests.get(memo_key)
    if known is None:
        known = sha256_of(path)
        with _digests_lock:
            _digests[memo_key] = known
    return known


def cache_key(
    files: Sequence[Path],
    provider_options: Mapping[str, str],
    free_dimensions: Mapping[str, int],
    ort_version: str,
) -> str:
    description = {
        "files": [file_digest(Path(path)) for path in files],
        "provider_options": {str(name): str(value) for name, value in sorted(provider_options.items())},
        "free_dimensions": {str(name): int(value) for name, value in sorted(free_dimensions.items())},
        "onnxruntime": ort_version,
    }
    return hashlib.sha256(json.dumps(description, sort_keys=True).encode("utf-8")).hexdigest()


class CoreMLCache:
    """Hands out the cache folder for one model configuration and removes the ones that went stale."""

    def __init__(self, storage_root: Path) -> None:
        self.root = Path(storage_root) / CACHE_FOLDER

    def folder_for(
        self,
        model: str,
        files: Sequence[Path],
        provider_options: Mapping[str, str],
        free_dimensions: Mapping[str, int],
        ort_version: str,
    ) -> Path:
        """The (created) folder for this configuration of `model`; other folders of `model` are pruned."""
        key = cache_key(files, provider_options, free_dimensions, ort_version)
        prefix = f"{_slug(model)}-"
        folder = self.root / f"{prefix}{key[:24]}"
        self.prune(prefix, keep=folder)
        folder.mkdir(parents=True, exist_ok=True)
        record = {"model": model, "key": key, "onnxruntime": ort_version, "files": [str(path) for path in files]}
        (folder / KEY_FILE).write_text(json.dumps(record, indent=1), encoding="utf-8")
        return folder

    def prune(self, prefix: str, *, keep: Path) -> list[Path]:
        removed: list[Path] = []
        if not self.root.is_dir():
            return removed
        for folder in self.root.iterdir():
            if folder.name.startswith(prefix) and folder != keep and _is_key(folder.name[len(prefix) :]):
                shutil.rmtree(folder, ignore_errors=True)
                removed.append(folder)
        return removed

    def clear(self, folder: Path) -> None:
        """Drop one configuration's compiled model (it may be what made session creation fail)."""
        if folder.parent == self.root:
            shutil.rmtree(folder, ignore_errors=True)


def _slug(model: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", model.lower()).strip("-") or "model"


def _is_key(text: str) -> bool:
    """Only folders named `<slug>-<24 hex digits>` are ours: `moge2` must never prune `moge2-vitl`."""
    return re.fullmatch(r"[0-9a-f]{24}", text) is not None
