"""A selection (box or lasso, in image pixels, origin top-left, y down) as the region Refine Selection works on.

The crop around the selection gives BEN2 context (`padding` pixels); the matte is then confined to the
selection grown by a small margin, because a hand-drawn lasso cuts through the object's edge here and
there and the point of refining is to let the model find that edge. The margin is a fraction of the
selection's size (a few pixels on a small selection, more on a large one).

Pixel (i, j) covers [i, i+1) × [j, j+1): a box [10, 10, 20, 20] selects columns and rows 10–19.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from PIL import Image as PILImage
from PIL import ImageDraw

from ...contract import InputError
from ...contract.parameters import Selection

GROW_FRACTION = 0.05  # of the selection's longer side
MIN_GROW = 2  # pixels


@dataclass(frozen=True)
class SelectionRegion:
    crop: tuple[int, int, int, int]  # x0, y0, x1, y1 of the area the model analyses, inside the image
    mask: np.ndarray  # float32 (crop height, crop width): 1 inside the grown selection, else 0
    grow: int

    @property
    def slices(self) -> tuple[slice, slice]:
        x0, y0, x1, y1 = self.crop
        return slice(y0, y1), slice(x0, x1)


def selection_region(selection: Selection, size: tuple[int, int], padding: int) -> SelectionRegion:
    """The crop and confining mask of `selection` on an image of `size` (width, height)."""
    width, height = size
    left, top, right, bottom = selection.bounds
    if right <= 0 or bottom <= 0 or left >= width or top >= height:
        raise InputError(f"The selection lies outside the image ({width}×{height} pixels); draw it over the image.")
    grow = max(MIN_GROW, round(GROW_FRACTION * max(right - left, bottom - top)))
    reach = grow + padding
    crop = (
        max(0, math.floor(left) - reach),
        max(0, math.floor(top) - reach),
        min(width, math.ceil(right) + reach),
        min(height, math.ceil(bottom) + reach),
    )
    if selection.box is not None:
        x0, y0, x1, y1 = selection.box
        polygon = [(x0, y0), (x1, y0), (x1, y1), (x0, y1)]
    else:
        polygon = list(selection.lasso or ())
    mask = _rasterise(polygon, crop, grow)
    inside = _rasterise(polygon, crop, 0)
    if not inside.any():
        raise InputError("The selection covers no pixel of the image; draw a larger selection over the image.")
    return SelectionRegion(crop, mask, grow)


def _rasterise(polygon: list[tuple[float, float]], crop: tuple[int, int, int, int], grow: int) -> np.ndarray:
    """Pixels of the crop whose centres lie inside the polygon (even–odd rule), grown by `grow` pixels."""
    x0, y0, x1, y1 = crop
    width, height = x1 - x0, y1 - y0
    points = np.asarray(polygon, dtype=np.float64) - (x0, y0)
    inside = _fill(points, width, height)
    if grow == 0:
        return inside.astype(np.float32)
    # Growing = adding every pixel within `grow` of the outline: a round-jointed line that wide.
    canvas = PILImage.new("L", (width, height), 0)
    outline = [(x - 0.5, y - 0.5) for x, y in points.tolist()]  # Pillow puts pixel centres on integers
    ImageDraw.Draw(canvas).line([*outline, outline[0], outline[1]], fill=255, width=2 * grow + 1, joint="curve")
    return (inside | (np.asarray(canvas) > 127)).astype(np.float32)


def _fill(points: np.ndarray, width: int, height: int) -> np.ndarray:
    """Scanline fill sampled at pixel centres: every edge crossing of a row centre, paired left to right."""
    start, end = points, np.roll(points, -1, axis=0)
    low = np.minimum(start[:, 1], end[:, 1])
    high = np.maximum(start[:, 1], end[:, 1])
    # Rows whose centre y + 0.5 lies in [low, high): half-open, so a vertex is crossed exactly once.
    first = np.clip(np.ceil(low - 0.5), 0, height).astype(np.int64)
    stop = np.clip(np.ceil(high - 0.5), 0, height).astype(np.int64)
    counts = np.maximum(stop - first, 0)
    mask = np.zeros((height, width), dtype=bool)
    if counts.sum() == 0:
        return mask
    edge = np.repeat(np.arange(len(points)), counts)
    rows = np.repeat(first, counts) + (np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts))
    y = rows + 0.5
    (ax, ay), (bx, by) = start[edge].T, end[edge].T
    x = ax + (y - ay) * (bx - ax) / (by - ay)
    order = np.lexsort((x, rows))
    rows, x = rows[order], x[order]
    # Pixel i is inside a span [xa, xb) when its centre i + 0.5 is.
    columns = np.clip(np.ceil(x - 0.5), 0, width).astype(np.int64)
    toggles = np.zeros((height, width + 1), dtype=np.int32)
    np.add.at(toggles, (rows[0::2], columns[0::2]), 1)
    np.add.at(toggles, (rows[1::2], columns[1::2]), -1)
    mask[:] = np.cumsum(toggles, axis=1)[:, :width] > 0
    return mask
