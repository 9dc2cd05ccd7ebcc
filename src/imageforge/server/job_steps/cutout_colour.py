"""The colour a cut-out is written with: the object's own colour at its soft edge (foreground estimation, on by
default), and how colour and matte are stored (straight, premultiplied, or over a solid colour, opaque).

Foreground estimation (matting/foreground.py) replaces only pixels whose alpha is strictly between 0 and 1, in
float, so 16-bit and float sources keep their precision; a matte without soft pixels skips it with a log line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...contract import InputError
from ..matting import estimate_foreground

_HEX = re.compile(r"#?([0-9a-fA-F]{6})")


@dataclass(frozen=True)
class CutoutLook:
    """How a cut-out's colour and matte are written: straight RGBA (default), premultiplied RGBA, or RGB over
    `background` (an opaque image: what rembg calls a background colour)."""

    premultiplied: bool = False
    background: tuple[float, float, float] | None = None

    @property
    def channels(self) -> int:
        return 3 if self.background is not None else 4

    def rows(self, colour: np.ndarray, alpha: np.ndarray) -> np.ndarray:
        """Colour (h, W, 3|4) and alpha (h, W) of some rows → the rows as written, float32 in [0, 1]."""
        rgb = np.asarray(colour[..., :3], np.float32)
        a = np.asarray(alpha, np.float32)[..., None]
        if self.background is not None:
            backdrop = np.asarray(self.background, np.float32)
            composited: np.ndarray = rgb * a + backdrop * (1.0 - a)
            return composited
        if self.premultiplied:
            rgb = rgb * a
        return np.concatenate([rgb, a], axis=2)

    def describe(self) -> str:
        if self.background is not None:
            red, green, blue = (round(value * 255) for value in self.background)
            return f"over #{red:02x}{green:02x}{blue:02x}, opaque"
        return "premultiplied RGBA" if self.premultiplied else "straight RGBA"


STRAIGHT = CutoutLook()


def cutout_look(premultiplied: bool, background_color: str | None) -> CutoutLook:
    """The look a job's parameters ask for; a colour that is not #RRGGBB is the user's error, said at once."""
    if background_color is None:
        return CutoutLook(premultiplied=premultiplied)
    match = _HEX.fullmatch(background_color.strip())
    if match is None:
        raise InputError(
            f"background_color must be a colour written #RRGGBB (for example #00ff00), not {background_color!r}."
        )
    digits = match.group(1)
    rgb = tuple(int(digits[index : index + 2], 16) / 255.0 for index in (0, 2, 4))
    return CutoutLook(premultiplied=premultiplied, background=(rgb[0], rgb[1], rgb[2]))


def edge_colour(
    context: Any, colour: np.ndarray, alpha: np.ndarray, *, enabled: bool, out: np.ndarray | None = None
) -> None:
    """Foreground estimation into `out` (default: `colour` itself) when `enabled`, said in the job log."""
    if not enabled:
        context.log("Foreground colour: off (the edge keeps the photo's colour)")
        return
    estimate = estimate_foreground(colour, alpha, out=out)
    context.log(estimate.describe())
