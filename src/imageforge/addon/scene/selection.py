"""Selection geometry: from what the user drew to image pixels, and from a selection to a pixel mask.

Pixel coordinates follow the jobs' contract: x to the right, y down, (0, 0) the top-left corner of the image,
(width, height) its bottom-right corner. Blender's image space (UV, the Image Editor's view) has v up, so
every conversion flips y exactly once, here. No bpy: the modal draw operator feeds these functions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...contract.selection_geometry import MaskRuns, analysed_crop, even_odd_area

Point = tuple[float, float]


def view_to_pixel(u: float, v: float, width: int, height: int) -> Point:
    """Image Editor view / UV coordinates (0..1, v up) to pixel coordinates (y down)."""
    return (u * width, (1.0 - v) * height)


def empty_uv(local: Sequence[float], size: float, offset: Sequence[float], width: int, height: int) -> Point | None:
    """UV of a point in an image empty's local XY plane, None when it misses the image.

    Blender draws an image empty as the unit square from `offset` to `offset + 1`, scaled by the display size
    along the image's longer side and by size × aspect along the shorter one.
    """
    scale_x = size if width >= height else size * width / height
    scale_y = size if height >= width else size * height / width
    u = local[0] / scale_x - offset[0]
    v = local[1] / scale_y - offset[1]
    return (u, v) if 0.0 <= u <= 1.0 and 0.0 <= v <= 1.0 else None


def barycentric_weights(triangle: Sequence[Sequence[float]], point: Sequence[float]) -> tuple[float, float, float]:
    """Weights of a point (projected onto the triangle's plane) relative to its three corners."""
    a, b, c = (np.asarray(corner, dtype=np.float64) for corner in triangle)
    p = np.asarray(point, dtype=np.float64)
    v0, v1, v2 = b - a, c - a, p - a
    d00, d01, d11 = v0 @ v0, v0 @ v1, v1 @ v1
    d20, d21 = v2 @ v0, v2 @ v1
    denominator = d00 * d11 - d01 * d01
    if abs(denominator) < 1e-20:
        raise ValueError("Degenerate triangle")
    w1 = (d11 * d20 - d01 * d21) / denominator
    w2 = (d00 * d21 - d01 * d20) / denominator
    return (float(1.0 - w1 - w2), float(w1), float(w2))


def barycentric_uv(
    triangle: Sequence[Sequence[float]], uvs: Sequence[Sequence[float]], point: Sequence[float]
) -> Point:
    """Interpolate a triangle's UVs at a point on it (a ray hit on an image plane)."""
    weights = barycentric_weights(triangle, point)
    uv = np.sum(
        [weight * np.asarray(corner, dtype=np.float64) for weight, corner in zip(weights, uvs, strict=True)], axis=0
    )
    return (float(uv[0]), float(uv[1]))


def _clamp(point: Point, width: int, height: int) -> Point:
    return (min(max(point[0], 0.0), float(width)), min(max(point[1], 0.0), float(height)))


def box_selection(start: Point, end: Point, width: int, height: int) -> dict[str, Any] | None:
    """A box from two drawn corners, clipped to the image; None when less than a pixel wide or tall."""
    (x0, y0), (x1, y1) = _clamp(start, width, height), _clamp(end, width, height)
    box = [min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1)]
    if box[2] - box[0] < 1.0 or box[3] - box[1] < 1.0:
        return None
    return {"box": [round(value, 2) for value in box]}


def lasso_selection(points: Sequence[Point], width: int, height: int, spacing: float = 1.5) -> dict[str, Any] | None:
    """A lasso polygon clipped to the image, thinned to points at least `spacing` px apart.

    None when fewer than three distinct points remain or they enclose less than a pixel.
    """
    kept: list[Point] = []
    for point in points:
        point = _clamp(point, width, height)
        if not kept or math.dist(point, kept[-1]) >= spacing:
            kept.append(point)
    if len(kept) < 3 or even_odd_area(kept, stop_above=1.0) < 1.0:  # a figure-eight counts both loops
        return None
    return {"lasso": [[round(x, 2), round(y, 2)] for x, y in kept]}


def mask_runs(selection: dict[str, Any]) -> MaskRuns:
    """The run-length mask of a mask selection dict (already validated by the contract)."""
    raw = selection["mask"]
    return MaskRuns(raw["width"], raw["height"], tuple(raw["runs"]))


