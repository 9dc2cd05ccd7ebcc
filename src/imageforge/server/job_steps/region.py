"""A box of whole pixels of an image: what a job crops its results to (a cutout's matte bounds, the context
around an inpainting hole) and how that box maps onto a resolution the model analysed."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Region:
    """A box of whole pixels, end-exclusive: columns x0 … x1 − 1 and rows y0 … y1 − 1."""

    x0: int
    y0: int
    x1: int
    y1: int

    @classmethod
    def whole(cls, size: tuple[int, int]) -> Region:
        return cls(0, 0, size[0], size[1])

    @property
    def size(self) -> tuple[int, int]:
        return (self.x1 - self.x0, self.y1 - self.y0)

    @property
    def slices(self) -> tuple[slice, slice]:
        return slice(self.y0, self.y1), slice(self.x0, self.x1)

    def scaled(self, size: tuple[int, int], target: tuple[int, int]) -> Region:
        """The smallest box of `target`-size pixels covering this box of `size`-size pixels."""
        sx, sy = target[0] / size[0], target[1] / size[1]
        x0, y0 = math.floor(self.x0 * sx + 1e-9), math.floor(self.y0 * sy + 1e-9)
        x1, y1 = math.ceil(self.x1 * sx - 1e-9), math.ceil(self.y1 * sy - 1e-9)
        return Region(max(0, x0), max(0, y0), min(target[0], max(x1, x0 + 1)), min(target[1], max(y1, y0 + 1)))
