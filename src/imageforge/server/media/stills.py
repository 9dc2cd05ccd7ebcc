"""Probe and decode still images at the precision the file stores.

Decoder per file (decided from the header alone, before any pixel is decoded):
- Pillow for 8-bit images of every supported format, 16-bit greyscale TIFF and 32-bit float greyscale TIFF.
- PyAV (FFmpeg's decoders) for 16-bit colour PNG/TIFF, because Pillow reduces 16-bit RGB(A) to 8 bits, and
  for Radiance HDR, which Pillow cannot read at all. PyAV gets an open file, not a name: FFmpeg's image
  demuxer would read a literal `%d` in a file name as a frame-number pattern.
- OpenEXR for .exr (see exr.py).
EXIF orientation is deliberately ignored: Blender shows pixels in stored order, and a result must line up
with the image the artist sees in Blender. Colour profiles are ignored for the same reason. Background results
carry both over unchanged (metadata.py), so other viewers show them as they show the source.
"""

from __future__ import annotations

import struct
import warnings
from dataclasses import dataclass
from pathlib import Path

import av
import numpy as np
from PIL import Image as PILImage
from PIL import UnidentifiedImageError
from PIL.TiffImagePlugin import TiffImageFile

from ...contract.errors import InputError, ResourceExhaustedError
from .exr import ExrLayout, probe_exr, read_exr
from .formats import MAX_PIXELS, check_dimensions, corrupt, empty
from .image import Image, SampleKind, from_integers, to_rgb_or_rgba

# Pillow refuses images above twice this with its own DecompressionBombError; our check_dimensions
# refuses above MAX_PIXELS first with a clearer message. This server process owns its Pillow settings.
PILImage.MAX_IMAGE_PIXELS = MAX_PIXELS

DECODE_BAND_PIXELS = 1 << 22  # pixels converted to float at a time (16–64 MiB)
_EXR_MAGIC = b"\x76\x2f\x31\x01"
_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
_ANIMATABLE = {"GIF", "PNG", "WEBP", "AVIF"}
_ALPHA_MODES = {"RGBA", "LA", "La", "RGBa", "PA"}


@dataclass(frozen=True)
class StillInfo:
    """What a still's header says, and which decoder will read it."""

    path: Path
    format: str
    width: int
    height: int
    sample_kind: SampleKind
    has_alpha: bool
    decoder: str  # "pillow" | "pyav" | "openexr"
    exr: ExrLayout | None = None


def probe_still(path: Path) -> StillInfo:
    """Identify a still image from its header; raise one-sentence InputErrors for anything unusable."""
    with open(path, "rb") as handle:
        head = handle.read(64)
    if not head:
        raise empty(path)
    if head.startswith(_EXR_MAGIC):
        layout = probe_exr(path)
        size = (layout.width, layout.height)
        return StillInfo(path, "OpenEXR", *size, SampleKind.FLOAT, layout.has_alpha, "openexr", layout)
    if head.startswith((b"#?RADIANCE", b"#?RGBE")):
        width, height = _probe_with_pyav(path)
        return StillInfo(path, "Radiance HDR", width, height, SampleKind.FLOAT, False, "pyav")
    png = _png_header(head)
    if png is not None:
        check_dimensions(path, png[0], png[1])
    return _probe_with_pillow(path, png)


def _png_header(head: bytes) -> tuple[int, int, int, int] | None:
    """(width, height, bit depth, colour type) from a PNG's IHDR, read directly: Pillow hides the depth."""
    if not head.startswith(_PNG_MAGIC) or len(head) < 26 or head[12:16] != b"IHDR":
        return None
    width, height, bits, colour = struct.unpack(">IIBB", head[16:26])
    return width, height, bits, colour