def encode_mask(inside: np.ndarray) -> dict[str, Any]:
    """A mask selection dict from (height, width) booleans, top row first."""
    height, width = inside.shape
    runs = MaskRuns.encode(np.ascontiguousarray(inside, dtype=np.uint8).tobytes(), width, height)
    return {"mask": {"width": width, "height": height, "runs": list(runs.runs)}}


def selection_bounds(selection: dict[str, Any]) -> tuple[float, float, float, float]:
    if "mask" in selection:
        bounds = mask_runs(selection).bounds
        if bounds is None:
            raise ValueError("an empty mask has no bounds")
        return bounds
    if "box" in selection:
        x0, y0, x1, y1 = selection["box"]
        return (x0, y0, x1, y1)
    xs = [x for x, _ in selection["lasso"]]
    ys = [y for _, y in selection["lasso"]]
    return (min(xs), min(ys), max(xs), max(ys))


def selection_mask(selection: dict[str, Any], width: int, height: int) -> np.ndarray:
    """(height, width) booleans, top row first: pixels whose centre lies inside the selection (even-odd)."""
    if "mask" in selection:
        runs = mask_runs(selection)
        if (runs.width, runs.height) != (width, height):
            raise ValueError(f"a {runs.width}×{runs.height} mask on a {width}×{height} image")
        return np.frombuffer(runs.to_bytes(), np.uint8).reshape(height, width).astype(bool)
    mask = np.zeros((height, width), dtype=bool)
    centres = np.arange(width) + 0.5
    if "box" in selection:
        x0, y0, x1, y1 = selection["box"]
        rows = (np.arange(height) + 0.5 >= y0) & (np.arange(height) + 0.5 < y1)
        mask[rows] = (centres >= x0) & (centres < x1)
        return mask
    polygon = np.asarray(selection["lasso"], dtype=np.float64)
    start, end = polygon, np.roll(polygon, -1, axis=0)
    for row in range(max(int(polygon[:, 1].min()), 0), min(int(math.ceil(polygon[:, 1].max())), height)):
        y = row + 0.5
        crossing = (start[:, 1] <= y) != (end[:, 1] <= y)
        if not crossing.any():
            continue
        a, b = start[crossing], end[crossing]
        xs = np.sort(a[:, 0] + (y - a[:, 1]) * (b[:, 0] - a[:, 0]) / (b[:, 1] - a[:, 1]))
        for left, right in zip(xs[0::2], xs[1::2], strict=False):
            mask[row] |= (centres >= left) & (centres < right)
    return mask


# -- where a refined matte lands ----------------------------------------------------------------------------------
# The server analyses a crop around the selection (its bounds plus grow and `padding` pixels) and confines the
# matte to the selection grown by GROW_FRACTION of its longer side, at least MIN_GROW pixels (one rule for both
# sides: contract/selection_geometry.py; server/job_steps/selection_mask.py draws it): soft edges just outside
# what was drawn are part of the result, and the matte is zero outside that grown region. The add-on does not redraw
# the grown band (the server's dilation near a dense outline is not worth repeating here): the result lands
# inside the selection and, within the server's crop, wherever the matte is non-zero. A zero outside the
# selection may mean "outside the band" as well as "background", so there the image is kept.


def selection_crop(selection: dict[str, Any], padding: int, width: int, height: int) -> tuple[int, int, int, int]:
    """The (x0, y0, x1, y1) the server analyses for `selection` with `padding` context pixels, inside the image."""
    return analysed_crop(selection_bounds(selection), padding, width, height)[0]


def refined_region(selection: dict[str, Any], padding: int, matte: np.ndarray) -> np.ndarray:
    """(height, width) booleans, top row first: where a full-size refined `matte` lands (see above).

    Every pixel of the selection, plus the pixels of the server's crop where the matte is non-zero; nothing
    outside the crop, so a matte that were not confined could still never change the rest of the image.
    """
    height, width = matte.shape
    region = selection_mask(selection, width, height)
    x0, y0, x1, y1 = selection_crop(selection, padding, width, height)
    if x0 < x1 and y0 < y1:
        region[y0:y1, x0:x1] |= matte[y0:y1, x0:x1] > 0.0
    return region
