"""inpaint-image: LaMa fills the region a mask or a selection marks; every other pixel stays as it was.

The region comes from exactly one of:
- `mask`: a grey or alpha image of the input's shape. An image with transparency uses its alpha (opaque =
  fill, e.g. a cutout); otherwise its grey value (white = fill). Grey levels between are a soft edge. A mask
  of another size but the same aspect ratio (within 1%) is resampled to the input's size.
- `selection`: a box or lasso in image pixels, anti-aliased at its edge (as Cutout rasterises it).

Result `inpaint`: a PNG at the input size, RGB or RGBA as the input (alpha untouched), 8-bit for 8-bit
sources and 16-bit otherwise; outside the region it is bit-identical to an 8/16-bit input. Only a crop
around the region is analysed (job_steps/hole_fill.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ...contract import InputError
from ...contract.catalog import Family
from ...contract.jobs import InpaintImageParams
from ...contract.results import ResultName
from ..job_steps.hole_fill import hole_crop, inpaint_pixels
from ..job_steps.model_loading import log_model_time, prepare_adapter
from ..job_steps.progress import JobProgress
from ..job_steps.selection_mask import check_overlap, selection_coverage
from ..media import MediaSource, open_input, resize, write_png
from ..models.display import display_pixels
from ..models.lama import LamaAdapter

LUMA = np.array([0.2126, 0.7152, 0.0722], np.float32)
ASPECT_TOLERANCE = 0.01


def run_inpaint_image(context: Any, params: InpaintImageParams) -> dict[ResultName, str]:
    if (params.mask is None) == (params.selection is None):
        raise InputError("Give either 'mask' (a grey or alpha image) or 'selection' (a box or lasso), not both.")
    source = open_input(params.input, still_only=True)  # headers only: bad files fail before any download
    size = (source.width, source.height)
    mask_source = None
    if params.mask is not None:
        mask_source = open_input(params.mask, still_only=True)
        check_mask_shape(mask_source, size)
    elif params.selection is not None:  # always, given the check above
        check_overlap(params.selection, size)
    progress = JobProgress(context)
    adapter = prepare_adapter(context, progress, params.model, Family.INPAINT, params.device, LamaAdapter)
    progress.stage(0.08, "Reading input")
    context.log(f"Input: {source.summary}")
    image = source.read_still()
    weight = read_mask(mask_source, size) if mask_source is not None else selection_coverage(params.selection, size)
    hole_crop(weight)  # an empty mask is the user's to fix, said before the model runs
    pixels = display_pixels(image)
    progress.running(0.0, "Inpainting")
    filled = inpaint_pixels(adapter, pixels, weight, params.max_input_size, log=context.log, in_place=True)
    progress.writing()
    write_png(Path(context.directory) / "inpaint.png", filled, bits=image.sample_kind.png_bits)
    log_model_time(context, progress, adapter)
    return {ResultName.INPAINT: "inpaint.png"}


def check_mask_shape(mask: MediaSource, size: tuple[int, int]) -> None:
    width, height = size
    if (mask.width, mask.height) == size:
        return
    if abs(mask.width / mask.height - width / height) > ASPECT_TOLERANCE * width / height:
        raise InputError(
            f"The mask is {mask.width}×{mask.height} pixels but the image is {width}×{height}; "
            "use a mask of the image's shape."
        )


def read_mask(mask: MediaSource, size: tuple[int, int]) -> np.ndarray:
    """The fill weight (H, W) in [0, 1] at `size`: the mask's alpha if it has transparency, else its grey."""
    pixels = np.clip(display_pixels(mask.read_still()), 0.0, 1.0)
    if pixels.shape[2] == 4 and float(pixels[..., 3].min()) < 1.0:
        weight = pixels[..., 3]
    elif np.array_equal(pixels[..., 0], pixels[..., 1]) and np.array_equal(pixels[..., 1], pixels[..., 2]):
        weight = pixels[..., 0]
    else:
        weight = pixels[..., :3] @ LUMA
    weight = np.ascontiguousarray(weight, dtype=np.float32)
    if weight.shape[::-1] != size:
        weight = np.clip(resize(weight, size), 0.0, 1.0)
    return weight
