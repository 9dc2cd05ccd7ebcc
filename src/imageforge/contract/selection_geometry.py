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

Masks: a mask selection (Click Select's result, a painted mask) travels as run-length data, `MaskRuns`: the
image's width and height and the lengths of alternating runs of outside and inside pixels, row after row from
the top-left pixel, starting with outside (so a mask whose first pixel is inside starts with a 0). It is encoded
and decoded here from and to one byte per pixel (0 or 1, row-major), so the server and the add-on read it with
`numpy.frombuffer` and write it with `tobytes()` and never disagree on the order. Its bounds are those of the
inside pixels, and from there its crop follows the same rules as a box's.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

_PAIRWISE_LIMIT = 64  # edges in one slab beyond which crossings are not searched (the midpoint then estimates)
GROW_FRACTION = 0.05  # of the clipped selection's longer side
MIN_GROW = 2  # pixels
Bounds = tuple[float, float, float, float]  # left, top, right, bottom in image pixels
MAX_MASK_PIXELS = 1 << 28  # 16k × 16k: beyond any image a job accepts (the input limit is 8192 on the long edge)


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


@dataclass(frozen=True)
class MaskRuns:
    """A binary mask of `width` × `height` pixels as run lengths (module docstring): outside, inside, outside, …"""

    width: int
    height: int
    runs: tuple[int, ...]

    def __post_init__(self) -> None:
        if self.width < 1 or self.height < 1 or self.width * self.height > MAX_MASK_PIXELS:
            raise ValueError(f"a mask of {self.width}×{self.height} pixels is out of range")
        if any(run < 0 for run in self.runs) or sum(self.runs) != self.width * self.height:
            raise ValueError(f"the runs must be non-negative and add up to {self.width}×{self.height} pixels")

    @property
    def inside(self) -> Iterator[tuple[int, int]]:
        """(first, stop) flat pixel indices of every inside run, in order."""
        position = 0
        for index, run in enumerate(self.runs):
            if index % 2 and run:
                yield position, position + run
            position += run

    @property
    def area(self) -> int:
        return sum(self.runs[1::2])

    @property
    def bounds(self) -> Bounds | None:
        """(left, top, right, bottom) of the inside pixels, as pixel edges; None for an empty mask."""
        width = self.width
        left, top, right, bottom = width, self.height, 0, 0
        for first, stop in self.inside:
            first_row, last_row = first // width, (stop - 1) // width
            top, bottom = min(top, first_row), max(bottom, last_row + 1)
            if first_row == last_row:
                left, right = min(left, first % width), max(right, (stop - 1) % width + 1)
            else:  # a run that wraps onto the next row touches both edges of the image
                left, right = 0, width
        return None if right == 0 else (float(left), float(top), float(right), float(bottom))

    def to_bytes(self) -> bytes:
        """One byte per pixel, row-major: 1 inside, 0 outside."""
        chunks = bytearray()
        for index, run in enumerate(self.runs):
            chunks += (b"\x01" if index % 2 else b"\x00") * run
        return bytes(chunks)

    @classmethod
    def encode(cls, pixels: bytes, width: int, height: int) -> MaskRuns:
        """The runs of `pixels` (one byte per pixel, row-major; any non-zero byte is inside)."""
        if len(pixels) != width * height:
            raise ValueError(f"{len(pixels)} bytes are not a {width}×{height} mask")
        flat = pixels.translate(_BINARY)
        runs, position, inside = [], 0, False
        while position < len(flat):
            following = flat.find(b"\x00" if inside else b"\x01", position)
            following = len(flat) if following < 0 else following
            runs.append(following - position)
            position, inside = following, not inside
        return cls(width, height, tuple(runs) or (0,))


_BINARY = bytes([0] + [1] * 255)  # bytes.translate table: every non-zero byte becomes 1
