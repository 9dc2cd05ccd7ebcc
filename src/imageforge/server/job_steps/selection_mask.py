"""A selection (box, lasso or mask, in image pixels, origin top-left, y down) as pixels: the region Refine
Selection works on, and the anti-aliased coverage Cutout and Inpaint use as their matte.

A mask selection (run-length data, or a mask image of the image's size: job_steps/mask_image.py) is its own
coverage (a mask file's grey levels are a soft edge); for refining, its inside (weight ≥ 0.5) takes the place of
a lasso's: the same crop around its bounds, the same grow.

The crop around the selection gives BEN2 context (`padding` pixels); the matte is then confined to the
selection grown by a small margin, because a hand-drawn lasso cuts through the object's edge here and
there and the point of refining is to let the model find that edge. The margin is a fraction of the
selection's size within the image (a few pixels on a small selection, more on a large one); the rule lives in
contract/selection_geometry.py, which the add-on also reads to know where a refined matte lands.

Pixel (i, j) covers [i, i+1) × [j, j+1): a box [10, 10, 20, 20] selects columns and rows 10–19.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...contract import InputError
from ...contract.parameters import Selection
from ...contract.selection_geometry import analysed_crop, clip_bounds
from .mask_image import open_mask, read_mask
from .region import Region

SUPERSAMPLE = 4  # anti-aliased coverage: 4 × 4 samples per pixel
SAMPLES_PER_BAND = 1 << 22  # bounds the rasteriser's memory on large selections


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
    check_overlap(selection, size)
    weight = mask_weight(selection, size)
    if weight is not None:
        return _mask_region(weight >= 0.5, padding)
    crop, grow = analysed_crop(selection.bounds, padding, width, height)  # bounds clipped: a huge box is the image
    if selection.box is not None:
        x0, y0, x1, y1 = clip_bounds(selection.box, width, height)
        polygon = [(x0, y0), (x1, y0), (x1, y1), (x0, y1)]
    else:
        polygon = list(selection.lasso or ())
    mask = _rasterise(polygon, crop, grow)
    inside = _rasterise(polygon, crop, 0)
    if not inside.any():
        raise InputError("The selection covers no pixel of the image; draw a larger selection over the image.")
    return SelectionRegion(crop, mask, grow)


def _mask_region(inside: np.ndarray, padding: int) -> SelectionRegion:
    height, width = inside.shape
    rows, columns = np.nonzero(inside.any(axis=1))[0], np.nonzero(inside.any(axis=0))[0]
    if rows.size == 0:
        raise InputError("The mask selection covers no pixel of the image; select the object again.")
    bounds = (float(columns[0]), float(rows[0]), float(columns[-1] + 1), float(rows[-1] + 1))
    crop, grow = analysed_crop(bounds, padding, width, height)
    x0, y0, x1, y1 = crop
    return SelectionRegion(crop, dilate(inside[y0:y1, x0:x1], grow).astype(np.float32), grow)


def mask_weight(selection: Selection, size: tuple[int, int]) -> np.ndarray | None:
    """A mask selection's weight (H, W) in [0, 1] on an image of `size`; None for a box or lasso."""
    width, height = size
    if selection.mask is not None:
        mismatch = selection.size_mismatch(width, height)
        if mismatch is not None:
            raise InputError(mismatch)
        pixels = np.frombuffer(selection.mask.to_bytes(), np.uint8).reshape(height, width)
        return pixels.astype(np.float32)
    if selection.mask_file is not None:
        return read_mask(open_mask(selection.mask_file, size, resampled=False), size)
    return None


def _rasterise(polygon: list[tuple[float, float]], crop: tuple[int, int, int, int], grow: int) -> np.ndarray:
    """Pixels of the crop whose centres lie inside the polygon (even–odd rule), grown by `grow` pixels."""
    x0, y0, x1, y1 = crop
    width, height = x1 - x0, y1 - y0
    points = np.asarray(polygon, dtype=np.float64) - (x0, y0)
    inside = polygon_coverage(points, width, height, samples=1) > 0
    if grow == 0:
        return inside.astype(np.float32)
    # Growing = adding every pixel within `grow` pixels (a square neighbourhood) of an inside pixel. A dilation
    # of the filled mask leaves no holes, unlike a thick line drawn along a dense hand-drawn outline.
    return dilate(inside, grow).astype(np.float32)


def dilate(mask: np.ndarray, radius: int) -> np.ndarray:
    """True where any True pixel lies within `radius` pixels (a square neighbourhood), O(pixels) per call."""
    return _dilate(_dilate(mask, radius, axis=0), radius, axis=1)


