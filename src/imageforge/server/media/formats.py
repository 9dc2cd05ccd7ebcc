"""What ImageForge accepts as input, and the size limit that protects the server from decompression bombs.

The file extension decides the class of input (still, video) so that error messages can say what was
expected; the file's content then decides the decoder (a PNG saved as .jpg still opens).
"""

from __future__ import annotations

from pathlib import Path

from ...contract.errors import InputError, ResourceExhaustedError

STILL_EXTENSIONS: dict[str, str] = {
    ".png": "PNG",
    ".jpg": "JPEG",
    ".jpeg": "JPEG",
    ".webp": "WebP",
    ".tif": "TIFF",
    ".tiff": "TIFF",
    ".bmp": "BMP",
    ".tga": "TGA",
    ".gif": "GIF",
    ".exr": "OpenEXR",
    ".hdr": "Radiance HDR",
}
VIDEO_EXTENSIONS: dict[str, str] = {".mp4": "MP4", ".m4v": "MP4", ".mov": "MOV", ".mkv": "MKV", ".webm": "WebM"}

# 16384 × 16384: larger than any texture Blender users paint with, small enough that the float32 RGBA
# copy (4 GiB) still fits next to a model. A header claiming more is refused before any pixel is decoded.
MAX_PIXELS = 16384 * 16384


def supported_formats() -> str:
    """The human list used in every 'unsupported format' message."""
    stills = ", ".join(dict.fromkeys(STILL_EXTENSIONS.values()))
    videos = ", ".join(dict.fromkeys(VIDEO_EXTENSIONS.values()))
    return f"{stills} images, {videos} videos, or a folder/numbered pattern of images"


def unsupported(path: Path) -> InputError:
    kind = path.suffix or "with no extension"
    return InputError(f"'{path.name}' is not a supported file type ({kind}); use {supported_formats()}.")


def check_dimensions(path: Path, width: int, height: int) -> None:
    """Refuse empty images and images too large to decode safely, before decoding them."""
    if width <= 0 or height <= 0:
        raise InputError(f"'{path.name}' has no pixels (its width or height is zero); re-export the image.")
    if width * height > MAX_PIXELS:
        raise ResourceExhaustedError(
            f"'{path.name}' is {width} × {height} pixels, more than the {MAX_PIXELS // 1_000_000} megapixel "
            f"limit (16384 × 16384); scale it down in an image editor first."
        )


def empty(path: Path) -> InputError:
    return InputError(f"'{path.name}' is empty (0 bytes); it may not have finished saving.")


def corrupt(path: Path, reason: str = "") -> InputError:
    """A damaged-file error; `reason` is a short phrase of ours (library messages go to the chained cause)."""
    because = f" ({reason})" if reason else ""
    return InputError(
        f"'{path.name}' is damaged or incomplete and cannot be read{because}; re-export or re-download it."
    )
