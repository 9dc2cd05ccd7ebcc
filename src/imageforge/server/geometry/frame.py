"""The one geometry frame every writer consumes, and pinhole intrinsics in two unit systems."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class NormalizedIntrinsics:
    """Pinhole intrinsics normalised by the image size (fx, cx in widths; fy, cy in heights)."""

    fx: float
    fy: float
    cx: float = 0.5
    cy: float = 0.5

    def in_pixels(self, width: int, height: int) -> dict[str, float]:
        """fx, fy, cx, cy in pixels of an image of `width` × `height` (OpenCV convention: pixel centres at +0.5)."""
        return {"fx": self.fx * width, "fy": self.fy * height, "cx": self.cx * width, "cy": self.cy * height}


@dataclass(frozen=True)
class GeometryFrame:
    """Metric geometry of one image at the analysed resolution (OpenCV camera axes: x right, y down, z forward).

    depth [H, W] metres (0 where invalid); points [H, W, 3] camera-space metres; normal [H, W, 3] unit
    vectors facing the camera; valid [H, W] bool; intrinsics normalised by the image size.
    """

    depth: np.ndarray
    points: np.ndarray
    normal: np.ndarray
    valid: np.ndarray
    intrinsics: NormalizedIntrinsics

    @property
    def size(self) -> tuple[int, int]:
        """(width, height) of the analysed image."""
        height, width = self.depth.shape
        return width, height

    def reference_depth(self) -> float:
        """A robust depth to place a plane at: the median over valid pixels."""
        return float(np.median(self.depth[self.valid]))
