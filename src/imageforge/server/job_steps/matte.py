"""A background model's matte of display pixels (BEN2, BiRefNet): the analysis size (never above
`max_input_size`), the matte at the pixels' own size, the matte confined to a selection, and colour joined with
a matte as RGBA.

`max_input_size` limits what the model analyses: below the model's own input size (1024² for BEN2) the image is
first reduced to it, so the matte follows the coarser view; the matte is always brought back to the full
input size and the colour is never resampled. A selection's matte is analysed on the crop around it only
(selection_mask.py), so a small object in a large photo gets the model's full attention.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from ...contract import InputError
from ...contract.parameters import Selection
from ..media import Image, fit_long_edge_size
from ..media.metadata import NONE as NO_METADATA
from ..media.metadata import StillMetadata
from ..media.png_stream import write_png_bands
from ..models.background import BackgroundAdapter
from ..models.display import display_pixels, over_black_at
from .cutout_colour import STRAIGHT, CutoutLook
from .selection_mask import selection_region

MIN_EDGE = 8  # pixels: below this on either side a background model has nothing to separate


def check_matte_size(size: tuple[int, int]) -> None:
    """Refuse, before any model is prepared, an image too small for a background model to analyse."""
    width, height = size
    if min(width, height) < MIN_EDGE:
        raise InputError(
            f"The image is {width}×{height} pixels; removing a background needs at least {MIN_EDGE} pixels "
            "on each side."
        )


def with_alpha(pixels: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """Colour (H, W, 3|4) with `alpha` (H, W) as its alpha: (H, W, 4). Called per band for large stills."""
    return np.concatenate([pixels[..., :3], alpha[..., None]], axis=2)


def write_with_alpha(
    path: Path,
    pixels: np.ndarray,
    alpha: np.ndarray,
    *,
    bits: int,
    look: CutoutLook = STRAIGHT,
    metadata: StillMetadata = NO_METADATA,
) -> None:
    """The PNG of `pixels` with `alpha` (both at the image's size) written as `look` says (straight RGBA by
    default), band by band: no full-size RGBA copy."""
    height, width = alpha.shape
    write_png_bands(
        path,
        (width, height),
        lambda top, bottom: look.rows(pixels[top:bottom], alpha[top:bottom]),
        channels=look.channels,
        bits=bits,
        metadata=metadata,
    )


def cut_out(
    adapter: BackgroundAdapter, image: Image, max_input_size: int, *, last_run: bool
) -> tuple[np.ndarray, np.ndarray]:
    """(display pixels at the input size, matte (H, W) in [0, 1] including the source alpha)."""
    pixels = display_pixels(image)
    return pixels, analyse(adapter, pixels, max_input_size, last_run=last_run)


def analyse(adapter: BackgroundAdapter, pixels: np.ndarray, max_input_size: int, *, last_run: bool) -> np.ndarray:
    """The model's matte of display pixels (H, W, 3|4) at their own size, analysed at most `max_input_size`."""
    height, width = pixels.shape[:2]
    source_alpha = pixels[..., 3] if pixels.shape[2] == 4 else None
    return adapter.matte(
        analysed_pixels(adapter, pixels, max_input_size), (width, height), source_alpha, last_run=last_run
    )


def analysed_pixels(adapter: BackgroundAdapter, pixels: np.ndarray, max_input_size: int) -> np.ndarray:
    """What the adapter's pre-processing is given: the display pixels themselves (it composites them over black
    and resizes them in 8 bits as the official code does), or, when `max_input_size` is below the model's input,
    the pixels over black reduced to `max_input_size` first (in float, Lanczos)."""
    height, width = pixels.shape[:2]
    if max_input_size < max(adapter.input_size):
        limited = fit_long_edge_size((width, height), max_input_size)
        if limited != (width, height):
            scaled: np.ndarray = np.clip(over_black_at(pixels, limited), 0.0, 1.0)
            return scaled
    return pixels


def refine_alpha(
    adapter: BackgroundAdapter,
    pixels: np.ndarray,
    selection: Selection,
    padding: int,
    max_input_size: int,
    *,
    last_run: bool = True,
    log: Callable[[str], None] = lambda _message: None,
) -> np.ndarray:
    """Full-size matte (H, W) float32 of display `pixels` refined inside `selection`; zero elsewhere."""
    height, width = pixels.shape[:2]
    region = selection_region(selection, (width, height), padding)
    log(f"Selection crop {region.crop} (x0, y0, x1, y1), grown by {region.grow} px")
    rows, columns = region.slices
    matte = analyse(adapter, pixels[rows, columns], max_input_size, last_run=last_run)
    alpha = np.zeros((height, width), dtype=np.float32)
    alpha[rows, columns] = matte * region.mask
    return alpha
