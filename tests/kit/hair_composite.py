"""A synthetic hair composite with a known answer: an object's own colour F (warm, textured), the wall it was
photographed on B (green, as in the complaint), and a matte with a soft rim and thin, partly transparent strands.
The photo is I = alpha F + (1 − alpha) B, so the fringe a cut-out keeps is measurable against F exactly.

Used by tests/server/matting, bench/foreground.py and the pymatting parity row (bench/parity).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class HairComposite:
    image: np.ndarray  # (H, W, 3) float32 photo I
    alpha: np.ndarray  # (H, W) float32 true matte
    foreground: np.ndarray  # (H, W, 3) float32 true object colour F
    background: np.ndarray  # (H, W, 3) float32 true wall colour B

    @property
    def soft(self) -> np.ndarray:
        return (self.alpha > 0) & (self.alpha < 1)


def hair_composite(width: int = 320, height: int = 240, *, strands: int = 60, seed: int = 0) -> HairComposite:
    rng = np.random.default_rng(seed)
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float32)
    scale = float(min(width, height))
    foreground = np.stack(
        [0.75 + 0.12 * np.sin(xs / 9.0), 0.45 + 0.15 * np.cos(ys / 13.0), 0.25 + 0.1 * np.sin((xs + ys) / 21.0)],
        axis=-1,
    )
    background = np.stack(
        [0.1 + 0.08 * np.sin(xs / 37.0), np.full_like(xs, 0.75), 0.2 + 0.05 * np.cos(ys / 29.0)], axis=-1
    )
    cx, cy = width / 2, height * 0.55
    radius = np.hypot(xs - cx, ys - cy)
    alpha = np.clip((0.28 * scale - radius) / (0.05 * scale), 0.0, 1.0)  # a head with a soft rim
    for _ in range(strands):  # hair: thin strands leaving the rim, fading towards their tips
        angle = rng.uniform(-np.pi, 0.0)
        across = np.abs((xs - cx) * np.sin(angle) - (ys - cy) * np.cos(angle))
        along = (xs - cx) * np.cos(angle) + (ys - cy) * np.sin(angle)
        length = rng.uniform(0.3, 0.48) * scale
        width_px = rng.uniform(0.6, 1.6)
        fade = np.clip(1.0 - along / length, 0.0, 1.0)
        strand = np.clip(1.0 - across / width_px, 0.0, 1.0) * (along > 0.2 * scale) * fade * rng.uniform(0.5, 0.9)
        alpha = np.maximum(alpha, strand)
    alpha = alpha.astype(np.float32)
    image = alpha[..., None] * foreground + (1.0 - alpha[..., None]) * background
    return HairComposite(image.astype(np.float32), alpha, foreground.astype(np.float32), background.astype(np.float32))


def fringe_error(colour: np.ndarray, composite: HairComposite, new_background: tuple[float, float, float]) -> float:
    """Mean absolute error, inside the soft band, of `colour` with the true matte composited over a new
    background, against the true object composited over it: the fringe a viewer sees."""
    alpha = composite.alpha[..., None]
    backdrop = np.asarray(new_background, np.float32)
    ours = alpha * colour[..., :3] + (1.0 - alpha) * backdrop
    truth = alpha * composite.foreground + (1.0 - alpha) * backdrop
    return float(np.abs(ours - truth)[composite.soft].mean())
