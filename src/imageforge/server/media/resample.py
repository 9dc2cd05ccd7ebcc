"""High-quality resampling of float images and masks.

Pillow's 32-bit float mode ('F') resamples each channel with its separable Lanczos/bicubic filters at full
float precision, so 16-bit and HDR sources lose nothing to an 8-bit round trip. Colour is resampled
premultiplied by alpha: resizing straight colour lets the (meaningless) colour of transparent pixels bleed
into the edges as dark or bright fringes.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from PIL import Image as PILImage

from ...contract.sizes import fit_long_edge_size
from .image import AlphaMode, Image, SampleKind

__all__ = [
    "fit_long_edge",
    "fit_long_edge_size",
    "resize",
    "resize_bilinear",
    "resize_image",
    "resized_rows",
    "sample_bilinear",
]

BILINEAR_BAND_ROWS = 512  # output rows per gather pass: bounds the temporaries of a 16384² result

RESIZE_BAND_PIXELS = 1 << 22  # output pixels per channel resampled at a time (16 MiB of float32)


def resize(pixels: np.ndarray, size: tuple[int, int], *, lanczos: bool = False) -> np.ndarray:
    """Resample an (H, W) or (H, W, C) float array to (width, height).

    Lanczos when shrinking (sharp, alias-free), bicubic when enlarging (less ringing on masks); `lanczos`
    uses Lanczos both ways (what a model's official pre-processing does, e.g. BEN2's). The result can
    overshoot the input range slightly; callers that need [0, 1] clip.
    """
    width, height = size
    if width < 1 or height < 1:
        raise ValueError(f"Cannot resize to {size}")
    source_height, source_width = pixels.shape[:2]
    if (source_width, source_height) == (width, height):
        return np.asarray(pixels, dtype=np.float32)
    method = PILImage.Resampling.LANCZOS if lanczos else _method((source_width, source_height), size)
    planes = pixels[..., None] if pixels.ndim == 2 else pixels
    out = np.empty((height, width, planes.shape[2]), dtype=np.float32)
    band = max(1, RESIZE_BAND_PIXELS // width)
    for channel in range(planes.shape[2]):
        source = _pillow_plane(planes[..., channel])
        for top in range(0, height, band):
            bottom = min(height, top + band)
            out[top:bottom, :, channel] = _resized_rows(source, (width, height), top, bottom, method)
    return out[..., 0] if pixels.ndim == 2 else out


def resized_rows(pixels: np.ndarray, size: tuple[int, int]) -> Callable[[int, int], np.ndarray]:
    """`rows(top, bottom)`: those rows of `resize(pixels, size)` (equal to ~1e-5), for a small source whose
    resized result is too large to hold whole (a model's 1024² output brought back to a 16384² crop)."""
    source_height, source_width = pixels.shape[:2]
    method = _method((source_width, source_height), size)
    planes = pixels[..., None] if pixels.ndim == 2 else pixels
    sources = [_pillow_plane(planes[..., channel]) for channel in range(planes.shape[2])]

    def rows(top: int, bottom: int) -> np.ndarray:
        out = np.empty((bottom - top, size[0], len(sources)), dtype=np.float32)
        for channel, source in enumerate(sources):
            out[..., channel] = _resized_rows(source, size, top, bottom, method)
        return out[..., 0] if pixels.ndim == 2 else out

    return rows


def _method(source: tuple[int, int], size: tuple[int, int]) -> PILImage.Resampling:
    """Lanczos when shrinking (sharp, alias-free), bicubic when enlarging (less ringing on masks)."""
    shrinking = size[0] * size[1] < source[0] * source[1]
    return PILImage.Resampling.LANCZOS if shrinking else PILImage.Resampling.BICUBIC


def _pillow_plane(plane: np.ndarray) -> PILImage.Image:
    """One channel as a Pillow float image, filled band by band: Pillow copies whatever it is given, so a
    contiguous copy of the whole channel first would cost another full plane (1 GiB at 16384²)."""
    height, width = plane.shape
    if plane.flags.c_contiguous and plane.dtype == np.float32:
        return PILImage.fromarray(plane)
    image = PILImage.new("F", (width, height))
    band = max(1, RESIZE_BAND_PIXELS // width)
    for top in range(0, height, band):
        image.paste(PILImage.fromarray(np.ascontiguousarray(plane[top : top + band], dtype=np.float32)), (0, top))
    return image


def _resized_rows(
    source: PILImage.Image, size: tuple[int, int], top: int, bottom: int, method: PILImage.Resampling
) -> np.ndarray:
    """Output rows top … bottom − 1 of `source` resized to `size`, as a float32 (rows, width) array.

    Pillow's `box` maps exactly those rows' span of the source onto them and still reads the filter's support
    from the whole source, so the rows equal the same rows of a whole-image resize; only one band of output
    (and no second full-size copy for NumPy) is ever held.
    """
    width, height = size
    if (top, bottom) == (0, height):
        return np.asarray(source.resize(size, method))
    scale = source.height / height
    box = (0.0, top * scale, float(source.width), bottom * scale)
    return np.asarray(source.resize((width, bottom - top), method, box=box))


def fit_long_edge(image: Image, max_size: int) -> Image:
    """Downscale (never upscale) so the long edge is at most `max_size`, with high-quality resampling."""
    return resize_image(image, fit_long_edge_size(image.size, max_size))


def resize_image(image: Image, size: tuple[int, int]) -> Image:
    """Resample an Image to (width, height): Lanczos when shrinking, bicubic when enlarging, premultiplying
    straight alpha around the filter and clamping integer sources. The same image when the size is unchanged."""
    if tuple(size) == image.size:
        return image
    pixels = image.pixels
    if image.has_alpha and image.alpha_mode is AlphaMode.STRAIGHT:
        # Premultiplied one channel at a time: a premultiplied copy of the whole image would be 4 GiB at 16384².
        width, height = size
        scaled = np.empty((height, width, 4), dtype=np.float32)
        for channel in range(3):
            scaled[..., channel] = resize(pixels[..., channel] * pixels[..., 3], size)
        scaled[..., 3] = resize(pixels[..., 3], size)
        new_alpha = np.clip(scaled[..., 3:4], 0.0, 1.0)
        safe = np.where(new_alpha > 1e-6, new_alpha, 1.0)
        rgb = np.where(new_alpha > 1e-6, scaled[..., :3] / safe, 0.0)
        scaled = np.concatenate([rgb, new_alpha], axis=2).astype(np.float32)
    else:
        scaled = resize(pixels, size)
        if image.has_alpha:
            scaled[..., 3] = np.clip(scaled[..., 3], 0.0, 1.0)
    if image.sample_kind is not SampleKind.FLOAT:
        np.clip(scaled, 0.0, 1.0, out=scaled)
    return Image(scaled, image.sample_kind, image.alpha_mode, image.source_size)


def sample_bilinear(plane: np.ndarray, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """Bilinear samples of an (H, W, C) plane at source coordinates xs (columns) × ys (rows), edges clamped."""
    height, width = plane.shape[:2]
    xs, ys = np.clip(xs, 0, width - 1), np.clip(ys, 0, height - 1)
    left, top = np.floor(xs).astype(int), np.floor(ys).astype(int)
    right, bottom = np.minimum(left + 1, width - 1), np.minimum(top + 1, height - 1)
    fx, fy = (xs - left)[None, :, None], (ys - top)[:, None, None]
    upper = plane[np.ix_(top, left)] * (1 - fx) + plane[np.ix_(top, right)] * fx
    lower = plane[np.ix_(bottom, left)] * (1 - fx) + plane[np.ix_(bottom, right)] * fx
    samples: np.ndarray = (upper * (1 - fy) + lower * fy).astype(np.float32)
    return samples


def resize_bilinear(plane: np.ndarray, size: tuple[int, int], *, align_corners: bool = False) -> np.ndarray:
    """An (H, W) float plane resized to (width, height) as PyTorch's bilinear `interpolate` does it.

    Half-pixel centres (align_corners=False; BEN2.py) or corner pixels on corner pixels (align_corners=True;
    BiRefNet's inference.py), no antialiasing when shrinking, edges clamped: the resampling the official
    pipelines of the mattes apply to their model output. Works in row bands.
    """
    width, height = size
    source_height, source_width = plane.shape
    if align_corners:
        xs = np.arange(width) * ((source_width - 1) / (width - 1) if width > 1 else 0.0)
        ys = np.arange(height) * ((source_height - 1) / (height - 1) if height > 1 else 0.0)
    else:
        xs = (np.arange(width) + 0.5) * (source_width / width) - 0.5
        ys = (np.arange(height) + 0.5) * (source_height / height) - 0.5
    source = np.asarray(plane, np.float32)[..., None]
    out = np.empty((height, width), np.float32)
    for top in range(0, height, BILINEAR_BAND_ROWS):
        band = slice(top, min(top + BILINEAR_BAND_ROWS, height))
        out[band] = sample_bilinear(source, xs, ys[band])[..., 0]
    return out
