"""BEN2's matte of display pixels: the analysis size (never above `max_input_size`), the matte at the
pixels' own size, the matte confined to a selection, and colour joined with a matte as RGBA.

`max_input_size` limits what the model analyses: below the model's own input size (1024² for BEN2) the image is
first reduced to it, so the matte follows the coarser view; the matte is always brought back to the full
input size and the colour is never resampled. A selection's matte is analysed on the crop around it only
(selection_mask.py), so a small object in a large photo gets the model's full attention.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from ...contract.parameters import Selection
from ..media import Image, fit_long_edge_size
from ..media.png_stream import write_png_bands
from ..models.ben2 import Ben2Adapter
from ..models.display import display_pixels, over_black, over_black_at
from .selection_mask import selection_region


def with_alpha(pixels: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """Colour (H, W, 3|4) with `alpha` (H, W) as its alpha: (H, W, 4). Called per band for large stills."""
    return np.concatenate([pixels[..., :3], alpha[..., None]], axis=2)


def write_with_alpha(path: Path, pixels: np.ndarray, alpha: np.ndarray, *, bits: int) -> None:
    """The RGBA PNG of `pixels` with `alpha` (both at the image's size), band by band: no full-size RGBA copy."""
    height, width = alpha.shape
    write_png_bands(
        path,
        (width, height),
        lambda top, bottom: with_alpha(pixels[top:bottom], alpha[top:bottom]),
        channels=4,
        bits=bits,
    )


def cut_out(
    adapter: Ben2Adapter, image: Image, max_input_size: int, *, last_run: bool
) -> tuple[np.ndarray, np.ndarray]:
    """(display pixels at the input size, matte (H, W) in [0, 1] including the source alpha)."""
    pixels = display_pixels(image)
    return pixels, analyse(adapter, pixels, max_input_size, last_run=last_run)


def analyse(adapter: Ben2Adapter, pixels: np.ndarray, max_input_size: int, *, last_run: bool) -> np.ndarray:
    """The BEN2 matte of display pixels (H, W, 3|4) at their own size, analysed at most `max_input_size`."""
    height, width = pixels.shape[:2]
    source_alpha = pixels[..., 3] if pixels.shape[2] == 4 else None
    model_height, model_width = adapter.input_size
    if max_input_size >= max(adapter.input_size) and width * height > model_width * model_height:
        # Exactly what the adapter's preprocess makes of the full-size pixels (its resize is then a no-op),
        # without a full-size RGB copy of an RGBA image.
        rgb = np.clip(over_black_at(pixels, (model_width, model_height)), 0.0, 1.0)
    else:
        rgb = analysed_rgb(adapter, pixels, max_input_size)
    return adapter.matte(rgb, (width, height), source_alpha, last_run=last_run)


def analysed_rgb(adapter: Ben2Adapter, pixels: np.ndarray, max_input_size: int) -> np.ndarray:
    """What BEN2 is given: the pixels over black, reduced to `max_input_size` when that is below its input."""
    height, width = pixels.shape[:2]
    if max_input_size < max(adapter.input_size):
        limited = fit_long_edge_size((width, height), max_input_size)
        if limited != (width, height):
            return np.clip(over_black_at(pixels, limited), 0.0, 1.0)
    return over_black(pixels)


def refine_alpha(
    adapter: Ben2Adapter,
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