def _probe_with_pillow(path: Path, png: tuple[int, int, int, int] | None) -> StillInfo:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PILImage.DecompressionBombWarning)
            with PILImage.open(path) as image:
                fmt, mode, size = image.format or "image", image.mode, image.size
                animated = fmt in _ANIMATABLE and bool(getattr(image, "is_animated", False))
                has_alpha = mode in _ALPHA_MODES or "transparency" in image.info
                bits = tuple(image.tag_v2.get(258, (8,))) if isinstance(image, TiffImageFile) else ()
    except PILImage.DecompressionBombError as error:
        raise ResourceExhaustedError(
            f"'{path.name}' is larger than the {MAX_PIXELS // 1_000_000} megapixel limit (16384 × 16384); "
            "scale it down in an image editor first."
        ) from error
    except UnidentifiedImageError as error:
        raise corrupt(path, "not a recognisable image") from error
    except (OSError, SyntaxError, ValueError) as error:
        if isinstance(error, PermissionError):
            raise
        raise corrupt(path) from error
    check_dimensions(path, *size)
    if animated:
        raise InputError(
            f"'{path.name}' is an animated image; export the frame you want as a PNG, "
            "or all frames as a PNG sequence or video, and use that instead."
        )
    kind, decoder = SampleKind.UINT8, "pillow"
    if mode.startswith("I"):
        kind = SampleKind.UINT16
    elif mode == "F":
        kind = SampleKind.FLOAT
    elif (png is not None and png[2] == 16) or (bits and max(bits) > 8):
        kind, decoder = SampleKind.UINT16, "pyav"  # 16-bit colour: Pillow would drop the low byte
    return StillInfo(path, fmt, size[0], size[1], kind, has_alpha, decoder)


def _probe_with_pyav(path: Path) -> tuple[int, int]:
    try:
        with open(path, "rb") as handle, av.open(handle, "r") as container:
            stream = container.streams.video[0]
            width, height = stream.codec_context.width, stream.codec_context.height
    except (av.FFmpegError, IndexError) as error:
        raise corrupt(path) from error
    check_dimensions(path, width, height)
    return width, height


def read_still(info: StillInfo) -> Image:
    """Decode the pixels `probe_still` described, as an Image of the same precision and alpha."""
    path = info.path
    if info.decoder == "openexr":
        return read_exr(path, info.exr)
    pixels = _decode_with_pyav(info) if info.decoder == "pyav" else _decode_with_pillow(info)
    if pixels.shape[:2] != (info.height, info.width):
        raise corrupt(path, "its size changed while reading")
    return Image(to_rgb_or_rgba(pixels), info.sample_kind)


def _decode_with_pillow(info: StillInfo) -> np.ndarray:
    path = info.path
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PILImage.DecompressionBombWarning)
            with PILImage.open(path) as image:
                image.load()
                if info.sample_kind is SampleKind.FLOAT:
                    return np.asarray(image, dtype=np.float32)
                if info.sample_kind is SampleKind.UINT16:
                    values = np.asarray(image)
                    return from_integers(np.clip(values, 0, 65535).astype(np.uint16))
                return _pillow_floats(image, "RGBA" if info.has_alpha else "RGB")
    except PermissionError:
        raise
    except OSError as error:
        reason = "the file is truncated" if "truncated" in str(error) else ""
        raise corrupt(path, reason) from error
    except (SyntaxError, ValueError, UnidentifiedImageError) as error:
        raise corrupt(path) from error


def _pillow_floats(image: PILImage.Image, mode: str) -> np.ndarray:
    """An 8-bit image as float32 code values / 255 in `mode`, converted band by band into one array.

    Converting the whole image first would hold a second full-size copy (another 1 GiB at 16384²) and a
    uint8 array beside the float one; bands keep the extra memory to a few MiB.
    """
    width, height = image.size
    out = np.empty((height, width, len(mode)), dtype=np.float32)
    band = max(1, DECODE_BAND_PIXELS // max(width, 1))
    for top in range(0, height, band):
        bottom = min(height, top + band)
        rows = image.crop((0, top, width, bottom))
        if rows.mode != mode:
            rows = rows.convert(mode)
        from_integers(np.asarray(rows, dtype=np.uint8).reshape(bottom - top, width, len(mode)), out=out[top:bottom])
    return out


def _decode_with_pyav(info: StillInfo) -> np.ndarray:
    path = info.path
    try:
        with open(path, "rb") as handle, av.open(handle, "r") as container:
            for frame in container.decode(video=0):
                if info.sample_kind is SampleKind.FLOAT:
                    return np.asarray(frame.to_ndarray(), dtype=np.float32)  # gbrpf32le arrives as RGB
                target = "rgba64le" if info.has_alpha else "rgb48le"
                return from_integers(frame.to_ndarray(format=target))
    except av.FFmpegError as error:
        raise corrupt(path) from error
    raise corrupt(path, "it contains no image data")
