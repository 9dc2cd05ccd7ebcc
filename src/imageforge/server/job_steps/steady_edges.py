"""Steady edges: temporal smoothing of a video's mattes, guided by how much each pixel of the picture changed.

BEN2 analyses every frame on its own, so on video a soft edge (hair, motion blur) flickers: the matte moves a
few percent from frame to frame where the picture did not move at all. Steady edges blends each frame's matte
with the previous frame's result, but only where the picture stayed the same:

    d_t(x)   = |Y_t(x) − Y_{t−1}(x)|, box-blurred over 3×3 (luma, so sensor noise does not count as motion)
    w_t(x)   = STRENGTH · exp(−(d_t(x) / TOLERANCE)²)        — 0 where the picture changed, up to STRENGTH where not
    s_t(x)   = w_t(x) · s_{t−1}(x) + (1 − w_t(x)) · m_t(x)    — m_t is the model's matte, s the result

Where something moves, the picture changes, w is about 0 and the result is this frame's matte: a moving edge
does not trail behind (no lag beyond the frame it is in). Where nothing moves, the matte is an exponential
moving average over about 1 / (1 − STRENGTH) frames, which removes most of the flicker. The first frame (and
the first frame of a range) is the model's own matte.

It is off by default (`steady_edges` parameter): it changes the matte of static regions, and on footage with
strong grain or flashing light the difference guide sees motion everywhere and does little.
"""

from __future__ import annotations

import numpy as np

STRENGTH = 0.8  # the most a matte leans on the previous frame's result
TOLERANCE = 0.04  # luma change (0–1) at which a pixel counts as moved: weight falls to STRENGTH / e
LUMA = np.array([0.2126, 0.7152, 0.0722], dtype=np.float32)


class SteadyEdges:
    """Feed each frame's display pixels and raw matte in order; get the steadied matte back."""

    def __init__(self, strength: float = STRENGTH, tolerance: float = TOLERANCE):
        self.strength, self.tolerance = strength, tolerance
        self._luma: np.ndarray | None = None
        self._matte: np.ndarray | None = None

    def __call__(self, pixels: np.ndarray, matte: np.ndarray) -> np.ndarray:
        luma = _luma(pixels)
        if self._luma is None or self._matte is None or self._luma.shape != luma.shape:  # remember() sets both
            result = matte.astype(np.float32, copy=True)
        else:
            change = _box3(np.abs(luma - self._luma)) / self.tolerance
            weight = self.strength * np.exp(-(change * change))
            result = (weight * self._matte + (1.0 - weight) * matte).astype(np.float32)
        self.remember(pixels, result, luma)
        return result

    def remember(self, pixels: np.ndarray, matte: np.ndarray, luma: np.ndarray | None = None) -> None:
        """Take a finished frame's result as the previous one (a frame reused from the resume cache)."""
        self._luma = _luma(pixels) if luma is None else luma
        self._matte = matte.astype(np.float32, copy=False)

    def forget(self) -> None:
        """No previous frame: a reused frame whose matte is not known (written over a solid colour)."""
        self._luma = self._matte = None


def _luma(pixels: np.ndarray) -> np.ndarray:
    luma: np.ndarray = np.clip(pixels[..., :3], 0.0, 1.0) @ LUMA
    return luma


def _box3(values: np.ndarray) -> np.ndarray:
    """3×3 box mean with edge replication (running sums: no per-pixel Python)."""
    padded = np.pad(values, 1, mode="edge")
    rows = padded[:-2] + padded[1:-1] + padded[2:]
    mean: np.ndarray = (rows[:, :-2] + rows[:, 1:-1] + rows[:, 2:]) / 9.0
    return mean
