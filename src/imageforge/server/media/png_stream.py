"""Write a PNG band by band, for results too large to hold (an upscale to 16384² is 1–2 GiB as integers).

`write_png` needs the whole image in memory and encodes 16-bit colour through FFmpeg, whose frame-size
limit (about 16000² pixels) rejects the largest upscales. This writer takes rows top to bottom, quantises
and filters them a chunk at a time (Paeth prediction, vectorised: encoding only reads unfiltered
neighbours) and streams them through one zlib stream into IDAT chunks, so memory stays bounded by a band.
Atomic like every writer: the file appears under its name only when the last row is written.
"""

from __future__ import annotations

import struct
import sys
import zlib
from contextlib import ExitStack
from pathlib import Path
from types import TracebackType

import numpy as np

from .atomic import atomic_file
from .image import to_integers

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_COLOUR_TYPES = {1: 0, 2: 4, 3: 2, 4: 6}  # channels → PNG colour type (grey, grey+alpha, RGB, RGBA)
_LEVEL = 3  # as writers.py: ~3.5× faster than zlib's default for ~10% larger files
_CHUNK_ROWS = 64  # rows quantised and filtered at a time (bounds the temporaries)
_PAETH = 4


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def paeth_filter(rows: np.ndarray, previous: np.ndarray, bpp: int) -> np.ndarray:
    """PNG filter type 4 for byte rows [h, stride] given the row above the first (`previous`, [stride])."""
    current = rows.astype(np.int16)
    above = np.concatenate([previous[None].astype(np.int16), current[:-1]])
    left = np.zeros_like(current)
    left[:, bpp:] = current[:, :-bpp]
    upper_left = np.zeros_like(current)
    upper_left[:, bpp:] = above[:, :-bpp]
    pa = np.abs(above - upper_left)
    pb = np.abs(left - upper_left)
    pc = np.abs(left + above - 2 * upper_left)
    predictor = np.where((pa <= pb) & (pa <= pc), left, np.where(pb <= pc, above, upper_left))
    return ((current - predictor) & 0xFF).astype(np.uint8)


class PngStreamWriter:
    """with PngStreamWriter(path, width, height, channels=4, bits=16) as png: png.write(rows) ...

    `write` takes the next rows, [h, width, channels] floats in [0, 1] (clipped and rounded to the nearest
    code value, as write_png does) or already-quantised uint8/uint16 values of the writer's depth.
    """

    def __init__(self, path: Path, width: int, height: int, *, channels: int, bits: int = 8):
        if channels not in _COLOUR_TYPES or bits not in (8, 16) or width < 1 or height < 1:
            raise ValueError(f"cannot write a {width}×{height} PNG of {channels} channels at {bits} bits")
        self.path = Path(path)
        self.width, self.height, self.channels, self.bits = width, height, channels, bits
        self.rows_written = 0
        self._stack = ExitStack()
        self._bpp = channels * bits // 8
        self._previous = np.zeros(width * self._bpp, dtype=np.uint8)
        self._compressor = zlib.compressobj(_LEVEL)

    def __enter__(self) -> PngStreamWriter:
        temporary = self._stack.enter_context(atomic_file(self.path))
        try:
            self._file = self._stack.enter_context(open(temporary, "wb"))
            header = struct.pack(">IIBBBBB", self.width, self.height, self.bits, _COLOUR_TYPES[self.channels], 0, 0, 0)
            self._file.write(_SIGNATURE + _chunk(b"IHDR", header))
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
        filtered = paeth_filter(data, self._previous, self._bpp)
        self._previous = data[-1].copy()
        lines = np.empty((filtered.shape[0], filtered.shape[1] + 1), dtype=np.uint8)
        lines[:, 0] = _PAETH
        lines[:, 1:] = filtered
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
