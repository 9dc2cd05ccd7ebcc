"""Selection geometry both sides agree on: the area a lasso encloses, and the crop the server analyses.

Area: the even–odd rule, the rule every rasteriser of a selection uses. The signed shoelace sum is the area
only of a simple polygon: the two loops of a figure-eight have opposite orientations and cancel to zero, so
a perfectly good lasso would be refused as "enclosing no area". Here the polygon is swept in horizontal
slabs between its vertices' heights, each split where two of its edges cross; inside such a piece the
inside length is linear in y, so its midpoint gives the piece's exact area.

Crop: the server confines a refined matte to the selection grown by GROW_FRACTION of its longer side (at
least MIN_GROW pixels) and analyses that plus `padding` pixels of context. Both use the selection's bounds
clipped to the image, so a huge but finite box (a user's "everything") is the whole image, not an
overflow, and the add-on (addon/scene/selection.py) knows where a refined matte lands.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

_PAIRWISE_LIMIT = 64  # edges in one slab beyond which crossings are not searched (the midpoint then estimates)
GROW_FRACTION = 0.05  # of the clipped selection's longer side
MIN_GROW = 2  # pixels
Bounds = tuple[float, float, float, float]  # left, top, right, bottom in image pixels


def even_odd_area(points: Sequence[Sequence[float]], *, stop_above: float = math.inf) -> float:
    """Area inside the closed polygon `points` by the even–odd rule; stops counting once above `stop_above`."""
    edges = []  # (lowest y, highest y, slope dx/dy, x at y = 0) of every non-horizontal edge
    for (ax, ay), (bx, by) in zip(points, [*points[1:], *points[:1]], strict=True):
        if ay != by:
            slope = (bx - ax) / (by - ay)
            edges.append((min(ay, by), max(ay, by), slope, ax - slope * ay))
    edges.sort()
    heights = sorted({y for _, y in points})
    total, waiting, active = 0.0, 0, []
    for bottom, top in zip(heights, heights[1:], strict=False):
        while waiting < len(edges) and edges[waiting][0] <= bottom:
            active.append(edges[waiting])
            waiting += 1
        active = [edge for edge in active if edge[1] > bottom]
        for low, high in _pieces(active, bottom, top):
            middle = (low + high) / 2
            xs = sorted(slope * middle + offset for _, _, slope, offset in active)
            total += sum(right - left for left, right in zip(xs[0::2], xs[1::2], strict=False)) * (high - low)
        if total > stop_above:
            break
    return total


def _pieces(active: list[tuple[float, float, float, float]], bottom: float, top: float) -> list[tuple[float, float]]:
    """The slab [bottom, top] split at every height where two of its edges cross."""
    cuts = {bottom, top}
    if len(active) <= _PAIRWISE_LIMIT:
        for index, (_, _, slope, offset) in enumerate(active):
            for _, _, other_slope, other_offset in active[index + 1 :]:
                if slope != other_slope:
                    height = (other_offset - offset) / (slope - other_slope)
                    if bottom < height < top:
                        cuts.add(height)
    ordered = sorted(cuts)
    return list(zip(ordered, ordered[1:], strict=False))


def clip_bounds(bounds: Bounds, width: int, height: int) -> Bounds:
    """`bounds` limited to the image [0, width] × [0, height] (it may then be empty)."""
    left, top, right, bottom = bounds
    return (min(max(left, 0.0), width), min(max(top, 0.0), height), max(min(right, width), 0.0),
            max(min(bottom, height), 0.0))  # fmt: skip


def grow_pixels(bounds: Bounds) -> int:
    """How far the server grows a selection with these (clipped) bounds: a fraction of its longer side."""
    left, top, right, bottom = bounds
    return max(MIN_GROW, round(GROW_FRACTION * max(right - left, bottom - top)))


def analysed_crop(bounds: Bounds, padding: int, width: int, height: int) -> tuple[tuple[int, int, int, int], int]:
    """The (x0, y0, x1, y1) the server analyses around a selection, inside the image, and its grow."""
    left, top, right, bottom = clip_bounds(bounds, width, height)
    grow = grow_pixels((left, top, right, bottom))
    reach = grow + padding
    crop = (max(0, math.floor(left) - reach), max(0, math.floor(top) - reach),
            min(width, math.ceil(right) + reach), min(height, math.ceil(bottom) + reach))  # fmt: skip
    return crop, grow
