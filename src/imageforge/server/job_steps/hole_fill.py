"""Filling a hole with the inpainting model: the crop around the hole, the analysis size, and the paste back.

LaMa needs context around a hole, not the whole photo: a 6000² photo with a 300 px hole is analysed as a
crop of the hole plus `CONTEXT_FRACTION` of its size on every side (at least `MIN_CONTEXT` px), a
~600² run instead of a 6000² one. The crop is analysed at its own resolution when its long edge fits
`max_input_size`, else reduced to it (Lanczos) and the model's answer enlarged back (bicubic): a hole
covering half the photo still costs one run at the analysis size.

Paste back: the fill weight is the mask's own value (a soft mask or an anti-aliased lasso edge feathers the
seam; the clean plate grows and feathers the cutout's matte before it gets here), and the colour becomes
input + (model − input) × weight. Where the weight is 0 the input's own float values are kept, so an 8- or
16-bit source written at its depth is bit-identical outside the mask.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ...contract import InputError
from ..media import fit_long_edge_size, resize
from ..media.resample import resized_rows
from ..models.lama import LamaAdapter
from .region import Region
from .selection_mask import dilate

CONTEXT_FRACTION = 0.5  # context on each side of the hole, as a fraction of the hole's longer side
MIN_CONTEXT = 64  # pixels
ANALYSED_HOLE = 1e-3  # a reduced pixel joins the hole when this much of it was hole (Lanczos rings a little)
PLATE_GROW_FRACTION = 0.004  # clean plates: the matte grows by this much of the image's longer side …
PLATE_MIN_GROW = 3  # … but at least this many pixels, and then fades out over as many again


def clean_plate_weight(matte: np.ndarray) -> np.ndarray:
    """The fill weight (H, W) of a clean plate behind a cutout's `matte`: 1 over every pixel the matte touches
    grown by a few pixels (the soft edge and colour spill around an object belong to it), then a linear fade
    over as many pixels again so the filled background meets the photo without a seam."""
    height, width = matte.shape
    grow = max(PLATE_MIN_GROW, math.ceil(PLATE_GROW_FRACTION * max(width, height)))
    touched = matte > 0
    rows, columns = np.nonzero(touched.any(axis=1))[0], np.nonzero(touched.any(axis=0))[0]
    weight = np.zeros((height, width), np.float32)
    if rows.size == 0:
        return weight
    reach = 2 * grow + 1
    box = (
        slice(max(0, rows[0] - reach), min(height, rows[-1] + 1 + reach)),
        slice(max(0, columns[0] - reach), min(width, columns[-1] + 1 + reach)),
    )
    core, local = touched[box], weight[box]
    for step in range(grow, -1, -1):  # outermost ring first, each nearer ring overwriting it with more weight
        local[dilate(core, grow + step)] = 1.0 - step / (grow + 1)
    return weight


def hole_crop(weight: np.ndarray, context_fraction: float = CONTEXT_FRACTION) -> Region:
    """The box around every pixel to fill (weight > 0) plus context on each side, inside the image."""
    height, width = weight.shape
    rows, columns = np.nonzero((weight > 0).any(axis=1))[0], np.nonzero((weight > 0).any(axis=0))[0]
    if rows.size == 0:
        raise InputError("The mask marks no pixel to fill; paint the region to fill white (or opaque).")
    x0, x1, y0, y1 = int(columns[0]), int(columns[-1]) + 1, int(rows[0]), int(rows[-1]) + 1
    context = max(MIN_CONTEXT, math.ceil(context_fraction * max(x1 - x0, y1 - y0)))
    return Region(max(0, x0 - context), max(0, y0 - context), min(width, x1 + context), min(height, y1 + context))


BLEND_BAND_PIXELS = 1 << 22  # pixels blended at a time (a whole 8192² hole would need ~3 GiB of temporaries)


def inpaint_pixels(
    adapter: LamaAdapter,
    pixels: np.ndarray,
    weight: np.ndarray,
    max_input_size: int,
    *,
    last_run: bool = True,
    log: Callable[[str], None] = lambda _message: None,
    in_place: bool = False,
) -> np.ndarray:
    """A copy of display `pixels` (H, W, 3|4) with the colour under `weight` (H, W) in [0, 1] filled.

    Alpha, if any, is kept as it is. Pixels with weight 0 keep their exact values. `in_place` fills `pixels`
    itself and returns it: a copy of a 16384² image would be another 3–4 GiB.
    """
    crop = hole_crop(weight)
    rows, columns = crop.slices
    region = pixels[rows, columns, :3]
    local = weight[rows, columns]
    analysed = fit_long_edge_size(crop.size, max_input_size)
    box = (crop.x0, crop.y0, crop.x1, crop.y1)
    log(f"Inpainting crop {box} (x0, y0, x1, y1) analysed at {analysed[0]}×{analysed[1]}")
    fill_rows: Callable[[int, int], np.ndarray]  # (top, bottom) -> the fill's rows at the crop's size
    if analysed == crop.size:
        whole = adapter.inpaint(region, local > 0, last_run=last_run)
        fill_rows = lambda top, bottom: whole[top:bottom]  # noqa: E731
    else:
        reduced = np.clip(resize(region, analysed), 0.0, 1.0)
        reduced_hole = resize(local.astype(np.float32), analysed) > ANALYSED_HOLE
        # Brought back to the crop's size band by band: at 16384² the whole fill would be another 3 GiB.
        resized = resized_rows(adapter.inpaint(reduced, reduced_hole, last_run=last_run), crop.size)
        fill_rows = lambda top, bottom: np.clip(resized(top, bottom), 0.0, 1.0)  # noqa: E731
    result = pixels if in_place else pixels.copy()
    band = max(1, BLEND_BAND_PIXELS // max(crop.size[0], 1))
    for top in range(0, crop.size[1], band):  # in bands: the blend's temporaries of a large hole stay small
        here = slice(top, top + band)
        fill, kept = local[here, :, None], region[here]
        rows_here = slice(rows.start + top, rows.start + top + kept.shape[0])
        filled = fill_rows(top, top + kept.shape[0])
        result[rows_here, columns, :3] = np.where(fill > 0, kept + (filled - kept) * fill, kept)
    return result
