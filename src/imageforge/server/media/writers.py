"""Result writers: PNG (8/16-bit grey, RGB, RGBA), JSON and NPZ, each atomic (see atomic.py).

8-bit PNGs go through Pillow. 16-bit PNGs go through FFmpeg's PNG encoder (PyAV), because Pillow can only
write 16-bit greyscale and would silently truncate 16-bit colour to 8 bits. Both use zlib level 3: about
3.5× faster than the default 6 for ~10% larger files, and a result is written once and read once.
Float EXR writing lives in exr.py.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import av
import numpy as np
from PIL import Image as PILImage

from .atomic import atomic_file
from .image import to_integers

_PNG_LEVEL = 3
_PYAV_PNG_FORMATS = {1: ("gray16le", "gray16be"), 3: ("rgb48le", "rgb48be"), 4: ("rgba64le", "rgba64be")}


def write_png(path: Path, pixels: np.ndarray, *, bits: int = 8) -> Path:
    """Atomically write [0, 1] floats as a PNG; returns `path`.

    `pixels` is (H, W) or (H, W, 1) for a single channel (mattes), (H, W, 3) RGB or (H, W, 4) straight RGBA;
    values are clipped to [0, 1] and rounded to the nearest 8- or 16-bit code value.
    """
    with atomic_file(Path(path)) as temporary:
        encode_png(temporary, pixels, bits=bits)
    return Path(path)


def encode_png(path: Path, pixels: np.ndarray, *, bits: int = 8) -> None:
    """Write a PNG directly (non-atomic): for files inside an already atomic folder (PNG sequences)."""
    values = np.asarray(pixels)
    if values.ndim == 3 and values.shape[2] == 1:
        values = values[..., 0]
    channels = 1 if values.ndim == 2 else values.shape[2]
    if values.ndim not in (2, 3) or channels not in (1, 3, 4) or 0 in values.shape[:2]:
        raise ValueError(f"PNG pixels must be (H, W), (H, W, 1|3|4), got {values.shape}")
    quantised = to_integers(values, bits)
    if bits == 8:
        PILImage.fromarray(np.ascontiguousarray(quantised)).save(path, format="PNG", compress_level=_PNG_LEVEL)
        return
    native, big_endian = _PYAV_PNG_FORMATS[channels]
    frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(quantised), format=native).reformat(format=big_endian)
    encoder = av.CodecContext.create("png", "w")
    encoder.width, encoder.height, encoder.pix_fmt = frame.width, frame.height, big_endian
    encoder.options = {"pred": "paeth", "compression_level": str(_PNG_LEVEL)}
    packets = encoder.encode(frame) + encoder.encode(None)
    with open(path, "wb") as handle:
        for packet in packets:
            handle.write(bytes(packet))


def write_json(path: Path, data: Any) -> Path:
    """Atomically write JSON (UTF-8, indented); NaN or infinity is a bug and raises ValueError."""
    text = json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False)
    with atomic_file(Path(path)) as temporary:
        temporary.write_text(text + "\n", encoding="utf-8")
    return Path(path)


def write_npz(path: Path, arrays: Mapping[str, np.ndarray], *, compressed: bool = True) -> Path:
    """Atomically write named arrays to a .npz (compressed by default); returns `path`."""
    save = np.savez_compressed if compressed else np.savez
    with atomic_file(Path(path)) as temporary, open(temporary, "wb") as handle:
        save(handle, **{name: np.asarray(array) for name, array in arrays.items()})
    return Path(path)
