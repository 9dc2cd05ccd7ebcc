"""A synthetic clip for steady edges: a static soft edge that a per-frame model makes flicker, and a hard edge
that moves `speed` pixels a frame. Frames, the true matte, and a flickering "model" matte, all (T, H, W)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class MovingEdgeClip:
    pixels: np.ndarray  # (T, H, W, 3) display pixels
    truth: np.ndarray  # (T, H, W) true matte
    model: np.ndarray  # (T, H, W) truth plus per-frame flicker on edges, in [0, 1]
    edge: np.ndarray  # (T,) the moving edge's column
    static: np.ndarray  # (H, W) pixels whose truth never changes
    speed: int


def moving_edge_clip(frames: int = 24, height: int = 24, width: int | None = None, speed: int = 2, seed: int = 3):
    width = width or 56 + speed * frames
    rng = np.random.default_rng(seed)
    columns = np.arange(width, dtype=np.float32)
    background = 0.15 + 0.1 * rng.random((height, width), dtype=np.float32)  # static texture
    soft = np.clip((columns - 12) / 8, 0, 1)  # a static soft edge over columns 12–20 (hair, blur)
    truth, edges = [], []
    for index in range(frames):
        edge = 40 + speed * index
        hard = (columns < edge).astype(np.float32)  # the moving object: everything left of `edge`
        truth.append(np.broadcast_to(np.maximum(soft * hard, 0), (height, width)).copy())
        edges.append(edge)
    truth = np.stack(truth)
    pixels = truth[..., None] * 0.9 + (1 - truth[..., None]) * background[None, ..., None]
    pixels = np.repeat(pixels, 3, axis=-1).astype(np.float32)
    near_edge = (truth > 0.02) & (truth < 0.98)
    band = np.zeros_like(truth, dtype=bool)
    for index, edge in enumerate(edges):
        band[index, :, max(edge - 2, 0) : edge + 2] = True
    flicker = rng.normal(0, 0.08, truth.shape).astype(np.float32) * (near_edge | band)
    model = np.clip(truth + flicker, 0, 1)
    static = (truth == truth[0]).all(axis=0)
    return MovingEdgeClip(pixels, truth, model, np.array(edges), static, speed)


def flicker(mattes: np.ndarray, where: np.ndarray) -> float:
    """Mean frame-to-frame change of the matte where the truth is still: what the eye sees as flicker."""
    return float(np.abs(np.diff(mattes, axis=0))[:, where].mean())


def edge_lag(mattes: np.ndarray, clip: MovingEdgeClip) -> float:
    """Largest distance (px) between where the matte crosses 0.5 at the moving edge and the true edge."""
    worst = 0.0
    for index, edge in enumerate(clip.edge):
        row = mattes[index].mean(axis=0)
        window = np.arange(max(edge - 12, 21), min(edge + 12, row.size))
        inside = window[row[window] >= 0.5]
        found = inside.max() + 1 if inside.size else window[0]
        worst = max(worst, abs(float(found) - float(edge)))
    return worst
