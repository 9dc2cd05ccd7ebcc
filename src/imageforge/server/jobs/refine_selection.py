"""refine-image-selection: BEN2 on the region around a box or lasso, its matte confined to the selection.

The model analyses only the crop around the selection (plus `padding` pixels of context), so a small
object in a large photo gets the model's full 1024² attention instead of a few dozen pixels of it. The
matte is confined to the selection grown by a small margin (selection_mask.py) and placed into a full-size
matte. Results: `alpha`, a single-channel 16-bit PNG at the input size, and `cutout`, the image's colour
with that alpha (8-bit sources 8-bit, deeper sources 16-bit).

`refine_alpha` is the reusable part (the cutout job's `refine` option runs the same thing).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ...contract.catalog import Family
from ...contract.jobs import RefineImageSelectionParams
from ...contract.parameters import Selection
from ..media import open_input, write_png
from ..media.png_stream import write_png_bands
from ..models.ben2 import Ben2Adapter
from ..models.display import display_pixels
from .image_job import JobProgress, log_model_time, prepare_adapter
from .remove_background import analyse, with_alpha
from .selection_mask import selection_region


def run_refine_image_selection(context: Any, params: RefineImageSelectionParams) -> dict[str, str]:
    progress = JobProgress(context)
    source = open_input(params.input, still_only=True)
    # A bad file or a selection off the image fails before any model download.
    selection_region(params.selection, (source.width, source.height), params.padding)
    adapter = prepare_adapter(context, progress, params.model, Family.BACKGROUND, params.device, Ben2Adapter)
    progress.stage(0.08, "Reading input")
    image = source.read_still()
    pixels = display_pixels(image)
    progress.running(0.0, "Refining selection")
    alpha = refine_alpha(adapter, pixels, params.selection, params.padding, params.max_input_size, log=context.log)
    progress.writing()
    directory = Path(context.directory)
    write_png(directory / "alpha.png", alpha, bits=16)
    write_png_bands(
        directory / "cutout.png",
        image.size,
        lambda top, bottom: with_alpha(pixels[top:bottom], alpha[top:bottom]),
        channels=4,
        bits=image.sample_kind.png_bits,
    )
    log_model_time(context, progress, adapter)
    return {"alpha": "alpha.png", "cutout": "cutout.png"}


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
