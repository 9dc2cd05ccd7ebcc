"""The in-memory image every decoder returns and every adapter and writer consumes.

Pixels are always float32 (H, W, 3) or (H, W, 4) with alpha last, whatever the source stored, so that
adapters need one code path. What the source stored is kept beside the pixels (`sample_kind`,
`alpha_mode`, `source_size`) so that a writer can give the artist back the precision they gave us:
a 16-bit PNG stays 16-bit, a float EXR stays float.

Precision model:
- UINT8 / UINT16 sources: pixels are the stored code values divided by 255 / 65535, so [0, 1] and still
  display-encoded (usually sRGB). Converting back with `to_integers` is exact for unchanged pixels.
- FLOAT sources (EXR, Radiance HDR): pixels are the stored values, scene-linear, unclamped (may exceed 1
  or be negative).
Alpha is STRAIGHT for every format except OpenEXR, whose spec stores colour premultiplied by alpha.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

import numpy as np


class SampleKind(StrEnum):
    """How the source stored each sample; decides how a writer stores the result."""

    UINT8 = "uint8"
    UINT16 = "uint16"
    FLOAT = "float"

    @property
    def png_bits(self) -> int:
        """The PNG bit depth that keeps this precision best (float sources get 16-bit)."""
        return 8 if self is SampleKind.UINT8 else 16


class AlphaMode(StrEnum):
    STRAIGHT = "straight"
    PREMULTIPLIED = "premultiplied"


@dataclass(frozen=True, eq=False)
class Image:
    """A decoded image: float32 pixels plus what the source stored.

    `source_size` is the (width, height) of the file this image came from, kept through resizes so the
    result can be brought back to it.
    """

    pixels: np.ndarray
    sample_kind: SampleKind
    alpha_mode: AlphaMode = AlphaMode.STRAIGHT
    source_size: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        pixels = self.pixels
        if pixels.ndim != 3 or pixels.shape[2] not in (3, 4) or pixels.dtype != np.float32:
            raise ValueError(f"Image pixels must be float32 (H, W, 3|4), got {pixels.dtype} {pixels.shape}")
        if self.source_size is None:
            object.__setattr__(self, "source_size", (pixels.shape[1], pixels.shape[0]))

    @property
    def width(self) -> int:
        return int(self.pixels.shape[1])

    @property
    def height(self) -> int:
        return int(self.pixels.shape[0])

    @property
    def size(self) -> tuple[int, int]:
        """(width, height), the order Pillow and Blender use."""
        return (self.width, self.height)

    @property
    def has_alpha(self) -> bool:
        return bool(self.pixels.shape[2] == 4)

    @property
    def rgb(self) -> np.ndarray:
        """The colour channels as stored (premultiplied for EXR sources)."""
        return self.pixels[..., :3]

    @property
    def alpha(self) -> np.ndarray | None:
        """The (H, W) alpha channel, or None when the source has none."""
        return self.pixels[..., 3] if self.has_alpha else None

    def over_black(self) -> np.ndarray:
        """RGB composited over black, (H, W, 3) float32: what the models see for transparent sources."""
        if not self.has_alpha or self.alpha_mode is AlphaMode.PREMULTIPLIED:
            return np.ascontiguousarray(self.rgb)
        composited: np.ndarray = self.rgb * self.pixels[..., 3:4]
        return composited

    def straight(self) -> Image:
        """This image with straight alpha (divides premultiplied colour by alpha where alpha > 0)."""
        if not self.has_alpha or self.alpha_mode is AlphaMode.STRAIGHT:
            return self
        alpha = self.pixels[..., 3:4]
        safe = np.where(alpha > 0, alpha, 1.0).astype(np.float32)
        rgb = np.where(alpha > 0, self.rgb / safe, 0.0).astype(np.float32)
        return replace(self, pixels=np.concatenate([rgb, alpha], axis=2), alpha_mode=AlphaMode.STRAIGHT)

    def with_pixels(self, pixels: np.ndarray, alpha_mode: AlphaMode | None = None) -> Image:
        """The same source description around new pixels (e.g. a model's output at the same precision)."""
        return replace(self, pixels=pixels, alpha_mode=alpha_mode or self.alpha_mode)


def to_integers(pixels: np.ndarray, bits: int) -> np.ndarray:
    """Quantise [0, 1] floats to uint8 or uint16 code values (clipped, rounded to nearest)."""
    if bits not in (8, 16):
        raise ValueError(f"bits must be 8 or 16, not {bits}")
    scale = 255.0 if bits == 8 else 65535.0
    dtype = np.uint8 if bits == 8 else np.uint16
    quantised: np.ndarray = (np.clip(pixels, 0.0, 1.0) * scale + 0.5).astype(dtype)
    return quantised


def from_integers(values: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """uint8 / uint16 code values to float32 in [0, 1], into `out` when given (a band of a larger image).

    One float32 array, scaled in place: at 16384² a second temporary would cost 3–4 GiB.
    """
    scale = np.float32(1.0 / (255.0 if values.dtype == np.uint8 else 65535.0))
    if out is None:
        out = values.astype(np.float32)
    else:
        out[...] = values
    out *= scale
    return out


def to_rgb_or_rgba(pixels: np.ndarray) -> np.ndarray:
    """Grey (H, W) / (H, W, 1), grey+alpha (H, W, 2), RGB or RGBA to RGB / RGBA, float32."""
    if pixels.ndim == 2:
        pixels = pixels[..., None]
    channels = pixels.shape[2]
    if channels == 1:
        pixels = np.repeat(pixels, 3, axis=2)
    elif channels == 2:
        pixels = np.concatenate([np.repeat(pixels[..., :1], 3, axis=2), pixels[..., 1:]], axis=2)
    elif channels not in (3, 4):
        raise ValueError(f"Cannot make an image of {channels} channels")
    return np.ascontiguousarray(pixels, dtype=np.float32)