def _dilate(mask: np.ndarray, radius: int, *, axis: int) -> np.ndarray:
    """True where any pixel within `radius` along `axis` is True: a running sum, O(pixels) whatever the radius."""
    length = mask.shape[axis]
    counts = np.cumsum(mask, axis=axis, dtype=np.int64)
    zero = np.zeros_like(np.take(counts, [0], axis=axis))
    counts = np.concatenate([zero, counts], axis=axis)  # counts[i] = number of True before index i
    index = np.arange(length)
    upper = np.take(counts, np.minimum(index + radius + 1, length), axis=axis)
    lower = np.take(counts, np.maximum(index - radius, 0), axis=axis)
    reached: np.ndarray = (upper - lower) > 0
    return reached


def check_overlap(selection: Selection, size: tuple[int, int]) -> None:
    """The one check that a selection meets the image, before any model is prepared or downloaded: a mask of
    the image's size (a mask file's header is read), a box or lasso over it."""
    width, height = size
    mismatch = selection.size_mismatch(width, height)
    if mismatch is not None:
        raise InputError(mismatch)
    if selection.mask_file is not None:
        open_mask(selection.mask_file, size, resampled=False)
    if not selection.overlaps(width, height):
        raise InputError(f"The selection lies outside the image ({width}×{height} pixels); draw it over the image.")


def polygon_coverage(points: np.ndarray, width: int, height: int, *, samples: int = SUPERSAMPLE) -> np.ndarray:
    """Even–odd polygon coverage (height, width) from `samples`² sample points per pixel, in row bands.

    With samples=1 this is the plain pixel-centre test: a pixel is inside when its centre is.

    Per band, each edge toggles the samples to the right of where it crosses a sample row; the running parity
    along the row is "inside". Half-open crossings (a row at exactly a vertex's height counts once) keep
    shared vertices from cancelling.
    """
    s = samples
    start, end = points, np.roll(points, -1, axis=0)
    flat = start[:, 1] == end[:, 1]
    start, end = start[~flat], end[~flat]
    low, high = np.minimum(start[:, 1], end[:, 1]), np.maximum(start[:, 1], end[:, 1])
    coverage = np.empty((height, width), np.float32)
    band = max(1, SAMPLES_PER_BAND // (width * s * s))
    for top in range(0, height, band):
        rows_here = min(band, height - top)
        first_row, stop_row = top * s, (top + rows_here) * s
        # Sample row r has its centre at (r + 0.5) / s; an edge spans the rows whose centre is in [low, high).
        first = np.clip(np.ceil(low * s - 0.5), first_row, stop_row).astype(np.int64)
        stop = np.clip(np.ceil(high * s - 0.5), first_row, stop_row).astype(np.int64)
        counts = np.maximum(stop - first, 0)
        toggles = np.zeros((rows_here * s, width * s + 1), np.int32)
        if counts.sum():
            edge = np.repeat(np.arange(len(start)), counts)
            offsets = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
            rows = np.repeat(first, counts) + offsets
            y = (rows + 0.5) / s
            (ax, ay), (bx, by) = start[edge].T, end[edge].T
            x = ax + (y - ay) * (bx - ax) / (by - ay)
            columns = np.clip(np.ceil(x * s - 0.5), 0, width * s).astype(np.int64)
            np.add.at(toggles, (rows - first_row, columns), 1)
        inside = (np.cumsum(toggles, axis=1)[:, : width * s] & 1).astype(np.float32)
        coverage[top : top + rows_here] = inside.reshape(rows_here, s, width, s).mean(axis=(1, 3))
    return coverage


def selection_coverage(selection: Selection | None, size: tuple[int, int]) -> np.ndarray:
    """The fraction of each pixel (H, W) the selection covers; pixel (i, j) spans [i, i+1) × [j, j+1)."""
    width, height = size
    if selection is None:
        return np.ones((height, width), np.float32)
    check_overlap(selection, size)
    weight = mask_weight(selection, size)
    if weight is not None:
        return weight
    coverage = np.zeros((height, width), np.float32)
    left, top, right, bottom = selection.bounds
    region = Region(max(0, math.floor(left)), max(0, math.floor(top)), min(width, math.ceil(right)),
                    min(height, math.ceil(bottom)))  # fmt: skip
    if selection.box is not None:
        across = _overlap(np.arange(region.x0, region.x1), left, right)
        down = _overlap(np.arange(region.y0, region.y1), top, bottom)
        coverage[region.slices] = down[:, None] * across[None, :]
    else:
        points = np.asarray(selection.lasso, np.float64) - (region.x0, region.y0)
        coverage[region.slices] = polygon_coverage(points, *region.size)
    return coverage


def _overlap(starts: np.ndarray, low: float, high: float) -> np.ndarray:
    """How much of each unit interval [s, s+1) lies inside [low, high)."""
    inside: np.ndarray = np.clip(np.minimum(starts + 1.0, high) - np.maximum(starts, low), 0.0, 1.0).astype(np.float32)
    return inside
