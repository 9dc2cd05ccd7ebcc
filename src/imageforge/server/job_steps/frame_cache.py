"""Resume for video and sequence jobs: finished frames kept outside the job folder so a re-run reuses them.

A job folder is new for every submission and is emptied when a job fails or is cancelled, so frames that
must survive a cancel live in `<storage>/frame-cache/<key>/`, where `key` is a SHA-256 of

- the job id and every parameter that changes pixels (not `device`, `sequence_output` or the frame range),
- the input: its resolved path, device and inode, size, modification and change time (for a sequence, every
  frame file's); the change time is the one a copy or `touch -r` cannot set back,
- the model: its catalog key and each file's declared SHA-256 (or, without one, the same stat identity).

Each frame is stored after the model ran on it, as `<index>.npz`: the [0, 1] pixels quantised to the result's own
depth (8 or 16 bits: the codes the PNG or video gets), deflated at level 1 (numpy's default level saves a few % for
several times the time: docs/benchmarks.md, "Frame cache"), written atomically, with the SHA-256 of the decoded
input frame they were computed from (`FrameKey`). A re-run of the same job on the same input with the same settings
decodes the frame, hashes its pixels, and reuses the stored result only when that hash matches: the stat key says
where to look, the pixels prove it is the same picture (a file rewritten in place where the change time and file id
survive, as Windows' creation time does, or a decoder that now decodes differently). The first frame whose hash
differs discards the whole cache, so frames of two inputs are never mixed; the job says so in its log. The hash is
small next to the model's time per frame (docs/benchmarks.md, "Frame cache"). A reused frame lands on exactly the
code values a fresh one does: both are quantised to the result's depth.

A full disk never fails the job for its cache: the cache deletes its frames and the run goes on without it, with
a warning in the job log. Retention: a cache is deleted as soon as its job has written its result (the result is
in the job folder then), and every cache not used for `MAX_AGE_DAYS` is deleted when the next video or sequence
job starts. A cancelled or failed job's frames therefore wait a week for a re-run.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import time
import zipfile
from dataclasses import asdict, dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

import numpy as np

from ...contract.byte_counts import format_bytes
from ...contract.catalog import ModelEntry
from ...contract.errors import DiskFullError, free_bytes, is_disk_full
from ...contract.model_files import file_path
from ..media import Frame, Image, MediaSource, to_integers
from ..media.atomic import atomic_file

CACHE_FOLDER = "frame-cache"
MAX_AGE_DAYS = 7.0
FORMAT = 3  # bump when what a cached frame means changes (2: the input frame's hash; 3: codes at the result depth)
NOT_PIXEL_PARAMETERS = frozenset({"input", "device", "sequence_output", "first_frame", "frame_count"})
_DEFLATE_LEVEL = 1  # numpy's savez_compressed deflates at 6: 3-4x the time for a few % smaller frames


@dataclass(frozen=True)
class FrameKey:
    """Which frame, and the SHA-256 of the decoded picture its result is computed from."""

    index: int
    input_sha256: bytes


def frame_key(frame: Frame) -> FrameKey:
    return FrameKey(frame.index, input_digest(frame.image))


def input_digest(image: Image) -> bytes:
    """SHA-256 of a decoded image: its float32 pixels, their shape, and how the source stored them."""
    pixels = np.ascontiguousarray(image.pixels)
    digest = hashlib.sha256(f"{pixels.shape}|{image.sample_kind.value}|{image.alpha_mode.value}|".encode())
    digest.update(pixels.data)
    return digest.digest()


@dataclass
class FrameCache:
    directory: Path
    stale_frames: int = field(default=0, init=False)  # frames discarded because their input changed
    full: bool = field(default=False, init=False)  # its disk filled up: no more frames are kept this run

    def _path(self, index: int) -> Path:
        return self.directory / f"{index:06d}.npz"

    def get(self, key: FrameKey) -> np.ndarray | None:
        """The stored result of frame `key.index` as float32 [0, 1] when it was computed from the same input
        picture, else None. A damaged file counts as missing; a result of another picture discards the cache."""
        path = self._path(key.index)
        if self.full or not path.is_file():
            return None
        try:
            with np.load(path) as stored:
                source = stored["input_sha256"].tobytes()
                codes = stored["pixels"]
                pixels: np.ndarray = codes.astype(np.float32) / np.float32(np.iinfo(codes.dtype).max)
        except (OSError, ValueError, KeyError, EOFError):
            path.unlink(missing_ok=True)
            return None
        if source != key.input_sha256:
            self.stale_frames += self._discard_frames()
            return None
        return pixels

    def put(self, key: FrameKey, pixels: np.ndarray, *, bits: int = 16) -> str | None:
        """Keep frame `key.index`'s result at the result's depth (`bits` 8 or 16). On a full disk the cache gives
        up for this run: its frames are deleted (they free the space the job's own result needs) and the one
        warning to show is returned."""
        if self.full:
            return None
        codes = to_integers(pixels, bits)
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=_DEFLATE_LEVEL) as stored:
            for name, array in (("pixels", codes), ("input_sha256", np.frombuffer(key.input_sha256, np.uint8))):
                with stored.open(f"{name}.npy", "w", force_zip64=True) as member:
                    np.save(member, np.ascontiguousarray(array), allow_pickle=False)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            with atomic_file(self._path(key.index)) as temporary:
                temporary.write_bytes(buffer.getvalue())
        except (OSError, DiskFullError) as error:  # atomic_file says DiskFullError; mkdir a plain OSError
            if not isinstance(error, DiskFullError) and not is_disk_full(error):
                raise
            self.full = True
            free = free_bytes(self.directory)  # before the frames go: what the disk had left when it ran out
            self.discard()
            room = f" ({format_bytes(free)} free)" if free is not None else ""
            return (
                f"The disk holding the frame cache ({self.directory.parent}) is full{room}: this run goes on without "
                f"keeping finished frames ({format_bytes(len(buffer.getvalue()))} a frame), so a cancel now cannot "
                "resume where it stopped."
            )
        return None

    def discard(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)

    def _discard_frames(self) -> int:
        count = sum(1 for path in self.directory.glob("*.npz"))
        self.discard()
        return count


def open_frame_cache(storage_root: Path, job: str, params: Any, source: MediaSource, model: ModelEntry) -> FrameCache:
    """The cache of this job, input, settings and model; prunes caches unused for `MAX_AGE_DAYS` first."""
    root = Path(storage_root) / CACHE_FOLDER
    prune(root)
    digest = hashlib.sha256(
        json.dumps(
            {
                "format": FORMAT,
                "job": job,
                "parameters": pixel_parameters(params),
                "input": input_fingerprint(source),
                "model": model_fingerprint(storage_root, model),
            },
            sort_keys=True,
        ).encode("utf-8")
    ).hexdigest()
    directory = root / digest[:32]
    if directory.is_dir():
        os.utime(directory)  # used now: retention counts from the last use
    return FrameCache(directory)


def pixel_parameters(params: Any) -> dict[str, Any]:
    return {
        name: value.value if isinstance(value, Enum) else value
        for name, value in asdict(params).items()
        if name not in NOT_PIXEL_PARAMETERS
    }


def input_fingerprint(source: MediaSource) -> list[list[Any]]:
    files = list(source.sequence.files) if source.sequence is not None else [source.path]
    return [_stat_entry(path) for path in files]


def model_fingerprint(storage_root: Path, model: ModelEntry) -> list[Any]:
    files = []
    for item in model.files:
        files.append([item.path, item.sha256] if item.sha256 else _stat_entry(file_path(storage_root, model, item)))
    return [model.key, files]


def _stat_entry(path: Path) -> list[Any]:
    """What names one file's current contents without reading it; `st_ctime_ns` changes with every write and
    cannot be set back, unlike the modification time a copy or `touch -r` restores."""
    resolved = Path(path).resolve()
    info = resolved.stat()
    return [str(resolved), info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns]


def prune(root: Path, *, now: float | None = None) -> list[Path]:
    """Delete caches whose folder was last used more than `MAX_AGE_DAYS` ago; returns what went."""
    if not root.is_dir():
        return []
    limit = (time.time() if now is None else now) - MAX_AGE_DAYS * 86400.0
    removed = []
    for entry in root.iterdir():
        try:
            if entry.is_dir() and entry.stat().st_mtime < limit:
                shutil.rmtree(entry, ignore_errors=True)
                removed.append(entry)
        except OSError:
            continue
    return removed
