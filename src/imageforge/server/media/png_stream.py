"""The one PNG encoder: every PNG result (stills, mattes, normals, sequence frames, band-wise upscales).

One policy for every PNG the server writes: 8- or 16-bit grey, grey+alpha, RGB or straight RGBA, [0, 1]
floats clipped and rounded to the nearest code value, the Sub filter on every row and zlib level 1.
`write_png(path, pixels, bits=)` writes a whole image; `PngStreamWriter` takes rows top to bottom for
results too large to hold (an upscale to 16384² is 1–2 GiB as integers): it quantises and filters them a
chunk at a time and streams them through one zlib stream into IDAT chunks, so memory stays bounded by a
band (FFmpeg's PNG encoder, used before for 16-bit colour, rejects frames above about 16000² pixels;
Pillow cannot write 16-bit colour at all). Atomic like every writer: the file appears under its name only
when the last row is written.

Speed over size: the Sub filter (one vectorised subtraction) and zlib level 1 encode a 2048² RGBA image in
~0.25 s here, against ~1 s for Pillow at level 3 with adaptive filters and ~0.7 s for vectorised Paeth at
level 3, for files within 1–5% of either on photographs. A job's result is written once and read once.
"""

from __future__ import annotations

import struct
import sys
import zlib
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from types import TracebackType

import numpy as np

from .atomic import atomic_file
from .image import to_integers
from .metadata import NONE, StillMetadata

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_COLOUR_TYPES = {1: 0, 2: 4, 3: 2, 4: 6}  # channels → PNG colour type (grey, grey+alpha, RGB, RGBA)
_LEVEL = 1
_CHUNK_ROWS = 64  # rows quantised and filtered at a time (bounds the temporaries)
_SUB = 1


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def _metadata_chunks(metadata: StillMetadata) -> bytes:
    """iCCP (the source's colour profile, zlib-compressed) and eXIf (its EXIF block), before the image data."""
    chunks = b""
    if metadata.icc_profile:
        chunks += _chunk(b"iCCP", b"ICC Profile\x00\x00" + zlib.compress(metadata.icc_profile))
    if metadata.exif:
        chunks += _chunk(b"eXIf", metadata.exif)
    return chunks


def sub_filter(rows: np.ndarray, bpp: int) -> np.ndarray:
    """PNG filter type 1 for byte rows [h, stride]: each byte minus the same channel of the pixel to its left."""
    filtered = rows.copy()
    filtered[:, bpp:] -= rows[:, :-bpp]  # uint8 arithmetic wraps modulo 256, as the filter requires
    return filtered


class PngStreamWriter:
    """with PngStreamWriter(path, width, height, channels=4, bits=16) as png: png.write(rows) ...

    `write` takes the next rows, [h, width, channels] floats in [0, 1] (clipped and rounded to the nearest
    code value, as write_png does) or already-quantised uint8/uint16 values of the writer's depth.
    """

    def __init__(
        self, path: Path, width: int, height: int, *, channels: int, bits: int = 8, metadata: StillMetadata = NONE
    ):
        if channels not in _COLOUR_TYPES or bits not in (8, 16) or width < 1 or height < 1:
            raise ValueError(f"cannot write a {width}×{height} PNG of {channels} channels at {bits} bits")
        self.path = Path(path)
        self.width, self.height, self.channels, self.bits = width, height, channels, bits
        self.rows_written = 0
        self._stack = ExitStack()
        self._bpp = channels * bits // 8
        self._compressor = zlib.compressobj(_LEVEL)
        self.metadata = metadata

    def __enter__(self) -> PngStreamWriter:
        temporary = self._stack.enter_context(atomic_file(self.path))
        try:
            self._file = self._stack.enter_context(open(temporary, "wb"))
            header = struct.pack(">IIBBBBB", self.width, self.height, self.bits, _COLOUR_TYPES[self.channels], 0, 0, 0)
            self._file.write(_SIGNATURE + _chunk(b"IHDR", header) + _metadata_chunks(self.metadata))
        except BaseException:
            self._stack.close()
            raise
        return self

    def write(self, rows: np.ndarray) -> None:
        values = np.asarray(rows)
        if values.ndim == 2:
            values = values[..., None]
        if values.shape[1:] != (self.width, self.channels):
            raise ValueError(f"rows must be [h, {self.width}, {self.channels}], got {list(values.shape)}")
        if self.rows_written + values.shape[0] > self.height:
            raise ValueError(f"more than {self.height} rows were written")
        for start in range(0, values.shape[0], _CHUNK_ROWS):
            self._encode(values[start : start + _CHUNK_ROWS])

    def _encode(self, values: np.ndarray) -> None:
        dtype = np.uint8 if self.bits == 8 else np.uint16
        quantised = values if values.dtype == dtype else to_integers(values, self.bits)
        if self.bits == 16:
            quantised = quantised.astype(">u2", copy=False)
        data = np.ascontiguousarray(quantised).view(np.uint8).reshape(values.shape[0], -1)
        lines = np.empty((data.shape[0], data.shape[1] + 1), dtype=np.uint8)
        lines[:, 0] = _SUB
        lines[:, 1:] = sub_filter(data, self._bpp)
        self._idat(self._compressor.compress(lines.tobytes()))
        self.rows_written += values.shape[0]

    def _idat(self, data: bytes) -> None:
        if data:
            self._file.write(_chunk(b"IDAT", data))

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> bool:
        if kind is None:
            try:
                if self.rows_written != self.height:
                    raise ValueError(f"{self.path.name}: {self.rows_written} of {self.height} rows were written")
                self._idat(self._compressor.flush())
                self._file.write(_chunk(b"IEND", b""))
            except BaseException:
                self._stack.__exit__(*sys.exc_info())
                raise
        return bool(self._stack.__exit__(kind, error, trace))


def write_png(path: Path, pixels: np.ndarray, *, bits: int = 8) -> Path:
    """Atomically write a whole image, (H, W) or (H, W, 1|2|3|4) [0, 1] floats, as a PNG; returns `path`."""
    values = np.asarray(pixels)
    values = values[..., None] if values.ndim == 2 else values
    if values.ndim != 3 or values.shape[2] not in _COLOUR_TYPES or 0 in values.shape[:2]:
        raise ValueError(f"PNG pixels must be (H, W) or (H, W, 1|2|3|4), got {values.shape}")
    height, width, channels = values.shape
    with PngStreamWriter(path, width, height, channels=channels, bits=bits) as png:
        png.write(values)
    return Path(path)


BAND_PIXELS = 1 << 22  # pixels a composed band holds (64 MiB as float32 RGBA)


def write_png_bands(
    path: Path,
    size: tuple[int, int],
    rows: Callable[[int, int], np.ndarray],
    *,
    channels: int,
    bits: int = 8,
    metadata: StillMetadata = NONE,
) -> Path:
    """Atomically write a PNG of `size` (width, height) whose rows `rows(top, bottom)` composes band by band,
    carrying `metadata` (a source's colour profile and EXIF) when given.

    For results assembled from full-size parts (colour beside a matte, a normal map sampled from a smaller
    one): concatenating them whole first would hold another full-size float copy (4 GiB at 16384² RGBA).
    """
    width, height = size
    band = max(1, BAND_PIXELS // width)
    with PngStreamWriter(path, width, height, channels=channels, bits=bits, metadata=metadata) as png:
        for top in range(0, height, band):
            png.write(rows(top, min(height, top + band)))
    return Path(path)
