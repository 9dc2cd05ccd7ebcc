"""Is this PNG whole? A standard-library check, for the CLI (which has no image decoder) and the server alike.

`imageforge run --into` skips a frame that is already in the folder only when the file is a complete PNG, and
assemble-frames refuses one that is not (Pillow decodes a PNG whose last bytes are gone without a word):
the signature, every chunk's CRC, IHDR first and IEND last with nothing after it, and the image data
inflating to exactly the bytes its header promises (a file cut short anywhere, or one whose bytes were
damaged, fails). It reads the file once and inflates it in pieces, never holding the decoded image.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

SIGNATURE = b"\x89PNG\r\n\x1a\n"
_CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}  # by colour type
_PIECE = 1 << 20


def png_is_complete(path: Path) -> bool:
    """True when `path` is a whole, undamaged PNG; False for anything else (missing, truncated, not a PNG)."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return False
    return _complete(data)


def _complete(data: bytes) -> bool:
    if not data.startswith(SIGNATURE):
        return False
    offset, expected, interlaced = len(SIGNATURE), -1, False
    inflater = zlib.decompressobj()
    inflated = 0
    first = True
    while offset + 12 <= len(data):
        length, kind = struct.unpack(">I4s", data[offset : offset + 8])
        end = offset + 8 + length
        if end + 4 > len(data):
            return False  # cut short inside a chunk
        body = data[offset + 8 : end]
        (crc,) = struct.unpack(">I", data[end : end + 4])
        if zlib.crc32(kind + body) != crc:
            return False
        if first:
            if kind != b"IHDR" or length != 13:
                return False
            expected, interlaced = _image_bytes(body)
            if expected < 0:
                return False
            first = False
        elif kind == b"IDAT":
            try:
                for start in range(0, len(body), _PIECE):
                    inflated += len(inflater.decompress(body[start : start + _PIECE]))
            except zlib.error:
                return False
        elif kind == b"IEND":
            whole = inflater.eof and not inflater.unconsumed_tail
            return end + 4 == len(data) and whole and (interlaced or inflated == expected)
        offset = end + 4
    return False


def _image_bytes(header: bytes) -> tuple[int, bool]:
    """(bytes the image data inflates to, interlaced) from IHDR; -1 for a header no PNG can have."""
    width, height, depth, colour, _compression, _filter, interlace = struct.unpack(">IIBBBBB", header)
    channels = _CHANNELS.get(colour)
    if channels is None or width == 0 or height == 0 or depth not in (1, 2, 4, 8, 16):
        return -1, False
    row = (width * channels * depth + 7) // 8
    return height * (1 + row), interlace == 1


__all__ = ["png_is_complete"]
