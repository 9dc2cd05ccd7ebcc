"""Clips with many groups of pictures for the seeking tests, and MP4/MOV files whose index lies.

The lies are written into the file's sample tables (ISO base media boxes) the way a broken muxer or an edit
would leave them: extra sync samples in `stss` (frames the index calls keyframes that are not), or an edit
list (`elst`) that starts later than the first sample (its leading samples are decoded and thrown away).
The muxer here writes `moov` after `mdat`, so growing a box moves no sample offsets.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from fractions import Fraction
from pathlib import Path

import av
import numpy as np


def grouped_clip(
    path: Path,
    codec: str = "libx264",
    *,
    frames: int = 30,
    options: dict[str, str] | None = None,
    pix_fmt: str = "yuv420p",
    first_pts: int = 0,
    durations: Sequence[int] = (1,),
    time_base: Fraction = Fraction(1, 25),
    size: tuple[int, int] = (32, 24),
) -> Path:
    """A textured clip (a noise field sliding sideways, every frame's corner its own grey, a fresh field every
    11 frames) so that encoders use P- and B-frames and any mix-up of two frames shows. Frame i's timestamp
    is `first_pts` plus the sum of `durations` repeated (variable frame rate when they differ)."""
    width, height = size
    rng = np.random.default_rng(2026)
    field = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
    with av.open(str(path), "w") as container:
        stream = container.add_stream(codec, rate=round(1 / time_base / np.mean(durations)), options=options or {})
        stream.width, stream.height, stream.pix_fmt = width, height, pix_fmt
        stream.codec_context.time_base = time_base
        stream.time_base = time_base
        container.start_encoding()
        pts = first_pts
        for index in range(frames):
            if index and index % 11 == 0:
                field = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
            values = np.roll(field, 2 * index, axis=1)
            values[:4, :4] = (index * 37) % 256
            frame = av.VideoFrame.from_ndarray(values, format="rgb24")
            frame.pts, frame.time_base = pts, time_base
            pts += durations[index % len(durations)]
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    return path


def with_sync_samples(source: Path, target: Path, samples: Sequence[int]) -> Path:
    """A copy of an MP4/MOV whose sync-sample table also names `samples` (1-based, decode order)."""
    data = bytearray(source.read_bytes())
    chain = _box_chain(data, ("moov", "trak", "mdia", "minf", "stbl", "stss"))
    at, size = chain[-1]
    count = struct.unpack(">I", data[at + 12 : at + 16])[0]
    entries = sorted(set(struct.unpack(f">{count}I", data[at + 16 : at + 16 + 4 * count])) | set(samples))
    body = struct.pack(f">I{len(entries)}I", len(entries), *entries)
    grown = 12 + len(body) - size
    data[at + 12 : at + size] = body
    data[at : at + 4] = struct.pack(">I", size + grown)
    for parent, parent_size in chain[:-1]:
        data[parent : parent + 4] = struct.pack(">I", parent_size + grown)
    target.write_bytes(bytes(data))
    return target


def without_sync_samples(source: Path, target: Path) -> Path:
    """A copy whose `stss` is renamed `free`: by the format's rules every sample is then a sync sample."""
    data = bytearray(source.read_bytes())
    at, _ = _box_chain(data, ("moov", "trak", "mdia", "minf", "stbl", "stss"))[-1]
    data[at + 4 : at + 8] = b"free"
    target.write_bytes(bytes(data))
    return target


def with_later_edit(source: Path, target: Path, ticks: int) -> Path:
    """A copy whose edit list starts `ticks` (media time base) later: the samples before are discarded."""
    data = bytearray(source.read_bytes())
    at, _ = _box_chain(data, ("moov", "trak", "edts", "elst"))[-1]
    version = data[at + 8]
    offset, kind = (at + 20, ">i") if version == 0 else (at + 24, ">q")
    width = struct.calcsize(kind)
    (media_time,) = struct.unpack(kind, data[offset : offset + width])
    data[offset : offset + width] = struct.pack(kind, media_time + ticks)
    target.write_bytes(bytes(data))
    return target


def _box_chain(data: bytearray, names: Sequence[str]) -> list[tuple[int, int]]:
    """(offset, size) of each box along `names`, each inside the one before."""
    chain: list[tuple[int, int]] = []
    start, end = 0, len(data)
    for name in names:
        at, size = next((at, size) for at, size, kind in _boxes(data, start, end) if kind == name)
        chain.append((at, size))
        start, end = at + 8, at + size
    return chain


def _boxes(data: bytearray, start: int, end: int) -> Iterator[tuple[int, int, str]]:
    at = start
    while at + 8 <= end:
        size, kind = struct.unpack(">I4s", data[at : at + 8])
        if size == 1:
            size = struct.unpack(">Q", data[at + 8 : at + 16])[0]
        size = size or end - at
        yield at, size, kind.decode("latin-1")
        at += size
