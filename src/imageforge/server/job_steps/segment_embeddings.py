"""The "segment_embeddings" resource: the last image's SAM 2 embedding, for the clicks that follow its encoding.

One embedding (about 17 MB for Tiny and Small alike) is kept: the image being selected. It is keyed by the SHA-256 of
the image file's bytes, the model's catalog key and the device its encoder really ran on, so a changed image,
another model or another device never gets a stale mask. The adapter that made it stays with it, so a click runs
the same decoder session; when that session has been released meanwhile (another segment model, Unload Models),
the embedding is dropped and the next click asks for a new encoding. `clear()` (Unload Models) drops it.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..models.sam2 import Embedding, Sam2Adapter


@dataclass(frozen=True)
class EmbeddingKey:
    image_sha256: str
    model: str
    device: str


@dataclass(frozen=True)
class Kept:
    key: EmbeddingKey
    embedding: Embedding
    adapter: Sam2Adapter


class SegmentEmbeddings:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: Kept | None = None

    def get(self, key: EmbeddingKey) -> Kept | None:
        """The kept embedding for `key` whose decoder session is still loaded, else None."""
        with self._lock:
            kept = self._kept
            if kept is None or kept.key != key:
                return None
            if not all(handle.loaded for handle in kept.adapter.graphs.values()):
                self._kept = None
                return None
            return kept

    def put(self, key: EmbeddingKey, embedding: Embedding, adapter: Sam2Adapter) -> None:
        with self._lock:
            self._kept = Kept(key, embedding, adapter)

    def clear(self) -> None:
        with self._lock:
            self._kept = None

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            kept = self._kept
        if kept is None:
            return {"kept": None}
        width, height = kept.embedding.size
        return {
            "kept": {
                "image_sha256": kept.key.image_sha256,
                "model": kept.key.model,
                "device": kept.key.device,
                "size": [width, height],
                "bytes": kept.embedding.nbytes,
            }
        }


def content_sha256(path: str | Path) -> str:
    """SHA-256 of a file's bytes: what names an image's embedding."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
