"""Estimate Depth Anything 3's attention memory before running it, and say what would fit.

The ONNX exports compute attention naively: global attention over all views materialises a
heads × tokens × tokens float32 matrix, with tokens = views × patches per view. That matrix dominates
peak memory (about 12 views at 1008 px ≈ 90 GB with 6 heads), so it is what we budget.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

PATCH_SIZE = 14
BYTES_PER_VALUE = 4
GIB = 1024**3


@dataclass(frozen=True)
class AttentionEstimate:
    views: int
    image_size: int
    heads: int

    @property
    def patches_per_view(self) -> int:
        return (self.image_size // PATCH_SIZE) ** 2

    @property
    def bytes(self) -> int:
        tokens = self.views * self.patches_per_view
        return self.heads * tokens * tokens * BYTES_PER_VALUE

    def max_views(self, budget_bytes: float) -> int:
        """The most views at this image size whose attention fits the budget."""
        tokens = math.sqrt(budget_bytes / (self.heads * BYTES_PER_VALUE))
        return int(tokens // self.patches_per_view)

    def over_budget_message(self, budget_gib: float) -> str:
        fits = self.max_views(budget_gib * GIB)
        return (
            f"{self.views} frames at {self.image_size} px need about {self.bytes / GIB:.1f} GiB of attention memory "
            f"(budget {budget_gib:g} GiB): use at most {fits} frames, or turn on windowed processing."
        )
